//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout, one session per process.
//!
//! Input is framed and decoded here, not by rmcp's line transport, which silently drops
//! lines that are not JSON and lines over its limit, while JSON-RPC says a client gets an
//! answer:
//!
//! - a line that is not JSON → `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,…}}`;
//! - JSON that is neither an object nor a batch array (`42`, `"x"`) → `-32600`, id null;
//! - a line over [`MAX_LINE_BYTES`] → `-32600`, id null; it is skipped without being
//!   held in memory;
//! - a JSON object or array that is not an MCP message (a batch, a request with an id of
//!   the wrong type or malformed parameters) → `-32600`, id null, with the reason;
//!   a malformed notification (no `id`) is dropped, since notifications get no answer;
//! - a request whose id is still in progress → `-32600` with that id;
//! - a request beyond [`MAX_IN_FLIGHT`] in progress → [`BUSY`] with its id, at once;
//! - blank lines are ignored.
//!
//! Every other line is decoded here, once, and handed to rmcp as a message (rmcp's own
//! line transport would decode it a second time); rmcp's messages are serialized here and
//! merged with these error lines on the real output one whole line at a time.
//!
//! The in-flight bound exists because rmcp reads input as fast as it comes and runs every
//! request at once, keeping each answer in memory until it is written: a client that sends
//! calls without reading the answers (measured: 30,000 calls of a 100 KiB Read, 3.6 GB and
//! growing) would otherwise exhaust the machine. A request counts from the moment it is
//! read until its answer is written to the output, or until the client cancels it.

use std::collections::HashSet;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ServiceExt;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde::de::IgnoredAny;
use serde_json::json;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;
use crate::handler::GateServer;
use crate::source::SessionSource;

/// Longest accepted input line, newline included (the limit of rmcp's own line transport,
/// kept so clients see the same bound). Tool inputs are capped at 8 MiB by the gate; the
/// rest is framing.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Decoded messages on their way to rmcp, and rmcp's messages on their way out. Small:
/// the in-flight bound, not these queues, limits what a connection holds.
const MESSAGE_QUEUE: usize = 32;

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

/// Requests one connection may have in progress (read, answer not yet written). Far above
/// what an agent runs in parallel; a request beyond it is answered with [`BUSY`] at once.
pub const MAX_IN_FLIGHT: usize = 64;

/// JSON-RPC error code (implementation-defined server error range) of the answer to a
/// request beyond [`MAX_IN_FLIGHT`]: retry once an answer has arrived.
pub const BUSY: i64 = -32000;

/// UTF-8 byte order mark, which rmcp skips at the start of a line.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Ids of the requests passed to rmcp whose answers are not written yet.
#[derive(Debug, Default)]
struct InFlight(Mutex<HashSet<RequestId>>);

/// Whether a request may be passed on.
#[derive(Debug, PartialEq, Eq)]
enum Admission {
    Admitted,
    /// Its id belongs to a request still in progress.
    DuplicateId,
    /// [`MAX_IN_FLIGHT`] requests are in progress.
    Busy,
}

impl InFlight {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        // The set is consistent after any panic (single inserts and removes).
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn admit(&self, id: &RequestId) -> Admission {
        let mut ids = self.ids();
        if ids.contains(id) {
            Admission::DuplicateId
        } else if ids.len() >= MAX_IN_FLIGHT {
            Admission::Busy
        } else {
            ids.insert(id.clone());
            Admission::Admitted
        }
    }

    fn finish(&self, id: &RequestId) {
        self.ids().remove(id);
    }
}

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
    let (to_rmcp, rmcp_in) = mpsc::channel(MESSAGE_QUEUE);
    let (rmcp_out, from_rmcp) = mpsc::channel(MESSAGE_QUEUE);
    let (errors_tx, errors_rx) = mpsc::channel(PENDING_ERRORS);
    let in_flight = InFlight::default();
    let transport = Channels {
        incoming: rmcp_in,
        outgoing: rmcp_out,
    };

    let service = async {
        let result = async {
            let running = server
                .serve(transport)
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
            () = pump_in(reader, to_rmcp, errors_tx, &in_flight) => {}
            () = ended.cancelled() => {}
        }
        closed.cancel();
    };
    let output = pump_out(from_rmcp, errors_rx, writer, &in_flight);
    let (result, (), written) = tokio::join!(service, input, output);
    if let Err(e) = written {
        tracing::debug!(error = %e, "MCP output closed");
    }
    result
}

/// rmcp's end of the connection: decoded messages in, messages to write out.
struct Channels {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    outgoing: mpsc::Sender<ServerJsonRpcMessage>,
}

/// The output side has stopped (the client went away).
#[derive(Debug, thiserror::Error)]
#[error("the connection's output is closed")]
struct OutputClosed;

impl Transport<RoleServer> for Channels {
    type Error = OutputClosed;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), OutputClosed>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move { outgoing.send(item).await.map_err(|_| OutputClosed) }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), OutputClosed> {
        self.incoming.close();
        Ok(())
    }
}

/// What one input line is.
#[derive(Debug)]
enum Kind {
    /// Only whitespace: ignored.
    Blank,
    /// An MCP message: passed on (a request only if admitted).
    Message(Box<ClientJsonRpcMessage>),
    /// A notification rmcp cannot read: dropped (notifications get no answer).
    BadNotification(String),
    /// A JSON object or array that is not an MCP message.
    Invalid(String),
    /// Not JSON at all.
    NotJson(String),
    /// JSON, but a scalar.
    NotObject,
}

fn classify(line: &[u8]) -> Kind {
    let trimmed = line.trim_ascii();
    let trimmed = trimmed.strip_prefix(UTF8_BOM).unwrap_or(trimmed);
    let Some(first) = trimmed.first() else {
        return Kind::Blank;
    };
    match serde_json::from_slice::<ClientJsonRpcMessage>(trimmed) {
        Ok(message) => Kind::Message(Box::new(message)),
        // The typed decoder may stop at the first mismatch: check the syntax of the whole.
        Err(e) => match serde_json::from_slice::<IgnoredAny>(trimmed) {
            Err(syntax) => Kind::NotJson(syntax.to_string()),
            Ok(_) if !matches!(first, b'{' | b'[') => Kind::NotObject,
            Ok(_) if is_notification_shaped(trimmed) => Kind::BadNotification(e.to_string()),
            Ok(_) => Kind::Invalid(e.to_string()),
        },
    }
}

/// An object with a string `method` and no `id`.
fn is_notification_shaped(json: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(json).is_ok_and(|v| {
        v.get("id").is_none() && v.get("method").is_some_and(serde_json::Value::is_string)
    })
}

/// A JSON-RPC error response without an id (none could be read), as one output line.
fn error_line(code: i64, message: &str, detail: String) -> Vec<u8> {
    error_line_for(&serde_json::Value::Null, code, message, detail)
}

/// A JSON-RPC error response for the request `id`, as one output line.
fn error_line_for(id: &serde_json::Value, code: i64, message: &str, detail: String) -> Vec<u8> {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": id,
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
    to_rmcp: mpsc::Sender<ClientJsonRpcMessage>,
    errors: mpsc::Sender<Vec<u8>>,
    in_flight: &InFlight,
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
                Kind::Message(message) => match admit(&message, in_flight) {
                    Ok(()) => {
                        if line.capacity() > KEEP_LINE_CAPACITY {
                            line = Vec::new();
                        }
                        if to_rmcp.send(*message).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    Err(refusal) => refusal,
                },
                Kind::BadNotification(why) => {
                    tracing::debug!(%why, "malformed MCP notification dropped");
                    continue;
                }
                Kind::Invalid(why) => error_line(-32600, "Invalid Request", why),
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

/// Counts a request as in flight, or returns the error line that refuses it. A
/// cancellation stops its request counting (rmcp sends no answer for it).
fn admit(message: &ClientJsonRpcMessage, in_flight: &InFlight) -> Result<(), Vec<u8>> {
    match message {
        JsonRpcMessage::Request(request) => {
            let id = &request.id;
            match in_flight.admit(id) {
                Admission::Admitted => Ok(()),
                Admission::DuplicateId => Err(error_line_for(
                    &id.clone().into_json_value(),
                    -32600,
                    "Invalid Request",
                    format!("request id {id} belongs to a request still in progress"),
                )),
                Admission::Busy => Err(error_line_for(
                    &id.clone().into_json_value(),
                    BUSY,
                    "Server busy",
                    format!(
                        "{MAX_IN_FLIGHT} requests are already in progress on this \
                         connection; send this one again after an answer arrives"
                    ),
                )),
            }
        }
        JsonRpcMessage::Notification(n) => {
            if let ClientNotification::CancelledNotification(c) = &n.notification
                && let Some(id) = &c.params.request_id
            {
                in_flight.finish(id);
            }
            Ok(())
        }
        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => Ok(()),
    }
}

/// Writes rmcp's messages and the framing's error lines, one whole line each, until both
/// are done. Flushes whenever nothing more is ready, so replies are not held back. A request
/// stops counting as in flight once its answer is written.
async fn pump_out<W: AsyncWrite + Unpin>(
    mut from_rmcp: mpsc::Receiver<ServerJsonRpcMessage>,
    mut errors: mpsc::Receiver<Vec<u8>>,
    writer: W,
    in_flight: &InFlight,
) -> std::io::Result<()> {
    let mut writer = BufWriter::with_capacity(IO_BUFFER_BYTES, writer);
    let mut line = Vec::new();
    let (mut rmcp_open, mut errors_open) = (true, true);
    while rmcp_open || errors_open {
        tokio::select! {
            message = from_rmcp.recv(), if rmcp_open => {
                let Some(message) = message else {
                    rmcp_open = false;
                    continue;
                };
                line.clear();
                serde_json::to_writer(&mut line, &message).map_err(std::io::Error::other)?;
                line.push(b'\n');
                if let Some(rest) = line.strip_prefix(ANONYMOUS_ERROR) {
                    // rmcp's error for a message it could not read has no `id` member;
                    // JSON-RPC requires `"id": null` there.
                    writer.write_all(ANONYMOUS_ERROR_WITH_ID).await?;
                    writer.write_all(rest).await?;
                } else {
                    writer.write_all(&line).await?;
                }
                match &message {
                    JsonRpcMessage::Response(r) => in_flight.finish(&r.id),
                    JsonRpcMessage::Error(e) => {
                        if let Some(id) = &e.id {
                            in_flight.finish(id);
                        }
                    }
                    JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {}
                }
                if line.capacity() > KEEP_LINE_CAPACITY {
                    line = Vec::new();
                }
            }
            reply = errors.recv(), if errors_open => match reply {
                Some(reply) => writer.write_all(&reply).await?,
                None => errors_open = false,
            },
        }
        if from_rmcp.is_empty() && errors.is_empty() {
            writer.flush().await?;
        }
    }
    writer.flush().await?;
    writer.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The id of the request on a line, if it is one.
    fn request_id(line: &[u8]) -> Option<RequestId> {
        match classify(line) {
            Kind::Message(m) => match *m {
                JsonRpcMessage::Request(r) => Some(r.id),
                _ => None,
            },
            _ => None,
        }
    }

    fn is_message(kind: &Kind) -> bool {
        matches!(kind, Kind::Message(_))
    }

    #[test]
    fn lines_are_classified() {
        assert!(matches!(classify(b" \r\n"), Kind::Blank));
        assert_eq!(
            request_id(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\r\n"),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            request_id(
                "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}\n".as_bytes()
            ),
            Some(RequestId::String("a".into())),
            "a byte order mark is skipped, as rmcp does"
        );
        for message in [
            &b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}\n"[..],
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
            // An answer to a request of the server.
            b"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n",
        ] {
            assert!(
                is_message(&classify(message)),
                "{}",
                String::from_utf8_lossy(message)
            );
        }
        for invalid in [
            &b"{\"jsonrpc\":\"2.0\"}\n"[..],
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":5}\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":5}\n",
            b"{\"id\":10,\"method\":\"ping\"}\n",
        ] {
            assert!(
                matches!(classify(invalid), Kind::Invalid(_)),
                "{}",
                String::from_utf8_lossy(invalid)
            );
        }
        assert!(matches!(
            classify(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":5}\n"
            ),
            Kind::BadNotification(_)
        ));
        assert!(matches!(classify(b"42\n"), Kind::NotObject));
        assert!(matches!(classify(b"{\"a\": \n"), Kind::NotJson(_)));
        assert!(matches!(classify(b"not json\n"), Kind::NotJson(_)));
        assert!(matches!(classify(b"{} {}\n"), Kind::NotJson(_)));
    }

    #[test]
    fn a_cancellation_frees_the_place_of_its_request() {
        let f = InFlight::default();
        let decode = |line: &[u8]| match classify(line) {
            Kind::Message(m) => *m,
            other => panic!("{other:?}"),
        };
        let call = decode(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}");
        assert!(admit(&call, &f).is_ok());
        let again = admit(&call, &f).err().unwrap_or_default();
        assert!(
            String::from_utf8_lossy(&again).contains("still in progress"),
            "{}",
            String::from_utf8_lossy(&again)
        );
        let cancel = decode(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":4}}",
        );
        assert!(admit(&cancel, &f).is_ok());
        assert!(admit(&call, &f).is_ok(), "the id is free again");
    }

    #[test]
    fn in_flight_requests_are_bounded_and_ids_unique() {
        let f = InFlight::default();
        for i in 0..MAX_IN_FLIGHT as i64 {
            assert_eq!(f.admit(&RequestId::Number(i)), Admission::Admitted);
        }
        assert_eq!(f.admit(&RequestId::Number(0)), Admission::DuplicateId);
        assert_eq!(f.admit(&RequestId::Number(-1)), Admission::Busy);
        f.finish(&RequestId::Number(3));
        assert_eq!(f.admit(&RequestId::Number(-1)), Admission::Admitted);
        assert_eq!(
            f.admit(&RequestId::String("3".into())),
            Admission::Busy,
            "a string id is another id than the number"
        );
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
