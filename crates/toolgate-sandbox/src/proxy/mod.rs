//! The network allow-list proxy (harness side), on a unix socket.
//!
//! Speaks HTTP `CONNECT host:port` (HTTPS and any TCP) and absolute-form plain HTTP
//! (`GET http://host/path`). Each request is checked against [`DomainRules`] — denied entries
//! first, then allowed ones, host and port ([`rules`]) — *before* any name resolution, so a
//! denied name never reaches DNS, and a host spelled as a number (`0x7f.1`, `2130706433`) is
//! read as the address it is. Unless the request was allowed explicitly (an exact host or an
//! address block in `allowedDomains`), every address the name resolves to must then pass the
//! shared address check (`toolgate_protocol::net::AddrPolicy`: loopback, private, link-local,
//! ULA, carried IPv4 forms, the host's own addresses), and the connection goes only to those
//! checked addresses. Every decision is passed to the audit callback. Inside the sandbox, the
//! helper's bridge exposes the socket as `127.0.0.1:PORT` and sets `HTTP(S)_PROXY`.
//!
//! No TLS interception: only the CONNECT host is seen (domain fronting stays possible).

mod rules;

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
use toolgate_protocol::net::Host;

use crate::error::SandboxError;
pub use rules::DomainRules;

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
    /// The rules allowed the request but the upstream could not be resolved or reached:
    /// a failure, not a refusal (`allowed` is false because nothing went through).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreachable: bool,
}

impl ProxyDecision {
    /// One word for the outcome: `allowed`, `denied`, or `unreachable` (allowed by the
    /// rules, but the upstream could not be reached).
    pub fn verdict(&self) -> &'static str {
        if self.allowed {
            "allowed"
        } else if self.unreachable {
            "unreachable"
        } else {
            "denied"
        }
    }
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
                .map(|(k, v)| (toolgate_protocol::net::normalize_host(&k), v))
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
    let Listed {
        host: parsed,
        explicit,
        mut decision,
    } = listed(shared, &host, port, method, tag);
    if !decision.allowed {
        refuse(&mut conn, shared, &decision);
        return;
    }
    let addrs = match resolve(shared, &parsed, port) {
        Ok(a) => a,
        Err(why) => {
            decision.allowed = false;
            decision.unreachable = true;
            decision.reason = format!("allowed ({}), but {why}", decision.reason);
            let _ = (shared.on_decision)(&decision);
            respond(&mut conn, "502 Bad Gateway", "upstream unreachable\n");
            return;
        }
    };
    // The proxy runs on the host's network: unless the user listed this host or its address
    // block, an answer pointing at loopback, a private or link-local range (the metadata
    // service) or the host's own addresses would reach what the network namespace keeps out.
    if !explicit && let Err(refusal) = shared.rules.addresses().check_all(&addrs) {
        decision.allowed = false;
        decision.reason = format!(
            "{}, but {refusal}; list the address (or its block) in sandbox.network.allowedDomains to allow it",
            decision.reason
        );
        refuse(&mut conn, shared, &decision);
        return;
    }
    let mut last_error = None;
    let upstream =
        addrs
            .iter()
            .find_map(|a| match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
                Ok(s) => Some(s),
                Err(e) => {
                    last_error = Some(e);
                    None
                }
            });
    let Some(mut upstream) = upstream else {
        decision.allowed = false;
        decision.unreachable = true;
        decision.reason = match last_error {
            Some(e) => format!(
                "allowed ({}), but the connection failed: {e}",
                decision.reason
            ),
            None => format!("allowed ({}), but the connection failed", decision.reason),
        };
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

/// A request as the lists see it.
struct Listed {
    /// The host read as the network stack will (a number is an address, never a name).
    host: Host,
    /// Allowed by an entry naming the host or its address block itself.
    explicit: bool,
    /// The lists' decision (refused for a host that does not parse).
    decision: ProxyDecision,
}

fn listed(shared: &Shared, raw_host: &str, port: u16, method: &str, tag: Option<String>) -> Listed {
    let mut decision = ProxyDecision {
        host: raw_host.to_owned(),
        port,
        method: method.to_owned(),
        allowed: false,
        reason: String::new(),
        tag,
        unreachable: false,
    };
    let host = match Host::parse(raw_host) {
        Ok(h) => h,
        Err(e) => {
            decision.reason = e.to_string();
            return Listed {
                host: Host::Name(String::new()),
                explicit: false,
                decision,
            };
        }
    };
    let rule = shared.rules.rule_for(&host, port);
    let (allowed, mut reason) = rule.verdict(port);
    if let Host::Ip(ip) = &host
        && raw_host.trim_matches(['[', ']']) != ip.to_string()
    {
        reason = format!("`{raw_host}` is the address {ip}: {reason}");
    }
    decision.allowed = allowed;
    decision.reason = reason;
    Listed {
        explicit: rule.allows_explicitly(),
        host,
        decision,
    }
}

/// The addresses to connect to: the literal itself, the test/pinning override, or DNS.
fn resolve(shared: &Shared, host: &Host, port: u16) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = match host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
        Host::Name(name) => match shared.overrides.get(name) {
            Some(a) => a.iter().map(|a| SocketAddr::new(a.ip(), port)).collect(),
            None => (name.as_str(), port)
                .to_socket_addrs()
                .map_err(|e| format!("`{name}` does not resolve ({e})"))?
                .collect(),
        },
    };
    if addrs.is_empty() {
        return Err(format!("`{host}` resolves to no address"));
    }
    Ok(addrs)
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
mod tests;
