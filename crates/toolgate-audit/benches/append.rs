//! Cost of one `AuditLog::append` of a typical call record, without fsync.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use toolgate_audit::{AuditLog, AuditOptions, FsyncPolicy, Redactor};

fn record(i: u64) -> serde_json::Value {
    json!({
        "kind": "call",
        "ts": "2025-01-01T00:00:00.000Z",
        "session_id": "0b9a3c2e-5d1f-4c8e-9a7b-1f2e3d4c5b6a",
        "call_id": format!("toolu_{i:020}"),
        "tool": "Bash",
        "input": {"command": "cargo test -p toolgate-audit -- --nocapture", "timeout": 120000},
        "stages": [
            {"stage": "resolve", "status": "pass"},
            {"stage": "schema", "status": "pass"},
            {"stage": "decide", "status": "pass",
             "verdict": {"decision": "allow", "layer": "rule", "rule": "Bash(cargo test:*)",
                         "source": ".toolgate/settings.json", "reason": "allowed by rule"}},
            {"stage": "execute", "status": "pass"}
        ],
        "status": "ok",
        "duration_us": 1234,
        "input_bytes": 80,
        "output_bytes": 4096
    })
}

fn bench_append(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, redactor) in [
        ("redacted", Redactor::default()),
        ("unredacted", Redactor::disabled()),
    ] {
        let path = dir.path().join(format!("{name}.jsonl"));
        let log = AuditLog::open_with(
            &path,
            AuditOptions {
                fsync: FsyncPolicy::Never,
                redactor,
                ..AuditOptions::default()
            },
        )
        .expect("open");
        let rec = record(7);
        c.bench_function(&format!("append/{name}/fsync=never"), |b| {
            b.iter(|| log.append(black_box(&rec)).expect("append"))
        });
        // 16 records handed over at once and awaited, as 16 calls in flight do: one group.
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        c.bench_function(&format!("append/{name}/fsync=never/16"), |b| {
            b.iter_custom(|iters| {
                let start = std::time::Instant::now();
                for _ in 0..iters {
                    rt.block_on(async {
                        let tickets = (0..16).map(|_| log.submit(black_box(&rec)).expect("submit"));
                        for r in futures::future::join_all(tickets).await {
                            r.expect("append");
                        }
                    });
                }
                start.elapsed() / 16
            })
        });
        let stats = log.writer_stats();
        eprintln!(
            "{name}: {} records in {} writes",
            stats.records, stats.batches
        );
    }
}

criterion_group!(benches, bench_append);
criterion_main!(benches);
