//! The pluggable stages of the pipeline: policy (6), prompts, hooks (5 and 10),
//! constraints (7) and the audit sink. Each has a default that the gate uses until the
//! capability is configured; the seams are real, so tests plug doubles into them.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use serde_json::Value;
use toolgate_protocol::{
    CallError, CallFacts, CallRecord, Decision, HookRecord, Layer, ToolOutput, ToolSpec, Verdict,
};

use crate::asking::{QuestionAnswer, QuestionForm, SampleError, SampleRequest, Unanswered};
use crate::session::Session;

/// What the policy stage sees.
#[derive(Debug)]
pub struct DecisionRequest<'a> {
    /// The tool's spec.
    pub spec: &'a ToolSpec,
    /// The (possibly hook-updated) input.
    pub input: &'a Value,
    /// Stage 4's facts.
    pub facts: &'a CallFacts,
    /// The session (mode, roots).
    pub session: &'a Session,
    /// The aggregated PreToolUse hook verdict, if a hook decided.
    pub hook: Option<&'a Verdict>,
}

/// Which files a tool that walks directories (Grep, Glob) must leave out: `Some(rule)` when
/// a deny or ask rule covers reading the path.
pub type ReadFilter = Arc<dyn Fn(&Path) -> Option<String> + Send + Sync>;

/// Stage 6: the permission decision.
pub trait PolicyStage: Send + Sync {
    /// Decides allow, ask or deny, naming the layer and rule.
    fn decide(&self, request: &DecisionRequest<'_>) -> Verdict;

    /// The files a directory walker must skip, or `None` when no rule limits reading by
    /// path. The decision allowed the walk as a whole (`Grep` of `.`); a denied file inside
    /// it must still not be read.
    fn read_filter(&self) -> Option<ReadFilter> {
        None
    }
}

/// Allows everything a hook did not deny. The default until a permission policy is
/// configured; it exists so the pipeline is complete, not as a recommendation.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

impl PolicyStage for AllowAll {
    fn decide(&self, request: &DecisionRequest<'_>) -> Verdict {
        match request.hook {
            Some(v) if v.decision == Decision::Deny => v.clone(),
            _ => Verdict::new(
                Decision::Allow,
                Layer::Default,
                "no permission policy configured",
            ),
        }
    }
}

/// The default policy until one is configured: every call is refused, naming what is
/// missing. The permission engine, with its risk floor, lives in `toolgate-policy` and is
/// wired by `toolgate-setup`; a gate that runs tools with no decision at all would be the
/// open door this crate exists to close. Tests and examples that want every call run say so
/// with [`AllowAll`].
#[derive(Debug, Default, Clone, Copy)]
pub struct NoPolicy;

/// What [`NoPolicy`] answers.
pub const NO_POLICY_REASON: &str = "no permission policy is configured for this gate; build it with toolgate-setup (or plug a PolicyStage into Gate::builder().policy(..))";

impl PolicyStage for NoPolicy {
    fn decide(&self, _request: &DecisionRequest<'_>) -> Verdict {
        Verdict::new(Decision::Deny, Layer::Default, NO_POLICY_REASON)
    }
}

/// Answers an `ask` verdict: a terminal, a UI over JSON lines, an MCP elicitation, or a
/// fixed answer.
#[async_trait]
pub trait Prompter: Send + Sync {
    /// Returns the user's verdict (layer `user`): allow or deny. A front door that collects
    /// the answer out of band — the call ends now and comes back with the answer, as MCP's
    /// `input_required` does — returns [`Verdict::awaiting_input`]; the gate then stops the
    /// call unrun with [`ErrorCode::InputRequired`](toolgate_protocol::ErrorCode). Any other
    /// undecided (`ask`) answer is taken as a denial.
    async fn ask(&self, request: &DecisionRequest<'_>, verdict: &Verdict) -> Verdict;

    /// Puts questions to the user ([`crate::asking`]): AskUserQuestion, plan approval. One
    /// answer per question, in order. Default: nobody can be asked.
    async fn ask_user(&self, _form: &QuestionForm) -> Result<Vec<QuestionAnswer>, Unanswered> {
        Err(Unanswered::NoUser(
            "this front door has no way to ask".into(),
        ))
    }

    /// Has the front door's client run one model turn (MCP sampling), for a sub-agent.
    /// Default: not offered.
    async fn sample(&self, _request: &SampleRequest) -> Result<Value, SampleError> {
        Err(SampleError::Unsupported)
    }
}

/// Denies every ask: the right answer with nobody to ask (CI, `dontAsk`, pipes).
#[derive(Debug, Default, Clone, Copy)]
pub struct DenyPrompter;

#[async_trait]
impl Prompter for DenyPrompter {
    async fn ask(&self, _request: &DecisionRequest<'_>, verdict: &Verdict) -> Verdict {
        let mut v = Verdict::new(
            Decision::Deny,
            Layer::User,
            format!(
                "this call needs approval ({}) and no one can be asked in this session; ask the user to allow it in the settings",
                verdict.reason
            ),
        );
        v.rule = verdict.rule.clone();
        v.source = verdict.source.clone();
        v
    }
}

/// The input and facts hooks see.
#[derive(Debug)]
pub struct HookRequest<'a> {
    /// The tool's spec.
    pub spec: &'a ToolSpec,
    /// The caller's id for the call.
    pub call_id: &'a str,
    /// The input with normalised (absolute) paths.
    pub input: &'a Value,
    /// The session.
    pub session: &'a Session,
}

/// What the PreToolUse hooks said, aggregated.
#[derive(Debug, Default, Clone)]
pub struct PreHookOutcome {
    /// A decision, if any hook made one (deny > ask > allow).
    pub verdict: Option<Verdict>,
    /// A replacement input; the gate validates it again from stage 2.
    pub updated_input: Option<Value>,
    /// Context for the model.
    pub additional_context: Vec<String>,
    /// One record per handler, for the audit log.
    pub records: Vec<HookRecord>,
}

/// What the PostToolUse / PostToolUseFailure hooks said.
#[derive(Debug, Default, Clone)]
pub struct PostHookOutcome {
    /// A replacement output (already checked against the tool's output shape).
    pub updated_output: Option<ToolOutput>,
    /// Context for the model (including a `decision: block` reason).
    pub additional_context: Vec<String>,
    /// One record per handler.
    pub records: Vec<HookRecord>,
}

/// Stages 5 and 10: lifecycle hooks around a tool call.
#[async_trait]
pub trait HookStage: Send + Sync {
    /// PreToolUse.
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> PreHookOutcome;

    /// PostToolUse (on success) or PostToolUseFailure (on error).
    async fn post_tool_use(
        &self,
        request: &HookRequest<'_>,
        result: &Result<ToolOutput, CallError>,
        duration_ms: u64,
    ) -> PostHookOutcome;
}

/// No hooks configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoHooks;

#[async_trait]
impl HookStage for NoHooks {
    async fn pre_tool_use(&self, _request: &HookRequest<'_>) -> PreHookOutcome {
        PreHookOutcome::default()
    }

    async fn post_tool_use(
        &self,
        _request: &HookRequest<'_>,
        _result: &Result<ToolOutput, CallError>,
        _duration_ms: u64,
    ) -> PostHookOutcome {
        PostHookOutcome::default()
    }
}

/// Stage 7 (before running) and part of stage 11 (after): rate limits, size caps, masking.
#[async_trait]
pub trait ConstraintStage: Send + Sync {
    /// Refuses a call over a limit (`rate_limited` or `denied`). Async because a limit may
    /// be counted in a store shared by several processes.
    async fn admit(&self, spec: &ToolSpec, session: &Session) -> Result<Admitted, CallError>;

    /// Adjusts a successful output (caps, masking).
    fn shape(&self, _spec: &ToolSpec, output: ToolOutput) -> ToolOutput {
        output
    }
}

/// A call that passed stage 7.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admitted {
    /// Something the audit record must say about how it was admitted: a degradation, such
    /// as a shared rate-limit store that could not be reached and the fallback taken.
    pub note: Option<String>,
}

/// No constraints configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoConstraints;

#[async_trait]
impl ConstraintStage for NoConstraints {
    async fn admit(&self, _spec: &ToolSpec, _session: &Session) -> Result<Admitted, CallError> {
        Ok(Admitted::default())
    }
}

/// Why an audit sink cannot take a record now, or could not write one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct AuditFailure {
    /// What went wrong (the log's I/O error, an earlier failed write), for the refusal the
    /// model sees and the operator's log.
    pub reason: String,
}

impl AuditFailure {
    /// A failure with its reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

/// Where audit records go. The gate refuses to run a call when the sink is not ready, so a
/// call is never run unaudited, and it returns a call's result only once the sink's
/// [`AuditReceipt`] for its record has resolved.
pub trait AuditSink: Send + Sync {
    /// Whether a record can be written now; the error says why not.
    fn ready(&self) -> Result<(), AuditFailure>;

    /// Hands one record to the sink. The receipt resolves once the record is written as the
    /// sink promises (a file sink: under its fsync policy), or could not be. Dropping the
    /// receipt does not withdraw the record.
    fn record(&self, record: &CallRecord) -> AuditReceipt;

    /// Redacts secrets from an input before it is recorded.
    fn redact(&self, input: &Value) -> Value {
        input.clone()
    }
}

/// A record that a sink has accepted and not yet written (see [`AuditReceipt::pending`]).
///
/// It must resolve without help from the async runtime of whoever waits: the gate also
/// waits for it synchronously ([`PendingRecord::wait`]) where it cannot await (a call
/// dropped mid-flight, [`Gate::reject`](crate::Gate::reject)), possibly on that runtime's
/// only thread. Complete it from the sink's own thread or runtime, or write in `wait`.
pub trait PendingRecord: Future<Output = Result<(), AuditFailure>> + Send + Unpin {
    /// Blocks the calling thread until the record is written (or could not be).
    fn wait(self: Box<Self>) -> Result<(), AuditFailure>;
}

/// What [`AuditSink::record`] returns: a future that resolves once the record is written.
#[must_use = "a receipt resolves when the record is written"]
pub struct AuditReceipt(Receipt);

enum Receipt {
    Done(Option<Result<(), AuditFailure>>),
    Pending(Box<dyn PendingRecord>),
}

impl std::fmt::Debug for AuditReceipt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Receipt::Done(r) => f.debug_tuple("AuditReceipt::Done").field(r).finish(),
            Receipt::Pending(_) => f.write_str("AuditReceipt::Pending"),
        }
    }
}

impl AuditReceipt {
    /// A record already written (or refused).
    pub fn done(result: Result<(), AuditFailure>) -> Self {
        Self(Receipt::Done(Some(result)))
    }

    /// A record still being written.
    pub fn pending(record: impl PendingRecord + 'static) -> Self {
        Self(Receipt::Pending(Box::new(record)))
    }

    /// Blocks the calling thread until the record is written (see [`PendingRecord`]).
    pub fn wait(self) -> Result<(), AuditFailure> {
        match self.0 {
            Receipt::Done(r) => r.unwrap_or(Ok(())),
            Receipt::Pending(p) => p.wait(),
        }
    }
}

impl Future for AuditReceipt {
    type Output = Result<(), AuditFailure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.0 {
            Receipt::Done(r) => Poll::Ready(r.take().unwrap_or(Ok(()))),
            Receipt::Pending(p) => Pin::new(p.as_mut()).poll(cx),
        }
    }
}

/// Drops records. For embedders that audit elsewhere and for benchmarks.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoAudit;

impl AuditSink for NoAudit {
    fn ready(&self) -> Result<(), AuditFailure> {
        Ok(())
    }

    fn record(&self, _record: &CallRecord) -> AuditReceipt {
        AuditReceipt::done(Ok(()))
    }
}
