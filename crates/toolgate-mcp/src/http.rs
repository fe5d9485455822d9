//! The Streamable HTTP transport: many sessions at once, each with its own gate session.
//!
//! Defences on by default: bind 127.0.0.1; `Host` must be a loopback name (or one the
//! operator allowed); a browser `Origin` must be a loopback origin (or allowed); a bearer
//! token is required on any non-loopback address and checked on every request when set.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;
use crate::handler::{GateServer, SharedSessions};
use crate::sessions::{BoundedSessions, MAX_HTTP_SESSIONS, SESSIONS_FULL, SessionLimitError};
use crate::source::SessionSource;

/// The path the MCP endpoint is served on.
pub const MCP_PATH: &str = "/mcp";

/// An HTTP session with no request for this long is closed and its gate session ended, so
/// clients that vanish without `DELETE` do not keep state (and background tasks) forever.
pub const SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// Largest accepted request body. Tool inputs are capped at 8 MiB by the gate; the rest is
/// JSON-RPC framing.
pub const MAX_REQUEST_BODY_BYTES: usize = 9 * 1024 * 1024;

/// Host names accepted by default (DNS-rebinding defence).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Browser origins accepted by default.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// How the HTTP server listens and whom it lets in.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The address to bind.
    pub addr: SocketAddr,
    /// The bearer token every request must carry (`Authorization: Bearer …`). Required
    /// when `addr` is not a loopback address.
    pub token: Option<String>,
    /// Extra `Host` values to accept (names or `host:port`), beyond the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Extra browser origins to accept (`https://app.example:443`, `http://x:*`).
    pub allowed_origins: Vec<String>,
    /// Live sessions kept at most; beyond it `initialize` is refused
    /// ([`MAX_HTTP_SESSIONS`] by default).
    pub max_sessions: usize,
}

impl HttpOptions {
    /// Options for `addr` with no token and the default host and origin lists.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            token: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_sessions: MAX_HTTP_SESSIONS,
        }
    }
}

/// Binds and serves until `shutdown` completes; then every session is ended (cancelling
/// its running calls). Reports the bound address through `on_bound` (useful with port 0).
pub async fn serve_http(
    source: Arc<dyn SessionSource>,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let stop = CancellationToken::new();
    if !options.addr.ip().is_loopback() && options.token.is_none() {
        return Err(ServeError::TokenRequired(options.addr));
    }
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    if !options.addr.ip().is_loopback() && !options.addr.ip().is_unspecified() {
        hosts.push(options.addr.ip().to_string());
    }
    hosts.extend(options.allowed_hosts.iter().cloned());
    let mut origins: Vec<String> = LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).collect();
    origins.extend(options.allowed_origins.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES)
        .with_cancellation_token(stop.child_token());
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE_TIMEOUT);
    let shared = SharedSessions::new();
    let service = StreamableHttpService::new(
        move || Ok(GateServer::for_http(Arc::clone(&source), &shared)),
        Arc::new(BoundedSessions::new(sessions, options.max_sessions)),
        config,
    );
    let token: Option<Arc<str>> = options.token.as_deref().map(Arc::from);
    let limit = options.max_sessions;
    let router = axum::Router::new()
        .nest_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| session_limit_unavailable(limit, req, next),
        ))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let token = token.clone();
                async move { authorize(token.as_deref(), req, next).await }
            },
        ));
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.addr,
            source,
        })?;
    let bound = listener.local_addr().map_err(ServeError::Http)?;
    on_bound(bound);
    tracing::info!(%bound, "serving MCP over Streamable HTTP at {MCP_PATH}");
    // A reply is an SSE stream written in several small pieces; with Nagle's algorithm the
    // later pieces wait for the client's delayed ACK (≈40 ms per request on Linux).
    let listener = listener.tap_io(|stream| {
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            stop.cancel();
        })
        .await
        .map_err(ServeError::Http)
}

/// Checks the bearer token, when one is configured.
async fn authorize(token: Option<&str>, req: Request, next: Next) -> Response {
    let Some(expected) = token else {
        return next.run(req).await;
    };
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match presented {
        Some(p) if constant_time_eq(p.as_bytes(), expected.as_bytes()) => next.run(req).await,
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token\n",
        )
            .into_response(),
    }
}

/// Seconds a client refused for a full session table is asked to wait.
const SESSIONS_FULL_RETRY_AFTER_SECS: u32 = 30;

/// rmcp answers an `initialize` refused by [`BoundedSessions`] with `500` ("Encounter an
/// error when create session: …"). A full session table is temporary and the client may
/// try again, so the answer becomes `503 Service Unavailable` with `Retry-After`. Other
/// responses pass unchanged; only `500`s (small error texts) are read.
async fn session_limit_unavailable(limit: usize, req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, ERROR_BODY_MAX_BYTES).await else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "internal error\n").into_response();
    };
    if !String::from_utf8_lossy(&bytes).contains(SESSIONS_FULL) {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    }
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(
            header::RETRY_AFTER,
            SESSIONS_FULL_RETRY_AFTER_SECS.to_string(),
        )],
        format!("{}\n", SessionLimitError::Full { limit }),
    )
        .into_response()
}

/// Largest error body [`session_limit_unavailable`] reads.
const ERROR_BODY_MAX_BYTES: usize = 64 * 1024;

/// Compares without an early exit, so response timing does not reveal the matching prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
