//! Fuzz target: a whole stdio MCP connection (`toolgate serve`) fed with arbitrary client
//! input: the newline framing and decoding of `toolgate_mcp::serve_io`, rmcp behind it and
//! the gate's file tools. The input is the client's bytes up to end of input; the server
//! must then finish (running calls cancelled) and everything it wrote must be whole JSON-RPC
//! lines: objects with `"jsonrpc": "2.0"`, each answer or error with an `id` member.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate_core::Gate;
use toolgate_fuzz::{gate, runtime};
use toolgate_mcp::SessionSource;

/// The in-memory pipe's buffer: large enough that the server never waits for the test to
/// read while the test is still writing.
const PIPE_BYTES: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let gate: Arc<Gate> = gate();
    let source: Arc<dyn SessionSource> = gate;
    let rt = runtime();
    let output = rt.block_on(async {
        let (client, server) = tokio::io::duplex(PIPE_BYTES);
        let (sr, sw) = tokio::io::split(server);
        let served = tokio::spawn(toolgate_mcp::serve_io(source, sr, sw));
        let (mut cr, mut cw) = tokio::io::split(client);
        let writing = async {
            // The server may stop reading early (it answered everything it will); a write
            // error then is fine.
            let _ = cw.write_all(data).await;
            let _ = cw.shutdown().await;
        };
        let mut out = Vec::new();
        let reading = cr.read_to_end(&mut out);
        let ((), read) = tokio::join!(writing, reading);
        assert!(read.is_ok(), "reading the server's output failed: {read:?}");
        match served.await {
            Ok(_) => {}
            Err(e) => panic!("the server task failed: {e}"),
        }
        out
    });
    let text = match std::str::from_utf8(&output) {
        Ok(t) => t,
        Err(e) => panic!("the server wrote invalid UTF-8: {e}"),
    };
    if text.is_empty() {
        return;
    }
    assert!(text.ends_with('\n'), "the last output line is not whole: {text:?}");
    for line in text.lines() {
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => panic!("output line is not JSON ({e}): {line}"),
        };
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        if v.get("result").is_some() || v.get("error").is_some() {
            assert!(v.get("id").is_some(), "an answer without an id: {line}");
        }
    }
});
