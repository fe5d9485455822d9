//! The vocabulary every toolgate crate speaks.
//!
//! A model *asks* for an action with a [`ToolCall`]. A tool describes itself with a
//! [`ToolSpec`] and answers with a [`ToolOutput`]. Between the two, the gate records what each
//! stage decided as a [`Verdict`], explains failures with an [`ErrorCode`], gathers the
//! tool-aware [`CallFacts`] that policy reads, and writes one [`CallRecord`] to the audit log.
//!
//! The [`wire`] module converts these types to and from the shapes the model APIs use:
//! Anthropic `tool_use` / `tool_result` blocks, OpenAI function calls, and MCP tool
//! definitions.
//!
//! The [`jsonl`] module reads the JSON-lines call stream of `toolgate exec`.
//!
//! The [`net`] module holds the network destination knowledge both network doors (WebFetch
//! and the sandbox proxy) share: refused address ranges, host parsing, domain patterns.
//!
//! This crate has no policy and no I/O (except reading the host's own interface addresses in
//! [`net::local_addresses`]); it only names things, so that the policy engine, hooks,
//! sandbox, audit log and front doors agree on what a call is.
//!
//! ```
//! use toolgate_protocol::{ToolCall, wire};
//! let line = serde_json::json!({
//!     "type": "tool_use", "id": "toolu_1", "name": "Read",
//!     "input": {"file_path": "/tmp/x"}
//! });
//! let call: ToolCall = wire::parse_call(&line).unwrap();
//! assert_eq!(call.name, "Read");
//! ```
#![deny(missing_docs)]

mod audit;
mod call;
mod error;
mod facts;
pub mod jsonl;
mod mode;
pub mod net;
mod output;
pub mod paths;
mod result;
mod spec;
mod verdict;
pub mod wire;

pub use audit::{
    CallRecord, CallStatus, HookRecord, ModeChange, RecordKind, StageRecord, StageStatus,
};
pub use call::ToolCall;
pub use error::{CallError, ErrorCode};
pub use facts::{Access, Beneath, CallFacts, CommandFact, Finding, PathFact, Risk};
pub use mode::{PermissionMode, UnknownMode};
pub use output::{Content, ToolOutput};
pub use result::CallResult;
pub use spec::{
    Concurrency, MCP_PREFIX, Subject, TOOL_ALIASES, TimeoutSpec, ToolAnnotations, ToolSpec,
    canonical_tool_name, tool_name_aliases,
};
pub use verdict::{Decision, Layer, Stage, Verdict};
