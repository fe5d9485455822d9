//! toolgate's built-in file and search tools: **Read**, **Write**, **Edit**, **MultiEdit**,
//! **Glob**, **Grep**, **NotebookEdit** and **TodoWrite**, and **ToolSearch** (which loads
//! deferred MCP tools), with Claude Code's schemas and behaviour.
//!
//! Every path a tool touches goes through [`paths`], the security core: the path is resolved
//! to its real path, which must lie inside one of the session's roots, and the file is then
//! opened relative to a handle on that root with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS)`, so that `..`, symlinks (also ones swapped in
//! after the check), `/proc` magic links and, by default, hard-linked files cannot lead a tool
//! outside. Protected paths (`.git/`, shell rc files, `.mcp.json`, …) are reported to the
//! policy stage in the call's facts; tools never decide permissions themselves.
//!
//! Write, Edit, MultiEdit and NotebookEdit require that the session read the file first and
//! refuse when it changed on disk since (content hash); every write replaces the file
//! atomically. Limits are in [`FileToolsConfig`].
//!
//! ```
//! use toolgate_core::{Gate, Registry};
//! use toolgate_protocol::ToolCall;
//! use toolgate_tools::{FileToolsConfig, register_file_tools};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("hello.txt"), "hello\nworld\n").unwrap();
//! let registry = register_file_tools(Registry::builder(), &FileToolsConfig::default())
//!     .build()
//!     .unwrap();
//! // Every call allowed, for the example; real gates get the permission engine
//! // (`toolgate-setup`).
//! let gate = Gate::builder()
//!     .workspace(dir.path())
//!     .registry(registry)
//!     .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
//!     .build()
//!     .unwrap();
//!
//! let read = gate.execute(ToolCall::new("1", "Read", json!({"file_path": "hello.txt"}))).await;
//! assert_eq!(read.output().unwrap().joined_text(), "     1\thello\n     2\tworld\n");
//!
//! let edit = gate
//!     .execute(ToolCall::new("2", "Edit", json!({
//!         "file_path": "hello.txt", "old_string": "world", "new_string": "there"
//!     })))
//!     .await;
//! assert!(!edit.is_error());
//! assert_eq!(std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(), "hello\nthere\n");
//!
//! let outside = gate.execute(ToolCall::new("3", "Read", json!({"file_path": "/etc/passwd"}))).await;
//! assert!(outside.is_error());
//! # });
//! ```
#![deny(missing_docs)]

mod config;
mod edit;
mod error;
mod glob;
mod grep;
mod image_fit;
mod ipynb;
mod ledger;
mod lines;
mod media;
mod multi_edit;
mod notebook;
pub mod paths;
mod pdf;
mod read;
mod replace;
mod search;
pub mod shell;
mod spec;
mod todo;
mod tool_search;
mod write;

use std::sync::Arc;

use toolgate_core::{RegistryBuilder, Tool};

pub use config::*;
pub use edit::{EditInput, EditTool};
pub use error::Error;
pub use glob::{GlobInput, GlobTool};
pub use grep::{GrepInput, GrepTool};
pub use ledger::{Fingerprint, ReadRecord, read_record};
pub use multi_edit::{MultiEditInput, MultiEditTool};
pub use notebook::{CellType, EditMode, NotebookEditInput, NotebookEditTool};
pub use pdf::{PdfError, PdfPages, PdfText, pdf_text};
pub use read::{ReadInput, ReadTool};
pub use replace::EditOp;
pub use search::OutputMode;
pub use todo::{Todo, TodoStatus, TodoWriteInput, TodoWriteTool, todos};
pub use tool_search::{ToolSearchInput, ToolSearchTool};
pub use write::{WriteInput, WriteTool};

/// The names of the tools [`builtin_file_tools`] returns, in order.
pub const FILE_TOOL_NAMES: [&str; 8] = [
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "Glob",
    "Grep",
    "NotebookEdit",
    "TodoWrite",
];

/// The built-in file and search tools, configured with `config`.
pub fn builtin_file_tools(config: &FileToolsConfig) -> Vec<Arc<dyn Tool>> {
    let config = Arc::new(config.clone());
    vec![
        Arc::new(ReadTool::new(Arc::clone(&config))),
        Arc::new(WriteTool::new(Arc::clone(&config))),
        Arc::new(EditTool::new(Arc::clone(&config))),
        Arc::new(MultiEditTool::new(Arc::clone(&config))),
        Arc::new(GlobTool::new(Arc::clone(&config))),
        Arc::new(GrepTool::new(Arc::clone(&config))),
        Arc::new(NotebookEditTool::new(Arc::clone(&config))),
        Arc::new(TodoWriteTool::new()),
    ]
}

/// Registers the built-in file and search tools into a registry builder.
pub fn register_file_tools(builder: RegistryBuilder, config: &FileToolsConfig) -> RegistryBuilder {
    builtin_file_tools(config)
        .into_iter()
        .fold(builder, RegistryBuilder::register_arc)
}
