//! Runs `toolgate exec` with tool calls on its stdin and reads one result per call from its
//! stdout: what the gateway and ToolSearch tests do for every scenario.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// Starts `cmd` (a `toolgate exec …` command, arguments and environment set), writes the
/// calls (name, input) as `tool_use` lines with ids `t0`, `t1`, …, and returns the output and
/// the results, one JSON value per stdout line.
pub fn run_calls(cmd: Command, calls: &[(&str, Value)]) -> (Output, Vec<Value>) {
    let mut input = String::new();
    for (i, (name, args)) in calls.iter().enumerate() {
        input.push_str(
            &json!({"type": "tool_use", "id": format!("t{i}"), "name": name, "input": args})
                .to_string(),
        );
        input.push('\n');
    }
    let out = with_stdin(cmd, input.as_bytes());
    let results = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, results)
}

/// [`run_calls`], asserting one result per call.
pub fn results(cmd: Command, calls: &[(&str, Value)]) -> Vec<Value> {
    let (out, results) = run_calls(cmd, calls);
    assert_eq!(results.len(), calls.len(), "{out:?}");
    results
}

/// Runs `cmd` with `stdin` as its input and its stdout and stderr captured.
pub fn with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}
