//! Low-level line scanning: forwards with a length cap, and backwards from the end.

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};

use crate::MAX_LINE_BYTES;

/// First read size when scanning backwards; doubled until enough lines are found.
const BACKWARD_CHUNK: u64 = 64 * 1024;

/// How much of a file's end a backward scan reads at most. Enough for the last complete
/// line plus a torn fragment, both at the line limit, so the writer can always resync.
pub(crate) const MAX_BACKWARD_BYTES: u64 = 2 * (MAX_LINE_BYTES as u64 + 1);

/// One line as the forward scanner saw it. Its bytes (without `\n`) are in the caller's
/// buffer unless `too_long`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawLine {
    /// 1-based line number.
    pub number: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Length without the `\n`.
    pub len: u64,
    /// False for a last line without `\n`.
    pub terminated: bool,
    /// The line exceeded the cap; its bytes were skipped, not kept.
    pub too_long: bool,
}

/// Reads lines of at most `cap` bytes without ever holding more than that in memory.
pub(crate) struct LineScanner<R> {
    inner: R,
    offset: u64,
    number: u64,
    cap: usize,
}

impl<R: BufRead> LineScanner<R> {
    pub fn new(inner: R, start_offset: u64, cap: usize) -> Self {
        Self {
            inner,
            offset: start_offset,
            number: 0,
            cap,
        }
    }

    /// The offset just past the last line returned.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the next line into `buf` (cleared first). `None` at end of input.
    pub fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<RawLine>> {
        buf.clear();
        let offset = self.offset;
        let mut len = 0u64;
        let mut too_long = false;
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(avail) => avail,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                if len == 0 {
                    return Ok(None);
                }
                self.number += 1;
                return Ok(Some(RawLine {
                    number: self.number,
                    offset,
                    len,
                    terminated: false,
                    too_long,
                }));
            }
            let newline = avail.iter().position(|&b| b == b'\n');
            let chunk = &avail[..newline.unwrap_or(avail.len())];
            if !too_long {
                if buf.len() + chunk.len() > self.cap {
                    too_long = true;
                    buf.clear();
                    buf.shrink_to(0);
                } else {
                    buf.extend_from_slice(chunk);
                }
            }
            len += chunk.len() as u64;
            let consumed = chunk.len() + usize::from(newline.is_some());
            self.inner.consume(consumed);
            self.offset += consumed as u64;
            if newline.is_some() {
                self.number += 1;
                return Ok(Some(RawLine {
                    number: self.number,
                    offset,
                    len,
                    terminated: true,
                    too_long,
                }));
            }
        }
    }
}

/// The end of a file, cut into lines: up to `want` complete lines (oldest first) and the
/// unterminated fragment after them, if any.
#[derive(Debug, Default)]
pub(crate) struct TailRegion {
    pub buf: Vec<u8>,
    /// File offset of `buf[0]`.
    pub start: u64,
    /// `(offset in buf, len)` of each complete line, without `\n`.
    pub lines: Vec<(usize, usize)>,
    /// `(offset in buf, len)` of a trailing line without `\n`.
    pub fragment: Option<(usize, usize)>,
    /// True when there may be complete lines before `lines` that were not included.
    pub more_before: bool,
}

impl TailRegion {
    pub fn slice(&self, (at, len): (usize, usize)) -> &[u8] {
        &self.buf[at..at + len]
    }

    pub fn file_offset(&self, (at, _): (usize, usize)) -> u64 {
        self.start + at as u64
    }
}

/// Reads backwards from `len` until `want` complete lines (plus any fragment) are found, the
/// start of the file is reached, or [`MAX_BACKWARD_BYTES`] have been read.
pub(crate) fn read_tail(file: &File, len: u64, want: usize) -> io::Result<TailRegion> {
    let mut size = BACKWARD_CHUNK.min(len);
    loop {
        let start = len - size;
        let mut buf = vec![0u8; usize::try_from(size).unwrap_or(usize::MAX)];
        let mut reader = file;
        reader.seek(SeekFrom::Start(start))?;
        reader.read_exact(&mut buf)?;
        let at_file_start = start == 0;
        let region = cut(buf, start, want, at_file_start);
        if at_file_start || region.lines.len() >= want {
            return Ok(region);
        }
        if size >= MAX_BACKWARD_BYTES.min(len) {
            // Stopped at the cap: the lines found so far are all there is to give.
            return Ok(region);
        }
        size = (size * 2).min(MAX_BACKWARD_BYTES).min(len);
    }
}

fn cut(buf: Vec<u8>, start: u64, want: usize, at_file_start: bool) -> TailRegion {
    let ends_with_newline = buf.last() == Some(&b'\n');
    let mut newlines: Vec<usize> = Vec::new();
    // Scan backwards for newlines; stop once we have enough line starts.
    let limit = want + 2;
    for (i, &b) in buf.iter().enumerate().rev() {
        if b == b'\n' {
            newlines.push(i);
            if newlines.len() >= limit {
                break;
            }
        }
    }
    newlines.reverse();
    // Line boundaries: a line starts after a newline (or at file start).
    let mut starts: Vec<usize> = newlines.iter().map(|&n| n + 1).collect();
    let mut more_before = true;
    if at_file_start && newlines.len() < limit {
        starts.insert(0, 0);
        more_before = false;
    }
    let mut region = TailRegion {
        start,
        more_before,
        ..TailRegion::default()
    };
    // Pair consecutive starts with the newline that ends each line.
    for pair in starts.windows(2) {
        let (s, e) = (pair[0], pair[1] - 1);
        region.lines.push((s, e - s));
    }
    if let Some(&s) = starts.last()
        && !ends_with_newline
        && s < buf.len()
    {
        region.fragment = Some((s, buf.len() - s));
    }
    if region.lines.len() > want {
        let drop = region.lines.len() - want;
        region.lines.drain(..drop);
        region.more_before = true;
    }
    region.buf = buf;
    region
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Write};

    fn lines_of(data: &[u8], cap: usize) -> Vec<(RawLine, Vec<u8>)> {
        let mut s = LineScanner::new(BufReader::with_capacity(4, data), 0, cap);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while let Some(l) = s.next_line(&mut buf).unwrap() {
            out.push((l, buf.clone()));
        }
        out
    }

    #[test]
    fn scanner_splits_caps_and_flags_unterminated() {
        let got = lines_of(b"ab\n\nlonglongline\ntail", 5);
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].1, b"ab");
        assert_eq!((got[1].0.len, got[1].0.offset), (0, 3));
        assert!(got[2].0.too_long && got[2].1.is_empty() && got[2].0.len == 12);
        assert!(!got[3].0.terminated && got[3].1 == b"tail" && got[3].0.number == 4);
        assert!(lines_of(b"", 5).is_empty());
        assert_eq!(lines_of(b"x\n", 5).len(), 1);
    }

    fn tail_of(data: &[u8], want: usize) -> (Vec<Vec<u8>>, Option<Vec<u8>>, bool) {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(data).unwrap();
        let r = read_tail(&f, data.len() as u64, want).unwrap();
        let lines = r.lines.iter().map(|&l| r.slice(l).to_vec()).collect();
        let frag = r.fragment.map(|l| r.slice(l).to_vec());
        (lines, frag, r.more_before)
    }

    #[test]
    fn tail_finds_last_lines_and_fragment() {
        assert_eq!(
            tail_of(b"a\nb\nc\n", 2),
            (vec![b"b".to_vec(), b"c".to_vec()], None, true)
        );
        assert_eq!(tail_of(b"a\nb\nc\n", 5).0.len(), 3);
        assert!(!tail_of(b"a\nb\nc\n", 5).2);
        assert_eq!(
            tail_of(b"a\nb\npart", 1),
            (vec![b"b".to_vec()], Some(b"part".to_vec()), true)
        );
        assert_eq!(tail_of(b"part", 1), (vec![], Some(b"part".to_vec()), false));
        assert_eq!(tail_of(b"\n", 1), (vec![b"".to_vec()], None, false));
        let big = [vec![b'x'; 200_000], b"\ny\n".to_vec()].concat();
        assert_eq!(tail_of(&big, 2).0, vec![vec![b'x'; 200_000], b"y".to_vec()]);
    }
}
