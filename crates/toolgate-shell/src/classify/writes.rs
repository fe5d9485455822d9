//! Files a command writes or deletes that are not its redirect targets or the operands the
//! per-program rules in `effects` know: output options in every spelling (`sort -oFILE`,
//! `iconv -o FILE`, `openssl … -out FILE`), in-place editors (`awk -i inplace`, `yq -i`),
//! positional outputs (`uniq IN OUT`, `xxd IN OUT`, `split IN PREFIX`), `patch FILE`, archive
//! members named on the command line, and git's path-limited working-tree writes
//! (`git checkout -- PATH`, `git restore PATH`, `git mv`, `git rm`, `git clean PATH`).
//!
//! Without these, an `Edit` deny rule did not stop a command its allow rule approved from
//! writing the denied file.

use toolgate_protocol::Access;

use super::effects::operands;
use super::reads::option_values;
use crate::words::Field;

/// `(programs, options whose value is a file the program writes)`.
#[rustfmt::skip]
const WRITE_OPTIONS: &[(&[&str], &[&str])] = &[
    (&["sort"], &["-o", "--output"]),
    (&["iconv", "gpg", "gpg2", "tree", "info", "patch"], &["-o", "--output"]),
    (&["less"], &["-o", "-O", "--log-file", "--LOG-FILE"]),
    (&["openssl"], &["-out", "-keyout"]),
    (&["curl"], &["-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii", "--stderr"]),
    (&["wget"], &["-O", "--output-document", "-o", "--output-file", "-a", "--append-output"]),
    (&["csplit"], &["-f", "--prefix"]),
];

/// Files `prog` writes (`Access::Write`) or deletes (`Access::Delete`) beyond what the
/// per-program rules report.
pub(super) fn extra_writes(prog: &str, args: &[Field]) -> Vec<(Field, Access)> {
    let mut files = Vec::new();
    if let Some((_, options)) = WRITE_OPTIONS.iter().find(|(p, _)| p.contains(&prog)) {
        option_values(args, options, &mut files);
    }
    files.retain(|f| !matches!(f.text.as_str(), "-" | "/dev/stdout" | "/dev/stderr"));
    let mut out: Vec<(Field, Access)> = files.into_iter().map(|f| (f, Access::Write)).collect();
    let ops = || operands(args, &[]);
    match prog {
        // `uniq IN OUT`, `xxd [-r] IN OUT`, `split IN PREFIX`: the second operand is written.
        "uniq" | "xxd" | "split" => {
            let flags = super::reads::reader_value_flags(prog).unwrap_or(&[]);
            if let Some(o) = operands(args, flags).get(1) {
                out.push((o.clone(), Access::Write));
            }
        }
        // `ed FILE`: the editor's script (on stdin) may write the file.
        "ed" | "red" => {
            if let Some(o) = operands(args, &["-p", "--prompt"]).first() {
                out.push((o.clone(), Access::Write));
            }
        }
        // `patch FILE [PATCH]`.
        "patch" => {
            const VALUED: &[&str] = &[
                "-i",
                "-o",
                "-d",
                "-r",
                "-B",
                "-z",
                "-V",
                "-F",
                "-D",
                "-p",
                "--input",
                "--output",
                "--directory",
                "--reject-file",
                "--prefix",
                "--suffix",
            ];
            if let Some(o) = operands(args, VALUED).first() {
                out.push((o.clone(), Access::Write));
            }
        }
        // `awk -i inplace PROG FILE…`, `gawk -i inplace`.
        "awk" | "gawk"
            if args
                .windows(2)
                .any(|w| w[0].text == "-i" && w[1].text == "inplace")
                || args.iter().any(|w| w.text == "--include=inplace") =>
        {
            let files = ops().into_iter().filter(|w| w.text != "inplace");
            out.extend(files.skip(1).map(|f| (f, Access::Write)));
        }
        // `yq -i EXPR FILE`.
        "yq" if args.iter().any(|w| {
            w.text == "--inplace"
                || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('i'))
        }) =>
        {
            out.extend(ops().into_iter().skip(1).map(|f| (f, Access::Write)));
        }
        // The archive a tar creates or appends to is written.
        "tar" | "gtar" | "bsdtar" if creating_tar(args) => {
            if let Some(a) = tar_archive(args).filter(|a| a.text != "-") {
                out.push((a, Access::Write));
            }
        }
        // Archive members named on the command line are written when extracting.
        "tar" | "gtar" | "bsdtar" if extracting_tar(args) => {
            let dir = super::reads::option_value_of(args, &["-C", "--directory"]);
            for m in tar_members(args) {
                out.push((under(dir.as_ref(), m), Access::Write));
            }
        }
        "unzip" => {
            let dir = super::reads::option_value_of(args, &["-d"]);
            for m in operands(args, &["-d", "-P"]).iter().skip(1) {
                out.push((under(dir.as_ref(), m), Access::Write));
            }
        }
        "git" => git_writes(args, &mut out),
        // A download from object storage writes its local destination.
        "aws" | "gsutil" | "gcloud" | "s3cmd" | "mc" | "rclone" | "azcopy" => {
            let words = ops();
            let pos: Vec<&str> = words.iter().map(|f| f.text.as_str()).collect();
            if super::remote::is_download(&pos)
                && let Some(dst) = words.last()
            {
                out.push((dst.clone(), Access::Write));
            }
        }
        _ => {}
    }
    out
}

/// Whether the key a `git config` command line sets is one that names no program, file or
/// remote (`user.email`, `color.ui`, `pull.rebase`, …).
fn config_key_is_harmless(rest: &[Field]) -> bool {
    const HARMLESS: &[&str] = &[
        "user.name",
        "user.email",
        "init.defaultbranch",
        "pull.rebase",
        "pull.ff",
        "push.default",
        "push.autosetupremote",
        "fetch.prune",
        "rebase.autosquash",
        "rebase.autostash",
        "merge.ff",
        "merge.conflictstyle",
        "core.autocrlf",
        "core.filemode",
        "core.eol",
        "core.quotepath",
        "commit.verbose",
        "log.date",
        "diff.renames",
        "status.short",
        "branch.autosetuprebase",
        "help.autocorrect",
    ];
    let key = rest
        .iter()
        .filter(|w| !w.text.starts_with('-'))
        .find(|w| w.text != "set")
        .map(|w| w.text.to_ascii_lowercase());
    key.is_some_and(|k| {
        HARMLESS.contains(&k.as_str())
            || k.starts_with("color.")
            || k.starts_with("advice.")
            || k.starts_with("format.")
    })
}

/// `member` as extracted into `dir` (`-C DIR`, `-d DIR`), or where it is.
fn under(dir: Option<&Field>, member: &Field) -> Field {
    let text = match dir {
        Some(d) => format!("{}/{}", d.text.trim_end_matches('/'), member.text),
        None => member.text.clone(),
    };
    Field {
        text,
        dynamic: member.dynamic || dir.is_some_and(|d| d.dynamic),
        ..Field::default()
    }
}

/// Whether a tar command line extracts (`-x`, `--extract`, `--get`, old-style `xf`).
/// Short options of tar that take a value, in either style.
const TAR_VALUED: &str = "fCbgHKLNTVXIF";

/// tar's grammar for dashed options.
const TAR: crate::argv::Grammar<'static> = crate::argv::Grammar {
    short_val: TAR_VALUED,
    long_val: &[
        "--file",
        "--directory",
        "--files-from",
        "--exclude-from",
        "--exclude",
        "--format",
        "--blocking-factor",
        "--listed-incremental",
        "--newer",
        "--owner",
        "--group",
        "--mode",
        "--mtime",
        "--transform",
        "--xform",
        "--label",
        "--tape-length",
        "--starting-file",
    ],
    long_val_abbrev: &["--use-compress-program", "--to-command"],
    ..crate::argv::Grammar::EMPTY
};

/// Whether a tar command line creates, appends to or updates an archive.
fn creating_tar(args: &[Field]) -> bool {
    let bundle = |t: &str| t.chars().any(|c| matches!(c, 'c' | 'r' | 'u'));
    args.first().is_some_and(|a| {
        !a.text.starts_with('-')
            && a.text.chars().all(|c| c.is_ascii_alphabetic())
            && bundle(&a.text)
    }) || args.iter().take_while(|a| a.text != "--").any(|a| {
        (a.text.starts_with('-') && !a.text.starts_with("--") && bundle(&a.text[1..]))
            || matches!(a.text.as_str(), "--create" | "--append" | "--update")
    })
}

/// The archive of a tar command line: `-f X`, `--file=X`, or in an old-style bundle
/// (`tar czf X …`) the word the `f` takes, counting the valued letters before it.
fn tar_archive(args: &[Field]) -> Option<Field> {
    if let Some(first) = args.first()
        && !first.text.starts_with('-')
        && first.text.chars().all(|c| c.is_ascii_alphabetic())
        && let Some(at) = first.text.find('f')
    {
        let before = first.text[..at]
            .chars()
            .filter(|c| TAR_VALUED.contains(*c))
            .count();
        return args.get(1 + before).cloned();
    }
    let mut argv = vec![Field::lit("tar")];
    argv.extend(args.iter().cloned());
    TAR.parse(&argv, 1).value('f', "file").cloned()
}

fn extracting_tar(args: &[Field]) -> bool {
    args.iter().enumerate().any(|(i, w)| {
        let t = w.text.as_str();
        t == "--extract"
            || t == "--get"
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('x'))
            || (i == 0
                && !t.starts_with('-')
                && t.contains('x')
                && t.chars().all(|c| c.is_ascii_alphabetic()))
    })
}

/// The member names of a tar command line: operands that are not the archive (`-f X`) or
/// another option's value.
fn tar_members(args: &[Field]) -> Vec<&Field> {
    const VALUED: &[&str] = &[
        "-f",
        "--file",
        "-C",
        "--directory",
        "-T",
        "--files-from",
        "-X",
        "--exclude-from",
        "--exclude",
        "-I",
        "--use-compress-program",
        "-b",
        "-H",
        "--format",
        "-g",
        "-N",
        "-K",
        "-L",
        "-V",
    ];
    let mut out = Vec::new();
    let mut i = 0;
    let old_style = args.first().is_some_and(|w| !w.text.starts_with('-'));
    while i < args.len() {
        let t = args[i].text.as_str();
        if i == 0 && old_style {
            // `tar xf ARCHIVE …`: the bundle's `f` takes the next word.
            if t.contains('f') {
                i += 1;
            }
        } else if VALUED.contains(&t)
            || (t.starts_with('-') && !t.starts_with("--") && t.ends_with('f'))
        {
            i += 1;
        } else if !t.starts_with('-') {
            out.push(&args[i]);
        }
        i += 1;
    }
    out
}

/// git commands that write or delete named working-tree paths.
fn git_writes(args: &[Field], out: &mut Vec<(Field, Access)>) {
    let Some((sub, rest)) = super::reads::git_subcommand(args) else {
        return;
    };
    let dd = rest.iter().position(|w| w.text == "--");
    let after_dd: Vec<&Field> = dd.map_or(Vec::new(), |d| rest[d + 1..].iter().collect());
    let before: Vec<&Field> = rest[..dd.unwrap_or(rest.len())]
        .iter()
        .filter(|w| !w.text.starts_with('-'))
        .collect();
    let valued = |opts: &[&str]| -> Vec<&Field> {
        // Operands before `--`, minus the values of `opts`.
        let mut v = Vec::new();
        let mut k = 0;
        let end = dd.unwrap_or(rest.len());
        while k < end {
            let t = rest[k].text.as_str();
            if opts.contains(&t) {
                k += 1;
            } else if !t.starts_with('-') {
                v.push(&rest[k]);
            }
            k += 1;
        }
        v
    };
    match sub {
        // `git config KEY VALUE` writes a configuration file: the repository's, the user's
        // (`--global`), the system's or a named one (`-f FILE`). Those are protected paths,
        // because most keys can name a program or redirect a remote; the keys below cannot.
        "config"
            if !rest.iter().any(|w| {
                w.text.starts_with("--get")
                    || matches!(w.text.as_str(), "-l" | "--list" | "get" | "-e" | "--edit")
            }) && !config_key_is_harmless(rest)
                && rest.iter().filter(|w| !w.text.starts_with('-')).count() >= 2 =>
        {
            let file = if let Some(f) = super::reads::option_value_of(rest, &["-f", "--file"]) {
                f
            } else if rest.iter().any(|w| w.text == "--global") {
                Field::lit("~/.gitconfig")
            } else if rest.iter().any(|w| w.text == "--system") {
                Field::lit("/etc/gitconfig")
            } else {
                match super::reads::option_value_of(args, &["-C"]) {
                    Some(dir) => Field {
                        text: format!("{}/.git/config", dir.text.trim_end_matches('/')),
                        ..dir
                    },
                    None => Field::lit(".git/config"),
                }
            };
            out.push((file, Access::Write));
        }
        // `git checkout [REV] -- PATH…` and `git checkout REV PATH…` overwrite PATHs.
        "checkout" => {
            let paths = if dd.is_some() {
                after_dd
            } else {
                valued(&["-b", "-B", "--orphan", "--conflict", "--pathspec-from-file"])
                    .into_iter()
                    .skip(1)
                    .collect()
            };
            out.extend(paths.into_iter().map(|p| (p.clone(), Access::Write)));
        }
        "restore" => {
            let mut paths = valued(&["-s", "--source", "--conflict", "--pathspec-from-file"]);
            paths.extend(after_dd);
            out.extend(paths.into_iter().map(|p| (p.clone(), Access::Write)));
        }
        "mv" => {
            let mut paths = before;
            paths.extend(after_dd);
            if let Some((dst, srcs)) = paths.split_last() {
                out.extend(srcs.iter().map(|p| ((*p).clone(), Access::Delete)));
                out.push(((*dst).clone(), Access::Write));
            }
        }
        "rm" if !rest.iter().any(|w| w.text == "--cached") => {
            let mut paths = before;
            paths.extend(after_dd);
            out.extend(paths.into_iter().map(|p| (p.clone(), Access::Delete)));
        }
        "clean" => {
            let dry = rest.iter().any(|w| {
                w.text == "--dry-run"
                    || (w.text.starts_with('-')
                        && !w.text.starts_with("--")
                        && w.text.contains('n'))
            });
            if !dry {
                let mut paths = valued(&["-e", "--exclude"]);
                paths.extend(after_dd);
                out.extend(paths.into_iter().map(|p| (p.clone(), Access::Delete)));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes(cmd: &str) -> Vec<String> {
        let words: Vec<Field> = cmd.split_whitespace().map(Field::lit).collect();
        extra_writes(&words[0].text, &words[1..])
            .into_iter()
            .map(|(f, a)| match a {
                Access::Delete => format!("-{}", f.text),
                _ => f.text,
            })
            .collect()
    }

    #[test]
    fn outputs_in_every_spelling() {
        assert_eq!(writes("sort -o out f"), ["out"]);
        assert_eq!(writes("sort -oout f"), ["out"]);
        assert_eq!(writes("sort --output=out f"), ["out"]);
        assert_eq!(writes("sort -uo out f"), ["out"]);
        assert_eq!(writes("iconv -f a -t b f -o out"), ["out"]);
        assert_eq!(writes("openssl enc -in f -out out"), ["out"]);
        assert_eq!(writes("gpg -o out -e f"), ["out"]);
        assert_eq!(writes("curl -o - http://x"), Vec::<String>::new());
        assert_eq!(writes("uniq in out"), ["out"]);
        assert_eq!(writes("xxd -r in out"), ["out"]);
        assert_eq!(writes("split -l 1 in pre"), ["pre"]);
        assert_eq!(writes("patch conf/x fix.diff"), ["conf/x"]);
        assert_eq!(writes("awk -i inplace {print} conf/x"), ["conf/x"]);
        assert_eq!(writes("yq -i .a=1 conf/x"), ["conf/x"]);
        assert_eq!(writes("sort f"), Vec::<String>::new());
        assert_eq!(writes("ed -s conf/x"), ["conf/x"]);
        assert_eq!(writes("uniq f"), Vec::<String>::new());
    }

    #[test]
    fn archive_members() {
        assert_eq!(writes("tar -xf a.tar conf/x"), ["conf/x"]);
        assert_eq!(writes("tar xzf a.tgz conf/x"), ["conf/x"]);
        assert_eq!(writes("tar -xf a.tar -C out conf/x"), ["out/conf/x"]);
        assert_eq!(writes("tar -cf a.tar conf"), ["a.tar"]);
        assert_eq!(writes("tar czf /tmp/k.tgz -C / etc"), ["/tmp/k.tgz"]);
        assert_eq!(writes("tar cCf / k.tar etc"), ["k.tar"]);
        assert_eq!(writes("unzip -o a.zip conf/x"), ["conf/x"]);
        assert_eq!(writes("unzip a.zip -d out conf/x"), ["out/conf/x"]);
    }

    #[test]
    fn git_path_writes() {
        assert_eq!(writes("git checkout -- conf/x"), ["conf/x"]);
        assert_eq!(writes("git checkout HEAD~1 conf/x"), ["conf/x"]);
        assert_eq!(writes("git checkout main"), Vec::<String>::new());
        assert_eq!(writes("git checkout -b topic"), Vec::<String>::new());
        assert_eq!(writes("git restore conf/x"), ["conf/x"]);
        assert_eq!(writes("git restore --source HEAD~1 conf/x"), ["conf/x"]);
        assert_eq!(writes("git mv a conf/x"), ["-a", "conf/x"]);
        assert_eq!(writes("git rm conf/x"), ["-conf/x"]);
        assert_eq!(writes("git rm --cached conf/x"), Vec::<String>::new());
        assert_eq!(writes("git clean -fd conf"), ["-conf"]);
        assert_eq!(writes("git clean -nd conf"), Vec::<String>::new());
        assert_eq!(writes("git config core.pager x"), [".git/config"]);
        assert_eq!(
            writes("git config --global core.editor x"),
            ["~/.gitconfig"]
        );
        assert_eq!(writes("git config -f cfg a.b c"), ["cfg"]);
        assert_eq!(writes("git config user.email a@b"), Vec::<String>::new());
        assert_eq!(
            writes("git config --global color.ui auto"),
            Vec::<String>::new()
        );
        assert_eq!(
            writes("git config remote.origin.url https://x"),
            [".git/config"]
        );
        assert_eq!(writes("git config --get core.pager"), Vec::<String>::new());
        assert_eq!(writes("git config --list"), Vec::<String>::new());
        assert_eq!(writes("git -C sub config a.b c"), ["sub/.git/config"]);
    }
}
