//! Stats, tail, follow and redaction through the writer.

mod common;

use serde_json::{Value, json};
use toolgate_audit::{AuditLog, Follower, FsyncPolicy, Stats, read_records, stats, tail};
use toolgate_protocol::{
    CallRecord, Decision, ErrorCode, HookRecord, Layer, Stage, StageRecord, StageStatus, Verdict,
};

fn record(tool: &str, code: Option<ErrorCode>, duration_us: u64) -> CallRecord {
    CallRecord {
        kind: toolgate_protocol::RecordKind::Call,
        ts: "2025-01-01T00:00:00.000Z".into(),
        session_id: "s".into(),
        call_id: "c".into(),
        client: None,
        parent_call_id: None,
        tool: tool.into(),
        input: json!({}),
        stages: vec![],
        hooks: vec![],
        verdict: None,
        status: if code.is_some() {
            toolgate_protocol::CallStatus::Error
        } else {
            toolgate_protocol::CallStatus::Ok
        },
        code,
        duration_us,
        input_bytes: 2,
        output_bytes: 0,
        mode_change: None,
    }
}

fn stage(stage: Stage, status: StageStatus, verdict: Option<Verdict>) -> StageRecord {
    StageRecord {
        stage,
        status,
        verdict,
        note: None,
    }
}

#[test]
fn stats_on_a_small_synthetic_log() {
    let (_d, path) = common::make_log(0);
    let log = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    for d in 1..=100 {
        log.append(&record("Read", None, d)).unwrap();
    }
    for d in [30, 10, 20] {
        log.append(&record("Bash", None, d)).unwrap();
    }
    // A call that stopped at stage 1.
    let mut unknown = record("Nope", Some(ErrorCode::UnknownTool), 5);
    unknown.stages = vec![stage(Stage::Resolve, StageStatus::Fail, None)];
    log.append(&unknown).unwrap();
    // Denied by a rule (record verdict).
    let mut by_rule = record("Bash", Some(ErrorCode::Denied), 40);
    by_rule.verdict = Some(Verdict::new(Decision::Deny, Layer::Rule, "no"));
    log.append(&by_rule).unwrap();
    // Denied by a hook at stage 5 (no record verdict).
    let mut by_hook = record("Bash", Some(ErrorCode::Denied), 50);
    by_hook.stages = vec![stage(
        Stage::PreHooks,
        StageStatus::Fail,
        Some(Verdict::new(Decision::Deny, Layer::Hook, "hook said no")),
    )];
    by_hook.hooks = vec![HookRecord {
        event: "PreToolUse".into(),
        handler: "./check.sh".into(),
        outcome: "deny".into(),
        detail: None,
        duration_ms: 3,
    }];
    log.append(&by_hook).unwrap();
    // Allowed at stage 6, denied by a constraint at stage 7.
    let mut by_constraint = record("Write", Some(ErrorCode::Denied), 60);
    by_constraint.verdict = Some(Verdict::new(Decision::Allow, Layer::Rule, "ok"));
    by_constraint.stages = vec![
        stage(
            Stage::Decide,
            StageStatus::Pass,
            by_constraint.verdict.clone(),
        ),
        stage(
            Stage::Constrain,
            StageStatus::Fail,
            Some(Verdict::new(Decision::Deny, Layer::Constraint, "too big")),
        ),
    ];
    log.append(&by_constraint).unwrap();
    log.append(&record("Write", Some(ErrorCode::Timeout), 70))
        .unwrap();
    log.append(&json!({"kind": "call", "tool": "Write", "status": "error"}))
        .unwrap();
    log.append(&json!({"kind": "note"})).unwrap();
    drop(log);
    // A torn last line is counted as unreadable, not fatal.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"seq":999,"pr"#);
    std::fs::write(&path, bytes).unwrap();

    let s = stats(&path).unwrap();
    assert_eq!((s.calls, s.ok, s.errors), (109, 103, 6));
    assert_eq!((s.other_records, s.unreadable_lines), (1, 1));
    let layers: Vec<(&str, u64)> = s
        .denials_by_layer
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(layers, [("constraint", 1), ("hook", 1), ("rule", 1)]);
    let codes: Vec<(&str, u64)> = s
        .errors_by_code
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        codes,
        [
            ("denied", 3),
            ("timeout", 1),
            ("unknown", 1),
            ("unknown_tool", 1)
        ]
    );
    let read = &s.tools["Read"];
    assert_eq!(
        (read.calls, read.errors, read.p50_us, read.p99_us),
        (100, 0, Some(50), Some(99))
    );
    let bash = &s.tools["Bash"];
    // Durations 10, 20, 30, 40, 50.
    assert_eq!(
        (bash.calls, bash.errors, bash.p50_us, bash.p99_us),
        (5, 2, Some(30), Some(50))
    );
    let write = &s.tools["Write"];
    assert_eq!(
        (write.calls, write.errors, write.p50_us, write.p99_us),
        (3, 3, Some(60), Some(70))
    );

    let j = serde_json::to_value(&s).unwrap();
    assert_eq!(j["tools"]["Read"]["p99_us"], 99);
    assert_eq!(j["denials_by_layer"]["hook"], 1);
    assert!(j.get("durations").is_none());
    let table = s.render();
    assert!(table.contains("calls 109  ok 103  errors 6"), "{table}");
    assert!(
        table.contains("denials by layer") && table.contains("unknown_tool"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("Read") && l.contains("50us") && l.contains("99us")),
        "{table}"
    );
}

#[test]
fn stats_from_values_matches() {
    let recs: Vec<Value> = (1..=3)
        .map(|d| json!({"kind": "call", "tool": "T", "status": "ok", "duration_us": d * 10}))
        .collect();
    let s = Stats::from_values(&recs);
    assert_eq!(
        (s.tools["T"].p50_us, s.tools["T"].p99_us),
        (Some(20), Some(30))
    );
}

#[test]
fn redaction_happens_in_the_writer() {
    let (_d, path) = common::make_log(0);
    let log = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    let mut rec = record("Bash", None, 1);
    rec.input = json!({
        "command": "curl -H 'Authorization: Bearer abc123def456' https://u:pw9@x.example",
        "env": {"OPENAI_API_KEY": "sk-whatever"},
        "file_path": "/k/monkey"
    });
    log.append(&rec).unwrap();
    drop(log);
    let text = std::fs::read_to_string(&path).unwrap();
    for secret in ["abc123def456", "pw9", "sk-whatever"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    assert!(text.contains("/k/monkey"));
    assert_eq!(
        toolgate_audit::verify(&path).unwrap().status,
        toolgate_audit::VerifyStatus::Ok
    );
    // Back into the protocol type.
    let v = read_records(&path).unwrap().next().unwrap().unwrap().value;
    let back: CallRecord = serde_json::from_value(v).unwrap();
    assert_eq!(back.input["env"]["OPENAI_API_KEY"], "[REDACTED]");
}

#[test]
fn tail_and_follow() {
    let (_d, path) = common::make_log(10);
    let t = tail(&path, 3).unwrap();
    let is: Vec<u64> = t
        .entries
        .iter()
        .map(|e| e.as_ref().unwrap().value["i"].as_u64().unwrap())
        .collect();
    assert_eq!(is, [8, 9, 10]);
    assert!(t.entries[0].as_ref().unwrap().line.is_none());
    assert_eq!(tail(&path, 50).unwrap().entries.len(), 10);
    assert!(tail(&path, 0).unwrap().entries.is_empty());
    assert_eq!(t.end, std::fs::metadata(&path).unwrap().len());

    let mut f = Follower::new(&path, t.end);
    assert!(f.poll().unwrap().is_empty());
    let log = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    log.append(&json!({"i": 11})).unwrap();
    log.append(&json!({"i": 12})).unwrap();
    let got = f.poll().unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].as_ref().unwrap().value["seq"], 12);
    // A partial line is not returned until complete.
    use std::io::Write;
    let mut raw = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    raw.write_all(b"{\"seq\":13,").unwrap();
    assert!(f.poll().unwrap().is_empty());
    raw.write_all(b"\"x\":1}\n").unwrap();
    assert_eq!(f.poll().unwrap().len(), 1);
    // Line numbers from the forward reader.
    let lines: Vec<Option<u64>> = read_records(&path)
        .unwrap()
        .map(|e| e.unwrap().line)
        .collect();
    assert_eq!(lines.last(), Some(&Some(13)));
}
