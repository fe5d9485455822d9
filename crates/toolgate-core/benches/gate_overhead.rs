//! The gate's own cost per call: a no-op tool behind every stage, with the audit log written
//! to a temp file (fsync `never`, so the disk is not what is measured). Target: well under
//! 20 µs per call, also with the audit log at 16 calls in flight.
//!
//! The `/16` rows run 16 calls at once and report the wall time per call: on the
//! multi-threaded runtime (one worker per core, as `serve --http` and `exec`) each call is
//! its own task; on the current-thread runtime (as stdio `serve`) the 16 share one thread.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use serde_json::json;
use toolgate_audit::{FileAudit, FsyncPolicy};
use toolgate_core::{Gate, Registry, ToolContext, ToolError, TypedTool};
use toolgate_protocol::*;

struct Noop(ToolSpec);

#[derive(Deserialize)]
struct NoopInput {
    #[allow(dead_code)]
    file_path: String,
}

#[async_trait]
impl TypedTool for Noop {
    type Input = NoopInput;
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, _input: NoopInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

fn gate(dir: &std::path::Path, audit: bool) -> Gate {
    let spec = ToolSpec {
        name: "Noop".into(),
        version: "1".into(),
        description: "does nothing".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["file_path"],
            "additionalProperties": false
        }),
        output_schema: None,
        annotations: ToolAnnotations {
            read_only: true,
            ..Default::default()
        },
        concurrency: Concurrency::Shared,
        timeout: TimeoutSpec {
            default_ms: 1000,
            max_ms: 1000,
        },
        subject: Subject::Path {
            field: "file_path".into(),
            writes: false,
        },
    };
    let registry = Registry::builder()
        .register(Noop(spec))
        .build()
        .expect("registry");
    let mut b = Gate::builder()
        .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
        .workspace(dir)
        .registry(registry);
    if audit {
        let sink = FileAudit::open(&dir.join("audit.jsonl"), FsyncPolicy::Never).expect("audit");
        b = b.audit(Arc::new(sink));
    }
    b.build().expect("gate")
}

/// Calls in flight in the concurrent rows.
const IN_FLIGHT: u32 = 16;

/// Runs `iters` rounds of [`IN_FLIGHT`] concurrent calls; returns the time per call.
fn concurrent(
    rt: &tokio::runtime::Runtime,
    gate: &Gate,
    call: &ToolCall,
    iters: u64,
    spawn: bool,
) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        rt.block_on(async {
            if spawn {
                let tasks: Vec<_> = (0..IN_FLIGHT)
                    .map(|_| {
                        let (g, c) = (gate.clone(), call.clone());
                        tokio::spawn(async move { g.execute(c).await })
                    })
                    .collect();
                for t in tasks {
                    black_box(t.await.expect("task"));
                }
            } else {
                let calls = (0..IN_FLIGHT).map(|_| gate.execute(call.clone()));
                black_box(futures::future::join_all(calls).await);
            }
        });
    }
    start.elapsed() / IN_FLIGHT
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let call = ToolCall::new("toolu_1", "Noop", json!({"file_path": "/ws/src/main.rs"}));
    for (name, audit) in [
        ("gate_overhead/audited", true),
        ("gate_overhead/no_audit", false),
    ] {
        let g = gate(dir.path(), audit);
        c.bench_function(name, |b| {
            b.iter(|| rt.block_on(g.execute(call.clone())));
        });
    }
    let multi = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("rt");
    for (name, audit) in [("audited", true), ("no_audit", false)] {
        let g = gate(dir.path(), audit);
        c.bench_function(&format!("gate_overhead/{name}/16/multi_thread"), |b| {
            b.iter_custom(|iters| concurrent(&multi, &g, &call, iters, true));
        });
        c.bench_function(&format!("gate_overhead/{name}/16/current_thread"), |b| {
            b.iter_custom(|iters| concurrent(&rt, &g, &call, iters, false));
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
