use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

use crate::{Layer, Stage};

/// The machine-readable reason a call did not succeed. Structural errors (`invalid_input`)
/// and policy errors (`denied`) are distinct so the model knows which way to correct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The line or object was not a tool call in any supported wire form.
    MalformedCall,
    /// No tool of that name in this session's view.
    UnknownTool,
    /// The tool exists but is deferred; load it with ToolSearch first.
    ToolNotLoaded,
    /// The input does not match the tool's JSON Schema.
    InvalidInput,
    /// The input is well-formed but the tool refused it (path outside roots, empty command…).
    InvalidRequest,
    /// Policy said no (hook, rule, mode, risk floor or user).
    Denied,
    /// The call needs the user's answer, which the front door collects out of band (an MCP
    /// `input_required` result on the 2026-07-28 protocol). Nothing ran; the caller retries
    /// the call with the answer.
    InputRequired,
    /// A rate limit for this tool or profile was exceeded.
    RateLimited,
    /// The settings require a sandbox and it could not be set up.
    SandboxUnavailable,
    /// The tool ran past its timeout and was stopped.
    Timeout,
    /// The tool ran and failed.
    ExecutionFailed,
    /// The call was cancelled before it finished.
    Cancelled,
    /// The audit log could not be written, so the call was refused rather than run unaudited.
    AuditUnavailable,
}

impl ErrorCode {
    /// Every code, in the order of the pipeline.
    pub const ALL: [ErrorCode; 13] = [
        ErrorCode::MalformedCall,
        ErrorCode::UnknownTool,
        ErrorCode::ToolNotLoaded,
        ErrorCode::InvalidInput,
        ErrorCode::InvalidRequest,
        ErrorCode::Denied,
        ErrorCode::InputRequired,
        ErrorCode::RateLimited,
        ErrorCode::SandboxUnavailable,
        ErrorCode::Timeout,
        ErrorCode::ExecutionFailed,
        ErrorCode::Cancelled,
        ErrorCode::AuditUnavailable,
    ];

    /// The snake_case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MalformedCall => "malformed_call",
            ErrorCode::UnknownTool => "unknown_tool",
            ErrorCode::ToolNotLoaded => "tool_not_loaded",
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::Denied => "denied",
            ErrorCode::InputRequired => "input_required",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::SandboxUnavailable => "sandbox_unavailable",
            ErrorCode::Timeout => "timeout",
            ErrorCode::ExecutionFailed => "execution_failed",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::AuditUnavailable => "audit_unavailable",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A structured failure returned to the model as an `is_error` tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallError {
    /// Which kind of failure.
    pub code: ErrorCode,
    /// The stage that stopped the call.
    pub stage: Stage,
    /// The policy layer, for `denied`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    /// What was wrong and what to send instead.
    pub message: String,
    /// Machine-readable detail (schema violations with JSON pointers, near tool names, …).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
}

impl CallError {
    /// An error without layer or details.
    pub fn new(code: ErrorCode, stage: Stage, message: impl Into<String>) -> Self {
        Self {
            code,
            stage,
            layer: None,
            message: message.into(),
            details: Value::Null,
        }
    }

    /// Attaches machine-readable details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// Attaches the deciding policy layer.
    pub fn with_layer(mut self, layer: Layer) -> Self {
        self.layer = Some(layer);
        self
    }

    /// The text the model reads: `code: message`.
    pub fn model_text(&self) -> String {
        format!(
            "<tool_use_error code=\"{}\">{}</tool_use_error>",
            self.code, self.message
        )
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for CallError {}
