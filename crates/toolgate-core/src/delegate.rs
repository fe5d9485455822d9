//! What a tool may do with the gate that runs it ([`GateHandle`], in every
//! [`ToolContext`](crate::ToolContext)): ask the session's user, reach the front door's
//! model, run a call on the same session on behalf of this one, and open a *child gate* for
//! a sub-agent.
//!
//! A child gate is the parent's gate — the same registry, compiled policy engine, prompter,
//! hooks, constraints, sandbox and audit log — over a new session, so its calls pass the
//! same pipeline and nothing about it is configured twice. It can only narrow:
//!
//! - its view is built from the parent's *view* (not the registry) with
//!   [`View::narrowed`], so a tool the parent cannot call the child cannot either, at any
//!   depth;
//! - its mode is the one asked for [`at_most`](PermissionMode::at_most) the parent's mode
//!   at the time;
//! - its session is ended with the call that opened it (cancelled, finished or dropped),
//!   taking its background tasks along;
//! - each of its calls is audited with `parent_call_id` = the opening call's id;
//! - children nest at most [`MAX_AGENT_DEPTH`] deep.

use std::sync::Arc;

use thiserror::Error;
use tokio_util::sync::CancellationToken;
use toolgate_protocol::{CallResult, PermissionMode, ToolCall};

use crate::asking::{QuestionAnswer, QuestionForm, SampleError, SampleRequest, Unanswered};
use crate::gate::Gate;
use crate::session::{Session, SessionOptions};

/// How deep sub-agents nest: the model's session is depth 0, its sub-agents depth 1, theirs
/// depth 2. Each level multiplies the calls one request can cause, and deeper delegation
/// buys nothing a wider prompt at one level cannot; two levels keep a sub-agent able to
/// split its own work once.
pub const MAX_AGENT_DEPTH: u32 = 2;

/// Where a gate's calls come from: the call that opened it, and how many sub-agents deep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lineage {
    /// The call every call of this gate is recorded under.
    pub(crate) parent_call_id: String,
    /// Sub-agent depth (0: the model's own session).
    pub(crate) depth: u32,
}

/// What a sub-agent's gate is asked for; the result is never wider than the parent.
#[derive(Debug, Clone, Default)]
pub struct ChildOptions {
    /// The tools it may use (exact names); `None`: all of the parent's.
    pub tools: Option<Vec<String>>,
    /// Tools it never gets, whatever `tools` says (those that act on the parent's session:
    /// plan mode, worktrees, asking the user).
    pub exclude: Vec<String>,
    /// The mode it asks for; `None`: the parent's. Capped at the parent's mode.
    pub mode: Option<PermissionMode>,
    /// A label for the audit log's `client` (`agent:Explore`).
    pub label: Option<String>,
}

/// Why no child gate was opened.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ChildError {
    /// Sub-agents are already [`MAX_AGENT_DEPTH`] deep.
    #[error(
        "sub-agents nest at most {MAX_AGENT_DEPTH} deep and this call is already at depth {0}; do the work here instead of delegating it"
    )]
    TooDeep(u32),
}

/// The gate running a call, as its tool may use it. Cheap to clone.
#[derive(Clone)]
pub struct GateHandle {
    gate: Gate,
    call_id: String,
}

impl std::fmt::Debug for GateHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateHandle")
            .field("call_id", &self.call_id)
            .field("depth", &self.depth())
            .finish()
    }
}

impl GateHandle {
    pub(crate) fn new(gate: Gate, call_id: &str) -> Self {
        Self {
            gate,
            call_id: call_id.to_owned(),
        }
    }

    /// How many sub-agents deep this call runs (0: the model's own session).
    pub fn depth(&self) -> u32 {
        self.gate.lineage.as_ref().map_or(0, |l| l.depth)
    }

    /// The view of the session this call runs in.
    pub fn view(&self) -> crate::View {
        self.gate.view()
    }

    /// Puts questions to the session's user through its prompter.
    pub async fn ask_user(&self, form: &QuestionForm) -> Result<Vec<QuestionAnswer>, Unanswered> {
        if self.depth() > 0 {
            // A sub-agent's questions would reach a user who never saw its conversation.
            return Err(Unanswered::NoUser(
                "sub-agents cannot ask the user; return the question in your final answer".into(),
            ));
        }
        self.gate.shared.stages.pin().prompter.ask_user(form).await
    }

    /// One model turn from the front door's client (MCP sampling), when it offers one.
    pub async fn sample(&self, request: &SampleRequest) -> Result<serde_json::Value, SampleError> {
        self.gate.shared.stages.pin().prompter.sample(request).await
    }

    /// Runs `call` on this same session through the whole pipeline, recorded under this
    /// call (Monitor starting its command as a Bash call).
    pub async fn execute_on_behalf(&self, call: ToolCall, cancel: CancellationToken) -> CallResult {
        let mut gate = self.gate.clone();
        gate.lineage = Some(Arc::new(Lineage {
            parent_call_id: self.call_id.clone(),
            depth: self.depth(),
        }));
        gate.execute_with_cancel(call, cancel).await
    }

    /// A gate for a sub-agent of this call (module docs). Its session ends when `ends`
    /// is cancelled; end it sooner with [`Session::end`].
    pub fn child(
        &self,
        options: ChildOptions,
        ends: CancellationToken,
    ) -> Result<Gate, ChildError> {
        let depth = self.depth();
        if depth >= MAX_AGENT_DEPTH {
            return Err(ChildError::TooDeep(depth));
        }
        let parent = &self.gate;
        let ceiling = parent.session.mode();
        let mode = options.mode.unwrap_or(ceiling).at_most(ceiling);
        let tools = options.tools;
        let exclude = options.exclude;
        let generation = parent.shared.tools.generation();
        let view = parent.view().narrowed(
            |name| {
                !exclude.iter().any(|e| e == name)
                    && tools.as_ref().is_none_or(|t| t.iter().any(|n| n == name))
            },
            |name| {
                if exclude.iter().any(|e| e == name) {
                    format!(
                        "`{name}` acts on the parent session and is not available to sub-agents"
                    )
                } else {
                    format!("`{name}` is not among this sub-agent's tools")
                }
            },
        );
        // A session opened from the child later (`Gate::new_session`) rebuilds its view from
        // these options: they name exactly the child's tools, so it stays as narrow.
        let mut view_options = parent.view_options.clone();
        view_options.mode = mode;
        view_options.allow_only = Some(
            view.entries()
                .iter()
                .map(|e| e.spec().name.clone())
                .collect(),
        );
        let session = Session::with_cancellation(
            parent.session.workspace().clone(),
            SessionOptions {
                id: Some(format!("{}/{}", parent.session.id(), self.call_id)),
                mode,
                client: options
                    .label
                    .or_else(|| parent.session.client().map(str::to_owned)),
            },
            ends,
        );
        session.set_cwd(&parent.session.cwd());
        Ok(Gate {
            shared: Arc::clone(&parent.shared),
            session: Arc::new(session),
            view: crate::gate::ViewCell::new(generation, view),
            view_options,
            lineage: Some(Arc::new(Lineage {
                parent_call_id: self.call_id.clone(),
                depth: depth + 1,
            })),
        })
    }
}

/// The mode change a call made, if the session's mode is no longer `before`.
pub(crate) fn mode_change(
    before: PermissionMode,
    session: &Session,
) -> Option<toolgate_protocol::ModeChange> {
    let after = session.mode();
    (after != before).then_some(toolgate_protocol::ModeChange {
        from: before,
        to: after,
    })
}
