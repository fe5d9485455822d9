//! `cat -n` rendering of a text stream with bounded memory: lines are skipped with `memchr`
//! and each kept line stores at most a fixed number of bytes, however long it is.

use std::io::{self, BufRead};

use memchr::{memchr, memchr_iter};

/// Stop reading after this many bytes between cancellation checks.
const CANCEL_CHECK_BYTES: u64 = 8 * 1024 * 1024;

/// What to render.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// First line, 1-based.
    pub first: u64,
    /// Most lines.
    pub limit: u64,
    /// Characters kept per line.
    pub max_line_chars: usize,
    /// Cap on the rendered text in bytes.
    pub max_bytes: usize,
}

/// The rendered lines and what was left out.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    /// `cat -n` text.
    pub text: String,
    /// Lines in the text.
    pub shown: u64,
    /// Whether the end of the stream was reached after the last shown line.
    pub at_eof: bool,
    /// Whether the byte cap stopped the rendering.
    pub capped: bool,
    /// Whether some line was cut.
    pub cut_lines: bool,
    /// Lines that exist before `first` (fewer than `first - 1` means the offset is past the end).
    pub skipped: u64,
}

/// Renders `window` of `reader`. `cancelled` is polled while skipping.
pub(crate) fn render(
    reader: &mut impl BufRead,
    window: Window,
    cancelled: &dyn Fn() -> bool,
) -> io::Result<Rendered> {
    let mut out = Rendered {
        skipped: skip_lines(reader, window.first.saturating_sub(1), cancelled)?,
        ..Rendered::default()
    };
    if out.skipped < window.first.saturating_sub(1) {
        out.at_eof = true;
        return Ok(out);
    }
    // Four bytes per character is the UTF-8 worst case; a little more lets the cut notice
    // see that there was more.
    let keep = window.max_line_chars.saturating_mul(4).saturating_add(4);
    let mut buf = Vec::with_capacity(keep.min(64 * 1024));
    let mut number = window.first;
    // Room for the lines in view plus their numbers, within the cap: growing the text
    // line by line was a visible share of a small read's cost.
    let ahead = reader.fill_buf()?.len();
    out.text.reserve(
        ahead
            .saturating_add(ahead / 4)
            .min(window.max_bytes.saturating_add(1024)),
    );
    while out.shown < window.limit {
        let Some(total_len) = read_line_capped(reader, keep, &mut buf)? else {
            out.at_eof = true;
            break;
        };
        let before = out.text.len();
        append_line(
            &mut out.text,
            number,
            &buf,
            total_len,
            window.max_line_chars,
            &mut out.cut_lines,
        );
        if out.text.len() > window.max_bytes && out.shown > 0 {
            out.text.truncate(before);
            out.capped = true;
            return Ok(out);
        }
        out.shown += 1;
        number += 1;
    }
    if !out.at_eof {
        out.at_eof = reader.fill_buf()?.is_empty();
    }
    Ok(out)
}

/// Appends one `cat -n` line (number, tab, content, newline) to `out`.
fn append_line(
    out: &mut String,
    number: u64,
    bytes: &[u8],
    total_len: u64,
    max_chars: usize,
    cut: &mut bool,
) {
    use std::fmt::Write;
    // Validating first is much faster than the lossy scan for the usual, valid line.
    let mut content = match std::str::from_utf8(bytes) {
        Ok(valid) => std::borrow::Cow::Borrowed(valid),
        Err(_) => String::from_utf8_lossy(bytes),
    };
    if content.ends_with('\r') && total_len == bytes.len() as u64 {
        content.to_mut().pop();
    }
    push_line_number(out, number);
    // A line has at least as many bytes as characters: most lines need no counting.
    let cut_at = if content.len() > max_chars {
        content.char_indices().nth(max_chars).map(|(at, _)| at)
    } else {
        None
    };
    // Writing to a String cannot fail.
    match cut_at {
        Some(at) => {
            *cut = true;
            out.push_str(&content[..at]);
            let _ = write!(
                out,
                "… [line cut at {max_chars} characters; it is {total_len} bytes long]"
            );
        }
        None if total_len > bytes.len() as u64 => {
            *cut = true;
            out.push_str(&content);
            let _ = write!(out, "… [line cut; it is {total_len} bytes long]");
        }
        None => out.push_str(&content),
    }
    out.push('\n');
}

/// `{number:>6}\t` without the formatting machinery, which cost more than the rest of a
/// short line.
fn push_line_number(out: &mut String, number: u64) {
    let mut digits = [b' '; 20];
    let mut at = digits.len();
    let mut n = number;
    loop {
        at -= 1;
        // `n % 10` is a single decimal digit.
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let start = at.min(digits.len() - 6);
    for &d in &digits[start..] {
        out.push(char::from(d));
    }
    out.push('\t');
}

/// Reads one line (without its `\n`) into `buf`, keeping at most `keep` bytes. Returns the
/// line's full length, or `None` at the end of the stream.
pub(crate) fn read_line_capped(
    reader: &mut impl BufRead,
    keep: usize,
    buf: &mut Vec<u8>,
) -> io::Result<Option<u64>> {
    buf.clear();
    let mut total = 0u64;
    let mut any = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(any.then_some(total));
        }
        any = true;
        let (end, found) = match memchr(b'\n', chunk) {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        let room = keep.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..end.min(room)]);
        total += end as u64;
        reader.consume(if found { end + 1 } else { end });
        if found {
            return Ok(Some(total));
        }
    }
}

/// Skips up to `n` lines; returns how many were skipped (fewer at the end of the stream; a
/// last line without `\n` counts).
fn skip_lines(reader: &mut impl BufRead, n: u64, cancelled: &dyn Fn() -> bool) -> io::Result<u64> {
    let mut skipped = 0u64;
    let mut since_check = 0u64;
    let mut partial_line = false;
    while skipped < n {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(skipped + u64::from(partial_line));
        }
        let want = n - skipped;
        let mut consumed = chunk.len();
        let mut found = 0u64;
        for i in memchr_iter(b'\n', chunk) {
            found += 1;
            if found == want {
                consumed = i + 1;
                break;
            }
        }
        skipped += found;
        partial_line = consumed > 0 && chunk[consumed - 1] != b'\n';
        reader.consume(consumed);
        since_check += consumed as u64;
        if since_check >= CANCEL_CHECK_BYTES {
            since_check = 0;
            if cancelled() {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
            }
        }
    }
    Ok(skipped)
}

/// Lines in a byte string, counting a last line without `\n`.
pub(crate) fn count_lines(bytes: &[u8]) -> u64 {
    let newlines = memchr_iter(b'\n', bytes).count() as u64;
    newlines + u64::from(!bytes.is_empty() && !bytes.ends_with(b"\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_numbers_match_the_formatting_machinery() {
        for n in [
            0,
            1,
            9,
            10,
            99_999,
            999_999,
            1_000_000,
            123_456_789,
            u64::MAX,
        ] {
            let mut out = String::from("x");
            push_line_number(&mut out, n);
            assert_eq!(out, format!("x{n:>6}\t"), "{n}");
        }
    }

    #[test]
    fn invalid_utf8_is_shown_as_replacement_characters() {
        let mut r: &[u8] = b"ok\na\xffb\r\n";
        let out = render(&mut r, window(1, 10), &|| false).unwrap();
        assert_eq!(out.text, "     1\tok\n     2\ta\u{fffd}b\n");
    }

    #[test]
    fn multibyte_lines_are_cut_by_characters_not_bytes() {
        // 10 characters, 30 bytes: longer than the cap in bytes, not in characters.
        let mut r = "éééééééééé\nßßßßßßßßßßß\n".as_bytes();
        let out = render(&mut r, window(1, 10), &|| false).unwrap();
        assert!(out.text.starts_with("     1\téééééééééé\n"), "{}", out.text);
        assert!(
            out.text
                .contains("     2\tßßßßßßßßßß… [line cut at 10 characters"),
            "{}",
            out.text
        );
        assert!(out.cut_lines);
    }

    fn window(first: u64, limit: u64) -> Window {
        Window {
            first,
            limit,
            max_line_chars: 10,
            max_bytes: 1 << 20,
        }
    }

    #[test]
    fn renders_cat_n() {
        let mut r: &[u8] = b"a\nb\r\nc";
        let out = render(&mut r, window(1, 10), &|| false).unwrap();
        assert_eq!(out.text, "     1\ta\n     2\tb\n     3\tc\n");
        assert!(out.at_eof);
    }

    #[test]
    fn offset_and_limit() {
        let mut r: &[u8] = b"1\n2\n3\n4\n";
        let out = render(&mut r, window(2, 2), &|| false).unwrap();
        assert_eq!(out.text, "     2\t2\n     3\t3\n");
        assert!(!out.at_eof);
        let mut r: &[u8] = b"1\n2\n";
        let out = render(&mut r, window(5, 2), &|| false).unwrap();
        assert_eq!(out.skipped, 2);
        assert_eq!(out.shown, 0);
        let mut r: &[u8] = b"1\n2";
        let out = render(&mut r, window(3, 2), &|| false).unwrap();
        assert_eq!(out.skipped, 2);
        assert_eq!(out.shown, 0);
    }

    #[test]
    fn long_lines_are_cut() {
        let long = format!("{}\nok\n", "é".repeat(100));
        let mut r = long.as_bytes();
        let out = render(&mut r, window(1, 10), &|| false).unwrap();
        assert!(out.cut_lines);
        assert!(
            out.text
                .starts_with(&format!("     1\t{}… [line cut", "é".repeat(10)))
        );
        assert!(out.text.ends_with("     2\tok\n"));
    }

    #[test]
    fn cap_stops_at_a_line_boundary() {
        let text = "abcdefgh\n".repeat(100);
        let mut r = text.as_bytes();
        let w = Window {
            max_bytes: 100,
            ..window(1, 1000)
        };
        let out = render(&mut r, w, &|| false).unwrap();
        assert!(out.capped);
        assert_eq!(out.shown, 6);
    }

    #[test]
    fn counts() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a"), 1);
        assert_eq!(count_lines(b"a\n"), 1);
        assert_eq!(count_lines(b"a\nb"), 2);
    }
}
