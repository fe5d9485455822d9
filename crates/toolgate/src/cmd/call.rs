//! `toolgate call NAME JSON`: one call through the gate.
//!
//! Exit codes: 0 success, 1 tool error (any failure other than a denial), 2 denied,
//! 64 usage error.

use std::io::Read;
use std::process::ExitCode;

use serde_json::Value;
use toolgate_protocol::wire::Format;
use toolgate_protocol::{CallResult, ErrorCode, ToolCall};

use crate::cli::CallArgs;
use crate::cmd::{runtime, usage_error};
use crate::output::{self, Style, paint};
use crate::setup;

/// Exit code for a denied call.
pub const EXIT_DENIED: u8 = 2;
/// Exit code for any other failed call.
pub const EXIT_TOOL_ERROR: u8 = 1;

/// Runs `toolgate call`.
pub fn run(args: CallArgs) -> ExitCode {
    let text = if args.input == "-" {
        let mut s = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut s) {
            return usage_error("call", format!("cannot read the input from stdin: {e}"));
        }
        s
    } else {
        args.input.clone()
    };
    let input: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            return usage_error(
                "call",
                format!(
                    "the input must be a JSON object, e.g. '{{\"file_path\": \"README.md\"}}' ({e})"
                ),
            );
        }
    };
    let prompting = if std::io::IsTerminal::is_terminal(&std::io::stdin()) && args.input != "-" {
        setup::Prompting::Terminal
    } else {
        setup::Prompting::Deny
    };
    let gate = match setup::gate(&args.session, Some(&args.audit), prompting) {
        Ok(built) => built.gate,
        Err(e) => return usage_error("call", e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolgate call: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_TOOL_ERROR);
        }
    };
    let call = ToolCall::new("call-1", args.name.clone(), input);
    let result = rt.block_on(gate.execute(call));
    let printed = if args.json || !output::stdout_is_terminal() {
        output::print(&format!(
            "{}\n",
            toolgate_protocol::jsonl::result_line(&result, Format::Anthropic)
        ))
    } else {
        output::print(&human(&result, output::use_colour()))
    };
    if let Err(e) = printed {
        eprintln!("toolgate call: cannot write the result: {e}");
    }
    exit_code(&result)
}

/// The exit code for a result.
pub fn exit_code(result: &CallResult) -> ExitCode {
    match result.error() {
        None => ExitCode::SUCCESS,
        Some(e) if e.code == ErrorCode::Denied => ExitCode::from(EXIT_DENIED),
        Some(_) => ExitCode::from(EXIT_TOOL_ERROR),
    }
}

fn human(result: &CallResult, colour: bool) -> String {
    let ms = result.duration_us as f64 / 1000.0;
    let mut out = String::new();
    match &result.outcome {
        Ok(_) => {
            out.push_str(&result.model_text());
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&paint(
                &format!("✓ {} ok in {ms:.1} ms", result.tool),
                Style::Green,
                colour,
            ));
        }
        Err(e) => {
            let style = if e.code == ErrorCode::Denied {
                Style::Yellow
            } else {
                Style::Red
            };
            let layer = e
                .layer
                .map(|l| format!(", layer {}", serde_json::json!(l).as_str().unwrap_or("")))
                .unwrap_or_default();
            out.push_str(&paint(
                &format!("✗ {} ({}{layer}, stage {})", e.code, result.tool, e.stage),
                style,
                colour,
            ));
            out.push('\n');
            out.push_str(&e.message);
        }
    }
    out.push('\n');
    out
}
