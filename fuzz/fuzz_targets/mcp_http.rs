//! Fuzz target: `toolgate serve --http` (Streamable HTTP) on loopback, fed request bodies
//! and whole raw requests from the input, over real TCP connections: hyper's parsing, the
//! token, body-time and session layers of `toolgate_mcp`, and rmcp's JSON-RPC decoding
//! behind them, with the gate's file tools. The server runs for the whole fuzzing process.
//!
//! First input byte, low two bits: `0` the rest is a POST body without a session, `1` a
//! POST body in an initialized session, `2` the rest is sent as raw bytes (a whole request
//! or garbage), `3` a GET or DELETE of the session with the rest as a header value.
//! Besides "no panic" (a panic in any server task aborts the process): every well-formed
//! request is answered with an HTTP status, never a `500`.
#![no_main]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use toolgate_fuzz::gate;
use toolgate_mcp::{HttpOptions, SessionSource};

/// A reply slower than this is a hang (the server's own body timeout is 30 s).
const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

/// The MCP protocol version the session speaks.
const PROTOCOL: &str = "2025-06-18";

struct Server {
    addr: SocketAddr,
    session: String,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let source: std::sync::Arc<dyn SessionSource> = gate();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("server runtime");
            let options = HttpOptions::new(SocketAddr::from(([127, 0, 0, 1], 0)));
            let served = rt.block_on(toolgate_mcp::serve_http(
                source,
                options,
                std::future::pending(),
                move |addr| {
                    let _ = tx.send(addr);
                },
            ));
            panic!("the HTTP server stopped: {served:?}");
        });
        let addr = rx.recv().expect("the server's address");
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#;
        let reply = exchange(addr, &post(init, None));
        let session = header(&reply, "mcp-session-id").expect("initialize opens a session");
        let done = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        exchange(addr, &post(done, Some(&session)));
        Server { addr, session }
    })
}

fn post(body: &[u8], session: Option<&str>) -> Vec<u8> {
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        body.len()
    )
    .into_bytes();
    if let Some(s) = session {
        req.extend_from_slice(
            format!("Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: {PROTOCOL}\r\n").as_bytes(),
        );
    }
    req.extend_from_slice(b"\r\n");
    req.extend_from_slice(body);
    req
}

/// Sends `request`, closes the writing side and reads the reply to its end.
fn exchange(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect to the server");
    stream
        .set_read_timeout(Some(REPLY_TIMEOUT))
        .expect("read timeout");
    // The server may answer and close before reading everything (a bad request).
    let _ = stream.write_all(request);
    let _ = stream.shutdown(Shutdown::Write);
    let mut reply = Vec::new();
    if let Err(e) = stream.read_to_end(&mut reply) {
        assert!(
            e.kind() != std::io::ErrorKind::WouldBlock && e.kind() != std::io::ErrorKind::TimedOut,
            "no reply within {REPLY_TIMEOUT:?}"
        );
    }
    reply
}

fn status(reply: &[u8]) -> Option<u16> {
    let line = reply.split(|b| *b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

fn header(reply: &[u8], name: &str) -> Option<String> {
    let end = reply.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&reply[..end]).ok()?;
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let server = server();
    let (request, well_formed) = match mode & 3 {
        0 => (post(rest, None), true),
        1 => (post(rest, Some(&server.session)), true),
        2 => (rest.to_vec(), false),
        _ => {
            let Ok(value) = std::str::from_utf8(rest) else {
                return;
            };
            if value.contains(['\r', '\n']) {
                return;
            }
            let method = if mode & 4 == 0 { "GET" } else { "DELETE" };
            // Another session id than the fuzzer's own, so the session stays open.
            let request = format!(
                "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\
                 Mcp-Session-Id: x{value}\r\nMcp-Protocol-Version: {PROTOCOL}\r\n\
                 Connection: close\r\n\r\n"
            );
            (request.into_bytes(), false)
        }
    };
    let reply = exchange(server.addr, &request);
    let code = status(&reply);
    if well_formed {
        let Some(code) = code else {
            panic!("no HTTP answer: {:?}", String::from_utf8_lossy(&reply));
        };
        assert_ne!(code, 500, "{}", String::from_utf8_lossy(&reply));
    }
    // A session the input opened is closed again, so sessions do not pile up.
    if let Some(opened) = header(&reply, "mcp-session-id")
        && opened != server.session
        && opened.is_ascii()
    {
        let delete = format!(
            "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: {opened}\r\n\
             Mcp-Protocol-Version: {PROTOCOL}\r\nConnection: close\r\n\r\n"
        );
        exchange(server.addr, delete.as_bytes());
    }
});
