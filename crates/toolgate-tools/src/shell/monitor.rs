//! Monitor: streams the new output lines of a background task as they arrive, a bounded
//! batch per call, until the task ends (TaskStop ends it sooner).
//!
//! Given a `command` instead of a `task_id`, Monitor starts it as a Bash call with
//! `run_in_background` made on this call's behalf through the gate
//! ([`GateHandle::execute_on_behalf`](toolgate_core::GateHandle::execute_on_behalf)): the
//! command is analysed, decided, sandboxed and audited exactly as that Bash call would be
//! (its record carries this call's id as `parent_call_id`), so Monitor is no way around a
//! Bash rule. Monitor itself only reads the session's own tasks.

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_core::{ToolContext, ToolError, TypedTool};
use toolgate_protocol::{
    Concurrency, Subject, TimeoutSpec, ToolAnnotations, ToolCall, ToolOutput, ToolSpec,
};

use crate::shell::TOOL_VERSION;
use crate::shell::task_tools::find;
use crate::shell::tasks::TaskStatus;

/// How long one Monitor call waits for new lines by default.
pub const MONITOR_DEFAULT_WAIT_MS: u64 = 30_000;

/// The longest one Monitor call may wait: a stream is many calls, each returning what
/// arrived; a call must come back often enough for the model to react.
pub const MONITOR_MAX_WAIT_MS: u64 = 300_000;

/// Most lines one call returns by default; the rest wait for the next call.
pub const MONITOR_DEFAULT_LINES: usize = 200;

/// Most lines one call may return.
pub const MONITOR_MAX_LINES: usize = 2_000;

/// Most bytes of output one call reads, so a flood of output costs a bounded result.
pub const MONITOR_MAX_BYTES: usize = 64 * 1024;

/// Monitor's input: a task to watch, or a command to start and watch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorInput {
    /// The task to watch (from Bash, Agent or an earlier Monitor).
    #[serde(default)]
    pub task_id: Option<String>,
    /// A command to start in the background and watch.
    #[serde(default)]
    pub command: Option<String>,
    /// What the command does, for the task list.
    #[serde(default)]
    pub description: Option<String>,
    /// How long to wait for new lines, in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Most lines to return.
    #[serde(default)]
    pub max_lines: Option<usize>,
}

/// The Monitor tool.
pub struct MonitorTool {
    spec: ToolSpec,
}

impl Default for MonitorTool {
    fn default() -> Self {
        Self::new()
    }
}

impl MonitorTool {
    /// A Monitor tool.
    pub fn new() -> Self {
        let description = format!(
            "Streams new output lines of a background task as they arrive.\n\
             - Give `task_id` (a task from Bash with run_in_background, Agent with run_in_background, or an earlier Monitor) or `command` (started in the background as a Bash call, checked like one, and watched).\n\
             - Each call waits until new complete lines arrive or the task ends (at most `timeout_ms`, default {MONITOR_DEFAULT_WAIT_MS}, max {MONITOR_MAX_WAIT_MS}) and returns at most `max_lines` (default {MONITOR_DEFAULT_LINES}) of them with the task's status; call again to keep watching.\n\
             - Lines Monitor returns are not returned again by TaskOutput. Stop the task with TaskStop."
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The background task to watch"},
                "command": {"type": "string", "description": "A command to run in the background and watch"},
                "description": {"type": "string", "description": "What the command does (5-10 words)"},
                "timeout_ms": {"type": "integer", "minimum": 0, "maximum": MONITOR_MAX_WAIT_MS,
                    "description": "How long to wait for new lines"},
                "max_lines": {"type": "integer", "minimum": 1, "maximum": MONITOR_MAX_LINES,
                    "description": "Most lines to return in this call"}
            },
            "additionalProperties": false
        });
        Self {
            spec: ToolSpec {
                name: "Monitor".into(),
                version: TOOL_VERSION.into(),
                description,
                input_schema: schema,
                output_schema: None,
                annotations: ToolAnnotations {
                    read_only: true,
                    destructive: false,
                    idempotent: false,
                    open_world: false,
                },
                concurrency: Concurrency::Exclusive,
                timeout: TimeoutSpec {
                    default_ms: MONITOR_MAX_WAIT_MS + 10_000,
                    max_ms: MONITOR_MAX_WAIT_MS + 10_000,
                },
                subject: Subject::None,
            },
        }
    }
}

#[async_trait]
impl TypedTool for MonitorTool {
    type Input = MonitorInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut MonitorInput, ctx: &ToolContext) -> Result<(), ToolError> {
        match (&input.task_id, &input.command) {
            (Some(_), Some(_)) | (None, None) => Err(ToolError::InvalidRequest(
                "give exactly one of `task_id` (a task to watch) or `command` (a command to start and watch)".into(),
            )),
            (Some(id), None) => {
                let task = find(&ctx.session, id)?;
                let status = task.status();
                if !status.is_running() && !task_unread(&task) {
                    return Err(ToolError::InvalidRequest(format!(
                        "task {id} has already ended ({}) and all its output was returned; there is nothing more to monitor (its whole output is in {})",
                        status.name(),
                        task.path.display()
                    )));
                }
                Ok(())
            }
            (None, Some(command)) if command.trim().is_empty() => Err(
                ToolError::InvalidRequest("`command` is empty; give a command to run".into()),
            ),
            (None, Some(_)) => Ok(()),
        }
    }

    async fn run(&self, input: MonitorInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let (id, started) = match (&input.task_id, &input.command) {
            (Some(id), _) => (id.clone(), None),
            (None, Some(command)) => {
                let (id, text) = start_command(&ctx, command, input.description.clone()).await?;
                (id, Some(text))
            }
            (None, None) => return Err(ToolError::InvalidRequest("nothing to monitor".into())),
        };
        let task = find(&ctx.session, &id)?;
        let wait = Duration::from_millis(
            input
                .timeout_ms
                .unwrap_or(MONITOR_DEFAULT_WAIT_MS)
                .min(MONITOR_MAX_WAIT_MS),
        );
        let max_lines = input
            .max_lines
            .unwrap_or(MONITOR_DEFAULT_LINES)
            .clamp(1, MONITOR_MAX_LINES);
        tokio::select! {
            () = task.wait_for_output(wait) => {}
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        }
        let (lines, more) = task.take_lines(max_lines, MONITOR_MAX_BYTES).map_err(|e| {
            ToolError::Failed(format!(
                "could not read the task's output file {}: {e}",
                task.path.display()
            ))
        })?;
        let status = task.status();
        let mut text = String::new();
        if let Some(s) = &started {
            text.push_str(s);
            text.push('\n');
        }
        text.push_str(&format!(
            "<task_id>{id}</task_id>\n<status>{}</status>\n",
            status.name()
        ));
        if let TaskStatus::Completed {
            exit_code: Some(c), ..
        } = &status
        {
            text.push_str(&format!("<exit_code>{c}</exit_code>\n"));
        }
        text.push_str("<lines>\n");
        for l in &lines {
            text.push_str(l);
            text.push('\n');
        }
        text.push_str("</lines>");
        if lines.is_empty() {
            text.push_str("\n(no new lines)");
        }
        if more {
            text.push_str("\n(more lines are waiting: call Monitor again)");
        } else if status.is_running() {
            text.push_str("\n(the task is still running: call Monitor again to keep watching, TaskStop to end it)");
        }
        Ok(ToolOutput::text(text).with_structured(json!({
            "task_id": id,
            "status": status.name(),
            "lines": lines,
            "more": more,
            "output_path": task.path,
        })))
    }
}

/// Whether the task has output not yet returned.
fn task_unread(task: &crate::shell::tasks::Task) -> bool {
    let (from, to) = task.peek_unread();
    from < to
}

/// Starts `command` as a background Bash call on this call's behalf; returns the task id
/// and what Bash said.
async fn start_command(
    ctx: &ToolContext,
    command: &str,
    description: Option<String>,
) -> Result<(String, String), ToolError> {
    let mut input = json!({"command": command, "run_in_background": true});
    if let (Value::Object(map), Some(d)) = (&mut input, description) {
        map.insert("description".into(), json!(d));
    }
    let call = ToolCall::new(format!("{}/bash", ctx.call_id), "Bash", input);
    let result = ctx
        .gate
        .execute_on_behalf(call, ctx.cancel.child_token())
        .await;
    match &result.outcome {
        Ok(out) => {
            let id = out
                .structured
                .as_ref()
                .and_then(|s| s.get("background_task_id"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    ToolError::Failed("the Bash call started no background task".into())
                })?;
            Ok((id.to_owned(), out.joined_text()))
        }
        Err(e) => {
            let text = format!("the command was not started: {}", e.message);
            Err(match e.code {
                toolgate_protocol::ErrorCode::Denied => ToolError::Denied(text),
                toolgate_protocol::ErrorCode::InvalidInput => ToolError::InvalidInput(text),
                toolgate_protocol::ErrorCode::InvalidRequest => ToolError::InvalidRequest(text),
                _ => ToolError::Failed(text),
            })
        }
    }
}
