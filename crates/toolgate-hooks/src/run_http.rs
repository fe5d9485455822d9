//! Runs an `http` handler: one HTTP/1.1 POST of the event JSON over a plain TCP
//! connection. Hand-written (no HTTP client dependency) and `http://` only: hook collectors
//! are local services; `https://` URLs are reported as a handler error.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

struct Url<'a> {
    host: &'a str,
    port: u16,
    path: &'a str,
}

fn parse_url(url: &str) -> Result<Url<'_>, HookError> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        HookError::Run(format!(
            "hook URL `{url}`: only http:// is supported (run a local forwarder for https)"
        ))
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
            h,
            p.parse()
                .map_err(|_| HookError::Run(format!("hook URL `{url}`: bad port")))?,
        ),
        _ => (authority, 80),
    };
    if host.is_empty() || authority.contains('@') {
        return Err(HookError::Run(format!("hook URL `{url}`: bad host")));
    }
    Ok(Url { host, port, path })
}

/// POSTs `payload` to `url`.
pub(crate) async fn run_http(
    url: &str,
    headers: &[(String, String)],
    allowed_env_vars: &[String],
    payload: &[u8],
    timeout: Duration,
) -> Result<HttpOutput, HookError> {
    let parsed = parse_url(url)?;
    let mut request = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        parsed.path,
        parsed.host,
        payload.len()
    );
    for (k, v) in headers {
        let v = expand_header(v, allowed_env_vars);
        if k.contains(['\r', '\n', ':']) || v.contains(['\r', '\n']) {
            return Err(HookError::Run(format!(
                "hook URL `{url}`: header `{k}` contains a line break"
            )));
        }
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    let exchange = async {
        let host = parsed.host.trim_start_matches('[').trim_end_matches(']');
        let mut stream = TcpStream::connect((host, parsed.port))
            .await
            .map_err(|e| HookError::io(format!("connecting to {url}"), e))?;
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| HookError::io(format!("sending to {url}"), e))?;
        stream
            .write_all(payload)
            .await
            .map_err(|e| HookError::io(format!("sending to {url}"), e))?;
        // Read until the answer is complete (a server may ignore `Connection: close`), the
        // peer closes, or the cap is reached.
        let mut raw = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = stream
                .read(&mut buf)
                .await
                .map_err(|e| HookError::io(format!("reading the answer of {url}"), e))?;
            raw.extend_from_slice(&buf[..n]);
            if n == 0 || raw.len() > MAX_STREAM_BYTES + 64 * 1024 || complete(&raw) {
                break;
            }
        }
        Ok::<_, HookError>(raw)
    };
    let raw = match tokio::time::timeout(timeout, exchange).await {
        Ok(r) => r?,
        Err(_) => {
            return Ok(HttpOutput {
                status: None,
                body: Vec::new(),
                truncated: false,
            });
        }
    };
    let (status, body) = parse_response(&raw)
        .ok_or_else(|| HookError::Run(format!("{url} sent an answer that is not HTTP/1.x")))?;
    let truncated = body.len() > MAX_STREAM_BYTES;
    let mut body = body;
    body.truncate(MAX_STREAM_BYTES);
    Ok(HttpOutput {
        status: Some(status),
        body,
        truncated,
    })
}

/// Whether `raw` holds a whole response: headers plus `Content-Length` bytes, or a chunked
/// body up to its last chunk.
fn complete(raw: &[u8]) -> bool {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let body = &raw[end + 4..];
    if head.contains("transfer-encoding: chunked") {
        return body.ends_with(b"0\r\n\r\n");
    }
    let status_no_body = head
        .split_whitespace()
        .nth(1)
        .is_some_and(|s| s == "204" || s == "304" || s.starts_with('1'));
    let length = head.lines().find_map(|l| {
        l.strip_prefix("content-length:")
            .and_then(|v| v.trim().parse::<usize>().ok())
    });
    match length {
        Some(n) => body.len() >= n,
        None => status_no_body,
    }
}

fn parse_response(raw: &[u8]) -> Option<(u16, Vec<u8>)> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let mut parts = status_line.split_whitespace();
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let status: u16 = parts.next()?.parse().ok()?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let (k, v) = line.split_once(':')?;
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
        if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if k == "content-length" {
            length = v.parse::<usize>().ok();
        }
    }
    let body = &raw[end + 4..];
    let body = if chunked {
        dechunk(body)?
    } else {
        match length {
            Some(n) => body[..n.min(body.len())].to_vec(),
            None => body.to_vec(),
        }
    };
    Some((status, body))
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        let take = size.min(data.len());
        out.extend_from_slice(&data[..take]);
        if take < size {
            return Some(out);
        }
        data = data.get(size + 2..)?;
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
    fn responses() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!(r, (200, b"{}".to_vec()));
        let r = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{\"\r\n3\r\na\":\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.1, b"{\"a\":".to_vec());
        assert!(parse_url("https://x").is_err());
        let u = parse_url("http://127.0.0.1:8080/hook").unwrap();
        assert_eq!((u.host, u.port, u.path), ("127.0.0.1", 8080, "/hook"));
    }
}
