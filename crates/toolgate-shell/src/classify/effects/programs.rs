//! What each family of programs does to its operands: deletions, copies, creations,
//! permission changes, `dd`, in-place editors, curl's uploads, searches and plain reads.

use toolgate_protocol::Access;

use super::tables::*;
use super::{Effects, operands};
use crate::nested::{find_placeholder, parse_find};
use crate::types::Context;
use crate::walk::Rec;
use crate::words::Field;

/// Deletions: `rm`, `unlink`, `shred`, `rmdir` and friends (recursive with `-r`).
pub(super) fn fx_deletes(fx: &mut Effects, rec: &Rec, ctx: &Context, args: &[Field]) {
    let prog = rec.program.as_str();

    let recursive = prog != "rmdir"
        && (has_short(args, 'r') || has_short(args, 'R') || has_long(args, &["--recursive"]));
    for f in operands(
        args,
        &["-n", "--iterations", "-s", "--size", "--random-source"],
    ) {
        fx.add(rec, ctx, &f, Access::Delete, recursive);
    }
}

/// `find`: the starts are listed; `-delete` deletes below them; `-fprint*` write files.
pub(super) fn fx_find(fx: &mut Effects, rec: &Rec, ctx: &Context) {
    let info = parse_find(&rec.argv);
    for s in &info.starts {
        fx.add(rec, ctx, s, Access::Read, false);
    }
    if info.delete {
        for s in &info.starts {
            let ph = find_placeholder(s, info.filtered);
            // Only files with these names go: the facts say so, so the policy's floor does
            // not read "below D" as "D itself" (`find . -name '*.o' -delete`).
            fx.add(rec, ctx, &ph, Access::Delete, true)
                .only
                .clone_from(&info.names);
        }
    }
    for w in &info.writes {
        fx.add(rec, ctx, w, Access::Write, false);
    }
}

/// Copies, moves and links: sources read (or deleted by `mv`), the destination written (deleted below with `rsync --delete`), remote operands are network facts.
pub(super) fn fx_copies(fx: &mut Effects, rec: &Rec, ctx: &Context, args: &[Field]) {
    let prog = rec.program.as_str();

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
    let remote =
        |f: &Field| f.text.contains(':') && !f.text.starts_with('/') && !f.text.starts_with('.');
    for s in &srcs {
        if remote(s) {
            fx.network.push(s.text.clone());
            continue;
        }
        let moves = prog == "mv" || (prog == "rsync" && has_long(args, &["--remove-source-files"]));
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

/// Files created or changed in place by name: `tee`, `touch`, `mkdir`, `truncate`, `mkfifo`, `mknod`.
pub(super) fn fx_creates(fx: &mut Effects, rec: &Rec, ctx: &Context, args: &[Field]) {
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

/// Permission and ownership changes (the mode or owner operand skipped).
pub(super) fn fx_perms(fx: &mut Effects, rec: &Rec, ctx: &Context, args: &[Field]) {
    let prog = rec.program.as_str();

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
    let skip = usize::from(!has_ref && ops.first().is_some_and(|o| looks_like_mode(&o.text)));
    for f in ops.iter().skip(skip) {
        let u = fx.add(rec, ctx, f, Access::Write, recursive);
        u.perm = true;
    }
}

/// `dd if=… of=…`.
pub(super) fn fx_dd(fx: &mut Effects, rec: &Rec, ctx: &Context, args: &[Field]) {
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

/// In-place editors: `sed -i`, `perl -i`, `ruby -i` write their file operands.
pub(super) fn fx_in_place(fx: &mut Effects, rec: &Rec, ctx: &Context, args: &[Field]) {
    let ops = operands(args, &["-e", "-f", "--expression", "--file"]);
    let has_e = args
        .iter()
        .any(|a| a.text == "-e" || a.text == "--expression");
    for f in ops.iter().skip(usize::from(!has_e)) {
        fx.add(rec, ctx, f, Access::Write, false);
    }
}

/// curl's uploads: `-T FILE`, `-d @FILE`, `-F name=@FILE` / `name=<FILE`. Output files (`-o`, `-O`) are in `writes::extra_writes`, in every spelling.
pub(super) fn fx_curl(fx: &mut Effects, rec: &Rec, ctx: &Context, args: &[Field]) {
    use crate::argv::Item;
    for item in crate::grammars::CURL.parse(args, 0).items {
        let (name, value) = match item {
            Item::Short {
                letter: 'T',
                value: Some(v),
                ..
            } => ("upload-file", v),
            Item::Short {
                letter: 'd',
                value: Some(v),
                ..
            } => ("data", v),
            Item::Short {
                letter: 'F',
                value: Some(v),
                ..
            } => ("form", v),
            Item::Long {
                name,
                value: Some(v),
                ..
            } => (name, v),
            _ => continue,
        };
        let v = value.text.as_str();
        let file = match name {
            "upload-file" => Some(v),
            "data" | "data-ascii" | "data-binary" | "data-raw" | "data-urlencode" | "form"
            | "json" => v
                .split_once('@')
                .or_else(|| v.split_once('<').filter(|_| name == "form"))
                .map(|(_, p)| p.split(';').next().unwrap_or("")),
            _ => None,
        };
        if let Some(p) = file.filter(|p| !p.is_empty() && *p != "-") {
            let u = fx.add(rec, ctx, &Field::lit(p), Access::Read, false);
            u.upload = true;
        }
    }
}

/// Search programs (`grep`, `rg`, `ag`, `ack`, `awk`, `sed`, `jq`, …): the first operand is the pattern unless given by option, the rest are files, searched recursively where the program does; `sed` scripts' own files.
pub(super) fn fx_searches(fx: &mut Effects, rec: &Rec, ctx: &Context, args: &[Field], p: &str) {
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
        let (writes, reads) = crate::sed::sed_files(&rec.argv);
        for w in writes {
            fx.add(rec, ctx, &Field::lit(w), Access::Write, false);
        }
        for r in reads {
            fx.add(rec, ctx, &Field::lit(r), Access::Read, false);
        }
    }
}

/// Programs whose operands are files they read.
pub(super) fn fx_reads(fx: &mut Effects, rec: &Rec, ctx: &Context, args: &[Field], p: &str) {
    let flags = crate::classify::reads::reader_value_flags(p).unwrap_or(&[]);
    let tree = archives_trees(p, args);
    for f in operands(args, flags) {
        if f.text.contains(':') && (p == "scp" || p == "rsync") {
            continue;
        }
        fx.add(rec, ctx, &f, Access::Read, tree);
    }
}
