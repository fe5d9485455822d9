//! Options whose value is a command the program runs: `tar --to-command=CMD`, `ssh -o
//! ProxyCommand=CMD`, `rsync -e CMD`, `man -P PAGER`, `git rebase --exec CMD`, `strace -o
//! '|CMD'`, a `sed` script's `e` command, …
//!
//! A prefix allow rule such as `Bash(tar:*)` matches the outer command only. The carried
//! command is analysed as a subcommand of its own (origin [`Origin::Option`]), so it needs
//! an allow rule of its own and the catastrophic floor sees `rm -rf /` wherever it is
//! written. Options that make a program run code the analyzer cannot read (a `sed` script in
//! a file, `vim -c`, `gdb -ex`, `tmux send-keys`) make the analysis opaque.
//!
//! [`Origin::Option`]: crate::Origin::Option

use toolgate_protocol::Risk;

use crate::expand::clip;
use crate::types::Origin;
use crate::walk::Walker;
use crate::words::Field;

/// A command carried by an option (or by the rest of the command line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Carried {
    /// Shell code the program runs (through `sh -c`, or split into words by the program).
    Shell(Field),
    /// A command line the program runs as it is (`git bisect run CMD ARGS…`).
    Argv(Vec<Field>),
    /// The remote shell of a transfer (`rsync -e`, `scp -S`, `git -c core.sshCommand`).
    /// When it is plain `ssh`, only what its own options carry (`-o ProxyCommand=…`) is
    /// analysed: connecting is what the outer command is for, and its rule covers that.
    Transport(Field),
    /// The program runs code the analyzer cannot read; why.
    Opaque(String),
}

/// One program's option grammar, as far as it matters for carried commands.
#[derive(Debug)]
pub(crate) struct CarrierSpec {
    /// Program basenames.
    pub programs: &'static [&'static str],
    /// Short options whose value is a command (`I` for `tar -I CMD`).
    pub cmd_short: &'static str,
    /// Long options whose value is a command (unambiguous abbreviations count too).
    pub cmd_long: &'static [&'static str],
    /// Short options that take some other value, so the value is not read as options.
    pub val_short: &'static str,
    /// Long options that take some other value as the next word.
    pub val_long: &'static [&'static str],
    /// Word prefixes that make the program run code the analyzer cannot read, and why.
    pub opaque: &'static [(&'static str, &'static str)],
    /// `(command, what it carries)`; an opaque result is written `?`.
    pub examples: &'static [(&'static str, &'static [&'static str])],
}

/// Programs whose options carry commands. `ssh`, `scp`, `sftp` (`-o`), `git`, `sed`,
/// `tmux`, `screen`, `strace`, `zip`, `capsh`, `sg` and terminal emulators have extra
/// handling below; their plain options are here.
#[rustfmt::skip]
pub(crate) const CARRIERS: &[CarrierSpec] = &[
    CarrierSpec { programs: &["tar", "gtar"], cmd_short: "IF", cmd_long: &["--to-command", "--use-compress-program", "--info-script", "--new-volume-script", "--rsh-command"], val_short: "fCbgHKLNTVX", val_long: &["--file", "--directory", "--blocking-factor", "--listed-incremental", "--format", "--starting-file", "--tape-length", "--newer", "--files-from", "--label", "--exclude-from", "--exclude", "--owner", "--group", "--mode", "--mtime", "--transform", "--xform", "--checkpoint-action"], opaque: &[], examples: &[("tar -cf /dev/null --to-command='rm -rf /' .", &["rm -rf /"]), ("tar -xf a.tar -I zstd", &["zstd"]), ("tar -cIf 'xz -9' a.tar .", &["f"]), ("tar --use-comp=pigz -cf a.tar .", &["pigz"]), ("tar -czf a.tgz src", &[]), ("tar -xf a.tar --checkpoint=1 --checkpoint-action=exec='sh x.sh'", &["sh x.sh"]), ("tar -C /tmp -xf a.tar -- -I", &[])]},
    CarrierSpec { programs: &["rsync"], cmd_short: "e", cmd_long: &["--rsh", "--rsync-path"], val_short: "BfMT", val_long: &["--filter", "--exclude", "--include", "--exclude-from", "--include-from", "--files-from", "--temp-dir", "--partial-dir", "--backup-dir", "--suffix", "--chmod", "--chown", "--compare-dest", "--copy-dest", "--link-dest", "--log-file", "--password-file", "--port"], opaque: &[], examples: &[("rsync -avz -e 'ssh -p 2222' a host:b", &["ssh -p 2222"]), ("rsync -ae ssh a host:", &["ssh"]), ("rsync --rsync-path='sudo rsync' a host:", &["sudo rsync"]), ("rsync -a --exclude -e a b", &[])]},
    CarrierSpec { programs: &["scp"], cmd_short: "S", cmd_long: &[], val_short: "cDiJlPoX", val_long: &[], opaque: &[("-F", "reads an ssh configuration file, which can run commands (ProxyCommand, LocalCommand, Match exec)")], examples: &[("scp -S ./myssh a host:", &["./myssh"]), ("scp -P 22 a host:", &[])]},
    CarrierSpec { programs: &["sftp"], cmd_short: "SD", cmd_long: &[], val_short: "BbcilPoRsJX", val_long: &[], opaque: &[("-F", "reads an ssh configuration file, which can run commands (ProxyCommand, LocalCommand, Match exec)")], examples: &[("sftp -D /usr/lib/sftp-server", &["/usr/lib/sftp-server"]), ("sftp -b batch host", &[])]},
    CarrierSpec { programs: &["ssh"], cmd_short: "", cmd_long: &[], val_short: "BbcDEeFIiJLlmOopQRSWw", val_long: &[], opaque: &[("-F", "reads an ssh configuration file, which can run commands (ProxyCommand, LocalCommand, Match exec)"), ("-I", "loads a PKCS#11 library, which runs its code")], examples: &[("ssh -F ./cfg host", &["?"]), ("ssh -p 22 host", &[])]},
    CarrierSpec { programs: &["sort"], cmd_short: "", cmd_long: &["--compress-program"], val_short: "kStTo", val_long: &["--key", "--buffer-size", "--field-separator", "--temporary-directory", "--output", "--files0-from", "--random-source", "--parallel", "--batch-size"], opaque: &[], examples: &[("sort --compress-program=gzip -S 1M f", &["gzip"]), ("sort --compress-prog='sh -c id' f", &["sh -c id"]), ("sort -k2 -o out f", &[])]},
    CarrierSpec { programs: &["rg"], cmd_short: "", cmd_long: &["--pre", "--hostname-bin"], val_short: "efgmABCMjtTE", val_long: &["--regexp", "--file", "--glob", "--max-count", "--after-context", "--before-context", "--context", "--max-columns", "--threads", "--type", "--type-not", "--encoding", "--pre-glob"], opaque: &[], examples: &[("rg --pre ./unzip.sh x", &["./unzip.sh"]), ("rg --pre-glob '*.gz' x", &[]), ("rg -e --pre x", &[])]},
    CarrierSpec { programs: &["bat", "batcat", "ag", "ack"], cmd_short: "", cmd_long: &["--pager"], val_short: "", val_long: &["--language", "--theme", "--style", "--map-syntax", "--line-range", "--highlight-line", "--tabs", "--wrap", "--terminal-width", "--color", "--italic-text", "--decorations", "--paging", "--file-name", "--diff-context", "--ignore-dir", "--type", "--depth"], opaque: &[("--ackrc", "reads an ack configuration, which can set a pager")], examples: &[("bat --pager='less -R' f", &["less -R"]), ("ack --pager=cat x", &["cat"]), ("bat -n f", &[])]},
    CarrierSpec { programs: &["helm"], cmd_short: "", cmd_long: &["--post-renderer"], val_short: "fnf", val_long: &["--values", "--namespace", "--set", "--set-string", "--version", "--repo", "--kube-context", "--kubeconfig", "--output-dir", "--post-renderer-args"], opaque: &[], examples: &[("helm template x ./chart --post-renderer ./kustomize.sh", &["./kustomize.sh"]), ("helm template x ./chart -f v.yaml", &[])]},
    CarrierSpec { programs: &["man"], cmd_short: "PH", cmd_long: &["--pager", "--html"], val_short: "CMSsmLeRpErT", val_long: &["--config-file", "--manpath", "--sections", "--systems", "--locale", "--extension", "--recode", "--preprocessor", "--encoding", "--prompt"], opaque: &[], examples: &[("man -P cat ls", &["cat"]), ("man --pager='less -R' ls", &["less -R"]), ("man --html=firefox ls", &["firefox"]), ("man -Hfirefox ls", &["firefox"]), ("man 5 crontab", &[])]},
    CarrierSpec { programs: &["script"], cmd_short: "c", cmd_long: &["--command"], val_short: "ETBIOm", val_long: &["--echo", "--log-timing", "--log-io", "--log-in", "--log-out", "--logging-format", "--timing"], opaque: &[], examples: &[("script -qc 'make test' /dev/null", &["make test"]), ("script out.log", &[])]},
    CarrierSpec { programs: &["nodemon"], cmd_short: "x", cmd_long: &["--exec"], val_short: "ewdiV", val_long: &["--ext", "--watch", "--delay", "--ignore", "--signal", "--config"], opaque: &[], examples: &[("nodemon --exec 'npm test'", &["npm test"]), ("nodemon app.js", &[])]},
    CarrierSpec { programs: &["sg"], cmd_short: "c", cmd_long: &[], val_short: "", val_long: &[], opaque: &[], examples: &[("sg docker -c 'docker ps'", &["docker ps"])]},
    CarrierSpec { programs: &["vim", "vi", "nvim", "ex", "view", "vimdiff", "gvim", "gview", "evim", "nvi", "elvis"], cmd_short: "", cmd_long: &[], val_short: "", val_long: &[], opaque: &[("-c", "runs editor commands, which can run shell commands (`:!`)"), ("--cmd", "runs editor commands, which can run shell commands (`:!`)"), ("-S", "sources an editor script, which can run shell commands"), ("-s", "reads editor commands from a file, which can run shell commands"), ("-u", "reads an editor configuration, which can run shell commands"), ("--remote-send", "sends keys to another editor")], examples: &[("vim -c '!rm -rf /' -c q x", &["?"]), ("vim +'!id' x", &["?"]), ("vim +10 x", &[]), ("vim x", &[])]},
    CarrierSpec { programs: &["less"], cmd_short: "", cmd_long: &[], val_short: "", val_long: &[], opaque: &[], examples: &[("less +'!id' f", &["?"]), ("less +G f", &[]), ("less -R f", &[])]},
    CarrierSpec { programs: &["gdb", "cgdb", "gdb-multiarch"], cmd_short: "", cmd_long: &[], val_short: "", val_long: &[], opaque: &[("-ex", "runs debugger commands, which can run shell commands"), ("--ex", "runs debugger commands, which can run shell commands"), ("-iex", "runs debugger commands, which can run shell commands"), ("--eval-command", "runs debugger commands, which can run shell commands"), ("--init-eval-command", "runs debugger commands, which can run shell commands"), ("-x", "runs a debugger command file, which can run shell commands"), ("--command", "runs a debugger command file, which can run shell commands"), ("-ix", "runs a debugger command file, which can run shell commands"), ("--init-command", "runs a debugger command file, which can run shell commands")], examples: &[("gdb -batch -ex 'shell id'", &["?"]), ("gdb ./prog core", &[])]},
    CarrierSpec { programs: &["compgen", "complete"], cmd_short: "C", cmd_long: &[], val_short: "AGWFPSXo", val_long: &[], opaque: &[], examples: &[("compgen -C 'rm -rf /' x", &["rm -rf /"]), ("complete -C ./comp.sh mycmd", &["./comp.sh"]), ("compgen -c gi", &[]), ("complete -W 'a b' x", &[])]},
    CarrierSpec { programs: &["mapfile", "readarray"], cmd_short: "C", cmd_long: &[], val_short: "dnOsuc", val_long: &[], opaque: &[], examples: &[("mapfile -t -C 'rm -rf /' -c 1 a < f", &["rm -rf /"]), ("mapfile -t -d , lines < f", &[])]},
    CarrierSpec { programs: &["fc"], cmd_short: "", cmd_long: &[], val_short: "", val_long: &[], opaque: &[("-s", "re-runs commands from the shell history"), ("-e", "edits commands from the shell history and runs them")], examples: &[("fc -s rm", &["?"]), ("fc -e vi 10", &["?"]), ("fc -l", &[])]},
    CarrierSpec { programs: &["enable"], cmd_short: "", cmd_long: &[], val_short: "", val_long: &[], opaque: &[("-f", "loads a builtin from a shared library, which runs its code")], examples: &[("enable -f ./x.so x", &["?"]), ("enable -n echo", &[])]},
    CarrierSpec { programs: &["bind"], cmd_short: "", cmd_long: &[], val_short: "", val_long: &[], opaque: &[("-x", "binds a key to a shell command")], examples: &[("bind -x '\"\\C-m\": id'", &["?"]), ("bind -p", &[])]},
    CarrierSpec { programs: &["expect"], cmd_short: "", cmd_long: &[], val_short: "", val_long: &[], opaque: &[("-c", "runs Tcl code, which can run commands")], examples: &[("expect -c 'spawn id'", &["?"])]},
];

impl Walker<'_> {
    /// Analyses the commands `argv`'s options carry, each as a subcommand of its own.
    pub(crate) fn run_carried(&mut self, prog: &str, argv: &[Field]) {
        let list = carried(prog, argv);
        self.run_carried_list(prog, list);
    }

    /// Analyses carried commands found by [`carried`] or [`db_meta`].
    pub(crate) fn run_carried_list(&mut self, prog: &str, list: Vec<Carried>) {
        for c in list {
            match c {
                Carried::Shell(code) => {
                    if code.net {
                        self.finding(
                            Risk::High,
                            "remote_code_execution",
                            format!(
                                "`{prog} … {}` (rule rce.option_download): runs a downloaded command",
                                clip(&code.text)
                            ),
                        );
                    }
                    self.nested_code(&code.text, Origin::Option, None, None);
                }
                Carried::Transport(code) => match plain_ssh(&code) {
                    Some(words) => self.run_carried("ssh", &words),
                    None => self.nested_code(&code.text, Origin::Option, None, None),
                },
                Carried::Argv(inner) => {
                    self.run_nested_argv(inner, Origin::Option, Vec::new(), None);
                }
                Carried::Opaque(why) => self.opaque(why),
            }
        }
    }
}

/// `ssh ARGS…` as words when a transport is plain `ssh` with literal arguments: no shell
/// syntax, no expansions, simple quotes only.
fn plain_ssh(code: &Field) -> Option<Vec<Field>> {
    if code.dynamic
        || code
            .text
            .contains(['$', '`', ';', '|', '&', '<', '>', '(', ')', '\\', '\n'])
    {
        return None;
    }
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in code.text.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(Field::lit(std::mem::take(&mut cur)));
                    any = false;
                }
            }
            (_, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if any {
        words.push(Field::lit(cur));
    }
    let first = words.first()?;
    (first.text == "ssh" || first.text.ends_with("/ssh")).then_some(words)
}

/// Options whose command is a remote shell (see [`Carried::Transport`]).
const TRANSPORTS: &[(&str, &str)] = &[
    ("rsync", "-e"),
    ("rsync", "--rsh"),
    ("scp", "-S"),
    ("sftp", "-S"),
    ("tar", "--rsh-command"),
    ("gtar", "--rsh-command"),
];

/// A carried command, as a transport when `option` of `prog` names a remote shell.
fn command(prog: &str, option: &str, value: Field) -> Carried {
    if TRANSPORTS.contains(&(prog, option)) {
        Carried::Transport(value)
    } else {
        Carried::Shell(value)
    }
}

/// `ssh -o` keys whose value is a local command (compared in lower case).
const SSH_COMMAND_KEYS: &[&str] = &["proxycommand", "localcommand", "knownhostscommand"];

/// `ssh -o` keys that load a library (its code runs in ssh).
const SSH_LIBRARY_KEYS: &[&str] = &["pkcs11provider", "securitykeyprovider"];

/// Every command carried by `argv` (`argv[0]` is the program, `prog` its basename).
pub(crate) fn carried(prog: &str, argv: &[Field]) -> Vec<Carried> {
    let mut out = Vec::new();
    match prog {
        "git" => git(argv, &mut out),
        "sed" | "gsed" => crate::sed::carried(argv, &mut out),
        "tmux" => tmux(argv, &mut out),
        "screen" => screen(argv, &mut out),
        "strace" => strace(argv, &mut out),
        "zip" => zip(argv, &mut out),
        "capsh" => capsh(argv, &mut out),
        "watchexec" => watchexec(argv, &mut out),
        "fd" | "fdfind" => fd(argv, &mut out),
        "npm" | "pnpm" | "yarn" => package_manager(argv, &mut out),
        "cargo" => cargo(argv, &mut out),
        "go" => go(argv, &mut out),
        "make" | "gmake" => make(argv, &mut out),
        "docker" | "podman" | "nerdctl" => container_run(argv, &mut out),
        "curl" => curl_config(argv, &mut out),
        "wget" => wget_execute(argv, &mut out),
        "sqlite3" | "duckdb" | "spatialite" | "psql" | "mysql" | "mariadb" => {
            db_client(prog, argv, &mut out);
        }
        "xterm" | "uxterm" | "urxvt" | "rxvt" | "konsole" | "alacritty" | "gnome-terminal"
        | "xfce4-terminal" | "terminator" | "kitty" => terminal(prog, argv, &mut out),
        _ => {}
    }
    if let Some(spec) = CARRIERS.iter().find(|s| s.programs.contains(&prog)) {
        scan(prog, spec, argv, &mut out);
        match prog {
            "ssh" | "scp" | "sftp" => ssh_options(argv, spec.val_short, &mut out),
            "tar" | "gtar" => tar_extra(argv, &mut out),
            "less" | "vim" | "vi" | "nvim" | "ex" | "view" | "vimdiff" | "gvim" | "gview"
            | "evim" => plus_commands(prog, argv, &mut out),
            "sg" => sg(argv, &mut out),
            _ => {}
        }
    }
    let mut unique = Vec::with_capacity(out.len());
    for c in out {
        if !unique.contains(&c) {
            unique.push(c);
        }
    }
    unique
}

/// Whether `word` (without its leading dashes) names the long option `full` (with them),
/// exactly or as an abbreviation of at least three letters, as `getopt_long` accepts.
pub(crate) fn long_is(word: &str, full: &str) -> bool {
    let full = full.trim_start_matches('-');
    word == full || (word.len() >= 3 && full.starts_with(word))
}

/// A piece of a word as a field of its own, keeping what is known about the word.
pub(crate) fn part(of: &Field, text: &str) -> Field {
    Field {
        text: text.to_owned(),
        dynamic: of.dynamic,
        glob: false,
        procsub: None,
        net: of.net,
    }
}

/// Splits a long option without its dashes (`name=value`) into name and inline value.
pub(crate) fn split_long(long: &str) -> (&str, Option<&str>) {
    match long.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (long, None),
    }
}

/// The value of the option in `argv[*i]`: `inline` (a piece of that word) when given, else
/// the next word, moving `*i` onto it.
pub(crate) fn option_value(argv: &[Field], i: &mut usize, inline: Option<&str>) -> Option<Field> {
    match inline {
        Some(v) => Some(part(&argv[*i], v)),
        None => {
            let next = argv.get(*i + 1)?.clone();
            *i += 1;
            Some(next)
        }
    }
}

/// The generic scan: `-X VALUE`, `-XVALUE`, `--long=VALUE`, `--long VALUE`, clusters,
/// options after operands (GNU), `--` ends the options.
fn scan(prog: &str, spec: &CarrierSpec, argv: &[Field], out: &mut Vec<Carried>) {
    let mut i = 1;
    while i < argv.len() {
        let w = &argv[i];
        let a = w.text.as_str();
        if a == "--" {
            break;
        }
        if let Some((_, why)) = spec
            .opaque
            .iter()
            .find(|(p, _)| a == *p || (a.starts_with(p) && p.len() == 2 && !a.starts_with("--")))
        {
            out.push(Carried::Opaque(format!("`{}` {why}", argv[0].text)));
            i += 1;
            continue;
        }
        if let Some(long) = a.strip_prefix("--").filter(|l| !l.is_empty()) {
            let (name, inline) = split_long(long);
            if let Some(full) = spec.cmd_long.iter().find(|f| long_is(name, f)) {
                // `man --html` alone uses $BROWSER: only `--html=CMD` carries one.
                if (name != "html" || inline.is_some())
                    && let Some(v) = option_value(argv, &mut i, inline)
                {
                    out.push(command(prog, full, v));
                }
            } else if inline.is_none()
                && spec
                    .val_long
                    .iter()
                    .any(|f| f.trim_start_matches('-') == name)
            {
                // Exact names only: skipping a word on a guessed abbreviation could hide
                // a command option behind it.
                i += 1;
            }
            i += 1;
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let flags = &a[1..];
            for (pos, c) in flags.char_indices() {
                let rest = &flags[pos + c.len_utf8()..];
                // A getopt program (one with valued short options) also takes an opaque
                // option inside a bundle: `ssh -vF cfg`.
                if !spec.val_short.is_empty()
                    && let Some((_, why)) = spec
                        .opaque
                        .iter()
                        .find(|(p, _)| p.len() == 2 && p.ends_with(c))
                {
                    out.push(Carried::Opaque(format!("`{}` {why}", argv[0].text)));
                    break;
                }
                if spec.cmd_short.contains(c) {
                    let option = format!("-{c}");
                    if !rest.is_empty() {
                        out.push(command(prog, &option, part(w, rest)));
                    } else if c == 'H' && prog == "man" {
                        // `man -H` alone uses $BROWSER.
                    } else if let Some(v) = argv.get(i + 1) {
                        out.push(command(prog, &option, v.clone()));
                        i += 1;
                    }
                    break;
                }
                if spec.val_short.contains(c) {
                    if rest.is_empty() {
                        i += 1;
                    }
                    break;
                }
            }
        }
        i += 1;
    }
}

/// `ssh -o Key=Value` / `-oKey Value` with a command key; `-o` for `scp` and `sftp` too.
fn ssh_options(argv: &[Field], val_short: &str, out: &mut Vec<Carried>) {
    let mut i = 1;
    while i < argv.len() {
        let w = &argv[i];
        let a = w.text.as_str();
        if a == "--" || !a.starts_with('-') || a.len() < 2 {
            // ssh stops at the host; scp and sftp take operands after options too, but
            // nothing after the first operand is an option for ssh.
            if argv[0].text.ends_with("ssh") {
                break;
            }
            i += 1;
            continue;
        }
        let flags = &a[1..];
        for (pos, c) in flags.char_indices() {
            let rest = &flags[pos + c.len_utf8()..];
            if c == 'o' {
                let (value, src) = if rest.is_empty() {
                    i += 1;
                    match argv.get(i) {
                        Some(v) => (v.text.as_str(), v),
                        None => break,
                    }
                } else {
                    (rest, w)
                };
                ssh_option(&argv[0].text, value, src, out);
                break;
            }
            if val_short.contains(c) {
                if rest.is_empty() {
                    i += 1;
                }
                break;
            }
        }
        i += 1;
    }
}

/// One `-o` value: `Key=Value` or `Key Value`.
fn ssh_option(prog: &str, option: &str, src: &Field, out: &mut Vec<Carried>) {
    let option = option.trim_start();
    let split = option
        .find(|c: char| c == '=' || c.is_whitespace())
        .unwrap_or(option.len());
    let key = option[..split].to_ascii_lowercase();
    let value = option[split..]
        .trim_start_matches(|c: char| c.is_whitespace())
        .trim_start_matches('=')
        .trim();
    if SSH_COMMAND_KEYS.contains(&key.as_str()) {
        if !value.eq_ignore_ascii_case("none") && !value.is_empty() {
            out.push(Carried::Shell(part(src, value)));
        }
    } else if SSH_LIBRARY_KEYS.contains(&key.as_str()) {
        out.push(Carried::Opaque(format!(
            "`{prog} -o {key}` loads a library, which runs its code"
        )));
    } else if src.dynamic && (split == option.len() || not_static(&option[..split])) {
        out.push(Carried::Opaque(format!(
            "`{prog} -o {option}` is not static (it may set ProxyCommand)"
        )));
    }
}

/// Whether a piece of a word still holds an expansion the analyzer could not resolve.
fn not_static(piece: &str) -> bool {
    piece.contains(['$', '`'])
}

/// `tar --checkpoint-action=exec=CMD` and old-style bundled options (`tar cIf …`).
fn tar_extra(argv: &[Field], out: &mut Vec<Carried>) {
    let mut i = 1;
    while i < argv.len() {
        let w = &argv[i];
        let a = w.text.as_str();
        if a == "--" {
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = split_long(long);
            // `--checkpoint[=N]` is an option of its own; only `--checkpoint-a…` abbreviates.
            if name.starts_with("checkpoint-")
                && "checkpoint-action".starts_with(name)
                && let Some(value) = option_value(argv, &mut i, inline)
                && let Some(cmd) = value
                    .text
                    .strip_prefix("exec=")
                    .or_else(|| value.text.strip_prefix("exec:"))
            {
                out.push(Carried::Shell(part(&value, cmd)));
            }
        }
        i += 1;
    }
    // Old style: the first word is a bundle of letters without a dash; values follow in
    // order. Which word `I` or `F` takes is knowable, but rare enough to ask instead.
    if let Some(first) = argv.get(1)
        && !first.text.starts_with('-')
        && first.text.chars().all(|c| c.is_ascii_alphabetic())
        && first.text.contains(['I', 'F'])
    {
        out.push(Carried::Opaque(format!(
            "`tar {}`: an old-style option bundle with a command option (I or F)",
            first.text
        )));
    }
}

/// `less +CMD` and `vim +CMD`: an initial command; only line numbers and searches are known
/// not to run anything.
fn plus_commands(prog: &str, argv: &[Field], out: &mut Vec<Carried>) {
    for w in argv.iter().skip(1) {
        let a = w.text.as_str();
        if a == "--" {
            break;
        }
        let Some(cmd) = a.strip_prefix('+') else {
            continue;
        };
        let harmless = cmd.is_empty()
            || cmd.chars().all(|c| c.is_ascii_digit())
            || (cmd.starts_with('/') && !cmd.contains(['|', '!']))
            || (prog == "less" && !cmd.contains(['!', '|', 's', 'o', 'O', 'v', 'E', 'e', ':']));
        if !harmless || w.dynamic {
            out.push(Carried::Opaque(format!(
                "`{prog} {a}` runs a start-up command, which can run shell commands"
            )));
        }
    }
}

/// `sg GROUP CMD` (the command without `-c`).
fn sg(argv: &[Field], out: &mut Vec<Carried>) {
    let ops: Vec<&Field> = argv
        .iter()
        .skip(1)
        .filter(|w| !w.text.starts_with('-'))
        .collect();
    if !argv.iter().any(|w| w.text == "-c")
        && let Some(cmd) = ops.get(1)
    {
        out.push(Carried::Shell((*cmd).clone()));
    }
}

/// `strace -o '|CMD'` / `-o '!CMD'`: the trace goes into a command's stdin.
fn strace(argv: &[Field], out: &mut Vec<Carried>) {
    for (i, w) in argv.iter().enumerate() {
        let a = w.text.as_str();
        let value = if a == "-o" || a == "--output" {
            argv.get(i + 1).map(|v| (v.text.as_str(), v))
        } else {
            a.strip_prefix("--output=")
                .or_else(|| a.strip_prefix("-o").filter(|v| !v.is_empty()))
                .map(|v| (v, w))
        };
        if let Some((v, src)) = value
            && let Some(cmd) = v.strip_prefix('|').or_else(|| v.strip_prefix('!'))
        {
            out.push(Carried::Shell(part(src, cmd)));
        }
    }
}

/// `zip -TT CMD` / `--unzip-command CMD`: the archive test command.
fn zip(argv: &[Field], out: &mut Vec<Carried>) {
    for (i, w) in argv.iter().enumerate() {
        let a = w.text.as_str();
        if let Some(v) = a.strip_prefix("--unzip-command=") {
            out.push(Carried::Shell(part(w, v)));
        } else if (a == "-TT" || a == "--unzip-command")
            && let Some(v) = argv.get(i + 1)
        {
            out.push(Carried::Shell(v.clone()));
        }
    }
}

/// `capsh … -- ARGS`: the arguments go to `/bin/bash`.
fn capsh(argv: &[Field], out: &mut Vec<Carried>) {
    if let Some(dd) = argv.iter().position(|w| w.text == "--") {
        let mut inner = vec![Field::lit("bash")];
        inner.extend(argv[dd + 1..].iter().cloned());
        out.push(Carried::Argv(inner));
    }
    if argv.iter().any(|w| w.text.starts_with("--shell=")) {
        out.push(Carried::Opaque(
            "`capsh --shell=…` picks the shell that runs the arguments".into(),
        ));
    }
}

/// Terminal emulators: `-e CMD ARGS…` (`-e STRING` for gnome-terminal and xfce4-terminal),
/// `-x ARGS…`, `-- ARGS…`, or the trailing arguments (`kitty CMD`).
fn terminal(prog: &str, argv: &[Field], out: &mut Vec<Carried>) {
    let string_e = matches!(prog, "gnome-terminal" | "xfce4-terminal" | "terminator");
    for (i, w) in argv.iter().enumerate().skip(1) {
        let a = w.text.as_str();
        if (a == "-e" || a == "--command") && string_e {
            if let Some(v) = argv.get(i + 1) {
                out.push(Carried::Shell(v.clone()));
            }
            continue;
        }
        if a == "-e" || a == "--command" || a == "-x" || a == "--execute" || a == "--" {
            if i + 1 < argv.len() {
                out.push(Carried::Argv(argv[i + 1..].to_vec()));
            }
            return;
        }
    }
    if prog == "kitty" {
        #[rustfmt::skip]
        const VALUED: &[&str] = &[
            "-c", "--config", "-o", "--override", "--class", "--name", "--title", "-T",
            "--session", "-d", "--directory", "--listen-on", "--start-as", "--instance-group",
            "--watcher", "--app-id",
        ];
        let i = first_operand(argv, 1, VALUED);
        if i < argv.len() {
            out.push(Carried::Argv(argv[i..].to_vec()));
        }
    }
}

/// `watchexec [OPTIONS] [--] COMMAND…`: the command goes through a shell by default.
fn watchexec(argv: &[Field], out: &mut Vec<Carried>) {
    #[rustfmt::skip]
    const VALUED: &[&str] = &[
        "-e", "--exts", "-w", "--watch", "-W", "--watch-non-recursive", "-i", "--ignore",
        "-d", "--debounce", "-s", "--signal", "--stop-signal", "--stop-timeout", "-E", "--env",
        "-f", "--filter", "--filter-file", "--ignore-file", "--project-origin", "--workdir",
        "--on-busy-update", "--delay-run", "--poll", "--emit-events-to", "--shell", "-o",
        "--timeout", "--wrap-process",
    ];
    let i = first_operand(argv, 1, VALUED);
    if i < argv.len() {
        out.push(Carried::Shell(joined(&argv[i..])));
    }
}

/// A long option (`--name=value` or `--name value`) at `argv[*i]` whose name is one of
/// `names`: its value, with `*i` moved past it. Stops at nothing; callers stop at `--`.
fn long_value(argv: &[Field], i: &mut usize, names: &[&str]) -> Option<(String, Field)> {
    let word = argv.get(*i)?;
    let long = word.text.strip_prefix("--")?;
    let (name, inline) = split_long(long);
    let full = names.iter().find(|n| n.trim_start_matches('-') == name)?;
    let inline = inline.map(|v| part(word, v));
    let value = match inline {
        Some(v) => v,
        None => {
            *i += 1;
            argv.get(*i)?.clone()
        }
    };
    Some(((*full).to_owned(), value))
}

/// `npm`/`pnpm`/`yarn`: `--script-shell PROG` runs every script through PROG; node options
/// that load code (`--require`, `--import`, `--loader`) and other configuration files
/// (which can set either) are opaque. The script itself is the rule's business.
fn package_manager(argv: &[Field], out: &mut Vec<Carried>) {
    let mut i = 1;
    while i < argv.len() {
        if argv[i].text == "--" {
            break;
        }
        if let Some((name, value)) = long_value(
            argv,
            &mut i,
            &[
                "--script-shell",
                "--config.script-shell",
                "--node-options",
                "--config.node-options",
                "--userconfig",
                "--globalconfig",
            ],
        ) {
            match name.as_str() {
                "--script-shell" | "--config.script-shell" => {
                    if !is_plain_shell(&value) {
                        out.push(Carried::Argv(vec![value]));
                    }
                }
                "--node-options" | "--config.node-options" => {
                    let t = value.text.as_str();
                    if value.dynamic
                        || [
                            "--require",
                            "-r",
                            "--import",
                            "--loader",
                            "--experimental-loader",
                        ]
                        .iter()
                        .any(|o| t.split([' ', '=']).any(|w| w == *o))
                    {
                        out.push(Carried::Opaque(format!(
                            "`--node-options={}` makes node load code before every script",
                            clip(t)
                        )));
                    }
                }
                _ => out.push(Carried::Opaque(format!(
                    "`{name}` reads another configuration file, which can set the script shell"
                ))),
            }
        }
        i += 1;
    }
}

/// Whether a program value is a plain system shell (`/bin/bash`, `sh`): running scripts
/// through it is what the tool does anyway.
fn is_plain_shell(value: &Field) -> bool {
    !value.dynamic
        && !value.text.contains(char::is_whitespace)
        && (!value.text.contains('/')
            || ["/bin/", "/usr/bin/", "/usr/local/bin/"]
                .iter()
                .any(|d| value.text.starts_with(d)))
        && crate::exec::SHELLS.contains(&crate::exec::basename(&value.text).as_str())
}

/// `cargo --config KEY=VALUE` for keys that name a program (`build.rustc-wrapper`,
/// `target.<triple>.runner`, `…linker`, `build.rustc`, `build.rustdoc`); a configuration
/// file (`--config path.toml`) is opaque.
fn cargo(argv: &[Field], out: &mut Vec<Carried>) {
    const PROGRAM_KEYS: &[&str] = &[
        "build.rustc-wrapper",
        "build.rustc-workspace-wrapper",
        "build.rustc",
        "build.rustdoc",
    ];
    let mut i = 1;
    while i < argv.len() {
        if argv[i].text == "--" {
            break;
        }
        if let Some((_, value)) = long_value(argv, &mut i, &["--config"]) {
            match value.text.split_once('=') {
                Some((key, v)) => {
                    let key = key.trim();
                    let program = PROGRAM_KEYS.contains(&key)
                        || ((key.starts_with("target.") || key.starts_with("host."))
                            && (key.ends_with(".runner") || key.ends_with(".linker")))
                        || key == "host.linker"
                        || key.ends_with("rustflags");
                    if program {
                        let v = v.trim().trim_matches(['"', '\'', '[', ']']);
                        out.push(if key.ends_with("rustflags") {
                            Carried::Opaque(format!(
                                "`--config {}` passes compiler flags, which can name a linker \
                                 or plugin",
                                clip(&value.text)
                            ))
                        } else {
                            Carried::Shell(part(&value, v))
                        });
                    }
                }
                None => out.push(Carried::Opaque(format!(
                    "`cargo --config {}` reads a configuration file, which can name programs \
                     to run",
                    clip(&value.text)
                ))),
            }
        }
        i += 1;
    }
}

/// `go build/test/run -exec PROG`, `-toolexec PROG`: go runs PROG around every test binary or
/// tool it starts. Go takes `-flag value` and `-flag=value`, with one dash or two.
fn go(argv: &[Field], out: &mut Vec<Carried>) {
    let mut i = 1;
    while i < argv.len() {
        let w = &argv[i];
        if w.text == "--" {
            break;
        }
        let bare = w.text.trim_start_matches('-');
        if w.text.starts_with('-') {
            let (name, inline) = split_long(bare);
            if matches!(name, "exec" | "toolexec") {
                let value = match inline {
                    Some(v) => Some(part(w, v)),
                    None => {
                        i += 1;
                        argv.get(i).cloned()
                    }
                };
                if let Some(v) = value {
                    out.push(Carried::Shell(v));
                }
            }
        }
        i += 1;
    }
}

/// `make SHELL=PROG`: every recipe line runs through PROG (a plain system shell is what make
/// does anyway). `--eval` text is make syntax with recipes, like the Makefile itself.
fn make(argv: &[Field], out: &mut Vec<Carried>) {
    for w in argv.iter().skip(1).take_while(|w| w.text != "--") {
        if let Some(v) = w.text.strip_prefix("SHELL=") {
            let value = part(w, v);
            if !is_plain_shell(&value) {
                out.push(Carried::Argv(vec![value]));
            }
        }
    }
}

/// `docker run` / `podman run` with host directories mounted (`-v SRC:DST`, `--mount
/// type=bind,…`) or host access (`--privileged`, `--pid=host`): the container's command
/// acts on the host, so it is a subcommand of its own, with container paths under a mount
/// rewritten to the host paths they are (`-v /:/h … rm -rf /h` deletes `/`). Without host
/// access the container's command is the image's business.
fn container_run(argv: &[Field], out: &mut Vec<Carried>) {
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
    }));
}

/// `curl -K FILE` / `--config FILE` reads more options from FILE (`upload-file = .env`,
/// `output = ~/.bashrc`), which the analyzer does not see.
fn curl_config(argv: &[Field], out: &mut Vec<Carried>) {
    for w in argv.iter().skip(1) {
        let t = w.text.as_str();
        if t == "-K" || t == "--config" || (t.starts_with("-K") && t.len() > 2) {
            out.push(Carried::Opaque(
                "`curl -K` reads options from a file, which can name files to upload or write"
                    .into(),
            ));
            return;
        }
    }
}

/// `wget -e CMD` / `--execute CMD` runs a wgetrc command: the ones that name a file to send,
/// write or read, or a program to run (`post_file=.env`, `output_document=…`,
/// `use_askpass=…`) are opaque; settings such as `robots=off` are not.
fn wget_execute(argv: &[Field], out: &mut Vec<Carried>) {
    const FILE_KEYS: &[&str] = &[
        "postfile",
        "bodyfile",
        "outputdocument",
        "logfile",
        "appendoutput",
        "input",
        "useaskpass",
        "loadcookies",
        "savecookies",
        "hstsfile",
        "certificate",
        "privatekey",
        "cacertificate",
        "warcfile",
        "dirprefix",
        "configfile",
    ];
    let mut i = 1;
    while let Some(w) = argv.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let value = match t {
            "-e" | "--execute" => {
                i += 1;
                argv.get(i).cloned()
            }
            _ if t.starts_with("--execute=") => Some(part(w, &t["--execute=".len()..])),
            _ if t.starts_with("-e") && t.len() > 2 => Some(part(w, &t[2..])),
            _ => None,
        };
        if let Some(value) = value {
            let v = value.text.as_str();
            let key: String = v
                .split('=')
                .next()
                .unwrap_or("")
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase();
            if value.dynamic || FILE_KEYS.contains(&key.as_str()) {
                out.push(Carried::Opaque(format!(
                    "`wget -e {}` names a file or program the analyzer does not follow",
                    clip(v)
                )));
            }
        }
        i += 1;
    }
}

/// Whether a mount source is rooted at `$PWD` or `$HOME` (`-v "$PWD":/app`), which path
/// resolution knows.
fn env_rooted(text: &str) -> bool {
    ["$PWD", "${PWD}", "$HOME", "${HOME}"].iter().any(|v| {
        text.strip_prefix(v)
            .is_some_and(|r| r.is_empty() || r.starts_with(['/', ':']))
    })
}

/// Quotes a rewritten word for the inner command; one rooted at `$PWD`/`$HOME` keeps the
/// variable expandable (double quotes) so its path still resolves.
fn quote_host(word: &str) -> String {
    if env_rooted(word) && !word.contains(['"', '\\', '`']) && word.matches('$').count() == 1 {
        format!("\"{word}\"")
    } else {
        crate::feed::shell_quote(word)
    }
}

/// Rewrites container paths under a bind mount's target to the host source, wherever one
/// starts a path in `text` (a word, or a `sh -c` body): `/h/x` with `/:/h` is `//x` → `/x`.
fn to_host_paths(text: &str, mounts: &[(String, String)]) -> String {
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

/// The index of the first operand from `from` on: a word in `valued` skips its value, any
/// other word starting with `-` is a flag, and `--` ends the options.
fn first_operand(argv: &[Field], from: usize, valued: &[&str]) -> usize {
    let mut i = from;
    while let Some(w) = argv.get(i) {
        let a = w.text.as_str();
        if a == "--" {
            return i + 1;
        }
        if valued.contains(&a) {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// Database shells' SQL given on the command line (`sqlite3 DB 'SQL'`, `-cmd`, `psql -c`,
/// `mysql -e`), scanned by [`db_meta`]; script files (`-init`, `-f`) are opaque.
fn db_client(prog: &str, argv: &[Field], out: &mut Vec<Carried>) {
    // Script files (`psql -f`, `sqlite3 -init`) are like `bash script.sh`: what the
    // command runs is its business once its rule allows it.
    let texts: &[&str] = match prog {
        "psql" => &["-c", "--command"],
        "mysql" | "mariadb" => &["-e", "--execute"],
        _ => &["-cmd"],
    };
    let mut sql = Vec::new();
    crate::classify::option_values(&argv[1..], texts, &mut sql);
    if matches!(prog, "sqlite3" | "duckdb" | "spatialite") {
        // `sqlite3 [OPTIONS] DB [SQL…]`: operands after the database are SQL.
        // The previous word (`argv[i]` for `argv[1..][i]`) may be an option taking it.
        const VALUED: &[&str] = &[
            "-cmd",
            "-init",
            "-separator",
            "-newline",
            "-nullvalue",
            "-vfs",
            "-mmap",
            "-lookaside",
            "-pagecache",
            "-heap",
            "-maxsize",
        ];
        let ops: Vec<&Field> = argv[1..]
            .iter()
            .enumerate()
            .filter(|(i, w)| {
                let value = *i > 0 && VALUED.contains(&argv[*i].text.as_str());
                !(w.text.starts_with('-') || value)
            })
            .map(|(_, w)| w)
            .collect();
        sql.extend(ops.into_iter().skip(1).cloned());
    }
    for text in sql {
        out.extend(db_meta(prog, &text));
    }
}

/// The shell commands in database-shell input: sqlite/duckdb `.shell`/`.system CMD`,
/// `.output|.once|.read|.import |CMD` (and `.load LIB`, opaque); psql `\! CMD`, `\o |CMD`,
/// `\g |CMD`, `\copy … program 'CMD'`, `COPY … PROGRAM 'CMD'`; mysql `system CMD`,
/// `\! CMD`.
pub(crate) fn db_meta(prog: &str, text: &Field) -> Vec<Carried> {
    let mut out = Vec::new();
    let shell = |cmd: &str, out: &mut Vec<Carried>| {
        if !cmd.trim().is_empty() {
            out.push(Carried::Shell(part(text, cmd.trim())));
        }
    };
    let lower = text.text.to_ascii_lowercase();
    for (line, lower_line) in text.text.lines().zip(lower.lines()) {
        let t = line.trim_start();
        let lt = lower_line.trim_start();
        if let Some(rest) = t.strip_prefix('.') {
            let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let is = |full: &str| name.len() >= 2 && full.starts_with(name);
            if is("shell") || is("system") {
                shell(arg, &mut out);
            } else if is("load") {
                out.push(Carried::Opaque(format!(
                    "`{prog} .load` loads an extension library, which runs its code"
                )));
            } else if (is("output") || is("once") || is("read") || is("import") || is("excel"))
                && let Some(cmd) = arg.trim_start().strip_prefix('|')
            {
                shell(cmd, &mut out);
            }
        } else if let Some(rest) = t.strip_prefix('\\') {
            let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            match name {
                "!" => shell(arg, &mut out),
                "o" | "out" | "g" | "gx" | "w" | "write" => {
                    if let Some(cmd) = arg.trim_start().strip_prefix('|') {
                        shell(cmd, &mut out);
                    }
                }
                _ => {}
            }
        } else if matches!(prog, "mysql" | "mariadb")
            && let Some(arg) = lt.strip_prefix("system ").map(|_| &t[7..])
        {
            shell(arg, &mut out);
        }
        // `COPY … FROM/TO PROGRAM 'cmd'` (server side; for a local server, this machine).
        if lt.contains("copy")
            && let Some(k) = lt.find(" program ")
        {
            let after = &t[k + " program ".len()..];
            let after = after.trim_start();
            if let Some(q) = after.strip_prefix('\'') {
                if let Some(end) = q.find('\'') {
                    shell(&q[..end], &mut out);
                }
            } else {
                out.push(Carried::Opaque(format!(
                    "`{prog}` runs a program named in SQL"
                )));
            }
        }
    }
    out
}

/// `fd … -x CMD ARGS… [;]` / `-X`: the command runs once per match (or once for all).
fn fd(argv: &[Field], out: &mut Vec<Carried>) {
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].text.as_str();
        if a == "--" {
            return;
        }
        if matches!(a, "-x" | "--exec" | "-X" | "--exec-batch") {
            let end = argv[i + 1..]
                .iter()
                .position(|w| w.text == ";")
                .map_or(argv.len(), |p| i + 1 + p);
            if end > i + 1 {
                out.push(Carried::Argv(argv[i + 1..end].to_vec()));
            }
            i = end;
        } else if matches!(
            a,
            "-e" | "--extension"
                | "-t"
                | "--type"
                | "-E"
                | "--exclude"
                | "-d"
                | "--max-depth"
                | "-c"
                | "--color"
                | "-j"
                | "--threads"
                | "-S"
                | "--size"
                | "--changed-within"
                | "--changed-before"
                | "-o"
                | "--owner"
                | "--base-directory"
                | "--path-separator"
                | "--search-path"
                | "--ignore-file"
                | "--max-results"
                | "--min-depth"
                | "--exact-depth"
                | "--format"
        ) {
            i += 1;
        }
        i += 1;
    }
}

/// Words joined by spaces, as a program that runs them through `sh -c` sees them.
fn joined(words: &[Field]) -> Field {
    Field {
        text: words
            .iter()
            .map(|f| f.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        dynamic: words.iter().any(|f| f.dynamic),
        glob: false,
        procsub: None,
        net: words.iter().any(|f| f.net),
    }
}

/// `tmux [-c CMD] COMMAND [ARGS…] [SHELL-COMMAND]`.
fn tmux(argv: &[Field], out: &mut Vec<Carried>) {
    #[rustfmt::skip]
    const WITH_SHELL: &[&str] = &[
        "new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane",
        "respawnp", "respawn-window", "respawnw", "run-shell", "run", "display-popup", "popup",
        "pipe-pane", "pipep", "if-shell", "if",
    ];
    #[rustfmt::skip]
    const KEYS: &[&str] = &["send-keys", "send", "paste-buffer", "pasteb", "source-file", "source"];
    let i = first_operand(argv, 1, &["-L", "-S", "-f", "-T", "-c"]);
    // `tmux -c CMD` runs CMD through the default shell, like `sh -c`.
    if let Some(c) = argv[1..i.min(argv.len())]
        .iter()
        .position(|w| w.text == "-c")
    {
        if let Some(v) = argv.get(c + 2) {
            out.push(Carried::Shell(v.clone()));
        }
        return;
    }
    let Some(sub) = argv.get(i) else { return };
    if KEYS.contains(&sub.text.as_str()) {
        out.push(Carried::Opaque(format!(
            "`tmux {}` types into or runs commands in another pane",
            sub.text
        )));
        return;
    }
    if !WITH_SHELL.contains(&sub.text.as_str()) {
        return;
    }
    // Options of these commands that take a value; everything after them is the command.
    let valued = if matches!(
        sub.text.as_str(),
        "run-shell" | "run" | "display-popup" | "popup"
    ) {
        "bcdehsStTwxy"
    } else {
        "ceFflnstxy"
    };
    let mut j = i + 1;
    while j < argv.len() {
        let a = argv[j].text.as_str();
        if a == "--" {
            j += 1;
            break;
        }
        if a.len() > 1 && a.starts_with('-') {
            let last = a.chars().last().unwrap_or(' ');
            j += if a.len() == 2 && valued.contains(last) {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if j < argv.len() {
        out.push(Carried::Shell(joined(&argv[j..])));
    }
}

/// `screen [OPTIONS] CMD ARGS…`; `-X`/`-Q` send commands to a running session.
fn screen(argv: &[Field], out: &mut Vec<Carried>) {
    const VALUED: &[&str] = &["-S", "-c", "-e", "-h", "-p", "-s", "-T", "-t", "-Logfile"];
    const NO_COMMAND: &[&str] = &["-ls", "-list", "-r", "-R", "-x", "-wipe", "-v", "-version"];
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].text.as_str();
        if a == "-X" || a == "-Q" {
            out.push(Carried::Opaque(format!(
                "`screen {a}` sends commands to a running session"
            )));
            return;
        }
        if NO_COMMAND.contains(&a) {
            return;
        }
        // `-dmS NAME`: a bundle whose last letter takes the value.
        let last = a.chars().last().unwrap_or(' ');
        if VALUED.contains(&a) || (a.len() > 2 && a.starts_with('-') && "cehpsStT".contains(last)) {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        break;
    }
    if i < argv.len() {
        out.push(Carried::Argv(argv[i..].to_vec()));
    }
}

/// git: `-c` values that name a program, and the subcommands' command options.
fn git(argv: &[Field], out: &mut Vec<Carried>) {
    let words = &argv[1..];
    let sub = crate::classify::git_subcommand(words);
    let global = match sub {
        Some((_, rest)) => &words[..words.len() - rest.len() - 1],
        None => words,
    };
    // `-c KEY=VALUE` / `-cKEY=VALUE` among the global options.
    for (i, w) in global.iter().enumerate() {
        let a = w.text.as_str();
        if a == "-c" {
            if let Some(v) = global.get(i + 1) {
                git_config_value(&v.text, v, out);
            }
        } else if let Some(kv) = a.strip_prefix("-c").filter(|kv| !kv.is_empty())
            && i.checked_sub(1).is_none_or(|p| global[p].text != "-c")
        {
            git_config_value(kv, w, out);
        }
    }
    let Some((sub, args)) = sub else { return };
    let opt_values = |shorts: &[&str], longs: &[&str], out: &mut Vec<Carried>| {
        let mut j = 0;
        while j < args.len() {
            let w = &args[j];
            let a = w.text.as_str();
            if a == "--" {
                break;
            }
            if let Some(long) = a.strip_prefix("--") {
                let (name, inline) = split_long(long);
                if longs.iter().any(|l| long_is(name, l))
                    && let Some(v) = option_value(args, &mut j, inline)
                {
                    out.push(Carried::Shell(v));
                }
            } else if let Some(s) = shorts.iter().find(|s| a.starts_with(**s)) {
                let attached = Some(&a[s.len()..]).filter(|v| !v.is_empty());
                if let Some(v) = option_value(args, &mut j, attached) {
                    out.push(Carried::Shell(v));
                }
            }
            j += 1;
        }
    };
    if matches!(sub, "clone" | "init") {
        for (j, w) in args.iter().enumerate() {
            let a = w.text.as_str();
            if a.starts_with("--template") || a.starts_with("--separate-git-dir") {
                out.push(Carried::Opaque(format!(
                    "`git {sub} {a}` takes hooks or a repository from another directory"
                )));
            }
            // `git clone -c KEY=VALUE` writes the new repository's configuration.
            let kv = match a {
                "-c" | "--config" => args.get(j + 1),
                _ => None,
            };
            if let Some(kv) = kv {
                git_config_value(&kv.text, kv, out);
            } else if let Some(kv) = a.strip_prefix("--config=") {
                git_config_value(kv, w, out);
            }
        }
    }
    match sub {
        "fetch" | "pull" | "ls-remote" => opt_values(&[], &["--upload-pack"], out),
        "clone" => opt_values(&["-u"], &["--upload-pack"], out),
        "push" | "send-pack" => opt_values(&[], &["--receive-pack", "--exec"], out),
        "archive" => opt_values(&[], &["--exec"], out),
        "rebase" => opt_values(&["-x"], &["--exec"], out),
        "difftool" => opt_values(&["-x"], &["--extcmd"], out),
        "filter-branch" => opt_values(
            &[],
            &[
                "--env-filter",
                "--tree-filter",
                "--index-filter",
                "--parent-filter",
                "--msg-filter",
                "--commit-filter",
                "--tag-name-filter",
            ],
            out,
        ),
        "send-email" => opt_values(
            &[],
            &["--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd"],
            out,
        ),
        "instaweb" => opt_values(&["-d", "-b"], &["--httpd", "--browser"], out),
        // `git config KEY VALUE`, `git config set KEY VALUE`: the value is persisted and run
        // by a later git command; it is judged now.
        "config" => {
            let words: Vec<&Field> = args
                .iter()
                .filter(|w| !w.text.starts_with('-'))
                .skip_while(|w| w.text == "set")
                .collect();
            let reading = args.iter().any(|w| {
                w.text.starts_with("--get") || matches!(w.text.as_str(), "-l" | "--list" | "get")
            });
            if let [key, value, ..] = words.as_slice()
                && !reading
            {
                let src = Field {
                    dynamic: key.dynamic || value.dynamic,
                    ..(*value).clone()
                };
                git_config_value(&format!("{}={}", key.text, value.text), &src, out);
            }
        }
        "grep" => {
            for w in args {
                let a = w.text.as_str();
                if let Some(p) = a
                    .strip_prefix("--open-files-in-pager=")
                    .or_else(|| a.strip_prefix("-O").filter(|p| !p.is_empty()))
                {
                    out.push(Carried::Shell(part(w, p)));
                }
            }
        }
        "submodule" => {
            if let Some(k) = args.iter().position(|w| w.text == "foreach") {
                let at = args[k + 1..]
                    .iter()
                    .position(|w| !w.text.starts_with('-'))
                    .map(|p| k + 1 + p);
                if let Some(at) = at {
                    out.push(Carried::Shell(joined(&args[at..])));
                }
            }
        }
        "bisect" if args.first().is_some_and(|w| w.text == "run") && args.len() > 1 => {
            out.push(Carried::Argv(args[1..].to_vec()));
        }
        _ => {}
    }
}

/// A `git -c KEY=VALUE` whose value is a command git runs.
fn git_config_value(kv: &str, src: &Field, out: &mut Vec<Carried>) {
    let Some((key, value)) = kv.split_once('=').filter(|(k, _)| !not_static(k)) else {
        if src.dynamic {
            out.push(Carried::Opaque(format!(
                "`git -c {kv}` is not static (it may set a program such as core.pager)"
            )));
        }
        return;
    };
    let key = key.to_ascii_lowercase();
    if key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path")) {
        out.push(Carried::Opaque(format!(
            "`git -c {kv}` includes a configuration file, which can name programs to run"
        )));
        return;
    }
    let Some(cmd) = git_config_command(&key, value) else {
        return;
    };
    out.push(if key == "core.sshcommand" {
        Carried::Transport(part(src, cmd))
    } else {
        Carried::Shell(part(src, cmd))
    });
}

/// The command a git configuration value runs, for a lower-case `key` whose value names a
/// program (`core.pager`, `alias.*` starting with `!`, `filter.*.smudge`, …).
fn git_config_command<'v>(key: &str, value: &'v str) -> Option<&'v str> {
    let is_bool = matches!(
        value.to_ascii_lowercase().as_str(),
        "" | "true" | "false" | "yes" | "no" | "on" | "off" | "0" | "1"
    );
    let command = match key {
        "core.pager"
        | "core.editor"
        | "core.sshcommand"
        | "core.askpass"
        | "core.gitproxy"
        | "sequence.editor"
        | "diff.external"
        | "gpg.program"
        | "uploadpack.packobjectshook"
        | "web.browser" => Some(value),
        "core.fsmonitor" if !is_bool => Some(value),
        "credential.helper" => value.strip_prefix('!'),
        k if k.starts_with("alias.") => value.strip_prefix('!'),
        k if k.starts_with("pager.") && !is_bool => Some(value),
        k if (k.starts_with("filter.")
            && (k.ends_with(".clean") || k.ends_with(".smudge") || k.ends_with(".process")))
            || (k.starts_with("diff.")
                && (k.ends_with(".textconv") || k.ends_with(".command")))
            || (k.starts_with("merge.") && k.ends_with(".driver"))
            || (k.starts_with("gpg.") && k.ends_with(".program"))
            || (k.starts_with("remote.")
                && (k.ends_with(".uploadpack") || k.ends_with(".receivepack"))) =>
        {
            Some(value)
        }
        _ => None,
    };
    command.filter(|c| !c.trim().is_empty())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Splits like the shell for the examples: single quotes group, nothing else.
    pub(crate) fn fields(s: &str) -> Vec<Field> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        let mut any = false;
        for c in s.chars() {
            match c {
                '\'' => {
                    quoted = !quoted;
                    any = true;
                }
                ' ' if !quoted => {
                    if any {
                        out.push(Field::lit(std::mem::take(&mut cur)));
                        any = false;
                    }
                }
                c => {
                    cur.push(c);
                    any = true;
                }
            }
        }
        if any {
            out.push(Field::lit(cur));
        }
        out
    }

    fn texts(cmd: &str) -> Vec<String> {
        let argv = fields(cmd);
        carried(&argv[0].text, &argv)
            .into_iter()
            .map(|c| match c {
                Carried::Shell(f) | Carried::Transport(f) => f.text,
                Carried::Argv(v) => v
                    .iter()
                    .map(|f| f.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                Carried::Opaque(_) => "?".into(),
            })
            .collect()
    }

    #[test]
    fn carrier_examples() {
        for spec in CARRIERS {
            for (cmd, want) in spec.examples {
                assert_eq!(texts(cmd), *want, "{cmd}");
            }
        }
    }

    #[test]
    fn ssh_options_carry_commands() {
        assert_eq!(texts("ssh -o ProxyCommand='nc %h %p' host"), ["nc %h %p"]);
        assert_eq!(texts("ssh -oProxyCommand=id host"), ["id"]);
        assert_eq!(texts("ssh -o 'proxycommand id' host"), ["id"]);
        assert_eq!(
            texts("ssh -o LocalCommand=id -o PermitLocalCommand=yes h"),
            ["id"]
        );
        assert_eq!(texts("ssh -o KnownHostsCommand=id h"), ["id"]);
        assert_eq!(texts("ssh -o ProxyCommand=none h"), Vec::<String>::new());
        assert_eq!(texts("ssh -o PKCS11Provider=/x.so h"), ["?"]);
        assert_eq!(
            texts("ssh -p 22 -o StrictHostKeyChecking=no h ls -o x"),
            Vec::<String>::new()
        );
        // After the host, `-o` belongs to the remote command.
        assert_eq!(texts("ssh h ls -o ProxyCommand=id"), Vec::<String>::new());
        assert_eq!(texts("scp -o ProxyCommand=id a h:"), ["id"]);
        assert_eq!(texts("sftp -oProxyCommand=id h"), ["id"]);
        assert_eq!(texts("ssh -vF cfg h"), ["?"]);
        assert_eq!(texts("ssh -vp 22 h"), Vec::<String>::new());
    }

    #[test]
    fn git_options_carry_commands() {
        assert_eq!(texts("git -c core.pager='rm -rf /' log"), ["rm -rf /"]);
        assert_eq!(texts("git -c core.pager=cat log"), ["cat"]);
        assert_eq!(texts("git -c include.path=./x.cfg log"), ["?"]);
        assert_eq!(texts("git clone -c core.fsmonitor=id u d"), ["id"]);
        assert_eq!(texts("git clone --config=core.pager=id u d"), ["id"]);
        assert_eq!(texts("git clone --template=./t u d"), ["?"]);
        assert_eq!(texts("git init --template ./t"), ["?"]);
        assert_eq!(texts("git config core.pager id"), ["id"]);
        assert_eq!(texts("git config set core.pager id"), ["id"]);
        assert_eq!(texts("git config --global alias.x '!id'"), ["id"]);
        assert_eq!(texts("git config --get core.pager"), Vec::<String>::new());
        assert_eq!(texts("git config user.name 'A B'"), Vec::<String>::new());
        assert_eq!(texts("git -c alias.x='!id' x"), ["id"]);
        assert_eq!(texts("git -c alias.st=status st"), Vec::<String>::new());
        assert_eq!(
            texts("git -c core.fsmonitor=true status"),
            Vec::<String>::new()
        );
        assert_eq!(texts("git -c pager.log=false log"), Vec::<String>::new());
        assert_eq!(texts("git -c filter.x.smudge=id checkout ."), ["id"]);
        assert_eq!(
            texts("git -c user.name=x commit -m y"),
            Vec::<String>::new()
        );
        assert_eq!(texts("git fetch --upload-pack='id' origin"), ["id"]);
        assert_eq!(texts("git ls-remote --upload-pack=id x"), ["id"]);
        assert_eq!(texts("git clone -u id x y"), ["id"]);
        assert_eq!(texts("git fetch -u origin"), Vec::<String>::new());
        assert_eq!(texts("git push --receive-pack=id origin"), ["id"]);
        assert_eq!(texts("git rebase --exec 'make test' HEAD~1"), ["make test"]);
        assert_eq!(texts("git rebase -x id HEAD~1"), ["id"]);
        assert_eq!(texts("git rebase -xid HEAD~1"), ["id"]);
        assert_eq!(texts("git rebase --exe=id HEAD~1"), ["id"]);
        assert_eq!(texts("git difftool -x 'diff -u' HEAD"), ["diff -u"]);
        assert_eq!(
            texts("git submodule foreach --recursive 'git pull'"),
            ["git pull"]
        );
        assert_eq!(texts("git bisect run make test"), ["make test"]);
        assert_eq!(texts("git bisect start"), Vec::<String>::new());
        assert_eq!(
            texts("git filter-branch --tree-filter 'rm x' HEAD"),
            ["rm x"]
        );
        assert_eq!(texts("git grep -Ovim foo"), ["vim"]);
        assert_eq!(texts("git -C repo log --exec x"), Vec::<String>::new());
        assert_eq!(
            texts("git commit -m 'rebase --exec id'"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn other_carriers() {
        assert_eq!(texts("strace -o '|rm x' true"), ["rm x"]);
        assert_eq!(texts("strace -o out.txt true"), Vec::<String>::new());
        assert_eq!(texts("zip -T -TT 'id' x.zip f"), ["id"]);
        assert_eq!(texts("tmux new-session -d 'rm -rf /'"), ["rm -rf /"]);
        assert_eq!(texts("tmux new -s name -d make test"), ["make test"]);
        assert_eq!(texts("tmux send-keys -t x 'id' Enter"), ["?"]);
        assert_eq!(texts("tmux -c 'id'"), ["id"]);
        assert_eq!(texts("tmux ls"), Vec::<String>::new());
        assert_eq!(texts("screen -dmS name make test"), ["make test"]);
        assert_eq!(texts("screen -S x -X stuff id"), ["?"]);
        assert_eq!(texts("screen -ls"), Vec::<String>::new());
        assert_eq!(texts("capsh --caps=x -- -c id"), ["bash -c id"]);
        assert_eq!(texts("sg docker 'docker ps'"), ["docker ps"]);
        assert_eq!(texts("xterm -e rm -rf /"), ["rm -rf /"]);
        assert_eq!(texts("fd -e rs -x rm {} ; -H"), ["rm {}"]);
        assert_eq!(texts("fd --exec-batch wc -l"), ["wc -l"]);
        assert_eq!(texts("fd -e x pat"), Vec::<String>::new());
        assert_eq!(texts("sqlite3 x.db '.shell rm -rf /'"), ["rm -rf /"]);
        assert_eq!(texts("sqlite3 x.db '.sys id'"), ["id"]);
        assert_eq!(texts("sqlite3 -cmd '.system id' x.db"), ["id"]);
        assert_eq!(texts("sqlite3 x.db '.once |id'"), ["id"]);
        assert_eq!(texts("sqlite3 x.db '.load ./x.so'"), ["?"]);
        assert_eq!(texts("sqlite3 -init x.sql x.db"), Vec::<String>::new());
        assert_eq!(texts("sqlite3 x.db 'select 1'"), Vec::<String>::new());
        assert_eq!(texts("duckdb x.db '.shell id'"), ["id"]);
        assert_eq!(texts("psql -c '\\! id'"), ["id"]);
        assert_eq!(texts("psql -c '\\o |id'"), ["id"]);
        assert_eq!(
            db_meta("psql", &Field::lit("COPY t FROM PROGRAM 'id' ;")),
            [Carried::Shell(Field::lit("id"))]
        );
        assert_eq!(
            db_meta("psql", &Field::lit("\\copy t to program 'gzip > x.gz'")),
            [Carried::Shell(Field::lit("gzip > x.gz"))]
        );
        assert_eq!(texts("psql -f x.sql"), Vec::<String>::new());
        assert_eq!(texts("psql -c 'select 1'"), Vec::<String>::new());
        assert_eq!(texts("mysql -e 'system id'"), ["id"]);
        assert_eq!(texts("mysql -e 'select 1'"), Vec::<String>::new());
        assert_eq!(
            texts("psql -c 'select * from t where x = 1 and program = 2'"),
            Vec::<String>::new()
        );
        assert_eq!(texts("gnome-terminal -e 'rm x'"), ["rm x"]);
        assert_eq!(texts("gnome-terminal -- rm x"), ["rm x"]);
    }
}
