//! Fuzz target: the JSON-lines call stream of `toolgate exec`, framed and decoded by `toolgate_protocol::jsonl`, every call run through
//! a real gate (file tools in a scratch workspace) and every result rendered as exec prints
//! it. Besides "no panic":
//!
//! - every non-blank line gets exactly one result line, in order, which is a JSON object;
//! - a malformed line is answered `malformed_call` naming its line number;
//! - the gate's result for a call carries the call's id.
//!
//! The reader's line limit is lowered to 256 bytes here so that the skip path of long
//! lines is reached with small inputs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolgate_fuzz::{gate, runtime};
use toolgate_protocol::jsonl::{CallReader, Malformed, result_line};
use toolgate_protocol::wire::Format;
use toolgate_protocol::ErrorCode;

/// The line limit used here (see the module doc).
const LINE_LIMIT: usize = 256;

/// Lines run per input: more only repeats the same code.
const MAX_CALLS: usize = 16;

fuzz_target!(|data: &[u8]| {
    let gate = gate();
    let rt = runtime();
    // A tiny read buffer, so lines arrive in pieces as from a pipe.
    let reader = std::io::BufReader::with_capacity(7, data);
    let mut calls = CallReader::with_line_limit(reader, LINE_LIMIT);
    let mut n = 0;
    while let Ok(Some(line)) = calls.next_call() {
        n += 1;
        if n > MAX_CALLS {
            break;
        }
        let line_no = calls.line_no();
        let (id, result) = match line {
            Ok(call) => (call.id.clone(), rt.block_on(gate.execute(call))),
            Err(Malformed { call, error }) => {
                assert_eq!(error.code, ErrorCode::MalformedCall);
                assert!(
                    error.message.starts_with(&format!("line {line_no}: ")),
                    "{}",
                    error.message
                );
                (call.id.clone(), gate.reject(call, error))
            }
        };
        assert_eq!(result.call_id, id);
        for format in [Format::Anthropic, Format::OpenAi] {
            let printed = result_line(&result, format);
            let parsed: Value = match serde_json::from_str(&printed) {
                Ok(v) => v,
                Err(e) => panic!("result line is not JSON ({e}): {printed}"),
            };
            assert!(parsed.is_object());
            assert!(!printed.contains('\n'), "a result line holds a newline");
        }
    }
});
