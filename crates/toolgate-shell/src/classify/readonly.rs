//! Baseline risk: which commands only read. Everything else is `Moderate` unless a rule says more.

use toolgate_protocol::{Access, Risk};

use super::View;

/// A read-only program and the flags that make it write or run code.
pub(crate) struct ReadOnly {
    /// Program basename.
    pub program: &'static str,
    /// Subcommands that are read-only (empty: the program itself is).
    pub subs: &'static [&'static str],
    /// Arguments (exact, or prefixes ending in `=`) that make it not read-only.
    pub unsafe_args: &'static [&'static str],
}

macro_rules! ro {
    ($p:expr) => {
        ReadOnly {
            program: $p,
            subs: &[],
            unsafe_args: &[],
        }
    };
    ($p:expr, unsafe: $u:expr) => {
        ReadOnly {
            program: $p,
            subs: &[],
            unsafe_args: $u,
        }
    };
    ($p:expr, subs: $s:expr) => {
        ReadOnly {
            program: $p,
            subs: $s,
            unsafe_args: &[],
        }
    };
    ($p:expr, subs: $s:expr, unsafe: $u:expr) => {
        ReadOnly {
            program: $p,
            subs: $s,
            unsafe_args: $u,
        }
    };
}

/// Read-only programs (Claude Code's list, Codex's safe list, and common inspection tools).
pub(crate) const READ_ONLY: &[ReadOnly] = &[
    ro!("ls"),
    ro!("ll"),
    ro!("la"),
    ro!("dir"),
    ro!("exa"),
    ro!("eza"),
    ro!("lsd"),
    // `-R` re-runs tree in every directory with `-o 00Tree.html`, writing a file in each.
    ro!("tree", unsafe: &["-o", "--output", "-R"]),
    ro!("cat"),
    ro!("bat", unsafe: &["--pager"]),
    ro!("batcat", unsafe: &["--pager"]),
    ro!("head"),
    ro!("tail"),
    ro!("less", unsafe: &["-o", "-O", "--log-file", "--LOG-FILE", "-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"]),
    ro!("more"),
    ro!("nl"),
    ro!("tac"),
    ro!("rev"),
    ro!("grep"),
    ro!("egrep"),
    ro!("fgrep"),
    ro!("rg", unsafe: &["--pre", "--pre=", "--hostname-bin", "--search-zip", "-z"]),
    ro!("ag", unsafe: &["--pager"]),
    ro!("ack", unsafe: &["--pager", "--ackrc"]),
    ro!("wc"),
    ro!("which"),
    ro!("whereis"),
    ro!("type"),
    ro!("file", unsafe: &["-C", "--compile"]),
    ro!("stat"),
    ro!("du"),
    ro!("df"),
    ro!("pwd"),
    ro!("echo"),
    ro!("printf", unsafe: &["-v"]),
    ro!("true"),
    ro!("false"),
    ro!(":"),
    ro!("test"),
    ro!("["),
    ro!("id"),
    ro!("whoami"),
    ro!("groups"),
    ro!("uname"),
    ro!("hostname", unsafe: &["-F", "--file", "-b"]),
    ro!("date", unsafe: &["-s", "--set"]),
    ro!("cal"),
    ro!("uptime"),
    ro!("free"),
    ro!("ps"),
    ro!("pgrep"),
    ro!("lsof"),
    ro!("w"),
    ro!("who"),
    ro!("last"),
    ro!("printenv"),
    ro!("sort", unsafe: &["-o", "--output", "--compress-program"]),
    ro!("uniq"),
    ro!("cut"),
    ro!("tr"),
    ro!("diff", unsafe: &["--output", "--output="]),
    ro!("cmp"),
    ro!("comm"),
    ro!("paste"),
    ro!("seq"),
    ro!("basename"),
    ro!("dirname"),
    ro!("realpath"),
    ro!("readlink"),
    ro!("jq"),
    ro!("yq", unsafe: &["-i", "--inplace"]),
    ro!("xxd"),
    ro!("od"),
    ro!("hexdump"),
    ro!("strings"),
    ro!("md5sum"),
    ro!("sha1sum"),
    ro!("sha256sum"),
    ro!("sha512sum"),
    ro!("b2sum"),
    ro!("cksum"),
    ro!("shasum"),
    ro!("md5"),
    ro!("column"),
    ro!("fold"),
    ro!("fmt"),
    ro!("expand"),
    ro!("unexpand"),
    ro!("man", unsafe: &["-C", "--config-file"]),
    ro!("help"),
    ro!("info", unsafe: &["-o", "--output", "--dribble", "--init-file", "--restore"]),
    ro!("whatis"),
    ro!("apropos"),
    ro!("tldr"),
    ro!("history", unsafe: &["-c", "-d", "-w", "-a", "-r", "-n"]),
    ro!("sleep"),
    ro!("cd"),
    ro!("pushd"),
    ro!("popd"),
    ro!("dirs"),
    ro!("jobs"),
    ro!("locate"),
    ro!("getent", unsafe: &["shadow", "gshadow"]),
    ro!("nproc"),
    ro!("lscpu"),
    ro!("lsblk"),
    ro!("lsusb"),
    ro!("lspci"),
    ro!("arch"),
    ro!("tty"),
    ro!("locale"),
    ro!("env"),
    ro!("base64", unsafe: &["-o", "--output"]),
    ro!("numfmt"),
    ro!("expr"),
    ro!("fd", unsafe: &["-x", "--exec", "-X", "--exec-batch"]),
    ro!("find"),
    ro!("awk", unsafe: &["-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec"]),
    ro!("gawk", unsafe: &["-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec"]),
    ro!("sed"),
    ro!("wait"),
    ro!("command"),
    ro!("hash", unsafe: &["-p"]),
    ro!("tput"),
    ro!("clear"),
    ro!("ss"),
    ro!("netstat"),
    ro!("dig"),
    ro!("nslookup"),
    ro!("host"),
    ro!("ping"),
    ro!("traceroute"),
    ro!("whois"),
    ro!("vmstat"),
    ro!("iostat"),
    ro!("top", unsafe: &[]),
    ro!("htop"),
    ro!("btop"),
    ro!("tokei"),
    ro!("cloc"),
    ro!("scc"),
    ro!("shellcheck"),
    ro!("mdls"),
    ro!("sw_vers"),
    ro!("system_profiler"),
    ro!("git", subs: &["status", "log", "diff", "show", "blame", "describe", "shortlog", "rev-parse", "ls-files", "ls-tree", "ls-remote", "cat-file", "show-ref", "merge-base", "count-objects", "for-each-ref", "name-rev", "rev-list", "whatchanged", "cherry", "diff-tree", "diff-files", "diff-index", "var", "help", "version", "check-ignore", "check-attr", "verify-commit", "grep", "annotate", "range-diff"],
        unsafe: &["--output", "--output=", "--ext-diff", "--textconv", "--exec", "--paginate", "--open-files-in-pager", "-O"]),
    ro!("docker", subs: &["ps", "images", "logs", "inspect", "version", "info", "stats", "top", "port", "history", "diff", "search"]),
    // `--kubeconfig` can name a file whose `exec` credential plugin is any program; `auth`
    // is not here because `auth reconcile` writes RBAC objects.
    ro!("kubectl", subs: &["get", "describe", "logs", "version", "explain", "api-resources", "api-versions", "top", "cluster-info"],
        unsafe: &["--kubeconfig", "--output-directory"]),
    ro!("helm", subs: &["list", "ls", "status", "history", "get", "show", "search", "version", "template", "lint"],
        unsafe: &["--post-renderer", "--kubeconfig"]),
    // Not `plan`, `validate`, `show` or `graph`: they load the provider plugins (programs in
    // the workspace's `.terraform/`), and `plan` runs `external` data sources.
    ro!("terraform", subs: &["version", "output", "providers"]),
    // Not `pack`: it runs the package's `prepack`/`prepare` scripts.
    ro!("npm", subs: &["ls", "list", "view", "info", "outdated", "search", "whoami", "ping", "doctor", "root", "bin", "prefix", "help", "explain", "why"]),
    // Not `tree` or `metadata`: both run `rustc -vV` through the `build.rustc-wrapper` a
    // workspace's `.cargo/config.toml` names, so a cloned repository runs its own program.
    ro!("cargo", subs: &["search", "version", "locate-project", "verify-project", "read-manifest", "pkgid"]),
    ro!("pip", subs: &["list", "show", "freeze", "check", "search", "index", "inspect"]),
    ro!("pip3", subs: &["list", "show", "freeze", "check"]),
    ro!("go", subs: &["version", "env", "list", "doc", "help"], unsafe: &["-toolexec", "-exec", "-overlay"]),
    ro!("gh", subs: &["status", "browse"]),
];

/// Short options that take a value, per program: in a bundle (`-uo FILE`) the letters after
/// one of them are its value, not options (`date -Iseconds`).
const VALUE_LETTERS: &[(&str, &str)] = &[
    ("date", "dfIr"),
    ("less", "bhjpPtTxyz#"),
    ("sort", "kStT"),
    ("tree", "LPIHT"),
    ("rg", "efgmABCMjtTE"),
    ("fd", "edtEcjS"),
    ("yq", "Ioe"),
];

/// Whether the word `a` is the unsafe option `u` in any spelling getopt accepts: exact,
/// `--long=VALUE`, an abbreviation of a long option (`--compress-prog`), `-xVALUE`, or a
/// letter of a bundle of short options (`sort -uo out`).
fn unsafe_match(prog: &str, a: &str, u: &str) -> bool {
    if let Some(long) = u.strip_prefix("--") {
        let name = long.trim_end_matches('=');
        let Some(given) = a.strip_prefix("--") else {
            return false;
        };
        let given = given.split('=').next().unwrap_or("");
        return given == name || (given.len() >= 3 && name.starts_with(given));
    }
    let Some(letter) = u.strip_prefix('-').filter(|l| l.chars().count() == 1) else {
        // Operands (`getent shadow`) exactly; single-dash long forms (`go -toolexec`) also as
        // `-name=VALUE` and with two dashes, as Go's flag package accepts them.
        if !u.starts_with('-') {
            return a == u;
        }
        let a = a
            .strip_prefix('-')
            .filter(|r| r.starts_with('-'))
            .unwrap_or(a);
        return a == u || a.strip_prefix(u).is_some_and(|r| r.starts_with('='));
    };
    let Some(bundle) = a.strip_prefix('-').filter(|b| !b.starts_with('-')) else {
        return false;
    };
    let valued = VALUE_LETTERS
        .iter()
        .find(|(p, _)| *p == prog)
        .map_or("", |(_, l)| l);
    for c in bundle.chars() {
        if letter.starts_with(c) {
            return true;
        }
        if valued.contains(c) || !c.is_ascii_alphanumeric() {
            return false;
        }
    }
    false
}

/// The baseline risk of a command: `ReadOnly` when the program only reads and nothing it
/// touches is written, else `Moderate`.
pub(crate) fn baseline(v: &View<'_>) -> Risk {
    if v.fx
        .paths
        .iter()
        .any(|u| u.access != Access::Read && u.redirect)
    {
        return Risk::Moderate;
    }
    program_baseline(v)
}

/// [`baseline`] without the files the command's redirections write: whether the program
/// itself only reads (`echo hi > out.txt` is a read-only program whose output goes to a
/// file; the file is a path fact of its own).
pub(crate) fn program_baseline(v: &View<'_>) -> Risk {
    if v.fx
        .paths
        .iter()
        .any(|u| u.access != Access::Read && !u.redirect)
    {
        return Risk::Moderate;
    }
    // `./ls` or `/tmp/cat` could be anything; only an installed program is the one the
    // table describes.
    if v.rec
        .argv
        .first()
        .is_some_and(|p| p.text.contains('/') && !crate::renames::installed_program(&p.text))
    {
        return Risk::Moderate;
    }
    if v.rec.argv.is_empty() {
        return Risk::ReadOnly;
    }
    // `X --version`, `X --help`.
    if (v.args.len() == 1
        && matches!(
            v.args[0],
            "--version" | "-V" | "--help" | "-h" | "version" | "help"
        ))
        || v.args.last().is_some_and(|a| *a == "--help")
    {
        return Risk::ReadOnly;
    }
    let prog = v.program();
    let Some(entry) = READ_ONLY.iter().find(|r| r.program == prog) else {
        return Risk::Moderate;
    };
    let unsafe_arg = v
        .args
        .iter()
        .take_while(|a| **a != "--")
        .any(|a| entry.unsafe_args.iter().any(|u| unsafe_match(prog, a, u)));
    if unsafe_arg {
        return Risk::Moderate;
    }
    if !v.rec.code.eq(&crate::walk::CodeInput::None) {
        return Risk::Moderate;
    }
    if writes_anyway(v, prog) {
        return Risk::Moderate;
    }
    subcommand_baseline(v, entry, prog)
}

/// The program-specific ways an otherwise read-only command writes or runs code (`find
/// -exec`, `sed -i`, `awk` with `system`, `date MMDD…`, …).
fn writes_anyway(v: &View<'_>, prog: &str) -> bool {
    match prog {
        "find" => {
            let info = crate::nested::parse_find(&v.rec.argv);
            if info.delete || !info.execs.is_empty() || !info.writes.is_empty() {
                return true;
            }
        }
        "sed"
            if v.args.iter().any(|a| {
                a.starts_with("-i")
                    || a.starts_with("--in-place")
                    || a.contains("/e")
                    || a.contains(" w ")
                    || a.starts_with('w')
            }) =>
        {
            return true;
        }
        "awk" | "gawk" => {
            // Program files and extensions (`-f`, `-i`, `-l`) are unsafe options above;
            // `getline < FILE` reads a file.
            let code = crate::interp::inline_code(crate::interp::Interp::Awk, &v.rec.argv)
                .unwrap_or_default();
            if code.contains("system")
                || code.contains('>')
                || code.contains('|')
                || code.contains("getline")
                || code.contains("@include")
                || code.contains("@load")
            {
                return true;
            }
        }
        // `load("f")`, `load_str("f")`: yq reads any file named in the expression.
        "yq" if v.args.iter().any(|a| a.contains("load")) => return true,
        // `go env -w/-u` writes the Go configuration (`GOFLAGS=-toolexec=…` runs a program
        // at every build).
        "go" if v.args.first() == Some(&"env")
            && v.args.iter().any(|a| matches!(*a, "-w" | "-u")) =>
        {
            return true;
        }
        "env" | "command" if v.args.iter().any(|a| !a.starts_with('-')) => return true,
        // `date MMDDhhmm[[CC]YY][.ss]` sets the clock like `date -s`; only `+FORMAT` reads.
        "date"
            if v.positionals(&["-d", "--date", "-f", "--file", "-r", "--reference"])
                .iter()
                .any(|a| !a.starts_with('+')) =>
        {
            return true;
        }
        "xxd" if v.args.iter().filter(|a| !a.starts_with('-')).count() > 1 => {
            return true;
        }
        "uniq" if v.args.iter().filter(|a| !a.starts_with('-')).count() > 1 => {
            return true;
        }
        _ => {}
    }
    false
}

/// Whether the subcommand of a program whose table entry lists read-only subcommands is
/// one of them (git's listings included).
fn subcommand_baseline(v: &View<'_>, entry: &ReadOnly, prog: &str) -> Risk {
    if entry.subs.is_empty() {
        return Risk::ReadOnly;
    }
    let sub = if prog == "git" {
        super::git::git_sub(v).map(|(s, _)| s)
    } else {
        v.positionals(&[
            "-n",
            "--namespace",
            "--context",
            "-o",
            "--output",
            "-C",
            "--manifest-path",
        ])
        .first()
        .copied()
    };
    match sub {
        Some(s) if entry.subs.contains(&s) => Risk::ReadOnly,
        Some("branch")
            if prog == "git"
                && v.args.iter().all(|a| {
                    matches!(
                        *a,
                        "branch"
                            | "-a"
                            | "-r"
                            | "-v"
                            | "-vv"
                            | "--list"
                            | "-l"
                            | "--all"
                            | "--remotes"
                            | "--show-current"
                    ) || a.starts_with("--contains")
                        || a.starts_with("--merged")
                        || a.starts_with("--no-merged")
                        || a.starts_with("--format")
                }) =>
        {
            Risk::ReadOnly
        }
        Some("tag" | "remote" | "stash" | "worktree" | "config" | "reflog") if prog == "git" => {
            let rest: Vec<&str> = super::git::git_sub(v).map(|(_, r)| r).unwrap_or_default();
            let listing = rest.is_empty()
                || rest.iter().all(|a| {
                    matches!(
                        *a,
                        "-l" | "--list"
                            | "-v"
                            | "--verbose"
                            | "list"
                            | "show"
                            | "get-url"
                            | "--get"
                            | "--get-all"
                            | "--get-regexp"
                            | "--show-origin"
                            | "--global"
                            | "--local"
                            | "-n"
                    ) || a.starts_with("--format")
                        || a.starts_with("--sort")
                })
                || (rest.first().is_some_and(|a| {
                    matches!(
                        *a,
                        "--get"
                            | "--get-all"
                            | "--get-regexp"
                            | "-l"
                            | "--list"
                            | "show"
                            | "list"
                            | "get-url"
                    )
                }));
            if listing {
                Risk::ReadOnly
            } else {
                Risk::Moderate
            }
        }
        _ => Risk::Moderate,
    }
}
