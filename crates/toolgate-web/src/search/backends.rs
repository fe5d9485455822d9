//! The search services: one request builder and one response reader per backend, and the
//! HTTP exchange they share (no redirects, no proxy, capped, timed).
//!
//! The backend URL comes from the user's settings, never from the model, so it is not put
//! through WebFetch's address check: a self-hosted SearXNG on `127.0.0.1` is the common case.

use serde_json::{Value, json};

use crate::config::{Backend, MAX_BACKEND_RESPONSE_BYTES, MAX_SNIPPET_CHARS, WebSearchConfig};
use crate::error::{WebError, describe};

/// One result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// The search a backend is asked for.
pub(crate) struct Query<'a> {
    pub text: &'a str,
    pub allowed: &'a [String],
    pub blocked: &'a [String],
    pub count: usize,
}

/// Builds the request for `q`.
pub(crate) fn request(
    client: &reqwest::Client,
    config: &WebSearchConfig,
    key: Option<&str>,
    q: &Query<'_>,
) -> reqwest::RequestBuilder {
    let key = key.unwrap_or_default();
    match config.backend {
        Backend::Searxng => {
            let base = config.url.trim_end_matches('/');
            let url = if base.ends_with("/search") {
                base.to_owned()
            } else {
                format!("{base}/search")
            };
            client.get(url).query(&[("q", q.text), ("format", "json")])
        }
        Backend::Brave => client
            .get(&config.url)
            .header("X-Subscription-Token", key)
            .header("Accept", "application/json")
            .query(&[("q", q.text), ("count", &q.count.min(20).to_string())]),
        Backend::Tavily => client.post(&config.url).bearer_auth(key).json(&json!({
            "query": q.text,
            "max_results": q.count,
            "include_domains": q.allowed,
            "exclude_domains": q.blocked,
        })),
        Backend::Exa => client
            .post(&config.url)
            .header("x-api-key", key)
            .json(&json!({
                "query": q.text,
                "numResults": q.count,
                "includeDomains": q.allowed,
                "excludeDomains": q.blocked,
                "contents": {"text": {"maxCharacters": MAX_SNIPPET_CHARS}},
            })),
        Backend::Anthropic => {
            let base = config.url.trim_end_matches('/');
            let url = if base.ends_with("/v1") {
                format!("{base}/messages")
            } else {
                format!("{base}/v1/messages")
            };
            let mut tool =
                json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 1});
            if !q.allowed.is_empty() {
                tool["allowed_domains"] = json!(q.allowed);
            }
            if !q.blocked.is_empty() {
                tool["blocked_domains"] = json!(q.blocked);
            }
            client
                .post(url)
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01")
                .json(&json!({
                    "model": config.model,
                    "max_tokens": 1024,
                    "messages": [{"role": "user", "content": format!("Search the web for: {}", q.text)}],
                    "tools": [tool],
                }))
        }
        Backend::Openai => {
            let base = config.url.trim_end_matches('/');
            let url = if base.ends_with("/v1") {
                format!("{base}/responses")
            } else {
                format!("{base}/v1/responses")
            };
            let mut tool = json!({"type": "web_search"});
            // The hosted tool filters by allowed domains only; blocked domains are applied
            // to the results afterwards, as for every backend.
            if !q.allowed.is_empty() {
                tool["filters"] = json!({"allowed_domains": q.allowed});
            }
            client.post(url).bearer_auth(key).json(&json!({
                "model": config.model,
                "input": format!("Search the web for: {}", q.text),
                "tools": [tool],
                "tool_choice": "required",
                "include": ["web_search_call.action.sources"],
            }))
        }
    }
}

/// Sends the request and reads a JSON body (capped); anything else is a clear error.
pub(crate) async fn exchange(
    config: &WebSearchConfig,
    req: reqwest::RequestBuilder,
) -> Result<Value, WebError> {
    let who = format!("the {} backend at {}", config.backend.name(), config.url);
    let mut resp = req.send().await.map_err(|e| {
        if e.is_timeout() {
            WebError::Timeout {
                ms: config.timeout.as_millis() as u64,
                what: format!(
                    "{who} did not answer within {} ms",
                    config.timeout.as_millis()
                ),
            }
        } else {
            WebError::Failed(format!("{who} could not be reached: {}", describe(&e)))
        }
    })?;
    let status = resp.status();
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut raw = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| {
        if e.is_timeout() {
            WebError::Timeout {
                ms: config.timeout.as_millis() as u64,
                what: format!(
                    "{who} did not finish its answer within {} ms",
                    config.timeout.as_millis()
                ),
            }
        } else {
            WebError::Failed(format!(
                "{who}: reading the answer failed: {}",
                describe(&e)
            ))
        }
    })? {
        if raw.len() + chunk.len() > MAX_BACKEND_RESPONSE_BYTES {
            return Err(WebError::Failed(format!(
                "{who} answered with more than {MAX_BACKEND_RESPONSE_BYTES} bytes"
            )));
        }
        raw.extend_from_slice(&chunk);
    }
    let snippet = || {
        let text = String::from_utf8_lossy(&raw);
        text.chars().take(200).collect::<String>()
    };
    if !status.is_success() {
        return Err(WebError::Failed(format!(
            "{who} answered HTTP {}: {}",
            status.as_u16(),
            snippet()
        )));
    }
    serde_json::from_slice(&raw).map_err(|_| {
        let hint = if content_type.contains("html") || raw.trim_ascii_start().starts_with(b"<") {
            match config.backend {
                Backend::Searxng => " (SearXNG answers HTML unless `json` is listed in search.formats of its settings.yml; also check webSearch.url)",
                _ => " (check webSearch.url)",
            }
        } else {
            ""
        };
        WebError::Failed(format!(
            "{who} answered with {} instead of JSON{hint}",
            if content_type.is_empty() { "something" } else { &content_type }
        ))
    })
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn snippet(s: &str) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match s.char_indices().nth(MAX_SNIPPET_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s,
    }
}

/// The results in a backend's answer.
pub(crate) fn hits(backend: Backend, body: &Value) -> Result<Vec<Hit>, WebError> {
    let list = |ptr: &str| {
        body.pointer(ptr).and_then(Value::as_array).ok_or_else(|| {
            WebError::Failed(format!(
                "the {} backend's answer has no `{ptr}` list of results",
                backend.name()
            ))
        })
    };
    let hit = |r: &Value, snippet_key: &str| Hit {
        title: text(r, "title"),
        url: text(r, "url"),
        snippet: snippet(&text(r, snippet_key)),
    };
    let out: Vec<Hit> = match backend {
        Backend::Searxng | Backend::Tavily => list("/results")?
            .iter()
            .map(|r| hit(r, "content"))
            .collect(),
        Backend::Exa => list("/results")?.iter().map(|r| hit(r, "text")).collect(),
        Backend::Brave => match body.pointer("/web/results") {
            // No `web` section: nothing found.
            None => Vec::new(),
            Some(_) => list("/web/results")?
                .iter()
                .map(|r| hit(r, "description"))
                .collect(),
        },
        Backend::Anthropic => anthropic_hits(list("/content")?),
        Backend::Openai => openai_hits(list("/output")?),
    };
    Ok(out.into_iter().filter(|h| !h.url.is_empty()).collect())
}

/// `web_search_tool_result` blocks list the results (their text is encrypted); the answer's
/// citations carry quoted text, used as snippets.
fn anthropic_hits(blocks: &[Value]) -> Vec<Hit> {
    let mut cited: Vec<(String, String)> = Vec::new();
    for b in blocks {
        for c in b
            .get("citations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            cited.push((text(c, "url"), text(c, "cited_text")));
        }
    }
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("web_search_tool_result"))
        .filter_map(|b| b.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|r| r.get("type").and_then(Value::as_str) == Some("web_search_result"))
        .map(|r| {
            let url = text(r, "url");
            let quoted = cited
                .iter()
                .filter(|(u, _)| *u == url)
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(" … ");
            Hit {
                title: text(r, "title"),
                snippet: snippet(&quoted),
                url,
            }
        })
        .collect()
}

/// The answer's `url_citation` annotations name the pages it used, with the cited span of
/// its text as the snippet; the search call's `sources` add pages it read but did not cite.
fn openai_hits(items: &[Value]) -> Vec<Hit> {
    let mut out: Vec<Hit> = Vec::new();
    let mut push = |hit: Hit| {
        if !hit.url.is_empty() && !out.iter().any(|h| h.url == hit.url) {
            out.push(hit);
        }
    };
    let parts = items
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|i| i.get("content").and_then(Value::as_array))
        .flatten();
    for part in parts {
        let body = text(part, "text");
        let annotations = part.get("annotations").and_then(Value::as_array);
        for a in annotations.into_iter().flatten() {
            if a.get("type").and_then(Value::as_str) != Some("url_citation") {
                continue;
            }
            let at = |k: &str| a.get(k).and_then(Value::as_u64).map(|n| n as usize);
            // Indices count characters; an out-of-range pair gives no snippet, not a panic.
            let cited: String = match (at("start_index"), at("end_index")) {
                (Some(s), Some(e)) if s < e => body.chars().skip(s).take(e - s).collect(),
                _ => String::new(),
            };
            push(Hit {
                title: text(a, "title"),
                url: text(a, "url"),
                snippet: snippet(&cited),
            });
        }
    }
    let sources = items
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("web_search_call"))
        .filter_map(|i| i.pointer("/action/sources").and_then(Value::as_array))
        .flatten();
    for s in sources {
        push(Hit {
            title: text(s, "title"),
            url: text(s, "url"),
            snippet: String::new(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let searx =
            json!({"results": [{"title": "T", "url": "https://a.test/", "content": "  c  d "}]});
        assert_eq!(
            hits(Backend::Searxng, &searx),
            Ok(vec![Hit {
                title: "T".into(),
                url: "https://a.test/".into(),
                snippet: "c d".into()
            }])
        );
        let brave = json!({"web": {"results": [{"title": "B", "url": "https://b.test/", "description": "x"}]}});
        assert_eq!(hits(Backend::Brave, &brave).map(|h| h.len()), Ok(1));
        assert_eq!(hits(Backend::Brave, &json!({"query": {}})), Ok(vec![]));
        let exa = json!({"results": [{"title": "E", "url": "https://e.test/", "text": "t"}]});
        assert_eq!(
            hits(Backend::Exa, &exa).map(|h| h[0].snippet.clone()),
            Ok("t".into())
        );
        let anthropic = json!({"content": [
            {"type": "web_search_tool_result", "content": [
                {"type": "web_search_result", "url": "https://c.test/", "title": "C", "encrypted_content": "…"}]},
            {"type": "text", "text": "x", "citations": [{"type": "web_search_result_location", "url": "https://c.test/", "cited_text": "quoted"}]}
        ]});
        assert_eq!(
            hits(Backend::Anthropic, &anthropic),
            Ok(vec![Hit {
                title: "C".into(),
                url: "https://c.test/".into(),
                snippet: "quoted".into()
            }])
        );
        let openai = json!({"output": [
            {"type": "web_search_call", "status": "completed", "action": {"type": "search",
                "sources": [{"type": "url", "url": "https://d.test/"}, {"type": "url", "url": "https://o.test/"}]}},
            {"type": "message", "content": [{"type": "output_text", "text": "Answer: it is here.",
                "annotations": [
                    {"type": "url_citation", "url": "https://o.test/", "title": "O", "start_index": 8, "end_index": 19},
                    {"type": "url_citation", "url": "https://bad.test/", "title": "Bad", "start_index": 90, "end_index": 2}
                ]}]}
        ]});
        assert_eq!(
            hits(Backend::Openai, &openai),
            Ok(vec![
                Hit {
                    title: "O".into(),
                    url: "https://o.test/".into(),
                    snippet: "it is here.".into()
                },
                Hit {
                    title: "Bad".into(),
                    url: "https://bad.test/".into(),
                    snippet: String::new()
                },
                Hit {
                    title: String::new(),
                    url: "https://d.test/".into(),
                    snippet: String::new()
                },
            ])
        );
        assert!(hits(Backend::Openai, &json!({"error": {"message": "x"}})).is_err());
        assert!(hits(Backend::Tavily, &json!({"error": "x"})).is_err());
        assert!(snippet(&"x".repeat(MAX_SNIPPET_CHARS + 10)).ends_with('…'));
    }
}
