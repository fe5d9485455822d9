//! A sub-agent's conversation with its model: one neutral transcript, spoken as Anthropic
//! Messages, OpenAI Chat Completions (both through the classifier's [`ModelClient`]) or MCP
//! sampling (through the front door's client). A response that is not one of these shapes
//! is an error the Agent call reports, never guessed at.

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_core::GateHandle;
use toolgate_core::asking::SampleError;
use toolgate_policy::classifier::ClassifierKind;
use toolgate_policy::{ModelClient, ModelError};
use toolgate_protocol::wire::{self, Format};

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    /// Text.
    Text(String),
    /// The model asks for a tool call.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// What a tool call came to.
    ToolResult {
        id: String,
        text: String,
        is_error: bool,
    },
}

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    User,
    Assistant,
}

/// One message of the transcript.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Message {
    pub role: Role,
    pub blocks: Vec<Block>,
}

/// Why a model turn failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TurnError {
    /// The model could not be reached or did not answer.
    #[error("{0}")]
    Unreachable(String),
    /// The answer is not in the API's shape.
    #[error("the model's response is not a {api} response: {why}")]
    Garbage { api: &'static str, why: String },
    /// No model is configured or offered.
    #[error("{0}")]
    NoModel(String),
}

/// Where a sub-agent's turns come from.
#[derive(Clone)]
pub(crate) enum Backend {
    /// `toolgate.agent`: an Anthropic Messages or OpenAI-compatible endpoint.
    Endpoint(Arc<ModelClient>),
    /// The MCP client's sampling, through the front door.
    Sampling {
        /// The gate whose front door asks the client.
        gate: GateHandle,
        /// The model the caller asked for (Agent's `model`), passed as the request's
        /// `modelPreferences` hint: the client chooses, as MCP sampling intends.
        hint: Option<String>,
    },
}

/// The tools the model is shown: the child gate's view.
pub(crate) struct Tools<'a>(pub &'a toolgate_core::View);

impl Backend {
    /// Which API, for messages.
    pub(crate) fn api(&self) -> &'static str {
        match self {
            Backend::Endpoint(c) if c.kind() == ClassifierKind::Openai => "chat completions",
            Backend::Endpoint(_) => "Anthropic Messages",
            Backend::Sampling { .. } => "MCP sampling",
        }
    }

    /// One assistant turn.
    pub(crate) async fn turn(
        &self,
        system: &str,
        transcript: &[Message],
        tools: &Tools<'_>,
        max_tokens: u32,
    ) -> Result<Vec<Block>, TurnError> {
        match self {
            Backend::Endpoint(client) if client.kind() == ClassifierKind::Openai => {
                let body = openai_body(system, transcript, tools, max_tokens);
                let v = client.send(body).await.map_err(unreachable)?;
                openai_reply(&v).map_err(|why| TurnError::Garbage {
                    api: "chat completions",
                    why,
                })
            }
            Backend::Endpoint(client) => {
                let body = anthropic_body(system, transcript, tools, max_tokens);
                let v = client.send(body).await.map_err(unreachable)?;
                anthropic_reply(&v).map_err(|why| TurnError::Garbage {
                    api: "Anthropic Messages",
                    why,
                })
            }
            Backend::Sampling { gate, hint } => {
                let mut params = sampling_params(system, transcript, tools, max_tokens);
                if let Some(name) = hint {
                    params["modelPreferences"] = json!({"hints": [{"name": name}]});
                }
                let v = gate.sample(&params).await.map_err(|e| match e {
                    SampleError::Unsupported => {
                        TurnError::NoModel("the MCP client offers no sampling".into())
                    }
                    SampleError::Failed(why) => {
                        TurnError::Unreachable(format!("the MCP client's sampling failed: {why}"))
                    }
                })?;
                sampling_reply(&v).map_err(|why| TurnError::Garbage {
                    api: "MCP sampling",
                    why,
                })
            }
        }
    }
}

fn unreachable(e: ModelError) -> TurnError {
    match e {
        ModelError::NoEndpoint | ModelError::Builtin => TurnError::NoModel(
            "no model endpoint is configured for sub-agents (toolgate.agent)".into(),
        ),
        other => TurnError::Unreachable(format!("the sub-agent's model endpoint: {other}")),
    }
}

fn anthropic_body(system: &str, transcript: &[Message], tools: &Tools<'_>, max: u32) -> Value {
    let messages: Vec<Value> = transcript
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .blocks
                .iter()
                .map(|b| match b {
                    Block::Text(t) => json!({"type": "text", "text": t}),
                    Block::ToolUse { id, name, input } => {
                        json!({"type": "tool_use", "id": id, "name": name, "input": input})
                    }
                    Block::ToolResult { id, text, is_error } => json!({"type": "tool_result",
                        "tool_use_id": id, "content": text, "is_error": is_error}),
                })
                .collect();
            json!({"role": role(m.role), "content": content})
        })
        .collect();
    json!({
        "max_tokens": max,
        "system": system,
        "messages": messages,
        "tools": tools.0.definitions(Format::Anthropic),
    })
}

fn role(r: Role) -> &'static str {
    match r {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn anthropic_reply(v: &Value) -> Result<Vec<Block>, String> {
    if let Some(err) = v.get("error") {
        return Err(format!("it reports an error: {err}"));
    }
    let content = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or("it has no `content` array")?;
    content_blocks(content)
}

/// Text and `tool_use` blocks, in the shape Anthropic Messages and MCP sampling share.
/// Thinking and other blocks carry nothing the loop acts on.
fn content_blocks(blocks: &[Value]) -> Result<Vec<Block>, String> {
    blocks
        .iter()
        .filter_map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => Some(
                b.get("text")
                    .and_then(Value::as_str)
                    .map(|t| Block::Text(t.to_owned()))
                    .ok_or_else(|| "a text block has no text".to_owned()),
            ),
            Some("tool_use") => Some(tool_use(
                b.get("id"),
                b.get("name"),
                b.get("input").cloned(),
            )),
            _ => None,
        })
        .collect()
}

fn tool_use(
    id: Option<&Value>,
    name: Option<&Value>,
    input: Option<Value>,
) -> Result<Block, String> {
    let id = id
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("a tool call has no id")?;
    let name = name
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("a tool call has no name")?;
    let input = input.unwrap_or_else(|| json!({}));
    if !input.is_object() {
        return Err(format!(
            "the input of the tool call `{id}` is not an object"
        ));
    }
    Ok(Block::ToolUse {
        id: id.to_owned(),
        name: name.to_owned(),
        input,
    })
}

fn openai_body(system: &str, transcript: &[Message], tools: &Tools<'_>, max: u32) -> Value {
    let mut messages = vec![json!({"role": "system", "content": system})];
    for m in transcript {
        match m.role {
            Role::Assistant => {
                let text: String = m
                    .blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::Text(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<Value> = m
                    .blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::ToolUse { id, name, input } => {
                            Some(json!({"id": id, "type": "function",
                            "function": {"name": name, "arguments": input.to_string()}}))
                        }
                        _ => None,
                    })
                    .collect();
                let mut msg = json!({"role": "assistant", "content": text});
                if !calls.is_empty()
                    && let Value::Object(map) = &mut msg
                {
                    map.insert("tool_calls".into(), Value::Array(calls));
                }
                messages.push(msg);
            }
            Role::User => {
                for b in &m.blocks {
                    messages.push(match b {
                        Block::ToolResult { id, text, .. } => {
                            json!({"role": "tool", "tool_call_id": id, "content": text})
                        }
                        Block::Text(t) => json!({"role": "user", "content": t}),
                        Block::ToolUse { .. } => continue,
                    });
                }
            }
        }
    }
    json!({
        "max_tokens": max,
        "messages": messages,
        "tools": tools.0.definitions(Format::OpenAi),
    })
}

fn openai_reply(v: &Value) -> Result<Vec<Block>, String> {
    if let Some(err) = v.get("error") {
        return Err(format!("it reports an error: {err}"));
    }
    let msg = v
        .pointer("/choices/0/message")
        .ok_or("it has no `choices[0].message`")?;
    let mut out = Vec::new();
    if let Some(t) = msg.get("content").and_then(Value::as_str)
        && !t.is_empty()
    {
        out.push(Block::Text(t.to_owned()));
    }
    if let Some(calls) = msg.get("tool_calls") {
        let calls = calls.as_array().ok_or("`tool_calls` is not an array")?;
        for c in calls {
            let f = c.get("function").ok_or("a tool call has no `function`")?;
            let args = match f.get("arguments") {
                Some(Value::String(s)) => serde_json::from_str::<Value>(s)
                    .map_err(|e| format!("the arguments of a tool call are not JSON: {e}"))?,
                Some(other) => other.clone(),
                None => json!({}),
            };
            out.push(tool_use(c.get("id"), f.get("name"), Some(args))?);
        }
    }
    Ok(out)
}

fn sampling_params(system: &str, transcript: &[Message], tools: &Tools<'_>, max: u32) -> Value {
    let messages: Vec<Value> = transcript
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .blocks
                .iter()
                .map(|b| match b {
                    Block::Text(t) => json!({"type": "text", "text": t}),
                    Block::ToolUse { id, name, input } => {
                        json!({"type": "tool_use", "id": id, "name": name, "input": input})
                    }
                    Block::ToolResult { id, text, is_error } => json!({"type": "tool_result",
                        "toolUseId": id, "content": [{"type": "text", "text": text}],
                        "isError": is_error}),
                })
                .collect();
            json!({"role": role(m.role), "content": content})
        })
        .collect();
    json!({
        "messages": messages,
        "systemPrompt": system,
        "maxTokens": max,
        "tools": tools.0.definitions(Format::Mcp),
    })
}

fn sampling_reply(v: &Value) -> Result<Vec<Block>, String> {
    let content = v.get("content").ok_or("it has no `content`")?;
    match content {
        Value::Array(a) => content_blocks(a),
        single @ Value::Object(_) => content_blocks(std::slice::from_ref(single)),
        _ => Err("`content` is neither a block nor a list of blocks".into()),
    }
}

/// A tool result as the transcript carries it: the text the model would read.
pub(crate) fn result_text(result: &toolgate_protocol::CallResult) -> String {
    match wire::result(result, Format::OpenAi).get("content") {
        Some(Value::String(s)) => s.clone(),
        _ => result.model_text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_in_each_shape() {
        let a = anthropic_reply(&json!({"content": [
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "x"}}
        ]}))
        .unwrap();
        assert_eq!(a.len(), 2);
        let o = openai_reply(&json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}
        ]}}]}))
        .unwrap();
        assert_eq!(
            o,
            vec![Block::ToolUse {
                id: "c1".into(),
                name: "Bash".into(),
                input: json!({"command": "ls"})
            }]
        );
        let s = sampling_reply(
            &json!({"role": "assistant", "content": {"type": "text", "text": "done"}}),
        )
        .unwrap();
        assert_eq!(s, vec![Block::Text("done".into())]);
    }

    #[test]
    fn garbage_is_named() {
        for bad in [
            json!({"nope": 1}),
            json!({"content": "text"}),
            json!({"content": [{"type": "tool_use", "name": "Read"}]}),
            json!({"content": [{"type": "tool_use", "id": "x", "name": "Read", "input": [1]}]}),
            json!({"error": {"message": "overloaded"}}),
        ] {
            assert!(anthropic_reply(&bad).is_err(), "{bad}");
        }
        for bad in [
            json!({"choices": []}),
            json!({"choices": [{"message": {"tool_calls": [{"id": "a", "function": {"name": "Read", "arguments": "{not json"}}]}}]}),
        ] {
            assert!(openai_reply(&bad).is_err(), "{bad}");
        }
    }
}
