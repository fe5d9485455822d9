//! A settings server on loopback for `--settings http://127.0.0.1:…` tests: serves one
//! body with an `ETag`, answers `304` to a matching `If-None-Match`, and can be switched
//! to another body or status while the test runs.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// The server; it runs until the test process ends.
#[derive(Clone)]
pub struct PolicyServer {
    state: Arc<Mutex<(u16, String, String)>>,
    /// `http://127.0.0.1:PORT/policy.json`.
    pub url: String,
}

impl PolicyServer {
    /// Serves `body` (status 200, ETag `"0"`).
    pub fn start(body: &str) -> PolicyServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/policy.json", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new((200, body.to_owned(), "\"0\"".to_owned())));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let mut buf = [0u8; 8192];
                let n = conn.read(&mut buf).unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                let (status, body, etag) = shared.lock().unwrap().clone();
                let fresh = request.contains(&format!("if-none-match: {etag}"));
                let response = if fresh && status == 200 {
                    format!(
                        "HTTP/1.1 304 Not Modified\r\nETag: {etag}\r\nConnection: close\r\n\r\n"
                    )
                } else {
                    format!(
                        "HTTP/1.1 {status} X\r\nETag: {etag}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let _ = conn.write_all(response.as_bytes());
            }
        });
        PolicyServer { state, url }
    }

    /// Serves `body` with `status` from now on, under a new ETag.
    pub fn serve(&self, status: u16, body: &str) {
        let mut s = self.state.lock().unwrap();
        let next: u64 = s.2.trim_matches('"').parse().unwrap_or(0) + 1;
        *s = (status, body.to_owned(), format!("\"{next}\""));
    }
}
