//! A subcommand in the forms the rule families match: allow rules see it with only Claude
//! Code's safe wrappers and known-safe assignments removed; deny and ask rules see through
//! every wrapper (`sudo`, `xargs -0`, `env -i`, …), every assignment and the program's
//! directory.

use toolgate_protocol::CommandFact;

use super::bash::basename;

/// Environment variables an allow rule may look past: they change output, not what runs.
/// Deny and ask rules look past every assignment.
pub(crate) const SAFE_ENV: &[&str] = &[
    "CI",
    "DEBUG",
    "NODE_ENV",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "CARGO_TERM_COLOR",
    "NO_COLOR",
    "FORCE_COLOR",
    "TERM",
    "TZ",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "GOOS",
    "GOARCH",
    "CGO_ENABLED",
    "COLUMNS",
];

/// Whether `word` is a `NAME=value` assignment; returns the name.
pub(crate) fn assignment_name(word: &str) -> Option<&str> {
    let (name, _) = word.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() || first == '_')
        .then_some(())
        .filter(|()| chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(|()| name)
}

/// Wrappers an allow rule looks past, as Claude Code does (`env` only with known-safe
/// assignments, which [`Subcommand::from_fact`] checks separately). `xargs` is not here:
/// the analyzer cannot tell a bare `xargs` from one with flags, and stripped args come from
/// stdin.
pub(crate) const ALLOW_TRANSPARENT_WRAPPERS: &[&str] = &[
    "timeout", "time", "nice", "nohup", "stdbuf", "command", "builtin", "noglob", "env",
];

/// Programs that never get approved by a wildcard allow rule: they run another command in a
/// way the rule's author did not see.
pub(crate) const NEVER_PREFIX_ALLOWED: &[&str] = &["watch", "setsid", "ionice", "flock"];

/// `find` actions that run or delete.
pub(crate) const FIND_ACTIONS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// One subcommand in the forms the rule families match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subcommand {
    /// The words as delivered (analyzer output or fallback split).
    pub argv: Vec<String>,
    /// What allow rules match: safe wrappers and safe assignments removed.
    pub allow_text: String,
    /// The allow form's words.
    pub allow_argv: Vec<String>,
    /// What deny and ask rules match, as text and words: every wrapper and assignment
    /// removed with the program's basename, the allow form, and the words as delivered.
    pub deny_forms: Vec<(String, Vec<String>)>,
    /// The allow form still starts with an assignment of a variable not known to be safe,
    /// or a privilege wrapper: no allow rule applies.
    pub allow_blocked: Option<String>,
    /// The shell analyzer found the command read-only (its own program table and options);
    /// `false` for a fallback split, which no analyzer has judged.
    pub read_only: bool,
}

impl Subcommand {
    /// Derives the forms from a word list.
    pub fn from_argv(argv: Vec<String>) -> Self {
        let (allow_argv, allow_blocked) = strip_for_allow(&argv);
        let full = strip_for_deny(&argv);
        let mut deny_forms = vec![(allow_argv.join(" "), allow_argv.clone())];
        if full != allow_argv && !full.is_empty() {
            deny_forms.push((full.join(" "), full));
        }
        if argv != allow_argv && !argv.is_empty() {
            deny_forms.push((argv.join(" "), argv.clone()));
        }
        Self {
            allow_text: allow_argv.join(" "),
            allow_argv,
            argv,
            deny_forms,
            allow_blocked,
            read_only: false,
        }
    }

    /// Derives the forms from an analyzer fact. The analyzer has already stripped every
    /// wrapper and assignment; an allow rule still applies only when each of those is one
    /// Claude Code strips for allow rules too (or a known-safe variable), so `sudo rm x`,
    /// `xargs -0 rm` or `LD_PRELOAD=… make` are never approved by `Bash(rm *)`/`Bash(make *)`.
    pub fn from_fact(fact: &CommandFact) -> Self {
        let mut sub = Self::from_argv(fact.argv.clone());
        sub.read_only = fact.read_only;
        // The analyzer's normalised form (`git -C . push` → `git push`): a deny or ask rule
        // written for the plain command must not be escaped by a global option or an alias.
        if let Some(norm) = fact.normalized.as_ref().filter(|n| !n.is_empty()) {
            let form = Self::from_argv(norm.clone());
            for f in form.deny_forms {
                if !sub.deny_forms.contains(&f) {
                    sub.deny_forms.push(f);
                }
            }
        }
        if sub.allow_blocked.is_none() {
            if let Some(w) = fact
                .wrappers
                .iter()
                .find(|w| !ALLOW_TRANSPARENT_WRAPPERS.contains(&w.as_str()))
            {
                sub.allow_blocked = Some(format!(
                    "`{w}` runs `{}` in a way an allow rule does not cover",
                    fact.text
                ));
            } else if let Some(name) = fact.env.iter().find(|n| !SAFE_ENV.contains(&n.as_str())) {
                sub.allow_blocked = Some(format!(
                    "the assignment `{name}=…` may change what `{}` does",
                    fact.text
                ));
            }
        }
        sub
    }

    /// The program of the allow form (basename).
    pub fn program(&self) -> &str {
        self.allow_argv.first().map_or("", |p| basename(p))
    }
}

/// Claude Code's wrappers: stripped before allow matching. Each entry says how many option
/// words it takes and whether it needs a positional argument (`timeout 5`).
fn strip_safe_wrapper(words: &[String]) -> Option<usize> {
    let w0 = words.first()?.as_str();
    let next = words.get(1).map(String::as_str);
    match w0 {
        "nohup" | "builtin" | "noglob" => Some(1),
        "time" => Some(if next == Some("-p") { 2 } else { 1 }),
        "command" => match next {
            Some("-v" | "-V") => None,
            Some("-p") => Some(2),
            _ => Some(1),
        },
        "xargs" => match next {
            Some(n) if n.starts_with('-') => None,
            Some(_) => Some(1),
            None => None,
        },
        "nice" => match next {
            Some("-n") => Some(3),
            Some(n) if n.starts_with("-n") || n.starts_with('-') && n.len() > 1 => Some(2),
            _ => Some(1),
        },
        "timeout" => {
            let mut i = 1;
            while let Some(w) = words.get(i) {
                match w.as_str() {
                    "-s" | "--signal" | "-k" | "--kill-after" => i += 2,
                    w if w.starts_with('-') => i += 1,
                    _ => break,
                }
            }
            // the duration
            (i < words.len()).then_some(i + 1)
        }
        "stdbuf" => {
            let mut i = 1;
            while let Some(w) = words.get(i) {
                match w.as_str() {
                    "-i" | "-o" | "-e" => i += 2,
                    w if w.starts_with('-') => i += 1,
                    _ => break,
                }
            }
            Some(i)
        }
        _ => None,
    }
}

/// Wrappers only deny rules look through: they run their argument as a command.
const DENY_WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "run0",
    "pkexec",
    "env",
    "exec",
    "xargs",
    "nice",
    "ionice",
    "setsid",
    "flock",
    "watch",
    "chrt",
    "taskset",
    "unbuffer",
    "caffeinate",
    "strace",
    "ltrace",
    "time",
    "timeout",
    "nohup",
    "stdbuf",
    "command",
    "builtin",
    "noglob",
    "nocorrect",
    "chroot",
    "systemd-run",
    "firejail",
    "proxychains",
    "torsocks",
    "fakeroot",
];

/// Privilege wrappers: a subcommand behind one of these is never approved by an allow rule.
pub(crate) const PRIVILEGE_WRAPPERS: &[&str] = &["sudo", "doas", "run0", "pkexec", "su"];

/// Options of deny wrappers that take a value (so the value is not the program).
fn option_takes_value(wrapper: &str, opt: &str) -> bool {
    matches!(
        (wrapper, opt),
        (
            "sudo",
            "-u" | "-g" | "-C" | "-D" | "-h" | "-p" | "-r" | "-t" | "-U"
        ) | ("doas", "-u" | "-C")
            | ("env", "-u" | "-C" | "--unset" | "--chdir")
            | (
                "xargs",
                "-I" | "-n" | "-P" | "-L" | "-s" | "-d" | "-E" | "-a"
            )
            | ("nice", "-n")
            | ("ionice", "-c" | "-n" | "-p")
            | ("timeout", "-s" | "-k" | "--signal" | "--kill-after")
            | ("stdbuf", "-i" | "-o" | "-e")
            | ("watch", "-n" | "-d" | "--interval")
            | ("chrt", "-p")
            | ("taskset", "-p")
            | ("strace", "-e" | "-o" | "-p" | "-s")
            | ("systemd-run", "-p" | "--unit" | "-u")
            | ("flock", "-w" | "-E")
    )
}

/// Wrappers whose first positional argument is not the command (`timeout 5 cmd`,
/// `flock FILE cmd`, `chroot DIR cmd`, `taskset MASK cmd`).
fn positional_before_command(wrapper: &str) -> usize {
    match wrapper {
        "timeout" | "flock" | "chroot" | "taskset" | "chrt" => 1,
        _ => 0,
    }
}

fn strip_for_allow(argv: &[String]) -> (Vec<String>, Option<String>) {
    let mut i = 0;
    let mut blocked = None;
    loop {
        let rest = &argv[i.min(argv.len())..];
        let Some(w) = rest.first() else { break };
        if let Some(name) = assignment_name(w) {
            if SAFE_ENV.contains(&name) || name.starts_with("LC_") {
                i += 1;
                continue;
            }
            blocked = Some(format!(
                "the command sets `{name}`, which is not a known-safe variable; allow rules look past only {}",
                "CI, DEBUG, NODE_ENV, RUST_LOG, LANG/LC_*, … (see docs/permissions.md)"
            ));
            break;
        }
        match strip_safe_wrapper(rest) {
            Some(n) if n < rest.len() => i += n,
            _ => break,
        }
    }
    let out: Vec<String> = argv[i.min(argv.len())..].to_vec();
    if blocked.is_none()
        && let Some(first) = out.first()
        && PRIVILEGE_WRAPPERS.contains(&basename(first))
    {
        blocked = Some(format!(
            "the command runs through `{}`; allow rules never approve privileged commands",
            basename(first)
        ));
    }
    (out, blocked)
}

fn strip_for_deny(argv: &[String]) -> Vec<String> {
    let mut i = 0;
    let mut guard = 0;
    while i < argv.len() && guard < 64 {
        guard += 1;
        let w = argv[i].as_str();
        if assignment_name(w).is_some() {
            i += 1;
            continue;
        }
        let prog = basename(w);
        if !DENY_WRAPPERS.contains(&prog) {
            break;
        }
        if prog == "command" && matches!(argv.get(i + 1).map(String::as_str), Some("-v" | "-V")) {
            break;
        }
        i += 1;
        while let Some(opt) = argv.get(i) {
            if opt == "--" {
                i += 1;
                break;
            }
            if !opt.starts_with('-') || opt.len() == 1 {
                break;
            }
            i += if option_takes_value(prog, opt) { 2 } else { 1 };
        }
        if prog == "env" {
            while argv.get(i).is_some_and(|w| assignment_name(w).is_some()) {
                i += 1;
            }
        }
        i += positional_before_command(prog);
    }
    let mut out: Vec<String> = argv[i.min(argv.len())..].to_vec();
    if let Some(first) = out.first_mut() {
        *first = basename(first).to_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn allow_form_strips_only_safe_things() {
        let s = Subcommand::from_argv(words("timeout 5 nice -n 2 npm test"));
        assert_eq!(s.allow_text, "npm test");
        let s = Subcommand::from_argv(words("NODE_ENV=test npm test"));
        assert_eq!(s.allow_text, "npm test");
        assert!(s.allow_blocked.is_none());
        let s = Subcommand::from_argv(words("LD_PRELOAD=/x.so npm test"));
        assert!(s.allow_blocked.is_some());
        let s = Subcommand::from_argv(words("sudo rm x"));
        assert!(s.allow_blocked.is_some());
        assert!(s.deny_forms.iter().any(|(_, w)| *w == words("rm x")));
        let s = Subcommand::from_argv(words("xargs -0 rm"));
        assert_eq!(s.allow_text, "xargs -0 rm");
        assert!(s.deny_forms.iter().any(|(_, w)| *w == words("rm")));
        let s = Subcommand::from_argv(words("env -i FOO=1 /bin/rm -rf /"));
        assert!(s.deny_forms.iter().any(|(_, w)| *w == words("rm -rf /")));
        let s = Subcommand::from_argv(words("command -v rm"));
        assert_eq!(s.allow_text, "command -v rm");
    }
}
