//! Replacing a gate's policy while it serves calls: a call in flight finishes under the
//! stages it started with (its decision, post-hooks and output shaping all from one
//! version), calls that start after the swap get the new ones, every session and clone of
//! the gate sees the swap, and the record names the version that decided.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use serde_json::json;
use toolgate_core::stages::{
    AllowAll, AuditSink, HookRequest, HookStage, PostHookOutcome, PreHookOutcome,
};
use toolgate_core::{Gate, SessionOptions, StageSet};
use toolgate_protocol::*;

/// Post-hooks that add one note naming their version.
struct Tagging(&'static str);

#[async_trait]
impl HookStage for Tagging {
    async fn pre_tool_use(&self, _request: &HookRequest<'_>) -> PreHookOutcome {
        PreHookOutcome::default()
    }

    async fn post_tool_use(
        &self,
        _request: &HookRequest<'_>,
        _result: &Result<ToolOutput, CallError>,
        _duration_ms: u64,
    ) -> PostHookOutcome {
        PostHookOutcome {
            additional_context: vec![format!("post-hook of {}", self.0)],
            ..Default::default()
        }
    }
}

fn version(name: &'static str, policy: Arc<dyn toolgate_core::stages::PolicyStage>) -> StageSet {
    StageSet {
        policy,
        hooks: Arc::new(Tagging(name)),
        version: Some(Arc::from(name)),
        ..StageSet::default()
    }
}

fn decide_note(record: &CallRecord) -> Option<String> {
    record
        .stages
        .iter()
        .find(|s| s.stage == Stage::Decide)
        .and_then(|s| s.note.clone())
}

#[tokio::test]
async fn a_call_in_flight_finishes_under_the_policy_it_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let audit = Arc::new(MemoryAudit::default());
    let gate = Gate::builder()
        .workspace(dir.path())
        .registry(registry(&Timeline::default()))
        .stages(version("v1", Arc::new(AllowAll)))
        .audit(audit.clone() as Arc<dyn AuditSink>)
        .build()
        .unwrap();
    let other_session = gate.new_session(SessionOptions::default(), None).unwrap();

    // A slow call starts under v1 …
    let slow = {
        let gate = gate.clone();
        tokio::spawn(async move {
            gate.execute(ToolCall::new(
                "slow",
                "Reader",
                json!({"text": "secret plans", "sleep_ms": 300}),
            ))
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    // … v2 denies what v1 allowed and replaces v1 while it runs.
    let replaced = gate.replace_stages(version(
        "v2",
        Arc::new(WordPolicy {
            word: "secret".into(),
            decision: Decision::Deny,
        }),
    ));
    assert_eq!(replaced.version.as_deref(), Some("v1"));

    let slow = slow.await.unwrap();
    assert!(!slow.is_error(), "{slow:?}");
    assert_eq!(slow.additional_context, ["post-hook of v1"]);

    // New calls, in this session and in one opened before the swap, are v2's.
    for g in [&gate, &other_session] {
        let denied = g
            .execute(ToolCall::new("after", "Reader", json!({"text": "secret"})))
            .await;
        assert_eq!(denied.error().map(|e| e.code), Some(ErrorCode::Denied));
        let fine = g
            .execute(ToolCall::new("fine", "Reader", json!({"text": "hello"})))
            .await;
        assert_eq!(fine.additional_context, ["post-hook of v2"]);
    }

    let records = audit.records.lock().unwrap().clone();
    let by_id = |id: &str| -> Vec<Option<String>> {
        records
            .iter()
            .filter(|r| r.call_id == id)
            .map(decide_note)
            .collect()
    };
    assert_eq!(by_id("slow"), [Some("policy v1".to_owned())]);
    assert_eq!(by_id("after"), vec![Some("policy v2".to_owned()); 2]);
    assert_eq!(gate.stage_set().version.as_deref(), Some("v2"));
}

#[tokio::test]
async fn an_unversioned_policy_adds_no_note() {
    let dir = tempfile::tempdir().unwrap();
    let audit = Arc::new(MemoryAudit::default());
    let gate = Gate::builder()
        .workspace(dir.path())
        .registry(registry(&Timeline::default()))
        .policy(Arc::new(AllowAll))
        .audit(audit.clone() as Arc<dyn AuditSink>)
        .build()
        .unwrap();
    let r = gate
        .execute(ToolCall::new("1", "Reader", json!({"text": "x"})))
        .await;
    assert!(!r.is_error());
    assert_eq!(decide_note(&audit.records.lock().unwrap()[0]), None);
}
