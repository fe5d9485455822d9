use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call as the model asked for it: an id chosen by the caller, a tool name and the
/// raw JSON input. The input is validated by the gate (stage 2) before any tool sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The caller's id for this call (`toolu_…`, `call_…`); echoed in the result.
    pub id: String,
    /// The tool's canonical name, compared case-exactly (`Read`, not `read`).
    pub name: String,
    /// The input object exactly as sent.
    pub input: Value,
}

impl ToolCall {
    /// A call with the given id, name and input.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}
