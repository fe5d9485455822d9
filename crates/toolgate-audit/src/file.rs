//! The log file itself: where the chain stands, and appending a batch of records under the
//! `flock` that every writer of the file shares (threads and processes).

use serde_json::json;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::line::{self, GENESIS_HASH};
use crate::scan;
use crate::{Appended, AuditError};

/// The open file and the head of its chain as this writer last saw it.
#[derive(Debug)]
pub(crate) struct LogFile {
    path: PathBuf,
    file: File,
    /// `seq` of the last record in the file.
    seq: u64,
    /// Hash of the last record in the file.
    prev: String,
    /// File length after our last write; `None` forces a resync.
    end: Option<u64>,
    /// Something was written since the last [`LogFile::take_dirty`].
    dirty: bool,
}

impl LogFile {
    /// Opens (creating it and its directory if missing, file mode 0600, directories 0700)
    /// the log for appending, and reads the head of its chain (repairing a torn last line).
    pub fn open(path: &Path) -> Result<Self, AuditError> {
        let open_err = |source| AuditError::Open {
            path: path.to_owned(),
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
            .open(path)
            .map_err(open_err)?;
        let mut log = LogFile {
            path: path.to_owned(),
            file,
            seq: 0,
            prev: GENESIS_HASH.to_owned(),
            end: None,
            dirty: false,
        };
        log.with_flock(Self::sync_with_file)?;
        Ok(log)
    }

    /// A second handle on the same open file, for fsyncing without holding the writer.
    pub fn sync_handle(&self) -> Result<File, AuditError> {
        self.file.try_clone().map_err(|source| AuditError::Open {
            path: self.path.clone(),
            source,
        })
    }

    /// `seq` and hash of the last record this writer wrote or saw.
    pub fn head(&self) -> Appended {
        Appended {
            seq: self.seq,
            hash: self.prev.clone(),
        }
    }

    /// Whether anything was written since the last call (the fsync policy's business).
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Chains `records` (compact, redacted JSON objects) to the last record in the file and
    /// appends them with one `write` under the file's `flock`. Returns what each became, in
    /// order. On error none of them may be assumed written (some may have been: the chain
    /// is resynced from the file on the next append).
    pub fn append_batch(&mut self, records: &[&[u8]]) -> Result<Vec<Appended>, AuditError> {
        self.with_flock(|log| {
            log.sync_with_file()?;
            log.write_lines(b"", records)
        })
    }

    /// Runs `f` holding the exclusive `flock` that all writers of the file share.
    fn with_flock<R>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<R, AuditError>,
    ) -> Result<R, AuditError> {
        self.file.lock().map_err(|source| AuditError::Lock {
            path: self.path.clone(),
            source,
        })?;
        let result = f(self);
        // An unlock failure leaves the lock to be released when the file closes.
        let _ = self.file.unlock();
        result
    }

    fn write_err(&self, source: std::io::Error) -> AuditError {
        AuditError::Write {
            path: self.path.clone(),
            source,
        }
    }

    /// Writes `lead` (normally empty) and the records' lines as one buffer, with one `write`
    /// unless the kernel takes it in parts.
    fn write_lines(&mut self, lead: &[u8], records: &[&[u8]]) -> Result<Vec<Appended>, AuditError> {
        let start = self
            .end
            .take()
            .ok_or_else(|| self.write_err(std::io::Error::other("log position unknown")))?;
        let size: usize = records.iter().map(|r| r.len() + line::ENVELOPE_BYTES).sum();
        let mut bytes = Vec::with_capacity(lead.len() + size);
        bytes.extend_from_slice(lead);
        let mut written = Vec::with_capacity(records.len());
        let (mut seq, mut prev) = (self.seq, self.prev.clone());
        for json in records {
            seq += 1;
            prev = line::build_into(&mut bytes, seq, &prev, json);
            written.push(Appended {
                seq,
                hash: prev.clone(),
            });
        }
        self.dirty = true;
        (&self.file)
            .write_all(&bytes)
            .map_err(|e| self.write_err(e))?;
        self.end = Some(start + bytes.len() as u64);
        self.seq = seq;
        self.prev = prev;
        Ok(written)
    }

    /// With the flock held: if the file is not where we left it, re-read its last record,
    /// and repair a torn last line.
    fn sync_with_file(&mut self) -> Result<(), AuditError> {
        let len = self.file.metadata().map_err(|e| self.write_err(e))?.len();
        if self.end == Some(len) {
            return Ok(());
        }
        self.end = None;
        let corrupt = |detail: String| AuditError::CorruptTail {
            path: self.path.clone(),
            detail,
        };
        let region = scan::read_tail(&self.file, len, 1).map_err(|source| AuditError::Read {
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
        self.seq = seq;
        self.prev = prev;
        self.end = Some(len);
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
            && meta.seq == self.seq + 1
            && meta.prev == self.prev
        {
            self.end = None;
            self.dirty = true;
            (&self.file)
                .write_all(b"\n")
                .map_err(|e| self.write_err(e))?;
            self.seq = meta.seq;
            self.prev = meta.hash;
            self.end = Some(len + 1);
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
        self.write_lines(b"\n", &[&json]).map(|_| ())
    }
}
