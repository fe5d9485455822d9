//! A bound on the lines a stdio upstream writes. rmcp drops a line longer than its limit
//! without a word, so the call it answered would wait for its timeout; this reader drops it
//! first and puts a JSON-RPC error for the same request id in its place, so the call fails
//! at once saying why.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest line (one JSON-RPC message) read from a stdio upstream.
pub const MAX_STDIO_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How much of the start and the end of a dropped line is kept to find its `"id"`.
const ID_WINDOW: usize = 512;

/// Wraps a server's stdout.
pub(crate) struct LineCap<R> {
    inner: R,
    max: usize,
    /// The current line, while it is within the limit.
    line: Vec<u8>,
    /// Set once the current line is over the limit: its first and last bytes.
    dropped: Option<(Vec<u8>, VecDeque<u8>, usize)>,
    /// Bytes ready for the reader: whole lines, handed on as slices from `sent` on (a
    /// byte-wise queue cost a copy loop per byte of every answer).
    out: Vec<u8>,
    /// How much of `out` the reader has taken.
    sent: usize,
    eof: bool,
    /// Sees each whole line before the reader does (progress, see `Listener::observe_raw`).
    observer: Option<std::sync::Arc<crate::connect::Listener>>,
}

impl<R> LineCap<R> {
    pub(crate) fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            max,
            line: Vec::new(),
            dropped: None,
            out: Vec::new(),
            sent: 0,
            eof: false,
            observer: None,
        }
    }

    /// Shows each whole line to `listener` as it passes.
    pub(crate) fn observed_by(
        mut self,
        listener: std::sync::Arc<crate::connect::Listener>,
    ) -> Self {
        self.observer = Some(listener);
        self
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let (part, rest) = match newline {
                Some(i) => (&bytes[..i], Some(&bytes[i + 1..])),
                None => (bytes, None),
            };
            self.take_part(part);
            match rest {
                Some(rest) => {
                    self.end_line();
                    bytes = rest;
                }
                None => break,
            }
        }
    }

    /// Adds bytes of the current line (no newline among them).
    fn take_part(&mut self, part: &[u8]) {
        if self.dropped.is_none() && self.line.len() + part.len() > self.max {
            let head: Vec<u8> = self
                .line
                .iter()
                .chain(part.iter())
                .take(ID_WINDOW)
                .copied()
                .collect();
            let len = self.line.len();
            self.line = Vec::new();
            self.dropped = Some((head, VecDeque::new(), len));
        }
        match &mut self.dropped {
            Some((_, tail, len)) => {
                *len += part.len();
                let keep = part.len().min(ID_WINDOW);
                tail.extend(&part[part.len() - keep..]);
                while tail.len() > ID_WINDOW {
                    tail.pop_front();
                }
            }
            None => self.line.extend_from_slice(part),
        }
    }

    fn end_line(&mut self) {
        if self.dropped.is_some() {
            self.finish_dropped();
        } else {
            if let Some(observer) = &self.observer {
                observer.observe_raw(&self.line);
            }
            self.out.extend_from_slice(&self.line);
            self.out.push(b'\n');
            self.line.clear();
        }
    }

    /// Replaces the dropped line with an error answer to its request, when its id shows.
    fn finish_dropped(&mut self) {
        let Some((head, tail, len)) = self.dropped.take() else {
            return;
        };
        let tail: Vec<u8> = tail.into_iter().collect();
        let Some(id) = find_id(&head).or_else(|| find_id(&tail)) else {
            return;
        };
        let message = format!(
            "the upstream's answer was {len} bytes, more than the {} this gateway reads; it was dropped",
            self.max
        );
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32603, "message": message},
        });
        self.out.extend_from_slice(error.to_string().as_bytes());
        self.out.push(b'\n');
    }
}

/// The value of the first `"id":` in `bytes` (a number or a string), if one is whole.
fn find_id(bytes: &[u8]) -> Option<serde_json::Value> {
    let text = String::from_utf8_lossy(bytes);
    let at = text.find("\"id\"")?;
    let rest = text[at + 4..].trim_start().strip_prefix(':')?.trim_start();
    let end = if let Some(quoted) = rest.strip_prefix('"') {
        quoted.find('"').map(|i| i + 2)?
    } else {
        rest.find(|c: char| !(c.is_ascii_digit() || c == '-'))?
    };
    serde_json::from_str(&rest[..end]).ok()
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            let ready = self.out.len() - self.sent;
            if ready > 0 {
                let n = buf.remaining().min(ready);
                let from = self.sent;
                buf.put_slice(&self.out[from..from + n]);
                self.sent += n;
                if self.sent == self.out.len() {
                    self.out.clear();
                    self.sent = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if self.eof {
                return Poll::Ready(Ok(()));
            }
            let mut tmp = [0u8; 8192];
            let mut rb = ReadBuf::new(&mut tmp);
            match Pin::new(&mut self.inner).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) if rb.filled().is_empty() => {
                    // A last line without its newline is passed on as it is.
                    let rest = std::mem::take(&mut self.line);
                    self.out.extend_from_slice(&rest);
                    self.eof = true;
                }
                Poll::Ready(Ok(())) => self.feed(rb.filled()),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt as _;

    async fn read_all(input: &[u8], max: usize) -> String {
        let mut r = LineCap::new(input, max);
        let mut out = String::new();
        r.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn long_lines_become_errors_for_their_request() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"{}\"}}\n",
            "x".repeat(100)
        );
        let out = read_all(format!("{{\"a\":1}}\n{big}{{\"b\":2}}\n").as_bytes(), 50).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "{\"a\":1}");
        let err: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(err["id"], 7);
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap()
                .contains("dropped")
        );
        assert_eq!(lines[2], "{\"b\":2}");
        // The id at the end (as the TypeScript SDK writes it), and a string id.
        let tail = format!(
            "{{\"result\":\"{}\",\"jsonrpc\":\"2.0\",\"id\":\"r-1\"}}\n",
            "y".repeat(100)
        );
        let out = read_all(tail.as_bytes(), 50).await;
        let err: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(err["id"], "r-1");
        // The id near the start of a line longer than the window kept of its end.
        let long = format!("{{\"id\":9,\"result\":\"{}\"}}\n", "w".repeat(2000));
        let out = read_all(long.as_bytes(), 50).await;
        let err: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(err["id"], 9);
        // Without an id, the line just goes.
        assert_eq!(
            read_all(format!("{}\nok\n", "z".repeat(100)).as_bytes(), 50).await,
            "ok\n"
        );
    }
}
