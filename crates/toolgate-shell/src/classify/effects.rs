//! What a command does to files and the network, from per-program argument grammars:
//! which operands it reads, writes and deletes, where redirects go, which hosts it reaches.

use std::path::{Path, PathBuf};

use toolgate_protocol::Access;

use crate::feed::DOWNLOADERS;
use crate::nested::{find_placeholder, parse_find};
use crate::paths::resolve_word;
use crate::types::Context;
use crate::walk::Rec;
use crate::words::Field;

/// One path a command touches.
#[derive(Debug, Clone)]
pub(crate) struct PathUse {
    /// The word as written (after expansion).
    pub word: String,
    /// Absolute normalised path; `None` when it depends on something unknown. For a glob,
    /// the directory it starts from (the components before the first one with a pattern).
    pub path: Option<PathBuf>,
    /// For a glob, the whole pattern made absolute (`/w/sub/.e*`).
    pub pattern: Option<PathBuf>,
    /// `path` is `None` because the word depends on something the analyzer cannot see (an
    /// unknown variable, a substitution it cannot evaluate), not because it is a process
    /// substitution (whose command is analysed on its own).
    pub unresolved: bool,
    /// How it is touched.
    pub access: Access,
    /// Recursive (`rm -r`, `chmod -R`, `mv` of a directory, `grep -r`, `tar c`): what lies
    /// beneath a directory is touched the same way.
    pub recursive: bool,
    /// A recursive use that leaves hidden (dot-named) and ignored entries alone (`rg`,
    /// `ag`).
    pub visible_only: bool,
    /// A recursive use limited to files with these name globs (`grep --include`).
    pub only: Vec<String>,
    /// The word is an unquoted glob.
    pub glob: bool,
    /// Its contents are sent over the network (`curl -d @f`, `scp f host:`).
    pub upload: bool,
    /// A permission or ownership change rather than a content write.
    pub perm: bool,
    /// Inside the session's roots.
    pub inside: bool,
    /// Protected-path kind, if any.
    pub protected: Option<&'static str>,
    /// Secret kind, if any.
    pub secret: Option<&'static str>,
    /// Personal-data kind, if any.
    pub personal: Option<&'static str>,
    /// The target of a redirection (`> f`) rather than something the program itself opens.
    pub redirect: bool,
    /// Only the name and metadata are read (`ls`, `stat`, `du`, `find`'s start points), not
    /// the contents: listing `~/.aws` reads no credential.
    pub list: bool,
}

/// Everything a command touches.
#[derive(Debug, Clone, Default)]
pub(crate) struct Effects {
    /// Paths.
    pub paths: Vec<PathUse>,
    /// URLs and hosts.
    pub network: Vec<String>,
}

impl Effects {
    fn add(
        &mut self,
        rec: &Rec,
        ctx: &Context,
        f: &Field,
        access: Access,
        recursive: bool,
    ) -> &mut PathUse {
        let path = if f.procsub.is_some() {
            None
        } else if f.dynamic {
            crate::paths::resolve_env_word(&f.text, rec.cwd.as_deref(), ctx.home.as_deref())
        } else {
            resolve_word(&f.text, rec.cwd.as_deref(), ctx.home.as_deref())
        };
        // A glob stands for the files it matches: the rules judge the directory it starts
        // from (`rm -rf /*` deletes in `/`), the facts carry the whole pattern so the policy
        // expands it against the file system, and a pattern that can match a credentials
        // file is a read of one (`cat sub/.e*`). Never the literal prefix of a name.
        // `D/*…` stands for a file somewhere below D (a name from a listing, a `find -exec`
        // match): everything below D, not a pattern to expand.
        let placeholder = f.text.ends_with("*…");
        // A pattern character kept by quoting (`"$@"` of `set -- lib/*.go`) still matches
        // files when the word came from a glob; read as one, the analysis can only widen.
        let glob = f.glob || (!placeholder && f.text.contains(['*', '?']));
        let recursive = recursive || placeholder;
        let (path, pattern) = match path {
            Some(p) if placeholder => (Some(glob_base(&p)), None),
            Some(p) if glob => (Some(glob_base(&p)), Some(p)),
            p => (p, None),
        };
        let (inside, protected, secret, personal) = match &path {
            Some(p) => (
                crate::paths::inside_roots(p, &ctx.roots, &ctx.cwd),
                crate::paths::protected_kind(p),
                match &pattern {
                    Some(pat) => {
                        crate::paths::secret_kind(pat).or_else(|| crate::flow::glob_secret(pat))
                    }
                    None => crate::paths::secret_kind(p),
                },
                crate::paths::personal_kind(p, ctx.home.as_deref()),
            ),
            None => (false, None, None, None),
        };
        self.paths.push(PathUse {
            word: f.text.clone(),
            unresolved: path.is_none() && f.procsub.is_none(),
            path,
            pattern,
            access,
            recursive,
            visible_only: false,
            only: Vec::new(),
            glob,
            upload: false,
            perm: false,
            inside,
            protected,
            secret,
            personal,
            redirect: false,
            list: false,
        });
        let n = self.paths.len() - 1;
        &mut self.paths[n]
    }
}

/// The leading components of a glob pattern that hold no pattern character: the directory
/// the shell starts matching from (`/w/sub/.e*` → `/w/sub`, `/w/*/.env` → `/w`).
fn glob_base(pattern: &Path) -> PathBuf {
    let mut base = PathBuf::new();
    for c in pattern.components() {
        if c.as_os_str().to_string_lossy().contains(['*', '?', '[']) {
            break;
        }
        base.push(c);
    }
    if base.as_os_str().is_empty() {
        PathBuf::from("/")
    } else {
        base
    }
}

/// Operands of a command (`args` without the program) when `value_flags` take a value,
/// read with the one getopt reader ([`crate::argv::operand_indices`]).
pub(crate) fn operands(args: &[Field], value_flags: &[&str]) -> Vec<Field> {
    crate::argv::operand_indices(args, value_flags)
        .into_iter()
        .map(|i| args[i].clone())
        .collect()
}

fn has_short(args: &[Field], c: char) -> bool {
    args.iter().take_while(|a| a.text != "--").any(|a| {
        a.text.len() > 1
            && a.text.starts_with('-')
            && !a.text.starts_with("--")
            && a.text[1..].contains(c)
    })
}

fn has_long(args: &[Field], names: &[&str]) -> bool {
    args.iter().any(|a| {
        names
            .iter()
            .any(|n| a.text == *n || a.text.strip_prefix(n).is_some_and(|r| r.starts_with('=')))
    })
}

fn long_value<'a>(args: &'a [Field], names: &[&str]) -> Option<&'a Field> {
    args.iter().enumerate().find_map(|(i, a)| {
        names
            .contains(&a.text.as_str())
            .then(|| args.get(i + 1))
            .flatten()
    })
}

/// Programs whose operands are files they read.
const READERS: &[&str] = &[
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
const LISTERS: &[&str] = &[
    "ls", "dir", "vdir", "exa", "eza", "lsd", "tree", "du", "stat", "find", "realpath", "readlink",
    "basename", "dirname", "test", "[", "lsattr", "getfacl", "namei",
];

/// Programs whose first operand is a pattern/program and the rest are files.
const PATTERN_READERS: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk", "sed", "jq", "yq",
];

/// How much of a directory operand a search program reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tree {
    /// Every file below it.
    All,
    /// Every file below it but hidden and ignored ones, as `rg` walks by default.
    Visible,
}

/// Whether `grep`/`rg`/`ag`/`ack` with these arguments search directories recursively:
/// `grep` only with `-r`/`-R` (or `-d recurse`), the others always. `rg` and `ag` skip
/// hidden and ignored files unless told otherwise (`rg --hidden`, `-.`, `-u`,
/// `--no-ignore…`; `ag --hidden`, `-u`, `-U`). Name limits are [`name_filters`].
fn searches_trees(prog: &str, args: &[Field]) -> Option<Tree> {
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
fn name_filters(prog: &str, args: &[Field]) -> Vec<String> {
    let (flags, attached): (&[&str], &[&str]) = match prog {
        "grep" | "egrep" | "fgrep" => (&["--include"], &["--include="]),
        "rg" => (&["-g", "--glob"], &["--glob=", "-g"]),
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            break;
        }
        let value = if flags.contains(&t) {
            i += 1;
            args.get(i).map(|f| f.text.as_str())
        } else {
            attached
                .iter()
                .find_map(|p| t.strip_prefix(p).filter(|v| !v.is_empty()))
        };
        match value {
            Some(v) if prog == "rg" && v.starts_with('!') => {}
            Some(v) if v.is_empty() || v.contains('/') => return Vec::new(),
            Some(v) => out.push(v.to_owned()),
            None => {}
        }
        i += 1;
    }
    out
}

/// Whether `cp`, `scp`, `rsync` and friends copy (or `mv` moves) whole directories.
fn copies_trees(prog: &str, args: &[Field]) -> bool {
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
fn archives_trees(prog: &str, args: &[Field]) -> bool {
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

/// Computes the effects of one record.
pub(crate) fn effects(rec: &Rec, ctx: &Context) -> Effects {
    let mut fx = Effects::default();
    let prog = rec.program.as_str();
    let args: &[Field] = rec.argv.get(1..).unwrap_or(&[]);
    for r in &rec.redirects {
        if r.write && !r.target.text.is_empty() {
            fx.add(rec, ctx, &r.target, Access::Write, false).redirect = true;
        } else if r.read && !r.target.text.is_empty() && r.target.procsub.is_none() {
            fx.add(rec, ctx, &r.target, Access::Read, false).redirect = true;
        }
    }
    for r in &rec.extra_reads {
        fx.add(rec, ctx, &Field::lit(r.clone()), Access::Read, false);
    }
    for w in &rec.extra_writes {
        fx.add(rec, ctx, &Field::lit(w.clone()), Access::Write, false);
    }
    match prog {
        "rm" | "unlink" | "srm" | "trash" | "trash-put" | "shred" | "rmdir" => {
            let recursive = prog != "rmdir"
                && (has_short(args, 'r')
                    || has_short(args, 'R')
                    || has_long(args, &["--recursive"]));
            for f in operands(
                args,
                &["-n", "--iterations", "-s", "--size", "--random-source"],
            ) {
                fx.add(rec, ctx, &f, Access::Delete, recursive);
            }
        }
        "find" => {
            let info = parse_find(&rec.argv);
            // Listing a tree reads its names, as `ls DIR` does.
            for s in &info.starts {
                fx.add(rec, ctx, s, Access::Read, false);
            }
            if info.delete {
                for s in &info.starts {
                    let ph = find_placeholder(s, info.filtered);
                    fx.add(rec, ctx, &ph, Access::Delete, true);
                }
            }
            for w in &info.writes {
                fx.add(rec, ctx, w, Access::Write, false);
            }
        }
        "mv" | "cp" | "ln" | "install" | "rsync" | "scp" | "rclone" => {
            let target_dir = long_value(args, &["-t", "--target-directory"]).cloned();
            let ops = operands(
                args,
                &[
                    "-t",
                    "--target-directory",
                    "-S",
                    "--suffix",
                    "-m",
                    "--mode",
                    "-o",
                    "--owner",
                    "-g",
                    "--group",
                    "-e",
                    "-P",
                    "-i",
                    "-F",
                    "-l",
                    "-c",
                    "--exclude",
                    "--include",
                    "--filter",
                ],
            );
            let (srcs, dest) = match target_dir {
                Some(t) => (ops, Some(t)),
                None if ops.len() >= 2 => (ops[..ops.len() - 1].to_vec(), ops.last().cloned()),
                None => (Vec::new(), None),
            };
            let remote = |f: &Field| {
                f.text.contains(':') && !f.text.starts_with('/') && !f.text.starts_with('.')
            };
            for s in &srcs {
                if remote(s) {
                    fx.network.push(s.text.clone());
                    continue;
                }
                let moves =
                    prog == "mv" || (prog == "rsync" && has_long(args, &["--remove-source-files"]));
                let access = if moves { Access::Delete } else { Access::Read };
                let up = dest.as_ref().is_some_and(remote);
                let u = fx.add(rec, ctx, s, access, copies_trees(prog, args));
                u.upload = up;
            }
            if let Some(d) = dest {
                if remote(&d) {
                    fx.network.push(d.text.clone());
                } else {
                    let dry = has_short(args, 'n') || has_long(args, &["--dry-run"]);
                    let del = prog == "rsync"
                        && !dry
                        && has_long(
                            args,
                            &[
                                "--delete",
                                "--del",
                                "--delete-before",
                                "--delete-after",
                                "--delete-during",
                                "--delete-excluded",
                                "--delete-delay",
                            ],
                        );
                    fx.add(
                        rec,
                        ctx,
                        &d,
                        if del { Access::Delete } else { Access::Write },
                        false,
                    );
                }
            }
        }
        "tee" | "touch" | "mkdir" | "truncate" | "mkfifo" | "mknod" => {
            for f in operands(
                args,
                &[
                    "-s",
                    "--size",
                    "-m",
                    "--mode",
                    "-r",
                    "--reference",
                    "-d",
                    "--date",
                    "-t",
                ],
            ) {
                fx.add(rec, ctx, &f, Access::Write, false);
            }
        }
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" | "chflags" => {
            let recursive = has_short(args, 'R') || has_long(args, &["--recursive"]);
            let ops = operands(args, &["--reference", "-m", "-x", "-M", "-X"]);
            let looks_like_mode = |t: &str| {
                !t.is_empty()
                    && (t.chars().all(|c| c.is_ascii_digit())
                        || t.chars().all(|c| "ugoarwxXstl+-=,0123456789".contains(c))
                            && t.contains(['+', '-', '='])
                        || (prog != "chmod"
                            && !t.starts_with('/')
                            && !t.starts_with('.')
                            && !t.starts_with('~')
                            && t != "*"))
            };
            let has_ref = args.iter().any(|a| a.text.starts_with("--reference"));
            let skip =
                usize::from(!has_ref && ops.first().is_some_and(|o| looks_like_mode(&o.text)));
            for f in ops.iter().skip(skip) {
                let u = fx.add(rec, ctx, f, Access::Write, recursive);
                u.perm = true;
            }
        }
        "dd" => {
            for a in args {
                if let Some(v) = a.text.strip_prefix("of=") {
                    fx.add(
                        rec,
                        ctx,
                        &Field {
                            text: v.to_owned(),
                            ..a.clone()
                        },
                        Access::Write,
                        false,
                    );
                } else if let Some(v) = a.text.strip_prefix("if=") {
                    fx.add(
                        rec,
                        ctx,
                        &Field {
                            text: v.to_owned(),
                            ..a.clone()
                        },
                        Access::Read,
                        false,
                    );
                }
            }
        }
        "sed" | "perl" | "ruby"
            if args.iter().any(|a| {
                a.text == "-i"
                    || a.text.starts_with("-i")
                    || a.text.starts_with("--in-place")
                    || (a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && a.text.contains('i')
                        && prog != "sed")
            }) =>
        {
            let ops = operands(args, &["-e", "-f", "--expression", "--file"]);
            let has_e = args
                .iter()
                .any(|a| a.text == "-e" || a.text == "--expression");
            for f in ops.iter().skip(usize::from(!has_e)) {
                fx.add(rec, ctx, f, Access::Write, false);
            }
        }
        // Output files (`-o`, `-O`) are in `writes::extra_writes`, in every spelling.
        "curl" => {
            for (i, a) in args.iter().enumerate() {
                let t = a.text.as_str();
                // `-T FILE` / `-TFILE`; `-d @FILE` / `-d@FILE`; `-F name=@FILE` / `name=<FILE`.
                let (name, attached) = match t.get(..2) {
                    Some(short @ ("-T" | "-d" | "-F")) if t.len() > 2 => (short, Some(&t[2..])),
                    _ => (t, None),
                };
                let value = || attached.or_else(|| args.get(i + 1).map(|f| f.text.as_str()));
                let file = if matches!(name, "-T" | "--upload-file") {
                    value().map(str::to_owned)
                } else if matches!(
                    name,
                    "-d" | "--data"
                        | "--data-binary"
                        | "--data-raw"
                        | "--data-urlencode"
                        | "-F"
                        | "--form"
                        | "--json"
                ) {
                    value().and_then(|v| {
                        v.split_once('@')
                            .or_else(|| {
                                v.split_once('<')
                                    .filter(|_| matches!(name, "-F" | "--form"))
                            })
                            .map(|(_, p)| p.split(';').next().unwrap_or("").to_owned())
                    })
                } else {
                    None
                };
                if let Some(p) = file.filter(|p| !p.is_empty() && p != "-") {
                    let u = fx.add(rec, ctx, &Field::lit(p), Access::Read, false);
                    u.upload = true;
                }
            }
        }
        p if PATTERN_READERS.contains(&p) => {
            let explicit = args.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "-e" | "-f" | "--regexp" | "--file" | "--expression"
                )
            });
            let ops = operands(
                args,
                &[
                    "-e",
                    "-f",
                    "-m",
                    "-A",
                    "-B",
                    "-C",
                    "-g",
                    "-t",
                    "-T",
                    "--type",
                    "--glob",
                    "-F",
                    "-v",
                    "--arg",
                    "--argjson",
                    "--max-count",
                    "-d",
                    "--include",
                    "--exclude",
                ],
            );
            let tree = searches_trees(p, args);
            let only = if tree.is_some() {
                name_filters(p, args)
            } else {
                Vec::new()
            };
            let files = &ops[usize::from(!explicit).min(ops.len())..];
            for f in files {
                let u = fx.add(rec, ctx, f, Access::Read, tree.is_some());
                u.visible_only = tree == Some(Tree::Visible);
                u.only.clone_from(&only);
            }
            // Without a file, `grep -r` searches the working directory, and so do `rg`,
            // `ag` and `ack` unless their input is piped or redirected in.
            let stdin_fed = rec.stage > 0
                || rec.stdin.is_some()
                || rec.fed.is_some()
                || rec
                    .redirects
                    .iter()
                    .any(|r| r.read && r.public.fd.is_none_or(|fd| fd == 0));
            if let Some(tree) = tree
                && files.is_empty()
                && (p.ends_with("grep") || !stdin_fed)
            {
                let u = fx.add(rec, ctx, &Field::lit("."), Access::Read, true);
                u.visible_only = tree == Tree::Visible;
                u.only = only;
            }
            if p == "sed" {
                // `w FILE`, `s///w FILE`, `r FILE` inside the script.
                let (writes, reads) = crate::sed::sed_files(&rec.argv);
                for w in writes {
                    fx.add(rec, ctx, &Field::lit(w), Access::Write, false);
                }
                for r in reads {
                    fx.add(rec, ctx, &Field::lit(r), Access::Read, false);
                }
            }
        }
        p if READERS.contains(&p) => {
            // With the program's own list of value-taking options, their values are skipped;
            // for a program without one, every word that is not an option is a possible file
            // (skipping a guessed value could skip the file: `diff -i .env x`).
            let flags = super::reads::reader_value_flags(p).unwrap_or(&[]);
            let tree = archives_trees(p, args);
            for f in operands(args, flags) {
                if f.text.contains(':') && (p == "scp" || p == "rsync") {
                    continue;
                }
                fx.add(rec, ctx, &f, Access::Read, tree);
            }
        }
        _ => {}
    }
    if LISTERS.contains(&prog) {
        for u in fx
            .paths
            .iter_mut()
            .filter(|u| u.access == Access::Read && !u.redirect)
        {
            u.list = true;
        }
    }
    for f in super::reads::extra_reads(prog, args) {
        fx.add(rec, ctx, &f, Access::Read, false);
    }
    for (f, access) in super::writes::extra_writes(prog, args) {
        fx.add(rec, ctx, &f, access, false);
    }
    if DOWNLOADERS.contains(&prog)
        || matches!(
            prog,
            "sftp" | "rsync" | "scp" | "git" | "gh" | "aws" | "gcloud" | "az" | "gsutil"
        )
    {
        for a in args {
            let t = a.text.as_str();
            if t.contains("://")
                || (matches!(prog, "ssh" | "sftp")
                    && !t.starts_with('-')
                    && !fx.network.iter().any(|n| n == t))
            {
                fx.network.push(t.to_owned());
                if matches!(prog, "ssh" | "sftp") {
                    break;
                }
            }
        }
        if matches!(prog, "nc" | "ncat" | "netcat" | "telnet" | "socat")
            && let Some(h) = operands(
                args,
                &["-p", "-s", "-w", "-e", "-c", "-i", "-q", "-x", "-X"],
            )
            .first()
        {
            fx.network.push(h.text.clone());
        }
    }
    fx
}
