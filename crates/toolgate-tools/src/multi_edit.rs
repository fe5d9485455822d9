//! MultiEdit: several replacements in one file, applied in order, all or nothing.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_core::{ToolContext, ToolError, TypedTool};
use toolgate_protocol::{Access, CallFacts, ToolOutput, ToolSpec};

use crate::FileToolsConfig;
use crate::edit::{edit_blocking, validate_edit};
use crate::paths::ResolvedPath;
use crate::read::{file_facts, take_resolved};
use crate::replace::EditOp;
use crate::spec::{Class, path_subject, spec};

/// The MultiEdit tool.
pub struct MultiEditTool {
    spec: ToolSpec,
    config: Arc<FileToolsConfig>,
}

/// MultiEdit's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultiEditInput {
    /// The file; absolute, or relative to the session's cwd.
    pub file_path: String,
    /// The replacements, applied in order.
    pub edits: Vec<EditOp>,
    #[serde(skip)]
    resolved: Option<ResolvedPath>,
}

impl MultiEditTool {
    /// A MultiEdit tool with these limits.
    pub fn new(config: Arc<FileToolsConfig>) -> Self {
        let description = "Makes several exact string replacements in one file in a single call.\n\
             - The edits are applied in order, each to the result of the previous one; if any edit fails, none is applied.\n\
             - Each edit follows Edit's rules: old_string must match exactly and be unique unless replace_all is true, and new_string must differ.\n\
             - Read the file in this session first; a file changed on disk since that read is refused.";
        let schema = json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "description": "Array of edit operations to perform sequentially on the file",
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_string": {"type": "string", "description": "The text to replace"},
                            "new_string": {"type": "string", "description": "The text to replace it with"},
                            "replace_all": {"type": "boolean", "default": false, "description": "Replace all occurrences of old_string (default false)"}
                        },
                        "required": ["old_string", "new_string"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["file_path", "edits"],
            "additionalProperties": false
        });
        Self {
            spec: spec(
                "MultiEdit",
                description,
                schema,
                Class::Writer,
                (60_000, 120_000),
                path_subject("file_path", true),
            ),
            config,
        }
    }
}

#[async_trait]
impl TypedTool for MultiEditTool {
    type Input = MultiEditInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut MultiEditInput, ctx: &ToolContext) -> Result<(), ToolError> {
        if input.edits.is_empty() {
            return Err(ToolError::InvalidRequest(
                "edits is empty; send at least one {old_string, new_string}".into(),
            ));
        }
        input.resolved = Some(validate_edit(&mut input.file_path, &input.edits, ctx)?);
        Ok(())
    }

    fn analyze(&self, input: &MultiEditInput, ctx: &ToolContext) -> CallFacts {
        file_facts(input.resolved.as_ref(), &ctx.session, Access::Write)
    }

    fn normalized(&self, input: &MultiEditInput) -> Option<Value> {
        let edits: Vec<Value> = input
            .edits
            .iter()
            .map(|e| {
                json!({
                    "old_string": e.old_string,
                    "new_string": e.new_string,
                    "replace_all": e.replace_all,
                })
            })
            .collect();
        Some(json!({ "file_path": input.file_path, "edits": edits }))
    }

    async fn run(&self, input: MultiEditInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let config = Arc::clone(&self.config);
        tokio::task::spawn_blocking(move || {
            let resolved = take_resolved(input.resolved)?;
            edit_blocking(&config, &ctx, &resolved, &input.edits)
        })
        .await
        .map_err(|e| ToolError::Failed(format!("MultiEdit stopped unexpectedly: {e}")))?
    }
}
