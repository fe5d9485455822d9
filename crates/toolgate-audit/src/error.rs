//! The crate's one error type.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while writing, reading or verifying an audit log.
///
/// Each message names the file and says what to do. The gate maps every variant onto
/// `audit_unavailable` and refuses the call: a call that cannot be recorded does not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The log (or its directory) could not be created or opened for appending.
    #[error(
        "cannot open audit log {} for appending: {source}; point the audit path at a writable \
         regular file (missing directories are created)",
        path.display()
    )]
    Open {
        /// The log file.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// Another writer's lock could not be taken.
    #[error(
        "cannot lock audit log {} for appending: {source}; keep the log on a local file system \
         that supports flock",
        path.display()
    )]
    Lock {
        /// The log file.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// A record could not be written; it is not in the log.
    #[error(
        "cannot write to audit log {}: {source}; the record was not written, so the call must not \
         run; free disk space or fix the file's permissions",
        path.display()
    )]
    Write {
        /// The log file.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// The record was written but could not be flushed to stable storage.
    #[error(
        "cannot fsync audit log {}: {source}; the last records may be lost on power failure; \
         check the disk",
        path.display()
    )]
    Sync {
        /// The log file.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// The log could not be read.
    #[error("cannot read audit log {}: {source}", path.display())]
    Read {
        /// The log file.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// The last complete line of an existing log is not a valid record, so a new record cannot
    /// be chained to it.
    #[error(
        "audit log {} ends with a line that is not a valid toolgate record ({detail}); run \
         `toolgate audit verify {}`, then move the file aside to start a new log",
        path.display(),
        path.display()
    )]
    CorruptTail {
        /// The log file.
        path: PathBuf,
        /// What is wrong with the last line.
        detail: String,
    },
    /// One line of the log is not a JSON record (reading, not verifying).
    #[error("audit log {}, {}: {reason}", path.display(), where_(*line, *offset))]
    BadLine {
        /// The log file.
        path: PathBuf,
        /// The 1-based line number, when known (reading from the end does not know it).
        line: Option<u64>,
        /// Byte offset of the start of the line.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The value given to `append` does not serialize to a JSON object.
    #[error("an audit record must serialize to a JSON object, not {found}")]
    NotAnObject {
        /// The JSON type it serialized to.
        found: &'static str,
    },
    /// The value given to `append` already has a field the log adds itself.
    #[error(
        "an audit record must not contain the field `{field}`: the log adds `seq`, `prev` and \
         `hash` itself; rename the field"
    )]
    ReservedField {
        /// The offending field.
        field: &'static str,
    },
    /// The value given to `append` could not be serialized.
    #[error("cannot serialize audit record: {0}")]
    Serialize(#[source] serde_json::Error),
    /// The record is longer than one line may be.
    #[error(
        "audit record is {size} bytes, over the {limit}-byte line limit; cap large fields \
         (inputs, notes) before logging"
    )]
    TooLarge {
        /// The size of the line it would have made.
        size: usize,
        /// [`MAX_LINE_BYTES`](crate::MAX_LINE_BYTES).
        limit: usize,
    },
    /// A redaction pattern did not compile.
    #[error("invalid redaction pattern `{name}`: {source}")]
    Pattern {
        /// The pattern's name.
        name: String,
        /// The regex error.
        source: Box<regex::Error>,
    },
    /// An fsync policy name was not recognised.
    #[error("unknown fsync policy `{value}`; use `always`, `batch` or `never`")]
    UnknownFsyncPolicy {
        /// The text given.
        value: String,
    },
}

impl AuditError {
    /// The same error again, for each record of a batch that failed as a whole (`io::Error`
    /// is not `Clone`: the copy keeps its kind and message).
    pub(crate) fn duplicate(&self) -> AuditError {
        let io = |e: &io::Error| io::Error::new(e.kind(), e.to_string());
        match self {
            AuditError::Open { path, source } => AuditError::Open {
                path: path.clone(),
                source: io(source),
            },
            AuditError::Lock { path, source } => AuditError::Lock {
                path: path.clone(),
                source: io(source),
            },
            AuditError::Write { path, source } => AuditError::Write {
                path: path.clone(),
                source: io(source),
            },
            AuditError::Sync { path, source } => AuditError::Sync {
                path: path.clone(),
                source: io(source),
            },
            AuditError::Read { path, source } => AuditError::Read {
                path: path.clone(),
                source: io(source),
            },
            AuditError::CorruptTail { path, detail } => AuditError::CorruptTail {
                path: path.clone(),
                detail: detail.clone(),
            },
            other => AuditError::Write {
                path: std::path::PathBuf::new(),
                source: io::Error::other(other.to_string()),
            },
        }
    }
}

fn where_(line: Option<u64>, offset: u64) -> String {
    match line {
        Some(line) => format!("line {line}"),
        None => format!("byte offset {offset}"),
    }
}
