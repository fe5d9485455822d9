//! Shared helpers: a Gate over the file tools in a temporary workspace, with a second
//! temporary directory outside it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use toolgate_core::stages::{
    DecisionRequest, HookRequest, HookStage, PolicyStage, PostHookOutcome, PreHookOutcome,
};
use toolgate_core::{Gate, GateBuilder, Registry};
use toolgate_protocol::{
    CallError, CallFacts, CallResult, Decision, ErrorCode, Layer, ToolCall, ToolOutput, Verdict,
};
use toolgate_tools::{FileToolsConfig, register_file_tools};

pub struct Env {
    pub dir: tempfile::TempDir,
    pub outside: tempfile::TempDir,
    pub gate: Gate,
}

impl Env {
    pub fn new() -> Self {
        Self::with(FileToolsConfig::default(), |b| b)
    }

    pub fn with(config: FileToolsConfig, f: impl FnOnce(GateBuilder) -> GateBuilder) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let registry = register_file_tools(Registry::builder(), &config)
            .build()
            .unwrap();
        let gate = f(Gate::builder()
            .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
            .workspace(dir.path())
            .registry(registry))
        .build()
        .unwrap();
        Self { dir, outside, gate }
    }

    /// The canonical workspace root.
    pub fn ws(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    pub fn out(&self) -> PathBuf {
        self.outside.path().canonicalize().unwrap()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws().join(rel)
    }

    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub async fn call(&self, name: &str, input: Value) -> CallResult {
        self.gate.execute(ToolCall::new("t", name, input)).await
    }

    pub async fn ok(&self, name: &str, input: Value) -> String {
        let r = self.call(name, input.clone()).await;
        match r.output() {
            Some(o) => o.joined_text(),
            None => panic!("{name} {input} failed: {}", r.model_text()),
        }
    }

    pub async fn err(&self, name: &str, input: Value) -> CallError {
        let r = self.call(name, input.clone()).await;
        match r.error() {
            Some(e) => e.clone(),
            None => panic!("{name} {input} should have failed: {}", r.model_text()),
        }
    }
}

pub fn output(r: &CallResult) -> &ToolOutput {
    r.output()
        .unwrap_or_else(|| panic!("call failed: {}", r.model_text()))
}

pub fn assert_code(e: &CallError, code: ErrorCode, needle: &str) {
    assert_eq!(e.code, code, "{}", e.message);
    assert!(
        e.message.contains(needle),
        "`{needle}` not in: {}",
        e.message
    );
}

/// A PreToolUse hook stage that runs a closure (to race the file system between the check
/// and the use) and records the inputs hooks see.
pub struct RaceHook {
    pub only: Option<&'static str>,
    pub action: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    pub seen: Mutex<Vec<Value>>,
}

impl RaceHook {
    pub fn new(action: impl FnOnce() + Send + 'static) -> Arc<Self> {
        Arc::new(Self {
            only: None,
            action: Mutex::new(Some(Box::new(action))),
            seen: Mutex::new(Vec::new()),
        })
    }

    /// Runs `action` the first time `tool` is called.
    pub fn on(tool: &'static str, action: impl FnOnce() + Send + 'static) -> Arc<Self> {
        Arc::new(Self {
            only: Some(tool),
            action: Mutex::new(Some(Box::new(action))),
            seen: Mutex::new(Vec::new()),
        })
    }

    pub fn recorder() -> Arc<Self> {
        Arc::new(Self {
            only: None,
            action: Mutex::new(None),
            seen: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl HookStage for RaceHook {
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> PreHookOutcome {
        self.seen.lock().unwrap().push(request.input.clone());
        if self.only.is_some_and(|t| t != request.spec.name) {
            return PreHookOutcome::default();
        }
        if let Some(action) = self.action.lock().unwrap().take() {
            action();
        }
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

/// A policy that records the facts and denies writes to protected paths.
#[derive(Default)]
pub struct FactsPolicy {
    pub facts: Mutex<Vec<CallFacts>>,
}

impl PolicyStage for FactsPolicy {
    fn decide(&self, request: &DecisionRequest<'_>) -> Verdict {
        self.facts.lock().unwrap().push(request.facts.clone());
        let protected_write = request
            .facts
            .paths
            .iter()
            .any(|p| p.protected && p.access != toolgate_protocol::Access::Read);
        if protected_write {
            Verdict::new(Decision::Deny, Layer::Rule, "protected path")
        } else {
            Verdict::new(Decision::Allow, Layer::Default, "ok")
        }
    }
}

pub fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    std::os::unix::fs::symlink(target, link).unwrap();
}
