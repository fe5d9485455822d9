//! toolgate's audit log: append-only, hash-chained JSON Lines, one record per tool call.
//!
//! The gate writes exactly one record per call (also for calls that stopped at stage 1)
//! through an [`AuditLog`]. This crate makes that record trustworthy and useful afterwards:
//!
//! - **Chained.** Each line is the record plus `seq` (1, 2, …), `prev` (the hash of the line
//!   before; 64 zeros for the first) and `hash` (sha256 of the line's own bytes without the
//!   hash field), so [`verify`] finds an edited, removed, inserted or reordered record and
//!   names the first bad line.
//! - **Crash-safe.** Lines go out with one `write` on an `O_APPEND` file, under an exclusive
//!   `flock` shared by every writer of the file (threads and processes). A crash
//!   mid-write (even `kill -9`) loses at most the lines being written: [`verify`] reports
//!   that as [`VerifyStatus::TornTail`], distinct from tampering, and the next
//!   [`AuditLog::open`] or append terminates the fragment and appends a `recovery` record
//!   naming it, after which the log verifies as `Ok` with a warning.
//! - **Group commit.** Records of concurrent calls are chained and appended together (one
//!   lock and one `write` for many, see [`Ticket`]); when they reach the disk is the
//!   [`FsyncPolicy`], applied off the caller's thread, and a record's ticket resolves only
//!   once the policy is met.
//! - **Redacted.** Every record passes through a [`Redactor`] first: values under keys such
//!   as `password`, `api_key` or `Authorization` and credentials inside strings (cloud and
//!   model-API keys, JWTs, PEM private keys, bearer tokens, URL passwords) are masked.
//! - **Readable.** [`read_records`] streams records, [`tail`] reads the last few from the
//!   end, [`Follower`] follows a growing log, and [`stats`] counts calls, denials by layer,
//!   errors by code and per-tool latency percentiles.
//!
//! No input makes this crate panic: garbage files, invalid UTF-8 and lines of any length
//! (capped at [`MAX_LINE_BYTES`]) are reported, not trusted.
//!
//! ```
//! use toolgate_audit::{AuditLog, FsyncPolicy, VerifyStatus};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("audit/audit.jsonl");
//! let log = AuditLog::open(&path, FsyncPolicy::Batch).unwrap();
//! log.append(&json!({
//!     "kind": "call", "ts": "2025-01-01T00:00:00.000Z", "session_id": "s1", "call_id": "c1",
//!     "tool": "Bash", "input": {"command": "curl -u bob:hunter2 https://example.com"},
//!     "status": "error", "code": "denied", "duration_us": 250,
//!     "verdict": {"decision": "deny", "layer": "rule", "reason": "curl is denied"},
//! })).unwrap();
//! let second = log.append(&json!({"kind": "call", "tool": "Read", "status": "ok",
//!                                  "duration_us": 90})).unwrap();
//! assert_eq!(second.seq, 2);
//! drop(log);
//!
//! let report = toolgate_audit::verify(&path).unwrap();
//! assert_eq!(report.status, VerifyStatus::Ok);
//! assert_eq!((report.records, report.head_hash), (2, second.hash));
//!
//! let first = toolgate_audit::read_records(&path).unwrap().next().unwrap().unwrap();
//! assert!(!first.value.to_string().contains("hunter2"));
//!
//! let stats = toolgate_audit::stats(&path).unwrap();
//! assert_eq!(stats.denials_by_layer["rule"], 1);
//! assert_eq!(stats.tools["Read"].p50_us, Some(90));
//! ```
//!
//! A hash chain cannot show records cut from the **end** of the log, nor a log rewritten
//! from scratch by someone who can write the file. Keep [`VerifyReport::head_hash`] (or
//! [`AuditLog::head`]) somewhere that person cannot change, and compare.
#![deny(missing_docs)]

pub mod chain;
mod durable;
mod error;
mod file;
mod group;
mod line;
pub mod query;
mod read;
mod redact;
pub mod rules;
mod scan;
pub mod ship;
mod sink;
mod stats;
mod verify;
mod writer;

pub use error::AuditError;
pub use group::Ticket;
pub use line::GENESIS_HASH;
pub use read::{Entry, FOLLOW_POLL_INTERVAL, Follower, Records, Tail, read_records, tail};
pub use redact::{ExtraPattern, REDACTED, RedactionConfig, Redactor, RedactorBuilder};
pub use sink::{FileAudit, UnavailableAudit, open_or_refuse, open_or_refuse_with};
pub use stats::{Stats, ToolStats, percentile, stats};
pub use verify::{
    EXIT_OK, EXIT_TAMPERED, EXIT_TORN_TAIL, EXIT_UNREADABLE, TamperKind, VerifyReport,
    VerifyStatus, VerifyWarning, verify, verify_reader,
};
pub use writer::{Appended, AuditLog, AuditOptions, BATCH_MAX_DELAY, FsyncPolicy, WriterStats};

/// The longest line the log writes or reads: 16 MiB. Records are capped well below this by
/// the gate (inputs and notes are truncated); the cap exists so that a corrupt or hostile
/// file cannot make a reader allocate without bound.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// RFC 3339 UTC with milliseconds, as in `CallRecord::ts`.
pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
