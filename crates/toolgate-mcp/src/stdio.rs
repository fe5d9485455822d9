//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout, one session per process.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;
use crate::handler::GateServer;
use crate::source::SessionSource;

/// Serves one MCP connection on this process's stdin and stdout until the client closes
/// stdin. Nothing but protocol is written to stdout; logs go to stderr.
pub async fn serve_stdio(source: Arc<dyn SessionSource>) -> Result<(), ServeError> {
    serve_io(source, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves one MCP connection over any byte stream pair (a pipe, a socket, a test duplex).
/// Lines longer than rmcp's limit (16 MiB) are discarded, malformed lines are answered
/// with JSON-RPC errors, and running calls are cancelled when the stream closes.
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
    let server = GateServer::new(source).cancel_on(closed.clone());
    let reader = EofSignal {
        inner: reader,
        closed,
    };
    let running = server
        .serve((reader, writer))
        .await
        .map_err(|e| ServeError::Connect(e.to_string()))?;
    let reason = running
        .waiting()
        .await
        .map_err(|e| ServeError::Task(e.to_string()))?;
    tracing::info!(?reason, "MCP connection closed");
    Ok(())
}

/// A reader that cancels `closed` at end of input or on a read error.
struct EofSignal<R> {
    inner: R,
    closed: CancellationToken,
}

impl<R: AsyncRead + Unpin> AsyncRead for EofSignal<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let wanted = buf.remaining() > 0;
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &poll {
            Poll::Ready(Ok(())) if wanted && buf.filled().len() == before => self.closed.cancel(),
            Poll::Ready(Err(_)) => self.closed.cancel(),
            _ => {}
        }
        poll
    }
}
