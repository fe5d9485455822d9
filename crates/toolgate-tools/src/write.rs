//! Write: creates or replaces a file, atomically.

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
use crate::spec::{Class, path_subject, spec};

/// The Write tool.
pub struct WriteTool {
    spec: ToolSpec,
    config: Arc<FileToolsConfig>,
}

/// Write's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// The file; absolute, or relative to the session's cwd.
    pub file_path: String,
    /// The whole new content.
    pub content: String,
    #[serde(skip)]
    resolved: Option<ResolvedPath>,
}

impl WriteTool {
    /// A Write tool with these limits.
    pub fn new(config: Arc<FileToolsConfig>) -> Self {
        let description = "Writes a file to the local filesystem, creating it (and missing parent directories) or replacing it.\n\
             - An existing file must have been read with Read in this session first, and must not have changed since.\n\
             - The file is replaced atomically and keeps its permissions.\n\
             - Prefer Edit for changes to existing files: it sends only the changed part.";
        let schema = json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path to the file to write (must be absolute, not relative)"},
                "content": {"type": "string", "description": "The content to write to the file"}
            },
            "required": ["file_path", "content"],
            "additionalProperties": false
        });
        Self {
            spec: spec(
                "Write",
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
impl TypedTool for WriteTool {
    type Input = WriteInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut WriteInput, ctx: &ToolContext) -> Result<(), ToolError> {
        let resolved = paths::resolve(&ctx.session, &input.file_path)?;
        if resolved.is_dir {
            return Err(Error::IsDirectory(resolved.display).into());
        }
        if resolved.exists {
            ReadLedger::of(&ctx.session).require_read(&resolved.real)?;
        }
        input.file_path = resolved.display.to_string_lossy().into_owned();
        input.resolved = Some(resolved);
        Ok(())
    }

    fn analyze(&self, input: &WriteInput, ctx: &ToolContext) -> CallFacts {
        file_facts(input.resolved.as_ref(), &ctx.session, Access::Write)
    }

    fn normalized(&self, input: &WriteInput) -> Option<Value> {
        Some(json!({ "file_path": input.file_path, "content": input.content }))
    }

    async fn run(&self, input: WriteInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let config = Arc::clone(&self.config);
        tokio::task::spawn_blocking(move || write_blocking(&config, &ctx, input))
            .await
            .map_err(|e| ToolError::Failed(format!("Write stopped unexpectedly: {e}")))?
    }
}

fn write_blocking(
    config: &FileToolsConfig,
    ctx: &ToolContext,
    input: WriteInput,
) -> Result<ToolOutput, ToolError> {
    let resolved = take_resolved(input.resolved)?;
    let root = resolved.root_dir()?;
    let ledger = ReadLedger::of(&ctx.session);
    let expect = match paths::open_file(
        &root,
        &resolved.rel,
        &resolved.real,
        config.allow_hard_links,
    ) {
        Ok(opened) => {
            let stat = opened.stat;
            let (_, hash) = read_whole(config, &resolved, opened)?;
            ledger.require_fresh(&resolved.real, &hash, &stat)?;
            Expect::Content(hash)
        }
        Err(Error::NotFound(_)) => Expect::Absent,
        Err(e) => return Err(e.into()),
    };
    paths::write_atomic(
        &root,
        &resolved.rel,
        &resolved.real,
        input.content.as_bytes(),
        WriteOptions {
            create_parents: true,
            expect,
            allow_hard_links: config.allow_hard_links,
        },
    )?;
    ledger.record(
        &resolved.real,
        ReadRecord {
            fingerprint: Fingerprint::Content(Sha256::digest(input.content.as_bytes()).into()),
            partial: false,
        },
    );
    let path = resolved.display.display();
    let lines = crate::lines::count_lines(input.content.as_bytes());
    let (text, kind) = match expect {
        Expect::Absent => (
            format!("File created successfully at: {path} ({lines} lines)"),
            "create",
        ),
        Expect::Content(_) => (
            format!("The file {path} has been overwritten ({lines} lines)."),
            "update",
        ),
    };
    Ok(ToolOutput::text(text).with_structured(json!({
        "type": kind,
        "file_path": resolved.display,
        "bytes": input.content.len(),
    })))
}
