//! A minimal MCP Streamable HTTP client for tests that drive `toolgate serve --http`
//! processes: `initialize`, `notifications/initialized`, `tools/call`, with the answer read
//! from a JSON or an SSE response. It tells a call that got no answer (the server died, the
//! connection broke) from one that was answered, which is what a fleet test counts.

use std::time::Duration;

use serde_json::{Value, json};

/// The protocol version the client speaks.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// How long one request may take before the test counts it unanswered.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a request got no JSON-RPC answer.
#[derive(Debug)]
pub enum Unanswered {
    /// No HTTP response: refused, reset, timed out.
    Transport(String),
    /// The server no longer knows the session (it restarted): open a new one.
    SessionGone,
    /// An HTTP error status or an unreadable body.
    Http(u16, String),
}

/// One MCP session on one server.
pub struct McpHttp {
    client: reqwest::Client,
    url: String,
    session: String,
}

impl McpHttp {
    /// Opens a session at `base` (`http://127.0.0.1:PORT`) as client `name`.
    pub async fn connect(
        client: &reqwest::Client,
        base: &str,
        name: &str,
    ) -> Result<McpHttp, Unanswered> {
        let url = format!("{base}/mcp");
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": name, "version": "1"}}});
        let response = post(client, &url, None, &init).await?;
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| Unanswered::Http(0, "no Mcp-Session-Id".into()))?;
        answer(response, "init").await?;
        let mut mcp = McpHttp {
            client: client.clone(),
            url,
            session,
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        post(&mcp.client, &mcp.url, Some(&mcp.session), &note).await?;
        mcp.session = mcp.session.clone();
        Ok(mcp)
    }

    /// Calls `tool` with JSON-RPC id `id` (the gate's call id); the `tools/call` result.
    pub async fn call(&self, id: &str, tool: &str, arguments: Value) -> Result<Value, Unanswered> {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                             "params": {"name": tool, "arguments": arguments}});
        let response = post(&self.client, &self.url, Some(&self.session), &request).await?;
        let message = answer(response, id).await?;
        match message.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(Unanswered::Http(
                200,
                format!("a JSON-RPC error: {message}"),
            )),
        }
    }
}

/// The `toolgate/code` of a `tools/call` result, or `ok`.
pub fn code(result: &Value) -> String {
    if result["isError"] == true {
        result["_meta"]["toolgate/code"]
            .as_str()
            .unwrap_or("error")
            .to_owned()
    } else {
        "ok".to_owned()
    }
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> Result<reqwest::Response, Unanswered> {
    let mut request = client
        .post(url)
        .timeout(REQUEST_TIMEOUT)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .json(body);
    if let Some(s) = session {
        request = request.header("mcp-session-id", s);
    }
    let response = request
        .send()
        .await
        .map_err(|e| Unanswered::Transport(e.to_string()))?;
    match response.status().as_u16() {
        200..=299 => Ok(response),
        404 if session.is_some() => Err(Unanswered::SessionGone),
        status => Err(Unanswered::Http(
            status,
            response.text().await.unwrap_or_default(),
        )),
    }
}

/// The JSON-RPC message answering `id`, from a JSON body or an SSE stream.
async fn answer(response: reqwest::Response, id: &str) -> Result<Value, Unanswered> {
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let body = response
        .text()
        .await
        .map_err(|e| Unanswered::Transport(e.to_string()))?;
    let messages: Vec<Value> = if sse {
        body.split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                serde_json::from_str(&data.join("\n")).ok()
            })
            .collect()
    } else {
        serde_json::from_str(&body).into_iter().collect()
    };
    messages
        .into_iter()
        .find(|m| m["id"] == id)
        .ok_or_else(|| Unanswered::Transport(format!("no answer to {id} in: {body}")))
}
