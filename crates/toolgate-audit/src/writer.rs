//! The writer: one line per record, one `write` per line, chained and locked.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::line::{self, GENESIS_HASH};
use crate::redact::Redactor;
use crate::scan;
use crate::{AuditError, MAX_LINE_BYTES};

/// Under [`FsyncPolicy::Batch`], fsync after this many unsynced records: bounds what a power
/// failure can lose during a burst of calls while keeping one fsync per many records.
pub const BATCH_MAX_RECORDS: usize = 64;

/// Under [`FsyncPolicy::Batch`], an append fsyncs if the last fsync is at least this old, so
/// sparse calls are each durable and bursts share one fsync. There is no timer thread: a
/// burst that ends is synced by the next append, [`AuditLog::flush`] or drop.
pub const BATCH_MAX_DELAY: Duration = Duration::from_millis(200);

/// Fields the log adds to every record; a record may not carry them itself.
const RESERVED_FIELDS: [&str; 3] = ["seq", "prev", "hash"];

/// When records are forced to stable storage. A crash of the process (even `kill -9`) loses
/// nothing that `append` returned for, whatever the policy: the kernel has the data. The
/// policy matters for power loss and kernel crashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncPolicy {
    /// `fdatasync` after every record: slowest, loses nothing that was acknowledged.
    Always,
    /// `fdatasync` every [`BATCH_MAX_RECORDS`] records or when the last one is older than
    /// [`BATCH_MAX_DELAY`], and on flush and drop.
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
#[derive(Debug, Clone, Default)]
pub struct AuditOptions {
    /// When to fsync.
    pub fsync: FsyncPolicy,
    /// Applied to every record before it is written.
    pub redactor: Redactor,
}

/// What [`AuditLog::append`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The record's sequence number (1-based, gap-free across all writers of the file).
    pub seq: u64,
    /// The record's hash, which the next record carries as `prev`.
    pub hash: String,
}

/// An open, append-only, hash-chained audit log. `Send + Sync`: share it behind an `Arc`.
///
/// Several `AuditLog`s (in one process or many) may append to the same file: each append
/// takes an exclusive `flock` on the file and, if someone else wrote since, re-reads the
/// last record to continue its chain. Locks are advisory: a writer that is not an
/// `AuditLog` is not stopped, but what it writes will fail [`verify`](crate::verify).
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    policy: FsyncPolicy,
    redactor: Redactor,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    file: File,
    /// `seq` of the last record in the file.
    seq: u64,
    /// Hash of the last record in the file.
    prev: String,
    /// File length after our last write; `None` forces a resync.
    end: Option<u64>,
    unsynced: usize,
    last_sync: Instant,
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

    /// [`open`](Self::open) with a chosen redactor.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: AuditOptions,
    ) -> Result<AuditLog, AuditError> {
        let path = path.as_ref().to_owned();
        let open_err = |source| AuditError::Open {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(open_err)?;
        }
        // std opens with O_CLOEXEC; `append` gives O_APPEND.
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&path)
            .map_err(open_err)?;
        let log = AuditLog {
            path,
            policy: options.fsync,
            redactor: options.redactor,
            state: Mutex::new(State {
                file,
                seq: 0,
                prev: GENESIS_HASH.to_owned(),
                end: None,
                unsynced: 0,
                last_sync: Instant::now(),
            }),
        };
        {
            let mut st = log.lock_state();
            log.with_flock(&mut st, Self::sync_with_file)?;
        }
        Ok(log)
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The fsync policy.
    pub fn fsync_policy(&self) -> FsyncPolicy {
        self.policy
    }

    /// `seq` and hash of the last record this writer wrote or saw (other processes may have
    /// appended since).
    pub fn head(&self) -> Appended {
        let st = self.lock_state();
        Appended {
            seq: st.seq,
            hash: st.prev.clone(),
        }
    }

    /// Redacts `record`, chains it to the last record and appends it as one line with a
    /// single `write`. The record must serialize to a JSON object without `seq`, `prev` or
    /// `hash` fields. On error nothing was appended (or, after a partial write, the next
    /// append repairs the torn line).
    pub fn append<T: Serialize + ?Sized>(&self, record: &T) -> Result<Appended, AuditError> {
        let mut value = serde_json::to_value(record).map_err(AuditError::Serialize)?;
        let Value::Object(map) = &value else {
            return Err(AuditError::NotAnObject {
                found: json_type(&value),
            });
        };
        if let Some(field) = RESERVED_FIELDS.into_iter().find(|f| map.contains_key(*f)) {
            return Err(AuditError::ReservedField { field });
        }
        self.redactor.redact(&mut value);
        let json = serde_json::to_vec(&value).map_err(AuditError::Serialize)?;
        let size = json.len() + line::ENVELOPE_BYTES;
        if size > MAX_LINE_BYTES {
            return Err(AuditError::TooLarge {
                size,
                limit: MAX_LINE_BYTES,
            });
        }
        let mut st = self.lock_state();
        self.with_flock(&mut st, |log, st| {
            log.sync_with_file(st)?;
            let appended = log.write_record(st, &[], &json)?;
            log.after_write(st)?;
            Ok(appended)
        })
    }

    /// Forces everything written so far to stable storage (`fdatasync`), whatever the policy.
    pub fn flush(&self) -> Result<(), AuditError> {
        let mut st = self.lock_state();
        self.sync(&mut st)
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        // No code path panics while holding the lock; if one ever did, the state is still
        // consistent (`end` is only advanced after a complete write).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` holding the exclusive `flock` that all writers of the file share.
    fn with_flock<R>(
        &self,
        st: &mut State,
        f: impl FnOnce(&Self, &mut State) -> Result<R, AuditError>,
    ) -> Result<R, AuditError> {
        st.file.lock().map_err(|source| AuditError::Lock {
            path: self.path.clone(),
            source,
        })?;
        let result = f(self, st);
        // An unlock failure leaves the lock to be released when the file closes.
        let _ = st.file.unlock();
        result
    }

    fn write_err(&self, source: std::io::Error) -> AuditError {
        AuditError::Write {
            path: self.path.clone(),
            source,
        }
    }

    /// Writes `lead` (normally empty) and the record as one buffer, with one `write` unless
    /// the kernel takes it in parts.
    fn write_record(
        &self,
        st: &mut State,
        lead: &[u8],
        json: &[u8],
    ) -> Result<Appended, AuditError> {
        let seq = st.seq + 1;
        let (mut bytes, hash) = line::build(seq, &st.prev, json);
        if !lead.is_empty() {
            bytes.splice(0..0, lead.iter().copied());
        }
        let start = st
            .end
            .take()
            .ok_or_else(|| self.write_err(std::io::Error::other("log position unknown")))?;
        (&st.file)
            .write_all(&bytes)
            .map_err(|e| self.write_err(e))?;
        st.end = Some(start + bytes.len() as u64);
        st.seq = seq;
        st.prev.clone_from(&hash);
        st.unsynced += 1;
        Ok(Appended { seq, hash })
    }

    fn after_write(&self, st: &mut State) -> Result<(), AuditError> {
        let due = match self.policy {
            FsyncPolicy::Always => true,
            FsyncPolicy::Batch => {
                st.unsynced >= BATCH_MAX_RECORDS || st.last_sync.elapsed() >= BATCH_MAX_DELAY
            }
            FsyncPolicy::Never => false,
        };
        if due { self.sync(st) } else { Ok(()) }
    }

    fn sync(&self, st: &mut State) -> Result<(), AuditError> {
        st.file.sync_data().map_err(|source| AuditError::Sync {
            path: self.path.clone(),
            source,
        })?;
        st.unsynced = 0;
        st.last_sync = Instant::now();
        Ok(())
    }

    /// With the flock held: if the file is not where we left it, re-read its last record,
    /// and repair a torn last line.
    fn sync_with_file(&self, st: &mut State) -> Result<(), AuditError> {
        let len = st.file.metadata().map_err(|e| self.write_err(e))?.len();
        if st.end == Some(len) {
            return Ok(());
        }
        st.end = None;
        let corrupt = |detail: String| AuditError::CorruptTail {
            path: self.path.clone(),
            detail,
        };
        let region = scan::read_tail(&st.file, len, 1).map_err(|source| AuditError::Read {
            path: self.path.clone(),
            source,
        })?;
        let (seq, prev) = match region.lines.last() {
            Some(&l) => {
                let meta = line::check(region.slice(l)).map_err(|f| corrupt(f.detail))?;
                (meta.seq, meta.hash)
            }
            None if !region.more_before => (0, GENESIS_HASH.to_owned()),
            None => {
                return Err(corrupt(format!(
                    "no line break in the last {} bytes",
                    scan::MAX_BACKWARD_BYTES
                )));
            }
        };
        st.seq = seq;
        st.prev = prev;
        st.end = Some(len);
        let Some(frag) = region.fragment else {
            return Ok(());
        };
        let bytes = region.slice(frag);
        if !line::plausible_fragment(bytes) {
            return Err(corrupt(format!(
                "it ends with {} bytes without a newline that are not the start of a record",
                bytes.len()
            )));
        }
        // A complete record missing only its newline: keep it.
        if let Ok(meta) = line::check(bytes)
            && meta.seq == st.seq + 1
            && meta.prev == st.prev
        {
            st.end = None;
            (&st.file).write_all(b"\n").map_err(|e| self.write_err(e))?;
            st.seq = meta.seq;
            st.prev = meta.hash;
            st.end = Some(len + 1);
            return Ok(());
        }
        let recovery = json!({
            "kind": "recovery",
            "ts": crate::now_rfc3339(),
            "torn_offset": region.file_offset(frag),
            "torn_bytes": bytes.len(),
            "torn_sha256": line::sha256_hex(bytes),
        });
        let json = serde_json::to_vec(&recovery).map_err(AuditError::Serialize)?;
        self.write_record(st, b"\n", &json)?;
        self.after_write(st)
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if self.policy != FsyncPolicy::Never && st.unsynced > 0 {
            // Nobody to report to; the data is in the kernel already.
            let _ = st.file.sync_data();
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
