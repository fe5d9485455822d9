//! How far a destination has got: one small JSON file per (log, destination), next to the
//! log, replaced atomically; and the lock that makes one process the shipper of a log to a
//! destination when several share the log.

use serde::{Deserialize, Serialize};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::line::GENESIS_HASH;

/// Where a destination's shipping stands, as `<log>.ship/<id>.json` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The destination, for people (no credentials).
    pub destination: String,
    /// Byte offset in the log just past the last delivered record.
    pub offset: u64,
    /// `seq` of the last delivered record (0 if none).
    pub seq: u64,
    /// Hash of the last delivered record (64 zeros if none): the next record must chain to
    /// it, and the line before `offset` must still have it (else the log was replaced).
    pub hash: String,
    /// Records delivered so far by this checkpoint.
    pub delivered: u64,
    /// When the last delivery was attempted (RFC 3339), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempted: Option<String>,
    /// Since when deliveries fail, while they do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<String>,
    /// The last failure, while deliveries fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl Checkpoint {
    /// A checkpoint before the first record.
    pub fn start(destination: String) -> Self {
        Self {
            destination,
            offset: 0,
            seq: 0,
            hash: GENESIS_HASH.to_owned(),
            delivered: 0,
            attempted: None,
            failing_since: None,
            last_error: None,
        }
    }
}

/// The directory of a log's checkpoints: `<dir>/<file name>.ship`.
pub fn ship_dir(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_owned();
    name.push(".ship");
    log.with_file_name(name)
}

fn checkpoint_path(log: &Path, id: &str) -> PathBuf {
    ship_dir(log).join(format!("{id}.json"))
}

/// Every checkpoint of a log, by destination id (for `toolgate audit stats`).
pub fn checkpoints(log: &Path) -> Vec<(String, Checkpoint)> {
    let Ok(entries) = std::fs::read_dir(ship_dir(log)) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Checkpoint)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".json")?.to_owned();
            let text = std::fs::read(e.path()).ok()?;
            Some((id, serde_json::from_slice(&text).ok()?))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Reads a destination's checkpoint; `None` if there is none (or it is unreadable, which
/// the caller treats as none: at-least-once makes starting over safe).
pub fn load(log: &Path, id: &str) -> Option<Checkpoint> {
    let text = std::fs::read(checkpoint_path(log, id)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Replaces the checkpoint atomically (temp file, fsync, rename).
pub fn save(log: &Path, id: &str, cp: &Checkpoint) -> std::io::Result<()> {
    let dir = ship_dir(log);
    DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    let json = serde_json::to_vec_pretty(cp).map_err(std::io::Error::other)?;
    tmp.write_all(&json)?;
    tmp.as_file().sync_data()?;
    tmp.persist(checkpoint_path(log, id))
        .map(|_| ())
        .map_err(|e| e.error)
}

/// The lock that makes one process the shipper of `log` to destination `id`: `Some` while
/// held (released when dropped or when the process dies), `None` if another process has
/// it.
pub fn try_lock(log: &Path, id: &str) -> std::io::Result<Option<File>> {
    let dir = ship_dir(log);
    DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(dir.join(format!("{id}.lock")))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}
