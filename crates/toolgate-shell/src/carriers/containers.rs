//! Containers started with host access: `docker run -v /:/h … CMD` runs CMD on the host's
//! files, so CMD is a subcommand of its own with container paths rewritten to host paths.

use crate::argv::{Grammar, Item};
use crate::words::Field;

use super::*;

/// `docker run`'s options that take a value.
const RUN: Grammar<'static> = Grammar {
    short_val: "acehlmpuvw",
    long_val: &[
        "--add-host",
        "--annotation",
        "--attach",
        "--blkio-weight",
        "--blkio-weight-device",
        "--cap-add",
        "--cap-drop",
        "--cgroup-parent",
        "--cgroupns",
        "--cidfile",
        "--cpu-period",
        "--cpu-quota",
        "--cpu-rt-period",
        "--cpu-rt-runtime",
        "--cpu-shares",
        "--cpus",
        "--cpuset-cpus",
        "--cpuset-mems",
        "--device",
        "--device-cgroup-rule",
        "--device-read-bps",
        "--device-read-iops",
        "--device-write-bps",
        "--device-write-iops",
        "--dns",
        "--dns-option",
        "--dns-search",
        "--domainname",
        "--entrypoint",
        "--env",
        "--env-file",
        "--expose",
        "--gpus",
        "--group-add",
        "--health-cmd",
        "--health-interval",
        "--health-retries",
        "--health-start-interval",
        "--health-start-period",
        "--health-timeout",
        "--hostname",
        "--ip",
        "--ip6",
        "--ipc",
        "--isolation",
        "--kernel-memory",
        "--label",
        "--label-file",
        "--link",
        "--link-local-ip",
        "--log-driver",
        "--log-opt",
        "--mac-address",
        "--memory",
        "--memory-reservation",
        "--memory-swap",
        "--memory-swappiness",
        "--mount",
        "--name",
        "--network",
        "--net",
        "--network-alias",
        "--oom-score-adj",
        "--pid",
        "--pids-limit",
        "--platform",
        "--publish",
        "--pull",
        "--restart",
        "--runtime",
        "--security-opt",
        "--shm-size",
        "--stop-signal",
        "--stop-timeout",
        "--storage-opt",
        "--sysctl",
        "--tmpfs",
        "--ulimit",
        "--user",
        "--userns",
        "--uts",
        "--volume",
        "--volume-driver",
        "--volumes-from",
        "--workdir",
    ],
    permute: false,
    ..Grammar::EMPTY
};

/// What `docker run`'s options say about the host: bind mounts (host source, container
/// target), host namespaces or `--privileged`, the working directory and entrypoint.
#[derive(Default)]
struct RunOptions {
    mounts: Vec<(String, String)>,
    host_access: bool,
    dynamic_mount: bool,
    workdir: Option<String>,
    entrypoint: Option<Field>,
}

impl RunOptions {
    fn read(items: &[Item<'_>]) -> Self {
        let mut o = RunOptions::default();
        for item in items {
            let (name, value) = match item {
                Item::Short { letter, value, .. } => (
                    match letter {
                        'v' => "volume",
                        'w' => "workdir",
                        _ => continue,
                    },
                    value.as_ref(),
                ),
                Item::Long { name, value, .. } => (*name, value.as_ref()),
                Item::Operand { .. } => continue,
            };
            match (name, value) {
                ("privileged", _) => o.host_access = true,
                ("volume", Some(v)) => {
                    o.dynamic_mount |= v.dynamic && !env_rooted(&v.text);
                    let mut parts = v.text.splitn(3, ':');
                    if let (Some(src), Some(dst)) = (parts.next(), parts.next())
                        && src.starts_with(['/', '~', '.', '$'])
                    {
                        o.mounts.push((src.to_owned(), dst.to_owned()));
                    }
                }
                ("mount", Some(v)) => {
                    o.dynamic_mount |= v.dynamic && !env_rooted(&v.text);
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
                        o.mounts.push((src, dst));
                    }
                }
                ("pid" | "ipc" | "uts" | "userns" | "cgroupns", Some(v)) => {
                    o.host_access |= v.text == "host";
                }
                ("workdir", Some(v)) => o.workdir = Some(v.text.clone()),
                ("entrypoint", Some(v)) => o.entrypoint = Some(v.clone()),
                _ => {}
            }
        }
        o
    }
}

/// `docker run` / `podman run` with host directories mounted (`-v SRC:DST`, `--mount
/// type=bind,…`) or host access (`--privileged`, `--pid=host`): the container's command
/// acts on the host, so it is a subcommand of its own, with container paths under a mount
/// rewritten to the host paths they are (`-v /:/h … rm -rf /h` deletes `/`). Without host
/// access the container's command is the image's business.
pub(super) fn container_run(argv: &[Field], out: &mut Vec<Carried>) {
    // `docker [GLOBAL OPTIONS] [container] run`.
    let Some(sub) = crate::globals::subcommand_index(&argv[0].text, argv) else {
        return;
    };
    let run = match argv.get(sub).map(|w| w.text.as_str()) {
        Some("run") => sub,
        Some("container") if argv.get(sub + 1).is_some_and(|w| w.text == "run") => sub + 1,
        _ => return,
    };
    let parsed = RUN.parse(argv, run + 1);
    let o = RunOptions::read(&parsed.items);
    if o.dynamic_mount {
        out.push(Carried::Opaque(
            "the container mounts a host path the analyzer cannot resolve".into(),
        ));
    }
    if o.mounts.is_empty() && !o.host_access {
        return;
    }
    // The image, then its command; a tool image's arguments go to the tool it runs.
    let args = argv.get(parsed.rest + 1..).unwrap_or(&[]);
    let tool = argv
        .get(parsed.rest)
        .and_then(|image| image_tool(&image.text))
        .filter(|t| o.entrypoint.is_none() && args.first().is_none_or(|a| a.text != *t))
        .map(Field::lit);
    let command: Vec<Field> = o
        .entrypoint
        .clone()
        .into_iter()
        .chain(tool)
        .chain(args.iter().cloned())
        .collect();
    if command.is_empty() {
        return;
    }
    let mut mounts = o.mounts;
    // Longest container path first, so `/h/x` maps before `/h`.
    mounts.sort_by_key(|(_, dst)| std::cmp::Reverse(dst.len()));
    let translate = |text: &str| to_host_paths(text, &mounts);
    let mut code = String::new();
    if let Some(dir) = o.workdir {
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

/// The program a single-tool image runs with its arguments (`curlimages/curl -F …` runs
/// `curl -F …`): the image's last path part, without tag or digest.
fn image_tool(image: &str) -> Option<&'static str> {
    const TOOLS: &[(&str, &str)] = &[
        ("curl", "curl"),
        ("wget", "wget"),
        ("git", "git"),
        ("rsync", "rsync"),
        ("aws-cli", "aws"),
        ("awscli", "aws"),
        ("rclone", "rclone"),
        ("httpie", "http"),
        ("socat", "socat"),
        ("netcat", "nc"),
        ("ncat", "ncat"),
        ("mc", "mc"),
        ("s3cmd", "s3cmd"),
        ("openssh-client", "ssh"),
    ];
    let name = image.rsplit('/').next()?;
    let name = name.split(['@', ':']).next()?;
    TOOLS.iter().find(|(img, _)| *img == name).map(|(_, t)| *t)
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
