//! Accepting HTTP connections with bounds: how many at once, how many per peer address, and
//! how long a client may take to send its request headers.
//!
//! Without them (axum's own `serve`), a client that opens connections and never finishes
//! its headers holds a descriptor each for ever; ≈1,100 such connections exhausted the
//! process's descriptors and every legitimate request timed out (issue #21). Now:
//!
//! - a connection must deliver a request's complete headers within
//!   [`HttpLimits::header_read_timeout`] of starting it (or of the previous response, for a
//!   kept-alive connection), else it is closed — hyper's own timer, which axum's `serve`
//!   does not switch on;
//! - at most [`HttpLimits::max_connections`] are open at once: beyond that the server stops
//!   accepting, so newcomers wait in the kernel's backlog rather than costing descriptors,
//!   and are served as soon as a slot frees (slow connections free theirs at the header
//!   timeout);
//! - at most [`HttpLimits::max_connections_per_peer`] per peer IP address: one more is
//!   answered `503` with `Retry-After` and closed at once, so one address cannot take all
//!   the slots from the others;
//! - the request body must arrive within [`HttpLimits::body_read_timeout`]
//!   ([`crate::http`] reads it whole before the MCP layer sees it).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

/// A request's headers must be complete this long after the connection (or its previous
/// response) began. Ten seconds is ages for a real client on any network; a slow-headers
/// attacker holds a slot at most this long.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A request's body must be complete this long after its headers. Bodies are at most
/// [`crate::MAX_REQUEST_BODY_BYTES`] (9 MiB): 30 s allows ≈300 KB/s.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections open at once. Each costs a descriptor; the common soft limit is 1,024 per
/// process, and the tools of the sessions need descriptors too (files, pipes, children).
pub const MAX_HTTP_CONNECTIONS: usize = 512;

/// Connections open at once from one IP address. An MCP client uses a handful (a POST per
/// call in flight, one standing GET); a reverse proxy in front of the server is one address
/// for every client, and needs this raised (`--max-connections-per-peer`).
pub const MAX_HTTP_CONNECTIONS_PER_PEER: usize = 64;

/// How long a connection refused for its peer's count gets to take the `503` answer.
const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// After shutdown is signalled, how long open connections get to finish their responses.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Seconds a client refused for its peer's connection count is asked to wait.
const PEER_FULL_RETRY_AFTER_SECS: u32 = 5;

/// The bounds on HTTP connections (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Time to complete a request's headers.
    pub header_read_timeout: Duration,
    /// Time to complete a request's body.
    pub body_read_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
    /// Connections open at once from one IP address.
    pub max_connections_per_peer: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_read_timeout: BODY_READ_TIMEOUT,
            max_connections: MAX_HTTP_CONNECTIONS,
            max_connections_per_peer: MAX_HTTP_CONNECTIONS_PER_PEER,
        }
    }
}

/// Open connections per peer address.
#[derive(Default)]
struct Peers(Mutex<HashMap<IpAddr, usize>>);

/// A counted place of one peer; gives it back when dropped.
struct PeerSlot {
    peers: Arc<Peers>,
    ip: IpAddr,
}

impl Peers {
    fn enter(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<PeerSlot> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let n = map.entry(ip).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(PeerSlot {
            peers: Arc::clone(self),
            ip,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut map = self.peers.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = map.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.ip);
            }
        }
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown` completes; then stops
/// accepting and gives open connections [`SHUTDOWN_GRACE`] to finish.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let peers = Arc::new(Peers::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut conns = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        // Reap finished connection tasks so the set does not grow.
        while conns.try_join_next().is_some() {}
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // EMFILE and friends: wait a moment instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(slot) = peers.enter(peer.ip(), limits.max_connections_per_peer) else {
            tracing::warn!(%peer, "HTTP connection refused: too many from this address");
            conns.spawn(async move {
                refuse(stream, limits.max_connections_per_peer).await;
                drop(permit);
            });
            continue;
        };
        let router = router.clone();
        let stop = stop_rx.clone();
        conns.spawn(async move {
            serve_connection(stream, peer, router, limits, stop).await;
            drop((slot, permit));
        });
    }
    let _ = stop_tx.send(true);
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, async {
        while conns.join_next().await.is_some() {}
    })
    .await
    .is_err()
    {
        conns.abort_all();
    }
    Ok(())
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: axum::Router,
    limits: HttpLimits,
    mut stop: watch::Receiver<bool>,
) {
    // A reply is an SSE stream written in several small pieces; with Nagle's algorithm the
    // later pieces wait for the client's delayed ACK (≈40 ms per request on Linux).
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
    }
    let service = TowerToHyperService::new(router);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "HTTP connection ended");
                }
                return;
            }
            changed = stop.changed(), if !stopping => {
                stopping = true;
                if changed.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// Answers `503` on a connection over its peer's limit, without reading it, and closes it.
async fn refuse(mut stream: TcpStream, limit: usize) {
    let body = format!(
        "{limit} connections from your address are open, the most this server accepts from one \
         address; close some or retry later\n"
    );
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: {PEER_FULL_RETRY_AFTER_SECS}\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, async {
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}
