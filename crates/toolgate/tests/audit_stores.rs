//! `--audit postgres://…`, `--otlp` and `toolgate audit verify|query|stats` through the CLI,
//! against a real PostgreSQL and a fixture OpenTelemetry collector (both started by the
//! tests; `postgresql` must be installed — the tests fail, not skip, without it).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use toolgate_test_servers::{Collector, Postgres};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    c.env_remove("TOOLGATE_LOG").env("NO_COLOR", "1").env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("toolgate-tests-no-user-config"),
    );
    c
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    dir
}

/// Runs `toolgate exec` on `calls` (one JSON object each) with extra arguments.
fn exec(ws: &Path, extra: &[&str], calls: &[Value]) -> Output {
    let mut child = bin()
        .args([
            "exec",
            "--session-id",
            "sess-1",
            "--deny",
            "Bash(curl:*)",
            "--workspace",
        ])
        .arg(ws)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for c in calls {
        input.push_str(&c.to_string());
        input.push('\n');
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn calls() -> Vec<Value> {
    vec![
        json!({"type":"tool_use","id":"r1","name":"Read","input":{"file_path":"notes.txt"}}),
        json!({"type":"tool_use","id":"b1","name":"Bash","input":{"command":"curl -u bob:hunter2 https://example.com"}}),
        json!({"type":"tool_use","id":"r2","name":"Read","input":{"file_path":"notes.txt","limit":"x"}}),
        json!({"type":"tool_use","id":"r3","name":"Read","input":{"file_path":"notes.txt","offset":2}}),
    ]
}

fn audit(args: &[&str]) -> Output {
    bin().arg("audit").args(args).output().unwrap()
}

fn jsonl(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn call_ids(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["kind"] == "call")
        .map(|r| r["call_id"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn exec_writes_the_file_postgres_and_otlp_and_audit_reads_them_back() {
    let pg = Postgres::start();
    let collector = Collector::start();
    let url = pg.url("postgres");
    let ws = workspace();
    let file = ws.path().join("audit.jsonl");
    let out = exec(
        ws.path(),
        &[
            "--audit",
            file.to_str().unwrap(),
            "--audit",
            &url,
            "--otlp",
            &collector.url(),
        ],
        &calls(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(jsonl(&out).len(), 4);

    // The process delivered before it exited: PostgreSQL verifies and has every call.
    let verified = audit(&["verify", "--json", &url]);
    assert_eq!(
        verified.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
    let report: Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!(report["records"], 4);
    assert_eq!(report["problem"], Value::Null);
    assert!(!String::from_utf8_lossy(&verified.stdout).contains("tg-test-password"));

    // query means the same on the file and on the store.
    for args in [
        vec!["--tool", "Read"],
        vec!["--decision", "deny"],
        vec!["--rule", "Bash(curl:*)"],
        vec![
            "--session",
            "sess-1",
            "--since",
            "2000-01-01",
            "--until",
            "2999-01-01",
        ],
        vec!["--session", "other"],
    ] {
        let from_file = jsonl(&audit(
            &[&["query", file.to_str().unwrap()], &args[..]].concat(),
        ));
        let from_pg = jsonl(&audit(&[&["query", &url], &args[..]].concat()));
        assert_eq!(call_ids(&from_file), call_ids(&from_pg), "{args:?}");
    }
    let denied = jsonl(&audit(&["query", &url, "--decision", "deny"]));
    assert_eq!(call_ids(&denied), ["b1"]);
    assert!(
        !denied[0].to_string().contains("hunter2"),
        "redacted in the store too"
    );
    let reads = jsonl(&audit(&["query", file.to_str().unwrap(), "--tool", "Read"]));
    assert_eq!(call_ids(&reads), ["r1", "r2", "r3"]);

    // The collector got a span per call, with the decision that was made.
    let spans = collector.spans();
    assert_eq!(spans.len(), 4, "{spans:?}");
    let bash = spans
        .iter()
        .find(|s| s.attributes.get("gen_ai.tool.call.id").map(String::as_str) == Some("b1"))
        .unwrap();
    assert_eq!(bash.attributes["toolgate.decision"], "deny");
    assert_eq!(bash.attributes["toolgate.rule"], "Bash(curl:*)");
    assert_eq!(bash.attributes["error.type"], "denied");
    assert_eq!(collector.logs().len(), 4);

    // stats: nothing pending for either destination.
    let stats = audit(&["stats", "--json", file.to_str().unwrap()]);
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    let delivery = stats["delivery"].as_array().unwrap();
    assert_eq!(delivery.len(), 2, "{stats}");
    assert!(delivery.iter().all(|d| d["pending"] == 0), "{stats}");

    // A row edited in the store: verify says so (exit 1).
    pg.psql(
        "postgres",
        "UPDATE toolgate_audit SET line = replace(line, '\"denied\"', '\"ok\"') WHERE call_id = 'b1'",
    );
    let tampered = audit(&["verify", &url]);
    assert_eq!(tampered.status.code(), Some(1));
}

#[test]
fn destinations_that_are_down_leave_a_backlog_that_the_next_run_delivers() {
    let mut pg = Postgres::start();
    let url = pg.url("postgres");
    let port = toolgate_test_servers::free_port();
    let otlp = format!("http://127.0.0.1:{port}");
    // Create the schema, then take the server away.
    let ws = workspace();
    let file = ws.path().join("audit.jsonl");
    let args = [
        "--audit",
        file.to_str().unwrap(),
        "--audit",
        &url,
        "--otlp",
        &otlp,
    ];
    pg.stop();
    let out = exec(ws.path(), &args, &calls());
    assert!(
        out.status.success(),
        "calls run while the stores are down: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(jsonl(&out).len(), 4);
    let stats = audit(&["stats", "--json", file.to_str().unwrap()]);
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    let delivery = stats["delivery"].as_array().unwrap().clone();
    assert_eq!(delivery.len(), 2, "{stats}");
    for d in &delivery {
        assert!(d["pending"].as_u64().unwrap() >= 4, "{d}");
        assert!(d["failing_since"].is_string(), "{d}");
        assert!(d["last_error"].is_string(), "{d}");
    }
    // The local log says the copies fell behind.
    let notes: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "delivery")
        .collect();
    assert!(notes.iter().any(|n| n["status"] == "failing"), "{notes:?}");

    // Both come back; the next run delivers the backlog.
    pg.resume();
    let collector = Collector::start_on(port);
    let out = exec(
        ws.path(),
        &args,
        &[json!({"type":"tool_use","id":"r9","name":"Read","input":{"file_path":"notes.txt"}})],
    );
    assert!(out.status.success());
    let from_pg = jsonl(&audit(&["query", &url]));
    let ids = call_ids(&from_pg);
    assert_eq!(ids, ["r1", "b1", "r2", "r3", "r9"], "{from_pg:?}");
    assert_eq!(audit(&["verify", &url]).status.code(), Some(0));
    let span_ids: Vec<String> = collector
        .spans()
        .iter()
        .filter_map(|s| s.attributes.get("gen_ai.tool.call.id").cloned())
        .collect();
    for id in ["r1", "b1", "r2", "r3", "r9"] {
        assert!(
            span_ids.contains(&id.to_owned()),
            "{id} not exported: {span_ids:?}"
        );
    }
}

#[test]
fn bad_audit_targets_stop_the_front_door_with_a_clear_error() {
    let pg = Postgres::start();
    let ws = workspace();
    let wrong = format!(
        "postgres://toolgate:not-the-password@127.0.0.1:{}/postgres",
        pg.port()
    );
    let missing_db = pg.url("nosuchdb");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--audit", &wrong], "refused"),
        (vec!["--audit", &missing_db], "nosuchdb"),
        (vec!["--audit", "ftp://x/y"], "not a file path"),
        (
            vec!["--audit", "a.jsonl", "--audit", "b.jsonl"],
            "one log file",
        ),
        (vec!["--otlp", "localhost:4318"], "--otlp"),
        (
            vec!["--audit", "postgres://u:pw@h/db?sslmode=require"],
            "TLS",
        ),
    ];
    for (args, says) in cases {
        let out = exec(ws.path(), &args, &calls());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("not-the-password") && !err.contains(":pw@"),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "nothing ran: {args:?}");
    }
    let bad_time = audit(&["query", "x.jsonl", "--since", "yesterday"]);
    assert_eq!(bad_time.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&bad_time.stderr).contains("RFC 3339"));
    let unreachable = audit(&[
        "verify",
        &format!(
            "postgres://u:p@127.0.0.1:{}/db",
            toolgate_test_servers::free_port()
        ),
    ]);
    assert_eq!(unreachable.status.code(), Some(2));
}
