//! The core of toolgate: the [`Tool`] trait, the [`Registry`] and its per-session
//! [`View`]s, [`Session`] state, and the [`Gate`] that runs every call through the pipeline
//! once:
//!
//! ```text
//! tool_use ─► 1 resolve ─► 2 schema ─► 3 validate ─► 4 analyze ─► 5 PreToolUse hooks
//!                                                                  │ (updatedInput → back to 2)
//!    audit ◄── 11 shape ◄── 10 post hooks ◄── 9 execute ◄── 8 sandbox ◄── 7 constrain ◄── 6 decide
//! ```
//!
//! Policy, prompts, hooks, constraints, the sandbox and the audit sink are pluggable stages
//! ([`stages`], [`sandbox`]): this crate owns the seams and the pipeline, each capability
//! crate implements its seam (`toolgate-policy`, `-hooks`, `-sandbox`, `-audit`), and
//! `toolgate-setup` wires them from settings. The defaults are no hooks, no sandbox, no audit
//! and *no policy*, which refuses every call: a gate never runs a tool without a decision.
//! Tools never check permissions: the gate does, before `run` is called.
//!
//! ```
//! use toolgate_core::{Gate, Registry, TypedTool, ToolContext, ToolError};
//! use toolgate_protocol::*;
//! use serde_json::json;
//!
//! struct Echo(ToolSpec);
//! #[derive(serde::Deserialize)]
//! struct EchoInput { text: String }
//!
//! #[async_trait::async_trait]
//! impl TypedTool for Echo {
//!     type Input = EchoInput;
//!     fn spec(&self) -> &ToolSpec { &self.0 }
//!     async fn run(&self, input: EchoInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::text(input.text))
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let spec = ToolSpec {
//!     name: "Echo".into(), version: "1".into(), description: "Echoes text".into(),
//!     input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}},
//!                          "required": ["text"], "additionalProperties": false}),
//!     output_schema: None,
//!     annotations: ToolAnnotations { read_only: true, ..Default::default() },
//!     concurrency: Concurrency::Shared,
//!     timeout: TimeoutSpec { default_ms: 1000, max_ms: 1000 },
//!     subject: Subject::None,
//! };
//! let registry = Registry::builder().register(Echo(spec)).build().unwrap();
//! let dir = tempfile::tempdir().unwrap();
//! // This example allows everything; real gates get the permission engine (toolgate-setup).
//! let gate = Gate::builder()
//!     .workspace(dir.path())
//!     .registry(registry)
//!     .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
//!     .build()
//!     .unwrap();
//!
//! let ok = gate.execute(ToolCall::new("1", "Echo", json!({"text": "hi"}))).await;
//! assert_eq!(ok.output().unwrap().joined_text(), "hi");
//!
//! let bad = gate.execute(ToolCall::new("2", "Echo", json!({"text": 3}))).await;
//! assert_eq!(bad.error().unwrap().code, ErrorCode::InvalidInput);
//! # });
//! ```
#![deny(missing_docs)]

pub mod asking;
pub mod child;
pub mod deferral;
pub mod delegate;
mod gate;
pub mod live_tools;
pub mod outputs;
pub mod progress;
pub mod registry;
mod runtime_dir;
pub mod sandbox;
pub mod session;
mod shape;
mod stage_set;
pub mod stages;
mod tool;
pub mod tool_search;

pub use deferral::{Deferral, LoadedTools};
pub use delegate::{ChildError, ChildOptions, GateHandle, MAX_AGENT_DEPTH};
pub use gate::{
    Analyzed, BuildError, DEFAULT_MAX_INPUT_BYTES, Gate, GateBuilder, Limits, TIMEOUT_GRACE,
};
pub use live_tools::{ToolsHandle, ViewPlanner};
pub use registry::{Registry, RegistryBuilder, Snapshot, View, ViewOptions};
pub use runtime_dir::user_state_dir;
pub use session::{Session, SessionOptions, Workspace};
pub use shape::DEFAULT_MAX_RESULT_BYTES;
pub use stage_set::StageSet;
pub use tool::{Prepared, RunRequest, Tool, ToolContext, ToolError, TypedTool};
