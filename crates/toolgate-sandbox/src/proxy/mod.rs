//! The network allow-list proxy (harness side), on a unix socket.
//!
//! Speaks HTTP `CONNECT host:port` (HTTPS and any TCP) and absolute-form plain HTTP
//! (`GET http://host/path`). Each request is checked against [`DomainRules`] — denied domains
//! first, then allowed ones — *before* any name resolution, so a denied name never reaches
//! DNS. Every decision is passed to the audit callback. Inside the sandbox, the helper's
//! bridge exposes the socket as `127.0.0.1:PORT` and sets `HTTP(S)_PROXY`.
//!
//! No TLS interception: only the CONNECT host is seen (domain fronting stays possible).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::SandboxError;

/// Largest request head accepted (request line + headers).
const MAX_HEAD: usize = 16 * 1024;
/// Connections handled at once (one thread each, in the harness's process). A sandboxed
/// command that opens more is answered `503` on the extra ones at once: without a bound it
/// could make the harness — a `serve` process shared by many sessions — spawn threads until
/// it cannot spawn any. The gate runs one proxy for all its rooms, so each room (tag) also
/// has a smaller bound, [`MAX_PROXY_CONNECTIONS_PER_TAG`].
pub const MAX_PROXY_CONNECTIONS: usize = 512;
/// Connections one room (one tag; untagged clients count as one) may have at once. The
/// bridge sends the tag the moment a connection opens, so a command opening connections
/// and sending nothing holds at most this many of the proxy's places and cannot starve
/// other rooms of theirs; its extra connections get `503` at once.
pub const MAX_PROXY_CONNECTIONS_PER_TAG: usize = 128;
/// Upstream connect timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Client read timeout while waiting for the request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Domain allow/deny lists: `example.com` matches exactly; `*.example.com` matches
/// subdomains (not the apex); `*` matches everything. Case-insensitive, trailing dot ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainRules {
    /// Allowed patterns.
    pub allowed: Vec<String>,
    /// Denied patterns (checked first).
    pub denied: Vec<String>,
}

fn domain_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim_end_matches('.').to_ascii_lowercase();
    if pattern == "*" {
        return true;
    }
    match pattern.strip_prefix("*.") {
        Some(base) => host.len() > base.len() + 1 && host.ends_with(&format!(".{base}")),
        None => host == pattern,
    }
}

impl DomainRules {
    /// Lists from the policy's network settings.
    pub fn new(allowed: &[String], denied: &[String]) -> Self {
        DomainRules {
            allowed: allowed.to_vec(),
            denied: denied.to_vec(),
        }
    }

    /// The rule that decides `host`: denied patterns first, then allowed ones.
    fn rule_for(&self, host: &str) -> Rule<'_> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if let Some(p) = self.denied.iter().find(|p| domain_matches(p, &host)) {
            return Rule::Denied(p);
        }
        match self.allowed.iter().find(|p| domain_matches(p, &host)) {
            Some(p) => Rule::Allowed(p),
            None => Rule::Unlisted,
        }
    }

    /// `(allowed, reason)` for `host`.
    pub fn decide(&self, host: &str) -> (bool, String) {
        self.rule_for(host).verdict()
    }
}

/// Which list decided a host, and by which pattern.
enum Rule<'a> {
    Denied(&'a str),
    Allowed(&'a str),
    Unlisted,
}

impl Rule<'_> {
    fn verdict(&self) -> (bool, String) {
        match self {
            Rule::Denied(p) => (false, format!("matches deniedDomains `{p}`")),
            Rule::Allowed(p) => (true, format!("matches allowedDomains `{p}`")),
            Rule::Unlisted => (false, "not in sandbox.network.allowedDomains".to_owned()),
        }
    }

    /// Allowed by a pattern naming the host itself, not by a wildcard.
    fn allows_exactly(&self) -> bool {
        matches!(self, Rule::Allowed(p) if !p.starts_with('*'))
    }
}

/// One proxy decision, for the audit log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyDecision {
    /// Requested host.
    pub host: String,
    /// Requested port.
    pub port: u16,
    /// `CONNECT`, `GET`, …
    pub method: String,
    /// Whether the request was let through.
    pub allowed: bool,
    /// Which rule decided (or why the request failed).
    pub reason: String,
    /// The run's attribution tag ([`crate::NetworkPolicy::proxy_tag`]), as the sandbox's
    /// bridge sent it (percent-encoded); `None` for clients that sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// First line of the proxy protocol as spoken by the sandbox's bridge.
const TAG_PREFIX: &str = "TOOLGATE-TAG ";

/// Percent-encodes everything but unreserved URL characters (no spaces, no line breaks, no
/// `+`), for building tags out of several parts.
pub fn encode_tag(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b':') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The line the bridge sends ahead of every relayed connection (`-` when untagged, so a
/// command's own first line is never taken for a tag).
pub(crate) fn tag_line(tag: Option<&str>) -> Vec<u8> {
    // Only what would break the line is encoded: a caller's own encoding passes unchanged.
    let line_safe = |raw: &str| {
        raw.bytes()
            .map(|b| match b {
                0x21..=0x7e => char::from(b).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    let tag = tag.map(line_safe).filter(|t| !t.is_empty());
    format!("{TAG_PREFIX}{}\r\n", tag.as_deref().unwrap_or("-")).into_bytes()
}

/// Records a decision; `false` means it could not be recorded, and an allowed connection is
/// then refused (no unaudited traffic).
type Callback = Arc<dyn Fn(&ProxyDecision) -> bool + Send + Sync>;

struct Shared {
    rules: DomainRules,
    on_decision: Callback,
    overrides: HashMap<String, Vec<SocketAddr>>,
    /// Connections being handled.
    active: AtomicUsize,
    /// Connections being handled, by tag (entries at zero are removed).
    per_tag: Mutex<HashMap<Option<String>, usize>>,
}

/// One handled connection's place in [`Shared::active`], given back on drop.
struct Place(Arc<Shared>);

impl Place {
    fn take(shared: &Arc<Shared>) -> Option<Place> {
        shared
            .active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_PROXY_CONNECTIONS).then_some(n + 1)
            })
            .ok()
            .map(|_| Place(Arc::clone(shared)))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One connection's place among its tag's, given back on drop.
struct TagPlace<'a> {
    shared: &'a Shared,
    tag: Option<String>,
}

impl<'a> TagPlace<'a> {
    fn take(shared: &'a Shared, tag: Option<String>) -> Option<TagPlace<'a>> {
        // Nothing panics while the map is held; a poisoned map is still consistent.
        let mut counts = shared
            .per_tag
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let n = counts.entry(tag.clone()).or_insert(0);
        if *n >= MAX_PROXY_CONNECTIONS_PER_TAG {
            return None;
        }
        *n += 1;
        Some(TagPlace { shared, tag })
    }
}

impl Drop for TagPlace<'_> {
    fn drop(&mut self) {
        let mut counts = self
            .shared
            .per_tag
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = counts.get_mut(&self.tag) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.tag);
            }
        }
    }
}

/// A running proxy; stops and removes its socket when dropped.
pub struct Proxy {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("path", &self.path).finish()
    }
}

impl Proxy {
    /// Starts a proxy on `socket_path` (created; must not exist) enforcing `rules`.
    pub fn start(
        socket_path: &Path,
        rules: DomainRules,
        on_decision: impl Fn(&ProxyDecision) -> bool + Send + Sync + 'static,
    ) -> Result<Proxy, SandboxError> {
        Proxy::start_with_hosts(socket_path, rules, HashMap::new(), on_decision)
    }

    /// Like [`Proxy::start`], resolving the names in `hosts` to the given addresses instead
    /// of asking DNS (tests, or pinning).
    pub fn start_with_hosts(
        socket_path: &Path,
        rules: DomainRules,
        hosts: HashMap<String, Vec<SocketAddr>>,
        on_decision: impl Fn(&ProxyDecision) -> bool + Send + Sync + 'static,
    ) -> Result<Proxy, SandboxError> {
        let listener = UnixListener::bind(socket_path).map_err(|source| SandboxError::Proxy {
            op: format!("bind {}", socket_path.display()),
            source,
        })?;
        let shared = Arc::new(Shared {
            rules,
            on_decision: Arc::new(on_decision),
            overrides: hosts
                .into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect(),
            active: AtomicUsize::new(0),
            per_tag: Mutex::new(HashMap::new()),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("toolgate-proxy".to_owned())
            .spawn(move || {
                for conn in listener.incoming() {
                    if stop2.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(mut conn) = conn else { continue };
                    let Some(place) = Place::take(&shared) else {
                        // Not recorded: no request was read, so there is nothing to decide.
                        respond(
                            &mut conn,
                            "503 Service Unavailable",
                            "blocked by toolgate sandbox: too many proxy connections at once\n",
                        );
                        continue;
                    };
                    // If the thread cannot start, the closure (and the place) is dropped.
                    let _ = std::thread::Builder::new()
                        .name("toolgate-proxy-conn".to_owned())
                        .spawn(move || handle(conn, &place.0));
                }
            })
            .map_err(|source| SandboxError::Proxy {
                op: "spawn proxy thread".to_owned(),
                source,
            })?;
        Ok(Proxy {
            path: socket_path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }

    /// The unix socket path (put it in `NetworkPolicy::proxy_socket`).
    pub fn socket_path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = UnixStream::connect(&self.path); // wake the accept loop
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn respond(conn: &mut UnixStream, status: &str, body: &str) {
    // One write: a client reading once sees the whole response.
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(response.as_bytes());
}

/// Reads into `buf` (which may already hold bytes) until it contains `needle`; returns
/// where the needle ends. `None` if the peer closes, times out or sends more than
/// [`MAX_HEAD`].
fn read_until(conn: &mut UnixStream, buf: &mut Vec<u8>, needle: &[u8]) -> Option<usize> {
    let mut chunk = [0u8; 2048];
    let mut from = 0;
    loop {
        if let Some(at) = buf[from..].windows(needle.len()).position(|w| w == needle) {
            return Some(from + at + needle.len());
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
        from = buf.len().saturating_sub(needle.len() - 1);
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads the connection's tag line (the bridge sends it first, the moment the connection
/// opens); bytes already read past it stay in `buf`. A client without one is untagged and
/// its first line stays in `buf` as well.
fn read_tag(conn: &mut UnixStream, buf: &mut Vec<u8>) -> Option<Option<String>> {
    let end = read_until(conn, buf, b"\r\n")?;
    let Some(rest) = buf[..end].strip_prefix(TAG_PREFIX.as_bytes()) else {
        return Some(None);
    };
    let tag = String::from_utf8_lossy(&rest[..rest.len() - 2]).into_owned();
    buf.drain(..end);
    Some((tag != "-").then_some(tag))
}

fn split_host_port(authority: &str, default_port: u16) -> Option<(String, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, tail) = rest.split_once(']')?;
        let port = tail
            .strip_prefix(':')
            .map_or(Some(default_port), |p| p.parse().ok())?;
        return Some((host.to_owned(), port));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => Some((h.to_owned(), p.parse().ok()?)),
        None => Some((authority.to_owned(), default_port)),
    }
}

fn handle(mut conn: UnixStream, shared: &Shared) {
    let _ = conn.set_read_timeout(Some(HEAD_TIMEOUT));
    let mut buf = Vec::with_capacity(1024);
    let Some(tag) = read_tag(&mut conn, &mut buf) else {
        return;
    };
    let Some(_tag_place) = TagPlace::take(shared, tag.clone()) else {
        // Not recorded, like the proxy-wide bound: no request was read.
        respond(
            &mut conn,
            "503 Service Unavailable",
            "blocked by toolgate sandbox: too many proxy connections from this command at once\n",
        );
        return;
    };
    let Some(end) = read_until(&mut conn, &mut buf, b"\r\n\r\n") else {
        return;
    };
    let _ = conn.set_read_timeout(None);
    let rest = buf.split_off(end);
    let head = String::from_utf8_lossy(&buf).into_owned();
    let first = head.lines().next().unwrap_or_default().to_owned();
    let mut parts = first.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        respond(&mut conn, "400 Bad Request", "malformed request line\n");
        return;
    };
    let (host, port, forward_head) = if method.eq_ignore_ascii_case("CONNECT") {
        let Some((h, p)) = split_host_port(target, 443) else {
            respond(&mut conn, "400 Bad Request", "bad CONNECT target\n");
            return;
        };
        (h, p, None)
    } else if let Some(url) = target.strip_prefix("http://") {
        let (authority, path) = match url.find('/') {
            Some(i) => (&url[..i], &url[i..]),
            None => (url, "/"),
        };
        let Some((h, p)) = split_host_port(authority, 80) else {
            respond(&mut conn, "400 Bad Request", "bad URL\n");
            return;
        };
        let mut new_head = format!("{method} {path} {version}\r\n");
        for line in head.split("\r\n").skip(1) {
            if !line.to_ascii_lowercase().starts_with("proxy-") && !line.is_empty() {
                new_head.push_str(line);
                new_head.push_str("\r\n");
            }
        }
        new_head.push_str("\r\n");
        (h, p, Some(new_head))
    } else {
        respond(
            &mut conn,
            "400 Bad Request",
            "use an absolute http:// URL or CONNECT\n",
        );
        return;
    };
    let rule = shared.rules.rule_for(&host);
    let (allowed, reason) = rule.verdict();
    let mut decision = ProxyDecision {
        host: host.clone(),
        port,
        method: method.to_owned(),
        allowed,
        reason,
        tag,
    };
    if !allowed {
        refuse(&mut conn, shared, &decision);
        return;
    }
    let mut addrs: Vec<SocketAddr> = match shared.overrides.get(&host.to_ascii_lowercase()) {
        Some(a) => a.iter().map(|a| SocketAddr::new(a.ip(), port)).collect(),
        None => (host.as_str(), port)
            .to_socket_addrs()
            .map(Iterator::collect)
            .unwrap_or_default(),
    };
    // The proxy runs on the host's network: a name allowed by a wildcard (`*.x.com`, `*`)
    // whose DNS answer is the host's own loopback or a link-local address (the cloud
    // metadata service) would reach services the sandbox's network isolation exists to
    // keep out. Those addresses need the name (or address) itself in `allowedDomains`.
    if !rule.allows_exactly() {
        let resolved = addrs.len();
        addrs.retain(|a| !host_internal(a.ip()));
        if resolved > 0 && addrs.is_empty() {
            decision.allowed = false;
            decision.reason = format!(
                "{}, but it resolves only to loopback or link-local addresses, which need \
                 the name itself in sandbox.network.allowedDomains",
                decision.reason
            );
            refuse(&mut conn, shared, &decision);
            return;
        }
    }
    let upstream = addrs
        .iter()
        .find_map(|a| TcpStream::connect_timeout(a, CONNECT_TIMEOUT).ok());
    let Some(mut upstream) = upstream else {
        decision.allowed = false;
        decision.reason = format!("{}; upstream connect failed", decision.reason);
        let _ = (shared.on_decision)(&decision);
        respond(&mut conn, "502 Bad Gateway", "upstream unreachable\n");
        return;
    };
    if !(shared.on_decision)(&decision) {
        // The decision could not be written to the audit log: nothing may pass unrecorded.
        respond(
            &mut conn,
            "503 Service Unavailable",
            "blocked by toolgate sandbox: the audit log is unavailable\n",
        );
        return;
    }
    let ok = match forward_head {
        None => conn
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .is_ok(),
        Some(h) => upstream.write_all(h.as_bytes()).is_ok(),
    };
    if !ok || upstream.write_all(&rest).is_err() {
        return;
    }
    pipe(conn, upstream);
}

/// Records a refusal and answers it with 403 and the reason.
fn refuse(conn: &mut UnixStream, shared: &Shared, decision: &ProxyDecision) {
    let _ = (shared.on_decision)(decision);
    let body = format!(
        "blocked by toolgate sandbox: `{}` {}\n",
        decision.host, decision.reason
    );
    respond(conn, "403 Forbidden", &body);
}

/// Loopback, link-local (incl. the cloud metadata service 169.254.169.254), unspecified,
/// multicast and broadcast addresses: the host's own, never a destination on the internet.
fn host_internal(ip: std::net::IpAddr) -> bool {
    match ip.to_canonical() {
        std::net::IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
        }
        std::net::IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unicast_link_local()
                || v6.is_unspecified()
                || v6.is_multicast()
        }
    }
}

/// Copies both ways until either side closes.
fn pipe(conn: UnixStream, upstream: TcpStream) {
    let (Ok(mut c2), Ok(mut u2)) = (conn.try_clone(), upstream.try_clone()) else {
        return;
    };
    let t = std::thread::spawn(move || {
        let _ = std::io::copy(&mut u2, &mut c2);
        let _ = c2.shutdown(std::net::Shutdown::Write);
    });
    let (mut c, mut u) = (conn, upstream);
    let _ = std::io::copy(&mut c, &mut u);
    let _ = u.shutdown(std::net::Shutdown::Write);
    let _ = t.join();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_rules() {
        let r = DomainRules::new(
            &["pypi.org".into(), "*.github.com".into()],
            &["evil.github.com".into()],
        );
        assert!(r.decide("pypi.org").0);
        assert!(r.decide("PyPI.org.").0);
        assert!(!r.decide("files.pypi.org").0);
        assert!(r.decide("api.github.com").0);
        assert!(!r.decide("github.com").0);
        assert!(!r.decide("evil.github.com").0);
        assert!(!r.decide("pypi.org.evil.test").0);
        assert_eq!(
            split_host_port("[::1]:8080", 80),
            Some(("::1".into(), 8080))
        );
        assert_eq!(split_host_port("a.b", 443), Some(("a.b".into(), 443)));
        let line = String::from_utf8(tag_line(Some("s 1\r\nX/y"))).unwrap_or_default();
        assert_eq!(line, "TOOLGATE-TAG s%201%0D%0AX/y\r\n");
        let untagged = String::from_utf8(tag_line(None)).unwrap_or_default();
        let read = |sent: &str| {
            let (mut a, mut b) = UnixStream::pair().unwrap_or_else(|e| panic!("{e}"));
            a.write_all(sent.as_bytes())
                .unwrap_or_else(|e| panic!("{e}"));
            let mut buf = Vec::new();
            let tag = read_tag(&mut b, &mut buf);
            (tag, String::from_utf8_lossy(&buf).into_owned())
        };
        let request = "CONNECT a:1 HTTP/1.1\r\n\r\n";
        assert_eq!(
            read(&format!("{line}{request}")),
            (Some(Some("s%201%0D%0AX/y".into())), request.to_owned())
        );
        assert_eq!(
            read(&format!("{untagged}{request}")),
            (Some(None), request.to_owned())
        );
        // No tag line: untagged, and the request line is kept.
        assert_eq!(read(request), (Some(None), request.to_owned()));
    }

    /// Sends one request through a proxy whose recorder answers `recorded`, to an allowed
    /// host served on 127.0.0.1; returns the proxy's reply and whether the upstream server
    /// received the request.
    fn through_proxy(recorded: bool) -> (String, bool) {
        use std::io::{Read, Write};
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = server.local_addr().unwrap_or_else(|e| panic!("{e}"));
        server
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("{e}"));
        let dir = std::env::temp_dir().join(format!(
            "toolgate-proxy-test-{}-{recorded}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let sock = dir.join("p.sock");
        let hosts = HashMap::from([("allowed.test".to_owned(), vec![addr])]);
        let proxy = Proxy::start_with_hosts(
            &sock,
            DomainRules::new(&["allowed.test".into()], &[]),
            hosts,
            move |_| recorded,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut c = UnixStream::connect(&sock).unwrap_or_else(|e| panic!("{e}"));
        let req = format!("GET http://allowed.test:{}/ HTTP/1.0\r\n\r\n", addr.port());
        c.write_all(&tag_line(None))
            .unwrap_or_else(|e| panic!("{e}"));
        c.write_all(req.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut reply = String::new();
        let (tx, rx) = std::sync::mpsc::channel();
        // Serve the upstream side (if the proxy forwards) while reading the reply.
        let upstream = std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
            while std::time::Instant::now() < deadline {
                if let Ok((mut s, _)) = server.accept() {
                    let _ = s.set_nonblocking(false);
                    let mut buf = [0u8; 1024];
                    let n = s.read(&mut buf).unwrap_or(0);
                    let _ = tx.send(n > 0);
                    let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        });
        let _ = c.read_to_string(&mut reply);
        let _ = upstream.join();
        drop(proxy);
        let _ = std::fs::remove_dir_all(&dir);
        (reply, rx.try_recv().unwrap_or(false))
    }

    /// Sends `CONNECT name:port` through a proxy allowing `allow`, where every name
    /// resolves to a loopback listener; returns the proxy's status line.
    fn connect_via(allow: &str, name: &str) -> String {
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = server.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let dir = std::env::temp_dir().join(format!(
            "toolgate-proxy-internal-{}-{}",
            std::process::id(),
            name.replace('*', "x")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let sock = dir.join("p.sock");
        let hosts = HashMap::from([(name.to_owned(), vec![addr])]);
        let proxy = Proxy::start_with_hosts(
            &sock,
            DomainRules::new(&[allow.to_owned()], &[]),
            hosts,
            |_| true,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut c = UnixStream::connect(&sock).unwrap_or_else(|e| panic!("{e}"));
        c.write_all(format!("CONNECT {name}:{} HTTP/1.1\r\n\r\n", addr.port()).as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        // Up to the end of the status line (the 200 of a CONNECT keeps the stream open).
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n") && c.read(&mut byte).unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        drop(c);
        drop(proxy);
        let _ = std::fs::remove_dir_all(&dir);
        String::from_utf8_lossy(&head)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    #[test]
    fn wildcards_do_not_reach_the_hosts_own_addresses() {
        // A name allowed by a wildcard that resolves to loopback: refused.
        let wild = connect_via("*.example.test", "evil.example.test");
        assert!(wild.starts_with("HTTP/1.1 403"), "{wild}");
        let any = connect_via("*", "anything.test");
        assert!(any.starts_with("HTTP/1.1 403"), "{any}");
        // The same name listed exactly: the user asked for it.
        let exact = connect_via("local.example.test", "local.example.test");
        assert!(exact.starts_with("HTTP/1.1 200"), "{exact}");
        for internal in [
            "127.0.0.1",
            "169.254.169.254",
            "::1",
            "::ffff:127.0.0.1",
            "fe80::1",
            "0.0.0.0",
        ] {
            assert!(
                host_internal(internal.parse().unwrap_or_else(|e| panic!("{e}"))),
                "{internal}"
            );
        }
        for public in ["93.184.216.34", "10.1.2.3", "2606:4700::1111"] {
            assert!(
                !host_internal(public.parse().unwrap_or_else(|e| panic!("{e}"))),
                "{public}"
            );
        }
    }

    /// A proxy that allows nothing, on a socket in its own directory (removed on drop).
    struct DenyAllProxy {
        dir: PathBuf,
        sock: PathBuf,
        proxy: Option<Proxy>,
    }

    impl DenyAllProxy {
        fn start(label: &str) -> DenyAllProxy {
            let dir =
                std::env::temp_dir().join(format!("toolgate-proxy-{label}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            let sock = dir.join("p.sock");
            let proxy = Proxy::start(&sock, DomainRules::new(&[], &[]), |_| true)
                .unwrap_or_else(|e| panic!("{e}"));
            DenyAllProxy {
                dir,
                sock,
                proxy: Some(proxy),
            }
        }
    }

    impl Drop for DenyAllProxy {
        fn drop(&mut self) {
            drop(self.proxy.take());
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// Asks `request` for a denied host until the proxy answers 403 (a decision, so the
    /// connection got a place), for at most 10 s; returns the last reply.
    fn until_decided(request: impl Fn() -> String) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let r = request();
            if r.starts_with("HTTP/1.1 403") || std::time::Instant::now() > deadline {
                return r;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn connections_beyond_the_limit_are_refused_at_once() {
        let test_proxy = DenyAllProxy::start("limit");
        let sock = &test_proxy.sock;
        // Connections that send nothing each hold a place (until the head timeout).
        let held: Vec<UnixStream> = (0..MAX_PROXY_CONNECTIONS)
            .map(|_| UnixStream::connect(sock).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let mut extra = UnixStream::connect(sock).unwrap_or_else(|e| panic!("{e}"));
        extra
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut reply = String::new();
        let _ = extra.read_to_string(&mut reply);
        assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
        assert!(reply.contains("too many proxy connections"), "{reply}");
        // Places are given back when connections end.
        drop(held);
        let denied = until_decided(|| {
            let mut c = UnixStream::connect(sock).unwrap_or_else(|e| panic!("{e}"));
            c.write_all(b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n")
                .unwrap_or_else(|e| panic!("{e}"));
            let mut r = String::new();
            let _ = c.read_to_string(&mut r);
            r
        });
        assert!(denied.starts_with("HTTP/1.1 403"), "{denied}");
    }

    #[test]
    fn one_room_cannot_take_every_place() {
        let test_proxy = DenyAllProxy::start("tags");
        let sock = &test_proxy.sock;
        let connect = |tag: &str| {
            let mut c = UnixStream::connect(sock).unwrap_or_else(|e| panic!("{e}"));
            c.write_all(&tag_line(Some(tag)))
                .unwrap_or_else(|e| panic!("{e}"));
            c.set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap_or_else(|e| panic!("{e}"));
            c
        };
        let reply = |mut c: UnixStream, request: &[u8]| {
            let _ = c.write_all(request);
            let mut r = String::new();
            let _ = c.read_to_string(&mut r);
            r
        };
        // A room's silent connections (as the bridge opens them: tag first, then nothing).
        // Their threads run in any order, so which ones are turned away is not known: count.
        const EXTRA: usize = 5;
        let mut held: Vec<UnixStream> = (0..MAX_PROXY_CONNECTIONS_PER_TAG + EXTRA)
            .map(|_| connect("greedy"))
            .collect();
        for c in &held {
            c.set_nonblocking(true).unwrap_or_else(|e| panic!("{e}"));
        }
        let mut refused = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while refused.len() < EXTRA && std::time::Instant::now() < deadline {
            let mut i = 0;
            while i < held.len() {
                let mut r = String::new();
                match held[i].read_to_string(&mut r) {
                    Ok(_) => refused.push((held.swap_remove(i), r)),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && !r.is_empty() => {
                        refused.push((held.swap_remove(i), r));
                    }
                    Err(_) => i += 1,
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Give a wrongly refused extra one time to show up.
        std::thread::sleep(Duration::from_millis(200));
        let late = held
            .iter()
            .filter(|c| {
                let mut c: &UnixStream = c;
                c.read(&mut [0u8; 64]).is_ok_and(|n| n > 0)
            })
            .count();
        assert_eq!(refused.len() + late, EXTRA, "refused: {refused:?}");
        for (_, r) in &refused {
            assert!(r.starts_with("HTTP/1.1 503"), "{r}");
            assert!(r.contains("from this command"), "{r}");
        }
        drop(refused);
        // Another room is still served (denied here, which needs a decision: it was read).
        let other = reply(
            connect("other"),
            b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n",
        );
        assert!(other.starts_with("HTTP/1.1 403"), "{other}");
        // The room's places come back when its connections end.
        drop(held);
        let again = until_decided(|| {
            reply(
                connect("greedy"),
                b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n",
            )
        });
        assert!(again.starts_with("HTTP/1.1 403"), "{again}");
    }

    #[test]
    fn an_allowed_connection_that_cannot_be_recorded_is_refused() {
        let (reply, reached) = through_proxy(true);
        assert!(reply.starts_with("HTTP/1.0 200"), "{reply}");
        assert!(reached);
        // The recorder (the audit log) failed: nothing is sent on, and the client is told.
        let (reply, reached) = through_proxy(false);
        assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
        assert!(reply.contains("audit log is unavailable"), "{reply}");
        assert!(
            !reached,
            "the request reached the upstream server unrecorded"
        );
    }
}
