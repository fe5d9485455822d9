//! Settings served over HTTPS (`--settings https://…`): one policy for a fleet of gates.
//!
//! The URL is the operator's choice on the command line, so what it serves is a
//! command-line settings source, trusted as a `--settings FILE` is (see docs/deploy.md,
//! "Trust"). What makes that safe is that only the named server can serve it:
//!
//! - **HTTPS only**, verified against the system's roots; plain `http://` only to a
//!   loopback address (a sidecar, a test), where nobody on the network sits in between.
//! - **No redirects.** A redirect is an error naming where it pointed: following one could
//!   leave HTTPS or the named host, and a policy's address should be its final one.
//! - **Bounded**: [`FETCH_TIMEOUT`] per request, [`MAX_SETTINGS_BYTES`] per body.
//! - **Conditional**: a poll sends the last `ETag` in `If-None-Match`; `304 Not Modified`
//!   costs the server nothing and keeps the version in force.
//! - An optional bearer token from [`TOKEN_ENV`] (kept out of `ps`), for servers that
//!   want to know which fleet asks.
//!
//! Anything else — a status other than 200 and 304, a body that is too big or not UTF-8 —
//! is a [`FetchError`]: at start the front door stops (exit 64); during a reload the
//! version in force is kept and the failure logged and audited ([`crate::live`]).

use std::net::IpAddr;
use std::time::Duration;

use thiserror::Error;

/// The longest one request for the settings may take, connection included. A policy
/// server slower than this is down as far as a reload is concerned (the version in force
/// is kept), and at start the operator learns it instead of a front door that hangs.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest settings body accepted. Real settings are a few KiB; a policy with
/// thousands of rules is well under this, and a server that sends more is not serving
/// settings.
pub const MAX_SETTINGS_BYTES: usize = 1024 * 1024;

/// The environment variable holding a bearer token sent to the settings URL.
pub const TOKEN_ENV: &str = "TOOLGATE_SETTINGS_TOKEN";

/// Why settings could not be fetched from a URL.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The URL is not one toolgate fetches settings from.
    #[error("--settings {url}: {reason}")]
    NotAllowed {
        /// The URL.
        url: String,
        /// What is wrong and what to give instead.
        reason: String,
    },
    /// The request failed (connection, TLS, timeout).
    #[error("--settings {url}: cannot fetch the settings: {detail}")]
    Request {
        /// The URL.
        url: String,
        /// The cause, with its causes.
        detail: String,
    },
    /// The server answered, but not with settings.
    #[error("--settings {url}: the server answered {status}{detail}")]
    Status {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// More, such as where a redirect pointed.
        detail: String,
    },
    /// The body is larger than [`MAX_SETTINGS_BYTES`].
    #[error("--settings {url}: the settings are over {limit} bytes")]
    TooLarge {
        /// The URL.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// The body is not UTF-8 text.
    #[error("--settings {url}: the body is not UTF-8 text")]
    NotText {
        /// The URL.
        url: String,
    },
}

/// What one fetch found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// The settings text and its `ETag`, if the server sent one.
    Body {
        /// The body.
        text: String,
        /// The `ETag` to send next time.
        etag: Option<String>,
    },
    /// `304`: what was fetched last is still current.
    NotModified,
}

/// Checks that `url` is HTTPS, or HTTP to a loopback address.
pub fn check_url(url: &str) -> Result<reqwest::Url, FetchError> {
    let not_allowed = |reason: &str| FetchError::NotAllowed {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let parsed =
        reqwest::Url::parse(url.trim()).map_err(|e| not_allowed(&format!("not a URL ({e})")))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(not_allowed(
            "credentials in the URL would be logged and audited; put a bearer token in \
             TOOLGATE_SETTINGS_TOKEN instead",
        ));
    }
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if is_loopback(&parsed) => Ok(parsed),
        "http" => Err(not_allowed(
            "settings are fetched over https (plain http only from a loopback address)",
        )),
        other => Err(not_allowed(&format!(
            "`{other}:` URLs are not fetched; give an https:// URL or a file"
        ))),
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// An HTTP client for settings URLs.
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    token: Option<String>,
}

impl Fetcher {
    /// A client with the limits above and the token from [`TOKEN_ENV`], if set.
    pub fn new() -> Result<Self, FetchError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Request {
                url: String::new(),
                detail: format!("cannot set up the HTTP client: {}", chain(&e)),
            })?;
        let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
        Ok(Self { client, token })
    }

    /// Fetches `url`, conditionally on `etag` when given.
    pub async fn fetch(&self, url: &str, etag: Option<&str>) -> Result<Fetched, FetchError> {
        let parsed = check_url(url)?;
        let request_error = |e: reqwest::Error| FetchError::Request {
            url: url.to_owned(),
            detail: chain(&e),
        };
        let mut request = self.client.get(parsed);
        if let Some(tag) = etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, tag);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let mut response = request.send().await.map_err(request_error)?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_MODIFIED && etag.is_some() {
            return Ok(Fetched::NotModified);
        }
        if status != reqwest::StatusCode::OK {
            let detail = match response.headers().get(reqwest::header::LOCATION) {
                Some(to) if status.is_redirection() => format!(
                    ": a redirect to {}; redirects are not followed, give the final URL",
                    String::from_utf8_lossy(to.as_bytes())
                ),
                _ => String::new(),
            };
            return Err(FetchError::Status {
                url: url.to_owned(),
                status: status.as_u16(),
                detail,
            });
        }
        let etag = response
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let too_large = || FetchError::TooLarge {
            url: url.to_owned(),
            limit: MAX_SETTINGS_BYTES,
        };
        if response
            .content_length()
            .is_some_and(|n| n > MAX_SETTINGS_BYTES as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(request_error)? {
            if body.len() + chunk.len() > MAX_SETTINGS_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(body).map_err(|_| FetchError::NotText {
            url: url.to_owned(),
        })?;
        Ok(Fetched::Body { text, etag })
    }
}

/// Fetches each URL once, from a thread of its own (so it works inside or outside an async
/// runtime): what start-up does before the first settings load.
pub(crate) fn fetch_all_blocking(urls: &[String]) -> Result<Vec<(String, Fetched)>, FetchError> {
    if urls.is_empty() {
        return Ok(Vec::new());
    }
    let urls = urls.to_vec();
    let joined = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| FetchError::Request {
                url: urls.first().cloned().unwrap_or_default(),
                detail: format!("cannot start a runtime to fetch: {e}"),
            })?;
        let fetcher = Fetcher::new()?;
        rt.block_on(async {
            let mut out = Vec::new();
            for url in urls {
                let fetched = fetcher.fetch(&url, None).await?;
                out.push((url, fetched));
            }
            Ok(out)
        })
    })
    .join();
    joined.unwrap_or_else(|_| {
        Err(FetchError::Request {
            url: String::new(),
            detail: "the fetching thread panicked".into(),
        })
    })
}

/// An error with its causes: reqwest's own message alone rarely says what went wrong.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http() {
        for ok in [
            "https://policy.example/settings.json",
            "http://127.0.0.1:8080/s.json",
            "http://127.9.9.9/s.json",
            "http://localhost:1/s",
            "http://[::1]:8/s",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://policy.example/settings.json",
            "http://10.0.0.1/s.json",
            "http://localhost.evil.example/s",
            "ftp://127.0.0.1/s",
            "file:///etc/passwd",
            "https://user:pw@policy.example/s",
            "https://",
        ] {
            assert!(
                matches!(check_url(bad), Err(FetchError::NotAllowed { .. })),
                "{bad}"
            );
        }
    }
}
