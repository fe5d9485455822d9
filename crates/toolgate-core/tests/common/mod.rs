//! Test doubles for the gate's tools and stages.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_core::stages::{
    Admitted, AuditReceipt, AuditSink, ConstraintStage, DecisionRequest, HookRequest, HookStage,
    PolicyStage, PostHookOutcome, PreHookOutcome, Prompter,
};
use toolgate_core::{Registry, ToolContext, ToolError, TypedTool};
use toolgate_protocol::*;

/// Start and end instants of each run, by tool name.
pub type Timeline = Arc<Mutex<Vec<(String, Instant, Instant)>>>;

/// A configurable tool.
pub struct Probe {
    pub spec: ToolSpec,
    pub timeline: Timeline,
}

#[derive(Deserialize)]
pub struct ProbeInput {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub sleep_ms: u64,
    #[serde(default)]
    pub fail: bool,
    #[serde(default)]
    pub panic: bool,
    #[serde(default)]
    pub reject: bool,
    #[serde(default)]
    pub repeat: usize,
    #[serde(default)]
    pub timeout: Option<u64>,
    /// The tool keeps its `timeout` to itself (does not ask the gate for it).
    #[serde(default)]
    pub private_timeout: bool,
}

pub fn spec(name: &str, read_only: bool) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        version: "1".into(),
        description: format!("{name}: a test tool.\nSecond line."),
        input_schema: json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "sleep_ms": {"type": "integer", "minimum": 0},
                "fail": {"type": "boolean"},
                "panic": {"type": "boolean"},
                "reject": {"type": "boolean"},
                "repeat": {"type": "integer", "minimum": 0},
                "timeout": {"type": "integer", "minimum": 1},
                "private_timeout": {"type": "boolean"},
                "api_key": {"type": "string"}
            },
            "additionalProperties": false
        }),
        output_schema: None,
        annotations: ToolAnnotations {
            read_only,
            destructive: !read_only,
            idempotent: read_only,
            open_world: false,
        },
        concurrency: if read_only {
            Concurrency::Shared
        } else {
            Concurrency::Exclusive
        },
        timeout: TimeoutSpec {
            default_ms: 2_000,
            max_ms: 10_000,
        },
        subject: Subject::None,
    }
}

#[async_trait]
impl TypedTool for Probe {
    type Input = ProbeInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn run_request(&self, input: &ProbeInput) -> toolgate_core::RunRequest {
        toolgate_core::RunRequest {
            timeout_ms: input.timeout.filter(|_| !input.private_timeout),
            ..Default::default()
        }
    }

    fn validate(&self, input: &mut ProbeInput, _ctx: &ToolContext) -> Result<(), ToolError> {
        if input.reject {
            return Err(ToolError::InvalidRequest(
                "reject was set; send reject: false".into(),
            ));
        }
        Ok(())
    }

    fn analyze(&self, input: &ProbeInput, _ctx: &ToolContext) -> CallFacts {
        CallFacts {
            subject: Some(input.text.clone()),
            ..Default::default()
        }
    }

    async fn run(&self, input: ProbeInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let start = Instant::now();
        if input.panic {
            panic!("probe asked to panic");
        }
        if input.sleep_ms > 0 {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(input.sleep_ms)) => {}
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            }
        }
        self.timeline
            .lock()
            .unwrap()
            .push((self.spec.name.clone(), start, Instant::now()));
        if input.fail {
            return Err(ToolError::Failed("probe failed as asked".into()));
        }
        let text = if input.repeat > 0 {
            input.text.repeat(input.repeat)
        } else {
            input.text
        };
        Ok(ToolOutput::text(text))
    }
}

pub fn registry(timeline: &Timeline) -> Registry {
    Registry::builder()
        .register(Probe {
            spec: spec("Reader", true),
            timeline: timeline.clone(),
        })
        .register(Probe {
            spec: spec("Writer", false),
            timeline: timeline.clone(),
        })
        .register(Probe {
            spec: spec("Bash", false),
            timeline: timeline.clone(),
        })
        .register(Probe {
            spec: spec("Read", true),
            timeline: timeline.clone(),
        })
        .register(Probe {
            spec: spec("Edit", false),
            timeline: timeline.clone(),
        })
        .register(Probe {
            spec: spec("mcp__gh__issues", true),
            timeline: timeline.clone(),
        })
        .build()
        .unwrap()
}

/// Collects audit records; can be switched to "not ready".
#[derive(Default)]
pub struct MemoryAudit {
    pub records: Mutex<Vec<CallRecord>>,
    pub broken: Mutex<Option<String>>,
}

impl AuditSink for MemoryAudit {
    fn ready(&self) -> Result<(), toolgate_core::stages::AuditFailure> {
        match &*self.broken.lock().unwrap() {
            Some(r) => Err(toolgate_core::stages::AuditFailure::new(r.clone())),
            None => Ok(()),
        }
    }

    fn record(&self, record: &CallRecord) -> AuditReceipt {
        self.records.lock().unwrap().push(record.clone());
        AuditReceipt::done(Ok(()))
    }

    fn redact(&self, input: &Value) -> Value {
        let mut v = input.clone();
        if let Some(obj) = v.as_object_mut()
            && obj.contains_key("api_key")
        {
            obj.insert("api_key".into(), json!("[REDACTED]"));
        }
        v
    }
}

/// A policy that returns a fixed decision for calls whose subject contains a word.
pub struct WordPolicy {
    pub word: String,
    pub decision: Decision,
}

impl PolicyStage for WordPolicy {
    fn decide(&self, request: &DecisionRequest<'_>) -> Verdict {
        if let Some(h) = request.hook
            && h.decision == Decision::Deny
        {
            return h.clone();
        }
        if request
            .facts
            .subject
            .as_deref()
            .is_some_and(|s| s.contains(&self.word))
        {
            Verdict::new(
                self.decision,
                Layer::Rule,
                format!("subject mentions {}", self.word),
            )
            .with_rule(format!("Reader({}*)", self.word), "test settings")
        } else {
            Verdict::new(Decision::Allow, Layer::Rule, "allowed")
        }
    }
}

/// A prompter that always answers the same.
pub struct FixedPrompter(pub Decision);

#[async_trait]
impl Prompter for FixedPrompter {
    async fn ask(&self, _r: &DecisionRequest<'_>, _v: &Verdict) -> Verdict {
        Verdict::new(self.0, Layer::User, "the test user answered")
    }
}

/// Hooks that deny, rewrite or annotate, driven by the input's text.
#[derive(Default)]
pub struct ScriptedHooks {
    pub post_calls: Mutex<Vec<String>>,
}

#[async_trait]
impl HookStage for ScriptedHooks {
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> PreHookOutcome {
        let text = request
            .input
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let record = |outcome: &str| HookRecord {
            event: "PreToolUse".into(),
            handler: "scripted".into(),
            outcome: outcome.into(),
            detail: None,
            duration_ms: 0,
        };
        match text {
            "hook-deny" => PreHookOutcome {
                verdict: Some(Verdict::new(
                    Decision::Deny,
                    Layer::Hook,
                    "the hook said no",
                )),
                records: vec![record("deny")],
                ..Default::default()
            },
            "hook-rewrite-bad" => PreHookOutcome {
                updated_input: Some(json!({"text": 42})),
                records: vec![record("allow")],
                ..Default::default()
            },
            "hook-rewrite-good" => PreHookOutcome {
                updated_input: Some(json!({"text": "rewritten"})),
                additional_context: vec!["note from hook".into()],
                records: vec![record("allow")],
                ..Default::default()
            },
            _ => PreHookOutcome::default(),
        }
    }

    async fn post_tool_use(
        &self,
        request: &HookRequest<'_>,
        result: &Result<ToolOutput, CallError>,
        _duration_ms: u64,
    ) -> PostHookOutcome {
        self.post_calls.lock().unwrap().push(format!(
            "{}:{}",
            request.spec.name,
            if result.is_ok() { "ok" } else { "err" }
        ));
        PostHookOutcome::default()
    }
}

/// Admits at most `max` calls.
pub struct CountLimit {
    pub max: usize,
    pub seen: Mutex<usize>,
}

#[async_trait]
impl ConstraintStage for CountLimit {
    async fn admit(
        &self,
        spec: &ToolSpec,
        _session: &toolgate_core::Session,
    ) -> Result<Admitted, CallError> {
        let mut seen = self.seen.lock().unwrap();
        *seen += 1;
        if *seen > self.max {
            return Err(CallError::new(
                ErrorCode::RateLimited,
                Stage::Constrain,
                format!("{} is limited to {} calls", spec.name, self.max),
            )
            .with_layer(Layer::Constraint));
        }
        Ok(Admitted::default())
    }
}
