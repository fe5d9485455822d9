//! The server over an in-memory byte stream, driven with raw JSON-RPC lines: what any
//! stdio client sees.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};
use toolgate_core::{Gate, Registry, ToolContext, ToolError, TypedTool, ViewOptions};
use toolgate_protocol::*;

fn spec(name: &str, read_only: bool, output: Option<Value>) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        version: "1".into(),
        description: format!("{name} for tests"),
        input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}},
                             "required": ["text"], "additionalProperties": false}),
        output_schema: output,
        annotations: ToolAnnotations {
            read_only,
            ..Default::default()
        },
        concurrency: Concurrency::Shared,
        timeout: TimeoutSpec {
            default_ms: 60_000,
            max_ms: 60_000,
        },
        subject: Subject::None,
    }
}

#[derive(serde::Deserialize)]
struct Input {
    text: String,
}

struct Echo(ToolSpec);

#[async_trait::async_trait]
impl TypedTool for Echo {
    type Input = Input;
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, input: Input, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(input.text.clone()).with_structured(json!({"echo": input.text})))
    }
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Waits until cancelled and says so through the flag.
struct Slow(ToolSpec, Arc<AtomicBool>);

#[async_trait::async_trait]
impl TypedTool for Slow {
    type Input = Input;
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, _input: Input, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        // The gate stops a cancelled tool by dropping its future, or the tool notices.
        let _stopped = SetOnDrop(Arc::clone(&self.1));
        ctx.cancel.cancelled().await;
        Err(ToolError::Cancelled)
    }
}

struct Client {
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    server: tokio::task::JoinHandle<Result<(), toolgate_mcp::ServeError>>,
    _dir: tempfile::TempDir,
}

impl Client {
    async fn start(stopped: Arc<AtomicBool>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let output = json!({"type": "object", "properties": {"echo": {"type": "string"}}});
        let registry = Registry::builder()
            .register(Echo(spec("Echo", true, Some(output))))
            .register(Slow(spec("Slow", true, None), stopped))
            .register(Echo(spec("Secret", true, None)))
            .build()
            .unwrap();
        let gate = Gate::builder()
            .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
            .workspace(dir.path())
            .registry(registry)
            .view(ViewOptions {
                deny: vec!["Secret".into()],
                ..Default::default()
            })
            .build()
            .unwrap();
        let (client, server) = tokio::io::duplex(1 << 20);
        let (sr, sw) = tokio::io::split(server);
        let server = tokio::spawn(toolgate_mcp::serve_io(Arc::new(gate), sr, sw));
        let (cr, cw) = tokio::io::split(client);
        Self {
            lines: BufReader::new(cr).lines(),
            writer: cw,
            server,
            _dir: dir,
        }
    }

    async fn send(&mut self, msg: &str) {
        self.writer.write_all(msg.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a reply within 10 s")
            .unwrap()
            .expect("the server is still talking");
        serde_json::from_str(&line).expect("stdout carries only JSON")
    }

    /// Sends a request and returns its response (skipping notifications).
    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        )
        .await;
        loop {
            let v = self.recv().await;
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
        }
    }

    async fn initialize(&mut self) {
        let init = self
            .request(
                1,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "rust-test", "version": "1"}}),
            )
            .await;
        assert_eq!(init["result"]["serverInfo"]["name"], "toolgate");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
    }

    async fn call(&mut self, id: u64, name: &str, args: Value) -> Value {
        let r = self
            .request(id, "tools/call", json!({"name": name, "arguments": args}))
            .await;
        r["result"].clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_the_view_with_annotations_and_output_schemas() {
    let mut c = Client::start(Arc::default()).await;
    c.initialize().await;
    let list = c.request(2, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Echo", "Slow"], "the denied tool is not listed");
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);
    assert_eq!(tools[0]["outputSchema"]["type"], "object");
    assert!(tools[1].get("outputSchema").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_go_through_the_gate_with_machine_readable_codes() {
    let mut c = Client::start(Arc::default()).await;
    c.initialize().await;
    let ok = c.call(2, "Echo", json!({"text": "hi"})).await;
    assert_eq!(ok["isError"], false);
    assert_eq!(ok["content"][0]["text"], "hi");
    assert_eq!(ok["structuredContent"], json!({"echo": "hi"}));

    let denied = c.call(3, "Secret", json!({"text": "x"})).await;
    assert_eq!(denied["isError"], true);
    assert_eq!(denied["_meta"]["toolgate/code"], "denied");
    assert!(denied["_meta"]["toolgate/layer"].is_string());

    let unknown = c.call(4, "Ecko", json!({"text": "x"})).await;
    assert_eq!(unknown["_meta"]["toolgate/code"], "unknown_tool");
    assert_eq!(unknown["_meta"]["toolgate/details"]["near"][0], "Echo");

    let invalid = c.call(5, "Echo", json!({"text": 3})).await;
    assert_eq!(invalid["_meta"]["toolgate/code"], "invalid_input");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_the_tool() {
    let stopped = Arc::new(AtomicBool::new(false));
    let mut c = Client::start(Arc::clone(&stopped)).await;
    c.initialize().await;
    c.send(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                   "params": {"name": "Slow", "arguments": {"text": "x"}}})
        .to_string(),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!stopped.load(Ordering::SeqCst));
    c.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#)
        .await;
    for _ in 0..50 {
        if stopped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if !stopped.load(Ordering::SeqCst) {
        let r = c.call(9, "Echo", json!({"text": "probe"})).await;
        panic!("the tool did not see the cancellation; probe: {r}");
    }
    // The connection still works.
    let ok = c.call(8, "Echo", json!({"text": "after"})).await;
    assert_eq!(ok["content"][0]["text"], "after");
}

/// Reads the next message, which must be an error response with a null id, and returns
/// its code.
async fn anonymous_error(c: &mut Client) -> i64 {
    let v = c.recv().await;
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert!(
        v.get("id").is_some_and(Value::is_null),
        "an error without a readable id has id null: {v}"
    );
    v["error"]["code"].as_i64().expect("an error code")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_unknown_methods_do_not_stop_the_server() {
    let mut c = Client::start(Arc::default()).await;
    c.initialize().await;
    c.send("not json at all").await;
    assert_eq!(anonymous_error(&mut c).await, -32700);
    c.send(r#"{"jsonrpc": "2.0", "id": 2, "method": "#).await;
    assert_eq!(anonymous_error(&mut c).await, -32700);
    c.send("").await; // blank lines are ignored
    c.send("42").await;
    assert_eq!(anonymous_error(&mut c).await, -32600);
    c.send("[1, 2, 3]").await;
    assert_eq!(anonymous_error(&mut c).await, -32600);
    for id in [r#"{"a": 1}"#, "1.5", "true", "[1]"] {
        c.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#
        ))
        .await;
        assert_eq!(anonymous_error(&mut c).await, -32600, "id {id}");
    }
    let unknown = c.request(3, "no/such", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    // The message says what is wrong and what is served, not just the method's name.
    let message = unknown["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("method not found: no/such"),
        "{unknown}"
    );
    assert!(message.contains("tools/call"), "{unknown}");
    assert_eq!(unknown["error"]["data"]["method"], "no/such");
    let prompts = c.request(5, "prompts/list", json!({})).await;
    assert_eq!(prompts["error"]["code"], -32601);
    assert!(
        prompts["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("tools only")),
        "{prompts}"
    );
    // A string id is fine.
    c.send(r#"{"jsonrpc":"2.0","id":"s","method":"tools/list"}"#)
        .await;
    let listed = c.recv().await;
    assert_eq!(listed["id"], "s");
    assert!(listed["result"]["tools"].is_array());
    let ok = c.call(4, "Echo", json!({"text": "still here"})).await;
    assert_eq!(ok["content"][0]["text"], "still here");
}

fn slow_call(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "Slow", "arguments": {"text": "x"}}})
    .to_string()
}

/// Reads messages until one has `id`, and returns it.
async fn answer_to(c: &mut Client, id: Value) -> Value {
    loop {
        let v = c.recv().await;
        if v.get("id") == Some(&id) && v.get("method").is_none() {
            return v;
        }
    }
}

/// A client that sends calls without waiting for answers cannot make the server hold an
/// unbounded number of them: beyond the limit a request is answered "busy" at once, with
/// its id; a finished or cancelled request frees its place; an id still in use is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_are_bounded() {
    let mut c = Client::start(Arc::default()).await;
    c.initialize().await;
    let max = toolgate_mcp::MAX_IN_FLIGHT as i64;
    for id in 100..100 + max {
        c.send(&slow_call(id)).await;
    }
    for id in [500, 501, 502] {
        c.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string())
            .await;
        let busy = answer_to(&mut c, json!(id)).await;
        assert_eq!(busy["error"]["code"], toolgate_mcp::BUSY, "{busy}");
        assert!(
            busy["error"]["data"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains(&max.to_string())),
            "{busy}"
        );
    }
    c.send(&slow_call(101)).await;
    let duplicate = answer_to(&mut c, json!(101)).await;
    assert_eq!(duplicate["error"]["code"], -32600, "{duplicate}");
    // A cancelled request no longer counts (rmcp sends no answer for it).
    c.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":100}}"#)
        .await;
    let pong = c.request(503, "ping", json!({})).await;
    assert!(pong["result"].is_object(), "{pong}");
    // Answered requests free their place too: one more at a time keeps working.
    for id in 504..504 + 2 * max as u64 {
        let ok = c.call(id, "Echo", json!({"text": "x"})).await;
        assert_eq!(ok["content"][0]["text"], "x", "call {id}");
    }
}

/// Every kind of request that gets an answer frees its place: a leak would turn into
/// "busy" for every request after the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answered_requests_of_every_kind_free_their_place() {
    let mut c = Client::start(Arc::default()).await;
    let max = toolgate_mcp::MAX_IN_FLIGHT as u64;
    for id in 1..=max + 2 {
        let early = c.request(id, "tools/list", json!({})).await;
        assert!(
            early["error"]["code"].is_i64(),
            "before initialize: {early}"
        );
        assert_ne!(early["error"]["code"], toolgate_mcp::BUSY, "{early}");
    }
    c.initialize().await;
    let mut id = 1000;
    for _ in 0..max + 2 {
        for (method, params) in [
            ("no/such", json!({})),
            (
                "tools/call",
                json!({"name": "Ecko", "arguments": {"text": "x"}}),
            ),
            (
                "tools/call",
                json!({"name": "Echo", "arguments": {"text": 3}}),
            ),
            (
                "tools/call",
                json!({"name": "Secret", "arguments": {"text": "x"}}),
            ),
            ("tools/list", json!({})),
            ("ping", json!({})),
        ] {
            id += 1;
            let v = c.request(id, method, params).await;
            assert_ne!(v["error"]["code"], toolgate_mcp::BUSY, "{method}: {v}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_lines_get_an_error_and_the_connection_goes_on() {
    let mut c = Client::start(Arc::default()).await;
    c.initialize().await;
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"Echo","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(toolgate_mcp::MAX_LINE_BYTES)
    );
    // Written while reading: the server answers before the client has finished writing.
    let Client { lines, writer, .. } = &mut c;
    let write = async {
        writer.write_all(huge.as_bytes()).await.unwrap();
        writer.write_all(b"\n").await.unwrap();
    };
    let read = async {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("a reply within 30 s")
            .unwrap()
            .expect("the server is still talking");
        serde_json::from_str::<Value>(&line).unwrap()
    };
    let ((), v) = tokio::join!(write, read);
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(v["id"].is_null());
    assert!(
        v["error"]["data"]["detail"]
            .as_str()
            .unwrap()
            .contains("limit")
    );
    let ok = c.call(3, "Echo", json!({"text": "after"})).await;
    assert_eq!(ok["content"][0]["text"], "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_before_initialize_get_protocol_errors() {
    let mut c = Client::start(Arc::default()).await;
    // No initialize and no per-request _meta: not a session of either era.
    let early = c
        .request(
            1,
            "tools/call",
            json!({"name": "Echo", "arguments": {"text": "x"}}),
        )
        .await;
    assert!(early["error"]["code"].is_i64(), "{early}");
    assert!(early.get("result").is_none());
    c.initialize().await;
    let ok = c.call(2, "Echo", json!({"text": "now"})).await;
    assert_eq!(ok["content"][0]["text"], "now");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_mid_call_cancels_and_ends_the_server() {
    let stopped = Arc::new(AtomicBool::new(false));
    let mut c = Client::start(Arc::clone(&stopped)).await;
    c.initialize().await;
    c.send(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                   "params": {"name": "Slow", "arguments": {"text": "x"}}})
        .to_string(),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let Client {
        server,
        writer,
        lines,
        ..
    } = c;
    drop(writer);
    drop(lines);
    let done = tokio::time::timeout(Duration::from_secs(5), server).await;
    assert!(done.is_ok(), "the server stops when the client goes away");
    for _ in 0..50 {
        if stopped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        stopped.load(Ordering::SeqCst),
        "the running call was cancelled"
    );
}
