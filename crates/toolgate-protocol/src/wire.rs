//! Wire forms: how calls arrive from and results return to the model APIs, and how tool
//! definitions are presented to them.
//!
//! Accepted call shapes ([`parse_call`]):
//! - Anthropic `{"type":"tool_use","id","name","input"}`;
//! - OpenAI Chat Completions `{"id","type":"function","function":{"name","arguments":"<json>"}}`;
//! - OpenAI Responses `{"type":"function_call","call_id","name","arguments":"<json>"}`;
//! - plain `{"name","input","id"?}` for hand-written calls.

use serde_json::{Map, Value, json};
use thiserror::Error;

use crate::{CallResult, Content, ToolCall, ToolSpec};

/// A value that is not a tool call in any accepted shape.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum WireError {
    /// The value is not a JSON object.
    #[error("a tool call must be a JSON object, got {0}")]
    NotAnObject(&'static str),
    /// A required field is missing or has the wrong type.
    #[error("field `{field}` is missing or not a {expected} (shape: {shape})")]
    Field {
        /// The field.
        field: &'static str,
        /// The JSON type it must have.
        expected: &'static str,
        /// The call shape that was recognised.
        shape: &'static str,
    },
    /// OpenAI `arguments` is not a JSON object encoded as a string.
    #[error("`arguments` must be a string holding a JSON object: {0}")]
    Arguments(String),
    /// No known shape matched.
    #[error(
        "not a tool call: expected an Anthropic tool_use block, an OpenAI function call or {{\"name\", \"input\"}}"
    )]
    UnknownShape,
}

/// Output format for tool definitions and results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenAi,
    /// Model Context Protocol.
    Mcp,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn str_field(
    obj: &Map<String, Value>,
    field: &'static str,
    shape: &'static str,
) -> Result<String, WireError> {
    obj.get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or(WireError::Field {
            field,
            expected: "string",
            shape,
        })
}

fn parse_arguments(args: &Value) -> Result<Value, WireError> {
    match args {
        Value::String(s) => {
            let v: Value =
                serde_json::from_str(s).map_err(|e| WireError::Arguments(e.to_string()))?;
            if v.is_object() {
                Ok(v)
            } else {
                Err(WireError::Arguments(format!(
                    "decoded to {}",
                    type_name(&v)
                )))
            }
        }
        // Some clients send the object itself; accept it rather than make the model retry.
        Value::Object(_) => Ok(args.clone()),
        other => Err(WireError::Arguments(format!("got {}", type_name(other)))),
    }
}

/// Parses one tool call in any accepted shape.
pub fn parse_call(value: &Value) -> Result<ToolCall, WireError> {
    let obj = value
        .as_object()
        .ok_or_else(|| WireError::NotAnObject(type_name(value)))?;
    match obj.get("type").and_then(Value::as_str) {
        Some("tool_use") => {
            let shape = "anthropic tool_use";
            Ok(ToolCall {
                id: str_field(obj, "id", shape)?,
                name: str_field(obj, "name", shape)?,
                input: obj.get("input").cloned().ok_or(WireError::Field {
                    field: "input",
                    expected: "object",
                    shape,
                })?,
            })
        }
        Some("function") => {
            let shape = "openai function call";
            let func = obj
                .get("function")
                .and_then(Value::as_object)
                .ok_or(WireError::Field {
                    field: "function",
                    expected: "object",
                    shape,
                })?;
            Ok(ToolCall {
                id: str_field(obj, "id", shape)?,
                name: str_field(func, "name", shape)?,
                input: parse_arguments(func.get("arguments").unwrap_or(&Value::Null))?,
            })
        }
        Some("function_call") => {
            let shape = "openai responses function_call";
            Ok(ToolCall {
                id: str_field(obj, "call_id", shape)?,
                name: str_field(obj, "name", shape)?,
                input: parse_arguments(obj.get("arguments").unwrap_or(&Value::Null))?,
            })
        }
        Some(_) => Err(WireError::UnknownShape),
        None => {
            if !obj.contains_key("name") {
                return Err(WireError::UnknownShape);
            }
            let shape = "plain {name, input}";
            let id = match obj.get("id") {
                None => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(_) => {
                    return Err(WireError::Field {
                        field: "id",
                        expected: "string",
                        shape,
                    });
                }
            };
            Ok(ToolCall {
                id,
                name: str_field(obj, "name", shape)?,
                input: obj.get("input").cloned().unwrap_or_else(|| json!({})),
            })
        }
    }
}

/// A tool definition as the given API expects it.
pub fn tool_definition(spec: &ToolSpec, format: Format) -> Value {
    match format {
        Format::Anthropic => json!({
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
        }),
        Format::OpenAi => json!({
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.input_schema,
            }
        }),
        Format::Mcp => {
            let a = spec.annotations;
            let mut def = json!({
                "name": spec.name,
                "description": spec.description,
                "inputSchema": spec.input_schema,
                "annotations": {
                    "readOnlyHint": a.read_only,
                    "destructiveHint": a.destructive && !a.read_only,
                    "idempotentHint": a.idempotent,
                    "openWorldHint": a.open_world,
                },
            });
            if let (Some(schema), Some(obj)) = (&spec.output_schema, def.as_object_mut()) {
                obj.insert("outputSchema".into(), schema.clone());
            }
            def
        }
    }
}

/// The gate's summary of a result, attached to CLI output lines as `"toolgate"`.
pub fn gate_summary(result: &CallResult) -> Value {
    let mut summary = Map::new();
    let decision = match (&result.verdict, result.error()) {
        (Some(v), _) => json!(v.decision),
        (None, Some(_)) => Value::Null,
        (None, None) => json!("allow"),
    };
    summary.insert("decision".into(), decision);
    summary.insert(
        "layer".into(),
        match (result.error().and_then(|e| e.layer), &result.verdict) {
            (Some(l), _) => json!(l),
            (None, Some(v)) => json!(v.layer),
            (None, None) => Value::Null,
        },
    );
    summary.insert(
        "code".into(),
        result.error().map_or(Value::Null, |e| json!(e.code)),
    );
    if let Some(err) = result.error() {
        summary.insert("stage".into(), json!(err.stage));
        if !err.details.is_null() {
            summary.insert("details".into(), err.details.clone());
        }
    }
    summary.insert(
        "duration_ms".into(),
        json!((result.duration_us as f64 / 1000.0 * 1000.0).round() / 1000.0),
    );
    Value::Object(summary)
}

fn anthropic_content(result: &CallResult) -> Value {
    match &result.outcome {
        Err(_) => Value::String(result.model_text()),
        Ok(out) => {
            let mut blocks: Vec<Value> = out
                .content
                .iter()
                .map(|c| match c {
                    Content::Text { text } => json!({"type": "text", "text": text}),
                    Content::Image { media_type, data } => json!({
                        "type": "image",
                        "source": {"type": "base64", "media_type": media_type, "data": data}
                    }),
                })
                .collect();
            for ctx in &result.additional_context {
                blocks.push(json!({"type": "text", "text": ctx}));
            }
            Value::Array(blocks)
        }
    }
}

/// A result as one text, for OpenAI's text-only tool results (images become a note).
fn openai_text(result: &CallResult) -> String {
    let mut text = String::new();
    match &result.outcome {
        Err(_) => text = result.model_text(),
        Ok(out) => {
            for c in &out.content {
                if !text.is_empty() {
                    text.push('\n');
                }
                match c {
                    Content::Text { text: t } => text.push_str(t),
                    Content::Image { media_type, data } => text.push_str(&format!(
                        "[image {media_type}, {} base64 bytes, not representable in a tool message]",
                        data.len()
                    )),
                }
            }
            for ctx in &result.additional_context {
                text.push('\n');
                text.push_str(ctx);
            }
        }
    }
    text
}

/// A result as the OpenAI Responses API expects it: a `function_call_output` input item
/// answering a `function_call` item (Chat Completions' `role: tool` message is a different
/// shape that the Responses API refuses).
pub fn responses_output(result: &CallResult) -> Value {
    json!({
        "type": "function_call_output",
        "call_id": result.call_id,
        "output": openai_text(result),
    })
}

/// A result as the given API expects it. Anthropic: a `tool_result` block; OpenAI: a `tool`
/// role message (images become a textual note, since tool messages carry text only); MCP: a
/// `CallToolResult`.
pub fn result(result: &CallResult, format: Format) -> Value {
    match format {
        Format::Anthropic => json!({
            "type": "tool_result",
            "tool_use_id": result.call_id,
            "content": anthropic_content(result),
            "is_error": result.is_error(),
        }),
        Format::OpenAi => {
            json!({"role": "tool", "tool_call_id": result.call_id, "content": openai_text(result)})
        }
        Format::Mcp => {
            let mut content: Vec<Value> = Vec::new();
            let mut structured = None;
            match &result.outcome {
                Err(_) => content.push(json!({"type": "text", "text": result.model_text()})),
                Ok(out) => {
                    for c in &out.content {
                        content.push(match c {
                            Content::Text { text } => json!({"type": "text", "text": text}),
                            Content::Image { media_type, data } => {
                                json!({"type": "image", "data": data, "mimeType": media_type})
                            }
                        });
                    }
                    for ctx in &result.additional_context {
                        content.push(json!({"type": "text", "text": ctx}));
                    }
                    structured = out.structured.clone();
                }
            }
            let mut v = json!({"content": content, "isError": result.is_error()});
            if let (Some(s), Some(obj)) = (structured, v.as_object_mut()) {
                obj.insert("structuredContent".into(), s);
            }
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_shape() {
        let a = parse_call(
            &json!({"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/x"}}),
        )
        .unwrap();
        assert_eq!((a.id.as_str(), a.name.as_str()), ("t1", "Read"));
        let o = parse_call(&json!({"id":"c1","type":"function","function":{"name":"Grep","arguments":"{\"pattern\":\"x\"}"}})).unwrap();
        assert_eq!(o.input, json!({"pattern":"x"}));
        let r = parse_call(
            &json!({"type":"function_call","call_id":"c2","name":"Glob","arguments":"{}"}),
        )
        .unwrap();
        assert_eq!(r.id, "c2");
        let p = parse_call(&json!({"name":"Read","input":{}})).unwrap();
        assert_eq!(p.id, "");
    }

    #[test]
    fn rejects_bad_shapes_with_reasons() {
        assert_eq!(
            parse_call(&json!([1])),
            Err(WireError::NotAnObject("an array"))
        );
        assert_eq!(
            parse_call(&json!({"type":"text"})),
            Err(WireError::UnknownShape)
        );
        assert!(matches!(
            parse_call(&json!({"type":"tool_use","id":"t","name":3,"input":{}})),
            Err(WireError::Field { field: "name", .. })
        ));
        assert!(matches!(
            parse_call(
                &json!({"id":"c","type":"function","function":{"name":"X","arguments":"[1]"}})
            ),
            Err(WireError::Arguments(_))
        ));
        assert!(matches!(
            parse_call(
                &json!({"id":"c","type":"function","function":{"name":"X","arguments":"{not json"}})
            ),
            Err(WireError::Arguments(_))
        ));
    }
}
