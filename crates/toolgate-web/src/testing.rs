//! Local HTTP fixture servers for tests (feature `testing`): loopback only, plain HTTP/1.1,
//! one thread per connection, answers chosen by a closure per request. Never used by the
//! tools themselves.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A request as the fixture saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, …
    pub method: String,
    /// The request target (`/path?query`).
    pub path: String,
    /// Header lines, names lower-cased.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the fixture answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A whole response.
    Full {
        /// Status code.
        status: u16,
        /// Extra headers (`Content-Length` and `Connection: close` are added).
        headers: Vec<(String, String)>,
        /// Body.
        body: Vec<u8>,
    },
    /// Headers, then one byte every `every`, for as long as the client reads.
    Trickle {
        /// Pause between bytes.
        every: Duration,
    },
    /// A 200 `text/plain` body that never ends (no length), for as long as the client reads.
    Endless,
}

impl Reply {
    /// A 200 with this content type and body.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Full {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
        }
    }

    /// A redirect to `location`.
    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::Full {
            status,
            headers: vec![("Location".into(), location.into())],
            body: Vec::new(),
        }
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// A running fixture server on `127.0.0.1`; stops when dropped.
pub struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Starts a server answering every request with `handler`.
    pub fn start(
        handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<Server> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (seen2, stop2) = (Arc::clone(&seen), Arc::clone(&stop));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (h, s, st) = (Arc::clone(&handler), Arc::clone(&seen2), Arc::clone(&stop2));
                std::thread::spawn(move || serve(conn, &*h, &s, &st));
            }
        });
        Ok(Server { addr, seen, stop })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn read_request(conn: &mut TcpStream) -> Option<Request> {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 || buf.len() > 64 * 1024 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split_whitespace();
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some(Request {
        method,
        path,
        headers,
    })
}

fn serve(mut conn: TcpStream, handler: &Handler, seen: &Mutex<Vec<Request>>, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    // Not HTTP (a TLS handshake): answer at once, as real HTTP servers do.
    let mut first = [0u8; 1];
    if conn.peek(&mut first).is_ok_and(|n| n == 1) && !first[0].is_ascii_alphabetic() {
        let _ = conn.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
        return;
    }
    let Some(req) = read_request(&mut conn) else {
        return;
    };
    seen.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(req.clone());
    match handler(&req) {
        Reply::Full {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Fixture\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(&body);
        }
        Reply::Trickle { every } => {
            let _ = conn.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n",
            );
            while !stop.load(Ordering::SeqCst) && conn.write_all(b"x").is_ok() {
                std::thread::sleep(every);
            }
        }
        Reply::Endless => {
            let _ = conn.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
            );
            let block = vec![b'a'; 64 * 1024];
            while !stop.load(Ordering::SeqCst) && conn.write_all(&block).is_ok() {}
        }
    }
}
