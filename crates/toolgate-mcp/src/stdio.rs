//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout, one session per process.
//!
//! Input is framed here before rmcp sees it, because rmcp silently drops lines that are not
//! JSON and lines over its limit, and JSON-RPC says a client gets an answer:
//!
//! - a line that is not JSON → `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,…}}`;
//! - JSON that is neither an object nor a batch array (`42`, `"x"`) → `-32600`, id null;
//! - a line over [`MAX_LINE_BYTES`] → `-32600`, id null; it is skipped without being
//!   held in memory;
//! - blank lines are ignored.
//!
//! Every other line goes to rmcp through an in-memory pipe, and rmcp's output is merged
//! with these error lines on the real output one whole line at a time.

use std::os::fd::AsFd;
use std::sync::Arc;

use rmcp::ServiceExt;
use serde::de::IgnoredAny;
use serde_json::json;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
    DuplexStream,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;
use crate::handler::GateServer;
use crate::source::SessionSource;

/// Longest accepted input line, newline included (rmcp's own limit, so every line passed on
/// is one rmcp accepts). Tool inputs are capped at 8 MiB by the gate; the rest is framing.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Buffer of the in-memory pipes between the framing and rmcp: large enough that a typical
/// message crosses in one write.
const PIPE_BYTES: usize = 256 * 1024;

/// Read and write buffers on the real input and output.
const IO_BUFFER_BYTES: usize = 64 * 1024;

/// Error replies waiting to be written. Bounded: a client that floods garbage without
/// reading its output is slowed down (its input stops being read) instead of growing memory.
const PENDING_ERRORS: usize = 64;

/// How rmcp serializes an error response without an id, and the same with the null id
/// JSON-RPC requires.
const ANONYMOUS_ERROR: &[u8] = br#"{"jsonrpc":"2.0","error":"#;
const ANONYMOUS_ERROR_WITH_ID: &[u8] = br#"{"jsonrpc":"2.0","id":null,"error":"#;

/// A line buffer that grew past this (a huge message) is released after use.
const KEEP_LINE_CAPACITY: usize = 1024 * 1024;

/// Serves one MCP connection on this process's stdin and stdout until the client closes
/// stdin. Nothing but protocol is written to stdout; logs go to stderr.
pub async fn serve_stdio(source: Arc<dyn SessionSource>) -> Result<(), ServeError> {
    let reader: Box<dyn AsyncRead + Send + Unpin> = match stdin_pipe() {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdin()),
    };
    let writer: Box<dyn AsyncWrite + Send + Unpin> = match stdout_pipe() {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdout()),
    };
    serve_io(source, reader, writer).await
}

/// Standard input as an epoll-driven pipe, when it is one (the usual way clients start a
/// stdio server). `tokio::io::stdin()` hands every read to the blocking thread pool — two
/// thread hand-offs per message, the largest single cost of a small call.
fn stdin_pipe() -> Option<tokio::net::unix::pipe::Receiver> {
    // A duplicate: the receiver owns (and closes) its descriptor, fd 0 stays open.
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    tokio::net::unix::pipe::Receiver::from_owned_fd(fd).ok()
}

/// Standard output as an epoll-driven pipe (see [`stdin_pipe`]), unless standard error is
/// the same pipe: the pipe is put in non-blocking mode, which would then also apply to log
/// writes that expect to block.
fn stdout_pipe() -> Option<tokio::net::unix::pipe::Sender> {
    let out = std::io::stdout();
    if same_file(out.as_fd(), std::io::stderr().as_fd()) {
        return None;
    }
    tokio::net::unix::pipe::Sender::from_owned_fd(out.as_fd().try_clone_to_owned().ok()?).ok()
}

/// Whether two descriptors refer to the same file (device and inode).
fn same_file(a: std::os::fd::BorrowedFd<'_>, b: std::os::fd::BorrowedFd<'_>) -> bool {
    match (rustix::fs::fstat(a), rustix::fs::fstat(b)) {
        (Ok(x), Ok(y)) => x.st_dev == y.st_dev && x.st_ino == y.st_ino,
        _ => false,
    }
}

/// Serves one MCP connection over any byte stream pair (a pipe, a socket, a test duplex).
/// Malformed and oversize lines are answered with JSON-RPC errors (see the module docs),
/// and running calls are cancelled when the input closes. Returns once the connection is
/// over and everything is written; nothing is left running.
pub async fn serve_io<R, W>(
    source: Arc<dyn SessionSource>,
    reader: R,
    writer: W,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    // When the client closes its end, running calls are cancelled at once (rmcp alone
    // would wait for them to drain before it cancels them).
    let closed = CancellationToken::new();
    // Set when rmcp's service has ended, so the input pump stops waiting for input.
    let ended = CancellationToken::new();
    let server = GateServer::new(source).cancel_on(closed.clone());
    let (to_rmcp, rmcp_in) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (errors_tx, errors_rx) = mpsc::channel(PENDING_ERRORS);

    let service = async {
        let result = async {
            let running = server
                .serve((rmcp_in, rmcp_out))
                .await
                .map_err(|e| ServeError::Connect(e.to_string()))?;
            let reason = running
                .waiting()
                .await
                .map_err(|e| ServeError::Task(e.to_string()))?;
            tracing::info!(?reason, "MCP connection closed");
            Ok(())
        }
        .await;
        ended.cancel();
        result
    };
    let input = async {
        tokio::select! {
            () = pump_in(reader, to_rmcp, errors_tx) => {}
            () = ended.cancelled() => {}
        }
        closed.cancel();
    };
    let output = pump_out(from_rmcp, errors_rx, writer);
    let (result, (), written) = tokio::join!(service, input, output);
    if let Err(e) = written {
        tracing::debug!(error = %e, "MCP output closed");
    }
    result
}

/// What one input line is.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// Only whitespace: ignored.
    Blank,
    /// A JSON object or array: rmcp's to handle (it answers malformed messages itself).
    Message,
    /// Not JSON at all.
    NotJson(String),
    /// JSON, but a scalar.
    NotObject,
}

fn classify(line: &[u8]) -> Kind {
    let trimmed = line.trim_ascii();
    let Some(first) = trimmed.first() else {
        return Kind::Blank;
    };
    // Validate the syntax without building a value: rmcp parses the line again.
    match serde_json::from_slice::<IgnoredAny>(trimmed) {
        Err(e) => Kind::NotJson(e.to_string()),
        Ok(_) if matches!(first, b'{' | b'[') => Kind::Message,
        Ok(_) => Kind::NotObject,
    }
}

/// A JSON-RPC error response without an id (none could be read), as one output line.
fn error_line(code: i64, message: &str, detail: String) -> Vec<u8> {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message, "data": {"detail": detail}},
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// How reading one line ended.
enum Read {
    /// A whole line (with its newline) is in the buffer.
    Line,
    /// A line longer than the limit was skipped; its length in bytes.
    Oversize(usize),
    /// End of input (a trailing line without a newline is dropped, as rmcp does).
    End,
}

/// Reads one line into `line`, keeping at most [`MAX_LINE_BYTES`]: a longer line is
/// consumed and counted, not stored.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Read> {
    line.clear();
    let mut oversize = false;
    let mut total = 0usize;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(Read::End);
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        total = total.saturating_add(take);
        if !oversize {
            if line.len() + take > MAX_LINE_BYTES {
                oversize = true;
                line.clear();
                line.shrink_to(KEEP_LINE_CAPACITY);
            } else {
                line.extend_from_slice(&available[..take]);
            }
        }
        reader.consume(take);
        if newline.is_some() {
            return Ok(if oversize {
                Read::Oversize(total)
            } else {
                Read::Line
            });
        }
    }
}

/// Reads the client's input line by line: messages go to rmcp, the rest is answered with
/// errors. Returns at end of input, on a read error, or when rmcp stops reading.
async fn pump_in<R: AsyncRead + Unpin>(
    reader: R,
    mut to_rmcp: DuplexStream,
    errors: mpsc::Sender<Vec<u8>>,
) {
    let mut reader = BufReader::with_capacity(IO_BUFFER_BYTES, reader);
    let mut line = Vec::new();
    loop {
        let reply = match read_line(&mut reader, &mut line).await {
            Ok(Read::End) => return,
            Err(e) => {
                tracing::debug!(error = %e, "MCP input failed");
                return;
            }
            Ok(Read::Oversize(len)) => {
                tracing::warn!(len, "MCP input line over the limit, skipped");
                error_line(
                    -32600,
                    "Invalid Request",
                    format!("message of {len} bytes is over the {MAX_LINE_BYTES}-byte limit"),
                )
            }
            Ok(Read::Line) => match classify(&line) {
                Kind::Blank => continue,
                Kind::Message => {
                    if to_rmcp.write_all(&line).await.is_err() {
                        return;
                    }
                    if line.capacity() > KEEP_LINE_CAPACITY {
                        line = Vec::new();
                    }
                    continue;
                }
                Kind::NotJson(why) => {
                    tracing::debug!(%why, "MCP input line is not JSON");
                    error_line(-32700, "Parse error", why)
                }
                Kind::NotObject => error_line(
                    -32600,
                    "Invalid Request",
                    "a JSON-RPC message is a JSON object".into(),
                ),
            },
        };
        if errors.send(reply).await.is_err() {
            return;
        }
    }
}

/// Writes rmcp's output lines and the framing's error lines, never splitting a line, until
/// both are done. Flushes whenever nothing more is ready, so replies are not held back.
async fn pump_out<W: AsyncWrite + Unpin>(
    from_rmcp: DuplexStream,
    mut errors: mpsc::Receiver<Vec<u8>>,
    writer: W,
) -> std::io::Result<()> {
    let mut from_rmcp = BufReader::with_capacity(IO_BUFFER_BYTES, from_rmcp);
    let mut writer = BufWriter::with_capacity(IO_BUFFER_BYTES, writer);
    let mut line = Vec::new();
    let (mut rmcp_open, mut errors_open) = (true, true);
    while rmcp_open || errors_open {
        tokio::select! {
            // `read_until` keeps partial input in `line` if the other branch wins, and
            // continues it next time: a line is written only once it is whole.
            read = from_rmcp.read_until(b'\n', &mut line), if rmcp_open => {
                let n = read?;
                if n == 0 {
                    rmcp_open = false;
                    continue;
                }
                if line.last() != Some(&b'\n') {
                    // Only at the end of rmcp's output; keep the framing intact.
                    line.push(b'\n');
                }
                if let Some(rest) = line.strip_prefix(ANONYMOUS_ERROR) {
                    // rmcp answers a message it cannot read (a bad id type, a malformed
                    // request) with no `id` member; JSON-RPC requires `"id": null` there.
                    writer.write_all(ANONYMOUS_ERROR_WITH_ID).await?;
                    writer.write_all(rest).await?;
                } else {
                    writer.write_all(&line).await?;
                }
                line.clear();
                if line.capacity() > KEEP_LINE_CAPACITY {
                    line = Vec::new();
                }
            }
            reply = errors.recv(), if errors_open => match reply {
                Some(reply) => writer.write_all(&reply).await?,
                None => errors_open = false,
            },
        }
        if !from_rmcp.buffer().contains(&b'\n') && errors.is_empty() {
            writer.flush().await?;
        }
    }
    writer.flush().await?;
    writer.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classified() {
        assert_eq!(classify(b" \r\n"), Kind::Blank);
        assert_eq!(classify(b"{\"jsonrpc\":\"2.0\"}\n"), Kind::Message);
        assert_eq!(classify(b"[1,2]\r\n"), Kind::Message);
        assert_eq!(classify(b"42\n"), Kind::NotObject);
        assert!(matches!(classify(b"{\"a\": \n"), Kind::NotJson(_)));
        assert!(matches!(classify(b"not json\n"), Kind::NotJson(_)));
        assert!(matches!(classify(b"{} {}\n"), Kind::NotJson(_)));
    }

    #[tokio::test]
    async fn oversize_lines_are_skipped_without_being_kept() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.push(b'\n');
        input.extend_from_slice(b"{}\n");
        let mut reader = BufReader::new(&input[..]);
        let mut line = Vec::new();
        match read_line(&mut reader, &mut line).await.unwrap() {
            Read::Oversize(n) => assert_eq!(n, MAX_LINE_BYTES + 11),
            _ => panic!("expected an oversize line"),
        }
        assert!(line.capacity() <= KEEP_LINE_CAPACITY);
        assert!(matches!(
            read_line(&mut reader, &mut line).await.unwrap(),
            Read::Line
        ));
        assert_eq!(line, b"{}\n");
        assert!(matches!(
            read_line(&mut reader, &mut line).await.unwrap(),
            Read::End
        ));
    }
}
