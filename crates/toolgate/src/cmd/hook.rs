//! `toolgate hook`: toolgate as a Claude Code PreToolUse command hook.
//!
//! Claude Code runs the hook before each tool call with the hook JSON on stdin. For `Bash`
//! the command is analysed by the shell analyzer: a catastrophic command is denied, a
//! high-risk or opaque one (something the analyzer cannot see through) asks, and for
//! anything else the hook prints nothing, so Claude Code's own rules still apply. With
//! `--decide` it answers `allow` for read-only commands it fully understood.
//!
//! The hook fails closed: input it cannot read blocks the call (exit 2, reason on stderr),
//! because Claude Code treats every other failure of a hook as "no opinion".
//!
//! It runs before every shell command an agent issues, so it starts no runtime and builds
//! no registry: read stdin, analyse, print.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};
use toolgate_protocol::{Decision, Risk};
use toolgate_shell::{Analysis, Context};

/// Largest hook input read from stdin; Claude Code's inputs are far smaller, and a runaway
/// writer must not exhaust memory.
pub const MAX_HOOK_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// Exit code that makes Claude Code block the call whatever the JSON says.
const EXIT_BLOCK: u8 = 2;

/// Options of `toolgate hook`.
#[derive(Debug, clap::Args)]
pub struct HookArgs {
    /// The hook event this invocation serves (only PreToolUse decides).
    #[arg(long, default_value = "PreToolUse")]
    pub event: String,

    /// Also answer `allow` for calls toolgate fully understood and found read-only, instead
    /// of printing nothing.
    #[arg(long)]
    pub decide: bool,
}

/// Runs the hook.
pub fn run(args: HookArgs) -> ExitCode {
    let mut raw = Vec::new();
    if let Err(e) = std::io::stdin()
        .take(MAX_HOOK_INPUT_BYTES + 1)
        .read_to_end(&mut raw)
    {
        return block(&format!("toolgate hook could not read its input: {e}"));
    }
    if raw.len() as u64 > MAX_HOOK_INPUT_BYTES {
        return block("toolgate hook input is larger than 16 MiB; refusing to decide");
    }
    let input: Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(e) => return block(&format!("toolgate hook input is not JSON: {e}")),
    };
    let event = input
        .get("hook_event_name")
        .and_then(Value::as_str)
        .unwrap_or(&args.event);
    if event != "PreToolUse" {
        return ExitCode::SUCCESS;
    }
    match decide(&input, args.decide) {
        Ok(Some((decision, reason))) => {
            let out = json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": decision,
                    "permissionDecisionReason": reason,
                }
            });
            let mut stdout = std::io::stdout().lock();
            // If stdout is gone Claude Code cannot read a decision either; exit 2 still blocks.
            if writeln!(stdout, "{out}")
                .and_then(|()| stdout.flush())
                .is_err()
                && decision != Decision::Allow
            {
                return ExitCode::from(EXIT_BLOCK);
            }
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(reason) => block(&reason),
    }
}

fn block(reason: &str) -> ExitCode {
    eprintln!("{reason}");
    ExitCode::from(EXIT_BLOCK)
}

/// The hook's answer for one PreToolUse input: `None` is "no opinion".
pub fn decide(input: &Value, decide_allow: bool) -> Result<Option<(Decision, String)>, String> {
    let tool = input
        .get("tool_name")
        .and_then(Value::as_str)
        .ok_or("toolgate hook input has no `tool_name`")?;
    if tool != "Bash" {
        return Ok(None);
    }
    let command = input
        .get("tool_input")
        .and_then(|t| t.get("command"))
        .and_then(Value::as_str)
        .ok_or("toolgate hook: Bash input has no string `command`")?;
    let cwd = input
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut ctx = Context::new(cwd.clone()).with_root(cwd);
    if let Some(project) = std::env::var_os("CLAUDE_PROJECT_DIR").filter(|p| !p.is_empty()) {
        ctx = ctx.with_root(PathBuf::from(project));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        ctx = ctx.with_home(PathBuf::from(home));
    }
    let analysis = toolgate_shell::analyze(command, &ctx);
    Ok(verdict(&analysis, decide_allow))
}

fn verdict(analysis: &Analysis, decide_allow: bool) -> Option<(Decision, String)> {
    let reasons = |min: Risk| -> String {
        analysis
            .findings
            .iter()
            .filter(|f| f.risk >= min)
            .map(|f| f.reason.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    };
    if analysis.risk == Risk::Catastrophic {
        return Some((
            Decision::Deny,
            format!("toolgate: {}", reasons(Risk::Catastrophic)),
        ));
    }
    if analysis.risk == Risk::High {
        return Some((Decision::Ask, format!("toolgate: {}", reasons(Risk::High))));
    }
    if !analysis.opaque.is_empty() {
        return Some((
            Decision::Ask,
            format!(
                "toolgate could not see what this command does: {}",
                analysis.opaque.join("; ")
            ),
        ));
    }
    (decide_allow && analysis.is_read_only())
        .then(|| (Decision::Allow, "toolgate: read-only command".to_owned()))
}
