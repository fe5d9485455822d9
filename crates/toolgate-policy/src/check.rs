//! `toolgate check` targets: `Bash(rm -rf build)` or `NAME JSON` → a tool name and input.

use serde_json::{Map, Value, json};

use crate::error::PolicyError;

/// Parses a check target. With `json`, `target` is the tool name and `json` its input
/// object; without, `target` is written like a rule: `Bash(rm -rf build)`,
/// `Read(src/main.rs)`, `WebFetch(https://example.com)`, `mcp__s__t({"a":1})`, or a bare
/// tool name. Required fields the target does not give get neutral placeholders so the call
/// passes schema validation.
///
/// ```
/// # use toolgate_policy::parse_check_target;
/// let (tool, input) = parse_check_target("Bash(rm -rf build)", None).unwrap();
/// assert_eq!(tool, "Bash");
/// assert_eq!(input["command"], "rm -rf build");
/// let (tool, input) = parse_check_target("mcp__db__query", Some(r#"{"sql":"select 1"}"#)).unwrap();
/// assert_eq!((tool.as_str(), input["sql"].as_str()), ("mcp__db__query", Some("select 1")));
/// ```
pub fn parse_check_target(
    target: &str,
    json: Option<&str>,
) -> Result<(String, Value), PolicyError> {
    let err = |message: String| PolicyError::CheckTarget {
        target: target.to_owned(),
        message,
    };
    if let Some(j) = json {
        let v: Value =
            serde_json::from_str(j).map_err(|e| err(format!("the input is not JSON: {e}")))?;
        if !v.is_object() {
            return Err(err(
                "the input must be a JSON object, e.g. '{\"command\": \"ls\"}'".into(),
            ));
        }
        let name = target.trim();
        if name.is_empty() || name.contains(['(', ')', ' ']) {
            return Err(err("with a JSON input, give the bare tool name first: toolgate check Bash '{\"command\":\"ls\"}'".into()));
        }
        return Ok((name.to_owned(), v));
    }
    let t = target.trim();
    let (tool, spec) = match t.find('(') {
        Some(open) => {
            let inner = t[open + 1..].strip_suffix(')').ok_or_else(|| {
                err("a `(` without a closing `)`; write Tool(argument), e.g. Bash(npm test)".into())
            })?;
            (t[..open].trim(), Some(inner))
        }
        None => (t, None),
    };
    if tool.is_empty() {
        return Err(err(
            "no tool name; write Tool(argument), e.g. Bash(npm test)".into(),
        ));
    }
    let Some(spec) = spec else {
        return Ok((tool.to_owned(), Value::Object(Map::new())));
    };
    let input = match toolgate_protocol::canonical_tool_name(tool) {
        "Bash" | "PowerShell" => json!({"command": spec}),
        "Monitor" => {
            json!({"command": spec, "description": "check", "timeout_ms": 300000, "persistent": false})
        }
        "Read" | "NotebookRead" => json!({"file_path": spec}),
        "Write" => json!({"file_path": spec, "content": ""}),
        "Edit" => json!({"file_path": spec, "old_string": "a", "new_string": "b"}),
        "MultiEdit" => {
            json!({"file_path": spec, "edits": [{"old_string": "a", "new_string": "b"}]})
        }
        "NotebookEdit" => json!({"notebook_path": spec, "new_source": ""}),
        "Glob" => json!({"pattern": "*", "path": spec}),
        "Grep" => json!({"pattern": ".", "path": spec}),
        "LS" => json!({"path": spec}),
        "WebFetch" => {
            let url = match spec.strip_prefix("domain:") {
                Some(host) => format!("https://{}/", host.trim()),
                None => spec.to_owned(),
            };
            json!({"url": url, "prompt": "check"})
        }
        "WebSearch" => json!({"query": spec}),
        "Agent" => {
            json!({"subagent_type": spec, "prompt": "check", "description": "check"})
        }
        "Skill" => json!({"skill": spec}),
        _ => {
            let s = spec.trim();
            if s.starts_with('{') {
                serde_json::from_str::<Value>(s)
                    .map_err(|e| err(format!("the input is not JSON: {e}")))?
            } else if let Some((k, v)) = s.split_once(':') {
                json!({ k.trim(): v.trim() })
            } else {
                return Err(err(format!(
                    "{tool} has no rule-style argument; give its input as JSON: toolgate check {tool} '{{\"field\": \"value\"}}'"
                )));
            }
        }
    };
    Ok((tool.to_owned(), input))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let (t, i) = parse_check_target("Read(src/main.rs)", None).unwrap();
        assert_eq!(
            (t.as_str(), &i["file_path"]),
            ("Read", &json!("src/main.rs"))
        );
        let (_, i) = parse_check_target("WebFetch(domain:example.com)", None).unwrap();
        assert_eq!(i["url"], "https://example.com/");
        let (_, i) = parse_check_target("Bash(echo (x))", None).unwrap();
        assert_eq!(i["command"], "echo (x)");
        let (t, i) = parse_check_target("TodoWrite", None).unwrap();
        assert_eq!((t.as_str(), i), ("TodoWrite", json!({})));
        let (_, i) = parse_check_target("mcp__s__t(repo:prod)", None).unwrap();
        assert_eq!(i["repo"], "prod");
        assert!(parse_check_target("Bash(ls", None).is_err());
        assert!(parse_check_target("mcp__s__t(x)", None).is_err());
        assert!(parse_check_target("Bash", Some("[1]")).is_err());
        assert!(parse_check_target("Bash(ls)", Some("{}")).is_err());
    }
}
