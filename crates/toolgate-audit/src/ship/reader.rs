//! Reading the records after a checkpoint, checked as the verifier would: each line's own
//! hash and its link to the line before. A shipper never sends what does not verify.

use serde_json::Value;
use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::Path;

use super::Shipped;
use super::checkpoint::Checkpoint;
use crate::MAX_LINE_BYTES;
use crate::line::{self, GENESIS_HASH};
use crate::scan::{self, LineScanner};

/// What was read after a checkpoint.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub records: Vec<Shipped>,
    /// Offset just past the last line consumed (records, and a torn fragment a recovery
    /// record explained).
    pub end: u64,
}

/// Why shipping cannot go on from a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stuck {
    /// The log is not the one the checkpoint was made on (replaced, truncated, rotated).
    Replaced(String),
    /// A line after the checkpoint does not verify: it is not sent, nor anything after it.
    Unverified(String),
}

/// Whether the log still has, just before `cp.offset`, the record `cp` names.
pub(crate) fn still_matches(path: &Path, cp: &Checkpoint) -> Result<(), Stuck> {
    if cp.offset == 0 {
        return Ok(());
    }
    let file = File::open(path).map_err(|e| Stuck::Replaced(format!("cannot open: {e}")))?;
    let len = file
        .metadata()
        .map_err(|e| Stuck::Replaced(e.to_string()))?
        .len();
    if len < cp.offset {
        return Err(Stuck::Replaced(format!(
            "the log is {len} bytes, shorter than the checkpoint's offset {}",
            cp.offset
        )));
    }
    let region =
        scan::read_tail(&file, cp.offset, 1).map_err(|e| Stuck::Replaced(e.to_string()))?;
    let last = region
        .lines
        .last()
        .and_then(|&l| line::check(region.slice(l)).ok());
    match last {
        Some(meta) if region.fragment.is_none() && meta.hash == cp.hash => Ok(()),
        _ => Err(Stuck::Replaced(format!(
            "the record before offset {} is not seq {} with hash {}",
            cp.offset, cp.seq, cp.hash
        ))),
    }
}

/// The position just past the last complete record of the log, with its seq and hash (the
/// start of a log without records).
pub(crate) fn end_of(path: &Path) -> (u64, u64, String) {
    let last = File::open(path).ok().and_then(|file| {
        let len = file.metadata().ok()?.len();
        let region = scan::read_tail(&file, len, 1).ok()?;
        let &l = region.lines.last()?;
        let meta = line::check(region.slice(l)).ok()?;
        Some((region.file_offset(l) + l.1 as u64 + 1, meta.seq, meta.hash))
    });
    last.unwrap_or((0, 0, GENESIS_HASH.to_owned()))
}

/// Reads up to `max_records` complete records (and about `max_bytes`) after `cp`, stopping
/// before a line still being written, or before a line that does not verify (an error only
/// when it is the first).
pub(crate) fn read_after(
    path: &Path,
    cp: &Checkpoint,
    max_records: usize,
    max_bytes: usize,
) -> Result<Batch, Stuck> {
    let mut batch = Batch {
        records: Vec::new(),
        end: cp.offset,
    };
    match read_into(&mut batch, path, cp, max_records, max_bytes) {
        Err(stuck) if batch.records.is_empty() => Err(stuck),
        _ => Ok(batch),
    }
}

fn read_into(
    batch: &mut Batch,
    path: &Path,
    cp: &Checkpoint,
    max_records: usize,
    max_bytes: usize,
) -> Result<(), Stuck> {
    let io = |e: std::io::Error| Stuck::Unverified(format!("cannot read the log: {e}"));
    let mut file = File::open(path).map_err(io)?;
    file.seek(SeekFrom::Start(cp.offset)).map_err(io)?;
    let mut scanner = LineScanner::new(BufReader::new(file), cp.offset, MAX_LINE_BYTES);
    let (mut seq, mut head) = (cp.seq, cp.hash.clone());
    if cp.offset == 0 {
        (seq, head) = (0, GENESIS_HASH.to_owned());
    }
    let mut bytes = 0;
    // A line that does not verify, waiting to see whether a recovery record explains it.
    let mut torn: Option<(u64, u64, String)> = None;
    let mut buf = Vec::new();
    while batch.records.len() < max_records && bytes < max_bytes {
        let Some(raw) = scanner.next_line(&mut buf).map_err(io)? else {
            break;
        };
        if !raw.terminated {
            // Being written (or torn by a crash, which the next writer repairs).
            break;
        }
        let meta = match line::check(&buf) {
            Ok(meta) if !raw.too_long => meta,
            _ if torn.is_none() && line::plausible_fragment(&buf) => {
                torn = Some((raw.offset, raw.len, line::sha256_hex(&buf)));
                continue;
            }
            _ => {
                return Err(Stuck::Unverified(format!(
                    "the line at byte {} (after seq {seq}) is not a valid record",
                    raw.offset
                )));
            }
        };
        if let Some((offset, len, sha)) = torn.take() {
            let explained = meta.recovery.as_ref().is_some_and(|r| {
                r.torn_offset == offset && r.torn_bytes == len && r.torn_sha256 == sha
            });
            if !explained {
                return Err(Stuck::Unverified(format!(
                    "the line at byte {offset} is not a valid record and no recovery record \
                     names it"
                )));
            }
        }
        if meta.seq != seq + 1 || meta.prev != head {
            return Err(Stuck::Unverified(format!(
                "the record at byte {} (seq {}) does not follow seq {seq} (hash {head}): a \
                 record was removed, inserted or edited",
                raw.offset, meta.seq
            )));
        }
        let text = String::from_utf8_lossy(&buf).into_owned();
        let record: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        bytes += buf.len();
        seq = meta.seq;
        head.clone_from(&meta.hash);
        batch.end = scanner.offset();
        batch.records.push(Shipped {
            seq: meta.seq,
            hash: meta.hash,
            offset: raw.offset,
            line: text,
            record,
        });
    }
    Ok(())
}
