//! Reading records back: forwards as a stream, the last few from the end, and following a
//! growing log. Reading does not verify hashes; use [`verify`](crate::verify) for that.

use serde_json::Value;
use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::scan::{self, LineScanner};
use crate::{AuditError, MAX_LINE_BYTES};

/// Read buffer for forward scans.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// One record read back from the log, with the `seq`, `prev` and `hash` fields it was
/// written with.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// 1-based line number; `None` when read from the end ([`tail`]), which does not count
    /// the lines before.
    pub line: Option<u64>,
    /// Byte offset of the line in the file.
    pub offset: u64,
    /// The record.
    pub value: Value,
}

/// How often [`Follower`] users (`toolgate audit tail --follow`) poll: fast enough to feel
/// live, slow enough to cost nothing.
pub const FOLLOW_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

impl Entry {
    /// One line for a person: `#seq ts tool status [code (layer)] duration`, or
    /// `#seq kind` for records that are not calls.
    pub fn summary(&self) -> String {
        let v = &self.value;
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("-");
        let seq = v
            .get("seq")
            .and_then(Value::as_u64)
            .map_or("?".to_owned(), |n| n.to_string());
        if s("kind") != "call" {
            return format!("#{seq} {} {}", s("ts"), s("kind"));
        }
        let mut out = format!("#{seq} {} {} {}", s("ts"), s("tool"), s("status"));
        if let Some(code) = v.get("code").and_then(Value::as_str) {
            out.push(' ');
            out.push_str(code);
            let layer = v.pointer("/verdict/layer").and_then(Value::as_str);
            if let (Some(layer), "denied") = (layer, code) {
                out.push_str(&format!(" ({layer})"));
            }
        }
        if let Some(us) = v.get("duration_us").and_then(Value::as_u64) {
            out.push_str(&format!(" {}", crate::stats::human_us(Some(us))));
        }
        out
    }
}

fn open(path: &Path) -> Result<File, AuditError> {
    File::open(path).map_err(|source| AuditError::Read {
        path: path.to_owned(),
        source,
    })
}

fn bad_line(path: &Path, line: Option<u64>, offset: u64, reason: String) -> AuditError {
    AuditError::BadLine {
        path: path.to_owned(),
        line,
        offset,
        reason,
    }
}

fn parse(path: &Path, line: Option<u64>, offset: u64, bytes: &[u8]) -> Result<Entry, AuditError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(value @ Value::Object(_)) => Ok(Entry {
            line,
            offset,
            value,
        }),
        Ok(_) => Err(bad_line(path, line, offset, "not a JSON object".into())),
        Err(e) => Err(bad_line(path, line, offset, format!("not JSON ({e})"))),
    }
}

fn too_long(len: u64) -> String {
    format!("line is {len} bytes, over the {MAX_LINE_BYTES}-byte limit; skipped")
}

/// Opens `path` and streams its records in order.
///
/// Each item is one line: an [`Entry`], or an [`AuditError::BadLine`] for a line that is not
/// a JSON object (too long, garbage, or a torn last line) after which reading continues. An
/// I/O error ends the stream after being returned once.
pub fn read_records(path: impl AsRef<Path>) -> Result<Records, AuditError> {
    let path = path.as_ref().to_owned();
    let file = open(&path)?;
    Ok(Records {
        scanner: LineScanner::new(
            BufReader::with_capacity(READ_BUFFER_BYTES, file),
            0,
            MAX_LINE_BYTES,
        ),
        path,
        buf: Vec::new(),
        done: false,
    })
}

/// The iterator [`read_records`] returns.
pub struct Records {
    scanner: LineScanner<BufReader<File>>,
    path: PathBuf,
    buf: Vec<u8>,
    done: bool,
}

impl Iterator for Records {
    type Item = Result<Entry, AuditError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let raw = match self.scanner.next_line(&mut self.buf) {
            Ok(Some(raw)) => raw,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(source) => {
                self.done = true;
                return Some(Err(AuditError::Read {
                    path: self.path.clone(),
                    source,
                }));
            }
        };
        let (line, offset) = (Some(raw.number), raw.offset);
        Some(if raw.too_long {
            Err(bad_line(&self.path, line, offset, too_long(raw.len)))
        } else if !raw.terminated {
            Err(bad_line(
                &self.path,
                line,
                offset,
                "incomplete last line (a torn write)".into(),
            ))
        } else {
            parse(&self.path, line, offset, &self.buf)
        })
    }
}

/// The last records of a log, read from its end without reading the whole file.
#[derive(Debug)]
pub struct Tail {
    /// Up to `n` complete lines, oldest first, each parsed or explained.
    pub entries: Vec<Result<Entry, AuditError>>,
    /// Offset just past the last complete line: where a [`Follower`] should continue.
    pub end: u64,
}

/// Reads the last `n` complete lines of `path`. A torn last line is not included (it is not
/// a record); `end` stops before it so a [`Follower`] picks up the line once it is complete.
pub fn tail(path: impl AsRef<Path>, n: usize) -> Result<Tail, AuditError> {
    let path = path.as_ref();
    let file = open(path)?;
    let read_err = |source| AuditError::Read {
        path: path.to_owned(),
        source,
    };
    let len = file.metadata().map_err(read_err)?.len();
    let region = scan::read_tail(&file, len, n.max(1)).map_err(read_err)?;
    let end = len - region.fragment.map_or(0, |(_, l)| l as u64);
    let skip = region.lines.len().saturating_sub(n);
    let entries = region.lines[skip..]
        .iter()
        .map(|&l| {
            let offset = region.file_offset(l);
            parse(path, None, offset, region.slice(l))
        })
        .collect();
    Ok(Tail { entries, end })
}

/// Polls a growing log for new complete lines, starting at a byte offset (for example
/// [`Tail::end`]). A line is returned only once its `\n` has been written.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    offset: u64,
}

impl Follower {
    /// Follows `path` from byte `offset`.
    pub fn new(path: impl AsRef<Path>, offset: u64) -> Self {
        Self {
            path: path.as_ref().to_owned(),
            offset,
        }
    }

    /// The offset the next poll starts from.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Returns the complete lines added since the last poll. If the file became shorter than
    /// the offset (rotated or truncated), following restarts from its beginning.
    pub fn poll(&mut self) -> Result<Vec<Result<Entry, AuditError>>, AuditError> {
        let mut file = open(&self.path)?;
        let read_err = |source| AuditError::Read {
            path: self.path.clone(),
            source,
        };
        let len = file.metadata().map_err(read_err)?.len();
        if len < self.offset {
            self.offset = 0;
        }
        file.seek(SeekFrom::Start(self.offset)).map_err(read_err)?;
        let limited = std::io::Read::take(file, len - self.offset);
        let mut scanner = LineScanner::new(
            BufReader::with_capacity(READ_BUFFER_BYTES, limited),
            self.offset,
            MAX_LINE_BYTES,
        );
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(raw) = scanner.next_line(&mut buf).map_err(read_err)? {
            if !raw.terminated {
                break;
            }
            out.push(if raw.too_long {
                Err(bad_line(&self.path, None, raw.offset, too_long(raw.len)))
            } else {
                parse(&self.path, None, raw.offset, &buf)
            });
            self.offset = scanner.offset();
        }
        Ok(out)
    }
}
