//! The HTTP exchange: one connection target at a time, each pinned to addresses that passed
//! the check, redirects followed by hand, the body read with both byte caps.
//!
//! reqwest is built per hop with a resolver that answers only that hop's name, and only with
//! the addresses [`checked_addresses`] cleared for it (and its port), so there is no second
//! lookup between the check and the connection (no DNS rebinding window). Address literals
//! never reach a resolver; they are checked before the request. Environment proxies are
//! ignored (a proxy would resolve the name itself, past the check), redirects are not
//! followed by reqwest, and decompression is done here so the compressed and the decoded
//! size can be capped separately.

use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, LOCATION};
use toolgate_protocol::net::{AddrPolicy, Host};

use super::target::{Target, checked_addresses, target};
use crate::config::{MAX_REDIRECTS, WebFetchConfig};
use crate::error::{WebError, describe};

/// A response read whole.
#[derive(Debug, Clone)]
pub(crate) struct Fetched {
    /// The URL that answered (after same-host redirects).
    pub url: Url,
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`, if sent.
    pub content_type: Option<String>,
    /// The decoded body.
    pub body: Vec<u8>,
    /// Bytes on the wire (before decoding).
    pub wire_bytes: usize,
}

/// How a fetch ended.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// A page (any status; the caller decides what a 404 means).
    Page(Fetched),
    /// A redirect to another host, not followed.
    CrossHost {
        /// The URL that redirected.
        from: Url,
        /// Where it pointed.
        to: Url,
        /// The redirect's status.
        status: u16,
    },
}

/// The one name a hop's client may resolve, and the addresses cleared for it (`None` for an
/// address literal, which is never resolved).
struct PinnedResolver(Option<(String, Vec<SocketAddr>)>);

impl Resolve for PinnedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let found = self
            .0
            .as_ref()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name.as_str()))
            .map(|(_, addrs)| addrs.clone());
        let name = name.as_str().to_owned();
        Box::pin(async move {
            match found {
                Some(addrs) => Ok(Box::new(addrs.into_iter()) as Addrs),
                None => Err(format!("`{name}` was not checked for this request").into()),
            }
        })
    }
}

/// Fetches `first`, following same-host redirects (each one checked again).
pub(crate) async fn fetch(
    first: Target,
    config: &WebFetchConfig,
    policy: &AddrPolicy,
) -> Result<Outcome, WebError> {
    let mut current = first;
    for _ in 0..=MAX_REDIRECTS {
        let addrs = checked_addresses(&current, config, policy).await?;
        // A client per hop, answering only this hop's name with only its checked addresses.
        let pinned = match &current.host {
            Host::Name(name) => Some((name.clone(), addrs)),
            Host::Ip(_) => None,
        };
        let client = crate::http::builder(current.url.scheme() == "https")
            .connect_timeout(config.connect_timeout)
            .dns_resolver(Arc::new(PinnedResolver(pinned)))
            .build()
            .map_err(|e| {
                WebError::Failed(format!(
                    "the HTTP client could not be set up: {}",
                    describe(&e)
                ))
            })?;
        let resp = client
            .get(current.url.clone())
            .header(ACCEPT, "text/html, text/markdown, text/plain, application/json;q=0.9, application/pdf;q=0.8, */*;q=0.5")
            .header(ACCEPT_ENCODING, "gzip, deflate, br")
            .send()
            .await
            .map_err(|e| request_error(&current.url, &e, config))?;
        let status = resp.status();
        if status.is_redirection()
            && let Some(location) = resp.headers().get(LOCATION)
        {
            let location = location.to_str().map_err(|_| {
                WebError::Failed(format!(
                    "{}: the redirect's Location is not text",
                    current.url
                ))
            })?;
            let next = current.url.join(location).map_err(|e| {
                WebError::Failed(format!(
                    "{}: redirected to `{location}`, which is not a URL ({e})",
                    current.url
                ))
            })?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(WebError::Failed(format!(
                    "{} redirected to a `{}:` URL, which WebFetch does not fetch",
                    current.url,
                    next.scheme()
                )));
            }
            if next.host_str() != current.url.host_str() {
                return Ok(Outcome::CrossHost {
                    from: current.url,
                    to: next,
                    status: status.as_u16(),
                });
            }
            // The server chose this URL, not the model: a bad one is the fetch failing.
            let from = current.url.clone();
            current = target(next, config).map_err(|e| match e {
                WebError::BadInput(why) => {
                    WebError::Failed(format!("{from} redirected to an unusable URL: {why}"))
                }
                other => other,
            })?;
            continue;
        }
        return read_page(current.url, resp, config)
            .await
            .map(Outcome::Page);
    }
    Err(WebError::Failed(format!(
        "{}: more than {MAX_REDIRECTS} redirects (a redirect loop?); the page was not fetched",
        current.url
    )))
}

fn request_error(url: &Url, e: &reqwest::Error, config: &WebFetchConfig) -> WebError {
    let what = describe(e);
    if e.is_timeout() {
        return WebError::Timeout {
            ms: config.connect_timeout.as_millis() as u64,
            what: format!(
                "{url}: no connection within {} ms (webFetch.connectTimeoutMs): {what}",
                config.connect_timeout.as_millis()
            ),
        };
    }
    WebError::Failed(format!("{url}: the request failed: {what}"))
}

/// Reads the body chunk by chunk up to the wire cap, then decodes it up to the decoded cap.
async fn read_page(
    url: Url,
    mut resp: reqwest::Response,
    config: &WebFetchConfig,
) -> Result<Fetched, WebError> {
    let status = resp.status().as_u16();
    let header = |name| {
        resp.headers()
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header(reqwest::header::CONTENT_TYPE);
    let encoding = header(CONTENT_ENCODING);
    let cap = config.max_response_bytes;
    let too_large = || {
        WebError::Failed(format!(
            "{url}: the response is larger than {cap} bytes (webFetch.maxResponseBytes); it was not read"
        ))
    };
    if header(CONTENT_LENGTH)
        .and_then(|l| l.parse::<u64>().ok())
        .is_some_and(|l| l > cap)
    {
        return Err(too_large());
    }
    let mut raw = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| request_error(&url, &e, config))?
    {
        if (raw.len() + chunk.len()) as u64 > cap {
            return Err(too_large());
        }
        raw.extend_from_slice(&chunk);
    }
    let wire_bytes = raw.len();
    let body = decode(raw, encoding.as_deref(), config.max_decoded_bytes)
        .map_err(|why| WebError::Failed(format!("{url}: {why}")))?;
    Ok(Fetched {
        url,
        status,
        content_type,
        body,
        wire_bytes,
    })
}

/// Undoes `Content-Encoding` (applied in order, so undone in reverse), reading at most
/// `cap` bytes out of each decoder: a compression bomb stops there.
pub(crate) fn decode(raw: Vec<u8>, encoding: Option<&str>, cap: u64) -> Result<Vec<u8>, String> {
    let codings: Vec<String> = encoding
        .unwrap_or("")
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect();
    let mut body = raw;
    for coding in codings.iter().rev() {
        let reader: Box<dyn Read + '_> = match coding.as_str() {
            "gzip" | "x-gzip" => Box::new(flate2::read::MultiGzDecoder::new(&body[..])),
            "deflate" if body.first().is_some_and(|b| b & 0x0f == 8) => {
                Box::new(flate2::read::ZlibDecoder::new(&body[..]))
            }
            // Some servers send raw deflate under this name.
            "deflate" => Box::new(flate2::read::DeflateDecoder::new(&body[..])),
            "br" => Box::new(brotli_decompressor::Decompressor::new(&body[..], 4096)),
            other => {
                return Err(format!(
                    "the response uses the content coding `{other}`, which WebFetch does not decode"
                ));
            }
        };
        let mut out = Vec::new();
        reader
            .take(cap + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("the response's {coding} data is corrupt ({e})"))?;
        if out.len() as u64 > cap {
            return Err(format!(
                "the response decodes to more than {cap} bytes (webFetch.maxDecodedBytes): a compression bomb, or a page too large to read"
            ));
        }
        body = out;
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn decoding_is_capped() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&vec![0u8; 4 * 1024 * 1024])
            .unwrap_or_else(|e| panic!("{e}"));
        let bomb = gz.finish().unwrap_or_else(|e| panic!("{e}"));
        assert!(bomb.len() < 64 * 1024);
        let err = decode(bomb.clone(), Some("gzip"), 1024 * 1024).unwrap_err();
        assert!(err.contains("compression bomb"), "{err}");
        assert_eq!(
            decode(bomb, Some("gzip"), 8 * 1024 * 1024).map(|b| b.len()),
            Ok(4 * 1024 * 1024)
        );
        assert_eq!(decode(b"plain".to_vec(), None, 10), Ok(b"plain".to_vec()));
        assert!(
            decode(b"x".to_vec(), Some("zstd"), 10)
                .unwrap_err()
                .contains("zstd")
        );
        assert!(
            decode(b"not gzip".to_vec(), Some("gzip"), 10)
                .unwrap_err()
                .contains("corrupt")
        );
    }
}
