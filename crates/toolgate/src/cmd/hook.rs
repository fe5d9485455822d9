//! `toolgate hook`: toolgate as a Claude Code command hook, for every tool event.
//!
//! Claude Code runs the hook with the hook JSON on stdin. The hook decides through the same
//! compiled permission engine as the gate, with the settings every other front door reads
//! (managed, user, project with its trust rules, Claude Code's own files, and `--settings`,
//! `--allow`, `--ask`, `--deny`), so `toolgate hook` and `toolgate check` answer alike:
//!
//! - a deny (a rule, the mode, the catastrophic floor) is answered `deny`;
//! - an ask from a rule, the mode or the risk floor (a high-risk or opaque command, a
//!   protected path written, credentials read) is answered `ask`;
//! - an ask only because no allow rule covers the call is no answer: Claude Code's own rules
//!   and prompt decide, as they would without toolgate;
//! - an allow is answered only with `--decide`.
//!
//! Events: the event is the input's `hook_event_name` (`--event` names it when the input does
//! not). `PreToolUse` answers `permissionDecision`; `PermissionRequest` answers
//! `decision.behavior` (deny, or allow with `--decide`; an ask is no answer, so the dialog is
//! shown); every other event gets no output.
//!
//! The hook fails closed: anything that stops it from deciding — bad arguments, unreadable
//! settings, input it cannot read — blocks the call (exit 2, reason on stderr; for
//! `PermissionRequest`, where exit 2 is ignored, a deny), because Claude Code treats every
//! other failure of a hook as "no opinion".
//!
//! It runs before every tool call an agent makes, so it starts no runtime and builds no
//! registry: read stdin, load the settings, analyse, decide, print. `toolgate hook install`
//! writes the hook into a Claude Code settings file ([`install`]).

mod facts;
mod install;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};
use toolgate_policy::PolicyRequest;
use toolgate_protocol::{Decision, Layer, PermissionMode, ToolAnnotations};

use crate::cmd::config::PolicyArgs;

pub use install::InstallArgs;

/// Largest hook input read from stdin; Claude Code's inputs are far smaller, and a runaway
/// writer must not exhaust memory.
pub const MAX_HOOK_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// Exit code that makes Claude Code block the call whatever the JSON says.
const EXIT_BLOCK: u8 = 2;

/// Options of `toolgate hook`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HookArgs {
    /// `install`: add toolgate to a Claude Code settings file.
    #[command(subcommand)]
    pub action: Option<HookAction>,

    /// The event this invocation serves when the input has no `hook_event_name`
    /// (PreToolUse, PermissionRequest, PostToolUse, …).
    #[arg(long, default_value = "PreToolUse")]
    pub event: String,

    /// Also answer `allow` for calls toolgate fully understood and found read-only (or that
    /// toolgate's rules allow), instead of printing nothing.
    #[arg(long)]
    pub decide: bool,

    /// Settings and rules beyond the files toolgate finds itself (Claude Code's `.claude/`
    /// files are always read here).
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// Subcommands of `toolgate hook`.
#[derive(Debug, clap::Subcommand)]
pub enum HookAction {
    /// Add `toolgate hook` as a PreToolUse hook to Claude Code's settings.json (project or
    /// user), keeping every other key and hook; a backup of the old file is kept.
    Install(InstallArgs),
}

/// An answer: the decision and the reason shown to the model or the user.
type Answer = Option<(Decision, String)>;

/// Runs the hook.
pub fn run(args: HookArgs) -> ExitCode {
    if let Some(HookAction::Install(install)) = &args.action {
        return install::run(install);
    }
    let input = match read_input() {
        Ok(input) => input,
        Err(reason) => return refuse(&args.event, &reason),
    };
    let event = match input.get("hook_event_name") {
        None => args.event.as_str(),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => {
            return refuse(
                &args.event,
                "toolgate hook input: `hook_event_name` is not a string",
            );
        }
    };
    // Nothing to decide after the fact or outside tool calls.
    if !matches!(event, "PreToolUse" | "PermissionRequest") {
        return ExitCode::SUCCESS;
    }
    match decide(&input, &args) {
        Ok(answer) => print_answer(event, answer),
        Err(reason) => refuse(event, &reason),
    }
}

/// The hook's input: one JSON object, at most [`MAX_HOOK_INPUT_BYTES`].
fn read_input() -> Result<Value, String> {
    let mut raw = Vec::new();
    std::io::stdin()
        .take(MAX_HOOK_INPUT_BYTES + 1)
        .read_to_end(&mut raw)
        .map_err(|e| format!("toolgate hook could not read its input: {e}"))?;
    if raw.len() as u64 > MAX_HOOK_INPUT_BYTES {
        return Err("toolgate hook input is larger than 16 MiB; refusing to decide".into());
    }
    match serde_json::from_slice(&raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("toolgate hook input is not a JSON object".into()),
        Err(e) => Err(format!("toolgate hook input is not JSON: {e}")),
    }
}

/// Refuses the call because the hook could not decide, in the way Claude Code reads as a
/// refusal for `event`: exit 2 (which blocks a `PreToolUse`), or for `PermissionRequest`,
/// where exit 2 is ignored, a `deny` answer.
fn refuse(event: &str, reason: &str) -> ExitCode {
    eprintln!("{reason}");
    if event == "PermissionRequest" {
        return print_answer(event, Some((Decision::Deny, reason.to_owned())));
    }
    ExitCode::from(EXIT_BLOCK)
}

/// `toolgate hook` with arguments the command line parser refused: a typo in the installed
/// hook must block calls, not let every one through as "no opinion". The event is the
/// input's `hook_event_name`, else a readable `--event NAME` among `args`, else `PreToolUse`.
pub fn refuse_bad_arguments(args: &[String], error: &str) -> ExitCode {
    let from_args = args
        .iter()
        .position(|a| a == "--event")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| {
            args.iter()
                .find_map(|a| a.strip_prefix("--event=").map(str::to_owned))
        });
    let input = read_input().ok();
    let event = input
        .as_ref()
        .and_then(|i| i.get("hook_event_name"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or(from_args)
        .unwrap_or_else(|| "PreToolUse".to_owned());
    let first_line = error.lines().next().unwrap_or(error);
    refuse(
        &event,
        &format!("toolgate hook: bad arguments, so every call is refused: {first_line}"),
    )
}

/// The hook JSON for `answer` on `event`; `None` when there is nothing to say.
pub fn output(event: &str, answer: &Answer) -> Option<Value> {
    let (decision, reason) = answer.as_ref()?;
    match event {
        "PreToolUse" => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": reason,
            }
        })),
        "PermissionRequest" => {
            let decision = match decision {
                Decision::Deny => json!({"behavior": "deny", "message": reason}),
                Decision::Allow => json!({"behavior": "allow"}),
                // The permission dialog is already the question.
                Decision::Ask => return None,
            };
            Some(json!({
                "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}
            }))
        }
        _ => None,
    }
}

fn print_answer(event: &str, answer: Answer) -> ExitCode {
    let Some(out) = output(event, &answer) else {
        return ExitCode::SUCCESS;
    };
    let mut stdout = std::io::stdout().lock();
    // If stdout is gone Claude Code cannot read a decision either; exit 2 still blocks.
    if writeln!(stdout, "{out}")
        .and_then(|()| stdout.flush())
        .is_err()
        && answer.is_some_and(|(d, _)| d != Decision::Allow)
    {
        return ExitCode::from(EXIT_BLOCK);
    }
    ExitCode::SUCCESS
}

/// Where the call happens: its cwd, the project root and home.
struct Place {
    cwd: PathBuf,
    project: PathBuf,
    home: Option<PathBuf>,
}

impl Place {
    fn of(input: &Value) -> Self {
        let cwd = input
            .get("cwd")
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let project = std::env::var_os("CLAUDE_PROJECT_DIR")
            .filter(|p| !p.is_empty())
            .map_or_else(|| cwd.clone(), PathBuf::from);
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        Place { cwd, project, home }
    }
}

/// The hook's answer for one tool-event input: `None` is "no opinion".
pub fn decide(input: &Value, args: &HookArgs) -> Result<Answer, String> {
    let tool = input
        .get("tool_name")
        .and_then(Value::as_str)
        .ok_or("toolgate hook input has no `tool_name`")?;
    let tool = toolgate_protocol::canonical_tool_name(tool);
    let tool_input = input.get("tool_input").unwrap_or(&Value::Null);
    let place = Place::of(input);
    // Claude Code's current mode; a name toolgate does not know is judged as `default`.
    let mode = input
        .get("permission_mode")
        .and_then(Value::as_str)
        .and_then(|m| m.parse::<PermissionMode>().ok())
        .unwrap_or_default();
    let event = facts::event(tool, tool_input, &place)?;
    let mut setup = toolgate_setup::Setup::new(&place.project);
    setup.settings = args.policy.choice();
    // Claude Code's own settings files are this front door's settings too.
    setup.settings.claude = true;
    // Claude Code runs the command, outside toolgate's sandbox.
    setup.settings.commands_elsewhere = true;
    let loaded = setup.load().map_err(|e| format!("toolgate hook: {e}"))?;
    let roots: Vec<&Path> = if place.cwd.starts_with(&place.project) {
        vec![place.project.as_path()]
    } else {
        vec![place.project.as_path(), place.cwd.as_path()]
    };
    let request = PolicyRequest {
        tool,
        subject: &event.subject,
        annotations: ToolAnnotations::default(),
        input: tool_input,
        facts: &event.facts,
        mode,
        hook: None,
        cwd: &place.cwd,
        roots: &roots,
    };
    let v = loaded.engine.decide(&request).verdict;
    Ok(match (v.decision, v.layer) {
        // Nothing but the lack of an allow rule: Claude Code's own rules decide.
        (Decision::Ask, Layer::Default) => None,
        (Decision::Allow, _) if !args.decide => None,
        (decision, _) => Some((decision, format!("toolgate: {}", v.reason))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_have_the_shape_of_their_event() {
        let deny = Some((Decision::Deny, "no".to_owned()));
        let ask = Some((Decision::Ask, "hm".to_owned()));
        let pre = output("PreToolUse", &deny).unwrap();
        assert_eq!(pre["hookSpecificOutput"]["permissionDecision"], "deny");
        let pr = output("PermissionRequest", &deny).unwrap();
        assert_eq!(pr["hookSpecificOutput"]["decision"]["behavior"], "deny");
        assert_eq!(pr["hookSpecificOutput"]["decision"]["message"], "no");
        assert!(output("PermissionRequest", &ask).is_none());
        assert!(output("PostToolUse", &deny).is_none());
        assert!(output("PreToolUse", &None).is_none());
    }
}
