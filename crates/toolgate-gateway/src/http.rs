//! The Streamable HTTP client transport on the workspace's reqwest 0.12: rmcp's own
//! `-reqwest` feature would pull reqwest 0.13 as a second HTTP stack, so this implements
//! rmcp's [`StreamableHttpClient`] over the client toolgate already links.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::StreamExt as _;
use futures::stream::BoxStream;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use rmcp::ServiceExt as _;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

use crate::connect::{GatewayClient, Listener};

/// The largest JSON body (or error body) read from an upstream HTTP response.
pub const MAX_HTTP_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The largest single SSE event accepted from an upstream.
pub const MAX_SSE_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// A reqwest 0.12 client with the server's configured headers.
#[derive(Clone)]
pub(crate) struct Client {
    http: reqwest::Client,
    headers: HeaderMap,
    /// Sees every message as it arrives (progress, see `Listener::observe_raw`).
    listener: Arc<Listener>,
}

type Error = StreamableHttpError<reqwest::Error>;

fn unexpected(m: String) -> Error {
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(m))
}

fn media_type_is(value: Option<&HeaderValue>, expected: &str) -> bool {
    value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

impl Client {
    fn request(
        &self,
        builder: reqwest::RequestBuilder,
        session: Option<&str>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let mut b = builder
            .header(
                http::header::ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            )
            .headers(self.headers.clone());
        if let Some(s) = session {
            b = b.header(HEADER_SESSION_ID, s);
        }
        if let Some(token) = auth {
            b = b.bearer_auth(token);
        }
        for (k, v) in custom {
            b = b.header(k, v);
        }
        b
    }
}

/// Reads at most [`MAX_HTTP_BODY_BYTES`] of a body.
async fn bounded_body(response: reqwest::Response) -> Result<Vec<u8>, Error> {
    let mut body = Vec::new();
    let mut response = response;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(StreamableHttpError::Client)?
    {
        if body.len() + chunk.len() > MAX_HTTP_BODY_BYTES {
            return Err(StreamableHttpError::ResponseBodyTooLarge {
                max_size: MAX_HTTP_BODY_BYTES,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An SSE body as events, refusing one event larger than [`MAX_SSE_EVENT_BYTES`].
pub(crate) fn sse_events(
    response: reqwest::Response,
    listener: Arc<Listener>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut since_event = 0usize;
    // reqwest's `stream` feature is off in the workspace; `chunk()` reads the same body.
    let chunks = futures::stream::unfold(response, |mut r| async move {
        match r.chunk().await {
            Ok(Some(c)) => Some((Ok(c), r)),
            Ok(None) => None,
            Err(e) => Some((Err(e), r)),
        }
    });
    let bytes = chunks.map(move |chunk| {
        let chunk = chunk.map_err(|e| std::io::Error::other(e.to_string()))?;
        // Bytes since the last blank line bound one event's size.
        match chunk.windows(2).rposition(|w| w == b"\n\n") {
            Some(at) => since_event = chunk.len() - at,
            None => since_event += chunk.len(),
        }
        if since_event > MAX_SSE_EVENT_BYTES {
            return Err(std::io::Error::other(format!(
                "an SSE event is larger than {MAX_SSE_EVENT_BYTES} bytes"
            )));
        }
        Ok(chunk)
    });
    SseStream::from_bytes_stream(bytes)
        .inspect(move |event| {
            if let Ok(Sse {
                data: Some(data), ..
            }) = event
            {
                listener.observe_raw(data.as_bytes());
            }
        })
        .boxed()
}

impl StreamableHttpClient for Client {
    type Error = reqwest::Error;

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let mut b = self.request(
            self.http.get(uri.as_ref()),
            session_id.as_deref(),
            auth_header,
            custom_headers,
        );
        if let Some(id) = last_event_id {
            b = b.header(HEADER_LAST_EVENT_ID, id);
        }
        let response = b.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !response.status().is_success() {
            return Err(unexpected(format!("HTTP {} on GET", response.status())));
        }
        if !media_type_is(
            response.headers().get(http::header::CONTENT_TYPE),
            EVENT_STREAM_MIME_TYPE,
        ) {
            return Err(StreamableHttpError::UnexpectedContentType(
                response
                    .headers()
                    .get(http::header::CONTENT_TYPE)
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            ));
        }
        Ok(sse_events(response, Arc::clone(&self.listener)))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let response = self
            .request(
                self.http.delete(uri.as_ref()),
                Some(&session_id),
                auth_header,
                custom_headers,
            )
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        // A server that does not support DELETE keeps the session to itself.
        let _ = response.status();
        Ok(())
    }

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let had_session = session_id.is_some();
        let response = self
            .request(
                self.http.post(uri.as_ref()),
                session_id.as_deref(),
                auth_header,
                custom_headers,
            )
            .json(&message)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        let session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let content_type = response.headers().get(http::header::CONTENT_TYPE).cloned();
        if media_type_is(content_type.as_ref(), EVENT_STREAM_MIME_TYPE) && status.is_success() {
            return Ok(StreamableHttpPostResponse::Sse(
                sse_events(response, Arc::clone(&self.listener)),
                session,
            ));
        }
        if media_type_is(content_type.as_ref(), JSON_MIME_TYPE) {
            let body = bounded_body(response).await?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(m) => {
                    self.listener.observe(&m);
                    Ok(StreamableHttpPostResponse::Json(m, session))
                }
                Err(_) if awaits_nothing && status.is_success() => {
                    Ok(StreamableHttpPostResponse::Accepted)
                }
                Err(e) => Err(unexpected(format!("HTTP {status}: not JSON-RPC: {e}"))),
            };
        }
        if awaits_nothing && status.is_success() {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            return Err(unexpected(format!("HTTP {status}")));
        }
        Err(StreamableHttpError::UnexpectedContentType(
            content_type.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        ))
    }
}

/// The configured headers as a header map; a name or value HTTP cannot carry is an error.
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let name = HeaderName::try_from(k.as_str()).map_err(|e| format!("header `{k}`: {e}"))?;
        let value = HeaderValue::try_from(v.as_str()).map_err(|e| format!("header `{k}`: {e}"))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Connects to a Streamable HTTP server.
pub(crate) async fn connect(
    client: GatewayClient,
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<RunningService<RoleClient, GatewayClient>, String> {
    let map = header_map(headers)?;
    let http = reqwest::Client::builder()
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let transport = StreamableHttpClientTransport::with_client(
        Client {
            http,
            headers: map,
            listener: Arc::clone(&client.listener),
        },
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    );
    client
        .serve(transport)
        .await
        .map_err(|e| format!("initialize failed: {e}"))
}
