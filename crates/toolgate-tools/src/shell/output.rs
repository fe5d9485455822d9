//! Bounded output capture: the first and last bytes of a command's output stay in memory, and
//! everything goes to a file once the output outgrows the inline budget, so memory stays
//! `O(budget)` however much a command prints. The file lives in the session's output
//! directory and counts against the session's budget (`toolgate_core::outputs`).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_core::outputs::SessionOutputs;

/// Bytes of memory kept per inline character, at each end: UTF-8 needs up to four.
const BYTES_PER_CHAR: usize = 4;

/// The output of one command: a head, a tail ring and, past the inline budget, a file.
#[derive(Debug)]
pub(crate) struct OutputBuffer {
    head: Vec<u8>,
    tail: Ring,
    /// Capacity of each of `head` and `tail`, in bytes.
    keep: usize,
    /// The file is created once the output passes this many bytes (never above `keep`,
    /// so the head still holds everything written before).
    spill_after: usize,
    max_inline_chars: usize,
    max_bytes: u64,
    total: u64,
    /// UTF-8 characters so far (bytes that are not continuation bytes).
    chars: u64,
    /// The session's output files: directory, budget, what outlives the session.
    outputs: Arc<SessionOutputs>,
    /// The base directory configured for them (`ShellConfig::output_dir`), if any.
    base: Option<PathBuf>,
    prefix: &'static str,
    file: Option<(File, PathBuf)>,
    /// Bytes written to the file.
    written: u64,
    file_error: Option<String>,
    over_limit: bool,
    /// The session's budget stopped the file (it holds the first `written` bytes).
    capped: bool,
}

/// The last `cap` bytes of a stream, in a fixed buffer (plain copies, no per-byte work).
#[derive(Debug)]
struct Ring {
    buf: Vec<u8>,
    cap: usize,
    /// Once full: where the oldest byte is, and the next byte goes.
    pos: usize,
}

impl Ring {
    fn new(cap: usize) -> Self {
        Self {
            buf: Vec::new(),
            cap,
            pos: 0,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        if data.len() >= self.cap {
            self.buf.clear();
            self.buf.extend_from_slice(&data[data.len() - self.cap..]);
            self.pos = 0;
            return;
        }
        if self.buf.len() < self.cap {
            let take = (self.cap - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            self.pos = 0;
        }
        if data.is_empty() {
            return;
        }
        let first = (self.cap - self.pos).min(data.len());
        self.buf[self.pos..self.pos + first].copy_from_slice(&data[..first]);
        let rest = &data[first..];
        self.buf[..rest.len()].copy_from_slice(rest);
        self.pos = (self.pos + data.len()) % self.cap;
    }

    fn contents(&self) -> Vec<u8> {
        if self.buf.len() < self.cap {
            return self.buf.clone();
        }
        let mut out = Vec::with_capacity(self.cap);
        out.extend_from_slice(&self.buf[self.pos..]);
        out.extend_from_slice(&self.buf[..self.pos]);
        out
    }
}

/// UTF-8 characters in `data`: bytes that are not continuation bytes (`10xxxxxx`), eight at
/// a time (a gigabyte of output is counted in well under a second).
fn count_chars(data: &[u8]) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = data.chunks_exact(8);
    let mut continuation = 0u64;
    for w in words.by_ref() {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(w);
        let x = u64::from_ne_bytes(bytes);
        // Bit 7 set and bit 6 clear, per byte (the shift never carries into a bit 7).
        continuation += u64::from((x & !(x << 1) & HIGH).count_ones());
    }
    let rest = words.remainder();
    continuation += rest.iter().filter(|b| (**b & 0xC0) == 0x80).count() as u64;
    data.len() as u64 - continuation
}

/// What [`OutputBuffer::push`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Within limits.
    Ok,
    /// The output passed `max_bytes`; the command should be stopped.
    OverLimit,
}

/// Output rendered for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    /// The inline text (head, notice and tail when truncated).
    pub text: String,
    /// Whether part of the output was left out of `text`.
    pub truncated: bool,
}

impl OutputBuffer {
    /// A buffer whose inline text is at most `max_inline_chars`, with its file made in the
    /// session's output directory (under `base` when set).
    pub(crate) fn new(
        max_inline_chars: usize,
        max_bytes: u64,
        outputs: Arc<SessionOutputs>,
        base: Option<PathBuf>,
        prefix: &'static str,
    ) -> Self {
        let keep = max_inline_chars.max(1) * BYTES_PER_CHAR;
        Self {
            head: Vec::new(),
            tail: Ring::new(keep),
            keep,
            spill_after: max_inline_chars.min(keep),
            max_inline_chars,
            max_bytes,
            total: 0,
            chars: 0,
            outputs,
            base,
            prefix,
            file: None,
            written: 0,
            file_error: None,
            over_limit: false,
            capped: false,
        }
    }

    /// Adds output.
    pub(crate) fn push(&mut self, data: &[u8]) -> Pushed {
        if data.is_empty() {
            return Pushed::Ok;
        }
        let room = self.keep.saturating_sub(self.head.len());
        self.head.extend_from_slice(&data[..room.min(data.len())]);
        self.tail.push(data);
        self.chars += count_chars(data);
        let before = self.total;
        self.total += data.len() as u64;
        if self.file.is_none() && self.file_error.is_none() && self.total > self.spill_after as u64
        {
            // Everything before this chunk is still in the head (spill_after <= keep).
            let earlier = &self.head[..before.min(self.head.len() as u64) as usize];
            let earlier = earlier.to_vec();
            if let Err(e) = self.open_file(&earlier) {
                self.file_error = Some(e.to_string());
            }
        }
        if self.file.is_some() && !self.over_limit {
            let allowed = self.max_bytes.saturating_sub(self.written);
            let part = &data[..(allowed.min(data.len() as u64)) as usize];
            self.write_file(part);
        }
        if self.total > self.max_bytes {
            self.over_limit = true;
            return Pushed::OverLimit;
        }
        Pushed::Ok
    }

    fn open_file(&mut self, earlier: &[u8]) -> io::Result<()> {
        let dir = self.outputs.dir(self.base.as_deref())?;
        let (file, path) = tempfile::Builder::new()
            .prefix(self.prefix)
            .suffix(".txt")
            .tempfile_in(&dir)?
            .keep()
            .map_err(|e| e.error)?;
        self.file = Some((file, path));
        self.write_file(earlier);
        Ok(())
    }

    fn write_file(&mut self, data: &[u8]) {
        if data.is_empty() || self.capped {
            return;
        }
        if self.file.is_some() && !self.outputs.reserve(data.len() as u64) {
            self.capped = true;
            return;
        }
        if let Some((file, _)) = &mut self.file {
            match file.write_all(data) {
                Ok(()) => self.written += data.len() as u64,
                Err(e) => {
                    self.file_error = Some(e.to_string());
                    self.file = None;
                }
            }
        }
    }

    /// Makes sure everything is (and will be) written to a file, for output that is read
    /// later (background tasks). The file is not kept past the session: the session's end
    /// stops the task, and its output is read during the session (TaskOutput, Read), so a
    /// file left behind would only pile up. Fails only if the file cannot be created.
    pub(crate) fn ensure_file(&mut self) -> io::Result<PathBuf> {
        if let Some((_, path)) = &self.file {
            return Ok(path.clone());
        }
        if self.total > self.head.len() as u64 {
            // The file failed earlier and the head no longer holds everything.
            return Err(io::Error::other(
                self.file_error
                    .clone()
                    .unwrap_or_else(|| "the output file was lost".into()),
            ));
        }
        let all = self.head.clone();
        self.file_error = None;
        self.open_file(&all)?;
        let path = self
            .path()
            .map(Path::to_path_buf)
            .ok_or_else(|| io::Error::other("the output file could not be created"))?;
        Ok(path)
    }

    /// Keeps the file past the session: a returned result names it.
    pub(crate) fn keep_file(&self) {
        if let Some((_, path)) = &self.file {
            self.outputs.keep(path);
        }
    }

    /// Why the file holds less than everything, if it does (the session's budget).
    pub(crate) fn file_notice(&self) -> Option<String> {
        self.capped.then(|| {
            format!(
                "{}: the file holds the first {} bytes",
                self.outputs.over_cap_notice(),
                self.written
            )
        })
    }

    /// The byte limit.
    pub(crate) fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Bytes of output so far.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Bytes written to the file so far (what a reader of the file can see).
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// The output file, once there is one.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|(_, p)| p.as_path())
    }

    /// Removes the file when the inline text holds everything (foreground commands whose
    /// output turned out to fit).
    pub(crate) fn discard_file_if_unneeded(&mut self, rendered: &Rendered) {
        if rendered.truncated {
            return;
        }
        if let Some((_, path)) = self.file.take() {
            // Best effort: a leftover file in the private output directory is harmless.
            let _ = std::fs::remove_file(path);
        }
    }

    /// The inline text: everything when it fits, else head, a notice naming the file, and
    /// tail.
    pub(crate) fn render(&self) -> Rendered {
        let all_in_head = self.total <= self.head.len() as u64;
        if all_in_head {
            let text = String::from_utf8_lossy(&self.head);
            if text.chars().count() <= self.max_inline_chars {
                return Rendered {
                    text: trim_end(&text).to_owned(),
                    truncated: false,
                };
            }
        }
        let tail_bytes = self.tail.contents();
        let where_ = match (&self.file, &self.file_error) {
            (Some((_, path)), _) if self.capped => format!(
                "output ({} bytes) in {}, cut short: {}",
                self.total,
                path.display(),
                self.file_notice().unwrap_or_default()
            ),
            (Some((_, path)), _) => {
                format!("full output ({} bytes) in {}", self.total, path.display())
            }
            (None, Some(e)) => format!("the full output could not be saved: {e}"),
            (None, None) => format!("{} bytes in all", self.total),
        };
        let text = head_and_tail(
            &self.head,
            &tail_bytes,
            Total::Chars(self.chars),
            self.max_inline_chars,
            &where_,
        );
        Rendered {
            text,
            truncated: true,
        }
    }
}

/// How much output there is in all, for the omitted count of [`head_and_tail`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Total {
    /// Characters (counted while streaming).
    Chars(u64),
    /// Bytes (when the characters were not counted).
    Bytes(u64),
}

/// Joins the first and last `max_chars / 2` characters with a notice saying how much was
/// left out and `where_` the rest is.
pub(crate) fn head_and_tail(
    head: &[u8],
    tail: &[u8],
    total: Total,
    max_chars: usize,
    where_: &str,
) -> String {
    let half = max_chars / 2;
    let head_text = String::from_utf8_lossy(head);
    let head_part: String = head_text.chars().take(half).collect();
    // Skip a partial character at the start of the tail.
    let start = tail
        .iter()
        .position(|b| (b & 0xC0) != 0x80)
        .unwrap_or(tail.len());
    let tail_text = String::from_utf8_lossy(&tail[start..]);
    let tail_chars = tail_text.chars().count();
    let tail_part: String = tail_text
        .chars()
        .skip(tail_chars.saturating_sub(max_chars - half))
        .collect();
    let omitted = match total {
        Total::Chars(n) => format!(
            "{} characters",
            n.saturating_sub((head_part.chars().count() + tail_part.chars().count()) as u64)
        ),
        Total::Bytes(n) => format!(
            "{} bytes",
            n.saturating_sub((head_part.len() + tail_part.len()) as u64)
        ),
    };
    format!(
        "{head_part}\n\n[… {omitted} omitted; {where_} …]\n\n{}",
        trim_end(&tail_part)
    )
}

fn trim_end(text: &str) -> &str {
    text.trim_end_matches(['\n', '\r'])
}

/// Reads bytes `from..to` of an output file as inline text of at most `max_chars`
/// characters (head and tail when longer), reading at most about `8 * max_chars` bytes.
pub(crate) fn read_range(
    path: &Path,
    from: u64,
    to: u64,
    max_chars: usize,
) -> io::Result<(String, bool)> {
    if to <= from {
        return Ok((String::new(), false));
    }
    let len = to - from;
    let keep = (max_chars.max(1) * BYTES_PER_CHAR) as u64;
    let mut file = File::open(path)?;
    if len <= keep {
        let mut buf = Vec::with_capacity(len as usize);
        read_at(&mut file, from, len, &mut buf)?;
        let text = String::from_utf8_lossy(&buf);
        if text.chars().count() <= max_chars {
            return Ok((trim_end(&text).to_owned(), false));
        }
    }
    let mut head = Vec::new();
    read_at(&mut file, from, keep.min(len), &mut head)?;
    let mut tail = Vec::new();
    read_at(&mut file, to - keep.min(len), keep.min(len), &mut tail)?;
    // Characters in the range are not counted (that would read all of it); bytes are exact.
    let where_ = format!(
        "{len} new bytes in all; the whole output is in {}",
        path.display()
    );
    let text = head_and_tail(&head, &tail, Total::Bytes(len), max_chars, &where_);
    Ok((text, true))
}

fn read_at(file: &mut File, at: u64, len: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    file.seek(SeekFrom::Start(at))?;
    Read::by_ref(file).take(len).read_to_end(buf)?;
    Ok(())
}

/// Lines of bytes `from..to` of an output file matching `filter`, at most `max_chars`
/// characters of them; lines longer than `max_line` bytes are cut.
pub(crate) fn filter_range(
    path: &Path,
    from: u64,
    to: u64,
    filter: &regex::Regex,
    max_chars: usize,
    max_line: usize,
) -> io::Result<(String, bool)> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut reader = io::BufReader::new(file.take(to.saturating_sub(from)));
    let mut out = String::new();
    let mut out_chars = 0usize;
    let mut more = 0u64;
    let mut line = Vec::new();
    while let Some(overlong) = read_line_bounded(&mut reader, &mut line, max_line)? {
        let text = String::from_utf8_lossy(&line);
        if !filter.is_match(&text) {
            continue;
        }
        let n = text.chars().count() + 1;
        if out_chars + n <= max_chars {
            out.push_str(&text);
            if overlong {
                out.push('…');
            }
            out.push('\n');
            out_chars += n;
        } else {
            more += 1;
        }
    }
    let truncated = more > 0;
    if truncated {
        out.push_str(&format!(
            "[… {more} more matching lines omitted; the whole output is in {} …]",
            path.display()
        ));
    }
    Ok((trim_end(&out).to_owned(), truncated))
}

/// Reads one line (without its newline) into `line`, keeping at most `max_line` bytes.
/// Returns `None` at the end, else whether the line was cut.
fn read_line_bounded(
    reader: &mut impl io::BufRead,
    line: &mut Vec<u8>,
    max_line: usize,
) -> io::Result<Option<bool>> {
    line.clear();
    let mut overlong = false;
    let mut any = false;
    loop {
        let (used, ended) = {
            let buf = reader.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            any = true;
            let (chunk, used, ended) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            let room = max_line.saturating_sub(line.len());
            if chunk.len() > room {
                overlong = true;
            }
            line.extend_from_slice(&chunk[..room.min(chunk.len())]);
            (used, ended)
        };
        reader.consume(used);
        if ended {
            break;
        }
    }
    Ok(any.then_some(overlong))
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
