//! The model-backed auto-mode classifier: asks an Anthropic Messages or OpenAI Chat
//! Completions compatible endpoint whether a call fits the user's task. It sends the tool
//! call, the analyzer's facts and the stated task — never the agent's own prose — and
//! **fails closed**: a timeout, a transport error, a non-2xx status or an answer that is not
//! `{"decision": "allow", …}` blocks the call.
//!
//! The exchange with the model is [`ModelClient`] (one system prompt, one user turn, the
//! answer's text), which WebFetch's summaries use too. The HTTP transport is pluggable
//! ([`Transport`]). The built-in one, [`HttpTransport`], is
//! reqwest over rustls: `https://` with the system's trust store (plus any extra roots the
//! embedder adds), or plain `http://` for a local model server or an egress gateway. It follows
//! no redirects: a classifier endpoint that redirects is misconfigured, and following one
//! would send the call (and the API key) somewhere the settings never named.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::classifier::{
    Classifier, ClassifierConfig, ClassifierInput, ClassifierKind, ClassifierVerdict,
    DEFAULT_CLASSIFIER_TIMEOUT_MS,
};

/// Largest response accepted from the classifier endpoint.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
/// Tokens the classifier may answer with (a one-line JSON verdict).
const MAX_ANSWER_TOKENS: u32 = 200;

/// What the classifier model is told. The call follows as JSON in the user turn.
pub const CLASSIFIER_INSTRUCTIONS: &str = "You review one action an AI coding agent wants to take. You see the user's stated task and the exact tool call with facts from a static analyzer; you do not see the agent's reasoning. Allow the action only if it plausibly serves the task and is not destructive beyond it, does not exfiltrate data, does not weaken security settings, and does not reach systems the task does not involve. When unsure, block. Answer with one JSON object and nothing else: {\"decision\": \"allow\" or \"block\", \"reason\": \"one sentence\"}.";

/// Sends one JSON POST and returns the parsed JSON body.
#[async_trait]
pub trait Transport: Send + Sync {
    /// POSTs `body` to `url` with `headers`; `Err` for any failure (the caller blocks).
    async fn post_json(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: &Value,
    ) -> Result<Value, String>;
}

/// reqwest with rustls: `https://` (system roots + extra roots) and `http://`.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: Result<reqwest::Client, String>,
}

impl Default for HttpTransport {
    fn default() -> Self {
        Self::with_root_certificates(&[])
    }
}

impl HttpTransport {
    /// The system's trust store only.
    pub fn new() -> Self {
        Self::default()
    }

    /// The system's trust store plus `pems` (PEM-encoded CA certificates), for a private CA in
    /// front of the model endpoint. A certificate that does not parse makes every request fail
    /// (and so every classification block) rather than silently dropping the extra root.
    pub fn with_root_certificates(pems: &[Vec<u8>]) -> Self {
        let build = || -> Result<reqwest::Client, String> {
            let mut b = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .use_rustls_tls();
            for pem in pems {
                let cert = reqwest::Certificate::from_pem(pem)
                    .map_err(|e| format!("an extra root certificate does not parse: {e}"))?;
                b = b.add_root_certificate(cert);
            }
            b.build()
                .map_err(|e| format!("the HTTP client could not be set up: {e}"))
        };
        Self { client: build() }
    }

    /// A transport whose every request fails with `why` (a misconfiguration found while
    /// building it), so the classifier blocks and reports it.
    pub fn broken(why: String) -> Self {
        Self { client: Err(why) }
    }
}

#[async_trait]
impl Transport for HttpTransport {
    async fn post_json(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: &Value,
    ) -> Result<Value, String> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(format!(
                "{url}: only http:// and https:// endpoints are supported"
            ));
        }
        let mut req = client.post(url).json(body);
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let mut resp = req.send().await.map_err(|e| describe(&e))?;
        let status = resp.status();
        // Read chunk by chunk so a hostile or broken endpoint cannot make us buffer more than
        // the cap.
        let mut raw = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| describe(&e))? {
            if raw.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err("the response is too large".into());
            }
            raw.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let mut snippet = String::from_utf8_lossy(&raw).into_owned();
            snippet.truncate(200);
            return Err(format!("HTTP {}: {snippet}", status.as_u16()));
        }
        serde_json::from_slice(&raw).map_err(|e| format!("the response is not JSON: {e}"))
    }
}

/// reqwest's error with its causes (the TLS reason sits in the source chain).
fn describe(e: &reqwest::Error) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

/// HTTP headers as name/value pairs.
type Headers = Vec<(String, String)>;

/// Why a model exchange produced no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The settings name no endpoint.
    #[error("no endpoint is configured")]
    NoEndpoint,
    /// The settings select the built-in classifier, which has no endpoint.
    #[error("the builtin classifier has no endpoint")]
    Builtin,
    /// The endpoint did not answer in time.
    #[error("the model did not answer within {0} ms")]
    Timeout(u128),
    /// Transport or HTTP failure.
    #[error("the model could not be reached ({0})")]
    Unreachable(String),
    /// An answer without text.
    #[error("the model's response had no answer")]
    NoAnswer,
}

/// One Anthropic Messages or OpenAI Chat Completions compatible endpoint, as
/// `toolgate.classifier` (or another key of the same shape) names it.
pub struct ModelClient {
    config: ClassifierConfig,
    api_key: Option<String>,
    transport: Box<dyn Transport>,
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ModelClient {
    /// From settings; the API key is read from `apiKeyEnv` now.
    pub fn new(config: ClassifierConfig, transport: Box<dyn Transport>) -> Self {
        let api_key = config
            .api_key_env
            .as_deref()
            .and_then(|v| std::env::var(v).ok());
        Self {
            config,
            api_key,
            transport,
        }
    }

    /// From settings over [`HttpTransport`], with the CA file the settings name (an absolute
    /// path; an unreadable one fails every request rather than trusting only system roots).
    pub fn from_config(config: &ClassifierConfig) -> Self {
        let transport = match &config.ca_file {
            None => HttpTransport::new(),
            // Relative to what? The settings file, the cwd and the workspace all differ, so
            // only an absolute path is accepted.
            Some(path) if !path.is_absolute() => HttpTransport::broken(format!(
                "caFile {} must be an absolute path",
                path.display()
            )),
            Some(path) => match std::fs::read(path) {
                Ok(pem) => HttpTransport::with_root_certificates(&[pem]),
                Err(e) => HttpTransport::broken(format!("caFile {}: {e}", path.display())),
            },
        };
        Self::new(config.clone(), Box::new(transport))
    }

    /// The settings.
    pub fn config(&self) -> &ClassifierConfig {
        &self.config
    }

    /// `anthropic claude-…`, for results and logs.
    pub fn name(&self) -> String {
        format!(
            "{:?} {}",
            self.config.kind,
            self.config.model.as_deref().unwrap_or("")
        )
        .to_lowercase()
        .trim()
        .to_owned()
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(
            self.config
                .timeout_ms
                .unwrap_or(DEFAULT_CLASSIFIER_TIMEOUT_MS),
        )
    }

    /// The request URL and headers for this endpoint's API.
    fn target(&self) -> Result<(String, Headers), ModelError> {
        let endpoint = self
            .config
            .endpoint
            .as_deref()
            .ok_or(ModelError::NoEndpoint)?;
        let base = endpoint.trim_end_matches('/');
        let mut headers = Vec::new();
        match self.config.kind {
            ClassifierKind::Anthropic => {
                if let Some(k) = &self.api_key {
                    headers.push(("x-api-key".into(), k.clone()));
                }
                headers.push(("anthropic-version".into(), "2023-06-01".into()));
                let url = if base.ends_with("/v1") {
                    format!("{base}/messages")
                } else {
                    format!("{base}/v1/messages")
                };
                Ok((url, headers))
            }
            ClassifierKind::Openai => {
                if let Some(k) = &self.api_key {
                    headers.push(("authorization".into(), format!("Bearer {k}")));
                }
                Ok((format!("{base}/chat/completions"), headers))
            }
            ClassifierKind::Builtin => Err(ModelError::Builtin),
        }
    }

    fn request(
        &self,
        system: &str,
        user: &str,
        max_tokens: u32,
    ) -> Result<(String, Headers, Value), ModelError> {
        let (url, headers) = self.target()?;
        let model = self.config.model.clone().unwrap_or_default();
        let body = match self.config.kind {
            ClassifierKind::Openai => {
                json!({"model": model, "max_tokens": max_tokens, "temperature": 0,
                    "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]})
            }
            _ => json!({"model": model, "max_tokens": max_tokens, "system": system,
                    "messages": [{"role": "user", "content": user}]}),
        };
        Ok((url, headers, body))
    }

    /// Which API the endpoint speaks.
    pub fn kind(&self) -> ClassifierKind {
        self.config.kind
    }

    /// POSTs a whole request body in the endpoint's own API shape (a Messages or a Chat
    /// Completions request, `model` filled in when the body has none) and returns the
    /// response JSON, within the configured timeout. For callers that hold a conversation
    /// of their own (sub-agents); one-question callers use [`Self::complete`].
    pub async fn send(&self, mut body: Value) -> Result<Value, ModelError> {
        let (url, headers) = self.target()?;
        if let (Value::Object(map), Some(model)) = (&mut body, &self.config.model) {
            map.entry("model").or_insert_with(|| json!(model));
        }
        let limit = self.timeout();
        match tokio::time::timeout(limit, self.transport.post_json(&url, &headers, &body)).await {
            Err(_) => Err(ModelError::Timeout(limit.as_millis())),
            Ok(Err(e)) => Err(ModelError::Unreachable(e)),
            Ok(Ok(v)) => Ok(v),
        }
    }

    /// Sends `system` and one `user` turn; returns the answer's text.
    pub async fn complete(
        &self,
        system: &str,
        user: &str,
        max_tokens: u32,
    ) -> Result<String, ModelError> {
        let (url, headers, body) = self.request(system, user, max_tokens)?;
        let limit = self.timeout();
        match tokio::time::timeout(limit, self.transport.post_json(&url, &headers, &body)).await {
            Err(_) => Err(ModelError::Timeout(limit.as_millis())),
            Ok(Err(e)) => Err(ModelError::Unreachable(e)),
            Ok(Ok(v)) => answer_text(&v).ok_or(ModelError::NoAnswer),
        }
    }
}

/// The model-backed classifier.
#[derive(Debug)]
pub struct ModelClassifier {
    client: ModelClient,
}

impl ModelClassifier {
    /// From settings; the API key is read from `apiKeyEnv` now.
    pub fn new(config: ClassifierConfig, transport: Box<dyn Transport>) -> Self {
        Self {
            client: ModelClient::new(config, transport),
        }
    }

    /// Over an existing client.
    pub fn with_client(client: ModelClient) -> Self {
        Self { client }
    }
}

/// The answer text from either API's response shape.
fn answer_text(v: &Value) -> Option<String> {
    if let Some(blocks) = v.get("content").and_then(Value::as_array) {
        let text: String = blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        return Some(text);
    }
    v.pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// `{"decision": "allow"|"block", "reason": …}` somewhere in the text; anything else blocks.
fn verdict_from(text: &str) -> ClassifierVerdict {
    let block = |reason: String| ClassifierVerdict {
        allow: false,
        reason,
    };
    let (Some(a), Some(b)) = (text.find('{'), text.rfind('}')) else {
        return block("the classifier's answer held no verdict".into());
    };
    let Ok(v) = serde_json::from_str::<Value>(&text[a..=b]) else {
        return block("the classifier's answer was not valid JSON".into());
    };
    let reason = v
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("no reason given")
        .to_owned();
    match v.get("decision").and_then(Value::as_str) {
        Some("allow") => ClassifierVerdict {
            allow: true,
            reason,
        },
        Some("block") => block(reason),
        _ => block("the classifier's answer held no decision".into()),
    }
}

#[async_trait]
impl Classifier for ModelClassifier {
    fn name(&self) -> String {
        self.client.name()
    }

    async fn classify(&self, input: &ClassifierInput<'_>) -> ClassifierVerdict {
        let call = json!({
            "task": input.task.unwrap_or("(the user did not state a task)"),
            "tool": input.tool,
            "input": input.input,
            "facts": input.facts,
            "annotations": input.annotations,
            "workspace": input.roots,
        });
        let user = format!("The action to review:\n{call}");
        let block = |reason: String| ClassifierVerdict {
            allow: false,
            reason,
        };
        match self
            .client
            .complete(CLASSIFIER_INSTRUCTIONS, &user, MAX_ANSWER_TOKENS)
            .await
        {
            Ok(text) => verdict_from(&text),
            Err(ModelError::NoEndpoint) => {
                block("no endpoint is configured (toolgate.classifier.endpoint)".into())
            }
            Err(e @ ModelError::Builtin) => block(e.to_string()),
            Err(ModelError::Timeout(ms)) => {
                block(format!("the classifier did not answer within {ms} ms"))
            }
            Err(ModelError::Unreachable(e)) => {
                block(format!("the classifier could not be reached ({e})"))
            }
            Err(ModelError::NoAnswer) => block("the classifier's response had no answer".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_and_verdicts() {
        assert!(verdict_from("sure! {\"decision\":\"allow\",\"reason\":\"fits\"}").allow);
        assert!(!verdict_from("{\"decision\":\"maybe\"}").allow);
        assert!(!verdict_from("allow").allow);
        assert_eq!(
            answer_text(&json!({"content": [{"type": "text", "text": "x"}]})).as_deref(),
            Some("x")
        );
        assert_eq!(
            answer_text(&json!({"choices": [{"message": {"content": "y"}}]})).as_deref(),
            Some("y")
        );
    }
}
