//! `serve_http` under a slow-client attack (issue #21, item 5), with real TCP clients on
//! loopback: connections that never finish their headers are refused beyond the per-peer
//! cap and closed at the header timeout, a trickled body gets `408`, and a legitimate
//! request still succeeds — also while the global connection cap is exhausted.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use toolgate_core::{Gate, Registry};
use toolgate_mcp::{HttpLimits, HttpOptions};

/// Generous bound for anything the server is expected to do "soon" (the header timeout in
/// these tests is 1 s): a hang fails the test instead of blocking CI.
const PATIENCE: Duration = Duration::from_secs(20);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"legit","version":"1"}}}"#;

async fn start(limits: HttpLimits) -> (SocketAddr, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let registry = toolgate_tools::register_file_tools(
        Registry::builder(),
        &toolgate_tools::FileToolsConfig::default(),
    )
    .build()
    .unwrap();
    let gate = Gate::builder()
        .workspace(dir.path())
        .registry(registry)
        .build()
        .unwrap();
    let mut options = HttpOptions::new(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0));
    options.limits = limits;
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let _ = toolgate_mcp::serve_http(
            Arc::new(gate),
            options,
            std::future::pending(),
            move |bound| {
                let _ = tx.send(bound);
            },
        )
        .await;
    });
    (rx.await.unwrap(), dir)
}

/// A connection to `server` from loopback address `from` (127.0.0.0/8 is all loopback).
async fn connect_from(from: Ipv4Addr, server: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(IpAddr::V4(from), 0)).unwrap();
    socket.connect(server).await.unwrap()
}

/// A slow client: the start of a request's headers, and then nothing.
async fn slow(from: Ipv4Addr, server: SocketAddr) -> TcpStream {
    let mut s = connect_from(from, server).await;
    s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    s
}

/// The status code of the response on `s` (reads the status line), or `None` at EOF.
async fn status(s: &mut TcpStream) -> Option<u16> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match s.read(&mut byte).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => buf.push(byte[0]),
        }
        if buf.ends_with(b"\r\n") {
            let line = String::from_utf8_lossy(&buf);
            return line.split_whitespace().nth(1)?.parse().ok();
        }
    }
}

/// A legitimate `initialize` from 127.0.0.1; its status code.
async fn legitimate(server: SocketAddr) -> Option<u16> {
    let mut s = TcpStream::connect(server).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{INITIALIZE}",
        server.port(),
        INITIALIZE.len()
    );
    s.write_all(request.as_bytes()).await.unwrap();
    status(&mut s).await
}

/// Whether the server closed `s` (EOF or reset) without answering.
async fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    matches!(
        tokio::time::timeout(PATIENCE, s.read(&mut buf)).await,
        Ok(Ok(0) | Err(_))
    ) || matches!(
        // hyper may answer 408 before closing: that is a close too.
        tokio::time::timeout(PATIENCE, s.read(&mut buf)).await,
        Ok(Ok(0) | Err(_))
    )
}

fn limits() -> HttpLimits {
    HttpLimits {
        header_read_timeout: Duration::from_secs(1),
        body_read_timeout: Duration::from_secs(1),
        max_connections: 64,
        max_connections_per_peer: 8,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_are_capped_per_peer_and_timed_out_while_others_are_served() {
    let (server, _dir) = start(limits()).await;
    let attacker = Ipv4Addr::new(127, 0, 0, 2);
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(slow(attacker, server).await);
    }
    // Beyond the per-peer cap: answered 503 at once, without a header read.
    for _ in 0..3 {
        let mut extra = slow(attacker, server).await;
        let code = tokio::time::timeout(PATIENCE, status(&mut extra)).await;
        assert_eq!(code, Ok(Some(503)), "a connection over the per-peer cap");
    }
    // Another address is served while the attacker's connections hang.
    let code = tokio::time::timeout(PATIENCE, legitimate(server)).await;
    assert_eq!(code, Ok(Some(200)), "a legitimate initialize");
    // The slow ones are closed at the header timeout.
    for s in &mut held {
        assert!(closed_by_server(s).await, "a slow connection was left open");
    }
    // Their places are free again.
    let mut again = slow(attacker, server).await;
    again.write_all(b"x\r\n\r\n").await.unwrap();
    assert_ne!(
        tokio::time::timeout(PATIENCE, status(&mut again)).await,
        Ok(Some(503))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_slow_clients_cannot_starve_the_server() {
    // 200 slow connections from 25 addresses against a server that keeps 64 at once: it
    // accepts what its cap allows, the rest wait in the backlog, and a legitimate request
    // is answered once the header timeout has freed places.
    let (server, _dir) = start(limits()).await;
    let mut held = Vec::new();
    for i in 0..200u32 {
        let from = Ipv4Addr::new(127, 0, 1, (10 + i % 25) as u8);
        let s = connect_from(from, server).await;
        held.push(s);
    }
    for s in &mut held {
        let _ = s.write_all(b"GET /mcp HTTP/1.1\r\nHost: 1").await;
    }
    let code = tokio::time::timeout(PATIENCE, legitimate(server)).await;
    assert_eq!(code, Ok(Some(200)), "a legitimate initialize under load");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_body_is_cut_off() {
    let (server, _dir) = start(limits()).await;
    let mut s = TcpStream::connect(server).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\"",
        server.port()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let code = tokio::time::timeout(PATIENCE, status(&mut s)).await;
    assert_eq!(code, Ok(Some(408)), "the body never completes");
}
