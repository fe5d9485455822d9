//! `toolgate serve --tools=search`: for MCP clients that cannot handle many tools, the
//! server lists two tools instead of the whole view.
//!
//! - `search_tools {query, max_results?}` searches the session's view with core's tool
//!   search (`select:a,b`, keywords ranked by BM25, `+word`) and returns the matching tools'
//!   MCP definitions. The view is already policy-filtered, so a tool a rule or profile hides
//!   is never found; `select:` of one says it is not available, without its definition.
//! - `call_tool {name, arguments?}` runs `name` through the gate exactly as a direct
//!   `tools/call` would: schema, hooks, rules, constraints, sandbox, audit.
//!
//! The list stays the same two tools for the whole session (MCP clients cache it).

use rmcp::model::{CallToolResult, JsonObject, RequestId, Tool};
use serde_json::{Value, json};
use toolgate_core::Gate;
use toolgate_core::tool_search::{self, MAX_RESULTS, Query, Scope};
use toolgate_protocol::wire::{self, Format};
use toolgate_protocol::{CallError, CallResult, ErrorCode, Stage, ToolOutput};

use crate::convert;

/// The search meta-tool's name.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The call meta-tool's name.
pub const CALL_TOOL: &str = "call_tool";

/// Which tools `tools/list` offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolsMode {
    /// Every tool of the session's view.
    #[default]
    All,
    /// `search_tools` and `call_tool` only.
    Search,
}

/// The two meta-tools' definitions.
pub(crate) fn meta_tools() -> Result<Vec<Tool>, serde_json::Error> {
    let search = json!({
        "name": SEARCH_TOOLS,
        "description": "Finds tools by keyword and returns their full definitions (name, description, inputSchema). Call a found tool with call_tool.\n\
            Query forms: \"select:name1,name2\" for exact names; keywords such as \"github issue labels\" (best matches first; names, descriptions and parameters are searched); a word with + (\"+slack send\") is required in every result.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "select:name1,name2, or keywords (+word to require a word)"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "Most tools to return (default 5)"}
            },
            "required": ["query"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    });
    let call = json!({
        "name": CALL_TOOL,
        "description": "Calls a tool found with search_tools. Every call is checked (schema, hooks, permission rules, sandbox) and audited like a direct call.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's exact name, as search_tools returned it"},
                "arguments": {"type": "object", "description": "The tool's input, matching its inputSchema"}
            },
            "required": ["name"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}
    });
    [search, call]
        .into_iter()
        .map(serde_json::from_value)
        .collect()
}

/// What a `tools/call` in search mode becomes.
pub(crate) enum Routed {
    /// A call of this tool with these arguments, for the gate.
    Call(String, Option<JsonObject>),
    /// Answered here (a search, or a malformed `call_tool`); boxed, as a result is large.
    Answer(Box<CallResult>),
}

/// Routes a `tools/call` of `name` in search mode. Names other than the two meta-tools go
/// to the gate unchanged (which refuses what the session may not call).
pub(crate) fn route(
    gate: &Gate,
    id: &RequestId,
    name: String,
    arguments: Option<JsonObject>,
) -> Routed {
    match name.as_str() {
        SEARCH_TOOLS => Routed::Answer(Box::new(search(gate, id, arguments))),
        CALL_TOOL => unwrap_call(gate, id, arguments),
        _ => Routed::Call(name, arguments),
    }
}

fn unwrap_call(gate: &Gate, id: &RequestId, arguments: Option<JsonObject>) -> Routed {
    let mut args = arguments.unwrap_or_default();
    let unknown: Vec<String> = args
        .keys()
        .filter(|k| *k != "name" && *k != "arguments")
        .cloned()
        .collect();
    let problem = if !unknown.is_empty() {
        Some(format!(
            "call_tool takes `name` and `arguments`; unknown field(s): {}",
            unknown.join(", ")
        ))
    } else {
        match (args.get("name"), args.get("arguments")) {
            (Some(Value::String(_)), None | Some(Value::Object(_))) => None,
            (Some(Value::String(_)), Some(_)) => Some(
                "call_tool: `arguments` must be an object (the tool's input), e.g. {\"path\": \"README.md\"}".to_owned(),
            ),
            _ => Some(
                "call_tool needs `name`, the tool's exact name as a string (find it with search_tools)".to_owned(),
            ),
        }
    };
    if let Some(message) = problem {
        let call = convert::tool_call(id, CALL_TOOL, Some(args));
        let error = CallError::new(ErrorCode::InvalidInput, Stage::Schema, message);
        return Routed::Answer(Box::new(gate.reject(call, error)));
    }
    let name = match args.remove("name") {
        Some(Value::String(n)) => n,
        _ => String::new(),
    };
    let arguments = match args.remove("arguments") {
        Some(Value::Object(a)) => Some(a),
        _ => None,
    };
    Routed::Call(name, arguments)
}

/// Runs `search_tools`. Searching reads the session's view only and runs nothing, so it is
/// not a gate call (as `tools/list` is not).
fn search(gate: &Gate, id: &RequestId, arguments: Option<JsonObject>) -> CallResult {
    let call = convert::tool_call(id, SEARCH_TOOLS, arguments);
    let outcome = parse_search(&call.input).map(|(query, max)| {
        let found = gate.view().search(&query, Scope::All, max);
        let tools: Vec<Value> = found
            .tools
            .iter()
            .map(|e| wire::tool_definition(e.spec(), Format::Mcp))
            .collect();
        let mut body = json!({ "tools": tools });
        if !found.unknown.is_empty() {
            body["unknown"] = json!(found.unknown);
        }
        if !found.hidden.is_empty() {
            body["unavailable"] = found
                .hidden
                .iter()
                .map(|(n, r)| json!({"name": n, "reason": r}))
                .collect();
        }
        ToolOutput::text(body.to_string()).with_structured(body)
    });
    CallResult {
        call_id: call.id,
        tool: call.name,
        outcome,
        verdict: None,
        additional_context: Vec::new(),
        duration_us: 0,
    }
}

fn parse_search(input: &Value) -> Result<(Query, usize), CallError> {
    let invalid = |message: String| CallError::new(ErrorCode::InvalidInput, Stage::Schema, message);
    let obj = input
        .as_object()
        .ok_or_else(|| invalid("search_tools takes an object: {\"query\": \"…\"}".into()))?;
    if let Some(k) = obj.keys().find(|k| *k != "query" && *k != "max_results") {
        return Err(invalid(format!(
            "search_tools takes `query` and `max_results`; unknown field `{k}`"
        )));
    }
    let text = obj.get("query").and_then(Value::as_str).ok_or_else(|| {
        invalid("search_tools needs `query`, a string: keywords or select:name1,name2".into())
    })?;
    let max = match obj.get("max_results") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            invalid(format!(
                "max_results must be an integer from 1 to {MAX_RESULTS}"
            ))
        })?),
    };
    let request = |e: tool_search::QueryError| {
        CallError::new(ErrorCode::InvalidRequest, Stage::Validate, e.to_string())
    };
    let query = Query::parse(text).map_err(request)?;
    let max = tool_search::max_results(max).map_err(request)?;
    Ok((query, max))
}

/// A search-mode answer as an MCP result.
pub(crate) fn answer(result: &CallResult) -> Result<CallToolResult, serde_json::Error> {
    convert::call_tool_result(result)
}
