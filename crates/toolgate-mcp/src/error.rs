//! The crate's errors.

use std::net::SocketAddr;

use thiserror::Error;

/// Why a server could not start or stopped.
#[derive(Debug, Error)]
pub enum ServeError {
    /// The MCP handshake or transport failed before the connection was established.
    #[error("MCP connection failed: {0}")]
    Connect(String),
    /// The server task ended abnormally.
    #[error("MCP server task failed: {0}")]
    Task(String),
    /// The HTTP listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The reason.
        source: std::io::Error,
    },
    /// An HTTP server I/O error.
    #[error("HTTP server: {0}")]
    Http(std::io::Error),
    /// Serving on a non-loopback address without a bearer token.
    #[error(
        "refusing to serve on {0} without a bearer token: any host on the network could run \
         tools; pass --token (or TOOLGATE_MCP_TOKEN), or bind 127.0.0.1"
    )]
    TokenRequired(SocketAddr),
}

/// Why a gate session could not be opened for a client.
#[derive(Debug, Clone, Error)]
#[error("cannot open a toolgate session: {0}")]
pub struct SessionError(pub String);
