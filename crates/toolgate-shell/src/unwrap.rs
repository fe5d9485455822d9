//! Wrappers: commands that run another command (`sudo`, `timeout`, `env`, `xargs`, …), each with
//! its own option grammar, so that the wrapped command is found exactly where the wrapper
//! would find it.

use crate::words::Field;

/// What stripping a wrapper means for rule matching and risk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WrapKind {
    /// Changes nothing about what runs (`timeout`, `nice`, `env`): stripped.
    Transparent,
    /// Runs the command with other privileges (`sudo`, `doas`, `chroot`): stripped, and a finding.
    Privilege,
    /// Runs the command somewhere else (`docker exec`, `ssh`, `uv run`): the outer command is
    /// kept for rule matching and the inner one is analysed too.
    Runner,
}

/// One wrapper and its option grammar.
#[derive(Debug)]
pub(crate) struct WrapperSpec {
    /// Program basename.
    pub name: &'static str,
    /// Subcommand words that must follow (`["exec"]` for `docker exec`).
    pub sub: &'static [&'static str],
    /// Short options taking a value (`u` for `sudo -u USER`).
    pub short_val: &'static str,
    /// Long options taking a separate value.
    pub long_val: &'static [&'static str],
    /// Operands before the command (`timeout DURATION`, `chroot DIR`, `docker exec CONTAINER`).
    pub operands: usize,
    /// Options after which no command follows (`sudo -l`, `command -v`).
    pub no_command: &'static [&'static str],
    /// How it is treated.
    pub kind: WrapKind,
    /// `(command, text of the wrapped command)` pairs; an empty text means "no command".
    pub examples: &'static [(&'static str, &'static str)],
}

/// All wrappers. `env`, `xargs`, `parallel`, `find`, `watch`, `flock -c`, `su -c`, `ssh` and
/// shells have extra handling in `exec.rs` but their option grammars are here.
#[rustfmt::skip]
pub(crate) const WRAPPERS: &[WrapperSpec] = &[
    WrapperSpec { name: "sudo", sub: &[], short_val: "ughpCDrtUTR", long_val: &["--user", "--group", "--host", "--prompt", "--close-from", "--chdir", "--role", "--type", "--other-user", "--command-timeout", "--chroot"], operands: 0, no_command: &["-l", "-v", "-k", "-K", "-e", "-V", "--list", "--validate", "--edit", "--version", "--reset-timestamp", "--remove-timestamp"], kind: WrapKind::Privilege, examples: &[("sudo -u root -E rm -rf /x", "rm -rf /x"), ("sudo -l", ""), ("sudo --user=bob ls", "ls")]},
    WrapperSpec { name: "doas", sub: &[], short_val: "uC", long_val: &[], operands: 0, no_command: &["-L"], kind: WrapKind::Privilege, examples: &[("doas -u root rm x", "rm x")]},
    WrapperSpec { name: "pkexec", sub: &[], short_val: "", long_val: &["--user"], operands: 0, no_command: &["--version", "--help"], kind: WrapKind::Privilege, examples: &[("pkexec --user root rm x", "rm x")]},
    WrapperSpec { name: "run0", sub: &[], short_val: "ugD", long_val: &["--user", "--group", "--chdir"], operands: 0, no_command: &[], kind: WrapKind::Privilege, examples: &[("run0 rm x", "rm x")]},
    WrapperSpec { name: "runuser", sub: &[], short_val: "ugGc", long_val: &["--user", "--group", "--supp-group"], operands: 0, no_command: &[], kind: WrapKind::Privilege, examples: &[("runuser -u bob -- rm x", "rm x")]},
    WrapperSpec { name: "chroot", sub: &[], short_val: "", long_val: &["--userspec", "--groups"], operands: 1, no_command: &[], kind: WrapKind::Privilege, examples: &[("chroot /mnt rm -rf /", "rm -rf /"), ("chroot --userspec=a:b /mnt ls", "ls")]},
    WrapperSpec { name: "nsenter", sub: &[], short_val: "tSGwWr", long_val: &["--target", "--setuid", "--setgid", "--wd", "--root"], operands: 0, no_command: &[], kind: WrapKind::Privilege, examples: &[("nsenter -t 1 -m -u -n -i sh", "sh")]},
    WrapperSpec { name: "timeout", sub: &[], short_val: "sk", long_val: &["--signal", "--kill-after"], operands: 1, no_command: &[], kind: WrapKind::Transparent, examples: &[("timeout -s KILL 10 rm x", "rm x"), ("timeout --preserve-status 5s make", "make")]},
    WrapperSpec { name: "time", sub: &[], short_val: "fo", long_val: &["--format", "--output"], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("time -p make", "make")]},
    WrapperSpec { name: "nice", sub: &[], short_val: "n", long_val: &["--adjustment"], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("nice -n 10 make", "make"), ("nice -10 make", "make")]},
    WrapperSpec { name: "nohup", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("nohup rm x", "rm x")]},
    WrapperSpec { name: "stdbuf", sub: &[], short_val: "ioe", long_val: &["--input", "--output", "--error"], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("stdbuf -oL -e 0 grep x", "grep x")]},
    WrapperSpec { name: "setsid", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("setsid -f rm x", "rm x")]},
    WrapperSpec { name: "ionice", sub: &[], short_val: "cnu", long_val: &["--class", "--classdata", "--uid"], operands: 0, no_command: &["-p", "-P", "--pid", "--pgid"], kind: WrapKind::Transparent, examples: &[("ionice -c 3 rm x", "rm x"), ("ionice -p 42", "")]},
    WrapperSpec { name: "flock", sub: &[], short_val: "wE", long_val: &["--timeout", "--conflict-exit-code"], operands: 1, no_command: &[], kind: WrapKind::Transparent, examples: &[("flock -w 5 /tmp/l rm x", "rm x")]},
    WrapperSpec { name: "watch", sub: &[], short_val: "nq", long_val: &["--interval", "--equexit"], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("watch -n 1 -x ls", "ls")]},
    WrapperSpec { name: "command", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &["-v", "-V"], kind: WrapKind::Transparent, examples: &[("command rm x", "rm x"), ("command -v rm", "")]},
    WrapperSpec { name: "builtin", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("builtin cd /", "cd /")]},
    WrapperSpec { name: "exec", sub: &[], short_val: "a", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("exec -a x rm y", "rm y")]},
    WrapperSpec { name: "noglob", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("noglob rm *", "rm *")]},
    WrapperSpec { name: "busybox", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &["--list", "--help"], kind: WrapKind::Transparent, examples: &[("busybox rm -rf /x", "rm -rf /x")]},
    WrapperSpec { name: "caffeinate", sub: &[], short_val: "tw", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("caffeinate -i make", "make")]},
    WrapperSpec { name: "unbuffer", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Transparent, examples: &[("unbuffer make", "make")]},
    WrapperSpec { name: "taskset", sub: &[], short_val: "", long_val: &[], operands: 1, no_command: &["-p", "--pid"], kind: WrapKind::Transparent, examples: &[("taskset 0x1 make", "make")]},
    WrapperSpec { name: "chrt", sub: &[], short_val: "", long_val: &[], operands: 1, no_command: &["-p", "--pid", "-m"], kind: WrapKind::Transparent, examples: &[("chrt 10 make", "make")]},
    WrapperSpec { name: "docker", sub: &["exec"], short_val: "euw", long_val: &["--env", "--env-file", "--user", "--workdir", "--detach-keys"], operands: 1, no_command: &[], kind: WrapKind::Runner, examples: &[("docker exec -it db psql", "psql")]},
    WrapperSpec { name: "podman", sub: &["exec"], short_val: "euw", long_val: &["--env", "--env-file", "--user", "--workdir", "--detach-keys"], operands: 1, no_command: &[], kind: WrapKind::Runner, examples: &[("podman exec c ls", "ls")]},
    WrapperSpec { name: "kubectl", sub: &["exec"], short_val: "ncf", long_val: &["--namespace", "--container", "--context", "--filename", "--kubeconfig", "--pod-running-timeout"], operands: 1, no_command: &[], kind: WrapKind::Runner, examples: &[("kubectl exec -n x pod -- rm -rf /", "rm -rf /")]},
    WrapperSpec { name: "npx", sub: &[], short_val: "pc", long_val: &["--package", "--call"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("npx -y prettier .", "prettier .")]},
    WrapperSpec { name: "bunx", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("bunx tsc", "tsc")]},
    WrapperSpec { name: "uv", sub: &["run"], short_val: "p", long_val: &["--python", "--with", "--project", "--directory", "--env-file", "--package", "--extra", "--group"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("uv run --with x pytest", "pytest")]},
    WrapperSpec { name: "poetry", sub: &["run"], short_val: "C", long_val: &["--directory"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("poetry run pytest", "pytest")]},
    WrapperSpec { name: "pipenv", sub: &["run"], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("pipenv run python x.py", "python x.py")]},
    WrapperSpec { name: "bundle", sub: &["exec"], short_val: "", long_val: &["--gemfile"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("bundle exec rake", "rake")]},
    WrapperSpec { name: "pnpm", sub: &["exec"], short_val: "C", long_val: &["--dir", "--filter"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("pnpm exec tsc", "tsc")]},
    WrapperSpec { name: "pnpm", sub: &["dlx"], short_val: "", long_val: &["--package"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("pnpm dlx create-x", "create-x")]},
    WrapperSpec { name: "direnv", sub: &["exec"], short_val: "", long_val: &[], operands: 1, no_command: &[], kind: WrapKind::Runner, examples: &[("direnv exec . make", "make")]},
    WrapperSpec { name: "mise", sub: &["exec"], short_val: "C", long_val: &["--cd"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("mise exec node@20 -- node x.js", "node x.js")]},
    WrapperSpec { name: "devbox", sub: &["run"], short_val: "c", long_val: &["--config"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("devbox run make", "make")]},
    WrapperSpec { name: "conda", sub: &["run"], short_val: "np", long_val: &["--name", "--prefix", "--cwd"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("conda run -n env python x.py", "python x.py")]},
];

/// Looks up the wrapper spec for a program and its arguments (`docker exec`, not `docker ps`).
pub(crate) fn find_wrapper(program: &str, args: &[Field]) -> Option<&'static WrapperSpec> {
    WRAPPERS.iter().find(|w| {
        w.name == program
            && (w.sub.is_empty() || first_positional(args).is_some_and(|p| w.sub.contains(&p)))
    })
}

fn first_positional(args: &[Field]) -> Option<&str> {
    args.iter()
        .map(|a| a.text.as_str())
        .find(|a| !a.starts_with('-'))
}

/// Result of stripping a wrapper.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Stripped {
    /// The wrapped command starts at this index of `argv`.
    At(usize),
    /// The wrapper runs no command (`sudo -l`, `command -v x`).
    NoCommand,
}

/// Skips the wrapper's options and operands in `argv` (`argv[0]` is the wrapper).
pub(crate) fn strip(spec: &WrapperSpec, argv: &[Field]) -> Stripped {
    if spec.kind == WrapKind::Runner && !spec.sub.is_empty() {
        // `mise exec tool@1 -- cmd`, `kubectl exec pod -- cmd`: the command follows `--`.
        if let Some(dd) = argv.iter().position(|a| a.text == "--") {
            return if dd + 1 < argv.len() {
                Stripped::At(dd + 1)
            } else {
                Stripped::NoCommand
            };
        }
    }
    let mut i = 1;
    // Skip the subcommand word(s) (`docker exec`), allowing options before it.
    let mut sub_left = spec.sub.len();
    let mut operands = spec.operands;
    // `mise exec tool@ver -- cmd`, `kubectl exec pod -- cmd`: a `--` ends everything.
    while i < argv.len() {
        let a = argv[i].text.as_str();
        if a == "--" {
            i += 1;
            if sub_left == 0 {
                return if i < argv.len() {
                    Stripped::At(i)
                } else {
                    Stripped::NoCommand
                };
            }
            continue;
        }
        if spec.no_command.iter().any(|n| {
            *n == a
                || (n.len() == 2
                    && a.starts_with('-')
                    && !a.starts_with("--")
                    && a.len() > 2
                    && a[1..].contains(&n[1..]))
        }) {
            return Stripped::NoCommand;
        }
        if let Some(long) = a.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or("");
            if !long.contains('=')
                && spec
                    .long_val
                    .iter()
                    .any(|l| l.trim_start_matches("--") == name)
            {
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if a.len() > 1 && a.starts_with('-') && !a[1..].starts_with(|c: char| c.is_ascii_digit()) {
            let flags = &a[1..];
            let mut consumed = 1;
            for (pos, c) in flags.char_indices() {
                if spec.short_val.contains(c) {
                    if pos + c.len_utf8() == flags.len() {
                        consumed = 2;
                    }
                    break;
                }
            }
            i += consumed;
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            // `nice -10`
            i += 1;
            continue;
        }
        if sub_left > 0 {
            sub_left -= 1;
            i += 1;
            continue;
        }
        if operands > 0 {
            operands -= 1;
            i += 1;
            continue;
        }
        break;
    }
    if i < argv.len() {
        Stripped::At(i)
    } else {
        Stripped::NoCommand
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(s: &str) -> Vec<Field> {
        s.split_whitespace().map(Field::lit).collect()
    }

    #[test]
    fn wrapper_examples() {
        for w in WRAPPERS {
            for (cmd, want) in w.examples {
                let argv = fields(cmd);
                let spec = find_wrapper(&argv[0].text, &argv[1..])
                    .unwrap_or_else(|| panic!("no spec for {cmd}"));
                let got = match strip(spec, &argv) {
                    Stripped::At(i) => argv[i..]
                        .iter()
                        .map(|f| f.text.clone())
                        .collect::<Vec<_>>()
                        .join(" "),
                    Stripped::NoCommand => String::new(),
                };
                assert_eq!(&got, want, "{cmd}");
            }
        }
    }
}
