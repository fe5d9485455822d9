//! Exit codes and JSON fields, with real sh and Python hook scripts (reference §7.6–7.7).

mod common;

use common::{Fixture, cmd, decide};
use serde_json::json;
use toolgate_hooks::{HookDecision, HookEvent, PermissionBehavior};
use toolgate_protocol::{CallError, Decision, ErrorCode, Layer, Stage, ToolOutput};

fn input() -> serde_json::Value {
    json!({"text": "hi"})
}

#[tokio::test]
async fn exit_0_without_output_says_nothing() {
    let f = Fixture::new();
    let e = f.pre_engine(json!([cmd("true")]));
    let out = f.pre(&e, "Echo", input()).await;
    assert!(out.verdict.is_none() && out.updated_input.is_none());
    assert_eq!(out.records.len(), 1);
    assert_eq!(out.records[0].outcome, "none");
    assert_eq!(out.records[0].event, "PreToolUse");
    // Plain text on exit 0 is not context for PreToolUse.
    let e = f.pre_engine(json!([cmd("echo hello")]));
    let out = f.pre(&e, "Echo", input()).await;
    assert!(out.verdict.is_none() && out.additional_context.is_empty());
}

#[tokio::test]
async fn json_deny_is_a_hook_verdict_naming_the_handler() {
    let f = Fixture::new();
    let c = decide("deny", "not today");
    let e = f.pre_engine(json!([cmd(&c)]));
    let out = f.pre(&e, "Echo", input()).await;
    let v = out.verdict.unwrap();
    assert_eq!((v.decision, v.layer), (Decision::Deny, Layer::Hook));
    assert_eq!(v.reason, "not today");
    assert_eq!(v.rule.as_deref(), Some(c.as_str()));
    assert_eq!(v.source.as_deref(), Some("test"));
    assert_eq!(out.records[0].outcome, "deny");
}

#[tokio::test]
async fn exit_2_blocks_with_stderr_even_if_json_allows() {
    let f = Fixture::new();
    let e = f.pre_engine(json!([cmd("echo 'rm outside the workspace' >&2; exit 2")]));
    let v = f.pre(&e, "Echo", input()).await.verdict.unwrap();
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.reason, "rm outside the workspace");

    let allow = decide("allow", "fine");
    let e = f.pre_engine(json!([cmd(&format!("{allow}; echo nope >&2; exit 2"))]));
    let v = f.pre(&e, "Echo", input()).await.verdict.unwrap();
    assert_eq!((v.decision, v.reason.as_str()), (Decision::Deny, "nope"));

    let e = f.pre_engine(json!([cmd("exit 2")]));
    let v = f.pre(&e, "Echo", input()).await.verdict.unwrap();
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.reason.contains("exit code 2"), "{}", v.reason);
}

#[tokio::test]
async fn exit_1_is_a_non_blocking_error_but_json_is_honoured_on_any_code() {
    let f = Fixture::new();
    let e = f.pre_engine(json!([cmd(
        "echo 'first line' >&2; echo second >&2; exit 1"
    )]));
    let out = f.pre(&e, "Echo", input()).await;
    assert!(out.verdict.is_none());
    assert_eq!(out.records[0].outcome, "error");
    let detail = out.records[0].detail.clone().unwrap();
    assert!(
        detail.contains("code 1") && detail.contains("first line") && !detail.contains("second"),
        "{detail}"
    );

    let c = decide("deny", "json wins");
    let e = f.pre_engine(json!([cmd(&format!("{c}; exit 1"))]));
    let v = f.pre(&e, "Echo", input()).await.verdict.unwrap();
    assert_eq!(
        (v.decision, v.reason.as_str()),
        (Decision::Deny, "json wins")
    );
}

#[tokio::test]
async fn invalid_json_is_an_error_and_fail_closed_denies() {
    let f = Fixture::new();
    for bad in [
        "echo '{not json'",
        r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "maybe"}}'"#,
        r#"echo '{"continue": "no"}'"#,
        r#"echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse"}}'"#,
        r#"echo '{"decision": "perhaps"}'"#,
        "kill -9 $$",
    ] {
        let e = f.pre_engine(json!([cmd(bad)]));
        let out = f.pre(&e, "Echo", input()).await;
        assert!(out.verdict.is_none(), "{bad}");
        assert_eq!(out.records[0].outcome, "error", "{bad}");
        assert!(out.records[0].detail.is_some(), "{bad}");

        let e = f.pre_engine(json!([{"type": "command", "command": bad, "failClosed": true}]));
        let v = f.pre(&e, "Echo", input()).await.verdict.unwrap();
        assert_eq!(
            (v.decision, v.layer),
            (Decision::Deny, Layer::Hook),
            "{bad}"
        );
        assert!(v.reason.contains("fail-closed"), "{}", v.reason);
    }
}

#[tokio::test]
async fn legacy_decisions_continue_false_ask_defer() {
    let f = Fixture::new();
    let cases = [
        (
            r#"echo '{"decision": "approve", "reason": "ok"}'"#,
            Decision::Allow,
            "ok",
        ),
        (
            r#"echo '{"decision": "block", "reason": "legacy no"}'"#,
            Decision::Deny,
            "legacy no",
        ),
        (
            r#"echo '{"continue": false, "stopReason": "halt"}'"#,
            Decision::Deny,
            "halt",
        ),
    ];
    for (c, d, reason) in cases {
        let e = f.pre_engine(json!([cmd(c)]));
        let v = f.pre(&e, "Echo", input()).await.verdict.unwrap();
        assert_eq!((v.decision, v.reason.as_str()), (d, reason), "{c}");
    }
    for (c, d) in [
        ("ask", Decision::Ask),
        ("defer", Decision::Ask),
        ("allow", Decision::Allow),
    ] {
        let e = f.pre_engine(json!([cmd(&decide(c, "r"))]));
        assert_eq!(
            f.pre(&e, "Echo", input()).await.verdict.unwrap().decision,
            d,
            "{c}"
        );
    }
}

#[tokio::test]
async fn updated_input_and_context() {
    let f = Fixture::new();
    let j = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": {"text": "rewritten"}, "additionalContext": "note for the model"}});
    let e = f.pre_engine(json!([cmd(&format!("echo '{j}'"))]));
    let out = f.pre(&e, "Echo", input()).await;
    assert_eq!(out.updated_input, Some(json!({"text": "rewritten"})));
    assert_eq!(
        out.additional_context,
        vec!["note for the model".to_owned()]
    );
    assert_eq!(out.verdict.unwrap().decision, Decision::Allow);
}

#[tokio::test]
async fn long_strings_are_capped() {
    let f = Fixture::new();
    let e = f.pre_engine(json!([cmd(
        "head -c 20000 /dev/zero | tr '\\0' x >&2; exit 2"
    )]));
    let v = f.pre(&e, "Echo", input()).await.verdict.unwrap();
    assert!(v.reason.chars().count() < 10_100 && v.reason.contains("truncated"));
}

#[tokio::test]
async fn python_hook_sees_the_reference_fields_and_env() {
    let f = Fixture::new();
    let py = f.script(
        "check.py",
        r#"#!/usr/bin/env python3
import json, os, sys
ev = json.load(sys.stdin)
want = ["session_id", "transcript_path", "cwd", "permission_mode", "hook_event_name",
        "tool_name", "tool_input", "tool_use_id"]
missing = [k for k in want if k not in ev]
ctx = {"missing": missing, "event": ev["hook_event_name"], "session": ev["session_id"],
       "mode": ev["permission_mode"], "id": ev["tool_use_id"], "cwd": ev["cwd"],
       "project": os.environ.get("CLAUDE_PROJECT_DIR"), "tg": os.environ.get("TOOLGATE_PROJECT_DIR"),
       "transcript": ev["transcript_path"]}
if "rm -rf" in ev["tool_input"].get("command", ""):
    print("python says no", file=sys.stderr)
    sys.exit(2)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                  "additionalContext": json.dumps(ctx)}}))
"#,
    );
    let e = f.pre_engine(json!([{"type": "command", "command": "python3", "args": [py]}]));
    let out = f.pre(&e, "Bash", json!({"command": "ls"})).await;
    assert_eq!(out.records[0].outcome, "none", "{:?}", out.records);
    let ctx: serde_json::Value = serde_json::from_str(&out.additional_context[0]).unwrap();
    let dir = f.path().display().to_string();
    assert_eq!(ctx["missing"], json!([]));
    assert_eq!(ctx["event"], "PreToolUse");
    assert_eq!(ctx["session"], "sess-1");
    assert_eq!(ctx["mode"], "default");
    assert_eq!(ctx["id"], "call-1");
    assert_eq!(ctx["project"], dir.as_str());
    assert_eq!(ctx["tg"], dir.as_str());
    assert_eq!(ctx["transcript"], "/tmp/transcript.jsonl");
    assert!(
        ctx["cwd"]
            .as_str()
            .unwrap()
            .ends_with(f.path().file_name().unwrap().to_str().unwrap())
    );

    let v = f
        .pre(&e, "Bash", json!({"command": "rm -rf /"}))
        .await
        .verdict
        .unwrap();
    assert_eq!(
        (v.decision, v.reason.as_str()),
        (Decision::Deny, "python says no")
    );
}

#[tokio::test]
async fn post_tool_use_block_exit2_and_updated_output() {
    let f = Fixture::new();
    let post = |hooks: serde_json::Value| {
        f.engine(json!({"PostToolUse": [{"matcher": "Echo", "hooks": hooks}]}))
    };
    let e = post(json!([cmd(
        r#"echo '{"decision": "block", "reason": "lint failed"}'"#
    )]));
    let out = f.post(&e, "Echo", input(), Ok(ToolOutput::text("x"))).await;
    assert!(
        out.additional_context[0].contains("lint failed"),
        "{:?}",
        out.additional_context
    );
    assert_eq!(out.records[0].outcome, "deny");

    let e = post(json!([cmd("echo 'format errors' >&2; exit 2")]));
    let out = f.post(&e, "Echo", input(), Ok(ToolOutput::text("x"))).await;
    assert!(out.additional_context[0].contains("format errors"));

    for (answer, want) in [
        (json!("plain"), Some("plain")),
        (
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
            Some("a\nb"),
        ),
        (json!({"stdout": "bash shaped"}), None),
    ] {
        let j = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": answer}});
        let e = post(json!([cmd(&format!("echo '{j}'"))]));
        let out = f.post(&e, "Echo", input(), Ok(ToolOutput::text("x"))).await;
        assert_eq!(out.updated_output.map(|o| o.joined_text()).as_deref(), want);
    }
    // A non-matching tool runs nothing.
    let out = f
        .post(&e, "Other", input(), Ok(ToolOutput::text("x")))
        .await;
    assert!(out.records.is_empty());
}

#[tokio::test]
async fn post_payloads_carry_response_error_and_duration() {
    let f = Fixture::new();
    let log = f.path().join("events.jsonl");
    let c = format!("cat >> {}; echo >> {}", log.display(), log.display());
    let e = f.engine(json!({
        "PostToolUse": [{"hooks": [cmd(&c)]}],
        "PostToolUseFailure": [{"hooks": [cmd(&c)]}],
    }));
    f.post(&e, "Echo", input(), Ok(ToolOutput::text("out")))
        .await;
    let err = CallError::new(
        ErrorCode::ExecutionFailed,
        Stage::Execute,
        "x".repeat(30_000),
    );
    f.post(&e, "Echo", input(), Err(err)).await;
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["hook_event_name"], "PostToolUse");
    assert_eq!(events[0]["tool_response"]["content"][0]["text"], "out");
    assert_eq!(events[0]["duration_ms"], 42);
    assert_eq!(events[1]["hook_event_name"], "PostToolUseFailure");
    assert_eq!(events[1]["is_interrupt"], false);
    let error = events[1]["error"].as_str().unwrap();
    assert!(error.chars().count() < 10_100 && error.contains("characters cut"));
}

#[tokio::test]
async fn library_events() {
    let f = Fixture::new();
    let e = f.engine(json!({
        "SessionStart": [{"matcher": "startup", "hooks": [cmd("echo 'branch: main'")]}],
        "Stop": [{"hooks": [cmd("echo 'tests fail' >&2; exit 2")]}],
        "Notification": [{"hooks": [cmd("exit 2")]}],
        "UserPromptSubmit": [{"hooks": [cmd(r#"echo '{"decision": "block", "reason": "no", "systemMessage": "warned"}'"#)]}],
        "PermissionRequest": [{"matcher": "Bash", "hooks": [cmd(r#"echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow", "updatedPermissions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]}}}'"#)]}],
        "PermissionDenied": [{"hooks": [cmd(r#"echo '{"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": true}}'"#)]}],
        "PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "exit 2", "if": "Bash"}]}],
    }));
    let out = e
        .fire(HookEvent::SessionStart, json!({"source": "startup"}))
        .await;
    assert_eq!(out.additional_context, vec!["branch: main".to_owned()]);
    let out = e
        .fire(HookEvent::SessionStart, json!({"source": "resume"}))
        .await;
    assert!(!out.ran && out.records.is_empty());
    let out = e
        .fire(HookEvent::Stop, json!({"stop_hook_active": false}))
        .await;
    assert_eq!(out.blocked.as_deref(), Some("tests fail"));
    let out = e
        .fire(HookEvent::Notification, json!({"message": "m"}))
        .await;
    assert!(out.blocked.is_none());
    let out = e
        .fire(HookEvent::UserPromptSubmit, json!({"prompt": "p"}))
        .await;
    assert_eq!(out.blocked.as_deref(), Some("no"));
    assert_eq!(out.system_messages, vec!["warned".to_owned()]);
    let out = e
        .fire(
            HookEvent::PermissionRequest,
            json!({"tool_name": "Bash", "tool_input": {}}),
        )
        .await;
    let pr = out.permission_request.unwrap();
    assert_eq!(pr.behavior, PermissionBehavior::Allow);
    assert_eq!(pr.updated_permissions[0]["type"], "setMode");
    let out = e
        .fire(HookEvent::PermissionDenied, json!({"tool_name": "Bash"}))
        .await;
    assert!(out.retry);
    // `if` on a non-tool event: the hook never runs.
    let out = e
        .fire(HookEvent::PreCompact, json!({"trigger": "manual"}))
        .await;
    assert!(out.blocked.is_none() && out.records.is_empty());
    assert_eq!(out.decision, None::<HookDecision>);
}
