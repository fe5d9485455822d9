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

mod build;
mod containers;
mod db;
mod remote;
mod session;
mod tools;
mod vcs;

pub(crate) use build::{MAKE, make_to_shell};
pub(crate) use db::db_meta;

use crate::argv::{Grammar, Item};
pub(crate) use crate::argv::{long_is, part, split_long};
use crate::expand::clip;
use crate::types::Origin;
use crate::walk::Walker;
use crate::words::Field;

use build::*;
use containers::*;
use db::*;
use remote::*;
use session::*;
use tools::*;
use vcs::*;

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
    CarrierSpec { programs: &["split", "gsplit"], cmd_short: "", cmd_long: &["--filter"], val_short: "abCln", val_long: &["--bytes", "--line-bytes", "--lines", "--number", "--suffix-length", "--additional-suffix", "--separator", "-t"], opaque: &[], examples: &[("split -b 100 --filter='gzip > $FILE.gz' big.bin part_", &["gzip > $FILE.gz"]), ("split -l 1 --filter=sh cmds.txt", &["sh"]), ("split -l 100 big.txt part_", &[])]},
    CarrierSpec { programs: &["expect"], cmd_short: "", cmd_long: &[], val_short: "", val_long: &[], opaque: &[("-c", "runs Tcl code, which can run commands")], examples: &[("expect -c 'spawn id'", &["?"])]},
];

impl Walker<'_> {
    /// Analyses the commands `argv`'s options carry, each as a subcommand of its own.
    pub(crate) fn run_carried(&mut self, prog: &str, argv: &[Field]) {
        let list = carried(prog, argv);
        self.run_carried_list(prog, list);
    }

    /// Analyses carried commands found by [`carried`] or [`db_meta`].
    ///
    /// What a carried command reads on its standard input is whatever the carrying program
    /// feeds it (`tar --to-command` each member, `split --filter` each chunk, `sort
    /// --compress-program` the data, `man -P` the page, `ssh -o ProxyCommand` the protocol):
    /// data the analyzer cannot see, so a shell or interpreter carried without `-c` runs code
    /// from an unknown source (opaque).
    pub(crate) fn run_carried_list(&mut self, prog: &str, list: Vec<Carried>) {
        if list.is_empty() {
            return;
        }
        let fed = crate::feed::Output::Unknown(format!("the data `{prog}` feeds it"));
        let saved = self.stdin_replaced.replace(fed);
        for c in list {
            match c {
                Carried::Shell(code) => {
                    if code.net {
                        self.finding(
                            crate::feed::INTERNET_CODE,
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
        self.stdin_replaced = saved;
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
pub(super) fn command(prog: &str, option: &str, value: Field) -> Carried {
    if TRANSPORTS.contains(&(prog, option)) {
        Carried::Transport(value)
    } else {
        Carried::Shell(value)
    }
}

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
        "npm" | "pnpm" | "yarn" | "npx" => package_manager(prog, argv, &mut out),
        "cargo" => cargo(argv, &mut out),
        "go" => go(argv, &mut out),
        "make" | "gmake" => make(argv, &mut out),
        "cmake" => cmake(argv, &mut out),
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

/// Options whose value is optional and only ever attached, per program: `man -H` alone and
/// `man --html` alone use `$BROWSER`; `-HCMD` and `--html=CMD` carry one.
const OPTIONAL_VALUES: &[(&str, &str, &[&str])] = &[("man", "H", &["--html"])];

/// The generic scan with the program's [`Grammar`]: `-X VALUE`, `-XVALUE`, `--long=VALUE`,
/// `--long VALUE`, abbreviations of the command options, clusters, options after operands
/// (GNU), `--` ends the options.
fn scan(prog: &str, spec: &CarrierSpec, argv: &[Field], out: &mut Vec<Carried>) {
    let (short_opt, long_opt) = OPTIONAL_VALUES
        .iter()
        .find(|(p, _, _)| *p == prog)
        .map_or(("", &[][..]), |(_, s, l)| (*s, *l));
    let short_val: String = spec
        .cmd_short
        .chars()
        .chain(spec.val_short.chars())
        .filter(|c| !short_opt.contains(*c))
        .collect();
    let cmd_long: Vec<&str> = spec
        .cmd_long
        .iter()
        .copied()
        .filter(|l| !long_opt.contains(l))
        .collect();
    let grammar = Grammar {
        short_val: &short_val,
        short_opt,
        long_val: spec.val_long,
        long_val_abbrev: &cmd_long,
        permute: true,
        ..Grammar::default()
    };
    let dd = argv
        .iter()
        .position(|w| w.text == "--")
        .unwrap_or(argv.len());
    // Opaque options by their word (`-F`, `-Fcfg`, `--cmd`, `-ex`).
    for w in &argv[1..dd] {
        let a = w.text.as_str();
        if let Some((_, why)) = spec
            .opaque
            .iter()
            .find(|(p, _)| a == *p || (a.starts_with(p) && p.len() == 2 && !a.starts_with("--")))
        {
            out.push(Carried::Opaque(format!("`{}` {why}", argv[0].text)));
        }
    }
    // A getopt program (one with valued short options) also takes an opaque option inside
    // a bundle: `ssh -vF cfg`.
    let getopt = !spec.val_short.is_empty();
    for item in grammar.parse(argv, 1).items {
        match item {
            Item::Short { letter, value, at } => {
                if getopt
                    && argv[at].text.len() > 2
                    && let Some((_, why)) = spec
                        .opaque
                        .iter()
                        .find(|(p, _)| p.len() == 2 && p.ends_with(letter))
                {
                    out.push(Carried::Opaque(format!("`{}` {why}", argv[0].text)));
                }
                if spec.cmd_short.contains(letter)
                    && let Some(v) = value
                {
                    out.push(command(prog, &format!("-{letter}"), v));
                }
            }
            Item::Long {
                name,
                value: Some(v),
                ..
            } => {
                if let Some(full) = spec.cmd_long.iter().find(|f| long_is(name, f)) {
                    out.push(command(prog, full, v));
                }
            }
            _ => {}
        }
    }
}

/// Whether a piece of a word still holds an expansion the analyzer could not resolve.
pub(super) fn not_static(piece: &str) -> bool {
    piece.contains(['$', '`'])
}

/// The index of the first operand from `from` on, where the options in `valued` take a
/// value (the command of `watchexec -e rs cargo test` starts at `cargo`).
pub(super) fn first_operand(argv: &[Field], from: usize, valued: &[&str]) -> usize {
    crate::argv::command_start(argv, from, valued)
}

/// Words joined by spaces, as a program that runs them through `sh -c` sees them.
pub(super) fn joined(words: &[Field]) -> Field {
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
        secret: words.iter().any(|f| f.secret),
    }
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

    pub(crate) fn texts(cmd: &str) -> Vec<String> {
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
