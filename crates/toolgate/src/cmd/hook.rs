//! `toolgate hook`: toolgate as a Claude Code PreToolUse command hook.
//!
//! Claude Code runs the hook before each tool call with the hook JSON on stdin. For `Bash`
//! the command is analysed by the shell analyzer: a catastrophic command is denied, a
//! high-risk or opaque one (something the analyzer cannot see through) asks, and for
//! anything else the hook prints nothing, so Claude Code's own rules still apply. With
//! `--decide` it answers `allow` for read-only commands it fully understood.
//!
//! With `--settings FILE|JSON`, `--allow/--ask/--deny RULE` or `--claude` (which reads the
//! `.claude/` settings files too) it also applies toolgate's permission engine to the
//! analyzer's facts: a deny or ask from a rule, the mode or the risk floor is answered, an
//! allow only with `--decide`, and "no rule matched" stays no opinion so Claude Code's own
//! rules still apply.
//!
//! The hook fails closed: input it cannot read blocks the call (exit 2, reason on stderr),
//! because Claude Code treats every other failure of a hook as "no opinion".
//!
//! It runs before every shell command an agent issues, so it starts no runtime and builds
//! no registry: read stdin, analyse, print.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};
use toolgate_policy::PolicyRequest;
use toolgate_protocol::{Decision, Layer, Risk, Subject, ToolAnnotations};
use toolgate_shell::{Analysis, Context};

use crate::cmd::config::PolicyArgs;

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

    /// Also answer `allow` for calls toolgate fully understood and found read-only (or that
    /// toolgate's rules allow), instead of printing nothing.
    #[arg(long)]
    pub decide: bool,

    /// toolgate's settings and rules (used only when given).
    #[command(flatten)]
    pub policy: PolicyArgs,
}

impl HookArgs {
    fn uses_engine(&self) -> bool {
        let p = &self.policy;
        p.claude
            || !p.settings.is_empty()
            || !p.allow.is_empty()
            || !p.ask.is_empty()
            || !p.deny.is_empty()
    }
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
    match decide(&input, &args) {
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
pub fn decide(input: &Value, args: &HookArgs) -> Result<Option<(Decision, String)>, String> {
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
    let project = std::env::var_os("CLAUDE_PROJECT_DIR")
        .filter(|p| !p.is_empty())
        .map_or_else(|| cwd.clone(), PathBuf::from);
    let mut ctx = Context::new(cwd.clone()).with_root(project.clone());
    if !cwd.starts_with(&project) {
        ctx = ctx.with_root(cwd.clone());
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        ctx = ctx.with_home(PathBuf::from(home));
    }
    let analysis = toolgate_shell::analyze(command, &ctx);
    if !args.uses_engine() {
        return Ok(verdict(&analysis, args.decide));
    }
    engine_verdict(input, &analysis, &project, &cwd, args)
}

/// toolgate's permission engine on the analyzer's facts.
fn engine_verdict(
    input: &Value,
    analysis: &Analysis,
    project: &Path,
    cwd: &Path,
    args: &HookArgs,
) -> Result<Option<(Decision, String)>, String> {
    let mode = input.get("permission_mode").and_then(Value::as_str);
    let opts = args.policy.load_options(project, &[], mode);
    let loaded = args
        .policy
        .load(&opts)
        .map_err(|e| format!("toolgate hook: {e}"))?;
    let mut facts = analysis.facts();
    let tool_input = input.get("tool_input").cloned().unwrap_or(Value::Null);
    facts.subject = tool_input
        .get("command")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let roots = [project];
    let subject = Subject::Command {
        field: "command".into(),
    };
    let request = PolicyRequest {
        tool: "Bash",
        subject: &subject,
        annotations: ToolAnnotations::default(),
        input: &tool_input,
        facts: &facts,
        mode: loaded.mode,
        hook: None,
        cwd,
        roots: &roots,
    };
    let v = loaded.engine.decide(&request).verdict;
    Ok(match (v.decision, v.layer) {
        // Nothing matched: leave it to Claude Code's own rules.
        (Decision::Ask, Layer::Default) => None,
        (Decision::Allow, _) if !args.decide => None,
        (decision, _) => Some((decision, format!("toolgate: {}", v.reason))),
    })
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
