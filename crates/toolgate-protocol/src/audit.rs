use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ErrorCode, PermissionMode, Stage, Verdict};

/// The audit record of one call. The audit log adds `seq`, `prev` and `hash` when it writes
/// the record, chaining it to the one before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// What the record is about: a tool call, or a network decision of the sandbox's proxy.
    /// (The audit log's own records — recoveries, deliveries — are not `CallRecord`s.)
    pub kind: RecordKind,
    /// RFC 3339 UTC timestamp with milliseconds, taken when the call arrived.
    pub ts: String,
    /// The session the call belongs to.
    pub session_id: String,
    /// The caller's id for the call.
    pub call_id: String,
    /// The client or profile that sent it, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// For a call made by a sub-agent (or on behalf of another call, as Monitor starts its
    /// command): the id of the call that made it, so every call an Agent call led to can be
    /// found under it. Absent for calls the model made directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
    /// The tool name as asked for (possibly unknown).
    pub tool: String,
    /// The input, with secrets redacted.
    pub input: Value,
    /// Each stage the call reached, in order.
    pub stages: Vec<StageRecord>,
    /// What each hook said.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookRecord>,
    /// The permission verdict, if the call reached stage 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// How the call ended.
    pub status: CallStatus,
    /// The error code when `status` is `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
    /// Wall time from arrival to result, in microseconds.
    pub duration_us: u64,
    /// Size of the input JSON in bytes.
    pub input_bytes: u64,
    /// Size of the output content in bytes.
    pub output_bytes: u64,
    /// The session's permission mode changed while this call ran (ExitPlanMode,
    /// EnterPlanMode): from what to what.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_change: Option<ModeChange>,
}

/// A change of a session's permission mode, recorded on the call that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeChange {
    /// The mode before the call.
    pub from: PermissionMode,
    /// The mode after it.
    pub to: PermissionMode,
}

/// The kind of a [`CallRecord`], written as its [`as_str`](RecordKind::as_str) name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A tool call through the gate.
    Call,
    /// A connection decision of the sandbox's network proxy.
    Network,
    /// A new settings version put in force, or one rejected, by a policy reload
    /// (`--watch`); its `input` says which (docs/audit.md, "Reload records").
    Reload,
    /// An upstream MCP server's tools changed, or a tool's definition no longer matches
    /// its pin (docs/audit.md, "MCP records").
    Mcp,
}

impl RecordKind {
    /// The name in the log (`call`, `network`, `reload`).
    pub fn as_str(&self) -> &'static str {
        match self {
            RecordKind::Call => "call",
            RecordKind::Network => "network",
            RecordKind::Reload => "reload",
            RecordKind::Mcp => "mcp",
        }
    }
}

/// How a recorded call ended, written as its [`as_str`](CallStatus::as_str) name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The tool ran and returned a result.
    Ok,
    /// The call was refused or failed; `code` says why.
    Error,
}

impl CallStatus {
    /// The name in the log (`ok`, `error`).
    pub fn as_str(&self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::Error => "error",
        }
    }
}

/// How one stage went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// Which stage.
    pub stage: Stage,
    /// Passed, failed or skipped.
    pub status: StageStatus,
    /// The verdict, for deciding stages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// A short note (why it failed, which sandbox, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Outcome of one stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    /// The stage let the call through.
    Pass,
    /// The stage stopped the call.
    Fail,
    /// The stage had nothing to do.
    Skip,
}

/// What one hook handler said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookRecord {
    /// The event (`PreToolUse`, …).
    pub event: String,
    /// The handler as configured (command line or URL).
    pub handler: String,
    /// `allow`, `deny`, `ask`, `none`, `error`, `timeout`.
    pub outcome: String,
    /// The hook's reason or error text, capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// How long the handler ran.
    pub duration_ms: u64,
}
