//! `http` handlers over TLS, against a local server whose certificate comes from a test CA
//! made with rcgen; redirects; the response-size cap.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Fixture;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use toolgate_protocol::Decision;

/// A CA certificate (PEM) and a TLS server config for 127.0.0.1 signed by it.
fn pki() -> (String, Arc<ServerConfig>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "toolgate test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(leaf.der().to_vec())], key)
        .unwrap();
    (ca_cert.pem(), Arc::new(config))
}

/// Serves TLS connections on 127.0.0.1, answering each request with `body` as JSON; sends
/// every request it read to the returned channel.
async fn https_server(
    config: Arc<ServerConfig>,
    body: &'static str,
) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let acceptor = TlsAcceptor::from(config);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            // A client that rejects the certificate ends the handshake: not a test failure.
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                continue;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !request_complete(&buf) {
                match tls.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let _ = tx.send(String::from_utf8_lossy(&buf).to_string());
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tls.write_all(resp.as_bytes()).await;
            let _ = tls.shutdown().await;
        }
    });
    (url, rx)
}

fn request_complete(buf: &[u8]) -> bool {
    let text = String::from_utf8_lossy(buf);
    let Some(end) = text.find("\r\n\r\n") else {
        return false;
    };
    let len: usize = text
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().to_owned())
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    buf.len() >= end + 4 + len
}

const DENY: &str = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "tls collector says no"}}"#;

#[tokio::test]
async fn https_hook_with_a_trusted_ca_posts_and_decides() {
    let f = Fixture::new();
    let (ca, config) = pki();
    let (url, mut rx) = https_server(config, DENY).await;
    let e = f
        .pre_engine(json!([{"type": "http", "url": url, "timeout": 10,
            "headers": {"X-Token": "$HOME"}, "allowedEnvVars": ["HOME"]}]))
        .with_root_certificates_pem(ca.as_bytes())
        .unwrap();
    let out = f.pre(&e, "Echo", json!({"text": "over tls"})).await;
    let v = out.verdict.unwrap_or_else(|| panic!("{:?}", out.records));
    assert_eq!(
        (v.decision, v.reason.as_str()),
        (Decision::Deny, "tls collector says no")
    );
    let req = rx.recv().await.unwrap();
    assert!(req.starts_with("POST /hook HTTP/1.1\r\n"), "{req}");
    let home = std::env::var("HOME").unwrap_or_default();
    assert!(req.contains(&format!("X-Token: {home}\r\n")), "{req}");
    let body: serde_json::Value =
        serde_json::from_str(req.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["tool_input"]["text"], "over tls");
}

#[tokio::test]
async fn an_untrusted_certificate_is_an_error_or_a_deny_when_fail_closed() {
    let f = Fixture::new();
    let (_ca, config) = pki();
    let (url, _rx) = https_server(config, DENY).await;
    // The server's CA is not added: the handshake must fail, whatever the server says.
    let e = f.pre_engine(json!([{"type": "http", "url": url, "timeout": 10}]));
    let out = f.pre(&e, "Echo", json!({})).await;
    assert!(
        out.verdict.is_none(),
        "an unverified answer must not decide"
    );
    assert_eq!(out.records[0].outcome, "error");
    let detail = out.records[0].detail.clone().unwrap_or_default();
    assert!(detail.to_lowercase().contains("certificate"), "{detail}");

    // Another CA does not help either.
    let (other_ca, _) = pki();
    let e = f
        .pre_engine(json!([{"type": "http", "url": url, "timeout": 10, "failClosed": true}]))
        .with_root_certificates_pem(other_ca.as_bytes())
        .unwrap();
    let v = f.pre(&e, "Echo", json!({})).await.verdict.unwrap();
    assert_eq!(v.decision, Decision::Deny);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let f = Fixture::new();
    // The redirect target counts connections; it must see none.
    let target = TcpListener::bind("127.0.0.1:0").unwrap();
    let target_addr = target.local_addr().unwrap();
    target.set_nonblocking(true).unwrap();
    let redirector = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", redirector.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in redirector.incoming() {
            let Ok(mut s) = stream else { return };
            let mut chunk = [0u8; 65536];
            let _ = s.read(&mut chunk);
            let resp = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://{target_addr}/steal\r\nContent-Length: 0\r\n\r\n"
            );
            let _ = s.write_all(resp.as_bytes());
        }
    });
    let e = f.pre_engine(json!([{"type": "http", "url": url, "timeout": 5, "failClosed": true}]));
    let out = f.pre(&e, "Echo", json!({})).await;
    assert_eq!(out.records[0].outcome, "error");
    let detail = out.records[0].detail.clone().unwrap_or_default();
    assert!(detail.contains("redirect"), "{detail}");
    assert_eq!(out.verdict.unwrap().decision, Decision::Deny);
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        target.accept().is_err(),
        "the redirect target must not be contacted"
    );
}

#[tokio::test]
async fn an_endless_answer_is_cut_at_the_cap_without_waiting() {
    let f = Fixture::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let mut chunk = [0u8; 65536];
        let _ = s.read(&mut chunk);
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        let _ = s.write_all(b"1\r\n{\r\n");
        let piece = format!("4000\r\n{}\r\n", " ".repeat(0x4000));
        // Streams until the client hangs up.
        while s.write_all(piece.as_bytes()).is_ok() {}
    });
    let e = f.pre_engine(json!([{"type": "http", "url": url, "timeout": 20}]));
    let t = Instant::now();
    let out = f.pre(&e, "Echo", json!({})).await;
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(out.records[0].outcome, "error");
    let detail = out.records[0].detail.clone().unwrap_or_default();
    assert!(detail.contains("larger than 1 MiB"), "{detail}");
}
