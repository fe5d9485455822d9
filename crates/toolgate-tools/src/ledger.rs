//! The read ledger: which files this session has read, and what they contained then.
//!
//! Kept in the session's [`Extensions`](toolgate_core::session::Extensions), keyed by real
//! path. Write and Edit consult it: an existing file must have been read first, and if its
//! content changed on disk since that read (content hash, not only mtime), the write is
//! refused with a request to read it again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rustix::fs::Stat;
use toolgate_core::Session;

use crate::error::{Error, Result};

/// What a read saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fingerprint {
    /// The SHA-256 of the whole file. Files up to
    /// [`FileToolsConfig::hash_max_bytes`](crate::FileToolsConfig::hash_max_bytes) are
    /// hashed whole, and only those can be edited.
    Content([u8; 32]),
    /// Status fields only, for files too large to hash on every read.
    Stat {
        /// Device.
        dev: u64,
        /// Inode.
        ino: u64,
        /// Size in bytes.
        size: i64,
        /// Modification time, nanoseconds since the epoch.
        mtime_ns: i128,
        /// Status change time, nanoseconds since the epoch.
        ctime_ns: i128,
    },
}

impl Fingerprint {
    /// The status fingerprint of `stat`.
    pub(crate) fn of_stat(stat: &Stat) -> Self {
        Fingerprint::Stat {
            dev: stat.st_dev,
            ino: stat.st_ino,
            size: stat.st_size,
            mtime_ns: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
            ctime_ns: i128::from(stat.st_ctime) * 1_000_000_000 + i128::from(stat.st_ctime_nsec),
        }
    }
}

/// One entry of the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRecord {
    /// What the file was when last read or written by this session.
    pub fingerprint: Fingerprint,
    /// Whether the model saw only part of it (offset/limit, or the output cap).
    pub partial: bool,
}

/// The per-session ledger.
#[derive(Debug, Default)]
pub(crate) struct ReadLedger {
    entries: Mutex<HashMap<PathBuf, ReadRecord>>,
}

impl ReadLedger {
    /// The session's ledger.
    pub(crate) fn of(session: &Session) -> Arc<ReadLedger> {
        session.extensions.get_or_init(ReadLedger::default)
    }

    /// Records a read (or a write: the model knows what it wrote).
    pub(crate) fn record(&self, real: &Path, record: ReadRecord) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(real.to_path_buf(), record);
    }

    /// The last record for a real path.
    pub(crate) fn get(&self, real: &Path) -> Option<ReadRecord> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(real)
            .copied()
    }

    /// Whether `real` was read; errors name what to do otherwise.
    pub(crate) fn require_read(&self, real: &Path) -> Result<ReadRecord> {
        self.get(real)
            .ok_or_else(|| Error::NotRead(real.to_path_buf()))
    }

    /// Checks that the file still has the content (or status) this session last saw.
    pub(crate) fn require_fresh(&self, real: &Path, hash: &[u8; 32], stat: &Stat) -> Result<()> {
        let record = self.require_read(real)?;
        let fresh = match record.fingerprint {
            Fingerprint::Content(h) => &h == hash,
            fp @ Fingerprint::Stat { .. } => fp == Fingerprint::of_stat(stat),
        };
        if fresh {
            Ok(())
        } else {
            Err(Error::Stale(real.to_path_buf()))
        }
    }
}

/// What this session's read ledger holds for a real path, for library users and tests.
pub fn read_record(session: &Session, real: &Path) -> Option<ReadRecord> {
    session
        .extensions
        .get::<ReadLedger>()
        .and_then(|l| l.get(real))
}
