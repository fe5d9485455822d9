//! The Gate: stages 1–11 of the pipeline, written once for every tool. The stages are in
//! [`pipeline`], one method each; a call's audit record is built by its [`flight`].

mod flight;
mod pipeline;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Value, json};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use toolgate_protocol::{
    CallError, CallFacts, CallResult, Concurrency, Decision, ErrorCode, Stage, StageStatus,
    ToolCall, ToolSpec, Verdict,
};

use self::flight::Flight;
use crate::deferral::LoadedTools;
use crate::delegate::{GateHandle, Lineage};
use crate::live_tools::{LiveTools, ToolsHandle, ViewPlanner};
use crate::registry::{Entry, Lookup, Registry, RegistryError, View, ViewOptions};
use crate::sandbox::SandboxStage;
use crate::session::{Session, SessionOptions, Workspace};
use crate::shape;
use crate::stage_set::{LiveStages, StageSet};
use crate::stages::{
    AuditSink, ConstraintStage, HookStage, NoAudit, PolicyStage, Prompter, ReadFilter,
};
use crate::tool::ToolContext;
use crate::tool_search::TOOL_SEARCH;

/// Inputs larger than this (serialised) are refused at stage 2: a model has no business
/// sending more in one call, and everything downstream (hooks, audit) copies the input.
pub const DEFAULT_MAX_INPUT_BYTES: usize = 8 * 1024 * 1024;

/// Time a tool gets past its own timeout to stop gracefully and report partial output
/// before the gate drops it.
pub const TIMEOUT_GRACE: Duration = Duration::from_secs(2);

/// Why a gate could not be built.
#[derive(Debug, Error)]
pub enum BuildError {
    /// No workspace was given.
    #[error("no workspace: call .workspace(dir)")]
    NoWorkspace,
    /// The workspace or an additional directory is unusable.
    #[error("{0}")]
    Workspace(#[from] std::io::Error),
    /// The registry or view could not be built.
    #[error("{0}")]
    Registry(#[from] RegistryError),
}

/// Limits the gate itself applies.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest accepted input, in bytes of JSON.
    pub max_input_bytes: usize,
    /// Largest inline result text per block; more is saved to `spill_dir`.
    pub max_result_bytes: usize,
    /// Where over-long results are saved: a private directory per session is made under
    /// it. Default: the session's output directory ([`crate::outputs`]).
    pub spill_dir: Option<PathBuf>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
            max_result_bytes: shape::DEFAULT_MAX_RESULT_BYTES,
            spill_dir: None,
        }
    }
}

pub(crate) struct Shared {
    /// The tools; replaced when an upstream's tools change ([`crate::live_tools`]).
    pub(crate) tools: Arc<LiveTools>,
    /// The policy's stages; a reload swaps them, each call pins one set (its flight's).
    pub(crate) stages: LiveStages,
    audit: Arc<dyn AuditSink>,
    limits: Limits,
    /// What the gate's tools depend on and nothing else holds (see
    /// [`GateBuilder::retain`]).
    _retained: Vec<Arc<dyn std::any::Any + Send + Sync>>,
}

/// Builds a [`Gate`].
pub struct GateBuilder {
    workspace: Option<PathBuf>,
    home: Option<Option<PathBuf>>,
    add_dirs: Vec<PathBuf>,
    registry: Option<Registry>,
    view: ViewOptions,
    planner: Option<Arc<dyn ViewPlanner>>,
    session: SessionOptions,
    stages: StageSet,
    audit: Arc<dyn AuditSink>,
    limits: Limits,
    retained: Vec<Arc<dyn std::any::Any + Send + Sync>>,
}

impl Default for GateBuilder {
    fn default() -> Self {
        Self {
            workspace: None,
            home: None,
            add_dirs: Vec::new(),
            registry: None,
            view: ViewOptions::default(),
            planner: None,
            session: SessionOptions::default(),
            stages: StageSet::default(),
            audit: Arc::new(NoAudit),
            limits: Limits::default(),
            retained: Vec::new(),
        }
    }
}

impl GateBuilder {
    /// The workspace root (required).
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// The user's home directory, for `~` and for judging path classes below it (default:
    /// `$HOME`).
    pub fn home(mut self, home: Option<PathBuf>) -> Self {
        self.home = Some(home);
        self
    }

    /// An additional directory the session may act in.
    pub fn add_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.add_dirs.push(dir.into());
        self
    }

    /// The tools.
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// How the session's view is trimmed (the mode is taken from the session options).
    pub fn view(mut self, view: ViewOptions) -> Self {
        self.view = view;
        self
    }

    /// Plans each session's view from its options and the registry in force: at the start,
    /// and again whenever the registry is replaced ([`ToolsHandle::replace`]). Without
    /// one, the options are used as they are.
    pub fn view_planner(mut self, planner: Arc<dyn ViewPlanner>) -> Self {
        self.planner = Some(planner);
        self
    }

    /// The first session's options (id, mode, client).
    pub fn session(mut self, session: SessionOptions) -> Self {
        self.session = session;
        self
    }

    /// Stage 6.
    pub fn policy(mut self, policy: Arc<dyn PolicyStage>) -> Self {
        self.stages.policy = policy;
        self
    }

    /// Who answers an ask (default: deny, since no one can be asked).
    pub fn prompter(mut self, prompter: Arc<dyn Prompter>) -> Self {
        self.stages.prompter = prompter;
        self
    }

    /// Stages 5 and 10.
    pub fn hooks(mut self, hooks: Arc<dyn HookStage>) -> Self {
        self.stages.hooks = hooks;
        self
    }

    /// Stage 7.
    pub fn constraints(mut self, constraints: Arc<dyn ConstraintStage>) -> Self {
        self.stages.constraints = constraints;
        self
    }

    /// Stage 8.
    pub fn sandbox(mut self, sandbox: Arc<dyn SandboxStage>) -> Self {
        self.stages.sandbox = sandbox;
        self
    }

    /// Stages 5–8 and 10 at once (a reloadable policy's first version).
    pub fn stages(mut self, stages: StageSet) -> Self {
        self.stages = stages;
        self
    }

    /// The audit sink.
    pub fn audit(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = audit;
        self
    }

    /// The gate's own limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Keeps `value` alive as long as the gate: something its tools depend on that the
    /// builder's caller does not keep (the host of upstream MCP servers, which restarts a
    /// server that is down so its tools can join later).
    pub fn retain(mut self, value: Arc<dyn std::any::Any + Send + Sync>) -> Self {
        self.retained.push(value);
        self
    }

    /// Builds the gate and its first session.
    pub fn build(self) -> Result<Gate, BuildError> {
        let root = self.workspace.ok_or(BuildError::NoWorkspace)?;
        let mut workspace = Workspace::new(root)?;
        if let Some(home) = self.home {
            workspace = workspace.with_home(home);
        }
        for dir in &self.add_dirs {
            workspace.add_dir(dir)?;
        }
        let registry = match self.registry {
            Some(r) => r,
            None => Registry::builder().build()?,
        };
        let mut view_options = self.view;
        view_options.mode = self.session.mode;
        // The gate keeps the options as given; a planner's additions are made afresh for
        // each registry (and each policy) from them.
        let planned = match &self.planner {
            Some(planner) => planner.plan(&registry, &view_options),
            None => view_options.clone(),
        };
        let view = registry.view(&planned)?;
        let shared = Arc::new(Shared {
            tools: Arc::new(LiveTools::new(registry, self.planner)),
            stages: LiveStages::new(self.stages),
            audit: self.audit,
            limits: self.limits,
            _retained: self.retained,
        });
        Ok(Gate {
            shared,
            session: Arc::new(Session::new(workspace, self.session)),
            view: ViewCell::new(0, view),
            view_options,
            lineage: None,
        })
    }
}

/// A session's view and the registry generation it was built from; shared by the clones
/// of a gate, rebuilt on first use after the registry was replaced.
#[derive(Clone)]
pub(crate) struct ViewCell(Arc<Mutex<(u64, View)>>);

impl ViewCell {
    pub(crate) fn new(generation: u64, view: View) -> Self {
        Self(Arc::new(Mutex::new((generation, view))))
    }
}

/// The enforcement point: every tool call goes through [`Gate::execute`].
///
/// A `Gate` is one session over a shared registry and shared stages; cloning it shares the
/// session, [`Gate::new_session`] starts another one.
#[derive(Clone)]
pub struct Gate {
    pub(crate) shared: Arc<Shared>,
    pub(crate) session: Arc<Session>,
    pub(crate) view: ViewCell,
    pub(crate) view_options: ViewOptions,
    /// Set for a sub-agent's gate and for calls made on behalf of another call
    /// ([`crate::delegate`]).
    pub(crate) lineage: Option<Arc<Lineage>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl Gate {
    /// A builder.
    pub fn builder() -> GateBuilder {
        GateBuilder::default()
    }

    /// The session this gate serves.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The tools this session sees now: rebuilt from the registry in force when it was
    /// replaced since the last use.
    pub fn view(&self) -> View {
        let generation = self.shared.tools.generation();
        let mut cell = self.view.0.lock().unwrap_or_else(PoisonError::into_inner);
        if cell.0 != generation {
            let (generation, registry) = self.shared.tools.current();
            let options = match &self.shared.tools.planner {
                Some(planner) => planner.plan(&registry, &self.view_options),
                None => self.view_options.clone(),
            };
            match registry.view(&options) {
                Ok(view) => *cell = (generation, view),
                // The options were valid for the first registry and patterns do not depend
                // on it; should that ever fail, the session keeps the view it had.
                Err(e) => {
                    tracing::error!(error = %e, "the view could not be rebuilt for new tools");
                    cell.0 = generation;
                }
            }
        }
        cell.1.clone()
    }

    /// The whole registry in force.
    pub fn registry(&self) -> Registry {
        self.shared.tools.current().1
    }

    /// A handle on this gate's tools, shared by all its sessions: replace the registry
    /// (new upstream tools) or wait for it to change.
    pub fn tools_handle(&self) -> ToolsHandle {
        ToolsHandle(Arc::clone(&self.shared.tools))
    }

    /// The policy's stages that a call starting now runs under.
    pub fn stage_set(&self) -> Arc<StageSet> {
        self.shared.stages.pin()
    }

    /// Replaces the policy's stages of this gate — every session and clone of it — for the
    /// calls that start from now on; calls in flight finish under the set they started
    /// with (see [`StageSet`]). Returns the set it replaced.
    pub fn replace_stages(&self, stages: StageSet) -> Arc<StageSet> {
        self.shared.stages.replace(stages)
    }

    /// A new session over the same registry, stages and audit log, in the same workspace.
    /// `view` overrides the view options (for a profile); the mode comes from `options`.
    pub fn new_session(
        &self,
        options: SessionOptions,
        view: Option<ViewOptions>,
    ) -> Result<Gate, RegistryError> {
        let mut view_options = view.unwrap_or_else(|| self.view_options.clone());
        view_options.mode = options.mode;
        let (generation, registry) = self.shared.tools.current();
        let planned = match &self.shared.tools.planner {
            Some(planner) => planner.plan(&registry, &view_options),
            None => view_options.clone(),
        };
        let view = registry.view(&planned)?;
        Ok(Gate {
            shared: Arc::clone(&self.shared),
            session: Arc::new(Session::new(self.session.workspace().clone(), options)),
            view: ViewCell::new(generation, view),
            view_options,
            lineage: None,
        })
    }

    /// Runs one call through the pipeline. Dropping the returned future cancels the call;
    /// the cancellation is still recorded in the audit log.
    pub async fn execute(&self, call: ToolCall) -> CallResult {
        self.execute_with_cancel(call, self.session.cancellation().child_token())
            .await
    }

    /// Runs one call; cancelling `cancel` stops the tool and records `cancelled`.
    pub async fn execute_with_cancel(
        &self,
        mut call: ToolCall,
        cancel: CancellationToken,
    ) -> CallResult {
        // A call by a tool's old name (`Task`) is a call of the tool (`Agent`) from here on:
        // hooks, rules, the audit record and the result all name the tool that runs.
        let current = toolgate_protocol::canonical_tool_name(&call.name);
        if current != call.name {
            call.name = current.to_owned();
        }
        let mut flight = Flight::new(self, &call);
        let (call_id, tool) = (call.id.clone(), call.name.clone());
        // A tool's own panic is caught around its run (`run_tool`); this catches one in any
        // other stage, so the caller still gets an answer and the record says what happened
        // instead of "cancelled".
        let run = std::panic::AssertUnwindSafe(self.run_pipeline(call, cancel, &mut flight))
            .catch_unwind()
            .await;
        let result = run.unwrap_or_else(|panic| {
            let what = panic_text(&*panic);
            tracing::error!(%tool, %what, "the call's pipeline panicked");
            // Where it stopped: the stage after the last one its record shows.
            let stage = flight
                .record
                .stages
                .last()
                .map_or(Stage::Resolve, |s| s.stage.next());
            let message = format!(
                "internal error in toolgate while handling `{tool}`: {what}. This is a bug; \
                 whether the tool ran is not known, so check before retrying."
            );
            flight.stage(stage, StageStatus::Fail, None, Some(message.clone()));
            CallResult {
                call_id,
                tool,
                outcome: Err(CallError::new(ErrorCode::ExecutionFailed, stage, message)),
                verdict: None,
                additional_context: Vec::new(),
                duration_us: flight.started.elapsed().as_micros() as u64,
            }
        });
        // The answer goes back only once its record is written.
        if let Some(receipt) = flight.finish(&result) {
            flight.settled(receipt.await);
        }
        result
    }

    /// Records and returns an error for something that never became a call (a malformed
    /// JSONL line, an undecodable MCP request), so the audit log still has one record per
    /// request.
    pub fn reject(&self, call: ToolCall, error: CallError) -> CallResult {
        let mut flight = Flight::new(self, &call);
        flight.stage(
            error.stage,
            StageStatus::Fail,
            None,
            Some(error.message.clone()),
        );
        let result = CallResult {
            call_id: call.id,
            tool: call.name,
            outcome: Err(error),
            verdict: None,
            additional_context: Vec::new(),
            duration_us: flight.started.elapsed().as_micros() as u64,
        };
        if let Some(receipt) = flight.finish(&result) {
            flight.settled(receipt.wait());
        }
        result
    }

    /// Runs several calls: consecutive shared-class calls run in parallel, an exclusive call
    /// runs alone. Results come back in request order.
    pub async fn execute_batch(&self, calls: Vec<ToolCall>) -> Vec<CallResult> {
        let mut results = Vec::with_capacity(calls.len());
        let mut group: Vec<ToolCall> = Vec::new();
        for call in calls {
            if self.concurrency_of(&call.name) == Concurrency::Shared {
                group.push(call);
                continue;
            }
            if !group.is_empty() {
                let batch = std::mem::take(&mut group);
                results.extend(
                    futures::future::join_all(batch.into_iter().map(|c| self.execute(c))).await,
                );
            }
            results.push(self.execute(call).await);
        }
        if !group.is_empty() {
            results.extend(
                futures::future::join_all(group.into_iter().map(|c| self.execute(c))).await,
            );
        }
        results
    }

    /// Unknown and hidden tools fail at stage 1 without side effects, so they may join a
    /// shared group.
    fn concurrency_of(&self, name: &str) -> Concurrency {
        let view = self.view();
        match self.lookup(&view, name) {
            Lookup::Found(entry) => entry.spec().concurrency,
            _ => Concurrency::Shared,
        }
    }

    /// Looks `name` up in `view`; a deferred tool this session loaded is found.
    fn lookup<'v>(&self, view: &'v View, name: &str) -> Lookup<'v> {
        match view.lookup(name) {
            Lookup::Deferred(entry) if LoadedTools::loaded_in(&self.session, name) => {
                Lookup::Found(entry)
            }
            other => other,
        }
    }

    /// The tool definitions to send the model now, in `format`: the view's, with the
    /// deferred tools this session loaded sent in full (see [`View::definitions_for`]).
    pub fn definitions(&self, format: toolgate_protocol::wire::Format) -> Vec<Value> {
        self.view().definitions_for(format, &self.session)
    }

    fn context(
        &self,
        read_filter: Option<ReadFilter>,
        call_id: &str,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> ToolContext {
        ToolContext {
            session: Arc::clone(&self.session),
            call_id: call_id.to_owned(),
            cancel: cancel.clone(),
            timeout,
            room: None,
            read_filter,
            gate: GateHandle::new(self.clone(), call_id),
        }
    }

    /// Where stage 11 saves what it cuts: the session's output directory
    /// ([`crate::outputs`]), under `Limits::spill_dir` when set.
    fn spill_dir<'a>(&'a self, outputs: &'a crate::outputs::SessionOutputs) -> shape::Spill<'a> {
        shape::Spill {
            outputs,
            base: self.shared.limits.spill_dir.as_deref(),
        }
    }

    /// Stage 1: the tool, or the error (and, for a tool policy hid, the verdict).
    fn resolve(&self, name: &str) -> Result<Arc<Entry>, Box<(CallError, Option<Verdict>)>> {
        let view = self.view();
        match self.lookup(&view, name) {
            Lookup::Found(entry) => Ok(Arc::clone(entry)),
            Lookup::Deferred(_) => Err(Box::new((
                CallError::new(
                    ErrorCode::ToolNotLoaded,
                    Stage::Resolve,
                    format!(
                        "`{name}` is deferred: load its definition with {TOOL_SEARCH} (query \"select:{name}\") before calling it"
                    ),
                ),
                None,
            ))),
            Lookup::Hidden(hidden) => {
                let verdict = Verdict::new(Decision::Deny, hidden.layer, hidden.reason.clone());
                let err = CallError::new(ErrorCode::Denied, Stage::Resolve, hidden.reason.clone())
                    .with_layer(hidden.layer);
                Err(Box::new((err, Some(verdict))))
            }
            Lookup::Unknown(near) => {
                let mut message = format!("no tool named `{name}` in this session");
                if !near.is_empty() {
                    message.push_str(&format!("; did you mean {}?", quote_list(&near)));
                }
                message.push_str(" (tool names are case-sensitive)");
                let err = CallError::new(ErrorCode::UnknownTool, Stage::Resolve, message)
                    .with_details(json!({ "near": near }));
                Err(Box::new((err, None)))
            }
        }
    }

    /// Stages 1–4 without running or recording anything: the tool's spec, the input as
    /// hooks and policy see it, and the facts. For `toolgate check` and dry runs.
    pub fn analyze(&self, call: &ToolCall) -> Result<Analyzed, CallError> {
        let entry = self.resolve(&call.name).map_err(|failure| failure.0)?;
        let spec = entry.spec().clone();
        let timeout = Duration::from_millis(spec.timeout.clamp(None));
        let cancel = CancellationToken::new();
        let read_filter = self.shared.stages.pin().policy.read_filter();
        let ctx = self.context(read_filter, &call.id, &cancel, timeout);
        let mut scratch = Flight::record_for(&self.session, call, Value::Null);
        let (prepared, facts) = self
            .admit_input(&entry, &call.input, &ctx, &mut scratch)
            .map_err(pipeline::Stop::into_error)?;
        Ok(Analyzed {
            input: prepared.normalized.unwrap_or_else(|| call.input.clone()),
            spec,
            facts,
        })
    }
}

/// The message a panic carried (`panic!("…")` and `format!`-style payloads).
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// Stages 1–4 of a call that was not run (see [`Gate::analyze`]).
#[derive(Debug, Clone)]
pub struct Analyzed {
    /// The tool's spec.
    pub spec: ToolSpec,
    /// The input as hooks and policy see it (paths absolute).
    pub input: Value,
    /// The facts stage 4 gathered.
    pub facts: CallFacts,
}

fn quote_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(" or ")
}
