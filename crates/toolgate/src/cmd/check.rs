//! `toolgate check [--settings …] [--mode …] [--json|--explain] 'Bash(rm -rf build)'` or
//! `toolgate check NAME JSON`: the decision for a call, without running it, with the trace
//! (layer, rule, source, the analyzer's facts).
//!
//! Exit codes: 0 allow, 1 the call fails before policy (unknown tool, invalid input), 2 deny,
//! 3 ask, 64 usage error.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolgate_policy::{Decided, PolicyRequest, parse_check_target};
use toolgate_protocol::{Decision, ErrorCode, ToolCall};

use crate::cli::SessionArgs;
use crate::cmd::usage_error;
use crate::output;
use crate::setup;

/// Exit code for a denied call.
pub const EXIT_DENY: u8 = 2;
/// Exit code for a call that would ask.
pub const EXIT_ASK: u8 = 3;
/// Exit code for a call that fails before policy (unknown tool, invalid input).
pub const EXIT_INVALID: u8 = 1;

/// `toolgate check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Session setup (workspace, mode, settings, rules).
    #[command(flatten)]
    pub session: SessionArgs,

    /// Print JSON.
    #[arg(long, conflicts_with = "explain")]
    pub json: bool,

    /// Explain the decision in words.
    #[arg(long)]
    pub explain: bool,

    /// `Tool(specifier)` (e.g. `Bash(rm -rf build)`, `Read(./.env)`) or a tool name.
    pub target: String,

    /// The input as JSON, when the target is a bare tool name.
    pub input: Option<String>,
}

/// Runs `toolgate check`: stages 1–4 through the gate (the real schema, validation and
/// analyzer facts), then the permission engine with its full trace. Nothing runs and
/// nothing is audited.
pub fn run(args: CheckArgs) -> ExitCode {
    let (tool, input) = match parse_check_target(&args.target, args.input.as_deref()) {
        Ok(t) => t,
        Err(e) => return usage_error("check", e),
    };
    let built = match setup::gate(&args.session, None, setup::Prompting::Deny) {
        Ok(b) => b,
        Err(e) => return usage_error("check", e),
    };
    let gate = &built.gate;
    let analyzed = match gate.analyze(&ToolCall::new("check", tool.clone(), input)) {
        Ok(a) => a,
        Err(err) => {
            let printed = if args.json {
                output::print_json(&json!({"tool": tool, "error": err}))
            } else {
                output::print(&format!("{}: {}\n", err.code, err.message))
            };
            if printed.is_err() {
                return ExitCode::from(1);
            }
            return ExitCode::from(if err.code == ErrorCode::Denied {
                EXIT_DENY
            } else {
                EXIT_INVALID
            });
        }
    };
    let session = gate.session();
    let cwd = session.cwd();
    let roots: Vec<&Path> = session.workspace().roots().collect();
    let request = PolicyRequest {
        tool: &analyzed.spec.name,
        subject: &analyzed.spec.subject,
        annotations: analyzed.spec.annotations,
        input: &analyzed.input,
        facts: &analyzed.facts,
        mode: session.mode(),
        hook: None,
        cwd: &cwd,
        roots: &roots,
    };
    let decided: Decided = built.engine.decide(&request);
    let printed = if args.json {
        output::print_json(&json!({
            "tool": tool,
            "input": analyzed.input,
            "facts": analyzed.facts,
            "decided": decided.to_json(),
            "warnings": built.engine.warnings(),
        }))
    } else {
        let mut text = if args.explain {
            decided.explain()
        } else {
            decided.render()
        };
        // The same warnings `--json` carries (an untrusted workspace above all): a decision
        // read without them can mislead.
        for w in built.engine.warnings() {
            text.push_str(&format!("warning: {w}\n"));
        }
        output::print(&text)
    };
    if printed.is_err() {
        return ExitCode::from(1);
    }
    match decided.verdict.decision {
        Decision::Allow => ExitCode::SUCCESS,
        Decision::Deny => ExitCode::from(EXIT_DENY),
        Decision::Ask => ExitCode::from(EXIT_ASK),
    }
}
