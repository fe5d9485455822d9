//! The gate through its public door: every error code, hooks, prompts, batches,
//! cancellation and audit records.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_core::stages::AuditSink;
use toolgate_core::{Gate, GateBuilder, Limits, SessionOptions, ViewOptions};
use toolgate_protocol::*;

struct Fixture {
    _dir: tempfile::TempDir,
    audit: Arc<MemoryAudit>,
    timeline: Timeline,
}

fn fixture() -> (Fixture, GateBuilder) {
    let dir = tempfile::tempdir().unwrap();
    let audit = Arc::new(MemoryAudit::default());
    let timeline: Timeline = Arc::default();
    let builder = Gate::builder()
        .workspace(dir.path())
        .registry(registry(&timeline))
        .policy(Arc::new(toolgate_core::stages::AllowAll))
        .audit(audit.clone() as Arc<dyn AuditSink>)
        .limits(Limits {
            spill_dir: Some(dir.path().join("spill")),
            ..Limits::default()
        });
    (
        Fixture {
            _dir: dir,
            audit,
            timeline,
        },
        builder,
    )
}

fn call(name: &str, input: serde_json::Value) -> ToolCall {
    ToolCall::new(format!("id-{name}"), name, input)
}

fn code(r: &CallResult) -> Option<ErrorCode> {
    r.error().map(|e| e.code)
}

#[tokio::test]
async fn success_returns_output_and_one_audit_record() {
    let (fx, b) = fixture();
    let gate = b.build().unwrap();
    let r = gate
        .execute(call(
            "Reader",
            json!({"text": "hello", "api_key": "sk-secret"}),
        ))
        .await;
    assert_eq!(r.output().unwrap().joined_text(), "hello");
    let records = fx.audit.records.lock().unwrap();
    assert_eq!(records.len(), 1);
    let rec = &records[0];
    assert_eq!(rec.status, toolgate_protocol::CallStatus::Ok);
    assert_eq!(
        rec.input["api_key"], "[REDACTED]",
        "inputs are redacted before recording"
    );
    let stages: Vec<u8> = rec.stages.iter().map(|s| s.stage.number()).collect();
    assert_eq!(stages, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    assert_eq!(rec.output_bytes, 5);
}

#[tokio::test]
async fn unknown_tool_suggests_near_names_and_is_audited() {
    let (fx, b) = fixture();
    let gate = b.build().unwrap();
    let r = gate.execute(call("read", json!({}))).await;
    assert_eq!(code(&r), Some(ErrorCode::UnknownTool));
    let err = r.error().unwrap();
    assert_eq!(err.stage, Stage::Resolve);
    assert!(err.message.contains("`Read`"), "{}", err.message);
    assert_eq!(err.details["near"][0], "Read");
    let records = fx.audit.records.lock().unwrap();
    assert_eq!(records.len(), 1, "stage-1 failures are audited too");
    assert_eq!(records[0].code, Some(ErrorCode::UnknownTool));
}

#[tokio::test]
async fn deferred_tool_is_not_loaded() {
    let (_fx, b) = fixture();
    let gate = b
        .view(ViewOptions {
            deferred: vec!["mcp__gh__issues".into()],
            ..Default::default()
        })
        .build()
        .unwrap();
    let r = gate.execute(call("mcp__gh__issues", json!({}))).await;
    assert_eq!(code(&r), Some(ErrorCode::ToolNotLoaded));
    assert!(r.error().unwrap().message.contains("ToolSearch"));
    // Anthropic's format sends it flagged `defer_loading`; the others leave it out.
    let defs = gate.view().definitions(wire::Format::Anthropic);
    let def = defs
        .iter()
        .find(|d| d["name"] == "mcp__gh__issues")
        .unwrap();
    assert_eq!(def["defer_loading"], true);
    assert!(
        gate.view()
            .definitions(wire::Format::Mcp)
            .iter()
            .all(|d| d["name"] != "mcp__gh__issues")
    );
}

#[tokio::test]
async fn schema_errors_carry_json_pointers() {
    let (_fx, b) = fixture();
    let gate = b.build().unwrap();
    let r = gate
        .execute(call(
            "Reader",
            json!({"text": 3, "sleep_ms": -1, "extra": true}),
        ))
        .await;
    let err = r.error().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    let pointers: Vec<&str> = err.details["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["pointer"].as_str().unwrap())
        .collect();
    assert!(pointers.contains(&"/text"), "{pointers:?}");
    assert!(pointers.contains(&"/sleep_ms"), "{pointers:?}");
    assert!(
        pointers.contains(&""),
        "the extra field is reported at the root: {pointers:?}"
    );
    // Wrong top-level type.
    let r = gate.execute(call("Reader", json!("a string"))).await;
    assert_eq!(code(&r), Some(ErrorCode::InvalidInput));
}

#[tokio::test]
async fn oversized_input_is_refused_without_echoing_it() {
    let (_fx, b) = fixture();
    let gate = b.build().unwrap();
    let big = "x".repeat(10 * 1024 * 1024);
    let r = gate.execute(call("Reader", json!({ "text": big }))).await;
    let err = r.error().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(
        err.message.len() < 500,
        "the message does not echo the input"
    );
}

#[tokio::test]
async fn semantic_rejection_is_invalid_request() {
    let (_fx, b) = fixture();
    let gate = b.build().unwrap();
    let r = gate.execute(call("Reader", json!({"reject": true}))).await;
    assert_eq!(code(&r), Some(ErrorCode::InvalidRequest));
    assert_eq!(r.error().unwrap().stage, Stage::Validate);
}

#[tokio::test]
async fn policy_denial_names_rule_layer_and_source() {
    let (fx, b) = fixture();
    let gate = b
        .policy(Arc::new(WordPolicy {
            word: "secret".into(),
            decision: Decision::Deny,
        }))
        .build()
        .unwrap();
    let r = gate
        .execute(call("Reader", json!({"text": "secret stuff"})))
        .await;
    let err = r.error().unwrap();
    assert_eq!(err.code, ErrorCode::Denied);
    assert_eq!(err.layer, Some(Layer::Rule));
    assert!(err.message.contains("Reader(secret*)") && err.message.contains("test settings"));
    assert!(
        fx.timeline.lock().unwrap().is_empty(),
        "a denied tool never runs"
    );
    let ok = gate.execute(call("Reader", json!({"text": "fine"}))).await;
    assert!(ok.output().is_some());
}

#[tokio::test]
async fn ask_goes_to_the_prompter() {
    let (_fx, b) = fixture();
    let policy = Arc::new(WordPolicy {
        word: "maybe".into(),
        decision: Decision::Ask,
    });
    let gate = b.policy(policy.clone()).build().unwrap();
    let r = gate.execute(call("Reader", json!({"text": "maybe"}))).await;
    assert_eq!(
        code(&r),
        Some(ErrorCode::Denied),
        "the default prompter denies"
    );
    assert_eq!(r.error().unwrap().layer, Some(Layer::User));

    let (_fx, b) = fixture();
    let gate = b
        .policy(policy)
        .prompter(Arc::new(FixedPrompter(Decision::Allow)))
        .build()
        .unwrap();
    let r = gate.execute(call("Reader", json!({"text": "maybe"}))).await;
    assert!(r.output().is_some());
    assert_eq!(r.verdict.unwrap().layer, Layer::User);
}

/// A prompter that hands every question to its front door (MCP `input_required`), or one
/// that gives the policy's ask back undecided.
struct Deferring(bool);

#[async_trait::async_trait]
impl toolgate_core::stages::Prompter for Deferring {
    async fn ask(
        &self,
        _request: &toolgate_core::stages::DecisionRequest<'_>,
        verdict: &Verdict,
    ) -> Verdict {
        if self.0 {
            Verdict::awaiting_input(verdict, "the client asks its user")
        } else {
            verdict.clone()
        }
    }
}

#[tokio::test]
async fn a_question_handed_to_the_front_door_waits_unrun_and_is_recorded_as_waiting() {
    let (fx, b) = fixture();
    let policy = Arc::new(WordPolicy {
        word: "maybe".into(),
        decision: Decision::Ask,
    });
    let gate = b
        .policy(policy.clone())
        .prompter(Arc::new(Deferring(true)))
        .build()
        .unwrap();
    let r = gate.execute(call("Writer", json!({"text": "maybe"}))).await;
    let err = r.error().unwrap();
    assert_eq!(err.code, ErrorCode::InputRequired);
    assert_eq!((err.stage, err.layer), (Stage::Decide, Some(Layer::User)));
    assert!(fx.timeline.lock().unwrap().is_empty(), "nothing ran");
    let records = fx.audit.records.lock().unwrap().clone();
    assert_eq!(records.len(), 1);
    let rec = &records[0];
    assert_eq!(rec.code, Some(ErrorCode::InputRequired));
    let v = rec.verdict.as_ref().unwrap();
    assert!(v.is_awaiting_input(), "neither allowed nor denied: {v:?}");
    assert_eq!(
        v.rule.as_deref(),
        Some("Reader(maybe*)"),
        "the asking rule is kept"
    );
    let decide = rec
        .stages
        .iter()
        .find(|s| s.stage == Stage::Decide)
        .unwrap();
    assert_eq!(
        decide.note.as_deref(),
        Some("waiting for the user's answer")
    );

    // An undecided answer that is not a hand-off is still a no.
    let (_fx, b) = fixture();
    let gate = b
        .policy(policy)
        .prompter(Arc::new(Deferring(false)))
        .build()
        .unwrap();
    let r = gate.execute(call("Writer", json!({"text": "maybe"}))).await;
    assert_eq!(code(&r), Some(ErrorCode::Denied));
}

#[tokio::test]
async fn hook_deny_wins_and_is_recorded() {
    let (fx, b) = fixture();
    let gate = b.hooks(Arc::new(ScriptedHooks::default())).build().unwrap();
    let r = gate
        .execute(call("Reader", json!({"text": "hook-deny"})))
        .await;
    assert_eq!(code(&r), Some(ErrorCode::Denied));
    assert_eq!(r.error().unwrap().layer, Some(Layer::Hook));
    let records = fx.audit.records.lock().unwrap();
    assert_eq!(records[0].hooks[0].outcome, "deny");
}

#[tokio::test]
async fn hook_rewrite_is_validated_again() {
    let (fx, b) = fixture();
    let hooks = Arc::new(ScriptedHooks::default());
    let gate = b.hooks(hooks.clone()).build().unwrap();
    let r = gate
        .execute(call("Reader", json!({"text": "hook-rewrite-bad"})))
        .await;
    let err = r.error().unwrap();
    assert_eq!(
        err.code,
        ErrorCode::InvalidInput,
        "a hook cannot smuggle an invalid input past stage 2"
    );
    assert!(err.message.contains("hook"));

    let r = gate
        .execute(call("Reader", json!({"text": "hook-rewrite-good"})))
        .await;
    assert_eq!(r.output().unwrap().joined_text(), "rewritten");
    assert_eq!(r.additional_context, vec!["note from hook".to_owned()]);
    assert!(r.model_text().ends_with("note from hook"));
    assert_eq!(
        fx.audit.records.lock().unwrap()[1].input["text"],
        "rewritten"
    );
    assert_eq!(hooks.post_calls.lock().unwrap().as_slice(), ["Reader:ok"]);
}

#[tokio::test]
async fn rate_limit_from_constraints() {
    let (_fx, b) = fixture();
    let gate = b
        .constraints(Arc::new(CountLimit {
            max: 1,
            seen: Mutex::new(0),
        }))
        .build()
        .unwrap();
    assert!(
        gate.execute(call("Reader", json!({})))
            .await
            .output()
            .is_some()
    );
    let r = gate.execute(call("Reader", json!({}))).await;
    assert_eq!(code(&r), Some(ErrorCode::RateLimited));
}

struct RequiredButMissing;
impl toolgate_core::sandbox::SandboxStage for RequiredButMissing {
    fn select(
        &self,
        _request: &toolgate_core::sandbox::SandboxRequest<'_>,
    ) -> Result<
        Option<Arc<dyn toolgate_core::sandbox::Room>>,
        toolgate_core::sandbox::SandboxUnavailable,
    > {
        Err(toolgate_core::sandbox::SandboxUnavailable::new(
            "user namespaces are disabled",
        ))
    }
}

#[tokio::test]
async fn required_sandbox_that_cannot_start_refuses_the_call() {
    let (fx, b) = fixture();
    let gate = b.sandbox(Arc::new(RequiredButMissing)).build().unwrap();
    let r = gate.execute(call("Writer", json!({}))).await;
    assert_eq!(code(&r), Some(ErrorCode::SandboxUnavailable));
    assert!(r.error().unwrap().message.contains("user namespaces"));
    assert!(
        fx.timeline.lock().unwrap().is_empty(),
        "never run silently unsandboxed"
    );
}

#[tokio::test]
async fn unwritable_audit_refuses_the_call() {
    let (fx, b) = fixture();
    *fx.audit.broken.lock().unwrap() = Some("disk full".into());
    let gate = b.build().unwrap();
    let r = gate.execute(call("Writer", json!({}))).await;
    assert_eq!(code(&r), Some(ErrorCode::AuditUnavailable));
    assert!(
        fx.timeline.lock().unwrap().is_empty(),
        "nothing runs unaudited"
    );
}

#[tokio::test]
async fn timeouts_stop_the_tool() {
    let (_fx, b) = fixture();
    let gate = b.build().unwrap();
    // Asks for 10 ms, but sleeps 60 s; the gate stops it after the timeout plus grace.
    let started = std::time::Instant::now();
    let r = gate
        .execute(call("Reader", json!({"sleep_ms": 60_000, "timeout": 10})))
        .await;
    assert_eq!(code(&r), Some(ErrorCode::Timeout));
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(r.error().unwrap().message.contains("10 ms"));
    // The gate reads a timeout only from what the tool asks for: a `timeout` field the tool
    // keeps to itself (an upstream MCP tool's own parameter) does not stop it.
    let r = gate
        .execute(call(
            "Reader",
            json!({"sleep_ms": 300, "timeout": 10, "private_timeout": true}),
        ))
        .await;
    assert!(r.output().is_some(), "{}", r.model_text());
}

#[tokio::test]
async fn failures_and_panics_are_execution_failed() {
    let (_fx, b) = fixture();
    let gate = b.build().unwrap();
    let r = gate.execute(call("Reader", json!({"fail": true}))).await;
    assert_eq!(code(&r), Some(ErrorCode::ExecutionFailed));
    let r = gate.execute(call("Reader", json!({"panic": true}))).await;
    assert_eq!(code(&r), Some(ErrorCode::ExecutionFailed));
    assert!(r.error().unwrap().message.contains("internal error"));
    // The gate still works afterwards.
    assert!(
        gate.execute(call("Reader", json!({})))
            .await
            .output()
            .is_some()
    );
}

/// A policy stage with a bug.
struct PanickingPolicy;
impl toolgate_core::stages::PolicyStage for PanickingPolicy {
    fn decide(&self, _request: &toolgate_core::stages::DecisionRequest<'_>) -> Verdict {
        panic!("policy bug")
    }
}

#[tokio::test]
async fn a_panic_outside_the_tool_is_answered_and_recorded() {
    let (fx, b) = fixture();
    let gate = b.policy(Arc::new(PanickingPolicy)).build().unwrap();
    let r = gate.execute(call("Reader", json!({"text": "x"}))).await;
    let e = r.error().unwrap();
    assert_eq!(e.code, ErrorCode::ExecutionFailed);
    assert_eq!(e.stage, Stage::Decide);
    assert!(e.message.contains("internal error") && e.message.contains("policy bug"));
    // The tool never ran, and the one record says where the call stopped and why.
    assert!(fx.timeline.lock().unwrap().is_empty());
    let records = fx.audit.records.lock().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].code, Some(ErrorCode::ExecutionFailed));
    let last = records[0].stages.last().unwrap();
    assert_eq!(
        (last.stage, last.status),
        (Stage::Decide, StageStatus::Fail)
    );
    assert!(last.note.as_deref().unwrap_or("").contains("policy bug"));
}

#[tokio::test]
async fn explicit_cancellation_is_recorded() {
    let (fx, b) = fixture();
    let gate = b.build().unwrap();
    let token = CancellationToken::new();
    let t2 = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        t2.cancel();
    });
    let r = gate
        .execute_with_cancel(call("Reader", json!({"sleep_ms": 30_000})), token)
        .await;
    assert_eq!(code(&r), Some(ErrorCode::Cancelled));
    assert_eq!(
        fx.audit.records.lock().unwrap()[0].code,
        Some(ErrorCode::Cancelled)
    );
}

#[tokio::test]
async fn dropping_the_future_cancels_and_still_audits() {
    let (fx, b) = fixture();
    let gate = b.build().unwrap();
    let fut = gate.execute(call("Reader", json!({"sleep_ms": 30_000})));
    let _ = tokio::time::timeout(Duration::from_millis(50), fut).await;
    let records = fx.audit.records.lock().unwrap();
    assert_eq!(records.len(), 1, "exactly one record for the dropped call");
    assert_eq!(records[0].code, Some(ErrorCode::Cancelled));
    assert!(
        fx.timeline.lock().unwrap().is_empty(),
        "the tool did not finish"
    );
}

#[tokio::test]
async fn reject_records_requests_that_never_became_calls() {
    let (fx, b) = fixture();
    let gate = b.build().unwrap();
    let err = CallError::new(ErrorCode::MalformedCall, Stage::Resolve, "line 1: not JSON");
    let r = gate.reject(ToolCall::new("", "", serde_json::Value::Null), err);
    assert_eq!(code(&r), Some(ErrorCode::MalformedCall));
    assert_eq!(
        fx.audit.records.lock().unwrap()[0].code,
        Some(ErrorCode::MalformedCall)
    );
}

#[tokio::test]
async fn batch_runs_shared_in_parallel_and_exclusive_alone_in_order() {
    let (fx, b) = fixture();
    let gate = b.build().unwrap();
    let calls = vec![
        call("Reader", json!({"text": "r1", "sleep_ms": 300})),
        call("Reader", json!({"text": "r2", "sleep_ms": 300})),
        call("Reader", json!({"text": "r3", "sleep_ms": 300})),
        call("Writer", json!({"text": "w1", "sleep_ms": 100})),
        call("Writer", json!({"text": "w2", "sleep_ms": 100})),
        call("Reader", json!({"text": "r4", "sleep_ms": 50})),
        call("nope", json!({})),
    ];
    let results = gate.execute_batch(calls).await;
    let texts: Vec<String> = results
        .iter()
        .map(|r| {
            r.output()
                .map(|o| o.joined_text())
                .unwrap_or_else(|| "err".into())
        })
        .collect();
    assert_eq!(texts, ["r1", "r2", "r3", "w1", "w2", "r4", "err"]);

    let timeline = fx.timeline.lock().unwrap().clone();
    let span = |i: usize| (timeline[i].1, timeline[i].2);
    let overlaps =
        |a: (std::time::Instant, std::time::Instant),
         b: (std::time::Instant, std::time::Instant)| { a.0 < b.1 && b.0 < a.1 };
    let readers: Vec<usize> = (0..timeline.len())
        .filter(|&i| timeline[i].0 == "Reader")
        .collect();
    let writers: Vec<usize> = (0..timeline.len())
        .filter(|&i| timeline[i].0 == "Writer")
        .collect();
    assert!(
        overlaps(span(readers[0]), span(readers[1])),
        "shared calls overlap in time"
    );
    for &w in &writers {
        for i in 0..timeline.len() {
            if i != w {
                assert!(
                    !overlaps(span(w), span(i)),
                    "an exclusive call overlaps nothing"
                );
            }
        }
    }
}

#[tokio::test]
async fn sessions_are_independent() {
    let (fx, b) = fixture();
    let gate = b
        .session(SessionOptions {
            id: Some("s1".into()),
            ..Default::default()
        })
        .build()
        .unwrap();
    let other = gate
        .new_session(
            SessionOptions {
                id: Some("s2".into()),
                ..Default::default()
            },
            Some(ViewOptions {
                deny: vec!["Writer".into()],
                ..Default::default()
            }),
        )
        .unwrap();
    gate.execute(call("Writer", json!({}))).await;
    let r = other.execute(call("Writer", json!({}))).await;
    assert_eq!(
        code(&r),
        Some(ErrorCode::Denied),
        "the second session's view hides the writer, the first's does not"
    );
    let ids: Vec<String> = fx
        .audit
        .records
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.session_id.clone())
        .collect();
    assert_eq!(ids, ["s1", "s2"]);
}

#[tokio::test]
async fn long_results_are_capped_and_saved() {
    let (_fx, b) = fixture();
    let dir = tempfile::tempdir().unwrap();
    let gate = b
        .limits(Limits {
            max_result_bytes: 1000,
            spill_dir: Some(dir.path().to_path_buf()),
            ..Limits::default()
        })
        .build()
        .unwrap();
    let r = gate
        .execute(call(
            "Reader",
            json!({"text": "0123456789", "repeat": 1000}),
        ))
        .await;
    let text = r.output().unwrap().joined_text();
    assert!(text.len() < 1300, "{}", text.len());
    assert!(text.contains("bytes omitted"));
    let saved = std::fs::read_dir(dir.path().join(gate.session().id()))
        .unwrap()
        .count();
    assert_eq!(saved, 1);
}

#[tokio::test]
async fn without_a_policy_every_call_is_refused_unrun() {
    let dir = tempfile::tempdir().unwrap();
    let timeline: Timeline = Arc::default();
    let gate = Gate::builder()
        .workspace(dir.path())
        .registry(registry(&timeline))
        .build()
        .unwrap();
    let r = gate.execute(call("Reader", json!({}))).await;
    let err = r.error().unwrap();
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(
        err.message.contains("no permission policy"),
        "{}",
        err.message
    );
    assert!(timeline.lock().unwrap().is_empty());
}
