//! The gateway while `toolgate serve` runs: tools an upstream adds mid-session (or brings
//! when it comes up late) reach the MCP client with `notifications/tools/list_changed`
//! under the same rules as the first ones, upstream progress is relayed, and every change
//! — tools, pins — is an audit record. Driven over raw stdio JSON-RPC against the fixture
//! upstream (tests/mcp/fixtures/upstream.py).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/mcp/fixtures/upstream.py"
);

/// How long a test waits for a message before it fails (not a timing assertion: the
/// bound only keeps a broken build from hanging the suite).
const PATIENCE: Duration = Duration::from_secs(60);

struct Serve {
    dir: tempfile::TempDir,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: u64,
    /// Notifications read while waiting for an answer.
    notes: Vec<Value>,
}

impl Serve {
    /// `toolgate serve` with the fixture as upstream `up` (its extra `args`) and `rules`
    /// (`permissions`), audited to `audit.jsonl` in the temp dir.
    fn start(args: &[&str], permissions: Value, prepare: impl FnOnce(&std::path::Path)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        prepare(dir.path());
        let mut fixture = vec![FIXTURE.to_owned()];
        fixture.extend(args.iter().map(|s| s.to_string()));
        let settings = dir.path().join("settings.json");
        std::fs::write(
            &settings,
            json!({
                "mcpServers": {"up": {"command": "python3", "args": fixture, "sandbox": false}},
                "permissions": permissions,
            })
            .to_string(),
        )
        .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .env_remove("TOOLGATE_LOG")
            .env("NO_COLOR", "1")
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .current_dir(&ws)
            .args(["serve", "--settings"])
            .arg(&settings)
            .arg("--audit")
            .arg(dir.path().join("audit.jsonl"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        let mut serve = Self {
            dir,
            child,
            stdin,
            lines,
            next_id: 0,
            notes: Vec::new(),
        };
        let init = serve.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "live-test", "version": "1"}}),
        );
        assert_eq!(
            init["result"]["capabilities"]["tools"]["listChanged"],
            json!(true),
            "{init}"
        );
        serve.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        serve
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn next(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(v) => Some(v),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("toolgate serve ended"),
        }
    }

    /// Sends a request and returns its answer, keeping the notifications read meanwhile.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + PATIENCE;
        loop {
            let msg = self
                .next(deadline)
                .unwrap_or_else(|| panic!("no answer to {method}"));
            if msg["id"] == json!(id) {
                return msg;
            }
            self.notes.push(msg);
        }
    }

    fn call(&mut self, name: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": args}))["result"].clone()
    }

    fn tool_names(&mut self) -> Vec<String> {
        let listed = self.request("tools/list", json!({}));
        listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Waits for `notifications/tools/list_changed` (one already read counts).
    fn await_list_changed(&mut self) {
        let is_change = |m: &Value| m["method"] == "notifications/tools/list_changed";
        if let Some(i) = self.notes.iter().position(is_change) {
            self.notes.remove(i);
            return;
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let msg = self
                .next(deadline)
                .expect("no notifications/tools/list_changed came");
            if is_change(&msg) {
                return;
            }
            self.notes.push(msg);
        }
    }

    fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path("audit.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The audit records of kind `mcp`, once at least `n` are written.
    fn mcp_records(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let found: Vec<Value> = self
                .audit()
                .into_iter()
                .filter(|r| r["kind"] == "mcp")
                .collect();
            if found.len() >= n || Instant::now() > deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `toolgate mcp approve up`, from another process, as the user would.
    fn approve(&self) {
        let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .current_dir(self.path("ws"))
            .args(["mcp", "approve", "up", "--settings"])
            .arg(self.path("settings.json"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A `--tools` file with the fixture's `grow` and `echo`, for the tests that approve what
/// `grow` adds (a new instance of the server must offer the same tools).
fn growing_tools(dir: &std::path::Path) {
    let object = json!({"type": "object"});
    std::fs::write(
        dir.join("tools.json"),
        json!([
            {"name": "grow", "description": "Adds tools.", "inputSchema": object},
            {"name": "echo", "description": "Echoes its input.", "inputSchema": object},
        ])
        .to_string(),
    )
    .unwrap();
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn tools_that_appear_mid_session_reach_the_client_under_the_same_rules() {
    let mut serve = Serve::start(
        &["--tools", "../tools.json"],
        json!({"allow": ["mcp__up__grow", "mcp__up__grown"],
               "deny": ["mcp__up__grown_secret"]}),
        growing_tools,
    );
    let before = serve.tool_names();
    assert!(before.contains(&"mcp__up__grow".to_owned()), "{before:?}");
    assert!(!before.iter().any(|n| n.starts_with("mcp__up__grown")));

    let grew = serve.call("mcp__up__grow", json!({}));
    assert_eq!(text(&grew), "grew", "{grew}");
    serve.await_list_changed();

    let after = serve.tool_names();
    assert!(after.contains(&"mcp__up__grown".to_owned()), "{after:?}");
    // A bare-name deny rule removes a late tool from the list, as it would a first one.
    assert!(
        !after.contains(&"mcp__up__grown_secret".to_owned()),
        "{after:?}"
    );
    // A server's new tool is not approved yet: refused, whatever the rules allow.
    let unapproved = serve.call("mcp__up__grown", json!({}));
    assert_eq!(
        unapproved["_meta"]["toolgate/code"], "denied",
        "{unapproved}"
    );
    assert!(
        text(&unapproved).contains("new and not approved"),
        "{unapproved}"
    );

    serve.approve();
    let grown = serve.call("mcp__up__grown", json!({}));
    assert!(!is_error(&grown), "{grown}");
    assert_eq!(text(&grown), "grown here");
    // The approval put the real definition in the list, and the client was told.
    serve.await_list_changed();
    let listed = serve.request("tools/list", json!({}));
    let grown_def = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__up__grown")
        .cloned()
        .unwrap();
    assert_eq!(grown_def["description"], "Appeared mid-session.");
    // The deny rule holds for the approved tool when called anyway.
    let secret = serve.call("mcp__up__grown_secret", json!({}));
    assert!(is_error(&secret), "{secret}");
    assert_eq!(secret["_meta"]["toolgate/code"], "denied", "{secret}");
    assert_eq!(secret["_meta"]["toolgate/layer"], "rule", "{secret}");

    // The change is on record.
    let records = serve.mcp_records(1);
    assert!(
        records
            .iter()
            .any(|r| r["input"]["event"] == "tools_changed" && r["input"]["server"] == "up"),
        "{records:?}"
    );
}

#[test]
fn a_tool_that_appears_asks_by_default_like_any_upstream_tool() {
    // Only `grow` is allowed: the new tools have no rule, so they ask, and with nobody to
    // ask (this client declares no elicitation) that is a refusal.
    let mut serve = Serve::start(
        &["--tools", "../tools.json"],
        json!({"allow": ["mcp__up__grow"]}),
        growing_tools,
    );
    serve.call("mcp__up__grow", json!({}));
    serve.await_list_changed();
    assert!(serve.tool_names().contains(&"mcp__up__grown".to_owned()));
    serve.approve();
    let grown = serve.call("mcp__up__grown", json!({}));
    assert!(is_error(&grown), "{grown}");
    assert_eq!(grown["_meta"]["toolgate/code"], "denied", "{grown}");
    assert_ne!(grown["_meta"]["toolgate/layer"], "tool", "{grown}");
}

#[test]
fn a_server_down_at_start_joins_when_it_comes_up() {
    let mut serve = Serve::start(
        &["--crash-init-unless", "../up.marker"],
        json!({"allow": ["mcp__up"]}),
        |_| {},
    );
    let before = serve.tool_names();
    assert!(
        !before.iter().any(|n| n.starts_with("mcp__up__")),
        "{before:?}"
    );
    // The server can start now; its next attempt (with backoff) succeeds.
    std::fs::write(serve.path("up.marker"), "").unwrap();
    serve.await_list_changed();
    let after = serve.tool_names();
    assert!(after.contains(&"mcp__up__echo".to_owned()), "{after:?}");
    let echoed = serve.call("mcp__up__echo", json!({"text": "late"}));
    assert!(!is_error(&echoed), "{echoed}");
}

#[test]
fn upstream_progress_reaches_the_client_in_order() {
    let mut serve = Serve::start(&[], json!({"allow": ["mcp__up__progress"]}), |_| {});
    let answer = serve.request(
        "tools/call",
        json!({"name": "mcp__up__progress", "arguments": {}, "_meta": {"progressToken": "p-7"}}),
    );
    assert_eq!(text(&answer["result"]), "done", "{answer}");
    let progress: Vec<&Value> = serve
        .notes
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| &m["params"])
        .collect();
    // The client's own token, the upstream's values, totals and messages, in order.
    assert_eq!(progress.len(), 3, "{progress:?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["progressToken"], "p-7");
        assert_eq!(p["progress"], json!((i + 1) as f64));
        assert_eq!(p["total"], json!(3.0));
        assert_eq!(p["message"], format!("step {}", i + 1));
    }
    // Without a token the client asked for none, and none is sent.
    serve.notes.clear();
    let quiet = serve.call("mcp__up__progress", json!({}));
    assert!(!is_error(&quiet), "{quiet}");
    assert!(
        !serve
            .notes
            .iter()
            .any(|m| m["method"] == "notifications/progress"),
        "{:?}",
        serve.notes
    );
}

#[test]
fn a_rug_pull_is_recorded_and_its_new_words_never_reach_the_client() {
    let mut serve = Serve::start(&[], json!({"allow": ["mcp__up"]}), |_| {});
    assert!(!is_error(
        &serve.call("mcp__up__echo", json!({"text": "a"}))
    ));
    let mutated = serve.call("mcp__up__mutate", json!({}));
    assert_eq!(text(&mutated), "mutated", "{mutated}");
    serve.await_list_changed();

    // The list carries a notice in place of the changed definition, never the upstream's
    // new description.
    let listed = serve.request("tools/list", json!({}));
    let echo = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__up__echo")
        .cloned()
        .unwrap();
    let description = echo["description"].as_str().unwrap();
    assert!(!description.contains("id_rsa"), "{echo}");
    assert!(description.contains("toolgate mcp approve up"), "{echo}");
    let refused = serve.call("mcp__up__echo", json!({"text": "b"}));
    assert_eq!(refused["_meta"]["toolgate/code"], "denied", "{refused}");

    let records = serve.mcp_records(1);
    let pin = records
        .iter()
        .find(|r| r["input"]["event"] == "pin_changed")
        .unwrap_or_else(|| panic!("no pin_changed record: {records:?}"));
    assert_eq!(pin["tool"], "mcp__up__echo");
    assert_eq!(pin["input"]["tool"], "echo");
    assert_eq!(pin["status"], "error");
    assert_eq!(pin["code"], "denied");
    assert!(pin["input"]["was"].is_string() && pin["input"]["now"].is_string());
    assert_ne!(pin["input"]["was"], pin["input"]["now"]);
    // Reported once, however often the definition is read again.
    serve.call("mcp__up__echo", json!({"text": "c"}));
    let again = serve.mcp_records(1);
    assert_eq!(
        again
            .iter()
            .filter(|r| r["input"]["event"] == "pin_changed")
            .count(),
        1,
        "{again:?}"
    );
    // The log with the new kind still verifies.
    let verify = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["audit", "verify"])
        .arg(serve.path("audit.jsonl"))
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

#[test]
fn serve_tells_its_clients_which_upstream_tools_are_always_loaded() {
    let mut serve = Serve::start(&["--tools", "../tools.json"], json!({}), |dir| {
        let object = json!({"type": "object"});
        std::fs::write(
            dir.join("tools.json"),
            json!([
                {"name": "echo", "description": "Echoes.", "inputSchema": object,
                 "_meta": {"anthropic/alwaysLoad": true}},
                {"name": "env", "description": "Lists names.", "inputSchema": object},
            ])
            .to_string(),
        )
        .unwrap();
    });
    let listed = serve.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let meta_of = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["_meta"]["anthropic/alwaysLoad"].clone())
            .unwrap()
    };
    // A client that defers MCP tools (Claude Code) keeps this one loaded, as it would
    // talking to the upstream directly.
    assert_eq!(meta_of("mcp__up__echo"), json!(true), "{listed}");
    assert_eq!(meta_of("mcp__up__env"), Value::Null, "{listed}");
    assert_eq!(meta_of("Read"), Value::Null, "{listed}");
}

#[test]
fn a_server_that_never_stops_changing_is_reported_at_a_bounded_rate() {
    let mut serve = Serve::start(&["--churn"], json!({"allow": ["mcp__up__echo"]}), |_| {});
    // Two seconds of a server that changes its list at every reading and says so.
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        let echoed = serve.call("mcp__up__echo", json!({"text": "still here"}));
        assert!(!is_error(&echoed), "{echoed}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let changes = serve
        .mcp_records(1)
        .into_iter()
        .filter(|r| r["input"]["event"] == "tools_changed")
        .count();
    // At most one report per second (and one pending): the registry rebuilds, client
    // notifications and audit records a server can cause are bounded, whatever it sends.
    assert!(
        (1..=4).contains(&changes),
        "{changes} tools_changed records"
    );
    let notified = serve
        .notes
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .count();
    assert!(notified <= 4, "{notified} notifications");
}
