//! Wrappers: commands that run another command (`sudo`, `timeout`, `env`, `xargs`, …), each with
//! its own option grammar, so that the wrapped command is found exactly where the wrapper
//! would find it.

use crate::argv::{Grammar, Item};
use crate::words::Field;

/// What stripping a wrapper means for rule matching and risk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WrapKind {
    /// Changes nothing about what runs (`timeout`, `nice`, `env`): stripped.
    Transparent,
    /// Runs the command with other privileges (`sudo`, `doas`, `chroot`): stripped, and a finding.
    Privilege,
    /// Runs the command somewhere else or under a tool (`docker exec`, `uv run`, `strace`,
    /// `valgrind`): the outer command is kept for rule matching and the inner one is analysed
    /// as a subcommand of its own.
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
    WrapperSpec { name: "timeout", sub: &[], short_val: "sk", long_val: &["--signal", "--kill-after"], operands: 1, no_command: &[], kind: WrapKind::Transparent, examples: &[("timeout -s KILL 10 rm x", "rm x"), ("timeout --preserve-status 5s make", "make"), ("timeout 5 --weird x", "--weird x")]},
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
    WrapperSpec { name: "strace", sub: &[], short_val: "abeEIoOpPsSuUX", long_val: &["--trace", "--signal", "--status", "--output", "--attach", "--user", "--env", "--string-limit", "--columns", "--summary-sort-by", "--trace-path", "--decode-fds", "--quiet", "--absolute-timestamps"], operands: 0, no_command: &["-p", "--attach"], kind: WrapKind::Runner, examples: &[("strace -f -e trace=file -o out rm x", "rm x"), ("strace -p 42", "")]},
    WrapperSpec { name: "ltrace", sub: &[], short_val: "aAeEFnopsuwxlD", long_val: &["--output", "--library", "--align", "--indent", "--config"], operands: 0, no_command: &["-p"], kind: WrapKind::Runner, examples: &[("ltrace -o out -e malloc rm x", "rm x")]},
    WrapperSpec { name: "valgrind", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("valgrind --leak-check=full ./prog a", "./prog a")]},
    WrapperSpec { name: "perf", sub: &["record"], short_val: "eoptcFCmGrNRSTwWzD", long_val: &["--event", "--output", "--pid", "--tid", "--count", "--freq", "--cpu", "--mmap-pages", "--cgroup", "--call-graph", "--filter"], operands: 0, no_command: &["-p", "--pid", "-t", "--tid", "-a", "--all-cpus"], kind: WrapKind::Runner, examples: &[("perf record -g -o p.data ./prog", "./prog"), ("perf record -p 42", "")]},
    WrapperSpec { name: "perf", sub: &["stat"], short_val: "eoptrCGIxD", long_val: &["--event", "--output", "--pid", "--tid", "--repeat", "--cpu", "--cgroup", "--interval-print"], operands: 0, no_command: &["-p", "--pid", "-t", "--tid", "-a", "--all-cpus"], kind: WrapKind::Runner, examples: &[("perf stat -e cycles make", "make")]},
    WrapperSpec { name: "perf", sub: &["trace"], short_val: "eoptCFGmT", long_val: &["--event", "--output", "--pid", "--tid", "--cpu", "--cgroup", "--duration"], operands: 0, no_command: &["-p", "--pid", "-t", "--tid", "-a", "--all-cpus"], kind: WrapKind::Runner, examples: &[("perf trace ls", "ls")]},
    WrapperSpec { name: "setpriv", sub: &[], short_val: "", long_val: &["--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups", "--inh-caps", "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile", "--landlock-access", "--landlock-rule"], operands: 0, no_command: &["-d", "--dump"], kind: WrapKind::Privilege, examples: &[("setpriv --reuid=1000 --init-groups rm x", "rm x"), ("setpriv -d", "")]},
    WrapperSpec { name: "systemd-run", sub: &[], short_val: "pEMHu", long_val: &["--unit", "--property", "--description", "--slice", "--uid", "--gid", "--nice", "--working-directory", "--setenv", "--machine", "--host", "--on-active", "--on-boot", "--on-startup", "--on-unit-active", "--on-unit-inactive", "--on-calendar", "--path-property", "--socket-property", "--timer-property", "--service-type", "--expand-environment"], operands: 0, no_command: &[], kind: WrapKind::Privilege, examples: &[("systemd-run --user -p MemoryMax=1G make", "make")]},
    WrapperSpec { name: "unshare", sub: &[], short_val: "SGRw", long_val: &["--map-user", "--map-group", "--map-users", "--map-groups", "--setuid", "--setgid", "--root", "--wd", "--propagation", "--setgroups", "--monotonic", "--boottime"], operands: 0, no_command: &[], kind: WrapKind::Privilege, examples: &[("unshare -r rm -rf /x", "rm -rf /x"), ("unshare --map-user 0 -m make", "make")]},
    WrapperSpec { name: "prlimit", sub: &[], short_val: "", long_val: &["--output"], operands: 0, no_command: &["-p", "--pid"], kind: WrapKind::Runner, examples: &[("prlimit --nofile=10 rm x", "rm x")]},
    WrapperSpec { name: "ssh-agent", sub: &[], short_val: "aEPtO", long_val: &[], operands: 0, no_command: &["-k", "-l"], kind: WrapKind::Runner, examples: &[("ssh-agent bash -c 'id'", "bash -c 'id'"), ("ssh-agent -s", "")]},
    WrapperSpec { name: "fakeroot", sub: &[], short_val: "lsib", long_val: &["--lib", "--faked"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("fakeroot -- make install", "make install")]},
    WrapperSpec { name: "tini", sub: &[], short_val: "pe", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("tini -s -- make", "make")]},
    WrapperSpec { name: "dumb-init", sub: &[], short_val: "r", long_val: &["--rewrite"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("dumb-init -- make", "make")]},
    WrapperSpec { name: "gosu", sub: &[], short_val: "", long_val: &[], operands: 1, no_command: &[], kind: WrapKind::Privilege, examples: &[("gosu root rm x", "rm x")]},
    WrapperSpec { name: "su-exec", sub: &[], short_val: "", long_val: &[], operands: 1, no_command: &[], kind: WrapKind::Privilege, examples: &[("su-exec root rm x", "rm x")]},
    WrapperSpec { name: "chronic", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("chronic -e make", "make")]},
    WrapperSpec { name: "ifne", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("ifne -n rm x", "rm x")]},
    WrapperSpec { name: "torsocks", sub: &[], short_val: "uapP", long_val: &["--user", "--pass", "--address", "--port"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("torsocks -i curl x", "curl x")]},
    WrapperSpec { name: "proxychains", sub: &[], short_val: "f", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("proxychains -q curl x", "curl x")]},
    WrapperSpec { name: "proxychains4", sub: &[], short_val: "f", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("proxychains4 -f p.conf curl x", "curl x")]},
    WrapperSpec { name: "faketime", sub: &[], short_val: "", long_val: &["--date-prog"], operands: 1, no_command: &[], kind: WrapKind::Runner, examples: &[("faketime -f '+1d' make", "make")]},
    WrapperSpec { name: "numactl", sub: &[], short_val: "ipmNCPw", long_val: &["--interleave", "--preferred", "--membind", "--cpunodebind", "--physcpubind", "--weighted-interleave"], operands: 0, no_command: &["-s", "--show", "-H", "--hardware"], kind: WrapKind::Runner, examples: &[("numactl -N 0 -m 0 make", "make"), ("numactl -H", "")]},
    WrapperSpec { name: "cgexec", sub: &[], short_val: "g", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("cgexec -g cpu:x --sticky make", "make")]},
    WrapperSpec { name: "catchsegv", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("catchsegv ./prog", "./prog")]},
    WrapperSpec { name: "dbus-run-session", sub: &[], short_val: "", long_val: &["--config-file", "--dbus-daemon"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("dbus-run-session -- make", "make")]},
    WrapperSpec { name: "dbus-launch", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("dbus-launch --exit-with-session make", "make")]},
    WrapperSpec { name: "xvfb-run", sub: &[], short_val: "enpfsw", long_val: &["--error-file", "--server-num", "--xauth-protocol", "--auth-file", "--server-args", "--wait"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("xvfb-run -a -n 99 make", "make")]},
    WrapperSpec { name: "firejail", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &["--list", "--tree", "--version", "--help"], kind: WrapKind::Runner, examples: &[("firejail --net=none make", "make")]},
    WrapperSpec { name: "entr", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("entr -r make", "make")]},
    WrapperSpec { name: "nq", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("nq -q make", "make")]},
    WrapperSpec { name: "mpirun", sub: &[], short_val: "pHx", long_val: &["--host", "--hostfile", "--map-by", "--bind-to", "--wdir"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("mpirun -np 4 ./prog", "./prog")]},
    WrapperSpec { name: "mpiexec", sub: &[], short_val: "pHx", long_val: &["--host", "--hostfile", "--map-by", "--bind-to", "--wdir"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("mpiexec -np 4 ./prog", "./prog")]},
    WrapperSpec { name: "ccache", sub: &[], short_val: "dX", long_val: &["--dir", "--config-path", "--recompress"], operands: 0, no_command: &["-s", "-z", "-C", "-c", "-p", "-V", "-h", "-x", "-M", "-F", "-o", "-k", "--show-stats", "--zero-stats", "--clear", "--cleanup", "--show-config", "--version", "--help", "--max-size", "--max-files", "--set-config", "--get-config", "--evict-older-than", "--trim-dir"], kind: WrapKind::Runner, examples: &[("ccache gcc -c x.c", "gcc -c x.c"), ("ccache -s", "")]},
    WrapperSpec { name: "sccache", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &["-s", "-z", "--show-stats", "--zero-stats", "--start-server", "--stop-server", "--version", "--help", "--dist-status"], kind: WrapKind::Runner, examples: &[("sccache rustc x.rs", "rustc x.rs"), ("sccache --show-stats", "")]},
    WrapperSpec { name: "distcc", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &["--help", "--version", "--show-hosts", "-j", "--show-principal"], kind: WrapKind::Runner, examples: &[("distcc gcc -c x.c", "gcc -c x.c")]},
    WrapperSpec { name: "docker", sub: &["exec"], short_val: "euw", long_val: &["--env", "--env-file", "--user", "--workdir", "--detach-keys"], operands: 1, no_command: &[], kind: WrapKind::Runner, examples: &[("docker exec -it db psql", "psql")]},
    WrapperSpec { name: "podman", sub: &["exec"], short_val: "euw", long_val: &["--env", "--env-file", "--user", "--workdir", "--detach-keys"], operands: 1, no_command: &[], kind: WrapKind::Runner, examples: &[("podman exec c ls", "ls")]},
    WrapperSpec { name: "kubectl", sub: &["exec"], short_val: "ncf", long_val: &["--namespace", "--container", "--context", "--filename", "--kubeconfig", "--pod-running-timeout"], operands: 1, no_command: &[], kind: WrapKind::Runner, examples: &[("kubectl exec -n x pod -- rm -rf /", "rm -rf /")]},
    WrapperSpec { name: "npx", sub: &[], short_val: "pc", long_val: &["--package", "--call"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("npx -y prettier .", "prettier .")]},
    WrapperSpec { name: "bunx", sub: &[], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("bunx tsc", "tsc")]},
    WrapperSpec { name: "uv", sub: &["run"], short_val: "p", long_val: &["--python", "--with", "--project", "--directory", "--env-file", "--package", "--extra", "--group"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("uv run --with x pytest", "pytest")]},
    WrapperSpec { name: "poetry", sub: &["run"], short_val: "C", long_val: &["--directory"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("poetry run pytest", "pytest")]},
    WrapperSpec { name: "pipenv", sub: &["run"], short_val: "", long_val: &[], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("pipenv run python x.py", "python x.py")]},
    WrapperSpec { name: "bundle", sub: &["exec"], short_val: "", long_val: &["--gemfile"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("bundle exec rake", "rake")]},
    WrapperSpec { name: "npm", sub: &["exec"], short_val: "cpw", long_val: &["--package", "--call", "--workspace", "--prefix"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("npm exec -- tsc --noEmit", "tsc --noEmit"), ("npm exec -c make", "")]},
    WrapperSpec { name: "npm", sub: &["x"], short_val: "cpw", long_val: &["--package", "--call", "--workspace", "--prefix"], operands: 0, no_command: &[], kind: WrapKind::Runner, examples: &[("npm x -p cowsay cowsay hi", "cowsay hi")]},
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

/// Skips the wrapper's options and operands in `argv` (`argv[0]` is the wrapper), reading
/// its options with [`crate::argv`] (a wrapper's options end at its first operand).
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
    let grammar = Grammar {
        short_val: spec.short_val,
        long_val: spec.long_val,
        permute: false,
        ..Grammar::EMPTY
    };
    let no_command = |item: &Item<'_>| match item {
        Item::Short { letter, .. } => spec
            .no_command
            .iter()
            .any(|n| n.len() == 2 && n.ends_with(*letter) && !n.starts_with("--")),
        Item::Long {
            name, single_dash, ..
        } => spec
            .no_command
            .iter()
            .any(|n| n.trim_start_matches('-') == *name && (n.starts_with("--") != *single_dash)),
        Item::Operand { .. } => false,
    };
    // Options, then the subcommand word(s) (`docker exec`, options may follow them), then
    // the operands before the command (`timeout DURATION`, `docker exec CONTAINER`), after
    // the last of which the command starts at once (`timeout 5 --weird` runs `--weird`).
    let mut i = 1;
    let mut subs = spec.sub.len();
    let mut operands = spec.operands;
    loop {
        let parsed = grammar.parse(argv, i);
        if parsed.items.iter().any(no_command) {
            return Stripped::NoCommand;
        }
        i = parsed.rest;
        if i >= argv.len() {
            break;
        }
        if subs > 0 {
            subs -= 1;
            i += 1;
            continue;
        }
        if operands > 0 {
            operands -= 1;
            i += 1;
            if operands > 0 {
                continue;
            }
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
