//! `toolgate serve` on real pipes: standard input and output are driven by epoll when they
//! are pipes, and by tokio's blocking stdio otherwise (here: when standard error is the same
//! pipe as standard output). Both must speak the same protocol, answer garbage, and exit
//! when the client closes its end.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// `cmd` with the test environment (no user settings, no log filter) and piped stdio.
fn piped(cmd: &mut Command) -> &mut Command {
    cmd.env_remove("TOOLGATE_LOG")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("toolgate-tests-no-user-config"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
}

fn session(merge_stderr: bool) -> Vec<Value> {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let exe = env!("CARGO_BIN_EXE_toolgate");
    let mut cmd = if merge_stderr {
        let mut c = Command::new("sh");
        c.args([
            "-c",
            "exec \"$0\" serve --no-audit --workspace \"$1\" 2>&1",
            exe,
        ])
        .arg(ws.path());
        c
    } else {
        let mut c = Command::new(exe);
        c.args(["serve", "--no-audit", "--workspace"])
            .arg(ws.path())
            .stderr(Stdio::null());
        c
    };
    let mut child = piped(&mut cmd).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let notes = ws.path().join("notes.txt");
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "pipe-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "Read", "arguments": {"file_path": notes}}}),
    ];
    for m in &messages {
        writeln!(input, "{m}").unwrap();
    }
    writeln!(input, "this is not json").unwrap();
    input.flush().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut replies = Vec::new();
    // Three answers: initialize, the call, the parse error.
    while replies.len() < 3 {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "server closed early");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        replies.push(v);
    }
    drop(input);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    replies
}

fn check(replies: &[Value]) {
    // The framing answers garbage itself, so its error may overtake rmcp's replies.
    let init = replies.iter().find(|r| r["id"] == 1).unwrap();
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    let call = replies.iter().find(|r| r["id"] == 2).unwrap();
    assert_eq!(call["result"]["isError"], false, "{call}");
    assert!(call["result"].to_string().contains("beta"), "{call}");
    let garbage = replies.iter().find(|r| r["id"].is_null()).unwrap();
    assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
}

#[test]
fn serves_over_pipes() {
    check(&session(false));
}

#[test]
fn serves_when_stderr_shares_the_output_pipe() {
    check(&session(true));
}

#[test]
fn http_only_options_are_refused_without_http() {
    let exe = env!("CARGO_BIN_EXE_toolgate");
    for extra in [
        &["--token", "secret"][..],
        &["--max-sessions", "4"],
        &["--allow-host", "example.test"],
        &["--allow-origin", "https://example.test"],
    ] {
        let out = Command::new(exe)
            .args(["serve", "--no-audit"])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(64), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--http"), "{extra:?}: {err}");
        assert!(out.stdout.is_empty(), "{extra:?}");
    }
}

/// A deny rule against a file below the directory a Bash search names, decided on stdio
/// `serve`'s single-threaded runtime (the walk runs inline there, never `block_in_place`,
/// which that runtime does not allow).
#[test]
fn denies_a_search_below_a_directory_on_the_single_threaded_runtime() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join(".env"), "KEY=1\n").unwrap();
    std::fs::create_dir(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/a.txt"), "KEY\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    cmd.args([
        "serve",
        "--no-audit",
        "--mode",
        "bypassPermissions",
        "--allow-root",
    ])
    .args(["--deny", "Read(.env)", "--workspace"])
    .arg(ws.path())
    .stderr(Stdio::null());
    let mut child = piped(&mut cmd).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let bash = |id: u32, command: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "Bash", "arguments": {"command": command}}})
    };
    for m in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "pipe-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        bash(2, "grep -r KEY ."),
        bash(3, "grep -r KEY src"),
    ] {
        writeln!(input, "{m}").unwrap();
    }
    input.flush().unwrap();
    // Lines arrive through a thread so that a server that stops answering fails the test
    // instead of hanging it.
    let out = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut replies = Vec::new();
    while replies.len() < 3 {
        let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(30)) else {
            let _ = child.kill();
            panic!("no answer within 30 s; got {replies:?}");
        };
        replies.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    drop(input);
    assert!(child.wait().unwrap().success());
    let reply = |id: u32| replies.iter().find(|r| r["id"] == id).unwrap().clone();
    let denied = reply(2);
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert!(denied.to_string().contains(".env"), "{denied}");
    let allowed = reply(3);
    assert_eq!(allowed["result"]["isError"], false, "{allowed}");
    assert!(allowed.to_string().contains("KEY"), "{allowed}");
}
