//! TodoWrite: the session's task list, replaced whole by each call and readable by the
//! library user through [`todos`].

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate_core::{Session, ToolContext, ToolError, TypedTool};
use toolgate_protocol::{Concurrency, Subject, ToolOutput, ToolSpec};

use crate::spec::{Class, spec};

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one at a time).
    InProgress,
    /// Done.
    Completed,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    /// What to do, imperative ("Run the tests").
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// The same in the present continuous ("Running the tests"), shown while in progress.
    #[serde(rename = "activeForm")]
    pub active_form: String,
}

#[derive(Debug, Default)]
struct TodoList(Mutex<Vec<Todo>>);

/// The session's current todo list (empty until the model writes one).
pub fn todos(session: &Session) -> Vec<Todo> {
    session
        .extensions
        .get::<TodoList>()
        .map(|l| l.0.lock().unwrap_or_else(PoisonError::into_inner).clone())
        .unwrap_or_default()
}

/// TodoWrite's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TodoWriteInput {
    /// The whole new list.
    pub todos: Vec<Todo>,
}

/// The TodoWrite tool.
pub struct TodoWriteTool {
    spec: ToolSpec,
}

impl Default for TodoWriteTool {
    fn default() -> Self {
        Self::new()
    }
}

impl TodoWriteTool {
    /// A TodoWrite tool.
    pub fn new() -> Self {
        let description = "Creates and updates the task list for this session: send the whole list each time; it replaces the previous one.\n\
             - Use it for work with three or more steps, and update it as you go: mark a task in_progress before starting it and completed as soon as it is done.\n\
             - At most one task may be in_progress at a time.\n\
             - content is the imperative form (\"Run the tests\"), activeForm the present continuous (\"Running the tests\").";
        let schema = json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The updated todo list",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "activeForm": {"type": "string", "minLength": 1}
                        },
                        "required": ["content", "status", "activeForm"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        });
        let mut spec = spec(
            "TodoWrite",
            description,
            schema,
            Class::Reader,
            (5_000, 5_000),
            Subject::None,
        );
        // It changes nothing outside the session (so plan mode keeps it), but it replaces
        // session state, so calls must not overlap.
        spec.annotations.idempotent = true;
        spec.concurrency = Concurrency::Exclusive;
        Self { spec }
    }
}

#[async_trait]
impl TypedTool for TodoWriteTool {
    type Input = TodoWriteInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut TodoWriteInput, _ctx: &ToolContext) -> Result<(), ToolError> {
        let active = input
            .todos
            .iter()
            .filter(|t| t.status == TodoStatus::InProgress)
            .count();
        if active > 1 {
            return Err(ToolError::InvalidRequest(format!(
                "{active} tasks are in_progress; keep exactly one in_progress at a time and mark the others pending or completed"
            )));
        }
        if let Some(t) = input.todos.iter().find(|t| t.content.trim().is_empty()) {
            return Err(ToolError::InvalidRequest(format!(
                "a task has empty content (status {:?}); describe every task",
                t.status
            )));
        }
        Ok(())
    }

    async fn run(&self, input: TodoWriteInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let list = ctx.session.extensions.get_or_init(TodoList::default);
        let old = {
            let mut guard = list.0.lock().unwrap_or_else(PoisonError::into_inner);
            std::mem::replace(&mut *guard, input.todos.clone())
        };
        let mut text = String::from(
            "Todos have been modified successfully. Keep using the todo list to track your progress, and proceed with the current task if there is one.\n",
        );
        for t in &input.todos {
            let mark = match t.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Completed => "[x]",
            };
            text.push_str(&format!("{mark} {}\n", t.content));
        }
        Ok(ToolOutput::text(text).with_structured(json!({
            "oldTodos": serde_json::to_value(&old).unwrap_or(Value::Null),
            "newTodos": serde_json::to_value(&input.todos).unwrap_or(Value::Null),
        })))
    }
}
