//! Permission rules and modes through the front doors: settings files, command-line rules,
//! `check`, and Bash calls whose subcommands touch denied files.

use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    c.env_remove("TOOLGATE_LOG")
        .env("NO_COLOR", "1")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("toolgate-tests-no-user-config"),
        )
        .stdin(Stdio::null());
    c
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".toolgate")).unwrap();
    std::fs::write(
        dir.path().join(".toolgate/settings.json"),
        r#"{"permissions": {"deny": ["Read(./.env)", "Bash(curl *)"], "allow": ["Bash(*)"]}}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join(".env"), "TOKEN=1\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    dir
}

fn call(dir: &std::path::Path, args: &[&str]) -> (Output, Value) {
    let out = bin()
        .args(["call", "--no-audit", "--json", "--workspace"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, v)
}

#[test]
fn project_deny_rules_apply_before_trust_and_reach_into_bash() {
    let p = project();
    let (out, v) = call(p.path(), &["Read", r#"{"file_path": ".env"}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(v["toolgate"]["layer"], "rule");
    // The same file through shell commands, wrapped and nested.
    for cmd in [
        "cat .env",
        "timeout 5 head -1 ./.env",
        "echo $(cat .env)",
        "bash -c 'tail .env'",
    ] {
        let input = serde_json::json!({ "command": cmd }).to_string();
        let (out, v) = call(p.path(), &["Bash", &input]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {v}");
    }
    let (out, _) = call(
        p.path(),
        &[
            "Bash",
            r#"{"command": "ls && nice curl -s http://127.0.0.1:9"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn untrusted_project_allow_rules_do_not_apply() {
    let p = project();
    // `Bash(*)` in the untrusted project file does not allow a write; nobody can be asked.
    let (out, v) = call(p.path(), &["Bash", r#"{"command": "touch made.txt"}"#]);
    assert_eq!(out.status.code(), Some(2), "{v}");
    assert!(!p.path().join("made.txt").exists());
    // The same rule from the command line applies.
    let (out, _) = call(
        p.path(),
        &[
            "--allow",
            "Bash(touch *)",
            "Bash",
            r#"{"command": "touch made.txt"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(p.path().join("made.txt").exists());
}

#[test]
fn command_line_deny_and_modes() {
    let p = project();
    let (out, _) = call(
        p.path(),
        &[
            "--deny",
            "Read(notes.txt)",
            "Read",
            r#"{"file_path": "notes.txt"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let (out, v) = call(
        p.path(),
        &[
            "--mode",
            "plan",
            "Write",
            r#"{"file_path": "new.txt", "content": "x"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(v["toolgate"]["layer"], "mode");
    let (out, _) = call(
        p.path(),
        &[
            "--mode",
            "acceptEdits",
            "Write",
            r#"{"file_path": "new.txt", "content": "x"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    // Catastrophic commands are denied even in bypassPermissions.
    let (out, v) = call(
        p.path(),
        &[
            "--mode",
            "bypassPermissions",
            "--allow-root",
            "Bash",
            r#"{"command": "rm -rf /"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{v}");
    assert_eq!(v["toolgate"]["layer"], "risk");
}

#[test]
fn broken_settings_refuse_to_start() {
    let p = project();
    std::fs::write(
        p.path().join(".toolgate/settings.json"),
        "{\"permissions\": {\"deny\": [\"Read(./.env)\",]}}",
    )
    .unwrap();
    let (out, _) = call(p.path(), &["Read", r#"{"file_path": "notes.txt"}"#]);
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("settings.json:1:"),
        "the error names file, line and column: {err}"
    );
}

#[test]
fn check_reports_without_running() {
    let p = project();
    let run = |args: &[&str]| {
        bin()
            .arg("check")
            .arg("--workspace")
            .arg(p.path())
            .args(args)
            .output()
            .unwrap()
    };
    assert_eq!(run(&["Read(./.env)"]).status.code(), Some(2));
    assert_eq!(run(&["Read(notes.txt)"]).status.code(), Some(0));
    assert_eq!(run(&["Bash(rm -rf build)"]).status.code(), Some(3));
    assert_eq!(
        run(&["Read", r#"{"file_path": 3}"#]).status.code(),
        Some(1),
        "invalid input fails before policy"
    );
    let out = run(&["--json", "Bash(cat .env)"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["decided"]["verdict"]["rule"], "Read(./.env)");
    assert_eq!(v["facts"]["commands"][0]["argv"][0], "cat");
    let out = run(&["Bash(touch x)"]);
    assert!(!p.path().join("x").exists(), "check never runs the call");
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn project_hooks_wait_for_trust_and_command_line_hooks_run() {
    let p = project();
    let marker = p.path().join("hook-ran");
    let hooks = serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
        {"type": "command", "command": format!("touch {}", marker.display())}]}]}});
    let mut settings: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join(".toolgate/settings.json")).unwrap(),
    )
    .unwrap();
    settings["hooks"] = hooks["hooks"].clone();
    std::fs::write(
        p.path().join(".toolgate/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let config = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        bin()
            .env("XDG_CONFIG_HOME", config.path())
            .args(args)
            .arg("--workspace")
            .arg(p.path())
            .output()
            .unwrap()
    };
    let read = [
        "call",
        "--no-audit",
        "Read",
        r#"{"file_path": "notes.txt"}"#,
    ];
    assert_eq!(run(&read).status.code(), Some(0));
    assert!(!marker.exists(), "an untrusted project's hook must not run");

    let with_cli_hook = [
        "call",
        "--no-audit",
        "--settings",
        &hooks.to_string(),
        "Read",
        r#"{"file_path": "notes.txt"}"#,
    ];
    assert_eq!(run(&with_cli_hook).status.code(), Some(0));
    assert!(marker.exists(), "a command-line hook runs");
    std::fs::remove_file(&marker).unwrap();

    let trust = bin()
        .env("XDG_CONFIG_HOME", config.path())
        .arg("trust")
        .arg(p.path())
        .output()
        .unwrap();
    assert!(
        trust.status.success(),
        "{}",
        String::from_utf8_lossy(&trust.stderr)
    );
    assert_eq!(run(&read).status.code(), Some(0));
    assert!(
        marker.exists(),
        "after `toolgate trust` the project's hook runs"
    );
}
