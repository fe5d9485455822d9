//! TaskOutput and TaskStop, and their legacy names BashOutput and KillShell.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_core::{RunRequest, Session, ToolContext, ToolError, TypedTool};
use toolgate_protocol::{Concurrency, Subject, TimeoutSpec, ToolAnnotations, ToolOutput, ToolSpec};

use crate::shell::TOOL_VERSION;
use crate::shell::bash::clip;
use crate::shell::config::{
    ShellConfig, TASK_OUTPUT_DEFAULT_WAIT_MS, TASK_OUTPUT_MAX_WAIT_MS, TERM_GRACE,
};
use crate::shell::output::{filter_range, read_range};
use crate::shell::tasks::{Task, TaskStatus, TaskTable};

/// Longest line BashOutput's `filter` looks at; the rest of a longer line is cut.
const FILTER_MAX_LINE_BYTES: usize = 64 * 1024;

/// Largest compiled `filter` regex (the regex crate's size limit), so a pathological
/// pattern is refused instead of eating memory.
const FILTER_REGEX_SIZE_LIMIT: usize = 1024 * 1024;

fn spec(
    name: &str,
    description: String,
    schema: Value,
    read_only: bool,
    timeout: (u64, u64),
) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        version: TOOL_VERSION.into(),
        description,
        input_schema: schema,
        output_schema: None,
        annotations: ToolAnnotations {
            read_only,
            destructive: !read_only,
            idempotent: false,
            open_world: false,
        },
        concurrency: Concurrency::Exclusive,
        timeout: TimeoutSpec {
            default_ms: timeout.0,
            max_ms: timeout.1,
        },
        subject: Subject::None,
    }
}

/// The task with `id`, or an error that lists the tasks there are.
pub(crate) fn find(session: &Session, id: &str) -> Result<Arc<Task>, ToolError> {
    let table = TaskTable::of(session);
    if let Some(task) = table.get(id) {
        return Ok(task);
    }
    let known: Vec<String> = table
        .list()
        .iter()
        .map(|t| format!("{} ({}, {})", t.id, t.status().name(), clip(&t.command, 40)))
        .collect();
    let hint = if known.is_empty() {
        "there are no background tasks in this session".to_owned()
    } else {
        format!("the tasks are: {}", known.join(", "))
    };
    Err(ToolError::InvalidRequest(format!(
        "No task found with ID `{id}`; {hint}"
    )))
}

fn status_lines(status: &TaskStatus) -> String {
    let mut out = format!("<status>{}</status>", status.name());
    match status {
        TaskStatus::Completed {
            exit_code: Some(c), ..
        } => out.push_str(&format!("\n<exit_code>{c}</exit_code>")),
        TaskStatus::Completed {
            signal: Some(s), ..
        } => out.push_str(&format!("\n<signal>{s}</signal>")),
        TaskStatus::Failed { reason } => out.push_str(&format!("\n<reason>{reason}</reason>")),
        _ => {}
    }
    out
}

fn status_json(status: &TaskStatus) -> Value {
    match status {
        TaskStatus::Completed { exit_code, signal } => {
            json!({"status": status.name(), "exit_code": exit_code, "signal": signal})
        }
        TaskStatus::Failed { reason } => json!({"status": status.name(), "reason": reason}),
        _ => json!({"status": status.name()}),
    }
}

/// New output of a task as inline text.
struct NewOutput {
    text: String,
    bytes: u64,
    truncated: bool,
}

async fn new_output(
    task: &Task,
    max_chars: usize,
    filter: Option<regex::Regex>,
) -> Result<NewOutput, ToolError> {
    let (from, to) = task.take_unread();
    let path = task.path.clone();
    let read = tokio::task::spawn_blocking(move || match filter {
        Some(re) => filter_range(&path, from, to, &re, max_chars, FILTER_MAX_LINE_BYTES),
        None => read_range(&path, from, to, max_chars),
    })
    .await
    .map_err(|e| ToolError::Failed(format!("reading the task's output failed: {e}")))?;
    let (text, truncated) = read.map_err(|e| {
        ToolError::Failed(format!(
            "could not read the task's output file {}: {e}",
            task.path.display()
        ))
    })?;
    Ok(NewOutput {
        text,
        bytes: to - from,
        truncated,
    })
}

/// TaskOutput's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskOutputInput {
    /// The task id Bash returned.
    pub task_id: String,
    /// Wait for the task to finish (up to `timeout`) before answering. Default true.
    #[serde(default = "yes")]
    pub block: bool,
    /// How long to wait, in milliseconds (the gate clamps it).
    #[serde(default)]
    pub timeout: Option<u64>,
}

fn yes() -> bool {
    true
}

/// The TaskOutput tool: a background task's new output and status.
pub struct TaskOutputTool {
    spec: ToolSpec,
    config: Arc<ShellConfig>,
}

impl TaskOutputTool {
    /// A TaskOutput tool with these settings.
    pub fn new(config: Arc<ShellConfig>) -> Self {
        let description = format!(
            "Retrieves output from a running or completed background task (a Bash command run with run_in_background, or a server started in the background).\n\
             - Returns the output produced since the last TaskOutput call for the task, and its status (running, completed with an exit code, killed, failed).\n\
             - With block: true (the default) it waits until the task finishes or `timeout` ms pass (default {TASK_OUTPUT_DEFAULT_WAIT_MS}, max {TASK_OUTPUT_MAX_WAIT_MS}); use block: false to check on a server without waiting.\n\
             - New output over {} characters keeps its start and end; the whole output is always in the task's output file.",
            config.max_inline_chars
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The task ID to get output from"},
                "block": {"type": "boolean", "description": "Whether to wait for completion", "default": true},
                "timeout": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": TASK_OUTPUT_MAX_WAIT_MS,
                    "description": "Max wait time in ms",
                    "default": TASK_OUTPUT_DEFAULT_WAIT_MS
                }
            },
            "required": ["task_id"],
            "additionalProperties": false
        });
        Self {
            spec: spec(
                "TaskOutput",
                description,
                schema,
                true,
                (TASK_OUTPUT_DEFAULT_WAIT_MS, TASK_OUTPUT_MAX_WAIT_MS),
            ),
            config,
        }
    }
}

#[async_trait]
impl TypedTool for TaskOutputTool {
    type Input = TaskOutputInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// How long to wait for the task is this call's own timeout.
    fn run_request(&self, input: &TaskOutputInput) -> RunRequest {
        RunRequest {
            timeout_ms: input.timeout,
            ..RunRequest::default()
        }
    }

    fn validate(&self, input: &mut TaskOutputInput, ctx: &ToolContext) -> Result<(), ToolError> {
        find(&ctx.session, &input.task_id).map(|_| ())
    }

    async fn run(&self, input: TaskOutputInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let task = find(&ctx.session, &input.task_id)?;
        let mut retrieval = "success";
        if input.block && task.status().is_running() {
            let finished = tokio::select! {
                f = task.wait(ctx.timeout) => f,
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            };
            if !finished {
                retrieval = "timeout";
            }
        } else if task.status().is_running() {
            retrieval = "not_ready";
        }
        let status = task.status();
        let new = new_output(&task, self.config.max_inline_chars, None).await?;
        let body = if new.text.is_empty() {
            "(no new output)".to_owned()
        } else {
            new.text
        };
        let text = format!(
            "<retrieval_status>{retrieval}</retrieval_status>\n<task_id>{}</task_id>\n<task_type>local_bash</task_type>\n{}\n<output>\n{body}\n</output>",
            task.id,
            status_lines(&status)
        );
        let mut structured = status_json(&status);
        if let Value::Object(map) = &mut structured {
            map.insert("task_id".into(), json!(task.id));
            map.insert("retrieval_status".into(), json!(retrieval));
            map.insert("new_bytes".into(), json!(new.bytes));
            map.insert("truncated".into(), json!(new.truncated));
            map.insert("output_path".into(), json!(task.path));
        }
        Ok(ToolOutput::text(text).with_structured(structured))
    }
}

/// BashOutput's input (the legacy form of TaskOutput).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashOutputInput {
    /// The task id Bash returned.
    pub bash_id: String,
    /// A regular expression: only new lines matching it are returned (the others are
    /// skipped for good).
    #[serde(default)]
    pub filter: Option<String>,
    #[serde(skip)]
    regex: Option<regex::Regex>,
}

/// The BashOutput tool: the legacy, non-blocking form of TaskOutput.
pub struct BashOutputTool {
    spec: ToolSpec,
    config: Arc<ShellConfig>,
}

impl BashOutputTool {
    /// A BashOutput tool with these settings.
    pub fn new(config: Arc<ShellConfig>) -> Self {
        let description = "Retrieves output from a running or completed background bash shell.\n\
             - Returns only the output produced since the last check, with the shell's status; it never waits.\n\
             - `filter` is a regular expression: only matching lines are returned, and lines that do not match are no longer available to read.\n\
             - Same as TaskOutput with block: false."
            .to_owned();
        let schema = json!({
            "type": "object",
            "properties": {
                "bash_id": {"type": "string", "description": "The ID of the background shell to retrieve output from"},
                "filter": {
                    "type": "string",
                    "description": "Optional regular expression to filter the output lines. Only lines matching this regex will be included in the result. Any lines that do not match will no longer be available to read."
                }
            },
            "required": ["bash_id"],
            "additionalProperties": false
        });
        Self {
            spec: spec("BashOutput", description, schema, true, (30_000, 30_000)),
            config,
        }
    }
}

#[async_trait]
impl TypedTool for BashOutputTool {
    type Input = BashOutputInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut BashOutputInput, ctx: &ToolContext) -> Result<(), ToolError> {
        find(&ctx.session, &input.bash_id)?;
        if let Some(pattern) = &input.filter {
            let re = regex::RegexBuilder::new(pattern)
                .size_limit(FILTER_REGEX_SIZE_LIMIT)
                .build()
                .map_err(|e| {
                    ToolError::InvalidRequest(format!(
                        "`filter` is not a valid regular expression: {e}"
                    ))
                })?;
            input.regex = Some(re);
        }
        Ok(())
    }

    async fn run(&self, input: BashOutputInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let task = find(&ctx.session, &input.bash_id)?;
        let status = task.status();
        let new = new_output(&task, self.config.max_inline_chars, input.regex).await?;
        let text = format!(
            "{}\n<stdout>\n{}\n</stdout>",
            status_lines(&status),
            new.text
        );
        let mut structured = status_json(&status);
        if let Value::Object(map) = &mut structured {
            map.insert("task_id".into(), json!(task.id));
            map.insert("new_bytes".into(), json!(new.bytes));
            map.insert("truncated".into(), json!(new.truncated));
            map.insert("output_path".into(), json!(task.path));
        }
        Ok(ToolOutput::text(text).with_structured(structured))
    }
}

/// TaskStop's input: `task_id`, or the deprecated `shell_id`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskStopInput {
    /// The task to stop.
    #[serde(default)]
    pub task_id: Option<String>,
    /// Deprecated name of `task_id`.
    #[serde(default)]
    pub shell_id: Option<String>,
}

/// KillShell's input (the legacy form of TaskStop).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillShellInput {
    /// The task to stop.
    pub shell_id: String,
}

/// Stops a task, or says why it cannot.
async fn stop(session: &Session, id: &str, verb: &str) -> Result<ToolOutput, ToolError> {
    let task = find(session, id)?;
    let before = task.status();
    if !before.is_running() {
        return Err(ToolError::InvalidRequest(format!(
            "Task {id} is not running (status: {}), so there is nothing to stop",
            before.name()
        )));
    }
    let after = task.stop().await;
    if after.is_running() {
        return Err(ToolError::Failed(format!(
            "task {id} did not stop within {} ms",
            (TERM_GRACE * 2).as_millis()
        )));
    }
    let text = format!("Successfully {verb}: {id} ({})", clip(&task.command, 200));
    let mut structured = status_json(&after);
    if let Value::Object(map) = &mut structured {
        map.insert("task_id".into(), json!(id));
    }
    Ok(ToolOutput::text(text).with_structured(structured))
}

/// Time a stop call may take: the grace period twice over, and a margin.
const STOP_TIMEOUT_MS: u64 = 10_000;

fn stop_spec(name: &str, description: &str, schema: Value) -> ToolSpec {
    let mut s = spec(
        name,
        description.to_owned(),
        schema,
        false,
        (STOP_TIMEOUT_MS, STOP_TIMEOUT_MS),
    );
    s.annotations.destructive = true;
    s.annotations.idempotent = true;
    s
}

/// The TaskStop tool: stops a background task and every process it started.
pub struct TaskStopTool {
    spec: ToolSpec,
}

impl Default for TaskStopTool {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskStopTool {
    /// A TaskStop tool.
    pub fn new() -> Self {
        let description = "Stops a running background task by its ID: the task's shell and every process it started get SIGTERM, then SIGKILL if they are still running after a short grace period.\n\
             - Use it for servers and watchers you no longer need, or a task that is stuck.\n\
             - `shell_id` is accepted as a deprecated name of `task_id`.";
        let schema = json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The ID of the background task to stop"},
                "shell_id": {"type": "string", "description": "Deprecated: use task_id instead"}
            },
            "additionalProperties": false
        });
        Self {
            spec: stop_spec("TaskStop", description, schema),
        }
    }
}

#[async_trait]
impl TypedTool for TaskStopTool {
    type Input = TaskStopInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut TaskStopInput, _ctx: &ToolContext) -> Result<(), ToolError> {
        match (&input.task_id, &input.shell_id) {
            (None, None) => Err(ToolError::InvalidRequest(
                "give `task_id`: the ID Bash returned for the background task".into(),
            )),
            (Some(a), Some(b)) if a != b => Err(ToolError::InvalidRequest(
                "`task_id` and the deprecated `shell_id` name different tasks; send only `task_id`"
                    .into(),
            )),
            (None, Some(id)) => {
                input.task_id = Some(id.clone());
                Ok(())
            }
            _ => Ok(()),
        }
    }

    async fn run(&self, input: TaskStopInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let id = input.task_id.or(input.shell_id).unwrap_or_default();
        stop(&ctx.session, &id, "stopped task").await
    }
}

/// The KillShell tool: the legacy form of TaskStop.
pub struct KillShellTool {
    spec: ToolSpec,
}

impl Default for KillShellTool {
    fn default() -> Self {
        Self::new()
    }
}

impl KillShellTool {
    /// A KillShell tool.
    pub fn new() -> Self {
        let description = "Kills a running background bash shell by its ID, with every process it started. Same as TaskStop.";
        let schema = json!({
            "type": "object",
            "properties": {
                "shell_id": {"type": "string", "description": "The ID of the background shell to kill"}
            },
            "required": ["shell_id"],
            "additionalProperties": false
        });
        Self {
            spec: stop_spec("KillShell", description, schema),
        }
    }
}

#[async_trait]
impl TypedTool for KillShellTool {
    type Input = KillShellInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: KillShellInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        stop(&ctx.session, &input.shell_id, "killed shell").await
    }
}
