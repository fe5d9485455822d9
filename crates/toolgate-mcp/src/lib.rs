//! toolgate-mcp: the MCP server front door. Any MCP client (Claude Code, Claude Desktop,
//! Codex, the Python and TypeScript SDKs) sees the tools of a toolgate session, and every
//! `tools/call` goes through the same [`Gate`](toolgate_core::Gate) pipeline as the other
//! front doors: schema, hooks, permission policy, constraints, sandbox, audit.
//!
//! - [`serve_stdio`] / [`serve_io`]: one connection, newline-delimited JSON-RPC;
//! - [`serve_http`]: Streamable HTTP, many sessions, each with its own gate session;
//! - [`SessionSource`]: where a connection's gate session comes from, for a
//!   [`ClientIdentity`]: the profile the client authenticated as (its bearer token over
//!   HTTP; the launch's `--profile` over stdio) and its self-declared name, which is only a
//!   label; a [`Gate`](toolgate_core::Gate) is itself a source.
//!
//! `tools/list` is the session's registry view with MCP annotations (`readOnlyHint`,
//! `destructiveHint`, `idempotentHint`, `openWorldHint`) and output schemas; when an upstream
//! MCP server's tools change, the client hears `notifications/tools/list_changed`. A failed call is an `isError` result whose `_meta` says why
//! (see [`convert`]): `{"toolgate/code": "denied", "toolgate/layer": "rule"}` for a policy
//! denial, `invalid_input` for a schema violation, `unknown_tool`, `execution_failed`,
//! `cancelled`, … Protocol faults are JSON-RPC errors: unparsable and oversize stdio lines
//! are answered by this crate's framing ([`serve_io`]), the rest (unknown methods, bad
//! params) by rmcp (pinned exactly in the workspace) behind these types.
//!
//! "Ask" decisions become MCP elicitation to the calling client when it supports it
//! ([`ElicitingPrompter`]): an `elicitation/create` request up to 2025-11-25, an
//! `input_required` result with an integrity-protected, single-use `requestState` on
//! 2026-07-28 ([`mrtr`]).
//!
//! ```no_run
//! # async fn demo(gate: toolgate_core::Gate) -> Result<(), toolgate_mcp::ServeError> {
//! use std::sync::Arc;
//! toolgate_mcp::serve_stdio(Arc::new(gate)).await
//! # }
//! ```
#![deny(missing_docs)]

pub mod convert;
mod elicit;
mod error;
mod handler;
mod http;
mod listener;
pub mod mrtr;
mod search_mode;
mod sessions;
mod source;
mod stdio;

pub use elicit::{ELICITATION_TIMEOUT, ElicitingPrompter};
pub use error::{ServeError, SessionError};
pub use handler::{GateServer, MAX_SESSIONLESS_CLIENTS, PROGRESS_INTERVAL};
pub use http::{
    HttpOptions, MAX_REQUEST_BODY_BYTES, MCP_PATH, ProfileToken, SESSION_IDLE_TIMEOUT, serve_http,
};
pub use listener::{
    BODY_READ_TIMEOUT, HEADER_READ_TIMEOUT, HttpLimits, MAX_HTTP_CONNECTIONS,
    MAX_HTTP_CONNECTIONS_PER_PEER,
};
pub use mrtr::{APPROVAL_INPUT, APPROVAL_STATE_TTL, StateError};
pub use search_mode::{CALL_TOOL, SEARCH_TOOLS, ToolsMode};
pub use sessions::{MAX_HTTP_SESSIONS, SessionLimitError};
pub use source::{ClientIdentity, MAX_CLIENT_NAME_CHARS, SessionSource, open_labelled};
pub use stdio::{BUSY, MAX_IN_FLIGHT, MAX_LINE_BYTES, serve_io, serve_stdio};

/// The client name recorded for a client that did not send `clientInfo`.
pub const UNNAMED_CLIENT: &str = "mcp";
