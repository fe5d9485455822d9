//! The room is never wider than the permission engine: files that deny and ask `Read(…)`
//! rules cover are hidden from a sandboxed command, and files `Edit(…)` rules cover are
//! read-only — also nested (`app/.env` under `Read(.env)`) and under `**` patterns, and
//! when the command never names them (an allowed `make` reads them). Through
//! `toolgate exec`, with the sandbox enabled.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    c.env_remove("TOOLGATE_LOG").env("NO_COLOR", "1").env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("toolgate-tests-no-user-config"),
    );
    c
}

/// Runs Bash calls through `toolgate exec` with these settings; returns each result.
fn bash(ws: &Path, settings: &Value, commands: &[&str]) -> Vec<Value> {
    let mut child = bin()
        .args(["exec", "--no-audit", "--workspace"])
        .arg(ws)
        .arg("--settings")
        .arg(settings.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for (i, c) in commands.iter().enumerate() {
        let call = json!({"type": "tool_use", "id": format!("t{i}"), "name": "Bash",
                          "input": {"command": c}});
        input.push_str(&format!("{call}\n"));
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let results: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), commands.len(), "{out:?}");
    results
}

/// A result's text (an error's content is a string, a success's a list of blocks).
fn text(result: &Value) -> String {
    if let Some(s) = result["content"].as_str() {
        return s.to_owned();
    }
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

/// A workspace whose Makefile touches files only permission rules name.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    for d in ["app/config", "certs/deep", "db", "notes", "src"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    let files = [
        ("app/.env", "NESTED-ENV-SECRET"),
        ("app/config/.env", "DEEP-ENV-SECRET"),
        ("certs/deep/server.pem", "PEM-SECRET"),
        ("db/schema.lock", "orig"),
        ("notes/plan.txt", "ASKED-NOTES"),
        ("src/ok.txt", "readable"),
        (
            "Makefile",
            "show:\n\t-cat app/.env app/config/.env certs/deep/server.pem notes/plan.txt\n\
             \t-cat src/ok.txt\n\t-echo edit >> db/schema.lock\n\t-echo made > db/new.lock\n\
             \t-grep -r SECRET . || echo no-secret-found\n",
        ),
    ];
    for (name, body) in files {
        std::fs::write(ws.join(name), body).unwrap();
    }
    dir
}

fn settings(extra_fs: Value) -> Value {
    json!({
        "sandbox": {"enabled": true, "filesystem": extra_fs},
        "permissions": {
            "deny": ["Read(.env)", "Read(**/*.pem)", "Edit(**/*.lock)"],
            "ask": ["Read(./notes/*.txt)"],
            "allow": ["Bash(make *)"]
        }
    })
}

#[test]
fn rule_covered_files_are_out_of_reach_of_an_allowed_command() {
    let ws = workspace();
    let results = bash(
        ws.path(),
        &settings(json!({})),
        &["make -s show", "cat app/.env"],
    );
    let out = text(&results[0]);
    assert_eq!(results[0]["is_error"], false, "{out}");
    for secret in ["NESTED-ENV", "DEEP-ENV", "PEM-SECRET", "ASKED-NOTES"] {
        assert!(!out.contains(secret), "{secret} read in the room: {out}");
    }
    assert!(out.contains("readable"), "positive control: {out}");
    assert!(out.contains("no-secret-found"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("db/schema.lock")).unwrap(),
        "orig"
    );
    // What the engine itself answers for the same file, named.
    assert_eq!(results[1]["is_error"], true, "{}", results[1]);
    assert!(text(&results[1]).contains("Read(.env)"), "{}", results[1]);
    // The room leaves no trace of its masks.
    assert_eq!(
        std::fs::read_to_string(ws.path().join("app/.env")).unwrap(),
        "NESTED-ENV-SECRET"
    );
}

/// Past the walk's bound the room is refused — the command does not run without its masks.
#[test]
fn a_walk_past_its_bound_refuses_the_room() {
    let ws = workspace();
    let results = bash(
        ws.path(),
        &settings(json!({"maxWalkEntries": 3})),
        &["make -s show"],
    );
    let out = text(&results[0]);
    assert_eq!(results[0]["is_error"], true, "{}", results[0]);
    assert!(out.contains("maxWalkEntries"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("db/schema.lock")).unwrap(),
        "orig",
        "the command ran"
    );
    assert!(!ws.path().join("db/new.lock").exists(), "the command ran");
}
