//! Files a command reads that are not its plain operands: option values (`date -f FILE`,
//! `grep -f FILE`, `diff --to-file=FILE`) and what git prints (`git show REV:PATH`,
//! `git diff --no-index A B`, `git blame --contents FILE`, pathspecs after `--`).
//!
//! Without these, a read-only command could print a file that a `Read` deny rule protects,
//! or one outside the workspace, while it looked like it read nothing.

use crate::carriers::part;
use crate::words::Field;

/// `(programs, options whose value is a file the program reads)`.
#[rustfmt::skip]
const READ_OPTIONS: &[(&[&str], &[&str])] = &[
    (&["date"], &["-f", "--file"]),
    (&["diff", "sdiff", "diff3"], &["--from-file", "--to-file"]),
    (&["grep", "egrep", "fgrep", "rg", "ag", "ack", "git-grep"], &["-f", "--file", "--exclude-from", "--ignore-file"]),
    (&["wc", "du", "sort"], &["--files0-from"]),
    (&["jq", "gojq", "jaq"], &["-f", "--from-file"]),
    (&["dig"], &["-f", "-k"]),
];

/// Files `prog` reads through its options or (for git) its object names and pathspecs.
pub(super) fn extra_reads(prog: &str, args: &[Field]) -> Vec<Field> {
    let mut out = Vec::new();
    if let Some((_, options)) = READ_OPTIONS.iter().find(|(p, _)| p.contains(&prog)) {
        option_values(args, options, &mut out);
    }
    if prog == "git" {
        git_reads(args, &mut out);
    }
    if matches!(prog, "jq" | "gojq" | "jaq") {
        // `--rawfile NAME FILE`, `--slurpfile NAME FILE`: the second word is read.
        for (i, w) in args.iter().enumerate() {
            if matches!(w.text.as_str(), "--rawfile" | "--slurpfile")
                && let Some(file) = args.get(i + 2)
            {
                out.push(file.clone());
            }
        }
    }
    out
}

/// Values of `options` in every spelling: `-f FILE`, `-fFILE`, `--file=FILE`, `--file FILE`.
fn option_values(args: &[Field], options: &[&str], out: &mut Vec<Field>) {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].text.as_str();
        if a == "--" {
            break;
        }
        for o in options {
            if a == *o {
                if let Some(v) = args.get(i + 1) {
                    out.push(v.clone());
                }
                i += 1;
                break;
            }
            let attached = if o.starts_with("--") {
                a.strip_prefix(o).and_then(|r| r.strip_prefix('='))
            } else {
                a.strip_prefix(o)
                    .filter(|r| !r.is_empty() && !a.starts_with("--"))
            };
            if let Some(v) = attached {
                out.push(part(&args[i], v));
                break;
            }
        }
        i += 1;
    }
}

/// git subcommands that print file contents.
const GIT_PRINTERS: &[&str] = &[
    "show",
    "diff",
    "blame",
    "annotate",
    "cat-file",
    "grep",
    "archive",
    "difftool",
    "format-patch",
    "range-diff",
];

/// What a git command prints from files: `REV:PATH` and `:PATH` objects (read as paths from
/// the working directory), pathspecs after `--`, `diff --no-index` operands, `blame`'s file
/// and `--contents`, and `log -p` pathspecs.
fn git_reads(args: &[Field], out: &mut Vec<Field>) {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].text.as_str();
        if matches!(a, "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace") {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    let Some(sub) = args.get(i).map(|s| s.text.as_str()) else {
        return;
    };
    let rest = &args[i + 1..];
    let patch = rest.iter().any(|w| {
        matches!(w.text.as_str(), "-p" | "-u" | "--patch" | "--follow")
            || w.text.starts_with("-L")
            || w.text.starts_with("--word-diff")
            || w.text.starts_with("--unified")
    });
    let prints = GIT_PRINTERS.contains(&sub) || (matches!(sub, "log" | "whatchanged") && patch);
    if sub == "grep" {
        option_values(rest, &["-f"], out);
    }
    let mut after_dd = false;
    let mut operands = Vec::new();
    let mut j = 0;
    while j < rest.len() {
        let w = &rest[j];
        let a = w.text.as_str();
        if after_dd {
            if prints {
                out.push(w.clone());
            }
        } else if a == "--" {
            after_dd = true;
        } else if let Some(v) = a.strip_prefix("--contents=") {
            out.push(part(w, v));
        } else if let Some(range) = a.strip_prefix("-L")
            && let Some((_, file)) = range.rsplit_once(':')
        {
            // `log -L START,END:FILE` and `-L :FUNC:FILE` print FILE's history.
            out.push(part(w, file));
        } else if a == "--contents" {
            if let Some(v) = rest.get(j + 1) {
                out.push(v.clone());
            }
            j += 1;
        } else if !a.starts_with('-') {
            operands.push(w);
            // `HEAD:path`, `:path`, `:0:path`; not `host:repo` URLs of fetch or clone.
            if let Some((_, path)) = a.rsplit_once(':')
                && !a.contains("://")
                && (prints || sub == "cat-file")
            {
                out.push(part(w, if path.is_empty() { "." } else { path }));
            }
        }
        j += 1;
    }
    let no_index = rest.iter().any(|w| w.text == "--no-index");
    if sub == "diff" && no_index {
        out.extend(operands.iter().map(|w| (*w).clone()));
    } else if matches!(sub, "blame" | "annotate")
        && !after_dd
        && let Some(file) = operands.last()
    {
        out.push((*file).clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(cmd: &str) -> Vec<String> {
        let words: Vec<Field> = cmd.split_whitespace().map(Field::lit).collect();
        extra_reads(&words[0].text, &words[1..])
            .into_iter()
            .map(|f| f.text)
            .collect()
    }

    #[test]
    fn option_files_are_reads() {
        assert_eq!(reads("date -f /etc/shadow"), ["/etc/shadow"]);
        assert_eq!(reads("date --file=k"), ["k"]);
        assert_eq!(reads("date -fk"), ["k"]);
        assert_eq!(reads("date +%s"), Vec::<String>::new());
        assert_eq!(reads("diff --to-file=k a"), ["k"]);
        assert_eq!(reads("grep -f pats.txt x"), ["pats.txt"]);
        assert_eq!(reads("grep --file pats.txt x"), ["pats.txt"]);
        // `-e -f` makes `-f` the pattern; reading `x` as a pattern file is only cautious.
        assert_eq!(reads("grep -e -f x"), ["x"]);
        assert_eq!(reads("rg --ignore-file ig x"), ["ig"]);
        assert_eq!(reads("wc --files0-from=list"), ["list"]);
        assert_eq!(reads("grep -- -f x"), Vec::<String>::new());
        assert_eq!(reads("jq -n --rawfile k /etc/shadow $k"), ["/etc/shadow"]);
        assert_eq!(reads("jq -f prog.jq in.json"), ["prog.jq"]);
        assert_eq!(reads("dig -f names.txt"), ["names.txt"]);
    }

    #[test]
    fn git_prints_are_reads() {
        assert_eq!(reads("git show HEAD:secrets/key"), ["secrets/key"]);
        assert_eq!(reads("git show HEAD~2:"), ["."]);
        assert_eq!(reads("git cat-file -p :0:a/b"), ["a/b"]);
        assert_eq!(
            reads("git diff --no-index /etc/shadow f"),
            ["/etc/shadow", "f"]
        );
        assert_eq!(reads("git blame --contents=k f"), ["k", "f"]);
        assert_eq!(reads("git blame --contents k f"), ["k", "f"]);
        assert_eq!(reads("git diff HEAD -- secrets"), ["secrets"]);
        assert_eq!(reads("git log -p -- secrets"), ["secrets"]);
        assert_eq!(reads("git -C repo show HEAD:k"), ["k"]);
        assert_eq!(reads("git show HEAD@{0}:k"), ["k"]);
        assert_eq!(reads("git grep -f pats x"), ["pats"]);
        assert_eq!(reads("git log -L1,5:src/k.rs"), ["src/k.rs"]);
        assert_eq!(reads("git log -L:main:src/k.rs"), ["src/k.rs"]);
        // Not reads of local files.
        assert_eq!(reads("git log -- secrets"), Vec::<String>::new());
        assert_eq!(reads("git fetch git@host:repo.git"), Vec::<String>::new());
        assert_eq!(reads("git clone https://h/r.git"), Vec::<String>::new());
        assert_eq!(reads("git status"), Vec::<String>::new());
        assert_eq!(reads("git diff HEAD~1"), Vec::<String>::new());
    }
}
