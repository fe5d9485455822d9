//! The proxy's unit tests.

use super::*;

#[test]
fn host_ports_and_tags() {
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
        DomainRules::new(&["allowed.test:*".into()], &[]),
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

/// Sends `CONNECT name:port` through a proxy allowing `allow`, where `name` resolves to a
/// loopback listener and to `also`; returns the proxy's status line and what it recorded.
fn connect_via(allow: &[&str], name: &str, also: &[&str]) -> (String, String) {
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = server.local_addr().unwrap_or_else(|e| panic!("{e}"));
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "toolgate-proxy-internal-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let sock = dir.join("p.sock");
    let mut answers: Vec<SocketAddr> = also
        .iter()
        .map(|a| SocketAddr::new(a.parse().unwrap_or_else(|e| panic!("{e}")), 0))
        .collect();
    answers.push(addr);
    let hosts = HashMap::from([(name.to_owned(), answers)]);
    let reasons = Arc::new(Mutex::new(String::new()));
    let seen = Arc::clone(&reasons);
    let proxy = Proxy::start_with_hosts(
        &sock,
        DomainRules::new(
            &allow.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>(),
            &[],
        ),
        hosts,
        move |d| seen.lock().map(|mut r| r.push_str(&d.reason)).is_ok(),
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
    let status = String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    let reason = reasons.lock().map(|r| r.clone()).unwrap_or_default();
    (status, reason)
}

#[test]
fn wildcards_do_not_reach_internal_addresses() {
    // A name allowed by a wildcard that resolves to loopback: refused.
    let (wild, why) = connect_via(&["*.example.test:*"], "evil.example.test", &[]);
    assert!(wild.starts_with("HTTP/1.1 403"), "{wild}");
    assert!(why.contains("but 127.0.0.1 is"), "{why}");
    let (any, _) = connect_via(&["*:*"], "anything.test", &[]);
    assert!(any.starts_with("HTTP/1.1 403"), "{any}");
    // One refused answer among others refuses the name (no address of it is tried).
    let (mixed, why) = connect_via(&["*:*"], "mixed.test", &["93.184.216.34", "10.0.0.1"]);
    assert!(mixed.starts_with("HTTP/1.1 403"), "{mixed}");
    assert!(why.contains("private"), "{why}");
    // The same name listed exactly: the user asked for it.
    let (exact, _) = connect_via(&["local.example.test:*"], "local.example.test", &[]);
    assert!(exact.starts_with("HTTP/1.1 200"), "{exact}");
    // ...on the ports listed: 80 and 443 when none is.
    let (port, why) = connect_via(&["local.example.test"], "local.example.test", &[]);
    assert!(port.starts_with("HTTP/1.1 403"), "{port}");
    assert!(why.contains("is not allowed"), "{why}");
    // An address block in the list clears what resolves into it.
    let (block, _) = connect_via(&["*:*", "127.0.0.0/8:*"], "internal.test", &[]);
    assert!(block.starts_with("HTTP/1.1 200"), "{block}");
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
