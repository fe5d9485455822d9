//! Containers started with host access: `docker run -v /:/h … CMD` runs CMD on the host's
//! files, so CMD is a subcommand of its own with container paths rewritten to host paths.

use crate::argv::{part, split_long};
use crate::words::Field;

use super::*;

/// `docker run` / `podman run` with host directories mounted (`-v SRC:DST`, `--mount
/// type=bind,…`) or host access (`--privileged`, `--pid=host`): the container's command
/// acts on the host, so it is a subcommand of its own, with container paths under a mount
/// rewritten to the host paths they are (`-v /:/h … rm -rf /h` deletes `/`). Without host
/// access the container's command is the image's business.
pub(super) fn container_run(argv: &[Field], out: &mut Vec<Carried>) {
    #[rustfmt::skip]
    const VALUED: &[&str] = &[
        "-a", "-c", "-e", "-h", "-l", "-m", "-p", "-u", "-v", "-w",
        "--add-host", "--annotation", "--attach", "--blkio-weight", "--blkio-weight-device",
        "--cap-add", "--cap-drop", "--cgroup-parent", "--cgroupns", "--cidfile", "--cpu-period",
        "--cpu-quota", "--cpu-rt-period", "--cpu-rt-runtime", "--cpu-shares", "--cpus",
        "--cpuset-cpus", "--cpuset-mems", "--device", "--device-cgroup-rule",
        "--device-read-bps", "--device-read-iops", "--device-write-bps", "--device-write-iops",
        "--dns", "--dns-option", "--dns-search", "--domainname", "--entrypoint", "--env",
        "--env-file", "--expose", "--gpus", "--group-add", "--health-cmd", "--health-interval",
        "--health-retries", "--health-start-interval", "--health-start-period",
        "--health-timeout", "--hostname", "--ip", "--ip6", "--ipc", "--isolation",
        "--kernel-memory", "--label", "--label-file", "--link", "--link-local-ip",
        "--log-driver", "--log-opt", "--mac-address", "--memory", "--memory-reservation",
        "--memory-swap", "--memory-swappiness", "--mount", "--name", "--network", "--net",
        "--network-alias", "--oom-score-adj", "--pid", "--pids-limit", "--platform",
        "--publish", "--pull", "--restart", "--runtime", "--security-opt", "--shm-size",
        "--stop-signal", "--stop-timeout", "--storage-opt", "--sysctl", "--tmpfs", "--ulimit",
        "--user", "--userns", "--uts", "--volume", "--volume-driver", "--volumes-from",
        "--workdir",
    ];
    let mut i = 1;
    // `docker [container] run`, after the client's global options.
    while let Some(w) = argv.get(i) {
        match w.text.as_str() {
            "container" => i += 1,
            "run" => break,
            "-H" | "--host" | "--context" | "-c" | "--config" | "-l" | "--log-level" => i += 2,
            t if t.starts_with('-') => i += 1,
            _ => return,
        }
    }
    if argv.get(i).is_none_or(|w| w.text != "run") {
        return;
    }
    i += 1;
    let mut mounts: Vec<(String, String)> = Vec::new();
    let (mut host_access, mut dynamic) = (false, false);
    let (mut workdir, mut entrypoint) = (None::<String>, None::<Field>);
    while let Some(w) = argv.get(i) {
        let t = w.text.as_str();
        if t == "--" || !t.starts_with('-') || t == "-" {
            break;
        }
        let (name, inline) = match t.strip_prefix("--") {
            Some(long) => {
                let (n, v) = split_long(long);
                (format!("--{n}"), v.map(str::to_owned))
            }
            // `-v/a:/b`, `-it`, `-itv /a:/b`: in a bundle of flags, the first letter that takes
            // a value takes the rest of the bundle or the next word.
            None => {
                let valued_at = t
                    .char_indices()
                    .skip(1)
                    .find(|(_, c)| VALUED.iter().any(|v| v.len() == 2 && v.ends_with(*c)));
                match valued_at {
                    Some((at, c)) => {
                        let rest = t.get(at + c.len_utf8()..).filter(|r| !r.is_empty());
                        (format!("-{c}"), rest.map(str::to_owned))
                    }
                    None => (t.to_owned(), None),
                }
            }
        };
        let valued = VALUED.contains(&name.as_str());
        let value = match (valued, inline) {
            (true, Some(v)) => Some(part(w, &v)),
            (true, None) => {
                i += 1;
                argv.get(i).cloned()
            }
            (false, _) => None,
        };
        if let Some(v) = &value {
            dynamic |= v.dynamic
                && matches!(name.as_str(), "-v" | "--volume" | "--mount")
                && !env_rooted(&v.text);
            match name.as_str() {
                "-v" | "--volume" => {
                    let mut parts = v.text.splitn(3, ':');
                    if let (Some(src), Some(dst)) = (parts.next(), parts.next())
                        && src.starts_with(['/', '~', '.', '$'])
                    {
                        mounts.push((src.to_owned(), dst.to_owned()));
                    }
                }
                "--mount" => {
                    let kv: Vec<(&str, &str)> = v
                        .text
                        .split(',')
                        .filter_map(|p| p.split_once('='))
                        .collect();
                    let get = |keys: &[&str]| {
                        kv.iter()
                            .find(|(k, _)| keys.contains(k))
                            .map(|(_, v)| (*v).to_owned())
                    };
                    if get(&["type"]).as_deref() == Some("bind")
                        && let (Some(src), Some(dst)) = (
                            get(&["source", "src"]),
                            get(&["target", "dst", "destination"]),
                        )
                    {
                        mounts.push((src, dst));
                    }
                }
                "--pid" | "--ipc" | "--uts" | "--userns" | "--cgroupns" => {
                    host_access |= v.text == "host";
                }
                "-w" | "--workdir" => workdir = Some(v.text.clone()),
                "--entrypoint" => entrypoint = Some(v.clone()),
                _ => {}
            }
        } else if name == "--privileged" {
            host_access = true;
        }
        i += 1;
    }
    if dynamic {
        out.push(Carried::Opaque(
            "the container mounts a host path the analyzer cannot resolve".into(),
        ));
    }
    if mounts.is_empty() && !host_access {
        return;
    }
    // Skip `--` and the image.
    if argv.get(i).is_some_and(|w| w.text == "--") {
        i += 1;
    }
    let command: Vec<Field> = entrypoint
        .into_iter()
        .chain(argv.get(i + 1..).unwrap_or(&[]).iter().cloned())
        .collect();
    if command.is_empty() {
        return;
    }
    // Longest container path first, so `/h/x` maps before `/h`.
    mounts.sort_by_key(|(_, dst)| std::cmp::Reverse(dst.len()));
    let translate = |text: &str| to_host_paths(text, &mounts);
    let mut code = String::new();
    if let Some(dir) = workdir {
        code.push_str(&format!("cd {} && ", quote_host(&translate(&dir))));
    }
    code.push_str(
        &command
            .iter()
            .map(|w| quote_host(&translate(&w.text)))
            .collect::<Vec<_>>()
            .join(" "),
    );
    out.push(Carried::Shell(Field {
        text: code,
        dynamic: command.iter().any(|w| w.dynamic),
        glob: false,
        procsub: None,
        net: command.iter().any(|w| w.net),
        secret: command.iter().any(|w| w.secret),
    }));
}

/// Whether a mount source is rooted at `$PWD` or `$HOME` (`-v "$PWD":/app`), which path
/// resolution knows.
pub(super) fn env_rooted(text: &str) -> bool {
    ["$PWD", "${PWD}", "$HOME", "${HOME}"].iter().any(|v| {
        text.strip_prefix(v)
            .is_some_and(|r| r.is_empty() || r.starts_with(['/', ':']))
    })
}

/// Quotes a rewritten word for the inner command; one rooted at `$PWD`/`$HOME` keeps the
/// variable expandable (double quotes) so its path still resolves.
pub(super) fn quote_host(word: &str) -> String {
    if env_rooted(word) && !word.contains(['"', '\\', '`']) && word.matches('$').count() == 1 {
        format!("\"{word}\"")
    } else {
        crate::feed::shell_quote(word)
    }
}

/// Rewrites container paths under a bind mount's target to the host source, wherever one
/// starts a path in `text` (a word, or a `sh -c` body): `/h/x` with `/:/h` is `//x` → `/x`.
pub(super) fn to_host_paths(text: &str, mounts: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while !rest.is_empty() {
        let at_boundary = out.is_empty()
            || out.ends_with([' ', '\t', '\'', '"', '=', ':', '(', ';', '&', '|', '>', '<']);
        if at_boundary {
            for (src, dst) in mounts {
                let dst = dst.trim_end_matches('/');
                if dst.is_empty() {
                    continue;
                }
                if let Some(after) = rest.strip_prefix(dst)
                    && (after.is_empty() || after.starts_with(['/', ' ', '\'', '"', ';', ')']))
                {
                    let src = src.trim_end_matches('/');
                    out.push_str(if src.is_empty() { "/" } else { src });
                    rest = if src.is_empty() {
                        after.strip_prefix('/').unwrap_or(after)
                    } else {
                        after
                    };
                    continue 'scan;
                }
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}
