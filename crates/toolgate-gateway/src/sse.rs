//! The legacy HTTP+SSE client transport (protocol 2024-11-05): a `GET` opens an event
//! stream whose first `endpoint` event names the URL to `POST` messages to; answers come
//! back on the stream as `message` events.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt as _;
use rmcp::ServiceExt as _;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RoleClient, RunningService};

use crate::connect::GatewayClient;
use crate::http::{header_map, sse_events};

/// Opens the event stream, waits for the `endpoint` event and connects.
pub(crate) async fn connect(
    client: GatewayClient,
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<RunningService<RoleClient, GatewayClient>, String> {
    let headers = header_map(headers)?;
    let http = reqwest::Client::builder()
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let response = http
        .get(url)
        .header(http::header::ACCEPT, "text/event-stream")
        .headers(headers.clone())
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("GET {url}: HTTP {}", response.status()));
    }
    let base = response.url().clone();
    let mut events = sse_events(response, Arc::clone(&client.listener));
    let endpoint = loop {
        match events.next().await {
            Some(Ok(e)) if e.event.as_deref() == Some("endpoint") => {
                let data = e.data.unwrap_or_default();
                break base
                    .join(data.trim())
                    .map_err(|err| format!("the endpoint event `{data}` is not a URL: {err}"))?;
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(format!("the event stream failed: {e}")),
            None => return Err("the event stream ended before its `endpoint` event".into()),
        }
    };
    if endpoint.origin() != base.origin() {
        return Err(format!(
            "the endpoint `{endpoint}` is on another origin than `{base}`; refused"
        ));
    }
    let (tx, mut rx) = futures::channel::mpsc::unbounded::<ClientJsonRpcMessage>();
    tokio::spawn(async move {
        // One POST at a time keeps the messages in order (initialize before initialized).
        while let Some(message) = rx.next().await {
            let sent = http
                .post(endpoint.clone())
                .headers(headers.clone())
                .json(&message)
                .send()
                .await;
            if let Err(e) = sent {
                tracing::warn!("POST {endpoint}: {e}");
            }
        }
    });
    let incoming = events.filter_map(|event| async move {
        let event = event.ok()?;
        if event.event.as_deref().is_some_and(|kind| kind != "message") {
            return None;
        }
        serde_json::from_str::<ServerJsonRpcMessage>(event.data.as_deref()?).ok()
    });
    client
        .serve((tx, Box::pin(incoming)))
        .await
        .map_err(|e| format!("initialize failed: {e}"))
}
