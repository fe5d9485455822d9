//! The worked examples of docs/hooks.md, run as written (the scripts are extracted from the
//! document, so the documentation cannot rot).

mod common;

use std::time::{Duration, Instant};

use common::Fixture;
use serde_json::json;
use toolgate_protocol::{Decision, ToolOutput};

const DOC: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/hooks.md"));

/// The fenced block after `<!-- file: NAME -->`.
fn doc_file(name: &str) -> String {
    let marker = format!("<!-- file: {name} -->");
    let after = &DOC[DOC.find(&marker).unwrap() + marker.len()..];
    let start = after.find("```").unwrap();
    let body = &after[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].to_owned()
}

#[tokio::test]
async fn example_1_blocks_rm_rf_outside_the_workspace() {
    let f = Fixture::new();
    let script = f.script("guard-rm.py", &doc_file("guard-rm.py"));
    let e = f.engine(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": format!("python3 {script}"), "timeout": 10, "failClosed": true}]}]}));
    for (cmd, denied) in [
        ("rm -rf /tmp/elsewhere", true),
        ("sudo rm -r ../..", true),
        ("true && rm -fr ~/x", true),
        ("rm -rf build target", false),
        ("rm /tmp/file", false),
        ("ls -la /", false),
    ] {
        let out = f.pre(&e, "Bash", json!({"command": cmd})).await;
        let got = out.verdict.as_ref().map(|v| v.decision);
        assert_eq!(got == Some(Decision::Deny), denied, "{cmd}: {out:?}");
    }
}

#[tokio::test]
async fn example_2_formats_after_edit() {
    let f = Fixture::new();
    let script = f.script("format.sh", &doc_file("format.sh"));
    let e = f.engine(
        json!({"PostToolUse": [{"matcher": "Edit|MultiEdit|Write", "hooks": [
        {"type": "command", "command": format!("sh {script}"), "timeout": 60}]}]}),
    );
    let good = f.path().join("a.rs");
    std::fs::write(&good, "fn main(){let x=1;println!(\"{x}\");}\n").unwrap();
    let out = f
        .post(
            &e,
            "Edit",
            json!({"file_path": good}),
            Ok(ToolOutput::text("ok")),
        )
        .await;
    assert!(out.additional_context.is_empty(), "{out:?}");
    assert!(
        std::fs::read_to_string(&good)
            .unwrap()
            .contains("let x = 1;")
    );

    let bad = f.path().join("b.rs");
    std::fs::write(&bad, "fn main( {\n").unwrap();
    let out = f
        .post(
            &e,
            "Write",
            json!({"file_path": bad}),
            Ok(ToolOutput::text("ok")),
        )
        .await;
    assert!(
        out.additional_context[0].contains("formatter failed"),
        "{out:?}"
    );
    // Other tools do not trigger it.
    let out = f
        .post(
            &e,
            "Read",
            json!({"file_path": bad}),
            Ok(ToolOutput::text("ok")),
        )
        .await;
    assert!(out.records.is_empty());
}

#[tokio::test]
async fn example_3_ships_events_to_a_collector() {
    // SAFETY: set before this test binary's hooks (and thus any spawn reading the
    // environment) run in this test; no other test reads COLLECTOR_TOKEN.
    unsafe { std::env::set_var("COLLECTOR_TOKEN", "s3cret") };
    let f = Fixture::new();
    let script = f.script("collector.py", &doc_file("collector.py"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out_file = f.path().join("events.jsonl");
    let mut collector = std::process::Command::new("python3")
        .arg(&script)
        .env("COLLECTOR_PORT", port.to_string())
        .env("COLLECTOR_OUT", &out_file)
        .spawn()
        .unwrap();
    let ready = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < ready {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = format!("http://127.0.0.1:{port}/toolgate/events");
    let handler = json!({"type": "http", "url": url, "headers": {"Authorization": "Bearer $COLLECTOR_TOKEN"},
        "allowedEnvVars": ["COLLECTOR_TOKEN"], "async": true, "timeout": 5});
    let e = f.engine(json!({"PostToolUse": [{"matcher": "*", "hooks": [handler]}]}));
    let out = f
        .post(
            &e,
            "Echo",
            json!({"text": "hi"}),
            Ok(ToolOutput::text("hi")),
        )
        .await;
    assert_eq!(out.records[0].outcome, "none");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !out_file.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = collector.kill();
    let _ = collector.wait();
    let line = std::fs::read_to_string(&out_file).unwrap();
    let event: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(event["hook_event_name"], "PostToolUse");
    assert_eq!(event["tool_name"], "Echo");
}
