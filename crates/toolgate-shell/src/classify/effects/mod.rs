//! What a command does to files and the network, from per-program argument grammars:
//! which operands it reads, writes and deletes, where redirects go, which hosts it reaches.

mod programs;
mod tables;

use crate::feed::DOWNLOADERS;
use crate::paths::resolve_word;
use crate::types::Context;
use crate::walk::Rec;
use crate::words::Field;
use std::path::{Path, PathBuf};
use toolgate_protocol::Access;

use programs::*;
use tables::{LISTERS, PATTERN_READERS, READERS};

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
        let placeholder = f.text.ends_with("*…") || f.text.ends_with("*\u{22ef}");
        // A name from a list file is only trusted to be below the working directory for
        // reading (see `builtins::LIST_FILE_NAME`).
        let path = if f.text.ends_with("*\u{22ef}") && access != Access::Read {
            None
        } else {
            path
        };
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
            Some(p) => {
                let classes = crate::paths::classes(p, ctx);
                let kind = |e: Option<&'static toolgate_protocol::paths::PathClassEntry>| {
                    e.map(|e| e.kind)
                };
                let secret = match &pattern {
                    Some(pat) => crate::paths::secret_kind(pat, ctx)
                        .or_else(|| crate::flow::glob_secret(pat, ctx)),
                    None => kind(classes.secret),
                };
                (
                    crate::paths::inside_roots(p, &ctx.roots, &ctx.cwd),
                    kind(classes.protected),
                    secret,
                    kind(classes.personal),
                )
            }
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
            fx_deletes(&mut fx, rec, ctx, args)
        }
        "find" => fx_find(&mut fx, rec, ctx),
        "mv" | "cp" | "ln" | "install" | "rsync" | "scp" | "rclone" => {
            fx_copies(&mut fx, rec, ctx, args)
        }
        "tee" | "touch" | "mkdir" | "truncate" | "mkfifo" | "mknod" => {
            fx_creates(&mut fx, rec, ctx, args)
        }
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" | "chflags" => {
            fx_perms(&mut fx, rec, ctx, args)
        }
        "dd" => fx_dd(&mut fx, rec, ctx, args),
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
            fx_in_place(&mut fx, rec, ctx, args)
        }
        "curl" => fx_curl(&mut fx, rec, ctx, args),
        p if PATTERN_READERS.contains(&p) => fx_searches(&mut fx, rec, ctx, args, p),
        p if READERS.contains(&p) => fx_reads(&mut fx, rec, ctx, args, p),
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
    for f in crate::classify::reads::extra_reads(prog, args) {
        fx.add(rec, ctx, &f, Access::Read, false);
    }
    for (f, access) in crate::classify::writes::extra_writes(prog, args) {
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
