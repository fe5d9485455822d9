//! `toolgate audit`: verify, read, query and summarise an audit log — a file, or the
//! PostgreSQL store (`postgres://…`) for `verify` and `query`.
//!
//! Output is for people when stdout is a terminal and JSON when it is not (or with `--json`).
//!
//! Exit codes:
//!
//! | command  | 0 | 1 | 2 | 3 | 64 |
//! |----------|---|---|---|---|----|
//! | `verify` | chain intact | tampered (first bad line or row named) | log or store cannot be read | last line torn by a crash (not tampering; the next writer repairs it) | bad arguments |
//! | `tail`, `stats`, `query` | done | — | log or store cannot be read | — | bad arguments |

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;
use toolgate_audit::query::{Filter, Indexed, parse_time};
use toolgate_audit::{AuditError, EXIT_UNREADABLE, Entry, Follower};
use toolgate_audit_postgres::PgTarget;

/// The `audit` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AuditCmd {
    /// Check the hash chain and name the first bad line (exit 0 ok, 1 tampered, 2 unreadable,
    /// 3 torn last line); for postgres://, every session's chain.
    Verify {
        /// The audit log (JSON Lines), or a postgres:// URL.
        target: String,
        /// JSON output even on a terminal.
        #[arg(long)]
        json: bool,
    },
    /// Show the last records.
    Tail {
        /// The audit log (JSON Lines).
        file: PathBuf,
        /// How many records.
        #[arg(short = 'n', long = "lines", default_value_t = 20)]
        n: usize,
        /// Keep printing records as they are appended (polls the file).
        #[arg(short, long)]
        follow: bool,
        /// Raw JSON lines even on a terminal.
        #[arg(long)]
        json: bool,
    },
    /// Calls, denials by layer, errors by code, latency p50/p99 per tool, and what each
    /// destination (PostgreSQL, OTLP) has not received yet.
    Stats {
        /// The audit log (JSON Lines).
        file: PathBuf,
        /// JSON output even on a terminal.
        #[arg(long)]
        json: bool,
    },
    /// Print the records that match, one JSON line each (a table on a terminal).
    Query(QueryArgs),
}

/// `toolgate audit query`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// The audit log (JSON Lines), or a postgres:// URL.
    pub target: String,
    /// Only this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Only this tool (exact name).
    #[arg(long)]
    pub tool: Option<String>,
    /// Only this decision: allow, ask or deny.
    #[arg(long, value_parser = ["allow", "ask", "deny"])]
    pub decision: Option<String>,
    /// Only records at or after this time (RFC 3339, or a date: midnight UTC).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only records before this time.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only calls decided by this rule (its text, e.g. 'Bash(curl:*)').
    #[arg(long)]
    pub rule: Option<String>,
    /// JSON lines even on a terminal.
    #[arg(long)]
    pub json: bool,
}

/// Runs one `audit` subcommand.
pub fn run(cmd: AuditCmd) -> ExitCode {
    let human = |json: bool| !json && std::io::stdout().is_terminal();
    let result = match cmd {
        AuditCmd::Verify { target, json } if PgTarget::is_url(&target) => {
            return verify_store(&target, human(json));
        }
        AuditCmd::Verify { target, json } => verify(Path::new(&target), human(json)),
        AuditCmd::Tail {
            file,
            n,
            follow,
            json,
        } => tail(&file, n, follow, human(json)),
        AuditCmd::Stats { file, json } => stats(&file, human(json)),
        AuditCmd::Query(args) => return query(&args, human(args.json)),
    };
    result.unwrap_or_else(|e| {
        eprintln!("toolgate audit: {e}");
        ExitCode::from(EXIT_UNREADABLE)
    })
}

/// Prints; `false` once stdout is closed (`| head`), which callers treat as done.
fn out(text: &str) -> bool {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .is_ok()
}

fn verify(file: &Path, human: bool) -> Result<ExitCode, AuditError> {
    let report = toolgate_audit::verify(file)?;
    if human {
        out(&report.render(file));
    } else {
        out(&format!("{}\n", report.to_json(file)));
    };
    Ok(ExitCode::from(report.exit_code()))
}

/// A single-threaded runtime for talking to a store from the CLI.
fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map(|rt| rt.block_on(f))
        .map_err(|e| format!("cannot start a runtime: {e}"))
}

fn verify_store(url: &str, human: bool) -> ExitCode {
    match block_on(toolgate_audit_postgres::verify(url)) {
        Ok(Ok(report)) => {
            if human {
                out(&report.render());
            } else {
                out(&format!(
                    "{}\n",
                    serde_json::to_string(&report).unwrap_or_default()
                ));
            }
            ExitCode::from(report.exit_code())
        }
        Ok(Err(e)) => {
            eprintln!("toolgate audit verify: {e}");
            ExitCode::from(EXIT_UNREADABLE)
        }
        Err(e) => {
            eprintln!("toolgate audit verify: {e}");
            ExitCode::from(EXIT_UNREADABLE)
        }
    }
}

fn print_entries(entries: Vec<Result<Entry, AuditError>>, human: bool) -> bool {
    let mut text = String::new();
    for e in entries {
        match e {
            Ok(e) if human => text.push_str(&e.summary()),
            Ok(e) => text.push_str(&e.value.to_string()),
            Err(e) => {
                eprintln!("toolgate audit: {e}");
                continue;
            }
        }
        text.push('\n');
    }
    out(&text)
}

fn tail(file: &Path, n: usize, follow: bool, human: bool) -> Result<ExitCode, AuditError> {
    let t = toolgate_audit::tail(file, n)?;
    if print_entries(t.entries, human) && follow {
        let mut f = Follower::new(file, t.end);
        loop {
            std::thread::sleep(toolgate_audit::FOLLOW_POLL_INTERVAL);
            if !print_entries(f.poll()?, human) {
                break;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn stats(file: &Path, human: bool) -> Result<ExitCode, AuditError> {
    let s = toolgate_audit::stats(file)?;
    let backlogs = toolgate_audit::ship::backlogs(file);
    if human {
        let mut text = s.render();
        for b in &backlogs {
            let c = &b.checkpoint;
            text.push_str(&format!(
                "delivery to {}: {} records sent, up to seq {}; {} pending",
                c.destination, c.delivered, c.seq, b.pending
            ));
            if let Some(since) = &c.failing_since {
                text.push_str(&format!(
                    "; failing since {since}: {}",
                    c.last_error.as_deref().unwrap_or("")
                ));
            }
            text.push('\n');
        }
        out(&text);
    } else {
        let mut v = serde_json::to_value(&s).unwrap_or_default();
        if let Some(obj) = v.as_object_mut() {
            obj.insert(
                "delivery".into(),
                serde_json::to_value(&backlogs).unwrap_or_default(),
            );
        }
        out(&format!("{v}\n"));
    };
    Ok(ExitCode::SUCCESS)
}

fn filter(args: &QueryArgs) -> Result<Filter, String> {
    let time = |t: &Option<String>| {
        t.as_deref()
            .map(parse_time)
            .transpose()
            .map_err(|e| e.to_string())
    };
    Ok(Filter {
        session: args.session.clone(),
        tool: args.tool.clone(),
        decision: args.decision.clone(),
        rule: args.rule.clone(),
        since: time(&args.since)?,
        until: time(&args.until)?,
    })
}

fn query(args: &QueryArgs, human: bool) -> ExitCode {
    let filter = match filter(args) {
        Ok(f) => f,
        Err(e) => return super::usage_error("audit query", e),
    };
    let mut table = human.then(Table::default);
    let mut print = |record: &Value, line: &str| match table.as_mut() {
        Some(t) => {
            t.push(record);
            true
        }
        None => out(&format!("{line}\n")),
    };
    let result = if PgTarget::is_url(&args.target) {
        block_on(toolgate_audit_postgres::query(
            &args.target,
            &filter,
            |line| {
                let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                print(&v, line)
            },
        ))
        .and_then(|r| r.map_err(|e| e.to_string()))
    } else {
        toolgate_audit::query::query_file(&args.target, &filter, |v| print(v, &v.to_string()))
            .map_err(|e| e.to_string())
    };
    match result {
        Ok(_) => {
            if let Some(t) = table {
                out(&t.render());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("toolgate audit query: {e}");
            ExitCode::from(EXIT_UNREADABLE)
        }
    }
}

/// `query`'s table for a terminal.
#[derive(Default)]
struct Table {
    rows: Vec<[String; 7]>,
}

impl Table {
    fn push(&mut self, v: &Value) {
        let ix = Indexed::of(v);
        let or_dash = |s: Option<String>| s.unwrap_or_else(|| "-".into());
        let outcome = match (ix.status.as_deref(), ix.code) {
            (Some("ok"), _) => "ok".to_owned(),
            (_, Some(code)) => code,
            (status, None) => status.unwrap_or(&ix.kind).to_owned(),
        };
        self.rows.push([
            ix.ts
                .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
                .unwrap_or_else(|| "-".into()),
            ix.session.chars().take(12).collect(),
            ix.tool.unwrap_or(ix.kind),
            or_dash(ix.decision),
            or_dash(ix.rule.or(ix.layer)),
            outcome,
            ix.duration_us
                .map(|d| format!("{:.1} ms", d as f64 / 1000.0))
                .unwrap_or_else(|| "-".into()),
        ]);
    }

    fn render(&self) -> String {
        let head = [
            "TIME (UTC)",
            "SESSION",
            "TOOL",
            "DECISION",
            "RULE",
            "RESULT",
            "TIME",
        ];
        let mut widths = head.map(str::len);
        for r in &self.rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: Vec<&str>| {
            let mut s = cells
                .iter()
                .zip(widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect::<Vec<_>>()
                .join("  ");
            s.truncate(s.trim_end().len());
            s.push('\n');
            s
        };
        let mut text = line(head.to_vec());
        for r in &self.rows {
            text.push_str(&line(r.iter().map(String::as_str).collect()));
        }
        text.push_str(&format!("{} records\n", self.rows.len()));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_query_table_has_one_row_per_record_and_says_what_happened() {
        let mut t = Table::default();
        t.push(&json!({"kind": "call", "ts": "2026-01-31T12:00:00.250Z", "session_id": "0123456789abcdef",
                       "tool": "Bash", "verdict": {"decision": "deny", "rule": "Bash(curl:*)"},
                       "status": "error", "code": "denied", "duration_us": 1500}));
        t.push(&json!({"kind": "delivery", "ts": "2026-01-31T12:00:01Z", "status": "failing"}));
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("TIME (UTC)"));
        assert!(
            lines[1].contains("2026-01-31 12:00:00.250")
                && lines[1].contains("0123456789ab ")
                && lines[1].contains("Bash(curl:*)")
                && lines[1].contains("denied")
                && lines[1].contains("1.5 ms"),
            "{text}"
        );
        assert!(
            lines[2].contains("delivery") && lines[2].contains("failing"),
            "{text}"
        );
        assert_eq!(lines[3], "2 records");
    }
}
