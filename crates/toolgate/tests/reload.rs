//! `--watch` and `--settings URL` through the binary: `exec` and `serve --http` put a new
//! settings version in force between calls, keep the version in force when a new one is
//! bad (and say so once, in the log and the audit log), and refuse URLs and intervals they
//! cannot honour before anything runs.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::mcp_http::{McpHttp, code};
use support::policy_server::PolicyServer;

/// How long a test waits for a reload it caused before failing (the interval is 100 ms).
const PATIENCE: Duration = Duration::from_secs(20);

const ALLOW_READ: &str = r#"{"permissions": {"allow": ["Read"]}}"#;
const DENY_NOTES: &str = r#"{"permissions": {"allow": ["Read"], "deny": ["Read(./notes.txt)"]}}"#;

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
    std::fs::write(dir.path().join("notes.txt"), "alpha\n").unwrap();
    dir
}

fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn records(audit: &Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == kind)
        .collect()
}

/// Waits until the audit log holds `n` reload records; the last one.
fn wait_for_reloads(audit: &Path, n: usize) -> Value {
    let start = Instant::now();
    loop {
        let reloads = records(audit, "reload");
        if reloads.len() >= n {
            assert_eq!(reloads.len(), n, "more reloads than changes: {reloads:?}");
            return reloads[n - 1].clone();
        }
        assert!(
            start.elapsed() < PATIENCE,
            "no reload record #{n} within {PATIENCE:?}: {reloads:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Exec {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Exec {
    fn call(&mut self, id: &str) -> Value {
        let line = json!({"type": "tool_use", "id": id, "name": "Read",
                          "input": {"file_path": "notes.txt"}});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let mut out = String::new();
        self.stdout.read_line(&mut out).unwrap();
        serde_json::from_str(&out).unwrap()
    }
}

#[test]
fn exec_puts_a_changed_file_in_force_between_calls_and_keeps_it_against_garbage() {
    let ws = workspace();
    let policy = ws.path().join("policy.json");
    let audit = ws.path().join("audit.jsonl");
    replace(&policy, ALLOW_READ);
    let mut child = bin()
        .args([
            "exec",
            "--watch",
            "--watch-interval",
            "100ms",
            "--workspace",
        ])
        .arg(ws.path())
        .arg("--settings")
        .arg(&policy)
        .arg("--audit")
        .arg(&audit)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut exec = Exec {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
        child,
    };
    assert_eq!(exec.call("v1")["is_error"], false);

    replace(&policy, DENY_NOTES);
    let accepted = wait_for_reloads(&audit, 1);
    assert_eq!(accepted["input"]["status"], "accepted");
    assert_eq!(exec.call("v2")["is_error"], true);

    replace(&policy, "{\"permissions\": ");
    let rejected = wait_for_reloads(&audit, 2);
    assert_eq!(rejected["input"]["status"], "rejected");
    assert_eq!(rejected["input"]["in_force"], accepted["input"]["version"]);
    // Still the accepted version, not the garbage and not the first one.
    assert_eq!(exec.call("still-v2")["is_error"], true);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        records(&audit, "reload").len(),
        2,
        "a bad version is reported once"
    );

    drop(exec.stdin);
    let out = exec.child.wait_with_output().unwrap();
    assert!(out.status.success());
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        log.matches("settings reload rejected").count(),
        1,
        "one log line for the rejected version: {log}"
    );
    let verify = bin()
        .args(["audit", "verify"])
        .arg(&audit)
        .output()
        .unwrap();
    assert!(verify.status.success(), "{verify:?}");
}

struct Served {
    child: Child,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(ws: &Path, audit: &PathBuf, settings: &str) -> Served {
    let port = toolgate_test_servers::free_port();
    let child = bin()
        .args([
            "serve",
            "--watch",
            "--watch-interval",
            "100ms",
            "--workspace",
        ])
        .arg(ws)
        .args(["--settings", settings, "--audit"])
        .arg(audit)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < PATIENCE, "serve did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    Served {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

#[test]
fn serve_follows_a_served_policy_in_open_sessions() {
    let ws = workspace();
    let audit = ws.path().join("audit.jsonl");
    let server = PolicyServer::start(ALLOW_READ);
    let served = serve(ws.path(), &audit, &server.url);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = reqwest::Client::new();
        let mcp = McpHttp::connect(&client, &served.base, "reload-test")
            .await
            .unwrap();
        let read = |id: &'static str| {
            let mcp = &mcp;
            async move {
                code(
                    &mcp.call(id, "Read", json!({"file_path": "notes.txt"}))
                        .await
                        .unwrap(),
                )
            }
        };
        assert_eq!(read("first").await, "ok");

        server.serve(503, "down for maintenance");
        let rejected = tokio::task::spawn_blocking({
            let audit = audit.clone();
            move || wait_for_reloads(&audit, 1)
        })
        .await
        .unwrap();
        assert_eq!(rejected["input"]["status"], "rejected");
        assert!(rejected["input"]["error"].as_str().unwrap().contains("503"));
        assert_eq!(read("during-outage").await, "ok");

        server.serve(200, DENY_NOTES);
        let accepted = tokio::task::spawn_blocking({
            let audit = audit.clone();
            move || wait_for_reloads(&audit, 2)
        })
        .await
        .unwrap();
        assert_eq!(accepted["input"]["status"], "accepted");
        // The session opened under the first version is decided by the new one now.
        assert_eq!(read("after").await, "denied");
    });
}

#[test]
fn urls_and_intervals_that_cannot_be_honoured_are_refused_before_anything_runs() {
    let ws = workspace();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["call", "--settings", "http://policy.example/p.json"],
            64,
            "https",
        ),
        (
            &[
                "call",
                "--settings",
                "https://user:pw@policy.example/p.json",
            ],
            64,
            "TOOLGATE_SETTINGS_TOKEN",
        ),
        (
            &["exec", "--watch", "--watch-interval", "5ms"],
            64,
            "at least 100ms",
        ),
        (
            &["exec", "--watch", "--watch-interval", "soon"],
            64,
            "expected a number",
        ),
        (&["serve", "--watch-interval", "1s"], 64, "--watch"),
    ];
    for (args, exit, says) in cases {
        let mut cmd = bin();
        cmd.args(*args).arg("--workspace").arg(ws.path());
        if args[0] == "call" {
            cmd.args(["Read", r#"{"file_path":"notes.txt"}"#]);
        }
        let out = cmd.stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*exit), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(!ws.path().join(".toolgate/audit.jsonl").exists());
}
