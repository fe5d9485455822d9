//! Single tools with a command option outside the generic table: `tar
//! --checkpoint-action=exec=`, `less +CMD` / `vim +CMD`, `strace -o '|CMD'`, `zip -TT`, `fd -x`.

use crate::argv::{part, split_long};
use crate::words::Field;

use super::*;

/// `tar --checkpoint-action=exec=CMD` and old-style bundled options (`tar cIf …`).
pub(super) fn tar_extra(argv: &[Field], out: &mut Vec<Carried>) {
    let mut i = 1;
    while i < argv.len() {
        let w = &argv[i];
        let a = w.text.as_str();
        if a == "--" {
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = split_long(long);
            // `--checkpoint[=N]` is an option of its own; only `--checkpoint-a…` abbreviates.
            if name.starts_with("checkpoint-")
                && "checkpoint-action".starts_with(name)
                && let Some(value) = option_value(argv, &mut i, inline)
                && let Some(cmd) = value
                    .text
                    .strip_prefix("exec=")
                    .or_else(|| value.text.strip_prefix("exec:"))
            {
                out.push(Carried::Shell(part(&value, cmd)));
            }
        }
        i += 1;
    }
    // Old style: the first word is a bundle of letters without a dash; values follow in
    // order. Which word `I` or `F` takes is knowable, but rare enough to ask instead.
    if let Some(first) = argv.get(1)
        && !first.text.starts_with('-')
        && first.text.chars().all(|c| c.is_ascii_alphabetic())
        && first.text.contains(['I', 'F'])
    {
        out.push(Carried::Opaque(format!(
            "`tar {}`: an old-style option bundle with a command option (I or F)",
            first.text
        )));
    }
}

/// `less +CMD` and `vim +CMD`: an initial command; only line numbers and searches are known
/// not to run anything.
pub(super) fn plus_commands(prog: &str, argv: &[Field], out: &mut Vec<Carried>) {
    for w in argv.iter().skip(1) {
        let a = w.text.as_str();
        if a == "--" {
            break;
        }
        let Some(cmd) = a.strip_prefix('+') else {
            continue;
        };
        let harmless = cmd.is_empty()
            || cmd.chars().all(|c| c.is_ascii_digit())
            || (cmd.starts_with('/') && !cmd.contains(['|', '!']))
            || (prog == "less" && !cmd.contains(['!', '|', 's', 'o', 'O', 'v', 'E', 'e', ':']));
        if !harmless || w.dynamic {
            out.push(Carried::Opaque(format!(
                "`{prog} {a}` runs a start-up command, which can run shell commands"
            )));
        }
    }
}

/// `strace -o '|CMD'` / `-o '!CMD'`: the trace goes into a command's stdin.
pub(super) fn strace(argv: &[Field], out: &mut Vec<Carried>) {
    for (i, w) in argv.iter().enumerate() {
        let a = w.text.as_str();
        let value = if a == "-o" || a == "--output" {
            argv.get(i + 1).map(|v| (v.text.as_str(), v))
        } else {
            a.strip_prefix("--output=")
                .or_else(|| a.strip_prefix("-o").filter(|v| !v.is_empty()))
                .map(|v| (v, w))
        };
        if let Some((v, src)) = value
            && let Some(cmd) = v.strip_prefix('|').or_else(|| v.strip_prefix('!'))
        {
            out.push(Carried::Shell(part(src, cmd)));
        }
    }
}

/// `zip -TT CMD` / `--unzip-command CMD`: the archive test command.
pub(super) fn zip(argv: &[Field], out: &mut Vec<Carried>) {
    for (i, w) in argv.iter().enumerate() {
        let a = w.text.as_str();
        if let Some(v) = a.strip_prefix("--unzip-command=") {
            out.push(Carried::Shell(part(w, v)));
        } else if (a == "-TT" || a == "--unzip-command")
            && let Some(v) = argv.get(i + 1)
        {
            out.push(Carried::Shell(v.clone()));
        }
    }
}

/// `fd … -x CMD ARGS… [;]` / `-X`: the command runs once per match (or once for all).
pub(super) fn fd(argv: &[Field], out: &mut Vec<Carried>) {
    const FD: Grammar = Grammar {
        short_val: "etEdcjSo",
        long_val: &[
            "--extension",
            "--type",
            "--exclude",
            "--max-depth",
            "--color",
            "--threads",
            "--size",
            "--changed-within",
            "--changed-before",
            "--owner",
            "--base-directory",
            "--path-separator",
            "--search-path",
            "--ignore-file",
            "--max-results",
            "--min-depth",
            "--exact-depth",
            "--format",
            "--batch-size",
        ],
        ..Grammar::EMPTY
    };
    for item in FD.parse(argv, 1).items {
        let at = match item {
            Item::Short {
                letter: 'x' | 'X',
                at,
                ..
            } => at,
            Item::Long {
                name: "exec" | "exec-batch",
                at,
                ..
            } => at,
            _ => continue,
        };
        let end = argv[at + 1..]
            .iter()
            .position(|w| w.text == ";")
            .map_or(argv.len(), |p| at + 1 + p);
        if end > at + 1 {
            out.push(Carried::Argv(argv[at + 1..end].to_vec()));
        }
        return;
    }
}
