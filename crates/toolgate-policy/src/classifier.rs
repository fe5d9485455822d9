//! Auto mode: a classifier reviews what would otherwise prompt.
//!
//! The classifier sees only the tool call (name, input, the analyzer's facts, the tool's
//! annotations) and the user's stated task — never the model's prose, so a model cannot
//! argue its way past it. Ask rules and hook asks still go to a person; the classifier
//! reviews the engine's default and risk-floor asks.
//!
//! [`BuiltinClassifier`] is deterministic (the analyzer's risk, path facts, annotations).
//! [`crate::ModelClassifier`] asks an Anthropic- or OpenAI-compatible endpoint and fails
//! closed on any error or timeout. [`AutoReviewer`] wraps a classifier and a prompter: after
//! [`MAX_CONSECUTIVE_BLOCKS`] consecutive or [`MAX_TOTAL_BLOCKS`] total blocks in a session
//! it falls back to prompting, as Claude Code does.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate_protocol::{
    Access, CallFacts, Decision, Layer, PermissionMode, Risk, ToolAnnotations, Verdict,
};

use crate::engine::PolicyRequest;
use crate::prompt::PolicyPrompter;

/// Blocks in a row after which auto mode falls back to prompting.
pub const MAX_CONSECUTIVE_BLOCKS: u32 = 3;
/// Blocks in a session after which auto mode falls back to prompting.
pub const MAX_TOTAL_BLOCKS: u32 = 20;
/// Default time a model classifier gets before the call is blocked (fail closed).
pub const DEFAULT_CLASSIFIER_TIMEOUT_MS: u64 = 8_000;

/// Which classifier `toolgate.classifier` selects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClassifierKind {
    /// The deterministic built-in classifier.
    #[default]
    Builtin,
    /// An Anthropic Messages API compatible endpoint.
    Anthropic,
    /// An OpenAI Chat Completions compatible endpoint.
    Openai,
}

/// `toolgate.classifier` in settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClassifierConfig {
    /// Which classifier.
    #[serde(default)]
    pub kind: ClassifierKind,
    /// Base URL (`https://api.anthropic.com`, `http://127.0.0.1:8080/v1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Environment variable holding the API key (never the key itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Timeout in milliseconds (default [`DEFAULT_CLASSIFIER_TIMEOUT_MS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A PEM file (absolute path) of extra CA certificates to trust for `https://` endpoints
    /// (a private CA in front of the model server), on top of the system's trust store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<std::path::PathBuf>,
}

impl ClassifierConfig {
    /// `builtin`, `anthropic` or `openai`, with the endpoint.
    pub fn kind_name(&self) -> String {
        match (self.kind, &self.endpoint) {
            (ClassifierKind::Builtin, _) => "builtin".into(),
            (k, Some(e)) => format!("{k:?} at {e}").to_lowercase(),
            (k, None) => format!("{k:?} (no endpoint: calls will be blocked)").to_lowercase(),
        }
    }
}

/// The classifier `toolgate.classifier` selects: the built-in one when unset or `builtin`,
/// else a [`crate::ModelClassifier`] over [`crate::HttpTransport`] (system trust store).
pub fn classifier_from(config: Option<&ClassifierConfig>) -> Arc<dyn Classifier> {
    match config {
        Some(c) if c.kind != ClassifierKind::Builtin => Arc::new(
            crate::ModelClassifier::with_client(crate::ModelClient::from_config(c)),
        ),
        _ => Arc::new(BuiltinClassifier),
    }
}

/// What a classifier sees.
#[derive(Debug, Clone, Copy)]
pub struct ClassifierInput<'a> {
    /// The tool.
    pub tool: &'a str,
    /// Its input.
    pub input: &'a Value,
    /// The analyzer's facts.
    pub facts: &'a CallFacts,
    /// The tool's annotations.
    pub annotations: ToolAnnotations,
    /// The user's stated task, if the front door knows it.
    pub task: Option<&'a str>,
    /// The session's roots.
    pub roots: &'a [&'a Path],
}

/// A classifier's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassifierVerdict {
    /// Whether the call may run.
    pub allow: bool,
    /// Why, in a sentence.
    pub reason: String,
}

/// Reviews a call for auto mode.
#[async_trait]
pub trait Classifier: Send + Sync {
    /// A short name for traces (`builtin`, `anthropic claude-haiku`).
    fn name(&self) -> String;
    /// Allows or blocks the call.
    async fn classify(&self, input: &ClassifierInput<'_>) -> ClassifierVerdict;
}

/// The deterministic classifier: allows calls the analyzer finds at most moderately risky
/// that write only inside the roots, touch no protected path, reach no network, and whose
/// tool is not destructive or open-world by its annotations.
#[derive(Debug, Default, Clone, Copy)]
pub struct BuiltinClassifier;

impl BuiltinClassifier {
    /// The decision, synchronously.
    pub fn judge(input: &ClassifierInput<'_>) -> ClassifierVerdict {
        let block = |reason: String| ClassifierVerdict {
            allow: false,
            reason,
        };
        if let Some(f) = input.facts.findings.iter().find(|f| f.risk >= Risk::High) {
            return block(
                format!("the analyzer rates it {:?}: {}", f.risk, f.reason).to_lowercase(),
            );
        }
        if input.facts.opaque {
            return block("parts of the call could not be analysed".into());
        }
        let is_shell = input.input.get("command").is_some() && input.tool == "Bash";
        if is_shell && input.facts.commands.is_empty() {
            return block("no shell analysis is available for this command".into());
        }
        if !input.facts.urls.is_empty() {
            return block(format!(
                "it reaches the network ({})",
                input.facts.urls.join(", ")
            ));
        }
        for p in &input.facts.paths {
            if p.access == Access::Read {
                continue;
            }
            if p.protected || toolgate_protocol::paths::is_protected(&p.path, input.roots, None) {
                return block(format!("it writes the protected path {}", p.path.display()));
            }
            if !input.roots.iter().any(|r| p.path.starts_with(r)) {
                return block(format!(
                    "it writes {} outside the workspace",
                    p.path.display()
                ));
            }
        }
        if !is_shell && (input.annotations.destructive || input.annotations.open_world) {
            return block(format!(
                "{} is marked destructive or open-world",
                input.tool
            ));
        }
        if !is_shell && !input.annotations.read_only && input.facts.paths.is_empty() {
            return block(format!(
                "nothing is known about what {} changes",
                input.tool
            ));
        }
        ClassifierVerdict {
            allow: true,
            reason: "moderate risk at most, writes only inside the workspace".into(),
        }
    }
}

#[async_trait]
impl Classifier for BuiltinClassifier {
    fn name(&self) -> String {
        "builtin".into()
    }

    async fn classify(&self, input: &ClassifierInput<'_>) -> ClassifierVerdict {
        Self::judge(input)
    }
}

/// Auto mode's prompter: the classifier answers the engine's default and risk-floor asks;
/// ask rules, hook asks and every ask after too many blocks go to `fallback`.
pub struct AutoReviewer<P> {
    classifier: Arc<dyn Classifier>,
    fallback: P,
    consecutive: AtomicU32,
    total: AtomicU32,
    task: RwLock<Option<String>>,
}

impl<P> std::fmt::Debug for AutoReviewer<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoReviewer")
            .field("classifier", &self.classifier.name())
            .field("consecutive", &self.consecutive.load(Ordering::Relaxed))
            .field("total", &self.total.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<P: PolicyPrompter> AutoReviewer<P> {
    /// Wraps `fallback` with `classifier`.
    pub fn new(classifier: Arc<dyn Classifier>, fallback: P) -> Self {
        Self {
            classifier,
            fallback,
            consecutive: AtomicU32::new(0),
            total: AtomicU32::new(0),
            task: RwLock::new(None),
        }
    }

    /// Sets the user's stated task (what the classifier judges relevance against).
    pub fn set_task(&self, task: Option<String>) {
        *self.task.write().unwrap_or_else(PoisonError::into_inner) = task;
    }

    /// Whether the block limits sent auto mode back to prompting.
    pub fn fell_back(&self) -> bool {
        self.consecutive.load(Ordering::Relaxed) >= MAX_CONSECUTIVE_BLOCKS
            || self.total.load(Ordering::Relaxed) >= MAX_TOTAL_BLOCKS
    }
}

#[async_trait]
impl<P: PolicyPrompter> PolicyPrompter for AutoReviewer<P> {
    async fn ask(&self, req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict {
        let reviewable = req.mode == PermissionMode::Auto
            && matches!(verdict.layer, Layer::Default | Layer::Risk);
        if !reviewable || self.fell_back() {
            return self.fallback.ask(req, verdict).await;
        }
        let task = self
            .task
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let input = ClassifierInput {
            tool: req.tool,
            input: req.input,
            facts: req.facts,
            annotations: req.annotations,
            task: task.as_deref(),
            roots: req.roots,
        };
        let v = self.classifier.classify(&input).await;
        let name = self.classifier.name();
        if v.allow {
            self.consecutive.store(0, Ordering::Relaxed);
            return Verdict::new(
                Decision::Allow,
                Layer::Mode,
                format!("auto mode: the {name} classifier allowed it ({})", v.reason),
            );
        }
        let c = self.consecutive.fetch_add(1, Ordering::Relaxed) + 1;
        let t = self.total.fetch_add(1, Ordering::Relaxed) + 1;
        let mut reason = format!(
            "auto mode: the {name} classifier blocked it ({}); do something else or ask the user to approve it",
            v.reason
        );
        if c >= MAX_CONSECUTIVE_BLOCKS || t >= MAX_TOTAL_BLOCKS {
            reason.push_str(&format!(
                " — {c} blocks in a row, {t} in this session: auto mode now asks the user instead"
            ));
        }
        let mut d = Verdict::new(Decision::Deny, Layer::Mode, reason);
        d.rule = verdict.rule.clone();
        d.source = verdict.source.clone();
        d
    }

    /// Questions are the user's to answer: the classifier never does.
    async fn ask_user(
        &self,
        form: &toolgate_core::asking::QuestionForm,
    ) -> Result<Vec<toolgate_core::asking::QuestionAnswer>, toolgate_core::asking::Unanswered> {
        self.fallback.ask_user(form).await
    }

    async fn sample(
        &self,
        request: &toolgate_core::asking::SampleRequest,
    ) -> Result<serde_json::Value, toolgate_core::asking::SampleError> {
        self.fallback.sample(request).await
    }
}
