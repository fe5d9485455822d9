//! The Gate: stages 1–11 of the pipeline, written once for every tool.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::{Value, json};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use toolgate_protocol::{
    CallError, CallFacts, CallRecord, CallResult, Concurrency, Decision, ErrorCode, Layer, Stage,
    StageRecord, StageStatus, ToolCall, ToolOutput, ToolSpec, Verdict,
};

use crate::registry::{Entry, Lookup, Registry, RegistryError, View, ViewOptions};
use crate::sandbox::SandboxStage;
use crate::session::{Session, SessionOptions, Workspace};
use crate::shape;
use crate::stage_set::{LiveStages, StageSet};
use crate::stages::{
    AuditReceipt, AuditSink, ConstraintStage, DecisionRequest, HookRequest, HookStage, NoAudit,
    PolicyStage, Prompter,
};
use crate::tool::{Prepared, ToolContext, ToolError};

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

struct Shared {
    registry: Registry,
    /// The policy's stages; a reload swaps them, each call pins one set.
    stages: LiveStages,
    audit: Arc<dyn AuditSink>,
    limits: Limits,
}

/// Builds a [`Gate`].
pub struct GateBuilder {
    workspace: Option<PathBuf>,
    home: Option<Option<PathBuf>>,
    add_dirs: Vec<PathBuf>,
    registry: Option<Registry>,
    view: ViewOptions,
    session: SessionOptions,
    stages: StageSet,
    audit: Arc<dyn AuditSink>,
    limits: Limits,
}

impl Default for GateBuilder {
    fn default() -> Self {
        Self {
            workspace: None,
            home: None,
            add_dirs: Vec::new(),
            registry: None,
            view: ViewOptions::default(),
            session: SessionOptions::default(),
            stages: StageSet::default(),
            audit: Arc::new(NoAudit),
            limits: Limits::default(),
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
        let view = registry.view(&view_options)?;
        let shared = Arc::new(Shared {
            registry,
            stages: LiveStages::new(self.stages),
            audit: self.audit,
            limits: self.limits,
        });
        Ok(Gate {
            shared,
            session: Arc::new(Session::new(workspace, self.session)),
            view,
            view_options,
        })
    }
}

/// The enforcement point: every tool call goes through [`Gate::execute`].
///
/// A `Gate` is one session over a shared registry and shared stages; cloning it shares the
/// session, [`Gate::new_session`] starts another one.
#[derive(Clone)]
pub struct Gate {
    shared: Arc<Shared>,
    session: Arc<Session>,
    view: View,
    view_options: ViewOptions,
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

    /// The tools this session sees.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The whole registry.
    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    /// The policy's stages that a call starting now runs under.
    pub fn stages(&self) -> Arc<StageSet> {
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
        let view = self.shared.registry.view(&view_options)?;
        Ok(Gate {
            shared: Arc::clone(&self.shared),
            session: Arc::new(Session::new(self.session.workspace().clone(), options)),
            view,
            view_options,
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
        call: ToolCall,
        cancel: CancellationToken,
    ) -> CallResult {
        let mut flight = Flight::new(&self.shared, &self.session, &call);
        let (call_id, tool) = (call.id.clone(), call.name.clone());
        // One policy version from start to record, whatever a reload does meanwhile.
        let stages = self.shared.stages.pin();
        // A tool's own panic is caught around its run (`run_tool`); this catches one in any
        // other stage, so the caller still gets an answer and the record says what happened
        // instead of "cancelled".
        let run =
            std::panic::AssertUnwindSafe(self.run_pipeline(call, cancel, &stages, &mut flight))
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
        let mut flight = Flight::new(&self.shared, &self.session, &call);
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
        match self.view.lookup(name) {
            Lookup::Found(entry) => entry.spec().concurrency,
            _ => Concurrency::Shared,
        }
    }

    fn context(
        &self,
        stages: &StageSet,
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
            read_filter: stages.policy.read_filter(),
        }
    }

    async fn run_pipeline(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
        stages: &StageSet,
        flight: &mut Flight,
    ) -> CallResult {
        let started = flight.started;
        let finish = |outcome: Result<ToolOutput, CallError>,
                      verdict: Option<Verdict>,
                      additional_context: Vec<String>| CallResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            outcome,
            verdict,
            additional_context,
            duration_us: started.elapsed().as_micros() as u64,
        };

        // 1 resolve
        let entry = match self.resolve(&call.name) {
            Ok(entry) => entry,
            Err(failure) => {
                let (err, verdict) = *failure;
                flight.stage(
                    Stage::Resolve,
                    StageStatus::Fail,
                    verdict.clone(),
                    Some(err.message.clone()),
                );
                return finish(Err(err), verdict, Vec::new());
            }
        };
        flight.stage(Stage::Resolve, StageStatus::Pass, None, None);
        let spec = entry.spec().clone();
        let requested_timeout = call.input.get("timeout").and_then(Value::as_u64);
        let timeout = Duration::from_millis(spec.timeout.clamp(requested_timeout));
        let mut ctx = self.context(stages, &call.id, &cancel, timeout);

        // 2–4, and again after a hook rewrites the input.
        let mut input = call.input.clone();
        let (mut prepared, mut facts) =
            match self.admit_input(&entry, &input, &ctx, &mut flight.record) {
                Ok(p) => p,
                Err(err) => return finish(Err(err), None, Vec::new()),
            };

        // 5 PreToolUse hooks
        let hook_input = prepared.normalized.clone().unwrap_or_else(|| input.clone());
        let pre = stages
            .hooks
            .pre_tool_use(&HookRequest {
                spec: &spec,
                call_id: &call.id,
                input: &hook_input,
                session: &self.session,
            })
            .await;
        flight.record.hooks.extend(pre.records.iter().cloned());
        let mut context_notes = pre.additional_context.clone();
        if let Some(updated) = pre.updated_input {
            flight.stage(
                Stage::PreHooks,
                StageStatus::Pass,
                pre.verdict.clone(),
                Some("a hook replaced the input; validating it again".into()),
            );
            input = updated;
            match self.admit_input(&entry, &input, &ctx, &mut flight.record) {
                Ok((p, f)) => {
                    prepared = p;
                    facts = f;
                }
                Err(mut err) => {
                    err.message = format!(
                        "the input a PreToolUse hook substituted was rejected: {}",
                        err.message
                    );
                    return finish(Err(err), None, context_notes);
                }
            }
        } else {
            let status = if pre.records.is_empty() {
                StageStatus::Skip
            } else {
                StageStatus::Pass
            };
            flight.stage(Stage::PreHooks, status, pre.verdict.clone(), None);
        }
        flight.record.input = self
            .shared
            .audit
            .redact(prepared.normalized.as_ref().unwrap_or(&input));

        // 6 decide
        let request = DecisionRequest {
            spec: &spec,
            input: &input,
            facts: &facts,
            session: &self.session,
            hook: pre.verdict.as_ref(),
        };
        let mut verdict = decide_off_the_reactor(&facts, || stages.policy.decide(&request));
        // Which settings version decided, when the policy is versioned (reloadable).
        let policy_note = stages.version.as_ref().map(|v| format!("policy {v}"));
        if verdict.decision == Decision::Ask {
            let asked = verdict.clone();
            verdict = stages.prompter.ask(&request, &asked).await;
            if verdict.is_awaiting_input() {
                // The front door took the question to the user and will retry the call with
                // the answer (MCP `input_required`). Neither allowed nor denied: the call stops
                // here unrun, and its record says it is waiting.
                flight.record.verdict = Some(verdict.clone());
                flight.stage(
                    Stage::Decide,
                    StageStatus::Fail,
                    Some(verdict.clone()),
                    Some(join_notes(
                        "waiting for the user's answer",
                        policy_note.as_deref(),
                    )),
                );
                let err = CallError::new(
                    ErrorCode::InputRequired,
                    Stage::Decide,
                    format!(
                        "this call was not run: it waits for the user's approval ({})",
                        verdict.reason
                    ),
                )
                .with_layer(Layer::User);
                return finish(Err(err), Some(verdict), context_notes);
            }
            if verdict.decision == Decision::Ask {
                // A prompter must settle the question; an undecided answer is a no.
                verdict = Verdict::new(
                    Decision::Deny,
                    Layer::User,
                    "the approval prompt gave no answer",
                );
            }
        }
        flight.record.verdict = Some(verdict.clone());
        if verdict.decision != Decision::Allow {
            flight.stage(
                Stage::Decide,
                StageStatus::Fail,
                Some(verdict.clone()),
                policy_note,
            );
            let mut message = format!("permission denied: {}", verdict.reason);
            if let Some(rule) = &verdict.rule {
                message.push_str(&format!(" (rule `{rule}`"));
                if let Some(src) = &verdict.source {
                    message.push_str(&format!(" from {src}"));
                }
                message.push(')');
            }
            message
                .push_str(". Do not retry the same call; choose another approach or ask the user.");
            let err =
                CallError::new(ErrorCode::Denied, Stage::Decide, message).with_layer(verdict.layer);
            return finish(Err(err), Some(verdict), context_notes);
        }
        flight.stage(
            Stage::Decide,
            StageStatus::Pass,
            Some(verdict.clone()),
            policy_note,
        );

        // 7 constrain
        match stages.constraints.admit(&spec, &self.session).await {
            Ok(admitted) => flight.stage(Stage::Constrain, StageStatus::Pass, None, admitted.note),
            Err(err) => {
                flight.stage(
                    Stage::Constrain,
                    StageStatus::Fail,
                    None,
                    Some(err.message.clone()),
                );
                return finish(Err(err), Some(verdict), context_notes);
            }
        }

        // 8 sandbox
        match stages.sandbox.select(&spec, &input, &facts, &self.session) {
            Ok(room) => {
                let note = room
                    .as_ref()
                    .map_or_else(|| "unsandboxed".to_owned(), |r| r.describe());
                flight.stage(Stage::Sandbox, StageStatus::Pass, None, Some(note));
                ctx.room = room;
            }
            Err(reason) => {
                let err = CallError::new(
                    ErrorCode::SandboxUnavailable,
                    Stage::Sandbox,
                    format!("the settings require a sandbox and it cannot be set up: {reason}"),
                )
                .with_layer(Layer::Sandbox);
                flight.stage(Stage::Sandbox, StageStatus::Fail, None, Some(reason));
                return finish(Err(err), Some(verdict), context_notes);
            }
        }

        // Never run a call that cannot be audited.
        if let Err(reason) = self.shared.audit.ready() {
            let err = CallError::new(
                ErrorCode::AuditUnavailable,
                Stage::Execute,
                format!("the audit log cannot be written ({reason}); the call was not run"),
            );
            flight.stage(
                Stage::Execute,
                StageStatus::Fail,
                None,
                Some(err.message.clone()),
            );
            return finish(Err(err), Some(verdict), context_notes);
        }

        // 9 execute
        let exec_started = Instant::now();
        let outcome = run_tool(&entry, prepared, ctx.clone(), &cancel, timeout).await;
        let exec_ms = exec_started.elapsed().as_millis() as u64;
        let outcome = outcome.map_err(|e| {
            let mut err = CallError::new(e.code(), Stage::Execute, e.to_string());
            let timeout_message = |ms: u64| {
                format!(
                    "`{}` did not finish within {ms} ms and was stopped; ask for a longer timeout (max {} ms) or do less per call",
                    spec.name, spec.timeout.max_ms
                )
            };
            match e {
                ToolError::Timeout(ms) => err.message = timeout_message(ms),
                ToolError::TimeoutWithOutput { ms, output } => {
                    // The model needs what was printed before the kill to decide what next, so
                    // it goes in the message; `details` keeps it apart for programs.
                    err.message = format!(
                        "{}\n\nOutput before it was stopped:\n{output}",
                        timeout_message(ms)
                    );
                    err.details = json!({ "partial_output": output });
                }
                _ => {}
            }
            err
        });
        flight.stage(
            Stage::Execute,
            if outcome.is_ok() {
                StageStatus::Pass
            } else {
                StageStatus::Fail
            },
            None,
            outcome.as_ref().err().map(|e| e.message.clone()),
        );

        // 10 post hooks
        let post_input = flight.record.input.clone();
        let post = stages
            .hooks
            .post_tool_use(
                &HookRequest {
                    spec: &spec,
                    call_id: &call.id,
                    input: &post_input,
                    session: &self.session,
                },
                &outcome,
                exec_ms,
            )
            .await;
        flight.record.hooks.extend(post.records.iter().cloned());
        flight.stage(
            Stage::PostHooks,
            if post.records.is_empty() {
                StageStatus::Skip
            } else {
                StageStatus::Pass
            },
            None,
            None,
        );
        context_notes.extend(post.additional_context);
        let outcome = match (outcome, post.updated_output) {
            (Ok(_), Some(updated)) => Ok(updated),
            (other, _) => other,
        };

        // 11 shape
        let outputs = crate::outputs::SessionOutputs::of(&self.session);
        let outcome = outcome.map(|out| {
            let out = stages.constraints.shape(&spec, out);
            shape::cap_output(
                out,
                self.shared.limits.max_result_bytes,
                &self.spill_dir(&outputs),
                &call.id,
            )
        });
        flight.stage(Stage::Shape, StageStatus::Pass, None, None);
        finish(outcome, Some(verdict), context_notes)
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
        match self.view.lookup(name) {
            Lookup::Found(entry) => Ok(Arc::clone(entry)),
            Lookup::Deferred => Err(Box::new((
                CallError::new(
                    ErrorCode::ToolNotLoaded,
                    Stage::Resolve,
                    format!(
                        "`{name}` is deferred: load its definition with ToolSearch (query \"select:{name}\") before calling it"
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
        let ctx = self.context(&self.shared.stages.pin(), &call.id, &cancel, timeout);
        let mut scratch = Flight::record_for(&self.session, call, Value::Null);
        let (prepared, facts) = self.admit_input(&entry, &call.input, &ctx, &mut scratch)?;
        Ok(Analyzed {
            input: prepared.normalized.unwrap_or_else(|| call.input.clone()),
            spec,
            facts,
        })
    }

    /// Stages 2–4 for one input.
    fn admit_input(
        &self,
        entry: &Arc<Entry>,
        input: &Value,
        ctx: &ToolContext,
        record: &mut CallRecord,
    ) -> Result<(Prepared, CallFacts), CallError> {
        // 2 schema
        let size = serde_json::to_vec(input)
            .map(|v| v.len())
            .unwrap_or(usize::MAX);
        record.input_bytes = size as u64;
        if size > self.shared.limits.max_input_bytes {
            let err = CallError::new(
                ErrorCode::InvalidInput,
                Stage::Schema,
                format!(
                    "the input is {size} bytes, over the {} byte limit; split the work into smaller calls",
                    self.shared.limits.max_input_bytes
                ),
            );
            push_stage(
                record,
                Stage::Schema,
                StageStatus::Fail,
                None,
                Some(err.message.clone()),
            );
            return Err(err);
        }
        let violations = entry.schema_violations(input);
        if !violations.is_empty() {
            let listed: Vec<String> = violations
                .iter()
                .map(|v| {
                    let at = if v.pointer.is_empty() {
                        "the input".to_owned()
                    } else {
                        format!("`{}`", v.pointer)
                    };
                    format!("{at}: {}", v.message)
                })
                .collect();
            let err = CallError::new(
                ErrorCode::InvalidInput,
                Stage::Schema,
                format!(
                    "the input does not match the schema of `{}`: {}. Fix these fields and call again",
                    entry.spec().name,
                    listed.join("; ")
                ),
            )
            .with_details(json!({ "violations": violations }));
            push_stage(
                record,
                Stage::Schema,
                StageStatus::Fail,
                None,
                Some(err.message.clone()),
            );
            return Err(err);
        }
        push_stage(record, Stage::Schema, StageStatus::Pass, None, None);

        // 3 validate + 4 analyze
        match entry.tool().prepare(input, ctx) {
            Ok(prepared) => {
                push_stage(record, Stage::Validate, StageStatus::Pass, None, None);
                let facts = prepared.facts.clone();
                let note = facts
                    .max_risk()
                    .map(|r| format!("risk {}", json!(r).as_str().unwrap_or("")));
                push_stage(record, Stage::Analyze, StageStatus::Pass, None, note);
                Ok((prepared, facts))
            }
            Err(e) => {
                let code = match e {
                    ToolError::InvalidRequest(_) => ErrorCode::InvalidRequest,
                    ref other => other.code(),
                };
                let err = CallError::new(code, Stage::Validate, e.to_string());
                push_stage(
                    record,
                    Stage::Validate,
                    StageStatus::Fail,
                    None,
                    Some(err.message.clone()),
                );
                Err(err)
            }
        }
    }
}

async fn run_tool(
    entry: &Arc<Entry>,
    prepared: Prepared,
    ctx: ToolContext,
    cancel: &CancellationToken,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    let tool = Arc::clone(entry.tool());
    let fut =
        std::panic::AssertUnwindSafe(async move { tool.run(prepared, ctx).await }).catch_unwind();
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Cancelled),
        r = tokio::time::timeout(timeout + TIMEOUT_GRACE, fut) => match r {
            Err(_) => Err(ToolError::Timeout(timeout.as_millis() as u64)),
            Ok(Err(panic)) => {
                let what = panic_text(&*panic);
                tracing::error!(tool = %entry.spec().name, %what, "tool panicked");
                Err(ToolError::Failed(format!("internal error in `{}`: {what}", entry.spec().name)))
            }
            Ok(Ok(r)) => r,
        },
    }
}

/// The message a panic carried (`panic!("…")` and `format!`-style payloads).
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

fn push_stage(
    record: &mut CallRecord,
    stage: Stage,
    status: StageStatus,
    verdict: Option<Verdict>,
    note: Option<String>,
) {
    record.stages.push(StageRecord {
        stage,
        status,
        verdict,
        note,
    });
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

/// `first`, then `second` when there is one.
fn join_notes(first: &str, second: Option<&str>) -> String {
    match second {
        Some(s) => format!("{first}; {s}"),
        None => first.to_owned(),
    }
}

fn quote_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// A call in flight: builds its audit record as stages pass and writes it exactly once — at
/// the end, or on drop if the caller dropped the future (then as `cancelled`).
struct Flight {
    audit: Arc<dyn AuditSink>,
    record: CallRecord,
    started: Instant,
    done: bool,
}

impl Flight {
    fn new(shared: &Arc<Shared>, session: &Session, call: &ToolCall) -> Self {
        let record = Self::record_for(session, call, shared.audit.redact(&call.input));
        Self {
            audit: Arc::clone(&shared.audit),
            record,
            started: Instant::now(),
            done: false,
        }
    }

    /// A call's record before any stage ran.
    fn record_for(session: &Session, call: &ToolCall, input: Value) -> CallRecord {
        CallRecord {
            kind: "call".into(),
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            session_id: session.id().to_owned(),
            call_id: call.id.clone(),
            client: session.client().map(str::to_owned),
            tool: call.name.clone(),
            input,
            stages: Vec::new(),
            hooks: Vec::new(),
            verdict: None,
            status: "error".into(),
            code: Some(ErrorCode::Cancelled),
            duration_us: 0,
            input_bytes: 0,
            output_bytes: 0,
        }
    }

    fn stage(
        &mut self,
        stage: Stage,
        status: StageStatus,
        verdict: Option<Verdict>,
        note: Option<String>,
    ) {
        push_stage(&mut self.record, stage, status, verdict, note);
    }

    /// Completes the record and hands it to the sink (once); the caller waits for the
    /// receipt before answering.
    fn finish(&mut self, result: &CallResult) -> Option<AuditReceipt> {
        self.record.status = if result.is_error() { "error" } else { "ok" }.into();
        self.record.code = result.error().map(|e| e.code);
        self.record.output_bytes = result.output().map_or(0, ToolOutput::size_bytes);
        self.submit()
    }

    fn submit(&mut self) -> Option<AuditReceipt> {
        if self.done {
            return None;
        }
        self.done = true;
        self.record.duration_us = self.started.elapsed().as_micros() as u64;
        Some(self.audit.record(&self.record))
    }

    fn settled(&self, written: Result<(), String>) {
        if let Err(e) = written {
            tracing::error!(error = %e, call_id = %self.record.call_id, "audit record could not be written");
        }
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        if !self.done {
            self.record.status = "error".into();
            self.record.code = Some(ErrorCode::Cancelled);
            self.stage(
                Stage::Execute,
                StageStatus::Fail,
                None,
                Some("the caller dropped the call".into()),
            );
            // Nothing can be awaited here; the receipt's blocking wait never needs this
            // thread's runtime (see `PendingRecord`).
            if let Some(receipt) = self.submit() {
                self.settled(receipt.wait());
            }
        }
    }
}

/// Runs a policy decision. One that walks the trees below a command's directories (path
/// rules against `grep -r KEY .`) can take tens of milliseconds; on a multi-threaded
/// runtime the worker hands its other tasks over meanwhile, so one session's `grep -r`
/// does not stall the others'. Everything else stays inline: the decision is microseconds.
fn decide_off_the_reactor<T>(facts: &CallFacts, decide: impl FnOnce() -> T) -> T {
    let walks = facts.paths.iter().any(|p| !p.beneath.is_nothing());
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if walks && multi_thread {
        tokio::task::block_in_place(decide)
    } else {
        decide()
    }
}
