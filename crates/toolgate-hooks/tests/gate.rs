//! Hooks through the public door: a real `Gate` with a small test tool.

mod common;

use std::sync::Arc;

use common::{cmd, decide, spec};
use serde_json::json;
use toolgate_core::{Gate, Registry, ToolContext, ToolError, TypedTool};
use toolgate_hooks::{HookConfig, HookEngine, HookEnv};
use toolgate_protocol::{ErrorCode, Layer, ToolCall, ToolOutput, ToolSpec};

struct Echo(ToolSpec);

#[derive(serde::Deserialize)]
struct EchoInput {
    text: String,
}

#[async_trait::async_trait]
impl TypedTool for Echo {
    type Input = EchoInput;
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, input: EchoInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(input.text))
    }
}

fn gate(dir: &std::path::Path, hooks: serde_json::Value) -> Gate {
    let config = HookConfig::from_settings(&[(hooks, true, "test".into())], false, false).unwrap();
    let engine = HookEngine::new(
        config,
        HookEnv {
            project_dir: dir.into(),
            transcript_path: None,
        },
    );
    let registry = Registry::builder()
        .register(Echo(spec("Echo")))
        .build()
        .unwrap();
    Gate::builder()
        .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
        .workspace(dir)
        .registry(registry)
        .hooks(Arc::new(engine))
        .build()
        .unwrap()
}

fn pre(handlers: serde_json::Value) -> serde_json::Value {
    json!({"PreToolUse": [{"matcher": "Echo", "hooks": handlers}]})
}

#[tokio::test]
async fn updated_input_that_violates_the_schema_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let j = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"text": 3}}});
    let g = gate(dir.path(), pre(json!([cmd(&format!("echo '{j}'"))])));
    let r = g
        .execute(ToolCall::new("1", "Echo", json!({"text": "hi"})))
        .await;
    let err = r.error().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(
        err.message.contains("PreToolUse hook substituted"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn valid_updated_input_runs_and_context_reaches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let j = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"text": "rewritten"}, "additionalContext": "rewrote it"}});
    let g = gate(dir.path(), pre(json!([cmd(&format!("echo '{j}'"))])));
    let r = g
        .execute(ToolCall::new("1", "Echo", json!({"text": "hi"})))
        .await;
    assert_eq!(r.output().unwrap().joined_text(), "rewritten");
    assert_eq!(r.additional_context, vec!["rewrote it".to_owned()]);
}

#[tokio::test]
async fn hook_deny_and_exit_2_stop_the_call() {
    let dir = tempfile::tempdir().unwrap();
    for c in [
        decide("deny", "hook says no"),
        "echo 'hook says no' >&2; exit 2".to_owned(),
    ] {
        let g = gate(dir.path(), pre(json!([cmd(&c)])));
        let r = g
            .execute(ToolCall::new("1", "Echo", json!({"text": "hi"})))
            .await;
        let err = r.error().unwrap();
        assert_eq!(err.code, ErrorCode::Denied, "{c}");
        assert_eq!(err.layer, Some(Layer::Hook));
        assert!(
            r.model_text().contains("hook says no"),
            "{}",
            r.model_text()
        );
    }
}

#[tokio::test]
async fn fail_closed_timeout_denies_through_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(
        dir.path(),
        pre(
            json!([{"type": "command", "command": "sleep 30", "timeout": 0.3, "failClosed": true}]),
        ),
    );
    let r = g
        .execute(ToolCall::new("1", "Echo", json!({"text": "hi"})))
        .await;
    assert_eq!(r.error().unwrap().code, ErrorCode::Denied);
}

#[tokio::test]
async fn post_tool_use_replaces_output_and_adds_feedback() {
    let dir = tempfile::tempdir().unwrap();
    let j = json!({"decision": "block", "reason": "style issues", "hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "[redacted]"}});
    let g = gate(
        dir.path(),
        json!({"PostToolUse": [{"matcher": "Echo", "hooks": [cmd(&format!("echo '{j}'"))]}]}),
    );
    let r = g
        .execute(ToolCall::new("1", "Echo", json!({"text": "secret"})))
        .await;
    assert_eq!(r.output().unwrap().joined_text(), "[redacted]");
    assert!(r.model_text().contains("style issues"));
}
