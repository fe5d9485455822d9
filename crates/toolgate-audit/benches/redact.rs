//! Cost of redaction per call: one typical call record (the audit writer's job) and small
//! strings with and without secrets, through the default redactor. Compare against
//! `git stash`-ed builds for before/after numbers (recorded in docs/audit.md).

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use toolgate_audit::Redactor;

fn record() -> serde_json::Value {
    json!({
        "kind": "call",
        "ts": "2025-01-01T00:00:00.000Z",
        "session_id": "0b9a3c2e-5d1f-4c8e-9a7b-1f2e3d4c5b6a",
        "call_id": "toolu_00000000000000000042",
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
        "duration_us": 1234
    })
}

fn bench_redact(c: &mut Criterion) {
    let r = Redactor::default();
    // Warm: compile whatever the inputs trigger, as a long-running process would have.
    let mut warm = record();
    r.redact(&mut warm);
    c.bench_function("redact/call_record", |b| {
        b.iter_batched(
            record,
            |mut v| {
                r.redact(&mut v);
                black_box(v)
            },
            criterion::BatchSize::SmallInput,
        );
    });
    for (name, text) in [
        (
            "plain_command",
            "cargo test -p toolgate-audit -- --nocapture",
        ),
        ("path", "crates/toolgate-audit/src/redact.rs"),
        ("api_words", "grep -rn api_key src/auth/token.rs"),
        (
            "stripe_key",
            "curl -u sk_live_4eC39HqLyjWDarjtT1zdp7dc: https://api.stripe.com",
        ),
    ] {
        let _ = r.redact_str(text);
        c.bench_function(&format!("redact_str/{name}"), |b| {
            b.iter(|| black_box(r.redact_str(black_box(text))));
        });
    }
}

criterion_group!(benches, bench_redact);
criterion_main!(benches);
