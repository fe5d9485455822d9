//! The Bash tool and its background tasks: **Bash**, **TaskOutput** (legacy name
//! **BashOutput**), **TaskStop** (legacy name **KillShell**) and **Monitor** (streams a
//! task's new lines), with Claude Code's schemas.
//!
//! A command runs as `bash -c` in the session's working directory, as the leader of its own
//! process group, with stdin on `/dev/null`, stdout and stderr merged on one pipe, and an
//! environment without variables that look like secrets. Its output is captured with
//! bounded memory: the head and tail stay in memory, everything goes to a file once it
//! outgrows the inline budget (30,000 characters by default), and the result shows head,
//! tail and the file's path. At its timeout, on cancellation, or when the call is dropped,
//! the whole process group and every process found to descend from the command are killed
//! (SIGTERM, then SIGKILL). A `cd` persists while it stays inside the workspace roots.
//!
//! `run_in_background: true`, and commands the analyzer recognises as servers or watchers
//! (`npm run dev`, `vite`, `uvicorn`, …), return a task id at once; TaskOutput reads new
//! output, TaskStop kills the task's process group, and every task is killed when the
//! session ends. A foreground command that exits but leaves processes running in its
//! group is turned into a task too, so nothing runs unmanaged. [`tasks`] lists a session's
//! tasks for the library user. Limits are in [`ShellConfig`]; `docs/bash.md` has the rules.
//!
//! ```
//! use toolgate_core::{Gate, Registry};
//! use toolgate_protocol::ToolCall;
//! use toolgate_tools::shell::{ShellConfig, register_shell_tools};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let registry = register_shell_tools(Registry::builder(), &ShellConfig::default())
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
//! let ok = gate.execute(ToolCall::new("1", "Bash", json!({"command": "echo hi; echo oops >&2; exit 3"}))).await;
//! assert_eq!(ok.output().unwrap().joined_text(), "hi\noops\nExit code 3");
//! # });
//! ```

mod bash;
mod config;
mod cwd;
mod env;
mod exec;
mod monitor;
mod output;
mod procfs;
mod task_tools;
mod tasks;

use std::sync::Arc;

use toolgate_core::{RegistryBuilder, Tool};

pub use bash::{BashInput, BashTool, MAX_SOURCED_BYTES, read_sourced_file};
pub use config::*;
pub use monitor::{
    MONITOR_DEFAULT_LINES, MONITOR_DEFAULT_WAIT_MS, MONITOR_MAX_BYTES, MONITOR_MAX_LINES,
    MONITOR_MAX_WAIT_MS, MonitorInput, MonitorTool,
};
pub use task_tools::{
    BashOutputInput, BashOutputTool, KillShellInput, KillShellTool, TaskOutputInput,
    TaskOutputTool, TaskStopInput, TaskStopTool,
};
pub use tasks::{
    TaskInfo, TaskOrigin, TaskSink, TaskStatus, WorkTask, start_work, stop_task, tasks,
};

/// Moves the session's working directory to `dir` the way `cd` in a Bash call does: inside
/// the roots, opened without following a symlink, and pinned by a handle (see the `cwd`
/// module), so the next command starts there. `false` leaves the cwd as it was.
pub fn set_cwd(session: &toolgate_core::Session, dir: &std::path::Path) -> bool {
    cwd::set(session, dir)
}

/// The version recorded in registry snapshots for the shell tools.
pub(crate) const TOOL_VERSION: &str = "1";

/// The names of the tools [`shell_tools`] returns, in order.
pub const SHELL_TOOL_NAMES: [&str; 6] = [
    "Bash",
    "TaskOutput",
    "BashOutput",
    "TaskStop",
    "KillShell",
    "Monitor",
];

/// The Bash tool and the background task tools, configured with `config`.
pub fn shell_tools(config: &ShellConfig) -> Vec<Arc<dyn Tool>> {
    let config = Arc::new(config.clone());
    vec![
        Arc::new(BashTool::new(Arc::clone(&config))),
        Arc::new(TaskOutputTool::new(Arc::clone(&config))),
        Arc::new(BashOutputTool::new(Arc::clone(&config))),
        Arc::new(TaskStopTool::new()),
        Arc::new(KillShellTool::new()),
        Arc::new(MonitorTool::new()),
    ]
}

/// Registers the shell tools into a registry builder.
pub fn register_shell_tools(builder: RegistryBuilder, config: &ShellConfig) -> RegistryBuilder {
    shell_tools(config)
        .into_iter()
        .fold(builder, RegistryBuilder::register_arc)
}
