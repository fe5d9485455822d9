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
    (&["diff", "sdiff", "diff3"], &["--from-file", "--to-file", "-X", "--exclude-from"]),
    (&["file"], &["-m", "--magic-file", "-f", "--files-from"]),
    (&["grep", "egrep", "fgrep", "rg", "ag", "ack", "git-grep"], &["-f", "--file", "--exclude-from", "--ignore-file"]),
    (&["wc", "du", "sort"], &["--files0-from"]),
    (&["du"], &["-X", "--exclude-from"]),
    (&["jq", "gojq", "jaq"], &["-f", "--from-file"]),
    (&["wget"], &["--post-file", "--body-file", "-i", "--input-file"]),
    (&["curl"], &["-K", "--config"]),
    (&["az"], &["-f", "--file"]),
    (&["gh"], &["--body-file", "--input"]),
    (&["mail", "mailx", "mutt", "s-nail"], &["-A", "-a", "--attach"]),
    (&["kubectl", "oc"], &["-f", "--filename", "--from-env-file"]),
    (&["dig"], &["-f", "-k"]),
];

/// Value-taking options of the programs whose operands are files they read, so that a
/// value is not mistaken for a file and, more to the point, a file not for a value.
/// `None`: not known; every non-option word is then taken as a file.
#[rustfmt::skip]
pub(super) fn reader_value_flags(prog: &str) -> Option<&'static [&'static str]> {
    Some(match prog {
        "cat" | "wc" | "md5sum" | "sha1sum" | "sha256sum" | "sha512sum" | "b2sum" | "shasum"
        | "md5" | "sum" | "source" | "." | "rev" | "pv" | "comm" | "join" | "look" => &[],
        "head" | "tail" => &["-n", "-c", "--lines", "--bytes", "-s", "--sleep-interval", "--pid"],
        "tac" => &["-s", "--separator"],
        "nl" => &["-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"],
        "less" => &["-b", "-h", "-j", "-p", "-P", "-t", "-T", "-x", "-y", "-z", "-o", "-O", "-k", "--log-file", "--pattern", "--tag"],
        "more" => &["-n"],
        "bat" | "batcat" => &["-l", "--language", "-H", "--highlight-line", "-r", "--line-range", "--style", "--theme", "--tabs", "--terminal-width", "--wrap", "--map-syntax", "--file-name", "--pager", "--decorations", "--color", "--paging", "--italic-text"],
        "strings" => &["-n", "-t", "-e", "-T", "--bytes", "--radix", "--encoding", "--target"],
        "od" => &["-A", "-j", "-N", "-t", "-w", "-S", "--address-radix", "--skip-bytes", "--read-bytes", "--format", "--width", "--strings"],
        "hexdump" => &["-n", "-s", "-e"],
        "xxd" => &["-c", "-g", "-l", "-s", "-o", "-n", "-cols", "-groupsize", "-len", "-seek", "-name"],
        "base64" => &["-w", "--wrap"],
        "cksum" => &["-a", "--algorithm", "-l", "--length"],
        "file" => &["-m", "-e", "-F", "-P", "--magic-file", "--exclude", "--separator", "--parameter"],
        "stat" => &["-c", "--format", "--printf"],
        "diff" => &["-C", "-U", "-I", "-x", "-X", "-W", "-F", "-D", "-L", "-S", "--label", "--ignore-matching-lines", "--exclude", "--exclude-from", "--width", "--show-function-line", "--ifdef", "--starting-file", "--context", "--unified", "--line-format", "--from-file", "--to-file", "--color", "--palette", "--horizon-lines", "--tabsize"],
        "cmp" => &["-i", "-n", "--ignore-initial", "--bytes"],
        "sort" => &["-k", "-t", "-o", "-S", "-T", "--key", "--field-separator", "--output", "--buffer-size", "--temporary-directory", "--parallel", "--batch-size", "--compress-program", "--files0-from", "--random-source"],
        "uniq" => &["-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"],
        "cut" => &["-b", "-c", "-d", "-f", "--bytes", "--characters", "--delimiter", "--fields", "--output-delimiter"],
        "paste" => &["-d", "--delimiters"],
        "column" => &["-c", "-s", "-o", "-N", "-W", "-H", "-R", "-T", "-E", "-d", "-r", "-l", "--output-width", "--separator", "--output-separator", "--table-columns", "--table-wrap", "--table-hide", "--table-right", "--table-truncate", "--table-noextreme", "--table-order", "--table-name"],
        "fold" | "fmt" => &["-w", "--width", "-p", "--prefix", "-g", "--goal"],
        "expand" | "unexpand" => &["-t", "--tabs"],
        "pr" => &["-e", "-h", "-i", "-l", "-n", "-o", "-s", "-S", "-w", "-W", "-N", "--header", "--length", "--width"],
        "iconv" => &["-f", "-t", "-o", "--from-code", "--to-code", "--output"],
        "gpg" => &["-r", "-u", "-o", "-z", "--recipient", "--local-user", "--output", "--homedir", "--default-key", "--passphrase", "--trust-model", "--cipher-algo", "--digest-algo", "--compress-algo", "--keyserver"],
        "zcat" | "gunzip" | "bzcat" | "xzcat" => &["-S", "--suffix"],
        "ls" => &["-I", "--ignore", "-w", "--width", "-T", "--tabsize", "--block-size", "--format", "--hide", "--indicator-style", "--quoting-style", "--sort", "--time", "--time-style", "--color"],
        "tree" => &["-L", "-P", "-I", "-o", "--filelimit", "--timefmt", "--sort", "--charset", "-H", "-T"],
        "du" => &["-d", "--max-depth", "-B", "--block-size", "-t", "--threshold", "--exclude", "-X", "--exclude-from", "--time-style"],
        "split" | "csplit" => &["-l", "-b", "-C", "-n", "-a", "-t", "-f", "--lines", "--bytes", "--line-bytes", "--number", "--suffix-length", "--additional-suffix", "--separator", "--prefix", "--suffix-format", "--digits"],
        "mail" | "mailx" | "mutt" => &["-s", "-c", "-b", "-r", "-S", "-e"],
        _ => return None,
    })
}

/// Files `prog` reads through its options or (for git) its object names and pathspecs.
pub(super) fn extra_reads(prog: &str, args: &[Field]) -> Vec<Field> {
    let mut out = Vec::new();
    for (_, options) in READ_OPTIONS.iter().filter(|(p, _)| p.contains(&prog)) {
        option_values(args, options, &mut out);
    }
    if prog == "git" {
        git_reads(args, &mut out);
    }
    match prog {
        // `aws … --x file://PATH`, `fileb://PATH`; `aws s3 cp/mv/sync` local operands.
        "aws" => {
            for w in args {
                if let Some(p) = w
                    .text
                    .strip_prefix("file://")
                    .or_else(|| w.text.strip_prefix("fileb://"))
                {
                    out.push(part(w, p));
                }
            }
            if args.first().is_some_and(|w| w.text == "s3") {
                out.extend(local_operands(args.get(2..).unwrap_or(&[]), &["s3://"]));
            }
        }
        "gsutil" => out.extend(local_operands(args.get(1..).unwrap_or(&[]), &["gs://"])),
        "gcloud" => {
            if let Some(k) = args.iter().position(|w| w.text == "storage") {
                out.extend(local_operands(args.get(k + 2..).unwrap_or(&[]), &["gs://"]));
            }
        }
        // `docker cp SRC CTR:DST`, `kubectl cp SRC POD:DST`: a source without `:` is local.
        "docker" | "podman" | "kubectl" | "oc"
            if args
                .iter()
                .find(|w| !w.text.starts_with('-'))
                .is_some_and(|w| w.text == "cp") =>
        {
            out.extend(
                local_operands(args, &[])
                    .into_iter()
                    .filter(|w| w.text != "cp" && !w.text.contains(':')),
            );
        }
        // `kubectl create secret generic x --from-file=[KEY=]PATH`.
        "kubectl" | "oc" => {
            for w in args {
                if let Some(v) = w.text.strip_prefix("--from-file=") {
                    let path = v.split_once('=').map_or(v, |(_, p)| p);
                    out.push(part(w, path));
                }
            }
        }
        // `gh gist create FILES`, `gh release upload TAG FILES`, `gh api -F k=@FILE`.
        "gh" => {
            let words: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
            if words.starts_with(&["gist", "create"]) {
                out.extend(local_operands(&args[2..], &[]));
            } else if words.starts_with(&["release", "upload"]) {
                out.extend(local_operands(&args[2..], &[]).into_iter().skip(1));
            }
            for (i, w) in args.iter().enumerate() {
                if let Some((_, p)) = w.text.split_once("=@") {
                    out.push(part(w, p));
                } else if w.text == "-F"
                    && let Some(v) = args.get(i + 1).filter(|v| !v.text.contains('='))
                {
                    // `gh pr create -F FILE` (the body); `gh api -F k=v` is a field.
                    out.push(v.clone());
                }
            }
        }
        _ => {}
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

/// The operands of `args` that are not remote (`s3://…`), options or option values.
fn local_operands(args: &[Field], remote: &[&str]) -> Vec<Field> {
    args.iter()
        .filter(|w| !w.text.starts_with('-') && !remote.iter().any(|r| w.text.starts_with(r)))
        .cloned()
        .collect()
}

/// The first value of any of `options` (`-C DIR`, `-CDIR`, `--directory=DIR`).
pub(super) fn option_value_of(args: &[Field], options: &[&str]) -> Option<Field> {
    let mut v = Vec::new();
    option_values(args, options, &mut v);
    v.into_iter().next()
}

/// Values of `options` in every spelling: `-f FILE`, `-fFILE`, `--file=FILE`, `--file FILE`.
pub(crate) fn option_values(args: &[Field], options: &[&str], out: &mut Vec<Field>) {
    out.extend(crate::argv::values_of(args, options));
}

/// git's subcommand and the words after it, past the global options (`-C DIR`, `-c K=V`).
pub(crate) fn git_subcommand(args: &[Field]) -> Option<(&str, &[Field])> {
    let i = crate::grammars::git_subcommand_index(args)?;
    Some((args[i].text.as_str(), &args[i + 1..]))
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
    let Some((sub, rest)) = git_subcommand(args) else {
        return;
    };
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
    // Staging a file copies it into the repository, from where a push sends it out; a
    // commit message read from a file (`-F FILE`) is printed by every `git log`.
    if matches!(sub, "add" | "commit" | "stash") {
        const VALUES: &[&str] = &[
            "-m",
            "--message",
            "-c",
            "-C",
            "--reuse-message",
            "--reedit-message",
            "--author",
            "--date",
            "--fixup",
            "--squash",
            "-t",
            "--template",
            "--trailer",
            "--cleanup",
            "--chmod",
        ];
        let mut k = 0;
        while k < rest.len() {
            let a = rest[k].text.as_str();
            if a == "--" {
                out.extend(rest[k + 1..].iter().cloned());
                break;
            }
            if VALUES.contains(&a) {
                k += 1;
            } else if matches!(a, "-F" | "--file" | "--pathspec-from-file") {
                out.extend(rest.get(k + 1).cloned());
                k += 1;
            } else if !a.starts_with('-') && sub != "stash" {
                out.push(rest[k].clone());
            }
            k += 1;
        }
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
        assert_eq!(reads("date -uf k"), ["k"]);
        assert_eq!(reads("grep -rif k x"), ["k"]);
        assert_eq!(reads("grep -ifk x"), ["k"]);
        assert_eq!(reads("file -m k x"), ["k"]);
        assert_eq!(reads("du -X k --files0-from=l"), ["l", "k"]);
        assert_eq!(reads("jq -n --rawfile k /etc/shadow $k"), ["/etc/shadow"]);
        assert_eq!(reads("jq -f prog.jq in.json"), ["prog.jq"]);
        assert_eq!(reads("dig -f names.txt"), ["names.txt"]);
        assert_eq!(reads("wget --post-file=k http://x"), ["k"]);
        assert_eq!(reads("curl -K cfg http://x"), ["cfg"]);
        assert_eq!(reads("aws s3 cp k s3://b/"), ["k"]);
        assert_eq!(reads("aws s3 cp s3://b/k ."), ["."]);
        assert_eq!(
            reads("aws secretsmanager create-secret --secret-string file://k"),
            ["k"]
        );
        assert_eq!(reads("gsutil cp k gs://b"), ["k"]);
        assert_eq!(reads("gcloud storage cp k gs://b"), ["k"]);
        assert_eq!(reads("docker cp k c:/x"), ["k"]);
        assert_eq!(reads("kubectl cp k pod:/x"), ["k"]);
        assert_eq!(
            reads("kubectl create secret generic s --from-file=key=k"),
            ["k"]
        );
        assert_eq!(reads("gh gist create k"), ["k"]);
        assert_eq!(reads("gh release upload v1 k"), ["k"]);
        assert_eq!(reads("gh api /x -F f=@k"), ["k"]);
        assert_eq!(reads("gh pr create -F body.md"), ["body.md"]);
        assert_eq!(reads("mail -A k a@b"), ["k"]);
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
        assert_eq!(reads("git add .env src"), [".env", "src"]);
        assert_eq!(
            reads("git commit -m msg -F notes.txt a.rs"),
            ["notes.txt", "a.rs"]
        );
        assert_eq!(reads("git stash push -m x -- .env"), [".env"]);
    }
}
