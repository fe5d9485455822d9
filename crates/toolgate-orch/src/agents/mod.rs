//! The Agent tool: runs a sub-agent — a model with its own conversation — whose tool calls
//! go through a child gate (see [`toolgate_core::delegate`]), and returns its final text.
//!
//! The model is `toolgate.agent` (an Anthropic Messages or OpenAI-compatible endpoint,
//! through the auto classifier's client) or, when none is configured, the front door's
//! client through MCP sampling. The loop is bounded: at most [`MAX_AGENT_TURNS`] model turns
//! and [`MAX_CALLS_PER_TURN`] tool calls per turn; a model that is down, answers garbage or
//! loops ends the call with a structured error, and its child session (with any background
//! task it started) ends with it. `run_in_background` runs the same loop as a task that
//! TaskOutput, Monitor and TaskStop handle like a background command.

mod defs;
mod model;

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_core::{ChildOptions, Gate, ToolContext, ToolError, TypedTool};
use toolgate_policy::ModelClient;
use toolgate_policy::classifier::ClassifierKind;
use toolgate_protocol::{ErrorCode, ToolAnnotations, ToolCall, ToolOutput, ToolSpec};
use toolgate_tools::shell::{ShellConfig, TaskOrigin, TaskSink, WorkTask, start_work};

pub use defs::{AgentDefinition, FoundAgent, agent_definitions};

use crate::skills::ActiveSkill;
use crate::{CHILD_EXCLUDED_TOOLS, OrchConfig, spec};
use model::{Backend, Block, Message, Role, Tools, TurnError, result_text};

/// Most model turns one sub-agent gets. A turn is one model response and the tool calls in
/// it; real delegated tasks finish in a handful, and a model that keeps calling tools past
/// this is looping, spending the user's money and time.
pub const MAX_AGENT_TURNS: usize = 25;

/// Most tool calls run from one model turn; further calls in the same turn are answered
/// with an error and not run, so one response cannot fan out without bound.
pub const MAX_CALLS_PER_TURN: usize = 16;

/// Tokens a sub-agent's model may answer with per turn.
pub const MAX_AGENT_OUTPUT_TOKENS: u32 = 8_192;

/// How long a sub-agent may run by default (all its turns and calls).
pub const AGENT_DEFAULT_TIMEOUT_MS: u64 = 600_000;

/// The longest a sub-agent may be given.
pub const AGENT_MAX_TIMEOUT_MS: u64 = 1_800_000;

/// Agent's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentInput {
    /// A short (3–5 word) description of the task.
    pub description: String,
    /// The task for the sub-agent.
    pub prompt: String,
    /// Which definition to run (default `general-purpose`).
    #[serde(default)]
    pub subagent_type: Option<String>,
    /// Run as a background task.
    #[serde(default)]
    pub run_in_background: bool,
    /// The model the caller would like (`sonnet`, `opus`, …): a hint to an MCP client's
    /// sampling; an endpoint from `toolgate.agent` runs its configured model.
    #[serde(default)]
    pub model: Option<String>,
    /// A name for the sub-agent, shown in its background task's label.
    #[serde(default)]
    pub name: Option<String>,
    /// Claude Code's `isolation` (`worktree`, `remote`): refused with what to do instead.
    #[serde(default)]
    pub isolation: Option<String>,
}

/// The Agent tool.
pub struct AgentTool {
    spec: ToolSpec,
    config: Arc<OrchConfig>,
    client: Option<Arc<ModelClient>>,
}

impl AgentTool {
    /// The tool, listing the agent definitions found now.
    pub fn new(config: Arc<OrchConfig>) -> Self {
        let mut listing = String::new();
        for f in agent_definitions(&config) {
            if let FoundAgent::Agent(a) = f {
                let tools = a
                    .tools
                    .as_ref()
                    .map_or_else(|| "all your tools".to_owned(), |t| t.join(", "));
                listing.push_str(&format!(
                    "\n- {}: {} (tools: {tools})",
                    a.name, a.description
                ));
            }
        }
        let description = format!(
            "Launches a sub-agent to handle a complex, multi-step task on its own and returns its final report. \
             The sub-agent starts with no context: give it a complete task in `prompt`, and say what it should report back. \
             Its tool calls pass the same permission checks as yours (never more than you may do). \
             With run_in_background: true it runs as a task: read it with TaskOutput or Monitor, stop it with TaskStop.\n\nAvailable agent types:{listing}"
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "minLength": 1, "description": "A short (3-5 word) description of the task"},
                "prompt": {"type": "string", "minLength": 1, "description": "The task for the agent to perform"},
                "subagent_type": {"type": "string", "description": "The type of specialized agent to use (default general-purpose)"},
                "run_in_background": {"type": "boolean", "description": "Run the agent in the background"},
                "model": {"type": "string", "minLength": 1, "description": "The model you would like the agent to use (a preference; the configured model may be used instead)"},
                "name": {"type": "string", "minLength": 1, "description": "A name for the agent, shown in its background task"},
                "isolation": {"type": "string", "enum": ["worktree", "remote"], "description": "Not supported here: call EnterWorktree first to have the agent work in a worktree"}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        });
        let client = config
            .agent_model
            .as_ref()
            .filter(|c| c.kind != ClassifierKind::Builtin && c.endpoint.is_some())
            .map(|c| Arc::new(ModelClient::from_config(c)));
        Self {
            spec: spec(
                "Agent",
                description,
                schema,
                ToolAnnotations {
                    read_only: false,
                    destructive: false,
                    idempotent: false,
                    open_world: true,
                },
                (AGENT_DEFAULT_TIMEOUT_MS, AGENT_MAX_TIMEOUT_MS),
            ),
            config,
            client,
        }
    }

    fn definition(&self, name: &str) -> Result<AgentDefinition, ToolError> {
        let found = agent_definitions(&self.config);
        match found.iter().find(|f| f.name() == name) {
            Some(FoundAgent::Agent(a)) => Ok(a.clone()),
            Some(FoundAgent::Broken(_, e)) => Err(ToolError::InvalidRequest(format!(
                "the agent type `{name}` cannot be used: its definition is broken at {e}"
            ))),
            Some(FoundAgent::Untrusted(_, file)) => Err(ToolError::Denied(format!(
                "the agent type `{name}` ({}) belongs to the workspace, which is not trusted: project agent definitions wait until the user runs `toolgate trust`",
                file.display()
            ))),
            None => {
                let names: Vec<&str> = found
                    .iter()
                    .filter(|f| matches!(f, FoundAgent::Agent(_)))
                    .map(FoundAgent::name)
                    .collect();
                Err(ToolError::InvalidRequest(format!(
                    "there is no agent type `{name}`; the types are: {}",
                    names.join(", ")
                )))
            }
        }
    }

    fn backend(&self, ctx: &ToolContext, model: Option<&str>) -> Backend {
        match &self.client {
            Some(c) => Backend::Endpoint(Arc::clone(c)),
            None => Backend::Sampling {
                gate: ctx.gate.clone(),
                hint: model.map(str::to_owned),
            },
        }
    }

    /// The model that answers: the endpoint's configured one, else whatever the MCP client
    /// picks (`None`).
    fn configured_model(&self) -> Option<&str> {
        self.client
            .as_ref()
            .and(self.config.agent_model.as_ref())
            .and_then(|c| c.model.as_deref())
    }
}

fn type_of(input: &AgentInput) -> &str {
    input.subagent_type.as_deref().unwrap_or("general-purpose")
}

#[async_trait]
impl TypedTool for AgentTool {
    type Input = AgentInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut AgentInput, ctx: &ToolContext) -> Result<(), ToolError> {
        let depth = ctx.gate.depth();
        if depth >= toolgate_core::MAX_AGENT_DEPTH {
            return Err(ToolError::InvalidRequest(
                toolgate_core::ChildError::TooDeep(depth).to_string(),
            ));
        }
        if let Some(isolation) = &input.isolation {
            // A worktree sub-agent is EnterWorktree then Agent (the sub-agent works in the
            // session's cwd); running elsewhere is not something a local gate can offer.
            return Err(ToolError::InvalidRequest(format!(
                "isolation `{isolation}` is not supported here; to have the sub-agent work in a separate worktree, call EnterWorktree first (the sub-agent starts in the session's working directory), then Agent without `isolation`"
            )));
        }
        self.definition(type_of(input)).map(|_| ())
    }

    async fn run(&self, input: AgentInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let def = self.definition(type_of(&input))?;
        let ends = if input.run_in_background {
            ctx.session.cancellation().child_token()
        } else {
            ctx.cancel.child_token()
        };
        let child = ctx
            .gate
            .child(
                ChildOptions {
                    tools: def.tools.clone(),
                    exclude: CHILD_EXCLUDED_TOOLS
                        .iter()
                        .map(|s| (*s).to_owned())
                        .collect(),
                    mode: def.mode,
                    label: Some(format!("agent:{}", def.name)),
                },
                ends.clone(),
            )
            .map_err(|e| ToolError::InvalidRequest(e.to_string()))?;
        ActiveSkill::inherit(&ctx.session, child.session());
        let run = Run {
            backend: self.backend(&ctx, input.model.as_deref()),
            child,
            system: format!(
                "{}\n\nWorking directory: {}",
                def.prompt,
                ctx.session.cwd().display()
            ),
            prompt: input.prompt.clone(),
            cancel: ends,
        };
        if input.run_in_background {
            let label = match &input.name {
                Some(name) => format!("agent {} ({name}): {}", def.name, input.description),
                None => format!("agent {}: {}", def.name, input.description),
            };
            let info = start_work(
                &ctx.session,
                &ShellConfig::default(),
                WorkTask {
                    command: label,
                    description: Some(input.description.clone()),
                    origin: TaskOrigin::Agent {
                        subagent_type: def.name.clone(),
                    },
                },
                move |sink| async move {
                    let result = run.go(Some(&sink)).await;
                    match result {
                        Ok(done) => {
                            sink.write(&format!("\n=== final report ===\n{}\n", done.text));
                            Ok(())
                        }
                        Err(e) => {
                            sink.write(&format!("\n=== stopped ===\n{e}\n"));
                            Err(e.to_string())
                        }
                    }
                },
            )?;
            return Ok(ToolOutput::text(format!(
                "Sub-agent `{}` started in the background with ID: {}. Its progress and final report are written to: {}. Read them with TaskOutput or Monitor; stop it with TaskStop.",
                def.name,
                info.id,
                info.output_path.display()
            ))
            .with_structured(json!({
                "background_task_id": info.id,
                "output_path": info.output_path,
                "agent": def.name,
            })));
        }
        let done = run.go(None).await?;
        Ok(ToolOutput::text(done.text.clone()).with_structured(json!({
            "agent": def.name,
            "name": input.name,
            "model_requested": input.model,
            "model": self.configured_model(),
            "session_id": done.session_id,
            "turns": done.turns,
            "tool_calls": done.calls,
            "refused_calls": done.refused,
        })))
    }
}

/// One sub-agent run.
struct Run {
    backend: Backend,
    child: Gate,
    system: String,
    prompt: String,
    cancel: CancellationToken,
}

/// What a finished run came to.
struct Done {
    text: String,
    turns: usize,
    calls: usize,
    refused: usize,
    session_id: String,
}

impl Run {
    /// Runs the loop to the model's final answer; the child session ends either way.
    async fn go(self, progress: Option<&TaskSink>) -> Result<Done, ToolError> {
        let result = self.turns(progress).await;
        self.child.session().end();
        result
    }

    async fn turns(&self, progress: Option<&TaskSink>) -> Result<Done, ToolError> {
        let mut transcript = vec![Message {
            role: Role::User,
            blocks: vec![Block::Text(self.prompt.clone())],
        }];
        let view = self.child.view();
        let tools = Tools(&view);
        let (mut calls, mut refused) = (0usize, 0usize);
        let session_id = self.child.session().id().to_owned();
        let note = |line: String| {
            if let Some(sink) = progress {
                sink.write(&format!("{line}\n"));
            }
        };
        for turn in 1..=MAX_AGENT_TURNS {
            let reply = tokio::select! {
                r = self.backend.turn(&self.system, &transcript, &tools, MAX_AGENT_OUTPUT_TOKENS) => r,
                () = self.cancel.cancelled() => return Err(ToolError::Cancelled),
            };
            let blocks = reply.map_err(|e| turn_error(e, turn, self.backend.api()))?;
            let uses: Vec<(String, String, serde_json::Value)> = blocks
                .iter()
                .filter_map(|b| match b {
                    Block::ToolUse { id, name, input } => {
                        Some((id.clone(), name.clone(), input.clone()))
                    }
                    _ => None,
                })
                .collect();
            let text: String = blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            transcript.push(Message {
                role: Role::Assistant,
                blocks,
            });
            if uses.is_empty() {
                let text = if text.trim().is_empty() {
                    "(the sub-agent finished without a final report)".to_owned()
                } else {
                    text
                };
                return Ok(Done {
                    text,
                    turns: turn,
                    calls,
                    refused,
                    session_id,
                });
            }
            if !text.trim().is_empty() {
                note(format!("[turn {turn}] {}", text.trim()));
            }
            let mut results = Vec::new();
            for (i, (id, name, input)) in uses.into_iter().enumerate() {
                if i >= MAX_CALLS_PER_TURN {
                    results.push(Block::ToolResult {
                        id,
                        text: format!(
                            "not run: at most {MAX_CALLS_PER_TURN} tool calls are run per turn; make this call again in your next turn"
                        ),
                        is_error: true,
                    });
                    continue;
                }
                calls += 1;
                let result = self
                    .child
                    .execute_with_cancel(
                        ToolCall::new(id.clone(), name.clone(), input),
                        self.cancel.child_token(),
                    )
                    .await;
                let code = result.error().map(|e| e.code);
                if code == Some(ErrorCode::Cancelled) && self.cancel.is_cancelled() {
                    return Err(ToolError::Cancelled);
                }
                if matches!(code, Some(ErrorCode::Denied | ErrorCode::UnknownTool)) {
                    refused += 1;
                }
                note(format!(
                    "[turn {turn}] {name}: {}",
                    code.map_or("ok", |c| c.as_str())
                ));
                results.push(Block::ToolResult {
                    id,
                    text: result_text(&result),
                    is_error: result.is_error(),
                });
            }
            transcript.push(Message {
                role: Role::User,
                blocks: results,
            });
        }
        Err(ToolError::Failed(format!(
            "the sub-agent was stopped after {MAX_AGENT_TURNS} turns without a final report ({calls} tool calls, {refused} refused): it kept calling tools. Its calls are in the audit log under this call's id (session {session_id}). Give it a narrower task."
        )))
    }
}

fn turn_error(e: TurnError, turn: usize, api: &str) -> ToolError {
    match e {
        TurnError::NoModel(why) => ToolError::Failed(format!(
            "no model is available for sub-agents: {why}. Set `toolgate.agent` (kind anthropic or openai, endpoint, model, apiKeyEnv) in the settings, or use an MCP client that offers sampling."
        )),
        other => ToolError::Failed(format!(
            "the sub-agent stopped at turn {turn} ({api}): {other}. Nothing further was done; its earlier calls are in the audit log under this call's id."
        )),
    }
}
