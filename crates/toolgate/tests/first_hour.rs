//! What a new user trips over in the first hour (issue 27): a mistyped `--workspace`, the
//! sandbox default, the hook's failures, the hook's settings and install, "allow always" in
//! an untrusted workspace, and bad input that must not be accepted silently. Every test runs
//! the built binary, as a user or Claude Code would.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// `toolgate ARGS` with HOME and toolgate's configuration directory inside `home`, so the
/// user's own settings and trust store are never read or written.
fn tg(home: &Path, args: &[&str], stdin: &[u8]) -> Output {
    tg_in(home, home, args, stdin)
}

fn tg_in(home: &Path, cwd: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("TOOLGATE_LOG")
        .env_remove("TOOLGATE_SANDBOX_DISABLE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command may exit before reading its input; that is not an error here.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---- 27.1: a mistyped --workspace -------------------------------------------------------

/// Every subcommand that takes `--workspace`, with what it needs besides.
const WORKSPACE_COMMANDS: &[&[&str]] = &[
    &["call", "Read", r#"{"file_path": "README.md"}"#],
    &["exec"],
    &["serve"],
    &["check", "Bash(ls)"],
    &["config"],
    &["tools"],
];

#[test]
fn a_missing_workspace_is_refused_and_never_created() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let missing = home.join("projcet");
    for cmd in WORKSPACE_COMMANDS {
        let mut args: Vec<&str> = vec![cmd[0], "--workspace", missing.to_str().unwrap()];
        args.extend(&cmd[1..]);
        let out = tg(home, &args, b"");
        assert_eq!(out.status.code(), Some(64), "{cmd:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("--workspace") && err.contains("no such directory"),
            "{cmd:?}: {err}"
        );
        assert!(!missing.exists(), "{cmd:?} created the mistyped workspace");
    }
}

#[test]
fn a_file_as_workspace_is_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let file = home.join("notes.txt");
    std::fs::write(&file, "x").unwrap();
    for cmd in WORKSPACE_COMMANDS {
        let mut args: Vec<&str> = vec![cmd[0], "-w", file.to_str().unwrap()];
        args.extend(&cmd[1..]);
        let out = tg(home, &args, b"");
        assert_eq!(out.status.code(), Some(64), "{cmd:?}");
        let err = stderr(&out);
        assert!(
            err.contains("--workspace") && err.contains("not a directory"),
            "{cmd:?}: {err}"
        );
        assert!(!err.contains("settings.local.json"), "{cmd:?}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn only_dot_toolgate_is_created_inside_an_existing_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("README.md"), "hello\n").unwrap();
    let out = tg(
        home,
        &[
            "call",
            "-w",
            ws.to_str().unwrap(),
            "Read",
            r#"{"file_path": "README.md"}"#,
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut names: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".toolgate", "README.md"]);
    assert!(ws.join(".toolgate/audit.jsonl").is_file());
}

// ---- 27.2: the sandbox by default -------------------------------------------------------

/// The tier `toolgate sandbox status` finds on this machine (`a`, `b`, `c`, `none`).
fn machine_tier(home: &Path) -> String {
    let out = stdout(&tg(home, &["sandbox", "status"], b""));
    let first = out.lines().next().unwrap_or_default();
    let (_, tier) = first.split_once("tier ").unwrap();
    tier.trim().to_ascii_lowercase()
}

/// The pid namespace a Bash call runs in, as `call` reports it.
fn bash_pid_ns(home: &Path, ws: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    cmd.args(["call", "-w", ws.to_str().unwrap(), "--allow", "Bash"])
        .args(extra)
        .args(["Bash", r#"{"command": "readlink /proc/self/ns/pid"}"#])
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("TOOLGATE_SANDBOX_DISABLE")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn result_text(out: &Output) -> String {
    result_text_value(&serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn bash_runs_in_the_sandbox_by_default_where_the_kernel_supports_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let ours = std::fs::read_link("/proc/self/ns/pid")
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let config = stdout(&tg(home, &["config", "-w", ws.to_str().unwrap()], b""));
    let json_config: Value = serde_json::from_slice(
        &tg(home, &["config", "-w", ws.to_str().unwrap(), "--json"], b"").stdout,
    )
    .unwrap();
    let tier = machine_tier(home);
    assert_eq!(json_config["sandboxState"]["tier"], tier);
    let default = bash_pid_ns(home, &ws, &[], &[]);
    if tier == "none" {
        // Nothing works here: said loudly, and the command runs without a sandbox.
        assert!(config.contains("sandbox  off"), "{config}");
        assert!(
            stderr(&default).contains("sandbox off"),
            "{}",
            stderr(&default)
        );
    } else {
        assert!(config.contains("sandbox  on"), "{config}");
        assert!(
            config.contains(&format!("tier {}", tier.to_uppercase())),
            "{config}"
        );
        assert_eq!(json_config["sandboxState"]["on"], true);
        assert_eq!(default.status.code(), Some(0), "{}", stderr(&default));
        if tier == "a" {
            assert_ne!(
                result_text(&default).trim(),
                ours,
                "Bash ran outside a pid namespace"
            );
        }
        assert!(!stderr(&default).contains("sandbox off"));
    }
    // --no-sandbox and sandbox.enabled:false run it here, and config says so.
    for off in [
        &["--no-sandbox"][..],
        &["--settings", r#"{"sandbox": {"enabled": false}}"#],
    ] {
        let out = bash_pid_ns(home, &ws, off, &[]);
        assert_eq!(out.status.code(), Some(0), "{off:?}: {}", stderr(&out));
        assert_eq!(result_text(&out).trim(), ours, "{off:?}");
        assert!(
            !stderr(&out).contains("sandbox off"),
            "{off:?}: silent when asked"
        );
        let mut args = vec!["config", "-w", ws.to_str().unwrap()];
        args.extend(off);
        let config = stdout(&tg(home, &args, b""));
        assert!(config.contains("sandbox  off"), "{off:?}: {config}");
    }
}

#[test]
fn an_untrusted_project_cannot_turn_the_default_sandbox_off() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    std::fs::create_dir_all(ws.join(".toolgate")).unwrap();
    std::fs::write(
        ws.join(".toolgate/settings.json"),
        r#"{"sandbox": {"enabled": false}}"#,
    )
    .unwrap();
    let w = ws.to_str().unwrap();
    let tier = machine_tier(home);
    let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let config = stdout(&tg(home, &["config", "-w", w], b""));
    if tier == "none" {
        assert!(config.contains("sandbox  off"), "{config}");
    } else {
        assert!(config.contains("sandbox  on"), "{config}");
        assert!(config.contains("waits for `toolgate trust`"), "{config}");
    }
    let before = bash_pid_ns(home, &ws, &[], &[]);
    assert!(tg(home, &["trust", w], b"").status.success());
    // Trusted, the project's choice applies (which is what makes the check above able to
    // fail).
    let config = stdout(&tg(home, &["config", "-w", w], b""));
    assert!(config.contains("sandbox  off"), "{config}");
    let after = bash_pid_ns(home, &ws, &[], &[]);
    assert_eq!(result_text(&after).trim(), ours.to_string_lossy());
    if tier == "a" {
        assert_ne!(result_text(&before).trim(), ours.to_string_lossy());
    }
}

#[test]
fn only_a_sandbox_that_isolates_the_filesystem_lifts_the_root_guard() {
    // Bypass mode as root is refused outside a sandbox unless --allow-root. The default
    // sandbox lifts that guard only where it isolates the filesystem (tiers A and B): a
    // seccomp-only room (tier C) keeps a root `rm -rf` from nothing on disk.
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .is_some_and(|ids| ids.split_whitespace().nth(1) == Some("0"));
    let run = |env: &[(&str, &str)], extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        cmd.args([
            "call",
            "-w",
            ws.to_str().unwrap(),
            "--mode",
            "bypassPermissions",
        ])
        .args(extra)
        .args(["Bash", r#"{"command": "true"}"#])
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("TOOLGATE_SANDBOX_PROBE_CACHE", "0")
        .env_remove("TOOLGATE_SANDBOX_DISABLE")
        .stdin(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (v, stderr(&out))
    };
    let tier_c = [("TOOLGATE_SANDBOX_DISABLE", "user_ns,landlock")];
    let (c, err) = run(&tier_c, &[]);
    let (c_allowed, err2) = run(&tier_c, &["--allow-root"]);
    assert!(
        c_allowed["toolgate"]["code"].is_null(),
        "{c_allowed} {err2}"
    );
    if root {
        assert_eq!(c["toolgate"]["code"], "denied", "{c} {err}");
        assert!(
            c["toolgate"]["layer"] == "mode" && result_text_value(&c).contains("--allow-root"),
            "{c}"
        );
    } else {
        assert!(c["toolgate"]["code"].is_null(), "{c} {err}");
    }
    if machine_tier(home) == "a" {
        let (a, err) = run(&[], &[]);
        assert!(
            a["toolgate"]["code"].is_null(),
            "tier A lifts the guard: {a} {err}"
        );
    }
}

fn result_text_value(v: &Value) -> String {
    match &v["content"] {
        Value::String(s) => s.clone(),
        c => c[0]["text"].as_str().unwrap_or_default().to_owned(),
    }
}

#[test]
fn a_sandbox_that_cannot_start_is_said_once_and_follows_fail_if_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let off = [("TOOLGATE_SANDBOX_DISABLE", "all")];
    // Two calls through exec: they run, and the warning comes once.
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["exec", "-w", ws.to_str().unwrap(), "--allow", "Bash"])
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("TOOLGATE_SANDBOX_DISABLE", "all")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let call = |id: &str| {
        json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "echo ran"}})
            .to_string()
    };
    writeln!(
        child.stdin.as_mut().unwrap(),
        "{}\n{}",
        call("a"),
        call("b")
    )
    .unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert_eq!(l["is_error"], false, "{l}");
    }
    assert_eq!(
        stderr(&out).matches("sandbox off").count(),
        1,
        "{}",
        stderr(&out)
    );
    // With failIfUnavailable the command is refused instead.
    let out = bash_pid_ns(
        home,
        &ws,
        &["--settings", r#"{"sandbox": {"failIfUnavailable": true}}"#],
        &off,
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["is_error"], true, "{v}");
    assert_eq!(v["toolgate"]["code"], "sandbox_unavailable", "{v}");
    let config = stdout(
        &Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["config", "-w", ws.to_str().unwrap()])
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("TOOLGATE_SANDBOX_DISABLE", "all")
            .output()
            .unwrap(),
    );
    assert!(config.contains("sandbox  off"), "{config}");
    assert!(config.contains("supports no sandbox"), "{config}");
}

// ---- 27.3 and 27.7: every failure of the hook refuses -------------------------------

fn event_input(event: &str, cwd: &Path) -> Vec<u8> {
    json!({
        "session_id": "s", "cwd": cwd, "permission_mode": "default",
        "hook_event_name": event, "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"
    })
    .to_string()
    .into_bytes()
}

/// Asserts that `out` is a refusal Claude Code honours for `event`, with `reason` in it.
fn assert_refused(event: &str, out: &Output, reason: &str, case: &str) {
    assert_ne!(out.status.code(), Some(64), "{case}: exit 64 is no opinion");
    if event == "PermissionRequest" {
        assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{case}: no JSON answer ({e}): {}", stdout(out));
        });
        assert_eq!(
            v["hookSpecificOutput"]["hookEventName"], "PermissionRequest",
            "{case}"
        );
        assert_eq!(
            v["hookSpecificOutput"]["decision"]["behavior"], "deny",
            "{case}"
        );
        let message = v["hookSpecificOutput"]["decision"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(message.contains(reason), "{case}: {message}");
    } else {
        assert_eq!(out.status.code(), Some(2), "{case}: {}", stdout(out));
        assert!(stderr(out).contains(reason), "{case}: {}", stderr(out));
    }
}

#[test]
fn every_failure_of_the_hook_refuses_in_the_events_own_way() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    std::fs::create_dir_all(ws.join(".toolgate")).unwrap();
    for event in ["PreToolUse", "PermissionRequest"] {
        let input = event_input(event, &ws);
        // Bad arguments.
        let out = tg_in(home, &ws, &["hook", "--frobnicate"], &input);
        assert_refused(event, &out, "--frobnicate", "--frobnicate");
        let out = tg_in(home, &ws, &["hook", "--decide=maybe"], &input);
        assert_refused(event, &out, "--decide", "--decide=maybe");
        // A broken --allow rule (27.7).
        let out = tg_in(home, &ws, &["hook", "--allow", "Bash("], &input);
        assert_refused(event, &out, "Bash(", "--allow 'Bash('");
        // Unreadable settings: a missing --settings file, a broken project file.
        let out = tg_in(
            home,
            &ws,
            &["hook", "--settings", "/nonexistent.json"],
            &input,
        );
        assert_refused(event, &out, "/nonexistent.json", "missing --settings");
        std::fs::write(ws.join(".toolgate/settings.json"), "{\"permissions\": ").unwrap();
        let out = tg_in(home, &ws, &["hook"], &input);
        assert_refused(event, &out, "settings.json", "broken project settings");
        std::fs::remove_file(ws.join(".toolgate/settings.json")).unwrap();
    }
    // Unparseable input: the event comes from --event (27.7).
    for bad in [&b"not json"[..], b"", b"{\"hook_event_name\":"] {
        let out = tg_in(home, &ws, &["hook", "--event", "PermissionRequest"], bad);
        assert_refused("PermissionRequest", &out, "input", "unparseable input");
        let out = tg_in(
            home,
            &ws,
            &["hook", "--event", "PermissionRequest", "--frobnicate"],
            bad,
        );
        assert_refused("PermissionRequest", &out, "--frobnicate", "both");
        let out = tg_in(home, &ws, &["hook"], bad);
        assert_refused("PreToolUse", &out, "input", "unparseable input");
    }
    // Help is still help, and `hook install` is not a hook call.
    assert_eq!(tg(home, &["hook", "--help"], b"").status.code(), Some(0));
    assert_eq!(
        tg(home, &["hook", "install", "--frobnicate"], b"")
            .status
            .code(),
        Some(64)
    );
}

// ---- 27.7: bad input elsewhere ----------------------------------------------------------

#[test]
fn a_broken_allow_rule_is_a_usage_error_on_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let w = ws.to_str().unwrap();
    for cmd in [
        &[
            "call",
            "-w",
            w,
            "--allow",
            "Bash(",
            "Bash",
            r#"{"command": "ls"}"#,
        ][..],
        &["exec", "-w", w, "--allow", "Bash("],
        &["serve", "-w", w, "--allow", "Bash("],
        &["check", "-w", w, "--allow", "Bash(", "Bash(ls)"],
        &["config", "-w", w, "--allow", "Bash("],
        &["tools", "-w", w, "--allow", "Bash("],
    ] {
        let out = tg(home, cmd, b"");
        assert_eq!(out.status.code(), Some(64), "{cmd:?}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(
            err.contains("Bash(") && err.contains("without a closing"),
            "{cmd:?}: {err}"
        );
    }
    // A broken allow rule in a settings file stays a warning, as in Claude Code.
    let out = tg(
        home,
        &[
            "config",
            "-w",
            w,
            "--settings",
            r#"{"permissions": {"allow": ["Bash("]}}"#,
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("skipped"), "{}", stdout(&out));
}

#[test]
fn an_unknown_settings_key_warns_with_the_near_name() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    std::fs::create_dir_all(ws.join(".toolgate")).unwrap();
    // `model` and `statusLine` are Claude Code keys toolgate ignores: accepted quietly.
    std::fs::write(
        ws.join(".toolgate/settings.json"),
        r#"{"permisions": {"deny": ["Bash(rm *)"]}, "model": "opus", "statusLine": {}}"#,
    )
    .unwrap();
    let w = ws.to_str().unwrap();
    let config = tg(home, &["config", "-w", w], b"");
    let text = stdout(&config);
    assert!(
        text.contains("unknown key `permisions`") && text.contains("did you mean `permissions`"),
        "{text}"
    );
    assert!(
        !text.contains("`model`") && !text.contains("`statusLine`"),
        "{text}"
    );
    let out = tg(
        home,
        &[
            "call",
            "-w",
            w,
            "--no-audit",
            "Read",
            r#"{"file_path": "x"}"#,
        ],
        b"",
    );
    let err = stderr(&out);
    assert_eq!(err.matches("unknown key `permisions`").count(), 1, "{err}");
    assert!(err.contains("did you mean `permissions`"), "{err}");
    assert!(!err.contains("`model`"), "{err}");
}

// ---- 27.4: the plain hook reads toolgate's settings; install ------------------------

fn hook_decision(out: &Output) -> Option<String> {
    if out.stdout.is_empty() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["hookSpecificOutput"]["permissionDecision"]
        .as_str()
        .map(str::to_owned)
}

fn bash_input(cwd: &Path, command: &str) -> Vec<u8> {
    json!({
        "session_id": "s", "cwd": cwd, "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": "toolu_1"
    })
    .to_string()
    .into_bytes()
}

#[test]
fn the_plain_hook_reads_the_projects_toolgate_settings_with_trust() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    std::fs::create_dir_all(ws.join(".toolgate")).unwrap();
    std::fs::write(
        ws.join(".toolgate/settings.json"),
        r#"{"permissions": {"deny": ["Bash(git push *)"], "allow": ["Bash(make deploy)"]}}"#,
    )
    .unwrap();
    // A deny rule applies at once, untrusted or not, without any flag.
    let out = tg_in(
        home,
        &ws,
        &["hook"],
        &bash_input(&ws, "git push origin main"),
    );
    assert_eq!(
        hook_decision(&out).as_deref(),
        Some("deny"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains(".toolgate/settings.json"));
    // An allow rule waits for trust.
    let decide = |home: &Path| {
        hook_decision(&tg_in(
            home,
            &ws,
            &["hook", "--decide"],
            &bash_input(&ws, "make deploy"),
        ))
    };
    assert_eq!(decide(home), None);
    let trusted = tg(home, &["trust", ws.to_str().unwrap()], b"");
    assert_eq!(trusted.status.code(), Some(0), "{}", stderr(&trusted));
    assert_eq!(decide(home).as_deref(), Some("allow"));
}

#[test]
fn hook_install_goes_to_the_git_top_level_unless_here() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let repo = home.join("repo");
    let sub = repo.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    let out = tg_in(home, &sub, &["hook", "install"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(repo.join(".claude/settings.json").is_file());
    assert!(!sub.join(".claude").exists());
    assert!(stdout(&out).contains(&repo.join(".claude/settings.json").display().to_string()));
    // --here: the current directory, even inside a repository.
    let out = tg_in(home, &sub, &["hook", "install", "--here"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(sub.join(".claude/settings.json").is_file());
    // A worktree's `.git` is a file; outside any repository, the current directory.
    let wt = home.join("wt");
    std::fs::create_dir_all(wt.join("a")).unwrap();
    std::fs::write(wt.join(".git"), "gitdir: /elsewhere\n").unwrap();
    assert!(
        tg_in(home, &wt.join("a"), &["hook", "install"], b"")
            .status
            .success()
    );
    assert!(wt.join(".claude/settings.json").is_file());
    assert!(!wt.join("a/.claude").exists());
    // A home directory kept in git is not the project: its .claude/settings.json is the
    // user's own file.
    std::fs::create_dir(home.join(".git")).unwrap();
    let project = home.join("app");
    std::fs::create_dir(&project).unwrap();
    assert!(
        tg_in(home, &project, &["hook", "install"], b"")
            .status
            .success()
    );
    assert!(project.join(".claude/settings.json").is_file());
    assert!(!home.join(".claude").exists());
}

#[test]
fn hook_install_keeps_a_trusted_workspace_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    std::fs::write(ws.join(".claude/settings.json"), r#"{"model": "opus"}"#).unwrap();
    let w = ws.to_str().unwrap();
    assert!(tg(home, &["trust", w], b"").status.success());
    let out = tg_in(home, &ws, &["hook", "install", "--here"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("stays trusted"), "{}", stdout(&out));
    let status = tg(home, &["trust", "--status", w], b"");
    assert_eq!(status.status.code(), Some(0), "{}", stdout(&status));
    // Another change to the file still needs trust again: only the install is covered.
    std::fs::write(ws.join(".claude/settings.json"), r#"{"model": "haiku"}"#).unwrap();
    assert_eq!(
        tg(home, &["trust", "--status", w], b"").status.code(),
        Some(1)
    );
    // An untrusted workspace stays untrusted, and nothing claims otherwise.
    let other = home.join("other");
    std::fs::create_dir(&other).unwrap();
    let out = tg_in(home, &other, &["hook", "install", "--here"], b"");
    assert!(out.status.success());
    assert!(!stdout(&out).contains("trusted"), "{}", stdout(&out));
    assert_eq!(
        tg(home, &["trust", "--status", other.to_str().unwrap()], b"")
            .status
            .code(),
        Some(1)
    );
}

// ---- 27.5: "allow always" in an untrusted workspace ---------------------------------

/// A prompt UI that records each request and answers `allow_always`.
fn always_ui(log: &Path) -> String {
    format!(
        r#"python3 -c '
import sys, json
for line in sys.stdin:
    r = json.loads(line)
    open("{}", "a").write(line)
    print(json.dumps({{"id": r["id"], "nonce": r.get("nonce"), "decision": "allow_always"}}), flush=True)
'"#,
        log.display()
    )
}

fn first_request(log: &Path) -> Value {
    let text = std::fs::read_to_string(log).unwrap();
    std::fs::remove_file(log).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

#[test]
fn allow_always_in_an_untrusted_workspace_saves_to_the_users_settings_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = home.join("ws");
    // A project with settings of its own, so that trust has something to bind to.
    std::fs::create_dir_all(ws.join(".toolgate")).unwrap();
    std::fs::write(
        ws.join(".toolgate/settings.json"),
        r#"{"permissions": {"deny": ["Bash(rm -rf *)"]}}"#,
    )
    .unwrap();
    let w = ws.to_str().unwrap();
    let log = home.join("requests.jsonl");
    let ui = always_ui(&log);
    let call = |command: &str, ui: Option<&str>| {
        let input = json!({"command": command}).to_string();
        let mut args = vec!["call", "-w", w, "--no-sandbox"];
        if let Some(ui) = ui {
            args.extend(["--prompt-command", ui]);
        }
        args.extend(["Bash", &input]);
        let out = tg(home, &args, b"");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (v, stderr(&out))
    };
    let (v, err) = call("touch made", Some(&ui));
    assert_eq!(v["is_error"], false, "{v} {err}");
    let request = first_request(&log);
    assert_eq!(request["waits_for_trust"], false, "{request}");
    let saves = request["saves"].as_str().unwrap();
    let user_file = home.join(".config/toolgate/projects");
    assert!(
        saves.contains("your own settings for this project")
            && saves.contains(&user_file.display().to_string())
            && saves.contains("no trust"),
        "{saves}"
    );
    // Not in the project (where it would wait for trust), but in the user's file for it.
    assert!(!ws.join(".toolgate/settings.local.json").exists());
    let saved: Vec<_> = std::fs::read_dir(&user_file).unwrap().collect();
    assert_eq!(saved.len(), 1);
    let file = saved[0].as_ref().unwrap().path();
    let rules = std::fs::read_to_string(&file).unwrap();
    assert!(rules.contains("Bash(touch made)"), "{rules}");
    // The next session applies it without asking anyone, and without trust.
    let (v, err) = call("touch made", None);
    assert_eq!(v["is_error"], false, "{v} {err}");
    assert_eq!(v["toolgate"]["layer"], "rule", "{v}");
    let config = stdout(&tg(home, &["config", "-w", w], b""));
    assert!(config.contains(&file.display().to_string()), "{config}");
    // It belongs to this project only.
    let other = home.join("other");
    std::fs::create_dir(&other).unwrap();
    let out = tg(
        home,
        &[
            "call",
            "-w",
            other.to_str().unwrap(),
            "--no-sandbox",
            "Bash",
            r#"{"command": "touch made"}"#,
        ],
        b"",
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["is_error"], true, "{v}");
    // Once the workspace is trusted, rules go to the project's local file, as before, and
    // the workspace stays trusted across the save.
    assert!(tg(home, &["trust", w], b"").status.success());
    let (v, err) = call("touch other", Some(&ui));
    assert_eq!(v["is_error"], false, "{v} {err}");
    let request = first_request(&log);
    assert_eq!(
        request["saves"], "to .toolgate/settings.local.json",
        "{request}"
    );
    assert!(
        std::fs::read_to_string(ws.join(".toolgate/settings.local.json"))
            .unwrap()
            .contains("Bash(touch other)")
    );
    assert_eq!(
        tg(home, &["trust", "--status", w], b"").status.code(),
        Some(0)
    );
}

#[test]
fn allow_always_without_a_user_config_says_the_rule_waits_for_trust() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let log = ws.join("requests.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["call", "--no-sandbox", "--prompt-command", &always_ui(&log)])
        .args(["Bash", r#"{"command": "touch made"}"#])
        .current_dir(ws)
        .env_remove("HOME")
        .env_remove("XDG_CONFIG_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["is_error"], false, "{v} {}", stderr(&out));
    let request = first_request(&log);
    assert_eq!(request["waits_for_trust"], true, "{request}");
    let saves = request["saves"].as_str().unwrap();
    assert!(
        saves.contains(".toolgate/settings.local.json") && saves.contains("toolgate trust"),
        "{saves}"
    );
    assert!(ws.join(".toolgate/settings.local.json").is_file());
    // What the model is told names the wait too.
    let audit = std::fs::read_to_string(ws.join(".toolgate/audit.jsonl")).unwrap();
    assert!(audit.contains("toolgate trust"), "{audit}");
}
