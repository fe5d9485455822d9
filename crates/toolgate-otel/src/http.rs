//! The exporters' HTTP client: the workspace's reqwest (rustls, the system's roots), with a
//! cap on how much of a response is read.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

/// Most bytes of a collector's response read: an OTLP response is a small protobuf (a
/// partial-success count and message); anything larger is cut, not buffered.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// A reqwest client the OTLP exporters can use.
#[derive(Debug, Clone)]
pub(crate) struct Client(reqwest::Client);

impl Client {
    pub(crate) fn new(timeout: Duration) -> reqwest::Result<Self> {
        reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()
            .map(Client)
    }
}

#[async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut response = self
            .0
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await?;
        let status = response.status();
        let headers = std::mem::take(response.headers_mut());
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            let room = MAX_RESPONSE_BYTES.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if room <= chunk.len() {
                break;
            }
        }
        let mut out = Response::builder().status(status).body(Bytes::from(body))?;
        *out.headers_mut() = headers;
        Ok(out)
    }
}
