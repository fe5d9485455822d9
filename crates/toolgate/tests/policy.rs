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
        // Below the directory a search names (decided on the multi-threaded runtime of
        // `call`, where the walk hands the worker's other tasks over).
        "grep -r TOKEN .",
    ] {
        let input = serde_json::json!({ "command": cmd }).to_string();
        let (out, v) = call(p.path(), &["Bash", &input]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {v}");
        assert_eq!(v["toolgate"]["layer"], "rule", "{cmd}: {v}");
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

/// Grep and Glob of an allowed directory must not read or list the denied files inside it:
/// the decision covers the walk, the read filter each entry.
#[test]
fn walkers_leave_out_files_the_rules_deny_reading() {
    let p = project();
    std::fs::create_dir_all(p.path().join("secrets/deep")).unwrap();
    std::fs::write(p.path().join("secrets/deep/key.txt"), "TOKEN=2\n").unwrap();
    std::fs::write(p.path().join("other.txt"), "TOKEN=3\n").unwrap();
    let deny = ["--deny", "Read(./secrets/**)"];
    let grep = |args: &[&str], input: &str| {
        let mut all = args.to_vec();
        all.extend(["Grep", input]);
        call(p.path(), &all)
    };
    let (out, v) = grep(
        &deny,
        r#"{"pattern": "TOKEN", "path": ".", "output_mode": "content"}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{v}");
    let text = v.to_string();
    assert!(
        text.contains("TOKEN=3") && !text.contains("TOKEN=1") && !text.contains("TOKEN=2"),
        "{text}"
    );
    assert!(text.contains("Left out"), "the model is told: {text}");
    let (out, v) = call(
        p.path(),
        &[
            "--deny",
            "Read(./secrets/**)",
            "Glob",
            r#"{"pattern": "**/*"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{v}");
    let text = v.to_string();
    assert!(
        text.contains("other.txt") && !text.contains("key.txt") && !text.contains(".env"),
        "{text}"
    );
    // Control: without the rule both are found.
    let (_, v) = grep(
        &[],
        r#"{"pattern": "TOKEN=2", "path": ".", "output_mode": "content"}"#,
    );
    assert!(v.to_string().contains("TOKEN=2"), "{v}");
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

/// A JSON-lines prompt UI: answers every request with `decision` (echoing its id and
/// nonce), after saving the request line to `seen` (so the test can check what the UI was
/// shown).
fn prompt_ui(decision: &str, seen: &std::path::Path) -> String {
    format!(
        "python3 -c 'import sys, json\nfor line in sys.stdin:\n    open(\"{}\", \"a\").write(line)\n    r = json.loads(line)\n    print(json.dumps({{\"id\": r[\"id\"], \"nonce\": r[\"nonce\"], \"decision\": \"{decision}\", \"message\": \"not now\"}}), flush=True)\n'",
        seen.display()
    )
}

#[test]
fn prompt_command_answers_asks_over_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.jsonl");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let write = |file: &str, ui: Option<String>| {
        let input = serde_json::json!({"file_path": file, "content": "x\n"}).to_string();
        let mut args = vec!["Write".to_owned(), input];
        if let Some(ui) = ui {
            args.extend(["--prompt-command".to_owned(), ui]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        call(&ws, &args)
    };

    // Without a UI, an ask (a write in default mode) is denied: nobody can be asked.
    let (out, v) = write("a.txt", None);
    assert_eq!(out.status.code(), Some(2), "{v}");
    assert!(!ws.join("a.txt").exists());

    // "allow": the write runs once; the UI saw the tool, input and a suggested rule.
    let (out, v) = write("a.txt", Some(prompt_ui("allow", &seen)));
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "x\n");
    let req: Value = serde_json::from_str(
        std::fs::read_to_string(&seen)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(req["type"], "permission_request");
    assert_eq!(req["tool"], "Write");
    assert_eq!(req["input"]["file_path"], "a.txt");
    assert!(!ws.join(".toolgate/settings.local.json").exists());

    // "deny": nothing is written and the UI's message reaches the caller.
    let (out, v) = write("b.txt", Some(prompt_ui("deny", &seen)));
    assert_eq!(out.status.code(), Some(2), "{v}");
    assert!(!ws.join("b.txt").exists());
    assert!(v.to_string().contains("not now"), "{v}");

    // "allow_always" on a file edit holds for the session only (as in Claude Code); on a
    // command it saves the rule: this workspace is not trusted, so to the user's own
    // settings for it (a rule in the project's local file would wait for trust).
    let (out, v) = write("c.txt", Some(prompt_ui("allow_always", &seen)));
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert!(!ws.join(".toolgate/settings.local.json").exists());
    let input = serde_json::json!({"command": "touch e.txt"}).to_string();
    let ui = prompt_ui("allow_always", &seen);
    let (out, v) = call(&ws, &["Bash", &input, "--prompt-command", &ui]);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert!(ws.join("e.txt").exists());
    assert!(!ws.join(".toolgate/settings.local.json").exists());
    let user_file = toolgate_policy::settings::user_project_settings(
        &std::env::temp_dir().join("toolgate-tests-no-user-config/toolgate"),
        &ws,
    );
    let saved = std::fs::read_to_string(&user_file).unwrap();
    assert!(saved.contains("Bash(touch e.txt)"), "{saved}");
    // The file is this test's own (the path is the random workspace's): leave no trace.
    std::fs::remove_file(&user_file).unwrap();

    // A UI that dies without answering, or cannot start, is a refusal (fail closed).
    for ui in ["exit 0", "/nonexistent/prompt-ui"] {
        let (out, v) = write("d.txt", Some(ui.to_owned()));
        assert_eq!(out.status.code(), Some(2), "{ui}: {v}");
        assert!(!ws.join("d.txt").exists());
    }
}

#[test]
fn prompt_fds_that_do_not_exist_deny_and_bad_values_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let input = serde_json::json!({"file_path": "a.txt", "content": "x"}).to_string();
    let (out, v) = call(dir.path(), &["Write", &input, "--prompt-fds", "97,98"]);
    assert_eq!(out.status.code(), Some(2), "{v}");
    assert!(v.to_string().contains("prompt UI is unavailable"), "{v}");
    assert!(!dir.path().join("a.txt").exists());
    let out = bin()
        .args(["call", "--no-audit", "Write", &input, "--prompt-fds", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64), "a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("IN,OUT"));
}

#[test]
fn param_value_rules_deny_and_ask_through_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let bg = r#"{"command": "touch x", "run_in_background": true}"#;
    let fg = r#"{"command": "touch x"}"#;
    let deny = [
        "--allow",
        "Bash(touch *)",
        "--deny",
        "Bash(run_in_background : true)",
    ];
    // The denied field value is refused even though an allow rule covers the command …
    let (out, v) = call(dir.path(), &[&deny[..], &["Bash", bg]].concat());
    assert_eq!(out.status.code(), Some(2), "{v}");
    assert_eq!(v["toolgate"]["layer"], "rule", "{v}");
    assert!(v.to_string().contains("run_in_background"), "{v}");
    // … and the same command without it runs.
    let (out, v) = call(dir.path(), &[&deny[..], &["Bash", fg]].concat());
    assert_eq!(out.status.code(), Some(0), "{v}");
    // An ask on a field value outranks the allow rule; with nobody to ask it is denied.
    let ask = ["--allow", "Grep", "--ask", "Grep(output_mode:cont*)"];
    let (out, v) = call(
        dir.path(),
        &[
            &ask[..],
            &["Grep", r#"{"pattern": "x", "output_mode": "content"}"#],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2), "{v}");
    let (out, v) = call(
        dir.path(),
        &[&ask[..], &["Grep", r#"{"pattern": "x"}"#]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{v}");
    // As an allow rule the form is ignored (deny/ask only): it cannot approve anything, so
    // `touch` still needs an approval nobody can give.
    let (out, v) = call(
        dir.path(),
        &["--allow", "Bash(run_in_background:true)", "Bash", bg],
    );
    assert_eq!(out.status.code(), Some(2), "{v}");
    assert_eq!(v["toolgate"]["layer"], "user", "{v}");
}
