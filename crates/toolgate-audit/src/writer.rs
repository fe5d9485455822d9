//! The writer: records are redacted and serialised by their caller, then chained and appended
//! in groups ([`crate::group`]) and made durable by the fsync policy ([`crate::durable`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::durable::Durable;
use crate::file::LogFile;
use crate::group::{Queue, Ticket};
use crate::line;
use crate::redact::Redactor;
use crate::{AuditError, MAX_LINE_BYTES};

/// Under [`FsyncPolicy::Batch`], the default for [`AuditOptions::batch_interval`]: records
/// are fsynced at most this often and at most this long after they were written, so a
/// power failure during a burst of calls loses at most this much, and a burst shares one
/// fsync.
pub const BATCH_MAX_DELAY: Duration = Duration::from_millis(200);

/// Fields the log adds to every record; a record may not carry them itself.
const RESERVED_FIELDS: [&str; 3] = ["seq", "prev", "hash"];

/// When records are forced to stable storage. A crash of the process (even `kill -9`) loses
/// nothing that was acknowledged, whatever the policy: the kernel has the data. The policy
/// matters for power loss and kernel crashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncPolicy {
    /// A record is acknowledged only after an `fdatasync` that covers it; concurrent
    /// records share one. Loses nothing that was acknowledged.
    Always,
    /// A record is acknowledged once written; `fdatasync` follows at most
    /// [`AuditOptions::batch_interval`] later, and on flush and drop.
    #[default]
    Batch,
    /// Never fsync on append or drop (only an explicit [`AuditLog::flush`] does).
    Never,
}

impl FsyncPolicy {
    /// The name used in settings and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            FsyncPolicy::Always => "always",
            FsyncPolicy::Batch => "batch",
            FsyncPolicy::Never => "never",
        }
    }
}

impl fmt::Display for FsyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FsyncPolicy {
    type Err = AuditError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "always" => Ok(FsyncPolicy::Always),
            "batch" => Ok(FsyncPolicy::Batch),
            "never" => Ok(FsyncPolicy::Never),
            _ => Err(AuditError::UnknownFsyncPolicy {
                value: s.to_owned(),
            }),
        }
    }
}

/// How to open an [`AuditLog`].
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// When to fsync.
    pub fsync: FsyncPolicy,
    /// Under [`FsyncPolicy::Batch`]: the longest a written record waits for its fsync, and
    /// the shortest time between two fsyncs.
    pub batch_interval: Duration,
    /// Applied to every record before it is written.
    pub redactor: Redactor,
}

impl Default for AuditOptions {
    fn default() -> Self {
        Self {
            fsync: FsyncPolicy::default(),
            batch_interval: BATCH_MAX_DELAY,
            redactor: Redactor::default(),
        }
    }
}

/// What [`AuditLog::append`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The record's sequence number (1-based, gap-free across all writers of the file).
    pub seq: u64,
    /// The record's hash, which the next record carries as `prev`.
    pub hash: String,
}

/// How the writer has batched so far (for benchmarks and tests of group commit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// `write`s of records (each under one `flock`).
    pub batches: u64,
    /// Records written.
    pub records: u64,
}

/// An open, append-only, hash-chained audit log. `Send + Sync`: share it behind an `Arc`.
///
/// Records submitted at about the same time (concurrent calls) are appended together: one
/// `flock` and one `write` per group, the chain in submission order (see [`Ticket`]).
/// Several `AuditLog`s (in one process or many) may append to the same file: each group
/// takes an exclusive `flock` on the file and, if someone else wrote since, re-reads the
/// last record to continue its chain. Locks are advisory: a writer that is not an
/// `AuditLog` is not stopped, but what it writes will fail [`verify`](crate::verify).
#[derive(Debug)]
pub struct AuditLog {
    shared: Arc<Shared>,
    fsync_thread: Option<JoinHandle<()>>,
}

/// What the log's tickets and its fsync thread share.
#[derive(Debug)]
pub(crate) struct Shared {
    path: PathBuf,
    policy: FsyncPolicy,
    redactor: Redactor,
    file: Mutex<LogFile>,
    pub(crate) queue: Mutex<Queue>,
    pub(crate) durable: Arc<Durable>,
    pub(crate) counters: Counters,
    /// Why the last write or fsync failed, until one succeeds.
    failure: Mutex<Option<String>>,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    batches: AtomicU64,
    records: AtomicU64,
}

impl Counters {
    pub(crate) fn batch(&self, records: usize) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.records.fetch_add(records as u64, Ordering::Relaxed);
    }
}

impl Shared {
    pub(crate) fn file(&self) -> MutexGuard<'_, LogFile> {
        // No code path panics while holding the lock; if one ever did, the state is still
        // consistent (the file position is only advanced after a complete write).
        self.file.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn fail(&self, e: &AuditError) {
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(e.to_string());
    }
}

impl AuditLog {
    /// Opens (creating it and its directory if missing, file mode 0600, directories 0700)
    /// the log at `path` for appending, with the built-in redaction.
    ///
    /// If the file ends with an incomplete line (a writer crashed mid-write), the line is
    /// terminated and a `{"kind":"recovery",...}` record naming it is appended, so the log
    /// verifies again. Fails if the file cannot be opened or its last line is not a valid
    /// record.
    pub fn open(path: impl AsRef<Path>, fsync: FsyncPolicy) -> Result<AuditLog, AuditError> {
        Self::open_with(
            path,
            AuditOptions {
                fsync,
                ..AuditOptions::default()
            },
        )
    }

    /// [`open`](Self::open) with chosen options.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: AuditOptions,
    ) -> Result<AuditLog, AuditError> {
        let path = path.as_ref().to_owned();
        let mut file = LogFile::open(&path)?;
        let durable = Arc::new(Durable::new(
            options.fsync,
            options.batch_interval,
            path.clone(),
            file.sync_handle()?,
        ));
        if file.take_dirty() {
            durable.written();
        }
        let shared = Arc::new(Shared {
            path,
            policy: options.fsync,
            redactor: options.redactor,
            file: Mutex::new(file),
            queue: Mutex::new(Queue::default()),
            durable,
            counters: Counters::default(),
            failure: Mutex::new(None),
        });
        let weak = Arc::downgrade(&shared);
        let fsync_thread = shared
            .durable
            .start(move |e| {
                if let Some(shared) = weak.upgrade() {
                    shared.fail(e);
                }
            })
            .map_err(|source| AuditError::Open {
                path: shared.path.clone(),
                source,
            })?;
        Ok(AuditLog {
            shared,
            fsync_thread,
        })
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The fsync policy.
    pub fn fsync_policy(&self) -> FsyncPolicy {
        self.shared.policy
    }

    /// `seq` and hash of the last record this writer wrote or saw (other processes may have
    /// appended since; records still queued are not counted).
    pub fn head(&self) -> Appended {
        self.shared.file().head()
    }

    /// Why the last write or fsync failed, if it did (cleared by the next successful one is
    /// not promised: a log that failed once should be looked at).
    pub fn failure(&self) -> Option<String> {
        self.shared
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many batches and records this writer has written.
    pub fn writer_stats(&self) -> WriterStats {
        let c = &self.shared.counters;
        WriterStats {
            batches: c.batches.load(Ordering::Relaxed),
            records: c.records.load(Ordering::Relaxed),
        }
    }

    /// Redacts `record`, chains it to the last record and appends it, blocking until it is
    /// written under the fsync policy. The record must serialize to a JSON object without
    /// `seq`, `prev` or `hash` fields. On error nothing was appended (or, after a partial
    /// write, the next append repairs the torn line).
    pub fn append<T: Serialize + ?Sized>(&self, record: &T) -> Result<Appended, AuditError> {
        self.submit(record)?.wait()
    }

    /// Redacts and queues `record` for the next group; the returned [`Ticket`] resolves
    /// (`.await`, or [`Ticket::wait`]) once it is written under the fsync policy. Errors
    /// here are about the record itself (see [`append`](Self::append)).
    pub fn submit<T: Serialize + ?Sized>(&self, record: &T) -> Result<Ticket, AuditError> {
        let json = self.prepare(record)?;
        Ok(self.shared.enqueue(json))
    }

    fn prepare<T: Serialize + ?Sized>(&self, record: &T) -> Result<Vec<u8>, AuditError> {
        let mut value = serde_json::to_value(record).map_err(AuditError::Serialize)?;
        let Value::Object(map) = &value else {
            return Err(AuditError::NotAnObject {
                found: json_type(&value),
            });
        };
        if let Some(field) = RESERVED_FIELDS.into_iter().find(|f| map.contains_key(*f)) {
            return Err(AuditError::ReservedField { field });
        }
        self.shared.redactor.redact(&mut value);
        let json = serde_json::to_vec(&value).map_err(AuditError::Serialize)?;
        let size = json.len() + line::ENVELOPE_BYTES;
        if size > MAX_LINE_BYTES {
            return Err(AuditError::TooLarge {
                size,
                limit: MAX_LINE_BYTES,
            });
        }
        Ok(json)
    }

    /// Writes every queued record, then forces everything written so far to stable storage
    /// (`fdatasync`), whatever the policy.
    pub fn flush(&self) -> Result<(), AuditError> {
        self.shared.drain_all();
        self.shared.durable.sync_now()
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        // Records whose tickets nobody awaits are written before the log goes.
        self.shared.drain_all();
        self.shared.durable.stop();
        if let Some(t) = self.fsync_thread.take() {
            // Nobody to report to; the data is in the kernel already.
            let _ = t.join();
        }
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
