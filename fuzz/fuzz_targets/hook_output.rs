//! Fuzz target: what hook handlers print (stdout, stderr, exit code), interpreted and
//! aggregated exactly as the hook engine does after running them. Besides "no panic", the
//! fail-closed promises of docs/hooks.md:
//!
//! - a PreToolUse handler that exits 2 denies the call, whatever it printed;
//! - a fail-closed PreToolUse handler whose output is not a valid answer denies the call;
//! - a denied call never carries a replacement input, and a replacement input is an object.
//!
//! Input: one byte of event, then up to three handler outputs separated by `\0\0`; in each,
//! the first byte picks the exit code and `failClosed`, and the rest is stdout, then an
//! optional `\0`-separated stderr.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_hooks::fuzzing::{Printed, outcome};
use toolgate_hooks::{HookDecision, HookEvent};

const EVENTS: [&str; 6] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "PermissionRequest",
    "SessionStart",
];

const CODES: [i32; 4] = [0, 2, 1, 127];

fn split(data: &[u8], sep: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(i) = rest.windows(sep.len()).position(|w| w == sep) {
        out.push(rest[..i].to_vec());
        rest = &rest[i + sep.len()..];
    }
    out.push(rest.to_vec());
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Some(event) = HookEvent::parse(EVENTS[usize::from(pick) % EVENTS.len()]) else {
        panic!("a known event name must parse");
    };
    let parts = split(rest, b"\0\0");
    let handlers: Vec<(i32, bool, Vec<u8>, Vec<u8>)> = parts
        .iter()
        .take(3)
        .map(|p| {
            let (head, body) = p.split_first().map_or((0u8, &p[..]), |(h, b)| (*h, b));
            let (stdout, stderr) = match body.iter().position(|b| *b == 0) {
                Some(i) => (body[..i].to_vec(), body[i + 1..].to_vec()),
                None => (body.to_vec(), Vec::new()),
            };
            let code = CODES[usize::from(head & 3)];
            (code, head & 4 != 0, stdout, stderr)
        })
        .collect();
    let printed: Vec<Printed<'_>> = handlers
        .iter()
        .map(|(code, fail_closed, stdout, stderr)| Printed {
            code: *code,
            stdout,
            stdout_truncated: false,
            stderr,
            fail_closed: *fail_closed,
        })
        .collect();
    let out = outcome(event, &printed);
    assert_eq!(out.results.len(), printed.len());
    assert_eq!(out.records.len(), printed.len());
    if let Some(input) = &out.updated_input {
        assert!(input.is_object(), "updatedInput {input} is not an object");
    }
    if event == HookEvent::PreToolUse {
        let exit2 = printed.iter().any(|p| p.code == 2);
        let failed_closed = printed
            .iter()
            .zip(&out.results)
            .any(|(p, r)| p.fail_closed && r.error.is_some());
        if exit2 || failed_closed {
            assert_eq!(
                out.decision,
                Some(HookDecision::Deny),
                "exit 2 or a fail-closed error must deny: {out:?}"
            );
        }
        if out.decision == Some(HookDecision::Deny) {
            assert!(out.updated_input.is_none(), "a denied call kept its new input");
        }
    }
});
