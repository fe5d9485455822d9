//! The binary's front doors: exec, call, tools and audit, with bad input of every kind.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    // Keep the machine's user settings (and trust records) out of the tests.
    c.env_remove("TOOLGATE_LOG").env("NO_COLOR", "1").env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("toolgate-tests-no-user-config"),
    );
    c
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    dir
}

fn exec(ws: &Path, extra: &[&str], stdin: &[u8]) -> Output {
    let mut child = bin()
        .arg("exec")
        .arg("--workspace")
        .arg(ws)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

#[test]
fn exec_answers_every_line_in_order_and_survives_bad_ones() {
    let ws = workspace();
    let audit = ws.path().join("audit.jsonl");
    let mut input = Vec::new();
    input.extend_from_slice(
        br#"{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"notes.txt"}}"#,
    );
    input.extend_from_slice(b"\n\n");
    input.extend_from_slice(b"\xff\xfe not utf-8\n");
    input.extend_from_slice(b"{not json\n");
    input.extend_from_slice(br#"{"type":"tool_use","id":"t4","input":{}}"#);
    input.push(b'\n');
    input.extend_from_slice(br#"{"id":"c5","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"notes.txt\",\"limit\":\"x\"}"}}"#);
    input.push(b'\n');
    input.extend_from_slice(br#"{"type":"tool_use","id":"t6","name":"NoSuchTool","input":{}}"#);
    input.push(b'\n');
    let big = "y".repeat(10 * 1024 * 1024);
    input.extend_from_slice(
        json!({"type":"tool_use","id":"t7","name":"Read","input":{"file_path": big}})
            .to_string()
            .as_bytes(),
    );
    input.push(b'\n');
    input.extend_from_slice(
        br#"{"type":"tool_use","id":"t8","name":"Read","input":{"file_path":"/etc/passwd"}}"#,
    );
    let out = exec(ws.path(), &["--audit", audit.to_str().unwrap()], &input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = lines(&out);
    let codes: Vec<Value> = results
        .iter()
        .map(|r| r["toolgate"]["code"].clone())
        .collect();
    assert_eq!(
        codes,
        vec![
            Value::Null,
            json!("malformed_call"),
            json!("malformed_call"),
            json!("malformed_call"),
            json!("invalid_input"),
            json!("unknown_tool"),
            json!("invalid_input"),
            json!("invalid_request"),
        ]
    );
    assert_eq!(results[0]["tool_use_id"], "t1");
    assert!(
        results[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );
    assert_eq!(
        results[3]["tool_use_id"], "t4",
        "the id of a nameless call is kept"
    );
    assert_eq!(results[4]["tool_use_id"], "c5");
    assert!(results[4]["toolgate"]["details"]["violations"][0]["pointer"] == "/limit");
    assert!(results[1]["content"].as_str().unwrap().contains("line 3"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));

    // One audit record per line that was not blank, and the chain verifies.
    let records = std::fs::read_to_string(&audit).unwrap().lines().count();
    assert_eq!(records, 8);
    let verify = bin()
        .args(["audit", "verify", "--json"])
        .arg(&audit)
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn exec_audit_records_are_redacted() {
    let ws = workspace();
    let audit = ws.path().join("audit.jsonl");
    let input = br#"{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"env.sh","content":"export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"}}
{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"notes.txt","api_key":"hunter2-hunter2"}}
"#;
    let out = exec(
        ws.path(),
        &["--mode", "acceptEdits", "--audit", audit.to_str().unwrap()],
        input,
    );
    assert_eq!(lines(&out).len(), 2);
    let log = std::fs::read_to_string(&audit).unwrap();
    assert!(!log.contains("AKIAIOSFODNN7EXAMPLE"), "{log}");
    assert!(!log.contains("hunter2-hunter2"), "{log}");
    assert!(log.contains("[REDACTED"));
    // The file itself got the real content: redaction is for the record only.
    assert!(
        std::fs::read_to_string(ws.path().join("env.sh"))
            .unwrap()
            .contains("AKIAIOSFODNN7EXAMPLE")
    );
}

#[test]
fn exec_openai_format() {
    let ws = workspace();
    let out = exec(
        ws.path(),
        &["--no-audit", "--format", "openai"],
        br#"{"id":"c1","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"notes.txt\"}"}}"#,
    );
    let r = &lines(&out)[0];
    assert_eq!(r["role"], "tool");
    assert_eq!(r["tool_call_id"], "c1");
    assert!(r["content"].as_str().unwrap().contains("beta"));
}

#[test]
fn exec_refuses_every_call_when_the_audit_log_is_unwritable() {
    let ws = workspace();
    // A path below a regular file cannot be created, even by root.
    let audit = ws.path().join("notes.txt").join("audit.jsonl");
    let input = br#"{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"notes.txt"}}
{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"src/main.rs"}}
"#;
    let out = exec(ws.path(), &["--audit", audit.to_str().unwrap()], input);
    let results = lines(&out);
    assert_eq!(results.len(), 2, "the process keeps serving");
    for r in &results {
        assert_eq!(r["toolgate"]["code"], "audit_unavailable");
        assert_eq!(r["is_error"], true);
    }
}

#[test]
fn exec_stops_cleanly_when_stdout_is_closed() {
    let ws = workspace();
    let mut child = bin()
        .args(["exec", "--no-audit", "--workspace"])
        .arg(ws.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    let line = br#"{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"notes.txt"}}
"#;
    for _ in 0..50 {
        if stdin.write_all(line).is_err() {
            break;
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stopping"), "{stderr}");
}

#[test]
fn call_exit_codes() {
    let ws = workspace();
    let run = |args: &[&str]| {
        bin()
            .args(["call", "--no-audit", "--workspace"])
            .arg(ws.path())
            .args(args)
            .output()
            .unwrap()
    };
    let ok = run(&["Read", r#"{"file_path":"notes.txt"}"#]);
    assert_eq!(ok.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(v["is_error"], false);
    assert_eq!(run(&["Read", r#"{"file_path":3}"#]).status.code(), Some(1));
    assert_eq!(run(&["Read", "{not json"]).status.code(), Some(64));
    assert_eq!(
        run(&[
            "--deny-tool",
            "Read",
            "Read",
            r#"{"file_path":"notes.txt"}"#
        ])
        .status
        .code(),
        Some(2)
    );
    assert_eq!(
        run(&["--mode", "sideways", "Read", "{}"]).status.code(),
        Some(64)
    );
    assert_eq!(
        bin().args(["call"]).output().unwrap().status.code(),
        Some(64)
    );
    assert_eq!(
        bin().args(["--version"]).output().unwrap().status.code(),
        Some(0)
    );
    let help = bin().args(["--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("Examples:"));
}

#[test]
fn tools_prints_each_format_and_honours_the_view() {
    let list = |args: &[&str]| -> Value {
        let out = bin().arg("tools").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let anthropic = list(&["--format", "anthropic"]);
    assert!(
        anthropic
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "Read" && t["input_schema"]["type"] == "object")
    );
    let openai = list(&["--format", "openai"]);
    assert!(
        openai
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["type"] == "function" && t["function"]["parameters"].is_object())
    );
    let mcp = list(&["--format", "mcp"]);
    let read = mcp["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Read")
        .unwrap();
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    let plan = list(&["--format", "anthropic", "--mode", "plan"]);
    let names: Vec<&str> = plan
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // Plan mode hides nothing: the permission engine refuses edits per call (and still
    // runs read-only Bash commands), as Claude Code does.
    assert!(
        names.contains(&"Read") && names.contains(&"Write") && names.contains(&"Bash"),
        "{names:?}"
    );
    let denied = list(&["--format", "anthropic", "--deny-tool", "Grep"]);
    assert!(
        denied
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] != "Grep")
    );
}

#[test]
fn tools_snapshot_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("tools.json");
    let out = bin()
        .args(["tools", "--json", "--write-snapshot"])
        .arg(&snap)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&snap).unwrap()).unwrap();
    doc["tools"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t["name"] == "Read");
    doc["tools"][0]["description"] = json!("pinned description");
    std::fs::write(&snap, doc.to_string()).unwrap();
    let out = bin()
        .args(["tools", "--format", "anthropic", "--tools-snapshot"])
        .arg(&snap)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["description"], "pinned description");
    std::fs::write(&snap, "{broken").unwrap();
    let out = bin()
        .args(["tools", "--tools-snapshot"])
        .arg(&snap)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("snapshot"));
}

/// `toolgate sandbox run` passes the command's output and exit status through, both when it
/// builds the room in its own process (no proxy) and when it waits for the helper (allow-list
/// proxy), and the command cannot write outside the workspace. `-v`, the global flag, is
/// accepted by the fast path that parses only `sandbox run`.
#[test]
fn sandbox_run_passes_status_through_and_confines_writes() {
    let ws = workspace();
    let outside = tempfile::tempdir().unwrap();
    let run = |extra: &[&str], script: &str| {
        bin()
            .args(["sandbox", "run", "-v", "--workspace"])
            .arg(ws.path())
            .args(extra)
            .args(["--", "sh", "-c", script])
            .current_dir(ws.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for extra in [&[][..], &["--allow-domain", "example.invalid"][..]] {
        let out = run(extra, "echo inside; exit 7");
        assert_eq!(out.status.code(), Some(7), "{extra:?}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "inside\n");
        let out = run(extra, "kill -TERM $$");
        assert_eq!(out.status.code(), Some(128 + 15), "{extra:?}: {out:?}");
        let target = outside.path().join("escaped");
        let out = run(extra, &format!("echo x > {}", target.display()));
        assert_ne!(out.status.code(), Some(0), "{extra:?}: {out:?}");
        assert!(!target.exists(), "{extra:?}: wrote outside the workspace");
        let out = run(extra, "echo x > made-inside");
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {out:?}");
        assert!(ws.path().join("made-inside").exists());
    }
}
