//! The [`HookEngine`]: finds the handlers of an event, runs them in parallel, aggregates,
//! and plugs into the gate as its [`HookStage`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_core::stages::{HookRequest, HookStage, PostHookOutcome, PreHookOutcome};
use toolgate_protocol::{CallError, Decision, ErrorCode, HookRecord, Layer, ToolOutput, Verdict};

use crate::aggregate::{EventOutcome, aggregate};
use crate::config::{Handler, HandlerKind, HookConfig, HookEvent};
use crate::error::HookError;
use crate::matcher::{IfMatcher, RunAlways};
use crate::protocol::{
    HookDecision, HookResult, HookStatus, MAX_STRING_CHARS, interpret, text_output,
};
use crate::run_command::{Exit, run_command};
use crate::run_http::{HttpClient, run_http};

/// Where hooks run.
#[derive(Debug, Clone)]
pub struct HookEnv {
    /// The project root: `CLAUDE_PROJECT_DIR` and `TOOLGATE_PROJECT_DIR`, and the hooks'
    /// working directory for events without a session cwd.
    pub project_dir: PathBuf,
    /// `transcript_path` in the event JSON (`null` when `None`).
    pub transcript_path: Option<PathBuf>,
}

/// Runs the configured hooks. Cheap to share: wrap in an `Arc` and hand it to the gate.
pub struct HookEngine {
    config: Arc<HookConfig>,
    env: Arc<HookEnv>,
    if_matcher: Arc<dyn IfMatcher>,
    http: Arc<HttpClient>,
}

impl std::fmt::Debug for HookEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookEngine")
            .field("handlers", &self.config.len())
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

impl HookEngine {
    /// An engine for `config`; `if` rules are not interpreted until a matcher is plugged in
    /// ([`RunAlways`]).
    pub fn new(config: HookConfig, env: HookEnv) -> Self {
        HookEngine {
            config: Arc::new(config),
            env: Arc::new(env),
            if_matcher: Arc::new(RunAlways),
            http: Arc::new(HttpClient::default()),
        }
    }

    /// Also trusts the root certificates in `pem` (one or more `BEGIN CERTIFICATE` blocks)
    /// for `https` hooks, on top of the system's roots: for collectors behind a private CA,
    /// and for tests. There is deliberately no way to switch certificate checks off.
    pub fn with_root_certificates_pem(mut self, pem: &[u8]) -> Result<Self, HookError> {
        self.http = Arc::new(self.http.with_roots_pem(pem)?);
        Ok(self)
    }

    /// Replaces the `if` rule matcher (e.g. with the policy crate's full rule semantics).
    pub fn with_if_matcher(mut self, matcher: Arc<dyn IfMatcher>) -> Self {
        self.if_matcher = matcher;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &HookConfig {
        &self.config
    }

    /// Fires `event` with `payload` (an object with the event's fields: `session_id`, `cwd`,
    /// `permission_mode`, and e.g. `prompt` for UserPromptSubmit, `source` for
    /// SessionStart). `hook_event_name` and `transcript_path` are filled in, and `cwd`
    /// defaults to the project directory. For agents that embed toolgate; the gate fires the
    /// tool events itself.
    pub async fn fire(&self, event: HookEvent, payload: Value) -> EventOutcome {
        let mut map = match payload {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                let mut m = Map::new();
                m.insert("payload".into(), other);
                m
            }
        };
        let cwd = map
            .get("cwd")
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .unwrap_or_else(|| self.env.project_dir.clone());
        map.entry("cwd").or_insert_with(|| json!(cwd));
        self.run_event(event, map, &cwd).await
    }

    async fn run_event(
        &self,
        event: HookEvent,
        mut payload: Map<String, Value>,
        cwd: &Path,
    ) -> EventOutcome {
        let mut outcome = EventOutcome::empty(event);
        payload.insert("hook_event_name".into(), json!(event.as_str()));
        payload
            .entry("transcript_path")
            .or_insert_with(|| json!(self.env.transcript_path));
        let value = event
            .matcher_field()
            .and_then(|f| payload.get(f))
            .and_then(Value::as_str);
        let tool_name = payload
            .get("tool_name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let null = Value::Null;
        let tool_input = payload.get("tool_input").unwrap_or(&null);
        let handlers: Vec<&Handler> = self
            .config
            .matching(event, value)
            .into_iter()
            .filter(|h| match &h.if_rule {
                None => true,
                Some(rule) => {
                    event.is_tool_event() && self.if_matcher.matches(rule, tool_name, tool_input)
                }
            })
            .collect();
        if handlers.is_empty() {
            return outcome;
        }
        let bytes: Arc<[u8]> = Value::Object(payload).to_string().into_bytes().into();
        let project = self.env.project_dir.display().to_string();
        let env: Arc<[(String, String)]> = vec![
            ("CLAUDE_PROJECT_DIR".to_owned(), project.clone()),
            ("TOOLGATE_PROJECT_DIR".to_owned(), project),
        ]
        .into();
        let mut sync = Vec::new();
        for h in handlers {
            if h.is_async {
                outcome.records.push(HookRecord {
                    event: event.as_str().to_owned(),
                    handler: h.label(),
                    outcome: "none".into(),
                    detail: Some("async: runs detached and cannot decide".into()),
                    duration_ms: 0,
                });
                let (h, bytes, env, cwd, http) = (
                    h.clone(),
                    bytes.clone(),
                    env.clone(),
                    cwd.to_path_buf(),
                    self.http.clone(),
                );
                tokio::spawn(async move {
                    let r = run_handler(&h, event, &bytes, &cwd, &env, &http).await;
                    if r.status != HookStatus::Ok {
                        let redactor = toolgate_audit::Redactor::shared();
                        let error = r.error.as_deref().map(|e| redactor.redact_str(e));
                        tracing::warn!(
                            handler = %redactor.redact_str(&r.handler),
                            error = ?error,
                            "async hook failed"
                        );
                    }
                });
            } else {
                sync.push(run_handler(h, event, &bytes, cwd, &env, &self.http));
            }
        }
        outcome.ran = true;
        let results = futures::future::join_all(sync).await;
        aggregate(event, results, outcome)
    }

    fn common(&self, request: &HookRequest<'_>) -> Map<String, Value> {
        let s = request.session;
        let mut m = Map::new();
        m.insert("session_id".into(), json!(s.id()));
        m.insert("transcript_path".into(), json!(self.env.transcript_path));
        m.insert("cwd".into(), json!(s.cwd()));
        m.insert("permission_mode".into(), json!(s.mode().as_str()));
        m.insert("tool_name".into(), json!(request.spec.name));
        m.insert("tool_input".into(), request.input.clone());
        m.insert("tool_use_id".into(), json!(request.call_id));
        m
    }
}

async fn run_handler(
    h: &Handler,
    event: HookEvent,
    payload: &[u8],
    cwd: &Path,
    env: &[(String, String)],
    http: &HttpClient,
) -> HookResult {
    let started = std::time::Instant::now();
    let r = HookResult::new(h.label(), h.source.clone(), h.fail_closed);
    let secs = h.timeout.as_secs_f64();
    let mut r = match &h.kind {
        HandlerKind::Command { command, args } => {
            match run_command(command, args.as_deref(), payload, cwd, env, h.timeout).await {
                Err(e) => r.fail(HookStatus::Error, e.to_string()),
                Ok(raw) => match raw.exit {
                    Exit::TimedOut => r.fail(
                        HookStatus::TimedOut,
                        format!("did not finish within {secs} s; its process group was killed"),
                    ),
                    Exit::Signal(s) => r.fail(HookStatus::Error, format!("killed by signal {s}")),
                    Exit::Code(c) => {
                        interpret(event, r, c, &raw.stdout, raw.stdout_truncated, &raw.stderr)
                    }
                },
            }
        }
        HandlerKind::Http {
            url,
            headers,
            allowed_env_vars,
        } => match run_http(http, url, headers, allowed_env_vars, payload, h.timeout).await {
            Err(e) => r.fail(HookStatus::Error, e.to_string()),
            Ok(out) => match out.status {
                None => r.fail(HookStatus::TimedOut, format!("no answer within {secs} s")),
                Some(s) if (200..300).contains(&s) => {
                    interpret(event, r, 0, &out.body, out.truncated, b"")
                }
                Some(s) if (300..400).contains(&s) => r.fail(
                    HookStatus::Error,
                    format!(
                        "answered HTTP {s}: redirects are not followed (put the final URL in the settings)"
                    ),
                ),
                Some(s) => r.fail(
                    HookStatus::Error,
                    format!("answered HTTP {s} (status codes cannot block; answer 2xx with JSON)"),
                ),
            },
        },
        HandlerKind::Unsupported(t) => r.fail(
            HookStatus::Error,
            format!("toolgate does not run `{t}` hooks; use a `command` or `http` hook"),
        ),
    };
    r.duration_ms = started.elapsed().as_millis() as u64;
    r
}

/// Cuts the middle out of `s` beyond [`MAX_STRING_CHARS`] characters (PostToolUseFailure
/// `error`, as in Claude Code).
fn middle_cap(s: &str) -> String {
    let n = s.chars().count();
    if n <= MAX_STRING_CHARS {
        return s.to_owned();
    }
    let half = MAX_STRING_CHARS / 2;
    let head: String = s.chars().take(half).collect();
    let tail: String = s.chars().skip(n - half).collect();
    format!("{head}\n… [{} characters cut] …\n{tail}", n - 2 * half)
}

#[async_trait]
impl HookStage for HookEngine {
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> PreHookOutcome {
        if !self.config.has(HookEvent::PreToolUse) {
            return PreHookOutcome::default();
        }
        let payload = self.common(request);
        let out = self
            .run_event(HookEvent::PreToolUse, payload, &request.session.cwd())
            .await;
        let verdict = out.decision.map(|d| {
            let decision = match d {
                HookDecision::Allow => Decision::Allow,
                HookDecision::Ask | HookDecision::Defer => Decision::Ask,
                HookDecision::Deny => Decision::Deny,
            };
            let reason = out.reason.clone().unwrap_or_default();
            let v = Verdict::new(decision, Layer::Hook, reason);
            match &out.decided_by {
                Some((handler, source)) => v.with_rule(handler.clone(), source.clone()),
                None => v,
            }
        });
        PreHookOutcome {
            verdict,
            updated_input: out.updated_input,
            additional_context: out.additional_context,
            records: out.records,
        }
    }

    async fn post_tool_use(
        &self,
        request: &HookRequest<'_>,
        result: &Result<ToolOutput, CallError>,
        duration_ms: u64,
    ) -> PostHookOutcome {
        let event = match result {
            Ok(_) => HookEvent::PostToolUse,
            Err(_) => HookEvent::PostToolUseFailure,
        };
        if !self.config.has(event) {
            return PostHookOutcome::default();
        }
        let mut payload = self.common(request);
        match result {
            Ok(output) => {
                let response = output
                    .structured
                    .clone()
                    .unwrap_or_else(|| json!({"content": output.content}));
                payload.insert("tool_response".into(), response);
            }
            Err(e) => {
                payload.insert("error".into(), json!(middle_cap(&e.message)));
                payload.insert("is_interrupt".into(), json!(e.code == ErrorCode::Cancelled));
            }
        }
        payload.insert("duration_ms".into(), json!(duration_ms));
        let out = self.run_event(event, payload, &request.session.cwd()).await;
        let updated_output = match result {
            Ok(_) => out
                .updated_output
                .as_ref()
                .and_then(text_output)
                .map(ToolOutput::text),
            Err(_) => None,
        };
        let mut additional_context = out.additional_context;
        if let Some(stop) = out.stop {
            additional_context.push(format!("a {} hook asked to stop: {stop}", event.as_str()));
        }
        PostHookOutcome {
            updated_output,
            additional_context,
            records: out.records,
        }
    }
}
