use serde::{Deserialize, Serialize};

use crate::{CallError, ToolOutput, Verdict};

/// The gate's answer to one call: the tool's output or a structured error, with the
/// permission verdict and timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallResult {
    /// The caller's id for the call.
    pub call_id: String,
    /// The tool name as asked for.
    pub tool: String,
    /// The output on success, the error otherwise.
    pub outcome: Result<ToolOutput, CallError>,
    /// The permission verdict, if the call reached stage 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Context added by hooks for the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_context: Vec<String>,
    /// Wall time in microseconds.
    pub duration_us: u64,
}

impl CallResult {
    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.outcome.is_err()
    }

    /// The error, if the call failed.
    pub fn error(&self) -> Option<&CallError> {
        self.outcome.as_ref().err()
    }

    /// The output, if the call succeeded.
    pub fn output(&self) -> Option<&ToolOutput> {
        self.outcome.as_ref().ok()
    }

    /// The text the model reads: the output's text blocks, or the error text, followed by any
    /// hook context.
    pub fn model_text(&self) -> String {
        let mut text = match &self.outcome {
            Ok(out) => out.joined_text(),
            Err(err) => err.model_text(),
        };
        for ctx in &self.additional_context {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(ctx);
        }
        text
    }
}
