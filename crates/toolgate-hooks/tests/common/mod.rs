//! Helpers for the hook tests: engines from JSON, scripts on disk, a session and a spec.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolgate_core::stages::{HookRequest, HookStage, PostHookOutcome, PreHookOutcome};
use toolgate_core::{Session, SessionOptions, Workspace};
use toolgate_hooks::{HookConfig, HookEngine, HookEnv};
use toolgate_protocol::{
    CallError, Concurrency, Subject, TimeoutSpec, ToolAnnotations, ToolOutput, ToolSpec,
};

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub session: Session,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let session = Session::new(
            ws,
            SessionOptions {
                id: Some("sess-1".into()),
                ..Default::default()
            },
        );
        Fixture { dir, session }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes an executable script and returns its path as a string.
    pub fn script(&self, name: &str, body: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    }

    /// An engine with one `PreToolUse` group matching everything with these handlers.
    pub fn pre_engine(&self, handlers: Value) -> HookEngine {
        self.engine(json!({"PreToolUse": [{"matcher": "*", "hooks": handlers}]}))
    }

    pub fn engine(&self, hooks: Value) -> HookEngine {
        let config =
            HookConfig::from_settings(&[(hooks, true, "test".into())], false, false).unwrap();
        HookEngine::new(
            config,
            HookEnv {
                project_dir: self.dir.path().to_path_buf(),
                transcript_path: Some(PathBuf::from("/tmp/transcript.jsonl")),
            },
        )
    }

    pub async fn pre(&self, engine: &HookEngine, tool: &str, input: Value) -> PreHookOutcome {
        let spec = spec(tool);
        engine
            .pre_tool_use(&HookRequest {
                spec: &spec,
                call_id: "call-1",
                input: &input,
                session: &self.session,
            })
            .await
    }

    pub async fn post(
        &self,
        engine: &HookEngine,
        tool: &str,
        input: Value,
        result: Result<ToolOutput, CallError>,
    ) -> PostHookOutcome {
        let spec = spec(tool);
        engine
            .post_tool_use(
                &HookRequest {
                    spec: &spec,
                    call_id: "call-1",
                    input: &input,
                    session: &self.session,
                },
                &result,
                42,
            )
            .await
    }
}

/// A shell-form command handler.
pub fn cmd(command: &str) -> Value {
    json!({"type": "command", "command": command})
}

pub fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        version: "1".into(),
        description: "test tool".into(),
        input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}},
                             "required": ["text"], "additionalProperties": false}),
        output_schema: None,
        annotations: ToolAnnotations {
            read_only: true,
            ..Default::default()
        },
        concurrency: Concurrency::Shared,
        timeout: TimeoutSpec {
            default_ms: 5000,
            max_ms: 5000,
        },
        subject: Subject::None,
    }
}

/// A JSON answer for PreToolUse with `permissionDecision`.
pub fn decide(decision: &str, reason: &str) -> String {
    let j = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": decision, "permissionDecisionReason": reason}});
    format!("echo '{j}'")
}

/// Whether a process is gone (or a zombie waiting for its reaper).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}
