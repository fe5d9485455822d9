//! Runs an `http` handler: one POST of the event JSON to an `http://` or `https://` URL with
//! `reqwest` (rustls, the system's root certificates plus any the embedder added).
//!
//! Deliberate limits, because the URL comes from a settings file and the answer can decide a
//! tool call:
//!
//! - **Redirects are never followed.** A 3xx is a non-2xx answer, i.e. a non-blocking error.
//!   Following one would send the event (tool inputs, file contents) to a host the settings
//!   never named, and an `https` URL could be downgraded to `http`.
//! - Certificates are always verified. Embedders and tests that use a private CA add its root
//!   with [`crate::HookEngine::with_root_certificates_pem`]; there is no switch to accept
//!   invalid certificates.
//! - The answer is read chunk by chunk and reading stops at [`MAX_STREAM_BYTES`], so a
//!   collector streaming without end neither blocks the call nor fills memory.
//! - Header values expand `$VAR` / `${VAR}` only for variables listed in `allowedEnvVars`.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use crate::error::HookError;
use crate::run_command::MAX_STREAM_BYTES;

/// What an HTTP handler answered.
#[derive(Debug)]
pub(crate) struct HttpOutput {
    /// `None` when the time limit passed.
    pub status: Option<u16>,
    pub body: Vec<u8>,
    pub truncated: bool,
}

/// The HTTP client shared by every `http` handler of an engine: built on first use (loading
/// the system's root certificates costs a few milliseconds, wasted when no `http` hook is
/// configured), then reused so connections are pooled.
#[derive(Default)]
pub(crate) struct HttpClient {
    extra_roots: Vec<reqwest::Certificate>,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("extra_roots", &self.extra_roots.len())
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client trusting the system roots plus the certificates in `pem` (one or more
    /// `-----BEGIN CERTIFICATE-----` blocks) and those already added to `self`.
    pub(crate) fn with_roots_pem(&self, pem: &[u8]) -> Result<HttpClient, HookError> {
        let added = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| HookError::Run(format!("root certificates: {}", chain(&e))))?;
        if added.is_empty() {
            return Err(HookError::Run(
                "root certificates: no PEM certificate found".into(),
            ));
        }
        let mut extra_roots = self.extra_roots.clone();
        extra_roots.extend(added);
        Ok(HttpClient {
            extra_roots,
            client: OnceLock::new(),
        })
    }

    fn client(&self) -> Result<&reqwest::Client, HookError> {
        self.client
            .get_or_init(|| {
                let mut b = reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    // Some collectors (and the plain-HTTP runner this replaced) expect
                    // `Content-Type`, not `content-type`.
                    .http1_title_case_headers()
                    .user_agent(concat!("toolgate-hooks/", env!("CARGO_PKG_VERSION")));
                for root in &self.extra_roots {
                    b = b.add_root_certificate(root.clone());
                }
                b.build().map_err(|e| chain(&e))
            })
            .as_ref()
            .map_err(|e| HookError::Run(format!("cannot set up the HTTP client: {e}")))
    }
}

/// An error with its causes (`error sending request: …: invalid peer certificate: …`):
/// reqwest's own message alone rarely says what went wrong.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = s.source();
    }
    out
}

/// Expands `$VAR` and `${VAR}` in `value` using only the variables in `allowed`; others
/// (and unset ones) become empty, so a settings file cannot exfiltrate the environment.
pub(crate) fn expand_header(value: &str, allowed: &[String]) -> String {
    let lookup = |name: &str| {
        if allowed.iter().any(|a| a == name) {
            std::env::var(name).unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut out = String::new();
    let mut chars = value.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let mut name = String::new();
        if chars.peek().is_some_and(|(_, c)| *c == '{') {
            chars.next();
            for (_, c) in chars.by_ref() {
                if c == '}' {
                    break;
                }
                name.push(c);
            }
        } else {
            while let Some((_, c)) = chars.peek() {
                if c.is_ascii_alphanumeric() || *c == '_' {
                    name.push(*c);
                    chars.next();
                } else {
                    break;
                }
            }
        }
        if name.is_empty() {
            out.push('$');
        } else {
            out.push_str(&lookup(&name));
        }
    }
    out
}

/// Checks the URL: `http` or `https`, a host, no user name or password (credentials belong
/// in `headers`, expanded from `allowedEnvVars`, where they are not logged with the URL).
fn parse_url(url: &str) -> Result<reqwest::Url, HookError> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| HookError::Run(format!("hook URL `{url}`: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(HookError::Run(format!(
            "hook URL `{url}`: only http:// and https:// are supported"
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(HookError::Run(format!("hook URL `{url}`: no host")));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(HookError::Run(format!(
            "hook URL `{url}`: credentials in the URL are not allowed; send them in `headers` with `allowedEnvVars`"
        )));
    }
    Ok(parsed)
}

fn header_map(
    url: &str,
    headers: &[(String, String)],
    allowed_env_vars: &[String],
) -> Result<HeaderMap, HookError> {
    let mut map = HeaderMap::new();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (k, v) in headers {
        let v = expand_header(v, allowed_env_vars);
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| HookError::Run(format!("hook URL `{url}`: bad header name `{k}`")))?;
        let value = HeaderValue::from_str(&v).map_err(|_| {
            HookError::Run(format!(
                "hook URL `{url}`: header `{k}` has a line break or control character"
            ))
        })?;
        map.insert(name, value);
    }
    Ok(map)
}

/// POSTs `payload` to `url`. `Ok` with `status: None` means the time limit passed.
pub(crate) async fn run_http(
    http: &HttpClient,
    url: &str,
    headers: &[(String, String)],
    allowed_env_vars: &[String],
    payload: &[u8],
    timeout: Duration,
) -> Result<HttpOutput, HookError> {
    let parsed = parse_url(url)?;
    let headers = header_map(url, headers, allowed_env_vars)?;
    let client = http.client()?;
    let request = client.post(parsed).headers(headers).body(payload.to_vec());
    let exchange =
        async {
            let mut response = request
                .send()
                .await
                .map_err(|e| HookError::Run(format!("POST {url}: {}", chain(&e))))?;
            let status = response.status().as_u16();
            let mut body = Vec::new();
            let mut truncated = false;
            while let Some(chunk) = response.chunk().await.map_err(|e| {
                HookError::Run(format!("reading the answer of {url}: {}", chain(&e)))
            })? {
                let room = MAX_STREAM_BYTES - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    // Dropping the response closes the connection: the rest is never read.
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, HookError>(HttpOutput {
                status: Some(status),
                body,
                truncated,
            })
        };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(r) => r,
        Err(_) => Ok(HttpOutput {
            status: None,
            body: Vec::new(),
            truncated: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_expand_only_allowed_vars() {
        let allowed = vec!["PATH".to_owned()];
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(expand_header("a $PATH b", &allowed), format!("a {path} b"));
        assert_eq!(expand_header("x${PATH}y", &allowed), format!("x{path}y"));
        assert_eq!(expand_header("Bearer $HOME", &allowed), "Bearer ");
        assert_eq!(expand_header("cost $", &allowed), "cost $");
    }

    #[test]
    fn urls() {
        assert!(parse_url("https://x.example/hook").is_ok());
        assert!(parse_url("http://127.0.0.1:8080/hook").is_ok());
        for bad in [
            "ftp://x.example/",
            "file:///etc/passwd",
            "http://user:pw@x.example/",
            "not a url",
            "unix:/run/x.sock",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_injection_is_refused() {
        let bad = [("X-A".to_owned(), "a\r\nX-Evil: 1".to_owned())];
        assert!(header_map("u", &bad, &[]).is_err());
        let bad = [("X A:".to_owned(), "v".to_owned())];
        assert!(header_map("u", &bad, &[]).is_err());
        let ok = [("X-A".to_owned(), "v".to_owned())];
        assert_eq!(header_map("u", &ok, &[]).unwrap()["x-a"], "v");
    }

    #[test]
    fn bad_root_pem_is_an_error() {
        let c = HttpClient::default();
        assert!(c.with_roots_pem(b"not a certificate").is_err());
    }
}
