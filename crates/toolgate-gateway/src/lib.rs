//! toolgate-gateway: the MCP *client* side of toolgate. Upstream MCP servers configured in
//! `mcpServers` (toolgate settings, the workspace's `.mcp.json`) are started, and each
//! tool they offer becomes a registry entry named `mcp__<server>__<tool>`, so every call
//! passes the same gate as the built-in tools: hooks, rules, modes, constraints, audit.
//!
//! What the gateway adds on top of the gate: tool definitions are pinned when first
//! approved (a changed one is refused until `toolgate mcp approve`), descriptions are
//! scanned for injection markers, stdio servers get an environment allow-list and a
//! bounded stderr log, every call has a time limit and a result size cap, and a server
//! that crashes is restarted with backoff.
#![deny(missing_docs)]

pub mod config;
mod connect;
pub mod edit;
mod gateway;
mod http;
mod linecap;
pub mod names;
pub mod pins;
pub mod scan;
mod server;
mod sse;
mod tool;

pub use config::{Network, Origin, ServerConfig, Transport};
pub use connect::{MAX_STDERR_BYTES, RoomBase, StderrLog};
pub use gateway::{Gateway, GatewayHost, Skipped, run_upstreams_on};
pub use http::{MAX_HTTP_BODY_BYTES, MAX_SSE_EVENT_BYTES};
pub use linecap::MAX_STDIO_LINE_BYTES;
pub use server::{
    Event, EventSink, RESTART_BACKOFF_MAX, RESTART_BACKOFF_START, Server, Status,
    TOOLS_CHANGED_INTERVAL,
};
pub use tool::{
    ALWAYS_LOAD_META, MAX_RESULT_BINARY_BYTES, MAX_RESULT_TEXT_BYTES, MAX_STRUCTURED_BYTES,
    UpstreamTool, always_load,
};

/// An upstream tool definition as the server sent it.
pub use rmcp::model::Tool as UpstreamDefinition;

use thiserror::Error;

/// A gateway problem that stops a front door from starting.
#[derive(Debug, Error)]
pub enum GatewayError {
    /// `mcpServers` or `.mcp.json` is malformed.
    #[error("{0}")]
    Config(String),
    /// The pin store cannot be read or written.
    #[error("MCP pins: {0}")]
    Pins(String),
    /// The runtime for upstream connections could not start.
    #[error("cannot start the runtime for MCP servers: {0}")]
    Runtime(String),
}
