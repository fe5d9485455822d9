//! The OTLP destination against a fixture collector: what spans and log records carry, and
//! at-least-once delivery through a collector that fails or is not there.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_audit::ship::{ShipOptions, Shipper, backlogs};
use toolgate_audit::{AuditLog, FsyncPolicy, read_records};
use toolgate_otel::OtlpDestination;
use toolgate_test_servers::Collector;

fn eventually(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn fast() -> ShipOptions {
    ShipOptions {
        poll: Duration::from_millis(20),
        max_backoff: Duration::from_millis(100),
        ..ShipOptions::default()
    }
}

fn allowed() -> Value {
    json!({
        "kind": "call", "ts": "2026-01-02T03:04:05.678Z", "session_id": "s-1", "call_id": "toolu_1",
        "client": "cli", "tool": "Read", "input": {"file_path": "a.txt"},
        "verdict": {"decision": "allow", "layer": "rule", "rule": "Read(./**)", "source": "project", "reason": "allowed"},
        "status": "ok", "duration_us": 1500
    })
}

fn denied() -> Value {
    json!({
        "kind": "call", "ts": "2026-01-02T03:04:06.000Z", "session_id": "s-1", "call_id": "toolu_2",
        "client": "cli", "tool": "Bash", "input": {"command": "curl -u bob:hunter2 https://x"},
        "verdict": {"decision": "deny", "layer": "rule", "rule": "Bash(curl:*)", "source": "managed", "reason": "no"},
        "status": "error", "code": "denied", "duration_us": 80
    })
}

/// A log with a shipper to `collector` that has started (its checkpoint is at the end).
fn shipping_to(url: &str) -> (tempfile::TempDir, Arc<AuditLog>, Shipper) {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(AuditLog::open(dir.path().join("audit.jsonl"), FsyncPolicy::Never).unwrap());
    log.append(&json!({"kind": "call", "tool": "Old", "status": "ok"}))
        .unwrap();
    let dest = Arc::new(OtlpDestination::new(url, HashMap::new()).unwrap());
    let shipper = Shipper::start(Arc::clone(&log), dest, fast()).unwrap();
    let path = log.path().to_owned();
    eventually("the shipper's checkpoint", || !backlogs(&path).is_empty());
    (dir, log, shipper)
}

#[test]
fn a_call_is_a_span_and_every_record_a_log_record() {
    let collector = Collector::start();
    let (_d, log, shipper) = shipping_to(&collector.url());
    log.append(&allowed()).unwrap();
    log.append(&denied()).unwrap();
    log.append(
        &json!({"kind": "network", "session_id": "s-1", "call_id": "toolu_2", "tool": "Bash",
                       "input": {"host": "example.com"}, "status": "error", "code": "denied"}),
    )
    .unwrap();
    eventually("2 spans and 3 log records", || {
        collector.spans().len() == 2 && collector.logs().len() == 3
    });
    shipper.stop();
    let spans = collector.spans();
    let read = &spans[0];
    assert_eq!(read.name, "execute_tool Read");
    let a = &read.attributes;
    assert_eq!(a["gen_ai.tool.name"], "Read");
    assert_eq!(a["gen_ai.tool.call.id"], "toolu_1");
    assert_eq!(a["session.id"], "s-1");
    assert_eq!(a["toolgate.decision"], "allow");
    assert_eq!(a["toolgate.layer"], "rule");
    assert_eq!(a["toolgate.rule"], "Read(./**)");
    assert_eq!(a["toolgate.duration_us"], "1500");
    assert_eq!(read.error, None);
    assert_eq!(
        read.times.1 - read.times.0,
        1_500_000,
        "the span lasts duration_us"
    );
    let bash = &spans[1];
    assert_eq!(bash.attributes["toolgate.decision"], "deny");
    assert_eq!(bash.attributes["toolgate.rule"], "Bash(curl:*)");
    assert_eq!(bash.attributes["error.type"], "denied");
    assert_eq!(bash.error.as_deref(), Some("denied"));
    // The old record (before the shipper started) is not sent: telemetry starts now.
    assert!(spans.iter().all(|s| s.name != "execute_tool Old"));
    // Log records: the audit line itself, linked to its span; the secret stays redacted.
    let logs = collector.logs();
    let lines: Vec<String> = read_records(log.path())
        .unwrap()
        .skip(1)
        .map(|e| e.unwrap().value.to_string())
        .collect();
    for (l, line) in logs.iter().zip(&lines) {
        let sent: Value = serde_json::from_str(&l.body).unwrap();
        assert_eq!(&sent.to_string(), line);
        assert!(!l.body.contains("hunter2"), "{}", l.body);
    }
    assert_eq!(logs[0].trace_id, read.trace_id);
    assert_eq!(logs[1].attributes["error.type"], "denied");
    assert_eq!(logs[2].attributes["toolgate.audit.kind"], "network");
    assert_eq!(logs[2].trace_id, "", "only calls have spans");
}

#[test]
fn a_collector_that_answers_500_gets_every_record_once_it_recovers() {
    let collector = Collector::start();
    let (_d, log, shipper) = shipping_to(&collector.url());
    collector.fail_next(3);
    for i in 0..20 {
        let mut r = allowed();
        r["call_id"] = json!(format!("c{i}"));
        log.append(&r).unwrap();
    }
    eventually("all 20 calls", || {
        let ids: std::collections::BTreeSet<String> = collector
            .spans()
            .iter()
            .filter_map(|s| s.attributes.get("gen_ai.tool.call.id").cloned())
            .collect();
        ids.len() == 20
    });
    let path = log.path().to_owned();
    eventually("the recovery noted and shipped", || {
        backlogs(&path)[0].pending == 0
            && read_records(&path)
                .unwrap()
                .any(|e| e.unwrap().value["status"] == "recovered")
    });
    shipper.stop();
    assert_eq!(collector.refused(), 3);
    let notes: Vec<Value> = read_records(&path)
        .unwrap()
        .map(|e| e.unwrap().value)
        .filter(|v| v["kind"] == "delivery")
        .collect();
    assert_eq!(notes[0]["status"], "failing");
    assert!(
        notes[0]["error"].as_str().unwrap().contains("500"),
        "{}",
        notes[0]
    );
    assert_eq!(notes[1]["status"], "recovered");
    // The failing note itself reached the collector as a log record.
    assert!(
        collector
            .logs()
            .iter()
            .any(|l| l.body.contains("\"failing\""))
    );
}

#[test]
fn while_no_collector_listens_records_wait_in_the_log_and_the_backlog_says_so() {
    let port = toolgate_test_servers::free_port();
    let url = format!("http://127.0.0.1:{port}");
    let (_d, log, shipper) = shipping_to(&url);
    for i in 0..5 {
        let mut r = allowed();
        r["call_id"] = json!(format!("c{i}"));
        log.append(&r).unwrap();
    }
    let path = log.path().to_owned();
    eventually("a failing checkpoint", || {
        backlogs(&path)[0].checkpoint.failing_since.is_some()
    });
    let b = &backlogs(&path)[0];
    assert!(b.pending >= 5, "{b:?}");
    assert!(b.checkpoint.last_error.is_some());
    assert_eq!(b.checkpoint.destination, url_describe(port));
    let collector = Collector::start_on(port);
    eventually("delivered after the collector came up", || {
        backlogs(&path)[0].pending == 0 && collector.spans().len() >= 5
    });
    shipper.stop();
    assert!(backlogs(&path)[0].checkpoint.failing_since.is_none());
}

fn url_describe(port: u16) -> String {
    format!("otlp http://127.0.0.1:{port}")
}
