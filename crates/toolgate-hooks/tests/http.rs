//! `http` handlers against a local server on 127.0.0.1.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use common::Fixture;
use serde_json::json;
use toolgate_protocol::Decision;

/// Serves one connection with `response` (or never answers when `None`) and sends back
/// the request it read.
fn serve_once(response: Option<&'static str>) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = s.read(&mut chunk).unwrap();
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let len: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + len || n == 0 {
                    break;
                }
            }
        }
        let _ = tx.send(String::from_utf8_lossy(&buf).to_string());
        match response {
            Some(r) => s.write_all(r.as_bytes()).unwrap(),
            None => std::thread::sleep(Duration::from_secs(5)),
        }
    });
    (url, rx)
}

#[tokio::test]
async fn http_hook_posts_the_event_and_its_json_decides() {
    let f = Fixture::new();
    let body = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "collector says no"}}"#;
    let resp: &'static str = Box::leak(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_boxed_str(),
    );
    let (url, rx) = serve_once(Some(resp));
    let e = f.pre_engine(json!([{"type": "http", "url": url,
        "headers": {"Authorization": "Bearer $HOME", "X-Leak": "[$PATH]"},
        "allowedEnvVars": ["HOME"]}]));
    let v = f
        .pre(&e, "Echo", json!({"text": "hi"}))
        .await
        .verdict
        .unwrap();
    assert_eq!(
        (v.decision, v.reason.as_str()),
        (Decision::Deny, "collector says no")
    );
    let req = rx.recv().unwrap();
    assert!(req.starts_with("POST /hook HTTP/1.1\r\n"), "{req}");
    let home = std::env::var("HOME").unwrap_or_default();
    assert!(
        req.contains(&format!("Authorization: Bearer {home}\r\n")),
        "{req}"
    );
    assert!(
        req.contains("X-Leak: []\r\n"),
        "only allowedEnvVars expand: {req}"
    );
    let json_body: serde_json::Value =
        serde_json::from_str(req.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json_body["hook_event_name"], "PreToolUse");
    assert_eq!(json_body["tool_input"]["text"], "hi");
}

#[tokio::test]
async fn http_status_empty_body_chunked_timeout() {
    let f = Fixture::new();
    let run = |resp: Option<&'static str>, timeout: f64| {
        let (url, rx) = serve_once(resp);
        (
            f.pre_engine(json!([{"type": "http", "url": url, "timeout": timeout}])),
            rx,
        )
    };
    let (e, _rx) = run(Some("HTTP/1.1 204 No Content\r\n\r\n"), 5.0);
    let out = f.pre(&e, "Echo", json!({})).await;
    assert_eq!(out.records[0].outcome, "none");
    assert!(out.verdict.is_none());

    let (e, _rx) = run(Some("HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n"), 5.0);
    let out = f.pre(&e, "Echo", json!({})).await;
    assert_eq!(out.records[0].outcome, "error");
    assert!(out.verdict.is_none(), "status codes alone cannot block");

    let (e, _rx) = run(
        Some(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n{\"decision\": \"blo\r\n13\r\nck\", \"reason\": \"c\"}\r\n0\r\n\r\n",
        ),
        5.0,
    );
    let v = f.pre(&e, "Echo", json!({})).await.verdict.unwrap();
    assert_eq!((v.decision, v.reason.as_str()), (Decision::Deny, "c"));

    let (e, _rx) = run(None, 0.5);
    let out = f.pre(&e, "Echo", json!({})).await;
    assert_eq!(out.records[0].outcome, "timeout");

    let e = f.pre_engine(
        json!([{"type": "http", "url": "ftp://example.invalid/x", "failClosed": true}]),
    );
    let v = f.pre(&e, "Echo", json!({})).await.verdict.unwrap();
    assert_eq!(v.decision, Decision::Deny);
    assert!(
        v.reason.contains("only http:// and https://"),
        "{}",
        v.reason
    );
}

#[tokio::test]
async fn an_answer_is_read_without_waiting_for_the_server_to_close() {
    let f = Fixture::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut chunk = [0u8; 65536];
        let _ = s.read(&mut chunk);
        let body = r#"{"decision": "block", "reason": "kept open"}"#;
        let resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(resp.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_secs(10));
    });
    let e = f.pre_engine(json!([{"type": "http", "url": url, "timeout": 5}]));
    let t = std::time::Instant::now();
    let v = f.pre(&e, "Echo", json!({})).await.verdict.unwrap();
    assert_eq!(v.reason, "kept open");
    assert!(t.elapsed() < Duration::from_secs(2));
}
