//! Conversions between the gate's vocabulary and MCP's wire types.
//!
//! A result is rendered once by `toolgate_protocol::wire::result(_, Format::Mcp)` and then
//! decorated with `_meta` keys that tell a client *why* a call failed without parsing text:
//!
//! | key | value |
//! |---|---|
//! | `toolgate/code` | the [`ErrorCode`](toolgate_protocol::ErrorCode) (`denied`, `invalid_input`, `unknown_tool`, …); absent on success |
//! | `toolgate/stage` | the pipeline stage that stopped the call |
//! | `toolgate/layer` | for `denied`: `hook`, `rule`, `mode`, `risk` or `user` |
//! | `toolgate/decision` | the permission decision (`allow`, `deny`, `ask`), when one was made |
//! | `toolgate/details` | machine-readable details (schema violations, near tool names) |
//! | `toolgate/durationMs` | wall time of the call in the gate |

use rmcp::model::{CallToolResult, JsonObject, RequestId, ResultType, Tool};
use serde_json::{Map, Value, json};
use toolgate_core::View;
use toolgate_core::deferral::ALWAYS_LOAD_META;
use toolgate_protocol::wire::{self, Format};
use toolgate_protocol::{CallResult, ToolCall};

/// The `_meta` key holding the error code.
pub const META_CODE: &str = "toolgate/code";
/// The `_meta` key holding the stage that stopped the call.
pub const META_STAGE: &str = "toolgate/stage";
/// The `_meta` key holding the deciding policy layer.
pub const META_LAYER: &str = "toolgate/layer";
/// The `_meta` key holding the permission decision.
pub const META_DECISION: &str = "toolgate/decision";
/// The `_meta` key holding machine-readable error details.
pub const META_DETAILS: &str = "toolgate/details";
/// The `_meta` key holding the gate's wall time in milliseconds.
pub const META_DURATION: &str = "toolgate/durationMs";

/// The `_meta` object for a result: the tool's own `_meta` (an upstream's), and the gate
/// summary under `toolgate/` keys.
pub fn result_meta(result: &CallResult) -> Map<String, Value> {
    let summary = wire::gate_summary(result);
    // The tool's own `_meta` (an upstream server's) first, without any `toolgate/` key:
    // an upstream cannot speak for the gate.
    let mut meta: Map<String, Value> = result
        .output()
        .and_then(|o| o.meta.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !k.starts_with("toolgate/"))
        .collect();
    let mut put = |key: &str, field: &str| {
        if let Some(v) = summary.get(field).filter(|v| !v.is_null()) {
            meta.insert(key.to_owned(), v.clone());
        }
    };
    put(META_CODE, "code");
    put(META_STAGE, "stage");
    put(META_LAYER, "layer");
    put(META_DECISION, "decision");
    put(META_DETAILS, "details");
    put(META_DURATION, "duration_ms");
    meta
}

/// A gate result as an MCP `CallToolResult` value (`content`, `isError`,
/// `structuredContent`, `_meta`).
pub fn result_value(result: &CallResult) -> Value {
    let mut value = wire::result(result, Format::Mcp);
    if let Some(obj) = value.as_object_mut() {
        obj.insert("_meta".into(), Value::Object(result_meta(result)));
    }
    value
}

/// A gate result as rmcp's `CallToolResult`, marked complete for modern clients.
pub fn call_tool_result(result: &CallResult) -> Result<CallToolResult, serde_json::Error> {
    let mut out: CallToolResult = serde_json::from_value(result_value(result))?;
    out.result_type = Some(ResultType::COMPLETE);
    Ok(out)
}

/// The MCP tool definitions of a view, in registry order. A tool that is always loaded
/// (an upstream's `alwaysLoad`) says so in its `_meta`, for clients that defer tools.
pub fn tools(view: &View) -> Result<Vec<Tool>, serde_json::Error> {
    let always: std::collections::HashSet<&str> = view
        .entries()
        .iter()
        .filter(|e| e.tool().always_load())
        .map(|e| e.spec().name.as_str())
        .collect();
    view.definitions(Format::Mcp)
        .into_iter()
        .map(|definition| {
            let mut tool: Tool = serde_json::from_value(definition)?;
            if always.contains(tool.name.as_ref()) {
                tool.meta
                    .get_or_insert_with(Default::default)
                    .0
                    .insert(ALWAYS_LOAD_META.to_owned(), Value::Bool(true));
            }
            Ok(tool)
        })
        .collect()
}

/// The definition of one tool of a view.
pub fn tool(view: &View, name: &str) -> Option<Tool> {
    view.entries()
        .iter()
        .find(|e| e.spec().name == name)
        .and_then(|e| serde_json::from_value(wire::tool_definition(e.spec(), Format::Mcp)).ok())
}

/// The gate call for a `tools/call` request. The JSON-RPC id becomes the call id, so audit
/// records can be matched to the client's log; absent arguments are an empty object.
pub fn tool_call(id: &RequestId, name: &str, arguments: Option<JsonObject>) -> ToolCall {
    let id = match serde_json::to_value(id) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    };
    let input = arguments.map_or_else(|| json!({}), Value::Object);
    ToolCall::new(id, name, input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_protocol::{CallError, ErrorCode, Layer, Stage, ToolOutput};

    fn result(outcome: Result<ToolOutput, CallError>) -> CallResult {
        CallResult {
            call_id: "1".into(),
            tool: "Read".into(),
            outcome,
            verdict: None,
            additional_context: Vec::new(),
            duration_us: 1500,
        }
    }

    #[test]
    fn denial_carries_code_and_layer() {
        let err = CallError::new(ErrorCode::Denied, Stage::Decide, "no").with_layer(Layer::Rule);
        let v = result_value(&result(Err(err)));
        assert_eq!(v["isError"], true);
        assert_eq!(v["_meta"][META_CODE], "denied");
        assert_eq!(v["_meta"][META_LAYER], "rule");
        let typed = call_tool_result(&result(Err(CallError::new(
            ErrorCode::UnknownTool,
            Stage::Resolve,
            "no such tool",
        ))))
        .unwrap();
        assert_eq!(typed.is_error, Some(true));
        assert_eq!(
            typed.meta.unwrap().get(META_CODE),
            Some(&json!("unknown_tool"))
        );
    }

    #[test]
    fn success_has_no_code() {
        let ok = result(Ok(
            ToolOutput::text("hi").with_structured(json!({"lines": 1}))
        ));
        let v = result_value(&ok);
        assert_eq!(v["isError"], false);
        assert!(v["_meta"].get(META_CODE).is_none());
        assert_eq!(v["structuredContent"], json!({"lines": 1}));
        assert_eq!(v["content"][0]["text"], "hi");
    }

    #[test]
    fn a_tools_own_meta_passes_but_cannot_forge_the_gates_keys() {
        let mut out = ToolOutput::text("hi");
        let mut own = Map::new();
        own.insert("fixture/echoed".into(), json!(true));
        own.insert(META_CODE.into(), json!("forged"));
        out.meta = Some(own);
        let v = result_value(&result(Ok(out)));
        assert_eq!(v["_meta"]["fixture/echoed"], true);
        assert!(v["_meta"].get(META_CODE).is_none(), "{v}");
    }

    #[test]
    fn call_ids_and_arguments() {
        let c = tool_call(&RequestId::Number(7), "Read", None);
        assert_eq!((c.id.as_str(), c.input.clone()), ("7", json!({})));
        let mut args = JsonObject::new();
        args.insert("a".into(), json!(1));
        let c = tool_call(&RequestId::String("x".into()), "Read", Some(args));
        assert_eq!((c.id.as_str(), c.input), ("x", json!({"a": 1})));
    }
}
