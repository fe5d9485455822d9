//! Registry names of upstream tools: `mcp__<server>__<tool>`, as Claude Code forms them.

/// The longest tool name the model APIs accept.
pub const MAX_NAME_BYTES: usize = 64;

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitise(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `mcp__<server>__<tool>`, sanitised; an error when it is longer than
/// [`MAX_NAME_BYTES`] (a cut name could collide with another tool's).
pub fn tool_name(server: &str, tool: &str) -> Result<String, String> {
    let prefix = toolgate_protocol::MCP_PREFIX;
    let name = format!("{prefix}{}__{}", sanitise(server), sanitise(tool));
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "`{name}` is longer than {MAX_NAME_BYTES} bytes; shorten the server name"
        ));
    }
    if tool.is_empty() {
        return Err("the upstream tool has an empty name".into());
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_bounded() {
        assert_eq!(
            tool_name("git hub", "get.issue").unwrap(),
            "mcp__git_hub__get_issue"
        );
        assert_eq!(tool_name("s", "ü/x").unwrap(), "mcp__s____x");
        assert!(tool_name("s", &"x".repeat(60)).is_err());
        assert!(tool_name("s", "").is_err());
    }
}
