//! ToolSearch: loads the definitions of deferred tools (MCP tools held back because their
//! definitions would crowd the model's context) so the session may call them.
//!
//! The search itself is core's ([`toolgate_core::tool_search`]): it runs over the calling
//! session's view, so a tool that policy hid is never found, and what it finds is marked
//! loaded for that session only ([`LoadedTools`]).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_core::tool_search::{self, MAX_RESULTS, Query, Scope, TOOL_SEARCH};
use toolgate_core::{LoadedTools, ToolContext, ToolError, TypedTool};
use toolgate_protocol::{Subject, ToolOutput, ToolSpec};

use crate::spec::{Class, spec};

/// ToolSearch's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchInput {
    /// `select:a,b`, or keywords with `+word` for required words.
    pub query: String,
    /// How many tools at most (default 5).
    pub max_results: Option<u64>,
}

/// The ToolSearch tool.
pub struct ToolSearchTool {
    spec: ToolSpec,
}

impl Default for ToolSearchTool {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolSearchTool {
    /// A ToolSearch tool.
    pub fn new() -> Self {
        let description = "Fetches full definitions of deferred tools so they can be called. Deferred tools are listed by name only (below); calling one before loading it fails with tool_not_loaded.\n\
             Query forms:\n\
             - \"select:mcp__github__create_issue,mcp__github__list_issues\": exactly these tools\n\
             - \"github issue labels\": keywords, best matches first (names, descriptions and parameters are searched)\n\
             - \"+slack send\": a word with + is required in every result\n\
             The loaded definitions are returned in a <functions> block; call those tools directly afterwards.";
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "\"select:Name1,Name2\" for exact tool names, or keywords (+word to require a word)"
                },
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_RESULTS,
                    "description": "Most tools to return (default 5)"
                }
            },
            "required": ["query"],
            "additionalProperties": false
        });
        Self {
            spec: spec(
                TOOL_SEARCH,
                description,
                schema,
                Class::Reader,
                (5_000, 5_000),
                Subject::None,
            ),
        }
    }
}

fn parse(input: &ToolSearchInput) -> Result<(Query, usize), ToolError> {
    let query = Query::parse(&input.query).map_err(|e| ToolError::InvalidRequest(e.to_string()))?;
    let max = tool_search::max_results(input.max_results)
        .map_err(|e| ToolError::InvalidRequest(e.to_string()))?;
    Ok((query, max))
}

#[async_trait]
impl TypedTool for ToolSearchTool {
    type Input = ToolSearchInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut ToolSearchInput, _ctx: &ToolContext) -> Result<(), ToolError> {
        parse(input).map(|_| ())
    }

    async fn run(&self, input: ToolSearchInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let (query, max) = parse(&input)?;
        let view = ctx.gate.view();
        let found = view.search(&query, Scope::Deferred, max);
        let names: Vec<&str> = found.tools.iter().map(|e| e.spec().name.as_str()).collect();
        LoadedTools::of(&ctx.session).load(names.iter().copied().filter(|n| view.is_deferred(n)));

        let mut text = String::new();
        if found.tools.is_empty() {
            text.push_str(&format!(
                "No tool matched \"{}\". Try other or fewer keywords, or \"select:NAME\" with a name from the deferred list in {TOOL_SEARCH}'s description.",
                input.query
            ));
        } else {
            text.push_str(&format!(
                "Loaded {} tool definition{}; call {} directly now.\n<functions>\n",
                found.tools.len(),
                if found.tools.len() == 1 { "" } else { "s" },
                if found.tools.len() == 1 { "it" } else { "them" },
            ));
            for entry in &found.tools {
                let spec = entry.spec();
                let def = json!({
                    "description": spec.description,
                    "name": spec.name,
                    "parameters": spec.input_schema,
                });
                text.push_str(&format!("<function>{def}</function>\n"));
            }
            text.push_str("</functions>");
        }
        for name in &found.unknown {
            text.push_str(&format!("\nNo tool named `{name}` in this session."));
        }
        for (name, reason) in &found.hidden {
            text.push_str(&format!("\n`{name}` is not available: {reason}"));
        }
        let structured = json!({
            "tools": names,
            "unknown": found.unknown,
            "denied": found.hidden.iter().map(|(n, r)| json!({"name": n, "reason": r})).collect::<Vec<Value>>(),
        });
        Ok(ToolOutput::text(text).with_structured(structured))
    }
}
