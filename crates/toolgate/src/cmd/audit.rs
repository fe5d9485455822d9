//! `toolgate audit`: verify, read and summarise an audit log.
//!
//! Output is for people when stdout is a terminal and JSON when it is not (or with `--json`).
//!
//! Exit codes:
//!
//! | command  | 0 | 1 | 2 | 3 |
//! |----------|---|---|---|---|
//! | `verify` | chain intact | tampered (first bad line named) | log cannot be read | last line torn by a crash (not tampering; the next writer repairs it) |
//! | `tail`, `stats` | done | — | log cannot be read | — |

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use toolgate_audit::{AuditError, EXIT_UNREADABLE, Entry, Follower};

/// The `audit` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AuditCmd {
    /// Check the hash chain and name the first bad line (exit 0 ok, 1 tampered, 2 unreadable,
    /// 3 torn last line).
    Verify {
        /// The audit log (JSON Lines).
        file: PathBuf,
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
    /// Calls, denials by layer, errors by code, latency p50/p99 per tool.
    Stats {
        /// The audit log (JSON Lines).
        file: PathBuf,
        /// JSON output even on a terminal.
        #[arg(long)]
        json: bool,
    },
}

/// Runs one `audit` subcommand.
pub fn run(cmd: AuditCmd) -> ExitCode {
    let human = |json: bool| !json && std::io::stdout().is_terminal();
    let result = match cmd {
        AuditCmd::Verify { file, json } => verify(&file, human(json)),
        AuditCmd::Tail {
            file,
            n,
            follow,
            json,
        } => tail(&file, n, follow, human(json)),
        AuditCmd::Stats { file, json } => stats(&file, human(json)),
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
    if human {
        out(&s.render());
    } else {
        out(&format!(
            "{}\n",
            serde_json::to_string(&s).unwrap_or_default()
        ));
    };
    Ok(ExitCode::SUCCESS)
}
