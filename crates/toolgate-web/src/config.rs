//! Settings of the web tools — `webFetch` and `webSearch` in settings files — and every
//! limit as a named constant with the reason for its value.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use toolgate_protocol::net::{AddrList, DomainPattern};

use crate::error::WebError;

/// WebFetch: bytes read off the wire before decoding (Claude Code's 10 MiB): more than any
/// page a model should read whole, and a bound on what a hostile server can make us buffer.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 10 * 1024 * 1024;

/// WebFetch: bytes after decoding gzip/deflate/br. Text compresses four to ten times; a
/// response that decodes past this is a compression bomb (a few KiB of gzip can expand to
/// gigabytes), and decoding stops here.
pub const DEFAULT_MAX_DECODED_BYTES: u64 = 32 * 1024 * 1024;

/// WebFetch: characters of page text returned to the model, about 25,000 tokens like Read's
/// output cap; longer text is cut with a notice saying how much there was.
pub const DEFAULT_MAX_CHARS: usize = 100_000;

/// WebFetch: time to open a TCP connection (and finish TLS) to one address.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// WebFetch: time for the whole fetch — resolution, every redirect, the body. A server that
/// trickles bytes is cut off here, well inside the tool's own limit.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// WebFetch: redirects followed on one host before giving up (the and browsers'
/// order of magnitude); a loop ends here with an error.
pub const MAX_REDIRECTS: usize = 10;

/// WebFetch: how long a fetched page is served from the session's cache (Claude Code's
/// 15 minutes): a model re-reading a page should not hit the server again.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(15 * 60);

/// WebFetch: page text one session's cache holds; the oldest pages go first beyond it.
pub const DEFAULT_CACHE_MAX_BYTES: usize = 50 * 1024 * 1024;

/// WebFetch: longest URL accepted (Claude Code's 2,000 characters); longer ones are usually
/// data smuggled into a query string.
pub const MAX_URL_CHARS: usize = 2000;

/// WebFetch: HTML nested deeper than this (by a linear pre-scan) is returned as plain text,
/// never parsed into a tree: the HTML tree builder's scope checks cost time in proportion to
/// the nesting for every tag, and the Markdown converter recurses once per level, so a
/// hostile page could otherwise burn minutes of CPU or exhaust a stack. Real pages nest a
/// few dozen levels.
pub const MAX_HTML_DEPTH: usize = 256;

/// WebFetch: HTML beyond this many bytes is not converted (the page is cut there, with a
/// notice). The Markdown of this much HTML is already far over the character cap, and it
/// bounds the converter's work.
pub const MAX_HTML_BYTES: usize = 4 * 1024 * 1024;

/// WebFetch: tokens the summarising model may answer with.
pub const SUMMARY_MAX_TOKENS: u32 = 2048;

/// WebSearch: results returned per search (after domain filtering).
pub const DEFAULT_MAX_RESULTS: usize = 10;

/// WebSearch: searches one session may make (Claude Code's 200): a model in a loop cannot
/// run up a bill on the user's API key.
pub const DEFAULT_MAX_SEARCHES_PER_SESSION: u32 = 200;

/// WebSearch: time for one backend request.
pub const DEFAULT_SEARCH_TIMEOUT: Duration = Duration::from_secs(20);

/// WebSearch: largest backend response read; search results are a few KiB.
pub const MAX_BACKEND_RESPONSE_BYTES: usize = 2 * 1024 * 1024;

/// WebSearch: characters kept of one result's snippet.
pub const MAX_SNIPPET_CHARS: usize = 500;

/// The user agent both tools send.
pub const USER_AGENT: &str = concat!("toolgate-web/", env!("CARGO_PKG_VERSION"));

/// `webFetch` settings.
#[derive(Debug, Clone)]
pub struct WebFetchConfig {
    /// `allowPrivate`: addresses and blocks a fetch may reach although the address check
    /// refuses them (`127.0.0.1:8080`, `10.1.2.0/24`).
    pub allow_private: AddrList,
    /// `allowHttp`: hosts (domain patterns) whose `http://` URLs are fetched as plain HTTP;
    /// every other `http://` URL is upgraded to `https://`.
    pub allow_http: Vec<DomainPattern>,
    /// `resolve`: names answered from settings instead of DNS (like `curl --resolve`); the
    /// answers still pass the address check.
    pub resolve: BTreeMap<String, Vec<IpAddr>>,
    /// `maxResponseBytes`, see [`DEFAULT_MAX_RESPONSE_BYTES`].
    pub max_response_bytes: u64,
    /// `maxDecodedBytes`, see [`DEFAULT_MAX_DECODED_BYTES`].
    pub max_decoded_bytes: u64,
    /// `maxChars`, see [`DEFAULT_MAX_CHARS`].
    pub max_chars: usize,
    /// `connectTimeoutMs`, see [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
    /// `timeoutMs`, see [`DEFAULT_TIMEOUT`].
    pub timeout: Duration,
    /// `cacheTtlSecs`, see [`DEFAULT_CACHE_TTL`] (0 turns the cache off).
    pub cache_ttl: Duration,
    /// `cacheMaxBytes`, see [`DEFAULT_CACHE_MAX_BYTES`].
    pub cache_max_bytes: usize,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        WebFetchConfig {
            allow_private: AddrList::default(),
            allow_http: Vec::new(),
            resolve: BTreeMap::new(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_decoded_bytes: DEFAULT_MAX_DECODED_BYTES,
            max_chars: DEFAULT_MAX_CHARS,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            timeout: DEFAULT_TIMEOUT,
            cache_ttl: DEFAULT_CACHE_TTL,
            cache_max_bytes: DEFAULT_CACHE_MAX_BYTES,
        }
    }
}

/// `webFetch` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawFetch {
    #[serde(default)]
    allow_private: Vec<String>,
    #[serde(default)]
    allow_http: Vec<String>,
    #[serde(default)]
    resolve: BTreeMap<String, Vec<String>>,
    max_response_bytes: Option<u64>,
    max_decoded_bytes: Option<u64>,
    max_chars: Option<usize>,
    connect_timeout_ms: Option<u64>,
    timeout_ms: Option<u64>,
    cache_ttl_secs: Option<u64>,
    cache_max_bytes: Option<usize>,
    /// The summarising model; read by the setup, which owns the model client.
    #[allow(dead_code)]
    model: Option<Value>,
}

fn invalid(key: &str, why: impl Into<String>) -> WebError {
    WebError::Settings {
        key: key.to_owned(),
        why: why.into(),
    }
}

fn positive(key: &str, v: Option<u64>, default: u64) -> Result<u64, WebError> {
    match v {
        None => Ok(default),
        Some(0) => Err(invalid(key, "must be greater than 0")),
        Some(n) => Ok(n),
    }
}

impl WebFetchConfig {
    /// Reads the merged `webFetch` object (`null` or absent: the defaults).
    pub fn from_settings(value: &Value) -> Result<WebFetchConfig, WebError> {
        if value.is_null() {
            return Ok(WebFetchConfig::default());
        }
        let raw: RawFetch = serde_json::from_value(value.clone())
            .map_err(|e| invalid("webFetch", e.to_string()))?;
        let allow_private = AddrList::parse(&raw.allow_private)
            .map_err(|e| invalid("webFetch.allowPrivate", e.to_string()))?;
        let allow_http = raw
            .allow_http
            .iter()
            .map(|p| DomainPattern::parse(p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid("webFetch.allowHttp", e.to_string()))?;
        let mut resolve = BTreeMap::new();
        for (name, addrs) in raw.resolve {
            let key = format!("webFetch.resolve.{name}");
            let ips = addrs
                .iter()
                .map(|a| {
                    a.parse::<IpAddr>()
                        .map_err(|_| invalid(&key, format!("`{a}` is not an IP address")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            if ips.is_empty() {
                return Err(invalid(&key, "lists no address"));
            }
            resolve.insert(toolgate_protocol::net::normalize_host(&name), ips);
        }
        let d = WebFetchConfig::default();
        let ms = |key: &str, v: Option<u64>, default: Duration| {
            positive(key, v, default.as_millis() as u64).map(Duration::from_millis)
        };
        Ok(WebFetchConfig {
            allow_private,
            allow_http,
            resolve,
            max_response_bytes: positive(
                "webFetch.maxResponseBytes",
                raw.max_response_bytes,
                d.max_response_bytes,
            )?,
            max_decoded_bytes: positive(
                "webFetch.maxDecodedBytes",
                raw.max_decoded_bytes,
                d.max_decoded_bytes,
            )?,
            max_chars: positive(
                "webFetch.maxChars",
                raw.max_chars.map(|n| n as u64),
                d.max_chars as u64,
            )? as usize,
            connect_timeout: ms(
                "webFetch.connectTimeoutMs",
                raw.connect_timeout_ms,
                d.connect_timeout,
            )?,
            timeout: ms("webFetch.timeoutMs", raw.timeout_ms, d.timeout)?,
            cache_ttl: raw.cache_ttl_secs.map_or(d.cache_ttl, Duration::from_secs),
            cache_max_bytes: raw.cache_max_bytes.unwrap_or(d.cache_max_bytes),
        })
    }
}

/// The search service behind WebSearch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// A SearXNG instance's JSON API (`/search?format=json`; the instance must list `json`
    /// in `search.formats`). No key.
    Searxng,
    /// The Brave Search API (`X-Subscription-Token`).
    Brave,
    /// Tavily (`Authorization: Bearer`).
    Tavily,
    /// Exa (`x-api-key`).
    Exa,
    /// An Anthropic Messages API compatible endpoint with the server-side `web_search` tool.
    Anthropic,
    /// An OpenAI Responses API compatible endpoint with the hosted `web_search` tool.
    Openai,
}

impl Backend {
    /// The name settings use.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Searxng => "searxng",
            Backend::Brave => "brave",
            Backend::Tavily => "tavily",
            Backend::Exa => "exa",
            Backend::Anthropic => "anthropic",
            Backend::Openai => "openai",
        }
    }

    /// The service's own endpoint, for backends that have one.
    pub fn default_url(self) -> Option<&'static str> {
        match self {
            Backend::Searxng => None,
            Backend::Brave => Some("https://api.search.brave.com/res/v1/web/search"),
            Backend::Tavily => Some("https://api.tavily.com/search"),
            Backend::Exa => Some("https://api.exa.ai/search"),
            Backend::Anthropic => Some("https://api.anthropic.com"),
            Backend::Openai => Some("https://api.openai.com"),
        }
    }

    fn needs_key(self) -> bool {
        self != Backend::Searxng
    }
}

/// `webSearch` settings. Without them WebSearch is not offered at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSearchConfig {
    /// `backend`.
    pub backend: Backend,
    /// `url`: the backend's endpoint (required for SearXNG). Chosen by the user, so it may
    /// be a private address (a self-hosted SearXNG); it is never model-chosen.
    pub url: String,
    /// `apiKeyEnv`: the environment variable holding the API key — never the key itself.
    pub api_key_env: Option<String>,
    /// `model`: the model to ask (the Anthropic and OpenAI backends).
    pub model: Option<String>,
    /// `maxResults`, see [`DEFAULT_MAX_RESULTS`].
    pub max_results: usize,
    /// `maxSearchesPerSession`, see [`DEFAULT_MAX_SEARCHES_PER_SESSION`].
    pub max_searches_per_session: u32,
    /// `timeoutMs`, see [`DEFAULT_SEARCH_TIMEOUT`].
    pub timeout: Duration,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSearch {
    backend: Option<Backend>,
    url: Option<String>,
    api_key_env: Option<String>,
    api_key: Option<Value>,
    model: Option<String>,
    max_results: Option<usize>,
    max_searches_per_session: Option<u32>,
    timeout_ms: Option<u64>,
}

/// How to turn WebSearch on, for `toolgate config` and errors.
pub const WEB_SEARCH_HOWTO: &str = "add \"webSearch\": {\"backend\": \"searxng\", \"url\": \"http://127.0.0.1:8888\"} (or {\"backend\": \"brave\", \"apiKeyEnv\": \"BRAVE_API_KEY\"}; also tavily, exa, anthropic, openai) to your user settings";

impl WebSearchConfig {
    /// Reads the `webSearch` object; `Ok(None)` when no backend is configured.
    pub fn from_settings(value: &Value) -> Result<Option<WebSearchConfig>, WebError> {
        if value.is_null() || value.as_object().is_some_and(|o| o.is_empty()) {
            return Ok(None);
        }
        let raw: RawSearch = serde_json::from_value(value.clone())
            .map_err(|e| invalid("webSearch", e.to_string()))?;
        if raw.api_key.is_some() {
            return Err(invalid(
                "webSearch.apiKey",
                "API keys are never read from settings files; put the key in an environment variable and name it in webSearch.apiKeyEnv",
            ));
        }
        let Some(backend) = raw.backend else {
            return Err(invalid(
                "webSearch.backend",
                format!("missing; {WEB_SEARCH_HOWTO}"),
            ));
        };
        let url = match (raw.url, backend.default_url()) {
            (Some(u), _) => u,
            (None, Some(d)) => d.to_owned(),
            (None, None) => {
                return Err(invalid(
                    "webSearch.url",
                    format!(
                        "the {} backend needs the URL of your instance",
                        backend.name()
                    ),
                ));
            }
        };
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(invalid(
                "webSearch.url",
                "must start with https:// or http://",
            ));
        }
        if backend.needs_key() && raw.api_key_env.is_none() {
            return Err(invalid(
                "webSearch.apiKeyEnv",
                format!(
                    "the {} backend needs an API key: name the environment variable holding it",
                    backend.name()
                ),
            ));
        }
        if matches!(backend, Backend::Anthropic | Backend::Openai) && raw.model.is_none() {
            return Err(invalid(
                "webSearch.model",
                format!("the {} backend needs the model to ask", backend.name()),
            ));
        }
        Ok(Some(WebSearchConfig {
            backend,
            url,
            api_key_env: raw.api_key_env,
            model: raw.model,
            max_results: positive(
                "webSearch.maxResults",
                raw.max_results.map(|n| n as u64),
                DEFAULT_MAX_RESULTS as u64,
            )? as usize,
            max_searches_per_session: raw
                .max_searches_per_session
                .unwrap_or(DEFAULT_MAX_SEARCHES_PER_SESSION),
            timeout: Duration::from_millis(positive(
                "webSearch.timeoutMs",
                raw.timeout_ms,
                DEFAULT_SEARCH_TIMEOUT.as_millis() as u64,
            )?),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fetch_settings() {
        let c = WebFetchConfig::from_settings(&json!({
            "allowPrivate": ["127.0.0.1:8080", "10.1.2.0/24"],
            "allowHttp": ["127.0.0.1", "*.corp.example"],
            "resolve": {"Intranet.Example.": ["10.1.2.3"]},
            "maxChars": 500
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.allow_private.entries().len(), 2);
        assert_eq!(c.max_chars, 500);
        assert!(c.resolve.contains_key("intranet.example"));
        for bad in [
            json!({"allowPrivate": ["localhost"]}),
            json!({"allowHttp": ["http://x"]}),
            json!({"resolve": {"a": ["not-an-ip"]}}),
            json!({"maxChars": 0}),
            json!({"nope": 1}),
        ] {
            assert!(WebFetchConfig::from_settings(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn search_settings() {
        assert_eq!(WebSearchConfig::from_settings(&Value::Null), Ok(None));
        let s = WebSearchConfig::from_settings(&json!({"backend": "brave", "apiKeyEnv": "K"}))
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no backend"));
        assert_eq!(s.url, "https://api.search.brave.com/res/v1/web/search");
        for bad in [
            json!({"backend": "searxng"}),
            json!({"backend": "brave"}),
            json!({"backend": "brave", "apiKey": "secret"}),
            json!({"backend": "bing", "url": "https://x"}),
            json!({"backend": "searxng", "url": "ftp://x"}),
            json!({"url": "https://x"}),
        ] {
            assert!(WebSearchConfig::from_settings(&bad).is_err(), "{bad}");
        }
    }
}
