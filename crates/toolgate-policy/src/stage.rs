//! The permission engine behind the gate's seams: [`EnginePolicy`] is stage 6,
//! [`EnginePrompter`] answers its asks, [`EngineConstraints`] is stage 7 and shapes outputs.
//! The traits are `toolgate-core`'s; this crate implements them, as every capability crate
//! implements its own seam.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use toolgate_core::Session;
use toolgate_core::asking::{QuestionAnswer, QuestionForm, SampleError, SampleRequest, Unanswered};
use toolgate_core::stages::{
    Admitted, ConstraintStage, DecisionRequest, PolicyStage, Prompter, ReadFilter,
};
use toolgate_protocol::{Access, CallError, ToolOutput, ToolSpec, Verdict};

use crate::rate::RateScopes;
use crate::{Constraints, Engine, PolicyPrompter, PolicyRequest};

/// The engine's view of a gate decision request; `cwd` and `roots` are the session's.
fn policy_request<'a>(
    request: &'a DecisionRequest<'a>,
    cwd: &'a Path,
    roots: &'a [&'a Path],
) -> PolicyRequest<'a> {
    PolicyRequest {
        tool: &request.spec.name,
        subject: &request.spec.subject,
        annotations: request.spec.annotations,
        input: request.input,
        facts: request.facts,
        mode: request.session.mode(),
        hook: request.hook,
        cwd,
        roots,
    }
}

/// Stage 6 by the permission engine: hook verdict, deny, ask, mode, allow, risk floor.
#[derive(Clone)]
pub struct EnginePolicy(pub Arc<Engine>);

impl PolicyStage for EnginePolicy {
    fn decide(&self, request: &DecisionRequest<'_>) -> Verdict {
        let cwd = request.session.cwd();
        let roots: Vec<&Path> = request.session.workspace().roots().collect();
        self.0
            .decide(&policy_request(request, &cwd, &roots))
            .verdict
    }

    fn read_filter(&self) -> Option<ReadFilter> {
        if !self.0.limits_reads_by_path() {
            return None;
        }
        let engine = Arc::clone(&self.0);
        Some(Arc::new(move |path: &Path| {
            engine
                .path_rule(path, Access::Read)
                .map(|(_, rule, _)| rule)
        }))
    }
}

/// One of the engine's prompters (terminal, JSON lines, auto-mode reviewer, deny-all)
/// answering the gate's asks.
pub struct EnginePrompter(pub Arc<dyn PolicyPrompter>);

#[async_trait]
impl Prompter for EnginePrompter {
    async fn ask(&self, request: &DecisionRequest<'_>, verdict: &Verdict) -> Verdict {
        let cwd = request.session.cwd();
        let roots: Vec<&Path> = request.session.workspace().roots().collect();
        self.0
            .ask(&policy_request(request, &cwd, &roots), verdict)
            .await
    }

    async fn ask_user(&self, form: &QuestionForm) -> Result<Vec<QuestionAnswer>, Unanswered> {
        self.0.ask_user(form).await
    }

    async fn sample(&self, request: &SampleRequest) -> Result<serde_json::Value, SampleError> {
        self.0.sample(request).await
    }
}

/// Stage 7 and output shaping by the settings' constraints; `scope` is the client name
/// for sessions that have none (the profile, or `cli`).
pub struct EngineConstraints {
    /// The compiled constraints.
    pub constraints: Arc<Constraints>,
    /// The client name of sessions whose front door gave none.
    pub scope: String,
}

#[async_trait]
impl ConstraintStage for EngineConstraints {
    async fn admit(&self, spec: &ToolSpec, session: &Session) -> Result<Admitted, CallError> {
        let scopes = RateScopes {
            session: session.id(),
            client: session.client().unwrap_or(&self.scope),
        };
        let note = self.constraints.admit(&spec.name, &scopes).await?;
        Ok(Admitted { note })
    }

    fn shape(&self, spec: &ToolSpec, output: ToolOutput) -> ToolOutput {
        self.constraints.shape(&spec.name, output)
    }
}
