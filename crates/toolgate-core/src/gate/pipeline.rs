//! Stages 1–11 of one call, one method per stage. A stage that stops the call returns a
//! [`Stop`]; [`Gate::run_pipeline`] is the one place that records the failed stage and
//! turns it into the call's error.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_protocol::{
    CallError, CallFacts, CallRecord, CallResult, Decision, ErrorCode, Layer, Stage, StageStatus,
    ToolCall, ToolOutput, ToolSpec, Verdict,
};

use super::flight::{Flight, push_stage};
use super::{Gate, TIMEOUT_GRACE, panic_text};
use crate::registry::Entry;
use crate::sandbox::{Room, SandboxRequest};
use crate::stages::{DecisionRequest, HookRequest};
use crate::tool::{Prepared, ToolContext, ToolError};

/// Why a call stopped before it ran: the error for the caller and what the failed stage's
/// record says. Boxed: it travels through every stage's `Result`.
pub(super) struct Stop(Box<Stopped>);

pub(super) struct Stopped {
    stage: Stage,
    pub(super) error: CallError,
    /// The verdict on the stage record and the result (a hidden tool's, a denial's).
    verdict: Option<Verdict>,
    /// The stage record's note; by default the error message.
    note: Option<String>,
}

impl Stop {
    pub(super) fn new(stage: Stage, error: CallError) -> Self {
        Self(Box::new(Stopped {
            stage,
            note: Some(error.message.clone()),
            error,
            verdict: None,
        }))
    }

    fn with_verdict(mut self, verdict: Option<Verdict>) -> Self {
        self.0.verdict = verdict;
        self
    }

    fn with_note(mut self, note: Option<String>) -> Self {
        self.0.note = note;
        self
    }

    /// The error for the caller.
    pub(super) fn into_error(self) -> CallError {
        self.0.error
    }
}

/// What stages 2–5 made of a call's input.
struct Admitted {
    /// The input as decided on and run (a PreToolUse hook may have replaced it).
    input: Value,
    prepared: Prepared,
    facts: CallFacts,
    /// What the PreToolUse hooks decided, for the policy stage.
    hook_verdict: Option<Verdict>,
}

impl Gate {
    /// Runs the stages and records the one that stopped the call, if one did.
    pub(super) async fn run_pipeline(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
        flight: &mut Flight,
    ) -> CallResult {
        let mut notes = Vec::new();
        let (outcome, verdict) = match self.stages(&call, &cancel, flight, &mut notes).await {
            Ok(outcome) => (outcome, flight.record.verdict.clone()),
            Err(Stop(stop)) => {
                let Stopped {
                    stage,
                    error,
                    verdict,
                    note,
                } = *stop;
                flight.stage(stage, StageStatus::Fail, verdict.clone(), note);
                let verdict = verdict.or_else(|| flight.record.verdict.clone());
                (Err(error), verdict)
            }
        };
        CallResult {
            call_id: call.id,
            tool: call.name,
            outcome,
            verdict,
            additional_context: notes,
            duration_us: flight.started.elapsed().as_micros() as u64,
        }
    }

    async fn stages(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
        flight: &mut Flight,
        notes: &mut Vec<String>,
    ) -> Result<Result<ToolOutput, CallError>, Stop> {
        // 1 resolve
        let entry = self.resolve(&call.name).map_err(|failure| {
            let (error, verdict) = *failure;
            Stop::new(Stage::Resolve, error).with_verdict(verdict)
        })?;
        flight.stage(Stage::Resolve, StageStatus::Pass, None, None);
        let spec = entry.spec().clone();
        let default_timeout = Duration::from_millis(spec.timeout.clamp(None));
        let read_filter = flight.stages.policy.read_filter();
        let mut ctx = self.context(read_filter, &call.id, cancel, default_timeout);
        // 2–5
        let Admitted {
            input,
            prepared,
            facts,
            hook_verdict,
        } = self
            .admit_with_hooks(&entry, call, &ctx, flight, notes)
            .await?;
        // 6
        self.decide(&spec, &input, &facts, hook_verdict.as_ref(), flight)
            .await?;
        // 7
        self.constrain(&spec, flight).await?;
        // 8
        ctx.room = self.select_room(&spec, &prepared, &facts, flight)?;
        // Never run a call that cannot be audited.
        self.audit_ready()?;
        // 9
        ctx.timeout = Duration::from_millis(spec.timeout.clamp(prepared.run.timeout_ms));
        let (outcome, exec_ms) = self
            .execute_tool(&entry, prepared, ctx, cancel, flight)
            .await;
        // 10
        let outcome = self
            .post_hooks(&spec, &call.id, outcome, exec_ms, flight, notes)
            .await;
        // 11
        Ok(self.shape(&spec, &call.id, outcome, flight))
    }

    /// Stages 2–4, then 5 (PreToolUse hooks), and 2–4 again for an input a hook replaced.
    async fn admit_with_hooks(
        &self,
        entry: &Arc<Entry>,
        call: &ToolCall,
        ctx: &ToolContext,
        flight: &mut Flight,
        notes: &mut Vec<String>,
    ) -> Result<Admitted, Stop> {
        let spec = entry.spec();
        let mut input = call.input.clone();
        let (mut prepared, mut facts) = self.admit_input(entry, &input, ctx, &mut flight.record)?;
        let hook_input = prepared.normalized.clone().unwrap_or_else(|| input.clone());
        let pre = Arc::clone(&flight.stages.hooks)
            .pre_tool_use(&HookRequest {
                spec,
                call_id: &call.id,
                input: &hook_input,
                session: &self.session,
            })
            .await;
        flight.record.hooks.extend(pre.records.iter().cloned());
        notes.extend(pre.additional_context.iter().cloned());
        if let Some(updated) = pre.updated_input {
            flight.stage(
                Stage::PreHooks,
                StageStatus::Pass,
                pre.verdict.clone(),
                Some("a hook replaced the input; validating it again".into()),
            );
            input = updated;
            (prepared, facts) = self
                .admit_input(entry, &input, ctx, &mut flight.record)
                .map_err(|mut stop| {
                    let error = &mut stop.0.error;
                    error.message = format!(
                        "the input a PreToolUse hook substituted was rejected: {}",
                        error.message
                    );
                    stop
                })?;
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
        Ok(Admitted {
            input,
            prepared,
            facts,
            hook_verdict: pre.verdict,
        })
    }

    /// Stages 2 (size and schema), 3 (validate) and 4 (analyze). Passed stages are recorded
    /// in `record`; a failed one is the caller's to record.
    pub(super) fn admit_input(
        &self,
        entry: &Arc<Entry>,
        input: &Value,
        ctx: &ToolContext,
        record: &mut CallRecord,
    ) -> Result<(Prepared, CallFacts), Stop> {
        // 2 schema
        let size = serde_json::to_vec(input)
            .map(|v| v.len())
            .unwrap_or(usize::MAX);
        record.input_bytes = size as u64;
        if size > self.shared.limits.max_input_bytes {
            let error = CallError::new(
                ErrorCode::InvalidInput,
                Stage::Schema,
                format!(
                    "the input is {size} bytes, over the {} byte limit; split the work into smaller calls",
                    self.shared.limits.max_input_bytes
                ),
            );
            return Err(Stop::new(Stage::Schema, error));
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
            let error = CallError::new(
                ErrorCode::InvalidInput,
                Stage::Schema,
                format!(
                    "the input does not match the schema of `{}`: {}. Fix these fields and call again",
                    entry.spec().name,
                    listed.join("; ")
                ),
            )
            .with_details(json!({ "violations": violations }));
            return Err(Stop::new(Stage::Schema, error));
        }
        push_stage(record, Stage::Schema, StageStatus::Pass, None, None);

        // 3 validate + 4 analyze
        let prepared = entry.tool().prepare(input, ctx).map_err(|e| {
            let mut error = CallError::new(e.code(), Stage::Validate, e.to_string());
            error.layer = e.layer();
            Stop::new(Stage::Validate, error)
        })?;
        push_stage(record, Stage::Validate, StageStatus::Pass, None, None);
        let facts = prepared.facts.clone();
        let note = facts
            .max_risk()
            .map(|r| format!("risk {}", json!(r).as_str().unwrap_or("")));
        // A summary at debug level (`-vv`): what was understood, not the syntax tree.
        tracing::debug!(
            tool = %entry.spec().name,
            commands = facts.commands.len(),
            paths = facts.paths.len(),
            urls = facts.urls.len(),
            findings = facts.findings.len(),
            opaque = facts.opaque,
            risk = note.as_deref().unwrap_or("none"),
            "analyzed"
        );
        push_stage(record, Stage::Analyze, StageStatus::Pass, None, note);
        Ok((prepared, facts))
    }

    /// Stage 6: the policy's verdict, and the user's answer to an ask.
    async fn decide(
        &self,
        spec: &ToolSpec,
        input: &Value,
        facts: &CallFacts,
        hook: Option<&Verdict>,
        flight: &mut Flight,
    ) -> Result<(), Stop> {
        let request = DecisionRequest {
            spec,
            input,
            facts,
            session: &self.session,
            hook,
        };
        let stages = Arc::clone(&flight.stages);
        let mut verdict = decide_off_the_reactor(facts, || stages.policy.decide(&request));
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
                let error = CallError::new(
                    ErrorCode::InputRequired,
                    Stage::Decide,
                    format!(
                        "this call was not run: it waits for the user's approval ({})",
                        verdict.reason
                    ),
                )
                .with_layer(Layer::User);
                return Err(Stop::new(Stage::Decide, error)
                    .with_verdict(Some(verdict))
                    .with_note(Some(join_notes(
                        "waiting for the user's answer",
                        policy_note.as_deref(),
                    ))));
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
            let error = CallError::new(ErrorCode::Denied, Stage::Decide, denial_message(&verdict))
                .with_layer(verdict.layer);
            return Err(Stop::new(Stage::Decide, error)
                .with_verdict(Some(verdict))
                .with_note(policy_note));
        }
        flight.stage(Stage::Decide, StageStatus::Pass, Some(verdict), policy_note);
        Ok(())
    }

    /// Stage 7: rate limits and other constraints.
    async fn constrain(&self, spec: &ToolSpec, flight: &mut Flight) -> Result<(), Stop> {
        let admitted = Arc::clone(&flight.stages.constraints)
            .admit(spec, &self.session)
            .await
            .map_err(|error| Stop::new(Stage::Constrain, error))?;
        flight.stage(Stage::Constrain, StageStatus::Pass, None, admitted.note);
        Ok(())
    }

    /// Stage 8: the room the call's processes run in, if any.
    fn select_room(
        &self,
        spec: &ToolSpec,
        prepared: &Prepared,
        facts: &CallFacts,
        flight: &mut Flight,
    ) -> Result<Option<Arc<dyn Room>>, Stop> {
        let request = SandboxRequest {
            spec,
            facts,
            session: &self.session,
            outside_sandbox: prepared.run.outside_sandbox,
        };
        match flight.stages.sandbox.select(&request) {
            Ok(room) => {
                let note = room
                    .as_ref()
                    .map_or_else(|| "unsandboxed".to_owned(), |r| r.describe());
                flight.stage(Stage::Sandbox, StageStatus::Pass, None, Some(note));
                Ok(room)
            }
            Err(refusal) => {
                let error = CallError::new(
                    ErrorCode::SandboxUnavailable,
                    Stage::Sandbox,
                    format!("the settings require a sandbox and it cannot be set up: {refusal}"),
                )
                .with_layer(Layer::Sandbox);
                Err(Stop::new(Stage::Sandbox, error).with_note(Some(refusal.reason)))
            }
        }
    }

    /// Refuses to run a call whose record cannot be written.
    fn audit_ready(&self) -> Result<(), Stop> {
        self.shared.audit.ready().map_err(|failure| {
            Stop::new(
                Stage::Execute,
                CallError::new(
                    ErrorCode::AuditUnavailable,
                    Stage::Execute,
                    format!("the audit log cannot be written ({failure}); the call was not run"),
                ),
            )
        })
    }

    /// Stage 9: runs the tool within its timeout; also how long it took, for the hooks.
    async fn execute_tool(
        &self,
        entry: &Arc<Entry>,
        prepared: Prepared,
        ctx: ToolContext,
        cancel: &CancellationToken,
        flight: &mut Flight,
    ) -> (Result<ToolOutput, CallError>, u64) {
        let started = Instant::now();
        let mode_before = self.session.mode();
        let outcome = run_tool(entry, prepared, ctx, cancel).await;
        flight.record.mode_change = crate::delegate::mode_change(mode_before, &self.session);
        let exec_ms = started.elapsed().as_millis() as u64;
        let outcome = outcome.map_err(|e| tool_error(entry.spec(), e));
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
        (outcome, exec_ms)
    }

    /// Stage 10: PostToolUse hooks, which may add context or replace the output.
    async fn post_hooks(
        &self,
        spec: &ToolSpec,
        call_id: &str,
        outcome: Result<ToolOutput, CallError>,
        exec_ms: u64,
        flight: &mut Flight,
        notes: &mut Vec<String>,
    ) -> Result<ToolOutput, CallError> {
        let post_input = flight.record.input.clone();
        let post = Arc::clone(&flight.stages.hooks)
            .post_tool_use(
                &HookRequest {
                    spec,
                    call_id,
                    input: &post_input,
                    session: &self.session,
                },
                &outcome,
                exec_ms,
            )
            .await;
        flight.record.hooks.extend(post.records.iter().cloned());
        let status = if post.records.is_empty() {
            StageStatus::Skip
        } else {
            StageStatus::Pass
        };
        flight.stage(Stage::PostHooks, status, None, None);
        notes.extend(post.additional_context);
        match (outcome, post.updated_output) {
            (Ok(_), Some(updated)) => Ok(updated),
            (other, _) => other,
        }
    }

    /// Stage 11: the constraints' shaping, then the size cap (the rest saved to a file).
    fn shape(
        &self,
        spec: &ToolSpec,
        call_id: &str,
        outcome: Result<ToolOutput, CallError>,
        flight: &mut Flight,
    ) -> Result<ToolOutput, CallError> {
        let outputs = crate::outputs::SessionOutputs::of(&self.session);
        let outcome = outcome.map(|out| {
            let out = flight.stages.constraints.shape(spec, out);
            crate::shape::cap_output(
                out,
                self.shared.limits.max_result_bytes,
                &self.spill_dir(&outputs),
                call_id,
            )
        });
        flight.stage(Stage::Shape, StageStatus::Pass, None, None);
        outcome
    }
}

/// `first`, then `second` when there is one.
fn join_notes(first: &str, second: Option<&str>) -> String {
    match second {
        Some(s) => format!("{first}; {s}"),
        None => first.to_owned(),
    }
}

/// The message a denied call gets: the reason, the rule and its source, and what to do —
/// each once. A reason that already names its rule (`denied by the rule …`) or already says
/// not to retry is not repeated: the model reads every word.
fn denial_message(verdict: &Verdict) -> String {
    let reason = verdict.reason.trim_end_matches('.');
    let mut message = format!("permission denied: {reason}");
    if let Some(rule) = verdict
        .rule
        .as_ref()
        .filter(|r| !reason.contains(&format!("`{r}`")))
    {
        message.push_str(&format!(" (rule `{rule}`"));
        if let Some(src) = &verdict.source {
            message.push_str(&format!(" from {src}"));
        }
        message.push(')');
    }
    let lower = reason.to_ascii_lowercase();
    if lower.contains("do not retry") || lower.contains("do something else") {
        message.push('.');
    } else {
        message.push_str(". Do not retry the same call; choose another approach or ask the user.");
    }
    message
}

/// A tool's failure as the call's error; a timeout says what to do about it and keeps the
/// output printed before the kill.
fn tool_error(spec: &ToolSpec, e: ToolError) -> CallError {
    let mut err = CallError::new(e.code(), Stage::Execute, e.to_string());
    err.layer = e.layer();
    let timeout_message = |ms: u64| {
        format!(
            "`{}` did not finish within {ms} ms and was stopped; ask for a longer timeout (max {} ms) or do less per call",
            spec.name, spec.timeout.max_ms
        )
    };
    match e {
        ToolError::Timeout(ms) => err.message = timeout_message(ms),
        ToolError::TimeoutWithOutput { ms, output } => {
            // The model needs what was printed before the kill to decide what next, so it
            // goes in the message; `details` keeps it apart for programs.
            err.message = format!(
                "{}\n\nOutput before it was stopped:\n{output}",
                timeout_message(ms)
            );
            err.details = json!({ "partial_output": output });
        }
        _ => {}
    }
    err
}

/// Runs the tool; cancellation and the timeout (plus [`TIMEOUT_GRACE`]) stop it, and a panic
/// in it is a failed call, not a crashed gate.
async fn run_tool(
    entry: &Arc<Entry>,
    prepared: Prepared,
    ctx: ToolContext,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let timeout = ctx.timeout;
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
