//! A fixture model endpoint: a local HTTP/1.1 server that answers Anthropic Messages
//! (`POST /v1/messages`) and OpenAI chat completions (`POST /chat/completions`) requests
//! from a script, and keeps every request body for the test to read.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// What the script answers to request number `n` (0-based) with body `body`: status and body.
pub type Script = Arc<dyn Fn(usize, &Value) -> (u16, String) + Send + Sync>;

/// A running fixture server.
pub struct ModelServer {
    pub url: String,
    pub requests: Arc<Mutex<Vec<(String, Value)>>>,
}

impl ModelServer {
    /// Starts a server answering with `script`.
    pub fn start(script: Script) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let script = Arc::clone(&script);
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || serve(stream, &script, &seen));
            }
        });
        Self { url, requests }
    }

    /// The request bodies so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(_, b)| b.clone())
            .collect()
    }

    /// The request paths so far.
    pub fn paths(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(p, _)| p.clone())
            .collect()
    }
}

fn serve(stream: TcpStream, script: &Script, seen: &Mutex<Vec<(String, Value)>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_owned();
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let n = {
            let mut s = seen.lock().unwrap();
            s.push((path, body.clone()));
            s.len() - 1
        };
        let (status, text) = script(n, &body);
        let reply = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
            text.len()
        );
        if out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// An Anthropic Messages response with these content blocks.
pub fn messages(content: Value) -> (u16, String) {
    let stop = if content
        .as_array()
        .is_some_and(|a| a.iter().any(|b| b["type"] == "tool_use"))
    {
        "tool_use"
    } else {
        "end_turn"
    };
    (
        200,
        json!({"id": "msg", "type": "message", "role": "assistant", "model": "fixture",
               "content": content, "stop_reason": stop})
        .to_string(),
    )
}

/// An Anthropic tool_use block.
pub fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

/// An Anthropic text block.
pub fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// A chat completions response with text and tool calls `(id, name, arguments)`.
pub fn chat(content: Option<&str>, calls: &[(&str, &str, Value)]) -> (u16, String) {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    (
        200,
        json!({"id": "c", "object": "chat.completion", "model": "fixture",
               "choices": [{"index": 0, "message": message,
                            "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}]})
        .to_string(),
    )
}

/// The tool results an Anthropic request carries, by tool_use id: (text, is_error).
pub fn anthropic_results(body: &Value) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                out.push((
                    b["tool_use_id"].as_str().unwrap_or("").to_owned(),
                    b["content"].as_str().unwrap_or("").to_owned(),
                    b["is_error"].as_bool().unwrap_or(false),
                ));
            }
        }
    }
    out
}
