//! Database shells: SQL given on the command line and the shell commands their
//! meta-commands run (`sqlite3 .shell`, `psql \\!`, `COPY … PROGRAM`, `mysql system`).

use crate::argv::part;
use crate::words::Field;

use super::*;

/// Database shells' SQL given on the command line (`sqlite3 DB 'SQL'`, `-cmd`, `psql -c`,
/// `mysql -e`), scanned by [`db_meta`]; script files (`-init`, `-f`) are opaque.
pub(super) fn db_client(prog: &str, argv: &[Field], out: &mut Vec<Carried>) {
    // Script files (`psql -f`, `sqlite3 -init`) are like `bash script.sh`: what the
    // command runs is its business once its rule allows it.
    let texts: &[&str] = match prog {
        "psql" => &["-c", "--command"],
        "mysql" | "mariadb" => &["-e", "--execute"],
        _ => &["-cmd"],
    };
    let mut sql = Vec::new();
    crate::classify::option_values(&argv[1..], texts, &mut sql);
    if matches!(prog, "sqlite3" | "duckdb" | "spatialite") {
        // `sqlite3 [OPTIONS] DB [SQL…]`: operands after the database are SQL.
        // The previous word (`argv[i]` for `argv[1..][i]`) may be an option taking it.
        const VALUED: &[&str] = &[
            "-cmd",
            "-init",
            "-separator",
            "-newline",
            "-nullvalue",
            "-vfs",
            "-mmap",
            "-lookaside",
            "-pagecache",
            "-heap",
            "-maxsize",
        ];
        let ops: Vec<&Field> = argv[1..]
            .iter()
            .enumerate()
            .filter(|(i, w)| {
                let value = *i > 0 && VALUED.contains(&argv[*i].text.as_str());
                !(w.text.starts_with('-') || value)
            })
            .map(|(_, w)| w)
            .collect();
        sql.extend(ops.into_iter().skip(1).cloned());
    }
    for text in sql {
        out.extend(db_meta(prog, &text));
    }
}

/// The shell commands in database-shell input: sqlite/duckdb `.shell`/`.system CMD`,
/// `.output|.once|.read|.import |CMD` (and `.load LIB`, opaque); psql `\! CMD`, `\o |CMD`,
/// `\g |CMD`, `\copy … program 'CMD'`, `COPY … PROGRAM 'CMD'`; mysql `system CMD`,
/// `\! CMD`.
pub(crate) fn db_meta(prog: &str, text: &Field) -> Vec<Carried> {
    let mut out = Vec::new();
    let shell = |cmd: &str, out: &mut Vec<Carried>| {
        if !cmd.trim().is_empty() {
            out.push(Carried::Shell(part(text, cmd.trim())));
        }
    };
    let lower = text.text.to_ascii_lowercase();
    for (line, lower_line) in text.text.lines().zip(lower.lines()) {
        let t = line.trim_start();
        let lt = lower_line.trim_start();
        if let Some(rest) = t.strip_prefix('.') {
            let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let is = |full: &str| name.len() >= 2 && full.starts_with(name);
            if is("shell") || is("system") {
                shell(arg, &mut out);
            } else if is("load") {
                out.push(Carried::Opaque(format!(
                    "`{prog} .load` loads an extension library, which runs its code"
                )));
            } else if (is("output") || is("once") || is("read") || is("import") || is("excel"))
                && let Some(cmd) = arg.trim_start().strip_prefix('|')
            {
                shell(cmd, &mut out);
            }
        } else if let Some(rest) = t.strip_prefix('\\') {
            let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            match name {
                "!" => shell(arg, &mut out),
                "o" | "out" | "g" | "gx" | "w" | "write" => {
                    if let Some(cmd) = arg.trim_start().strip_prefix('|') {
                        shell(cmd, &mut out);
                    }
                }
                _ => {}
            }
        } else if matches!(prog, "mysql" | "mariadb")
            && let Some(arg) = lt.strip_prefix("system ").map(|_| &t[7..])
        {
            shell(arg, &mut out);
        }
        // `COPY … FROM/TO PROGRAM 'cmd'` (server side; for a local server, this machine).
        if lt.contains("copy")
            && let Some(k) = lt.find(" program ")
        {
            let after = &t[k + " program ".len()..];
            let after = after.trim_start();
            if let Some(q) = after.strip_prefix('\'') {
                if let Some(end) = q.find('\'') {
                    shell(&q[..end], &mut out);
                }
            } else {
                out.push(Carried::Opaque(format!(
                    "`{prog}` runs a program named in SQL"
                )));
            }
        }
    }
    out
}
