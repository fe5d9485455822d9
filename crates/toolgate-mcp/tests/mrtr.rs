//! Approvals on the sessionless 2026-07-28 protocol, driven with raw JSON-RPC lines over an
//! in-memory stdio connection: an "ask" becomes an `input_required` result carrying an
//! elicitation form and a sealed `requestState`; the retry with the answer runs (or
//! refuses) the call; a state that does not verify refuses the call and runs nothing.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};
use toolgate_core::stages::{AuditReceipt, AuditSink};
use toolgate_core::{Gate, Registry};
use toolgate_mcp::ElicitingPrompter;
use toolgate_policy::{DenyAllPrompter, Engine};
use toolgate_policy::{EnginePolicy, EnginePrompter};
use toolgate_protocol::{CallRecord, Decision, ErrorCode, Layer};

/// Keeps every audit record.
#[derive(Default)]
struct Records(Mutex<Vec<CallRecord>>);

impl AuditSink for Records {
    fn ready(&self) -> Result<(), toolgate_core::stages::AuditFailure> {
        Ok(())
    }

    fn record(&self, record: &CallRecord) -> AuditReceipt {
        self.0.lock().unwrap().push(record.clone());
        AuditReceipt::done(Ok(()))
    }
}

impl Records {
    fn all(&self) -> Vec<CallRecord> {
        self.0.lock().unwrap().clone()
    }
}

struct Server {
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    audit: Arc<Records>,
    next_id: u64,
    dir: tempfile::TempDir,
}

/// The `_meta` a 2026-07-28 client sends with every request.
fn modern_meta(elicitation: bool) -> Value {
    let caps = if elicitation {
        json!({"elicitation": {"form": {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "mrtr-test", "version": "1"},
    })
}

impl Server {
    /// `toolgate serve` as the CLI builds it for MCP: the permission engine (default mode,
    /// no rules: Bash asks) and the eliciting prompter, falling back to deny-all.
    async fn start(state_ttl: Option<Duration>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(
            Engine::builder()
                .cwd(dir.path())
                .approvals_file(Some(settings_file(dir.path())))
                .build()
                .unwrap(),
        );
        let mut prompter = ElicitingPrompter::new(Arc::clone(&engine), Arc::new(DenyAllPrompter));
        if let Some(ttl) = state_ttl {
            prompter = prompter.with_state_ttl(ttl);
        }
        let config = toolgate_tools::shell::ShellConfig::default();
        let registry = toolgate_tools::register_file_tools(
            toolgate_tools::shell::register_shell_tools(Registry::builder(), &config),
            &toolgate_tools::FileToolsConfig::default(),
        )
        .build()
        .unwrap();
        let audit = Arc::new(Records::default());
        let gate = Gate::builder()
            .workspace(dir.path())
            .registry(registry)
            .policy(Arc::new(EnginePolicy(Arc::clone(&engine))))
            .prompter(Arc::new(EnginePrompter(Arc::new(prompter))))
            .audit(Arc::clone(&audit) as Arc<dyn AuditSink>)
            .build()
            .unwrap();
        let (client, server) = tokio::io::duplex(1 << 20);
        let (sr, sw) = tokio::io::split(server);
        tokio::spawn(toolgate_mcp::serve_io(Arc::new(gate), sr, sw));
        let (cr, cw) = tokio::io::split(client);
        Self {
            lines: BufReader::new(cr).lines(),
            writer: cw,
            audit,
            next_id: 1,
            dir,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    async fn send(&mut self, msg: &Value) {
        let mut line = msg.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("a reply within 20 s")
            .unwrap()
            .expect("the server is still talking");
        serde_json::from_str(&line).expect("stdout carries only JSON")
    }

    /// Sends a request and returns its whole response (skipping notifications).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let v = self.recv().await;
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
        }
    }

    /// A 2026-07-28 `tools/call`, with an answer when `retry` is given.
    async fn call(&mut self, tool: &str, args: Value, retry: Option<(&str, Value)>) -> Value {
        self.call_as(true, tool, args, retry).await
    }

    async fn call_as(
        &mut self,
        elicitation: bool,
        tool: &str,
        args: Value,
        retry: Option<(&str, Value)>,
    ) -> Value {
        let mut params =
            json!({"name": tool, "arguments": args, "_meta": modern_meta(elicitation)});
        if let Some((state, answer)) = retry {
            params["requestState"] = json!(state);
            if !answer.is_null() {
                params["inputResponses"] = json!({ toolgate_mcp::APPROVAL_INPUT: answer });
            }
        }
        self.request("tools/call", params).await
    }

    /// Asks for `tool(args)` and returns the `input_required` result.
    async fn ask(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args, None).await;
        let result = r["result"].clone();
        assert_eq!(result["resultType"], "input_required", "{r}");
        result
    }
}

fn settings_file(dir: &Path) -> PathBuf {
    dir.join(".toolgate").join("settings.local.json")
}

fn state(input_required: &Value) -> String {
    input_required["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned()
}

fn accept(decision: &str) -> Value {
    json!({"action": "accept", "content": {"decision": decision}})
}

/// The JSON-RPC error of a refused `requestState`: invalid params, with the reason.
fn refused(response: &Value, reason: &str) {
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert_eq!(
        response["error"]["data"]["toolgate/reason"], reason,
        "{response}"
    );
    assert_eq!(
        response["error"]["data"]["toolgate/code"],
        "invalid_request_state"
    );
    assert!(response.get("result").is_none());
}

fn touch(name: &str) -> Value {
    json!({"command": format!("touch {name}")})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_returns_input_required_with_the_form_and_runs_nothing() {
    let mut s = Server::start(None).await;
    let r = s.ask("Bash", touch("made")).await;
    assert!(!s.path("made").exists(), "nothing ran");

    let requests = r["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1);
    let q = &requests[toolgate_mcp::APPROVAL_INPUT];
    assert_eq!(q["method"], "elicitation/create");
    assert_eq!(q["params"]["mode"], "form");
    let message = q["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("Bash") && message.contains("touch made"),
        "{message}"
    );
    let decision = &q["params"]["requestedSchema"]["properties"]["decision"];
    let choices: Vec<&str> = decision["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["const"].as_str().unwrap())
        .collect();
    assert_eq!(choices, ["allow_once", "allow_always", "deny"]);
    assert!(
        decision["oneOf"][1]["title"]
            .as_str()
            .unwrap()
            .contains("Bash(touch made)")
    );
    assert_eq!(decision["default"], "deny");
    assert!(!state(&r).is_empty());
    assert_eq!(r["_meta"]["toolgate/code"], "input_required");
    assert_eq!(r["_meta"]["toolgate/decision"], "ask");

    // One audit record, saying the call waits: neither allowed nor denied.
    let records = s.audit.all();
    assert_eq!(records.len(), 1, "{records:?}");
    let rec = &records[0];
    assert_eq!(rec.code, Some(ErrorCode::InputRequired));
    assert_eq!(rec.client.as_deref(), Some("mrtr-test"));
    let v = rec.verdict.as_ref().unwrap();
    assert_eq!((v.decision, v.layer), (Decision::Ask, Layer::User));
    assert!(
        v.reason.starts_with("waiting for the user's answer"),
        "{}",
        v.reason
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_once_runs_the_call_exactly_once() {
    let mut s = Server::start(None).await;
    let args = json!({"command": "echo ran >> count"});
    let r = s.ask("Bash", args.clone()).await;
    let st = state(&r);
    assert!(!s.path("count").exists());

    let ok = s
        .call("Bash", args.clone(), Some((&st, accept("allow_once"))))
        .await;
    let result = &ok["result"];
    assert_eq!(result["isError"], false, "{ok}");
    assert_eq!(result["_meta"]["toolgate/layer"], "user");
    assert_eq!(std::fs::read_to_string(s.path("count")).unwrap(), "ran\n");

    // The same state and answer again: refused, and the command does not run again.
    let replay = s
        .call("Bash", args.clone(), Some((&st, accept("allow_once"))))
        .await;
    refused(&replay, "replayed");
    assert_eq!(std::fs::read_to_string(s.path("count")).unwrap(), "ran\n");

    // Allow once saved nothing: the next call is asked again.
    s.ask("Bash", args).await;

    let records = s.audit.all();
    let summary: Vec<(Option<ErrorCode>, Option<Decision>)> = records
        .iter()
        .map(|r| (r.code, r.verdict.as_ref().map(|v| v.decision)))
        .collect();
    assert_eq!(
        summary,
        [
            (Some(ErrorCode::InputRequired), Some(Decision::Ask)),
            (None, Some(Decision::Allow)),
            (Some(ErrorCode::InvalidRequest), None),
            (Some(ErrorCode::InputRequired), Some(Decision::Ask)),
        ]
    );
    assert_eq!(records[1].status, toolgate_protocol::CallStatus::Ok);
    assert_eq!(
        records[1].verdict.as_ref().unwrap().reason,
        "approved once by the user"
    );
    assert!(
        records[2].stages[0]
            .note
            .as_deref()
            .unwrap()
            .contains("replayed")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_decline_and_cancel_refuse_the_call() {
    let mut s = Server::start(None).await;
    let answers = [
        (
            json!({"action": "accept", "content": {"decision": "deny", "message": "use make"}}),
            "use make",
        ),
        (json!({"action": "decline"}), "declined"),
        (json!({"action": "cancel"}), "dismissed"),
        (accept("maybe"), "not one of the choices"),
    ];
    for (answer, says) in answers {
        let r = s.ask("Bash", touch("never")).await;
        let st = state(&r);
        let d = s.call("Bash", touch("never"), Some((&st, answer))).await;
        let result = &d["result"];
        assert_eq!(result["isError"], true, "{d}");
        assert_eq!(result["_meta"]["toolgate/code"], "denied");
        assert_eq!(result["_meta"]["toolgate/layer"], "user");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(says), "{text}");
    }
    assert!(!s.path("never").exists());
    let denied = s
        .audit
        .all()
        .iter()
        .filter(|r| r.code == Some(ErrorCode::Denied))
        .count();
    assert_eq!(denied, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_saves_the_rule_the_legacy_path_saves() {
    let mut s = Server::start(None).await;
    let r = s.ask("Bash", touch("kept")).await;
    let ok = s
        .call(
            "Bash",
            touch("kept"),
            Some((&state(&r), accept("allow_always"))),
        )
        .await;
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert!(s.path("kept").exists());
    // The saved rule answers the next call: no question.
    let again = s.call("Bash", touch("kept"), None).await;
    assert_eq!(again["result"]["isError"], false, "{again}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(settings_file(s.dir.path())).unwrap())
            .unwrap();
    assert!(
        saved["permissions"]["allow"]
            .as_array()
            .unwrap()
            .contains(&json!("Bash(touch kept)")),
        "{saved}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_state_is_refused_and_nothing_runs() {
    let mut s = Server::start(None).await;
    let r = s.ask("Bash", touch("tampered")).await;
    let st = state(&r);
    // Change one character of the signed part.
    let mut chars: Vec<char> = st.chars().collect();
    let at = chars.len() / 2;
    chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
    let bad: String = chars.into_iter().collect();
    let d = s
        .call(
            "Bash",
            touch("tampered"),
            Some((&bad, accept("allow_once"))),
        )
        .await;
    refused(&d, "invalid");
    let d = s
        .call(
            "Bash",
            touch("tampered"),
            Some(("rs1.e30.AAAA", accept("allow_once"))),
        )
        .await;
    refused(&d, "invalid");
    assert!(!s.path("tampered").exists());
    // The refusal is audited.
    let records = s.audit.all();
    let last = records.last().unwrap();
    assert_eq!(last.code, Some(ErrorCode::InvalidRequest));
    assert_eq!(last.tool, "Bash");
    // The untouched state still works: refusals do not use it up.
    let ok = s
        .call("Bash", touch("tampered"), Some((&st, accept("allow_once"))))
        .await;
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert!(s.path("tampered").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_for_other_arguments_or_another_tool_is_refused() {
    let mut s = Server::start(None).await;
    let r = s.ask("Bash", touch("asked")).await;
    let st = state(&r);
    let d = s
        .call("Bash", touch("other"), Some((&st, accept("allow_once"))))
        .await;
    refused(&d, "other_input");
    let d = s
        .call("Write", touch("asked"), Some((&st, accept("allow_once"))))
        .await;
    refused(&d, "other_tool");
    assert!(!s.path("asked").exists() && !s.path("other").exists());
    // Key order does not matter: the arguments are compared in canonical form.
    let r = s
        .ask("Bash", json!({"command": "touch ordered", "timeout": 5000}))
        .await;
    let ok = s
        .call(
            "Bash",
            json!({"timeout": 5000, "command": "touch ordered"}),
            Some((&state(&r), accept("allow_once"))),
        )
        .await;
    assert_eq!(ok["result"]["isError"], false, "{ok}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_state_is_refused() {
    let mut s = Server::start(Some(Duration::from_millis(50))).await;
    let r = s.ask("Bash", touch("late")).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let d = s
        .call(
            "Bash",
            touch("late"),
            Some((&state(&r), accept("allow_once"))),
        )
        .await;
    refused(&d, "expired");
    assert!(!s.path("late").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_without_state_are_refused_and_a_missing_answer_is_asked_again() {
    let mut s = Server::start(None).await;
    let d = s
        .request(
            "tools/call",
            json!({"name": "Bash", "arguments": touch("x"), "_meta": modern_meta(true),
                   "inputResponses": {"approval": accept("allow_once")}}),
        )
        .await;
    refused(&d, "responses_without_state");
    let r = s.ask("Bash", touch("x")).await;
    let again = s
        .call("Bash", touch("x"), Some((&state(&r), Value::Null)))
        .await;
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    let malformed = s
        .call(
            "Bash",
            touch("x"),
            Some((&state(&again["result"]), json!({"action": "shrug"}))),
        )
        .await;
    refused(&malformed, "malformed_answer");
    assert!(!s.path("x").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_gets_the_configured_prompter() {
    let mut s = Server::start(None).await;
    let r = s.call_as(false, "Bash", touch("mute"), None).await;
    let result = &r["result"];
    assert_eq!(result["isError"], true, "{r}");
    assert_eq!(result["_meta"]["toolgate/code"], "denied");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("nobody can be asked")
    );
    assert!(!s.path("mute").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_clients_are_still_asked_with_elicitation_requests() {
    let mut s = Server::start(None).await;
    let init = s
        .request(
            "initialize",
            json!({"protocolVersion": "2025-06-18",
                   "capabilities": {"elicitation": {"form": {}}},
                   "clientInfo": {"name": "legacy", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["serverInfo"]["name"], "toolgate");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let id = 99;
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "Bash", "arguments": touch("legacy")}}))
        .await;
    // The server asks with a request of its own, and the call waits for the answer.
    let ask = loop {
        let v = s.recv().await;
        if v.get("method") == Some(&json!("elicitation/create")) {
            break v;
        }
    };
    assert!(!s.path("legacy").exists());
    s.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": accept("allow_once")}))
        .await;
    let done = loop {
        let v = s.recv().await;
        if v.get("id") == Some(&json!(id)) {
            break v;
        }
    };
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert!(
        done["result"].get("resultType").is_none(),
        "legacy shape: {done}"
    );
    assert!(s.path("legacy").exists());
}
