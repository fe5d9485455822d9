//! NotebookEdit: replaces, inserts or deletes one cell of a Jupyter notebook.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use toolgate_core::{ToolContext, ToolError, TypedTool};
use toolgate_protocol::{Access, CallFacts, ToolOutput, ToolSpec};

use crate::FileToolsConfig;
use crate::error::Error;
use crate::ipynb::{self, cell_label, split_source};
use crate::ledger::{Fingerprint, ReadLedger, ReadRecord};
use crate::paths::{self, Expect, ResolvedPath, WriteOptions};
use crate::read::{file_facts, read_whole, take_resolved};
use crate::spec::{Class, path_subject, spec};

/// A cell's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellType {
    /// Code.
    Code,
    /// Markdown.
    Markdown,
}

/// What to do with the cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditMode {
    /// Replace the cell's source.
    #[default]
    Replace,
    /// Insert a new cell after `cell_id` (at the start when absent).
    Insert,
    /// Delete the cell.
    Delete,
}

/// NotebookEdit's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotebookEditInput {
    /// The notebook; absolute, or relative to the session's cwd.
    pub notebook_path: String,
    /// The cell's id (or `cell-N` for the N-th cell, 0-based).
    #[serde(default)]
    pub cell_id: Option<String>,
    /// The new source.
    pub new_source: String,
    /// The cell type (required for insert).
    #[serde(default)]
    pub cell_type: Option<CellType>,
    /// replace (default), insert or delete.
    #[serde(default)]
    pub edit_mode: Option<EditMode>,
    #[serde(skip)]
    resolved: Option<ResolvedPath>,
}

/// The NotebookEdit tool.
pub struct NotebookEditTool {
    spec: ToolSpec,
    config: Arc<FileToolsConfig>,
}

impl NotebookEditTool {
    /// A NotebookEdit tool with these limits.
    pub fn new(config: Arc<FileToolsConfig>) -> Self {
        let description = "Replaces, inserts or deletes one cell of a Jupyter notebook (.ipynb).\n\
             - Read the notebook in this session first; cell ids are shown by Read.\n\
             - edit_mode replace (default) sets the cell's source (a code cell's outputs are cleared); insert adds a new cell after cell_id, or at the start without cell_id, and needs cell_type; delete removes the cell.\n\
             - cell_id is the cell's id, or cell-N for the N-th cell counting from 0.";
        let schema = json!({
            "type": "object",
            "properties": {
                "notebook_path": {"type": "string", "description": "The absolute path to the Jupyter notebook file to edit (must be absolute, not relative)"},
                "cell_id": {"type": "string", "description": "The ID of the cell to edit. When inserting a new cell, the new cell will be inserted after the cell with this ID, or at the beginning if not specified"},
                "new_source": {"type": "string", "description": "The new source for the cell"},
                "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "The type of the cell (code or markdown). If not specified, it defaults to the current cell type. If using edit_mode=insert, this is required"},
                "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"], "description": "The type of edit to make (replace, insert, delete). Defaults to replace"}
            },
            "required": ["notebook_path", "new_source"],
            "additionalProperties": false
        });
        Self {
            spec: spec(
                "NotebookEdit",
                description,
                schema,
                Class::Writer,
                (60_000, 120_000),
                path_subject("notebook_path", true),
            ),
            config,
        }
    }
}

#[async_trait]
impl TypedTool for NotebookEditTool {
    type Input = NotebookEditInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut NotebookEditInput, ctx: &ToolContext) -> Result<(), ToolError> {
        let resolved = paths::resolve(&ctx.session, &input.notebook_path)?;
        if !resolved
            .real
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("ipynb"))
        {
            return Err(ToolError::InvalidRequest(format!(
                "{} is not a Jupyter notebook (.ipynb); use Edit for other files",
                resolved.display.display()
            )));
        }
        if !resolved.exists {
            return Err(Error::NotFound(resolved.display).into());
        }
        ReadLedger::of(&ctx.session).require_read(&resolved.real)?;
        let mode = input.edit_mode.unwrap_or_default();
        if mode == EditMode::Insert && input.cell_type.is_none() {
            return Err(ToolError::InvalidRequest(
                "cell_type is required to insert a cell; send \"code\" or \"markdown\"".into(),
            ));
        }
        if mode != EditMode::Insert && input.cell_id.is_none() {
            return Err(ToolError::InvalidRequest(
                "cell_id is required to replace or delete a cell; Read the notebook to see the ids"
                    .into(),
            ));
        }
        input.notebook_path = resolved.display.to_string_lossy().into_owned();
        input.resolved = Some(resolved);
        Ok(())
    }

    fn analyze(&self, input: &NotebookEditInput, ctx: &ToolContext) -> CallFacts {
        file_facts(input.resolved.as_ref(), &ctx.session, Access::Write)
    }

    fn normalized(&self, input: &NotebookEditInput) -> Option<Value> {
        let mut v = json!({ "notebook_path": input.notebook_path, "new_source": input.new_source });
        if let Some(id) = &input.cell_id {
            v["cell_id"] = json!(id);
        }
        if let Some(t) = input.cell_type {
            v["cell_type"] = json!(t);
        }
        if let Some(m) = input.edit_mode {
            v["edit_mode"] = json!(m);
        }
        Some(v)
    }

    async fn run(
        &self,
        input: NotebookEditInput,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let config = Arc::clone(&self.config);
        tokio::task::spawn_blocking(move || edit_notebook(&config, &ctx, input))
            .await
            .map_err(|e| ToolError::Failed(format!("NotebookEdit stopped unexpectedly: {e}")))?
    }
}

fn find_cell(cells: &[Value], id: &str) -> Option<usize> {
    if let Some(i) = cells
        .iter()
        .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
    {
        return Some(i);
    }
    let n = id
        .strip_prefix("cell-")
        .unwrap_or(id)
        .parse::<usize>()
        .ok()?;
    (n < cells.len()).then_some(n)
}

/// Whether the notebook's format has cell ids (nbformat 4.5 and later).
fn has_ids(nb: &Map<String, Value>) -> bool {
    let major = nb.get("nbformat").and_then(Value::as_u64).unwrap_or(4);
    let minor = nb
        .get("nbformat_minor")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    major > 4 || (major == 4 && minor >= 5)
}

fn new_id(cells: &[Value], seed: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    for attempt in 0u32.. {
        let digest = Sha256::digest(format!("{seed}:{nanos}:{attempt}").as_bytes());
        let id = hex::encode(&digest[..4]);
        if !cells
            .iter()
            .any(|c| c.get("id").and_then(Value::as_str) == Some(&id))
        {
            return id;
        }
    }
    String::new()
}

fn set_type(cell: &mut Map<String, Value>, kind: CellType) {
    cell.insert("cell_type".into(), json!(kind));
    match kind {
        CellType::Code => {
            cell.insert("execution_count".into(), Value::Null);
            cell.insert("outputs".into(), json!([]));
        }
        CellType::Markdown => {
            cell.remove("execution_count");
            cell.remove("outputs");
        }
    }
}

fn edit_notebook(
    config: &FileToolsConfig,
    ctx: &ToolContext,
    input: NotebookEditInput,
) -> Result<ToolOutput, ToolError> {
    let resolved = take_resolved(input.resolved)?;
    let root = resolved.root_dir()?;
    let opened = paths::open_file(
        &root,
        &resolved.rel,
        &resolved.real,
        config.allow_hard_links,
    )?;
    let stat = opened.stat;
    let (bytes, hash) = read_whole(config, &resolved, opened)?;
    let ledger = ReadLedger::of(&ctx.session);
    ledger.require_fresh(&resolved.real, &hash, &stat)?;
    let mut nb = ipynb::parse(&bytes, &resolved.display)?;
    let with_ids = has_ids(&nb);
    let Some(Value::Array(cells)) = nb.get_mut("cells") else {
        return Err(ToolError::InvalidRequest(
            "the notebook has no cells list".into(),
        ));
    };
    let mode = input.edit_mode.unwrap_or_default();
    let index = match &input.cell_id {
        Some(id) => Some(find_cell(cells, id).ok_or_else(|| {
            ToolError::InvalidRequest(format!(
                "no cell with id {id:?} in {}; Read the notebook to see the cell ids",
                resolved.display.display()
            ))
        })?),
        None => None,
    };
    let summary = match (mode, index) {
        (EditMode::Insert, at) => {
            let kind = input.cell_type.unwrap_or(CellType::Code);
            let mut cell = Map::new();
            if with_ids {
                cell.insert(
                    "id".into(),
                    json!(new_id(cells, &resolved.display.to_string_lossy())),
                );
            }
            cell.insert("metadata".into(), json!({}));
            cell.insert("source".into(), split_source(&input.new_source));
            set_type(&mut cell, kind);
            let pos = at.map_or(0, |i| i + 1);
            let label = cell_label(&Value::Object(cell.clone()), pos);
            cells.insert(pos, Value::Object(cell));
            format!("Inserted cell {label} at position {pos}")
        }
        (EditMode::Delete, Some(i)) => {
            let label = cell_label(&cells[i], i);
            cells.remove(i);
            format!("Deleted cell {label}")
        }
        (EditMode::Replace, Some(i)) => {
            let label = cell_label(&cells[i], i);
            let Some(cell) = cells[i].as_object_mut() else {
                return Err(ToolError::InvalidRequest(format!(
                    "cell {label} is not an object"
                )));
            };
            cell.insert("source".into(), split_source(&input.new_source));
            let current = cell
                .get("cell_type")
                .and_then(Value::as_str)
                .unwrap_or("code");
            let kind = input.cell_type.unwrap_or(if current == "markdown" {
                CellType::Markdown
            } else {
                CellType::Code
            });
            set_type(cell, kind);
            format!("Updated cell {label}")
        }
        (_, None) => {
            return Err(ToolError::InvalidRequest(
                "cell_id is required to replace or delete a cell".into(),
            ));
        }
    };
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    Value::Object(nb)
        .serialize(&mut ser)
        .map_err(|e| ToolError::Failed(format!("could not serialise the notebook: {e}")))?;
    out.push(b'\n');
    paths::write_atomic(
        &root,
        &resolved.rel,
        &resolved.real,
        &out,
        WriteOptions {
            create_parents: false,
            expect: Expect::Content(hash),
            allow_hard_links: config.allow_hard_links,
        },
    )?;
    ledger.record(
        &resolved.real,
        ReadRecord {
            fingerprint: Fingerprint::Content(Sha256::digest(&out).into()),
            partial: false,
        },
    );
    Ok(
        ToolOutput::text(format!("{summary} in {}.", resolved.display.display()))
            .with_structured(json!({ "notebook_path": resolved.display, "edit_mode": mode })),
    )
}
