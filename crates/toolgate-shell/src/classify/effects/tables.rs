//! The per-program tables of the effects: which programs read their operands, list them,
//! search them, and how far into a directory each goes.

use crate::words::Field;

pub(super) fn has_short(args: &[Field], c: char) -> bool {
    args.iter().take_while(|a| a.text != "--").any(|a| {
        a.text.len() > 1
            && a.text.starts_with('-')
            && !a.text.starts_with("--")
            && a.text[1..].contains(c)
    })
}

pub(super) fn has_long(args: &[Field], names: &[&str]) -> bool {
    args.iter().any(|a| {
        names
            .iter()
            .any(|n| a.text == *n || a.text.strip_prefix(n).is_some_and(|r| r.starts_with('=')))
    })
}

pub(super) fn long_value<'a>(args: &'a [Field], names: &[&str]) -> Option<&'a Field> {
    args.iter().enumerate().find_map(|(i, a)| {
        names
            .contains(&a.text.as_str())
            .then(|| args.get(i + 1))
            .flatten()
    })
}

/// Programs whose operands are files they read.
pub(super) const READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "bat",
    "batcat",
    "nl",
    "tac",
    "wc",
    "strings",
    "od",
    "hexdump",
    "xxd",
    "base64",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "file",
    "stat",
    "source",
    ".",
    "diff",
    "cmp",
    "sort",
    "uniq",
    "cut",
    "paste",
    "column",
    "fold",
    "iconv",
    "gpg",
    "openssl",
    "zcat",
    "gunzip",
    "bzcat",
    "xzcat",
    "vim",
    "vi",
    "nano",
    "emacs",
    "view",
    "ssh-keygen",
    "cp",
    "scp",
    "rsync",
    "tar",
    "zip",
    "sqlite3",
    "ls",
    "open",
    "duckdb",
    "unzip",
    "tree",
    "du",
    "exiftool",
    "pdftotext",
    "mdls",
    "plutil",
    "pv",
    "rev",
    "expand",
    "unexpand",
    "fmt",
    "look",
    "join",
    "comm",
    "pr",
    "ed",
    "most",
    "split",
    "csplit",
    "code",
    "subl",
    "micro",
    "hx",
    "shasum",
    "md5",
    "sum",
    "hexyl",
    "xmllint",
    "bc",
    "7z",
    "7za",
    "7zz",
    "mail",
    "mailx",
    "mutt",
];

/// Programs that read only names and metadata of their operands ([`PathUse::list`]).
pub(super) const LISTERS: &[&str] = &[
    "ls", "dir", "vdir", "exa", "eza", "lsd", "tree", "du", "stat", "find", "realpath", "readlink",
    "basename", "dirname", "test", "[", "lsattr", "getfacl", "namei",
];

/// Programs whose first operand is a pattern/program and the rest are files.
pub(super) const PATTERN_READERS: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk", "sed", "jq", "yq",
];

/// How much of a directory operand a search program reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tree {
    /// Every file below it.
    All,
    /// Every file below it but hidden and ignored ones, as `rg` walks by default.
    Visible,
}

/// Whether `grep`/`rg`/`ag`/`ack` with these arguments search directories recursively:
/// `grep` only with `-r`/`-R` (or `-d recurse`), the others always. `rg` and `ag` skip
/// hidden and ignored files unless told otherwise (`rg --hidden`, `-.`, `-u`,
/// `--no-ignore…`; `ag --hidden`, `-u`, `-U`). Name limits are [`name_filters`].
pub(super) fn searches_trees(prog: &str, args: &[Field]) -> Option<Tree> {
    match prog {
        "grep" | "egrep" | "fgrep" => {
            let recurse_value = args.windows(2).any(|w| {
                matches!(w[0].text.as_str(), "-d" | "--directories") && w[1].text == "recurse"
            });
            (has_short(args, 'r')
                || has_short(args, 'R')
                || recurse_value
                || args.iter().any(|a| {
                    matches!(
                        a.text.as_str(),
                        "--recursive"
                            | "--dereference-recursive"
                            | "-drecurse"
                            | "--directories=recurse"
                    )
                }))
            .then_some(Tree::All)
        }
        "rg" => {
            // Any `-u` (`--no-ignore`, then hidden files, then binary ones) widens the walk
            // past what `Visible` models; so do the options that turn single filters off.
            let unrestricted = args.iter().take_while(|a| a.text != "--").any(|a| {
                a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains('u')
            });
            let all = unrestricted
                || has_short(args, '.')
                || has_long(
                    args,
                    &[
                        "--hidden",
                        "--unrestricted",
                        "--no-ignore",
                        "--no-ignore-vcs",
                        "--no-ignore-dot",
                        "--no-ignore-parent",
                        "--no-ignore-global",
                        "--no-ignore-exclude",
                        "--no-ignore-files",
                    ],
                );
            Some(if all { Tree::All } else { Tree::Visible })
        }
        "ag" => {
            let all = has_short(args, 'u')
                || has_short(args, 'U')
                || has_long(
                    args,
                    &[
                        "--hidden",
                        "--unrestricted",
                        "--all-types",
                        "--skip-vcs-ignores",
                    ],
                );
            Some(if all { Tree::All } else { Tree::Visible })
        }
        "ack" => Some(Tree::All),
        _ => None,
    }
}

/// The file-name globs a recursive search is limited to (`grep --include=GLOB`, `rg -g
/// GLOB`), or none when every file is searched. Only what a file's name alone decides is
/// kept: an exclusion (`rg -g '!x'`) is ignored and a glob with a `/` drops the limit, which
/// can only make the walk wider than the program's.
pub(super) fn name_filters(prog: &str, args: &[Field]) -> Vec<String> {
    let options: &[&str] = match prog {
        "grep" | "egrep" | "fgrep" => &["--include"],
        "rg" => &["-g", "--glob"],
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    for v in crate::argv::values_of(args, options) {
        match v.text.as_str() {
            v if prog == "rg" && v.starts_with('!') => {}
            v if v.is_empty() || v.contains('/') => return Vec::new(),
            v => out.push(v.to_owned()),
        }
    }
    out
}

/// Whether `cp`, `scp`, `rsync` and friends copy (or `mv` moves) whole directories.
pub(super) fn copies_trees(prog: &str, args: &[Field]) -> bool {
    match prog {
        "mv" | "rclone" => true,
        "cp" => {
            has_short(args, 'r')
                || has_short(args, 'R')
                || has_short(args, 'a')
                || has_long(args, &["--recursive", "--archive"])
        }
        "scp" => has_short(args, 'r'),
        "rsync" => {
            has_short(args, 'r')
                || has_short(args, 'a')
                || has_long(args, &["--recursive", "--archive"])
        }
        _ => false,
    }
}

/// Whether a reader archives or compares whole directories: `tar` creating, appending or
/// updating (unless `--no-recursion`), `zip -r`, `diff -r`.
pub(super) fn archives_trees(prog: &str, args: &[Field]) -> bool {
    match prog {
        "tar" => {
            // The first word may be an old-style bundle without a dash (`tar czf x.tgz .`).
            let bundle_writes = |t: &str| t.chars().any(|c| matches!(c, 'c' | 'r' | 'u'));
            let writes = args
                .first()
                .is_some_and(|a| !a.text.starts_with('-') && bundle_writes(&a.text))
                || args.iter().take_while(|a| a.text != "--").any(|a| {
                    a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && bundle_writes(&a.text[1..])
                })
                || has_long(args, &["--create", "--append", "--update"]);
            writes && !has_long(args, &["--no-recursion"])
        }
        "zip" => {
            has_short(args, 'r') || has_short(args, 'R') || has_long(args, &["--recurse-paths"])
        }
        "diff" => has_short(args, 'r') || has_long(args, &["--recursive"]),
        _ => false,
    }
}
