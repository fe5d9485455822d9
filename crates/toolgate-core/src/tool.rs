//! The `Tool` trait: how a tool describes itself, checks its input and runs.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize as _;
use serde::de::DeserializeOwned;
use serde_json::Value;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use toolgate_protocol::{CallFacts, ErrorCode, Layer, ToolOutput, ToolSpec};

use crate::delegate::GateHandle;
use crate::sandbox::Room;
use crate::session::Session;
use crate::stages::ReadFilter;

/// Why a tool refused or failed a call. The gate maps each variant onto an [`ErrorCode`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The input is well-formed but cannot be acted on (stage 3): say what to send instead.
    #[error("{0}")]
    InvalidRequest(String),
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// The tool gave up after its time limit.
    #[error("timed out after {0} ms")]
    Timeout(u64),
    /// The tool gave up after its time limit and has partial output the model should see
    /// (e.g. what a command printed before it was killed).
    #[error("timed out after {ms} ms")]
    TimeoutWithOutput {
        /// The limit that was reached.
        ms: u64,
        /// What the tool produced before it was stopped.
        output: String,
    },
    /// The tool noticed cancellation and stopped.
    #[error("cancelled")]
    Cancelled,
    /// The tool needed a sandbox that could not be set up.
    #[error("{0}")]
    SandboxUnavailable(String),
    /// A field the schema cannot judge is malformed (a URL that is not one, a scheme the
    /// tool does not speak): say what to send instead.
    #[error("{0}")]
    InvalidInput(String),
    /// The tool refused on a safety rule of its own that no permission can lift (a network
    /// destination on a refused address): say why.
    #[error("{0}")]
    Denied(String),
    /// The user, asked by the tool itself (a question, a plan to approve), said no.
    #[error("{0}")]
    Declined(String),
    /// A per-session budget of the tool is used up (WebSearch's search cap).
    #[error("{0}")]
    RateLimited(String),
    /// The tool needs the user's answer, which the front door collects out of band (MCP
    /// `input_required`): nothing was done, and the retry brings the answer.
    #[error("{0}")]
    InputRequired(String),
}

impl ToolError {
    /// The public code for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            ToolError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            ToolError::Failed(_) => ErrorCode::ExecutionFailed,
            ToolError::Timeout(_) | ToolError::TimeoutWithOutput { .. } => ErrorCode::Timeout,
            ToolError::Cancelled => ErrorCode::Cancelled,
            ToolError::SandboxUnavailable(_) => ErrorCode::SandboxUnavailable,
            ToolError::InvalidInput(_) => ErrorCode::InvalidInput,
            ToolError::Denied(_) | ToolError::Declined(_) => ErrorCode::Denied,
            ToolError::RateLimited(_) => ErrorCode::RateLimited,
            ToolError::InputRequired(_) => ErrorCode::InputRequired,
        }
    }

    /// The layer a refusal by the tool itself names ([`Layer::Tool`]), as a policy refusal
    /// names its own: the model and the audit log tell "a rule said no" from "this tool
    /// never does that". `None` for failures that refuse nothing.
    pub fn layer(&self) -> Option<Layer> {
        match self {
            ToolError::Denied(_) | ToolError::RateLimited(_) => Some(Layer::Tool),
            ToolError::Declined(_) => Some(Layer::User),
            _ => None,
        }
    }
}

/// Everything a tool may use while it runs. Cloning is cheap.
#[derive(Clone)]
pub struct ToolContext {
    /// The session the call belongs to: roots, cwd and per-session state.
    pub session: Arc<Session>,
    /// The caller's id for this call.
    pub call_id: String,
    /// Fires when the call is cancelled; long-running tools should watch it.
    pub cancel: CancellationToken,
    /// The effective time limit (already clamped to the tool's maximum).
    pub timeout: Duration,
    /// The room chosen by the sandbox stage; `None` runs unsandboxed.
    pub room: Option<Arc<dyn Room>>,
    /// Files a directory walker must skip (deny/ask rules on reading them); `None` when no
    /// rule limits reading by path.
    pub read_filter: Option<ReadFilter>,
    /// The gate running the call, for tools that act on the session itself (questions for
    /// the user, sub-agents, a call made on this one's behalf). See [`crate::delegate`].
    pub gate: GateHandle,
}

/// What a call asks of the gate itself, read by the tool from its own typed input: the
/// gate never looks into an input for fields by name, so a tool whose input happens to have
/// a `timeout` meaning something else (an upstream MCP tool's) cannot stretch its own run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunRequest {
    /// A timeout the call asked for, in milliseconds; the gate clamps it to the tool's
    /// [`TimeoutSpec`](toolgate_protocol::TimeoutSpec).
    pub timeout_ms: Option<u64>,
    /// The call asks to run outside the sandbox (Bash's `dangerouslyDisableSandbox`); the
    /// sandbox stage honours it only where the policy allows.
    pub outside_sandbox: bool,
}

/// A call's input after stages 3–4: the tool's typed input, and the facts policy reads.
pub struct Prepared {
    input: Box<dyn Any + Send + Sync>,
    /// Facts for the policy stage.
    pub facts: CallFacts,
    /// The input as hooks and the audit log should see it (paths made absolute); `None`
    /// means the raw input is already normalised.
    pub normalized: Option<Value>,
    /// What the call asks of the gate (timeout, sandbox).
    pub run: RunRequest,
}

impl Prepared {
    /// Wraps a typed input.
    pub fn new<T: Any + Send + Sync>(input: T, facts: CallFacts) -> Self {
        Self {
            input: Box::new(input),
            facts,
            normalized: None,
            run: RunRequest::default(),
        }
    }

    /// Records the normalised input for hooks and the audit log.
    pub fn with_normalized(mut self, value: Value) -> Self {
        self.normalized = Some(value);
        self
    }

    /// Takes the typed input back out.
    pub fn into_input<T: Any>(self) -> Result<T, ToolError> {
        self.input
            .downcast::<T>()
            .map(|b| *b)
            .map_err(|_| ToolError::Failed("internal: prepared input of the wrong type".into()))
    }
}

/// A tool, as the gate sees it. Most tools implement [`TypedTool`] instead and get this trait
/// for free.
///
/// Tools never check permissions: the gate does, once, before `run` is called.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The tool's self-description.
    fn spec(&self) -> &ToolSpec;

    /// Stages 3 and 4: parse the schema-valid input, check it semantically and gather facts.
    fn prepare(&self, input: &Value, ctx: &ToolContext) -> Result<Prepared, ToolError>;

    /// Stage 9: do the work.
    async fn run(&self, prepared: Prepared, ctx: ToolContext) -> Result<ToolOutput, ToolError>;

    /// Whether the tool's definition is always sent in full, never deferred (Claude Code's
    /// `alwaysLoad`: an MCP server's `alwaysLoad: true`, a tool's
    /// `_meta["anthropic/alwaysLoad"]`). Only [`Deferral`](crate::Deferral) reads it: what
    /// the model is shown, never what a call may do (default: false).
    fn always_load(&self) -> bool {
        false
    }
}

/// A tool with a typed input struct. The gate validates the JSON Schema first, so
/// deserialisation failures here mean the schema and the struct disagree.
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The input struct.
    type Input: DeserializeOwned + Send + Sync + 'static;

    /// The tool's self-description.
    fn spec(&self) -> &ToolSpec;

    /// Stage 3: semantic checks (default: none). May normalise the input in place.
    fn validate(&self, _input: &mut Self::Input, _ctx: &ToolContext) -> Result<(), ToolError> {
        Ok(())
    }

    /// Stage 4: facts for policy (default: none).
    fn analyze(&self, _input: &Self::Input, _ctx: &ToolContext) -> CallFacts {
        CallFacts::default()
    }

    /// The input as hooks and the audit log should see it, where it differs from the raw
    /// input (for example with absolute paths).
    fn normalized(&self, _input: &Self::Input) -> Option<Value> {
        None
    }

    /// What the call asks of the gate (a timeout, running outside the sandbox), read from
    /// the typed input (default: nothing).
    fn run_request(&self, _input: &Self::Input) -> RunRequest {
        RunRequest::default()
    }

    /// Stage 9.
    async fn run(&self, input: Self::Input, ctx: ToolContext) -> Result<ToolOutput, ToolError>;
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn spec(&self) -> &ToolSpec {
        TypedTool::spec(self)
    }

    fn prepare(&self, input: &Value, ctx: &ToolContext) -> Result<Prepared, ToolError> {
        let mut typed: T::Input = T::Input::deserialize(input).map_err(|e| {
            ToolError::InvalidRequest(format!("input does not fit {}: {e}", self.spec().name))
        })?;
        self.validate(&mut typed, ctx)?;
        let facts = self.analyze(&typed, ctx);
        let normalized = self.normalized(&typed);
        let run = self.run_request(&typed);
        let mut prepared = Prepared::new(typed, facts);
        prepared.normalized = normalized;
        prepared.run = run;
        Ok(prepared)
    }

    async fn run(&self, prepared: Prepared, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let input = prepared.into_input::<T::Input>()?;
        TypedTool::run(self, input, ctx).await
    }
}
