//! The Streamable HTTP transport: many sessions at once, each with its own gate session.
//!
//! Defences on by default: bind 127.0.0.1; `Host` must be a loopback name (or one the
//! operator allowed); a browser `Origin` must be a loopback origin (or allowed); a bearer
//! token is required on any non-loopback address and checked on every request when set;
//! connections are bounded in number, per peer and in how long their headers and bodies may
//! take ([`crate::listener`]).
//!
//! Identity: the bearer token is the only thing that selects a profile. The server's own
//! token ([`HttpOptions::token`]) opens sessions with the server's settings; each of
//! [`HttpOptions::profile_tokens`] opens sessions as its profile. The token a request
//! carried travels to the handler as a [`Principal`]; a session is bound to the principal
//! that opened it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;
use crate::handler::{GateServer, SharedSessions};
use crate::listener::HttpLimits;
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

/// A bearer token that authenticates its holder as a profile.
#[derive(Clone, PartialEq, Eq)]
pub struct ProfileToken {
    /// The profile (`toolgate.profiles.NAME` in the settings).
    pub profile: String,
    /// The token.
    pub token: String,
}

impl std::fmt::Debug for ProfileToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfileToken")
            .field("profile", &self.profile)
            .finish_non_exhaustive()
    }
}

/// How the HTTP server listens and whom it lets in.
#[derive(Clone)]
pub struct HttpOptions {
    /// The address to bind.
    pub addr: SocketAddr,
    /// The bearer token (`Authorization: Bearer …`) of sessions with the server's own
    /// settings. When it or any [`profile_tokens`](Self::profile_tokens) is set, every
    /// request must carry one of them. A token is required when `addr` is not loopback.
    pub token: Option<String>,
    /// Tokens that open sessions as a profile, one per profile.
    pub profile_tokens: Vec<ProfileToken>,
    /// Connection bounds and timeouts.
    pub limits: HttpLimits,
    /// Extra `Host` values to accept (names or `host:port`), beyond the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Extra browser origins to accept (`https://app.example:443`, `http://x:*`).
    pub allowed_origins: Vec<String>,
    /// Live sessions kept at most; beyond it `initialize` is refused
    /// ([`MAX_HTTP_SESSIONS`] by default).
    pub max_sessions: usize,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("profile_tokens", &self.profile_tokens)
            .field("limits", &self.limits)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_sessions", &self.max_sessions)
            .finish()
    }
}

impl HttpOptions {
    /// Options for `addr` with no token and the default host and origin lists.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            token: None,
            profile_tokens: Vec::new(),
            limits: HttpLimits::default(),
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
    let tokens = Arc::new(Tokens::new(&options));
    if !options.addr.ip().is_loopback() && !tokens.required() {
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
    let limit = options.max_sessions;
    let body_timeout = options.limits.body_read_timeout;
    // Outermost last: the token is checked before the body is read.
    let router = axum::Router::new()
        .nest_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| session_limit_unavailable(limit, req, next),
        ))
        .layer(axum::middleware::from_fn(delete_answers_no_content))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| read_body_in_time(body_timeout, req, next),
        ))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let tokens = Arc::clone(&tokens);
                async move { authorize(&tokens, req, next).await }
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
    crate::listener::serve(listener, router, options.limits, async move {
        shutdown.await;
        // Ends the sessions, which closes their standing SSE streams.
        stop.cancel();
    })
    .await
    .map_err(ServeError::Http)
}

/// Who a request authenticated as: the profile of the token it carried, `None` for the
/// server's own token (or when no token is configured). Set by [`authorize`] on every
/// request that passes it; read by the handler.
#[derive(Debug, Clone)]
pub(crate) struct Principal {
    pub(crate) profile: Option<Arc<str>>,
}

/// The configured tokens.
struct Tokens {
    default: Option<Vec<u8>>,
    profiles: Vec<(Arc<str>, Vec<u8>)>,
}

impl Tokens {
    fn new(options: &HttpOptions) -> Self {
        Self {
            default: options.token.as_ref().map(|t| t.as_bytes().to_vec()),
            profiles: options
                .profile_tokens
                .iter()
                .map(|p| (Arc::from(p.profile.as_str()), p.token.as_bytes().to_vec()))
                .collect(),
        }
    }

    fn required(&self) -> bool {
        self.default.is_some() || !self.profiles.is_empty()
    }

    /// The principal `presented` authenticates, comparing against every token without an
    /// early exit (timing reveals neither which token nor how much of one matched).
    fn check(&self, presented: Option<&str>) -> Option<Principal> {
        if !self.required() {
            return Some(Principal { profile: None });
        }
        let presented = presented?.as_bytes();
        let mut found = None;
        if let Some(default) = &self.default
            && constant_time_eq(presented, default)
        {
            found = Some(Principal { profile: None });
        }
        for (profile, token) in &self.profiles {
            if constant_time_eq(presented, token) {
                found = Some(Principal {
                    profile: Some(Arc::clone(profile)),
                });
            }
        }
        found
    }
}

/// Checks the bearer token and records who the request is.
async fn authorize(tokens: &Tokens, mut req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match tokens.check(presented) {
        Some(principal) => {
            req.extensions_mut().insert(principal);
            next.run(req).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token\n",
        )
            .into_response(),
    }
}

/// Reads the whole request body within `limit` (a client trickling its body holds a
/// connection no longer than that) and hands it on. The MCP layer buffers bodies anyway.
async fn read_body_in_time(limit: Duration, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(limit, axum::body::to_bytes(body, MAX_REQUEST_BODY_BYTES)).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
        Ok(Err(_)) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONNECTION, "close")],
            format!(
                "the request body could not be read: larger than {MAX_REQUEST_BODY_BYTES} bytes, \
                 or the connection broke\n"
            ),
        )
            .into_response(),
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            [(header::CONNECTION, "close")],
            format!(
                "the request body did not arrive within {} s\n",
                limit.as_secs()
            ),
        )
            .into_response(),
    }
}

/// rmcp answers a session's `DELETE` with `202 Accepted`; clients (the Python SDK) expect
/// the `200`/`204` of a completed deletion and log `Session termination failed: 202`. The
/// session is closed by the time rmcp answers, so `204 No Content` is the truth.
async fn delete_answers_no_content(req: Request, next: Next) -> Response {
    let delete = req.method() == axum::http::Method::DELETE;
    let response = next.run(req).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        return StatusCode::NO_CONTENT.into_response();
    }
    response
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
