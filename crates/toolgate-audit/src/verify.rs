//! Checking a log's hash chain from its first line to its last.

use serde::Serialize;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use crate::line::{self, GENESIS_HASH, LineMeta};
use crate::scan::LineScanner;
use crate::{AuditError, MAX_LINE_BYTES};

/// `toolgate audit verify` exit code: the chain is intact.
pub const EXIT_OK: u8 = 0;
/// Exit code: a record was edited, removed, reordered or inserted.
pub const EXIT_TAMPERED: u8 = 1;
/// Exit code: the log could not be read at all.
pub const EXIT_UNREADABLE: u8 = 2;
/// Exit code: only the last line is incomplete (a crash mid-write, not tampering).
pub const EXIT_TORN_TAIL: u8 = 3;

/// Why a line breaks the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TamperKind {
    /// Not a record in the log's line format (garbage, invalid UTF-8, not JSON, empty line).
    Unparseable,
    /// Longer than [`MAX_LINE_BYTES`]; the writer never writes such a line.
    TooLong,
    /// The content does not match the line's own hash: the record was edited.
    BadHash,
    /// `prev` is not the hash of the record before: a record was removed, inserted or moved.
    PrevMismatch,
    /// `seq` does not follow the record before: a record was removed, repeated or moved.
    SeqMismatch,
    /// A recovery record that does not match the torn line before it.
    RecoveryMismatch,
}

/// The verdict on a whole log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum VerifyStatus {
    /// Every line is a valid record chained to the one before.
    Ok,
    /// Every line is valid except the last, which has no `\n`: a write was interrupted. The
    /// writer repairs this the next time it opens the log.
    TornTail {
        /// 1-based line number of the incomplete line.
        line: u64,
        /// Its length in bytes.
        bytes: u64,
    },
    /// The first line that breaks the chain.
    Tampered {
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        kind: TamperKind,
        /// Details in words.
        detail: String,
    },
}

/// Something worth knowing that is not tampering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyWarning {
    /// 1-based line number it concerns.
    pub line: u64,
    /// Always `recovered_torn_line` for now.
    pub kind: &'static str,
    /// Details in words.
    pub detail: String,
}

/// The result of [`verify`].
///
/// `head_hash` is the hash of the last valid record. A hash chain detects edits, removals
/// and reordering, but not the removal of records **at the end** (truncation), nor a
/// rewrite of the whole chain by someone with write access: to detect those, record
/// `records` and `head_hash` somewhere the writer of the log cannot change, and compare.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The verdict.
    #[serde(flatten)]
    pub status: VerifyStatus,
    /// Valid records before the first problem (all of them when `Ok`).
    pub records: u64,
    /// Lines read.
    pub lines: u64,
    /// `seq` of the last valid record (0 if none).
    pub head_seq: u64,
    /// Hash of the last valid record (64 zeros if none).
    pub head_hash: String,
    /// Recovered torn lines and similar.
    pub warnings: Vec<VerifyWarning>,
}

impl VerifyReport {
    /// The CLI exit code for this verdict: [`EXIT_OK`], [`EXIT_TAMPERED`] or
    /// [`EXIT_TORN_TAIL`].
    pub fn exit_code(&self) -> u8 {
        match self.status {
            VerifyStatus::Ok => EXIT_OK,
            VerifyStatus::Tampered { .. } => EXIT_TAMPERED,
            VerifyStatus::TornTail { .. } => EXIT_TORN_TAIL,
        }
    }

    /// The report as JSON, with the file it is about.
    pub fn to_json(&self, path: &Path) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(obj) = v.as_object_mut() {
            obj.insert("file".into(), path.display().to_string().into());
        }
        v
    }

    /// A few lines for a person.
    pub fn render(&self, path: &Path) -> String {
        let mut out = String::new();
        let p = path.display();
        let _ = match &self.status {
            VerifyStatus::Ok => writeln!(out, "{p}: OK, {} records", self.records),
            VerifyStatus::TornTail { line, bytes } => writeln!(
                out,
                "{p}: TORN TAIL at line {line} ({bytes} bytes without newline): a write was \
                 interrupted; {} records before it are intact. The next writer repairs it.",
                self.records
            ),
            VerifyStatus::Tampered { line, kind, detail } => writeln!(
                out,
                "{p}: TAMPERED at line {line} ({}): {detail}\n{} valid records before it.",
                tamper_name(*kind),
                self.records
            ),
        };
        for w in &self.warnings {
            let _ = writeln!(out, "warning: line {}: {}", w.line, w.detail);
        }
        let what = match self.status {
            VerifyStatus::Ok => "head",
            _ => "last valid record",
        };
        let _ = writeln!(
            out,
            "{what}: seq {} hash {}\n(a hash chain cannot show records cut from the end; \
             keep the head elsewhere to detect that)",
            self.head_seq, self.head_hash
        );
        out
    }
}

fn tamper_name(kind: TamperKind) -> &'static str {
    match kind {
        TamperKind::Unparseable => "unparseable",
        TamperKind::TooLong => "too long",
        TamperKind::BadHash => "bad hash",
        TamperKind::PrevMismatch => "prev mismatch",
        TamperKind::SeqMismatch => "seq mismatch",
        TamperKind::RecoveryMismatch => "recovery mismatch",
    }
}

/// Verifies the log at `path`. Errors only when the file cannot be read; every problem with
/// its content is a [`VerifyStatus`].
pub fn verify(path: impl AsRef<Path>) -> Result<VerifyReport, AuditError> {
    let path = path.as_ref();
    let read_err = |source| AuditError::Read {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(read_err)?;
    verify_reader(file).map_err(read_err)
}

/// Verifies a log from any reader (see [`verify`]).
pub fn verify_reader(reader: impl Read) -> io::Result<VerifyReport> {
    let mut scanner = LineScanner::new(
        BufReader::with_capacity(64 * 1024, reader),
        0,
        MAX_LINE_BYTES,
    );
    let mut chain = Chain::default();
    let mut buf = Vec::new();
    while let Some(raw) = scanner.next_line(&mut buf)? {
        chain.lines = raw.number;
        if !raw.terminated {
            if let Some(t) = chain.pending.take() {
                return Ok(chain.tampered(t.line, t.fault.kind, t.fault.detail));
            }
            if raw.too_long || !line::plausible_fragment(&buf) {
                let kind = if raw.too_long {
                    TamperKind::TooLong
                } else {
                    TamperKind::Unparseable
                };
                let detail = "the last line has no newline and is not the start of a record, so \
                              it is not an interrupted write"
                    .to_owned();
                return Ok(chain.tampered(raw.number, kind, detail));
            }
            return Ok(chain.finish(VerifyStatus::TornTail {
                line: raw.number,
                bytes: raw.len,
            }));
        }
        let checked = if raw.too_long {
            Err(line::LineFault {
                kind: TamperKind::TooLong,
                detail: format!("the line is {} bytes, over {MAX_LINE_BYTES}", raw.len),
            })
        } else {
            line::check(&buf)
        };
        if let Some(status) = chain.step(raw.number, raw.offset, raw.len, &buf, checked) {
            return Ok(chain.finish(status));
        }
    }
    if let Some(t) = chain.pending.take() {
        return Ok(chain.tampered(t.line, t.fault.kind, t.fault.detail));
    }
    Ok(chain.finish(VerifyStatus::Ok))
}

/// A bad line that a recovery record on the next line may explain.
struct Pending {
    line: u64,
    offset: u64,
    len: u64,
    sha256: String,
    plausible: bool,
    fault: line::LineFault,
}

struct Chain {
    records: u64,
    lines: u64,
    seq: u64,
    head: String,
    pending: Option<Pending>,
    warnings: Vec<VerifyWarning>,
}

impl Default for Chain {
    fn default() -> Self {
        Self {
            records: 0,
            lines: 0,
            seq: 0,
            head: GENESIS_HASH.to_owned(),
            pending: None,
            warnings: Vec::new(),
        }
    }
}

impl Chain {
    fn finish(self, status: VerifyStatus) -> VerifyReport {
        VerifyReport {
            status,
            records: self.records,
            lines: self.lines,
            head_seq: self.seq,
            head_hash: self.head,
            warnings: self.warnings,
        }
    }

    fn tampered(self, line: u64, kind: TamperKind, detail: String) -> VerifyReport {
        self.finish(VerifyStatus::Tampered { line, kind, detail })
    }

    /// Takes one complete line; returns a final status if the chain breaks here.
    fn step(
        &mut self,
        number: u64,
        offset: u64,
        len: u64,
        bytes: &[u8],
        checked: Result<LineMeta, line::LineFault>,
    ) -> Option<VerifyStatus> {
        let meta = match checked {
            Ok(meta) => meta,
            Err(fault) => {
                if let Some(t) = self.pending.take() {
                    return Some(tamper(t.line, t.fault.kind, t.fault.detail));
                }
                // Maybe a torn write that the writer terminated; the next line must say so.
                self.pending = Some(Pending {
                    line: number,
                    offset,
                    len,
                    sha256: line::sha256_hex(bytes),
                    plausible: line::plausible_fragment(bytes),
                    fault,
                });
                return None;
            }
        };
        if let Some(t) = self.pending.take() {
            let explained = t.plausible
                && meta.recovery.as_ref().is_some_and(|r| {
                    r.torn_offset == t.offset && r.torn_bytes == t.len && r.torn_sha256 == t.sha256
                });
            if !explained {
                return Some(tamper(t.line, t.fault.kind, t.fault.detail));
            }
            self.warnings.push(VerifyWarning {
                line: t.line,
                kind: "recovered_torn_line",
                detail: format!(
                    "an interrupted write left {} bytes here; the recovery record on line {} \
                     names them",
                    t.len, number
                ),
            });
        } else if let Some(r) = &meta.recovery {
            return Some(tamper(
                number,
                TamperKind::RecoveryMismatch,
                format!(
                    "recovery record names a torn line at byte {} that is not the line before \
                     it: the torn line was removed or moved",
                    r.torn_offset
                ),
            ));
        }
        if meta.prev != self.head {
            return Some(tamper(
                number,
                TamperKind::PrevMismatch,
                format!(
                    "`prev` is {} but the record before has hash {}: a record before this one \
                     was removed, inserted or moved",
                    meta.prev, self.head
                ),
            ));
        }
        if meta.seq != self.seq + 1 {
            return Some(tamper(
                number,
                TamperKind::SeqMismatch,
                format!("`seq` is {} but {} was expected", meta.seq, self.seq + 1),
            ));
        }
        self.seq = meta.seq;
        self.head = meta.hash;
        self.records += 1;
        None
    }
}

fn tamper(line: u64, kind: TamperKind, detail: String) -> VerifyStatus {
    VerifyStatus::Tampered { line, kind, detail }
}
