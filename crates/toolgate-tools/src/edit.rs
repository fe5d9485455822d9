//! Edit: exact string replacement in a file read earlier in the session, refused when the
//! file changed on disk since that read.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolgate_core::{ToolContext, ToolError, TypedTool};
use toolgate_protocol::{Access, CallFacts, ToolOutput, ToolSpec};

use crate::FileToolsConfig;
use crate::error::Error;
use crate::ledger::{Fingerprint, ReadLedger, ReadRecord};
use crate::paths::{self, Expect, ResolvedPath, WriteOptions};
use crate::read::{file_facts, read_whole, take_resolved};
use crate::replace::{self, EditOp};
use crate::spec::{Class, path_subject, spec};

/// The Edit tool.
pub struct EditTool {
    spec: ToolSpec,
    config: Arc<FileToolsConfig>,
}

/// Edit's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The file; absolute, or relative to the session's cwd.
    pub file_path: String,
    /// The exact text to replace.
    pub old_string: String,
    /// The replacement.
    pub new_string: String,
    /// Replace every occurrence.
    #[serde(default)]
    pub replace_all: bool,
    #[serde(skip)]
    resolved: Option<ResolvedPath>,
}

impl EditTool {
    /// An Edit tool with these limits.
    pub fn new(config: Arc<FileToolsConfig>) -> Self {
        let description = "Performs exact string replacements in a file.\n\
             - Read the file in this session first; an edit of a file that changed on disk since that read is refused.\n\
             - old_string must match the file exactly (whitespace and indentation included; do not include the line-number prefix from Read output) and occur exactly once, unless replace_all is true.\n\
             - new_string must differ from old_string. Line endings and the trailing newline are kept.\n\
             - An empty old_string creates a new file with new_string as its content.";
        let schema = json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
                "old_string": {"type": "string", "description": "The text to replace"},
                "new_string": {"type": "string", "description": "The text to replace it with (must be different from old_string)"},
                "replace_all": {"type": "boolean", "default": false, "description": "Replace all occurrences of old_string (default false)"}
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false
        });
        Self {
            spec: spec(
                "Edit",
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

/// Stage-3 checks shared by Edit and MultiEdit.
pub(crate) fn validate_edit(
    file_path: &mut String,
    ops: &[EditOp],
    ctx: &ToolContext,
) -> Result<ResolvedPath, ToolError> {
    let numbered = ops.len() > 1;
    for (i, op) in ops.iter().enumerate() {
        replace::check_op(op, numbered.then_some(i)).map_err(|r| ToolError::InvalidRequest(r.0))?;
    }
    let resolved = paths::resolve(&ctx.session, file_path)?;
    if resolved.is_dir {
        return Err(Error::IsDirectory(resolved.display).into());
    }
    if resolved.exists {
        ReadLedger::of(&ctx.session).require_read(&resolved.real)?;
    } else if ops.first().is_none_or(|op| !op.old_string.is_empty()) {
        return Err(Error::NotFound(resolved.display).into());
    }
    *file_path = resolved.display.to_string_lossy().into_owned();
    Ok(resolved)
}

/// Stage 9 shared by Edit and MultiEdit: read, check freshness, apply, replace atomically.
pub(crate) fn edit_blocking(
    config: &FileToolsConfig,
    ctx: &ToolContext,
    resolved: &ResolvedPath,
    ops: &[EditOp],
) -> Result<ToolOutput, ToolError> {
    let root = resolved.root_dir()?;
    let ledger = ReadLedger::of(&ctx.session);
    let (original, expect) = match paths::open_file(
        &root,
        &resolved.rel,
        &resolved.real,
        config.allow_hard_links,
    ) {
        Ok(opened) => {
            let stat = opened.stat;
            let (bytes, hash) = read_whole(config, resolved, opened)?;
            ledger.require_fresh(&resolved.real, &hash, &stat)?;
            let text = String::from_utf8(bytes).map_err(|_| {
                ToolError::InvalidRequest(format!(
                    "{} is not valid UTF-8 text; Edit changes text files only",
                    resolved.display.display()
                ))
            })?;
            (text, Expect::Content(hash))
        }
        Err(Error::NotFound(_)) => (String::new(), Expect::Absent),
        Err(e) => return Err(e.into()),
    };
    if expect == Expect::Absent && ops.first().is_none_or(|op| !op.old_string.is_empty()) {
        return Err(Error::NotFound(resolved.display.clone()).into());
    }
    let (updated, count) = replace::apply(&original, ops, ops.len() > 1)
        .map_err(|r| ToolError::InvalidRequest(r.0))?;
    paths::write_atomic(
        &root,
        &resolved.rel,
        &resolved.real,
        updated.as_bytes(),
        WriteOptions {
            create_parents: true,
            expect,
            allow_hard_links: config.allow_hard_links,
        },
    )?;
    ledger.record(
        &resolved.real,
        ReadRecord {
            fingerprint: Fingerprint::Content(Sha256::digest(updated.as_bytes()).into()),
            partial: false,
        },
    );
    let path = resolved.display.display();
    let name = resolved.display.to_string_lossy();
    let diff = replace::diff_snippet(&original, &updated, &name);
    let head = match expect {
        Expect::Absent => format!("Created {path}."),
        Expect::Content(_) if count == 1 => format!("The file {path} has been updated."),
        Expect::Content(_) => format!("The file {path} has been updated ({count} replacements)."),
    };
    Ok(
        ToolOutput::text(format!("{head}\n{diff}")).with_structured(json!({
            "file_path": resolved.display,
            "replacements": count,
        })),
    )
}

#[async_trait]
impl TypedTool for EditTool {
    type Input = EditInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut EditInput, ctx: &ToolContext) -> Result<(), ToolError> {
        let op = [EditOp {
            old_string: input.old_string.clone(),
            new_string: input.new_string.clone(),
            replace_all: input.replace_all,
        }];
        input.resolved = Some(validate_edit(&mut input.file_path, &op, ctx)?);
        Ok(())
    }

    fn analyze(&self, input: &EditInput, ctx: &ToolContext) -> CallFacts {
        file_facts(input.resolved.as_ref(), &ctx.session, Access::Write)
    }

    fn normalized(&self, input: &EditInput) -> Option<Value> {
        Some(json!({
            "file_path": input.file_path,
            "old_string": input.old_string,
            "new_string": input.new_string,
            "replace_all": input.replace_all,
        }))
    }

    async fn run(&self, input: EditInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let config = Arc::clone(&self.config);
        tokio::task::spawn_blocking(move || {
            let resolved = take_resolved(input.resolved)?;
            let op = [EditOp {
                old_string: input.old_string,
                new_string: input.new_string,
                replace_all: input.replace_all,
            }];
            edit_blocking(&config, &ctx, &resolved, &op)
        })
        .await
        .map_err(|e| ToolError::Failed(format!("Edit stopped unexpectedly: {e}")))?
    }
}
