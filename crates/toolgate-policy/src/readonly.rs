//! Read-only shell commands: they run without a prompt in every mode (compat §3.2), as long
//! as they read inside the roots, write nothing, and nothing in the call is opaque or risky.
//!
//! Each entry names what makes the command stop being read-only, with examples that must
//! and must not count as read-only; one test walks them all.

/// One read-only program and the flags that disqualify it.
#[derive(Debug, Clone, Copy)]
pub struct ReadOnlyEntry {
    /// The program (basename).
    pub program: &'static str,
    /// Arguments that make it write or run something (`find -exec`, `sort -o`); an argument
    /// equal to one of these, or starting with one followed by `=`, disqualifies it.
    pub unsafe_args: &'static [&'static str],
    /// Commands that are read-only.
    pub examples: &'static [&'static str],
    /// Commands that are not.
    pub counter_examples: &'static [&'static str],
}

/// Claude Code's read-only set plus a few harmless peers.
pub const READ_ONLY: &[ReadOnlyEntry] = &[
    ReadOnlyEntry {
        program: "ls",
        unsafe_args: &[],
        examples: &["ls -la", "ls src"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "cat",
        unsafe_args: &[],
        examples: &["cat README.md"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "echo",
        unsafe_args: &[],
        examples: &["echo hi"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "printf",
        unsafe_args: &["-v"],
        examples: &["printf %s x"],
        counter_examples: &["printf -v v x"],
    },
    ReadOnlyEntry {
        program: "pwd",
        unsafe_args: &[],
        examples: &["pwd"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "head",
        unsafe_args: &[],
        examples: &["head -n 5 f"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "tail",
        unsafe_args: &[],
        examples: &["tail -f log"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "grep",
        unsafe_args: &[],
        examples: &["grep -rn foo src"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "egrep",
        unsafe_args: &[],
        examples: &["egrep x f"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "fgrep",
        unsafe_args: &[],
        examples: &["fgrep x f"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "rg",
        unsafe_args: &["--pre", "--pre-glob"],
        examples: &["rg -n foo"],
        counter_examples: &["rg --pre ./x foo", "rg --pre=./x foo"],
    },
    ReadOnlyEntry {
        program: "find",
        unsafe_args: &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ],
        examples: &["find . -name *.rs"],
        counter_examples: &["find . -delete", "find . -exec rm {} ;"],
    },
    ReadOnlyEntry {
        program: "wc",
        unsafe_args: &["--files0-from"],
        examples: &["wc -l f"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "which",
        unsafe_args: &[],
        examples: &["which cargo"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "diff",
        unsafe_args: &[],
        examples: &["diff a b"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "stat",
        unsafe_args: &[],
        examples: &["stat f"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "du",
        unsafe_args: &[],
        examples: &["du -sh ."],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "cd",
        unsafe_args: &[],
        examples: &["cd src"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "true",
        unsafe_args: &[],
        examples: &["true"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "false",
        unsafe_args: &[],
        examples: &["false"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "test",
        unsafe_args: &[],
        examples: &["test -f x"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "[",
        unsafe_args: &[],
        examples: &["[ -f x ]"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "basename",
        unsafe_args: &[],
        examples: &["basename /a/b"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "dirname",
        unsafe_args: &[],
        examples: &["dirname /a/b"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "realpath",
        unsafe_args: &[],
        examples: &["realpath x"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "whoami",
        unsafe_args: &[],
        examples: &["whoami"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "uname",
        unsafe_args: &[],
        examples: &["uname -a"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "tree",
        unsafe_args: &["-o"],
        examples: &["tree -L 2"],
        counter_examples: &["tree -o out.txt"],
    },
    ReadOnlyEntry {
        program: "sort",
        unsafe_args: &["-o", "--output", "--compress-program"],
        examples: &["sort f"],
        counter_examples: &["sort -o f f", "sort --output=f f"],
    },
    ReadOnlyEntry {
        program: "cut",
        unsafe_args: &[],
        examples: &["cut -d: -f1 f"],
        counter_examples: &[],
    },
    ReadOnlyEntry {
        program: "date",
        unsafe_args: &["-s", "--set"],
        examples: &["date +%s"],
        counter_examples: &["date -s 2020-01-01"],
    },
    ReadOnlyEntry {
        program: "git",
        unsafe_args: &[],
        examples: &["git status", "git log --oneline", "git diff HEAD~1"],
        counter_examples: &[
            "git push",
            "git -c core.pager=sh log",
            "git diff --output=x",
            "git branch -D x",
        ],
    },
];

/// Read-only `git` subcommands. Global options before the subcommand (`-c`, `-C`,
/// `--exec-path`) are never read-only: they can run programs.
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "blame",
    "describe",
    "grep",
    "shortlog",
    "cat-file",
    "rev-list",
    "merge-base",
    "show-ref",
    "branch",
    "tag",
    "remote",
    "reflog",
    "whatchanged",
    "name-rev",
];

/// Arguments that make an otherwise read-only git subcommand write (`git branch -D`,
/// `git tag -d`, `git remote add`, `--output=`).
const GIT_WRITING_ARGS: &[&str] = &[
    "--output",
    "-o",
    "-d",
    "-D",
    "-m",
    "-M",
    "-c",
    "-C",
    "--delete",
    "--move",
    "--copy",
    "--set-upstream-to",
    "--unset-upstream",
    "--edit-description",
    "-f",
    "--force",
    "add",
    "rm",
    "remove",
    "rename",
    "set-url",
    "set-head",
    "prune",
    "update",
    "expire",
    "--ext-diff",
    "--textconv",
    "delete",
];

/// Whether `argv` (wrappers already stripped) is a read-only command.
pub fn is_read_only(argv: &[String]) -> bool {
    let Some(prog) = argv.first() else {
        return false;
    };
    if prog.contains('/') {
        // `./ls` or `/tmp/cat` could be anything.
        return false;
    }
    let Some(entry) = READ_ONLY.iter().find(|e| e.program == prog) else {
        return false;
    };
    let args = &argv[1..];
    if args.iter().any(|a| {
        entry
            .unsafe_args
            .iter()
            .any(|u| a == u || a.strip_prefix(u).is_some_and(|r| r.starts_with('=')))
    }) {
        return false;
    }
    if entry.program == "git" {
        return git_read_only(args);
    }
    true
}

fn git_read_only(args: &[String]) -> bool {
    let Some(sub) = args.first() else {
        return false;
    };
    if !GIT_READ_ONLY.contains(&sub.as_str()) {
        return false;
    }
    let rest = &args[1..];
    let list_like = matches!(sub.as_str(), "branch" | "tag" | "remote" | "reflog");
    !rest.iter().any(|a| {
        let flag = a.split('=').next().unwrap_or(a);
        (flag.starts_with("--output") || flag == "--ext-diff" || flag == "--textconv")
            || (list_like && GIT_WRITING_ARGS.contains(&flag))
            // `git tag NAME` / `git branch NAME` create refs
            || (list_like && sub != "remote" && sub != "reflog" && !a.starts_with('-'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn entries_carry_their_examples() {
        for e in READ_ONLY {
            for ex in e.examples {
                assert!(is_read_only(&argv(ex)), "{ex} should be read-only");
            }
            for ex in e.counter_examples {
                assert!(!is_read_only(&argv(ex)), "{ex} should not be read-only");
            }
        }
        for ex in [
            "git branch",
            "git branch -a",
            "git tag -l",
            "git remote -v",
            "git show HEAD",
        ] {
            assert!(is_read_only(&argv(ex)), "{ex}");
        }
        for ex in [
            "git tag v1",
            "git branch new",
            "git remote add o u",
            "git commit",
            "/bin/ls",
            "rm x",
            "git",
        ] {
            assert!(!is_read_only(&argv(ex)), "{ex}");
        }
    }
}
