//! The file sink behind a real gate: a call's answer comes back only once its record is in
//! the log, concurrent calls share writes, and a dropped call is still recorded.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_audit::{FileAudit, FsyncPolicy, VerifyStatus, read_records, verify};
use toolgate_core::stages::AuditSink;
use toolgate_core::{Gate, Registry, ToolContext, ToolError, TypedTool};
use toolgate_protocol::*;

struct Echo(ToolSpec);

#[derive(Deserialize)]
struct EchoInput {
    text: String,
    #[serde(default)]
    sleep_ms: u64,
}

#[async_trait]
impl TypedTool for Echo {
    type Input = EchoInput;
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, input: EchoInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        if input.sleep_ms > 0 {
            tokio::time::sleep(Duration::from_millis(input.sleep_ms)).await;
        }
        Ok(ToolOutput::text(input.text))
    }
}

fn gate(dir: &std::path::Path, sink: Arc<FileAudit>) -> Gate {
    let spec = ToolSpec {
        name: "Echo".into(),
        version: "1".into(),
        description: "Echoes text".into(),
        input_schema: json!({"type": "object",
            "properties": {"text": {"type": "string"}, "sleep_ms": {"type": "integer"}},
            "required": ["text"], "additionalProperties": false}),
        output_schema: None,
        annotations: ToolAnnotations {
            read_only: true,
            ..Default::default()
        },
        concurrency: Concurrency::Shared,
        timeout: TimeoutSpec {
            default_ms: 60_000,
            max_ms: 60_000,
        },
        subject: Subject::None,
    };
    let registry = Registry::builder().register(Echo(spec)).build().unwrap();
    Gate::builder()
        .workspace(dir)
        .registry(registry)
        .policy(Arc::new(toolgate_core::stages::AllowAll))
        .audit(sink as Arc<dyn AuditSink>)
        .build()
        .unwrap()
}

fn call_ids(path: &std::path::Path) -> Vec<String> {
    read_records(path)
        .unwrap()
        .map(|e| {
            e.unwrap().value["call_id"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

#[test]
fn each_answer_follows_its_record_and_concurrent_calls_share_writes() {
    for (flavor, policy) in [
        ("current_thread", FsyncPolicy::Batch),
        ("multi_thread", FsyncPolicy::Always),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let sink = Arc::new(FileAudit::open(&path, policy).unwrap());
        let g = gate(dir.path(), Arc::clone(&sink));
        let rt = if flavor == "current_thread" {
            tokio::runtime::Builder::new_current_thread()
        } else {
            tokio::runtime::Builder::new_multi_thread()
        }
        .enable_all()
        .build()
        .unwrap();
        rt.block_on(async {
            let calls = (0..16).map(|i| {
                let (g, path) = (g.clone(), path.clone());
                async move {
                    let id = format!("c{i}");
                    let result = g
                        .execute(ToolCall::new(&id, "Echo", json!({"text": "hi"})))
                        .await;
                    assert!(!result.is_error(), "{result:?}");
                    // The answer is back: its record must be in the file already.
                    assert!(
                        call_ids(&path).contains(&id),
                        "{flavor}: {id} answered unrecorded"
                    );
                }
            });
            futures::future::join_all(calls).await;
        });
        let stats = sink.log().writer_stats();
        assert_eq!(stats.records, 16, "{flavor}");
        assert!(
            stats.batches < 16,
            "{flavor}: no group was formed: {stats:?}"
        );
        drop(g);
        drop(sink);
        let r = verify(&path).unwrap();
        assert_eq!((r.status, r.records), (VerifyStatus::Ok, 16), "{flavor}");
    }
}

#[test]
fn a_call_dropped_mid_flight_is_recorded_as_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = Arc::new(FileAudit::open(&path, FsyncPolicy::Always).unwrap());
    let g = gate(dir.path(), Arc::clone(&sink));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let slow = g.execute(ToolCall::new(
            "slow",
            "Echo",
            json!({"text": "x", "sleep_ms": 60_000}),
        ));
        let quick = g.execute(ToolCall::new("quick", "Echo", json!({"text": "y"})));
        // The quick call finishes; the slow one is dropped while it sleeps.
        tokio::select! {
            _ = slow => panic!("the slow call finished"),
            r = quick => assert!(!r.is_error()),
        }
    });
    let records: Vec<Value> = read_records(&path)
        .unwrap()
        .map(|e| e.unwrap().value)
        .collect();
    let slow = records
        .iter()
        .find(|r| r["call_id"] == "slow")
        .unwrap_or_else(|| panic!("no record for the dropped call: {records:?}"));
    assert_eq!(slow["code"], "cancelled");
    assert_eq!(records.len(), 2);
}

#[test]
fn a_failed_write_refuses_the_next_call() {
    // A log on a full device: /dev/full accepts the open and fails every write.
    let log = toolgate_audit::AuditLog::open("/dev/full", FsyncPolicy::Never).unwrap();
    let sink = Arc::new(FileAudit::new(log));
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path(), Arc::clone(&sink));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let first = g
            .execute(ToolCall::new("1", "Echo", json!({"text": "a"})))
            .await;
        assert!(!first.is_error(), "the call itself ran: {first:?}");
        let second = g
            .execute(ToolCall::new("2", "Echo", json!({"text": "b"})))
            .await;
        assert_eq!(
            second.error().map(|e| e.code),
            Some(ErrorCode::AuditUnavailable),
            "{second:?}"
        );
    });
}
