use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a tool describes itself to the registry, the policy engine and the model APIs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Canonical name (`Bash`, `Read`, `mcp__server__tool`).
    pub name: String,
    /// The tool's own version, recorded in registry snapshots.
    pub version: String,
    /// The description the model reads.
    pub description: String,
    /// JSON Schema (Draft 2020-12) of the input object.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, where the tool returns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints; also used to trim registry views (plan mode hides non-read-only tools).
    pub annotations: ToolAnnotations,
    /// Whether calls of this tool may run in parallel with others in a batch.
    pub concurrency: Concurrency,
    /// Default and maximum run time.
    pub timeout: TimeoutSpec,
    /// Which input field policy matches rules against.
    pub subject: Subject,
}

/// Behaviour hints, mirroring MCP's tool annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolAnnotations {
    /// The tool does not change its environment.
    pub read_only: bool,
    /// The tool may destroy data (meaningful only when not read-only).
    pub destructive: bool,
    /// Calling the tool twice with the same input has no further effect.
    pub idempotent: bool,
    /// The tool reaches outside the workspace (network, other systems).
    pub open_world: bool,
}

/// Concurrency class used by `execute_batch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Concurrency {
    /// May overlap with other shared calls (reads, searches).
    Shared,
    /// Runs alone: no other call of the batch overlaps it (writes, shell).
    Exclusive,
}

/// Run-time bounds in milliseconds. A call may ask for less than `max_ms`, never more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeoutSpec {
    /// Used when the call does not ask for a timeout.
    pub default_ms: u64,
    /// Upper bound; larger requests are clamped to it.
    pub max_ms: u64,
}

impl TimeoutSpec {
    /// The effective timeout for a requested value.
    pub fn clamp(&self, requested_ms: Option<u64>) -> u64 {
        requested_ms.unwrap_or(self.default_ms).min(self.max_ms)
    }
}

/// How policy extracts a call's *subject*: the string a permission rule's specifier is
/// matched against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Subject {
    /// The tool has no specifier; rules match by name only.
    None,
    /// A shell command in the given input field (Bash rules).
    Command {
        /// Input field holding the command.
        field: String,
    },
    /// A file or directory path in the given input field (Read/Edit rules).
    Path {
        /// Input field holding the path.
        field: String,
        /// Whether the tool writes to the path (Edit rules) or only reads it (Read rules).
        writes: bool,
    },
    /// A URL in the given input field (WebFetch `domain:` rules).
    Url {
        /// Input field holding the URL.
        field: String,
    },
}

impl Subject {
    /// The input field named by this subject, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            Subject::None => None,
            Subject::Command { field } | Subject::Path { field, .. } | Subject::Url { field } => {
                Some(field)
            }
        }
    }

    /// Extracts the subject string from an input object.
    pub fn extract<'a>(&self, input: &'a Value) -> Option<&'a str> {
        self.field()
            .and_then(|f| input.get(f))
            .and_then(Value::as_str)
    }
}

/// Every MCP tool's name starts with this: `mcp__<server>__<tool>`, Claude Code's form, which
/// rules (`mcp__github`, `mcp__github__*`), deferral and the gateway's registry names all
/// read from here.
pub const MCP_PREFIX: &str = "mcp__";

/// Tool names Claude Code has renamed, `(old, current)`: settings, hook matchers and
/// models trained on the old name keep working, and every layer sees the current one.
pub const TOOL_ALIASES: &[(&str, &str)] = &[("Task", "Agent")];

/// The current name of a tool called `name` (itself unless it is an old alias).
pub fn canonical_tool_name(name: &str) -> &str {
    TOOL_ALIASES
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, current)| current)
}

/// The old names of the tool currently called `name`.
pub fn tool_name_aliases(name: &str) -> Vec<&'static str> {
    TOOL_ALIASES
        .iter()
        .filter(|(_, current)| *current == name)
        .map(|(old, _)| *old)
        .collect()
}

#[cfg(test)]
mod alias_tests {
    use super::*;

    #[test]
    fn task_is_agent() {
        assert_eq!(canonical_tool_name("Task"), "Agent");
        assert_eq!(canonical_tool_name("Agent"), "Agent");
        assert_eq!(canonical_tool_name("task"), "task");
        assert_eq!(tool_name_aliases("Agent"), ["Task"]);
        assert!(tool_name_aliases("Bash").is_empty());
    }
}
