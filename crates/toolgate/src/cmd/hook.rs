//! `toolgate hook`: toolgate as a Claude Code command hook, for every tool event.
//!
//! Claude Code runs the hook with the hook JSON on stdin. What toolgate looks at:
//!
//! - `Bash`: the command is analysed by the shell analyzer: a catastrophic command is denied,
//!   a high-risk or opaque one (something the analyzer cannot see through) asks.
//! - `Edit`, `Write`, `MultiEdit`, `NotebookEdit`: a write to a protected path (`.git/`,
//!   `.claude/`, `.toolgate/`, shell rc files, `.mcp.json`, … — the shell analyzer's list)
//!   asks, except in `bypassPermissions` mode.
//! - `Read`, `Grep`, `Glob`: reading a credentials file (`~/.ssh/id_*`, `.env*`, cloud and
//!   registry credentials, … — the analyzer's secret list) asks, as `cat` of it in Bash does.
//! - anything else: no opinion.
//!
//! For anything else the hook prints nothing, so Claude Code's own rules still apply. With
//! `--decide` it answers `allow` for read-only shell commands it fully understood.
//!
//! With `--settings FILE|JSON`, `--allow/--ask/--deny RULE` or `--claude` (which reads the
//! `.claude/` settings files too) the call first goes through toolgate's permission engine —
//! Bash rules on the analyzer's facts, `Read(…)`/`Edit(…)` path rules, `WebFetch(domain:…)`,
//! tool names for every other tool: a deny or ask from a rule, the mode or the risk floor is
//! answered, an allow only with `--decide`; when no rule matched, the built-in checks above
//! apply and otherwise Claude Code's own rules do.
//!
//! Events: the event is the input's `hook_event_name` (`--event` names it when the input does
//! not). `PreToolUse` answers `permissionDecision`; `PermissionRequest` answers
//! `decision.behavior` (deny, or allow with `--decide`; an ask is no answer, so the dialog is
//! shown); every other event gets no output.
//!
//! The hook fails closed: input it cannot read blocks the call (exit 2, reason on stderr;
//! for `PermissionRequest`, where exit 2 is ignored, a deny), because Claude Code treats
//! every other failure of a hook as "no opinion".
//!
//! It runs before every tool call an agent makes, so it starts no runtime and builds no
//! registry: read stdin, analyse, print. `toolgate hook install` writes the hook into a
//! Claude Code settings file ([`install`]).

mod files;
pub mod if_matcher;
mod install;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};
use toolgate_policy::PolicyRequest;
use toolgate_protocol::{Decision, Layer, PermissionMode, Risk, Subject, ToolAnnotations};
use toolgate_shell::{Analysis, Context};

use crate::cmd::config::PolicyArgs;

pub use if_matcher::PolicyIfMatcher;
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

    /// toolgate's settings and rules (used only when given).
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

/// An answer: the decision and the reason shown to the model or the user.
type Answer = Option<(Decision, String)>;

/// Runs the hook.
pub fn run(args: HookArgs) -> ExitCode {
    if let Some(HookAction::Install(install)) = &args.action {
        return install::run(install);
    }
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
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return block("toolgate hook input is not a JSON object"),
        Err(e) => return block(&format!("toolgate hook input is not JSON: {e}")),
    };
    let event = match input.get("hook_event_name") {
        None => args.event.as_str(),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return block("toolgate hook input: `hook_event_name` is not a string"),
    };
    match event {
        "PreToolUse" => match decide(&input, &args) {
            Ok(answer) => print_answer(event, answer),
            Err(reason) => block(&reason),
        },
        // Exit 2 does not block a PermissionRequest: failing closed means answering deny.
        "PermissionRequest" => match decide(&input, &args) {
            Ok(answer) => print_answer(event, answer),
            Err(reason) => {
                eprintln!("{reason}");
                print_answer(event, Some((Decision::Deny, reason)))
            }
        },
        // Nothing to decide after the fact or outside tool calls.
        _ => ExitCode::SUCCESS,
    }
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

fn block(reason: &str) -> ExitCode {
    eprintln!("{reason}");
    ExitCode::from(EXIT_BLOCK)
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

/// What toolgate knows about one call, per tool family.
enum Call {
    Bash(Box<Analysis>),
    File(files::FileCall),
    Fetch,
    Other,
}

/// The hook's answer for one tool-event input: `None` is "no opinion".
pub fn decide(input: &Value, args: &HookArgs) -> Result<Answer, String> {
    let tool = input
        .get("tool_name")
        .and_then(Value::as_str)
        .ok_or("toolgate hook input has no `tool_name`")?;
    let tool_input = input.get("tool_input").unwrap_or(&Value::Null);
    let place = Place::of(input);
    let mode = input
        .get("permission_mode")
        .and_then(Value::as_str)
        .and_then(|m| m.parse::<PermissionMode>().ok())
        .unwrap_or_default();
    let call = match tool {
        "Bash" => {
            let command = tool_input
                .get("command")
                .and_then(Value::as_str)
                .ok_or("toolgate hook: Bash input has no string `command`")?;
            Call::Bash(Box::new(analyze(command, &place)))
        }
        _ => match files::FileCall::from_input(tool, tool_input, &place)? {
            Some(f) => Call::File(f),
            None if tool == "WebFetch" => {
                tool_input
                    .get("url")
                    .and_then(Value::as_str)
                    .ok_or("toolgate hook: WebFetch input has no string `url`")?;
                Call::Fetch
            }
            None => Call::Other,
        },
    };
    let from_rules = if args.uses_engine() {
        engine_verdict(input, tool, &call, &place, args)?
    } else {
        RuleAnswer::NoRule
    };
    let answer = match from_rules {
        RuleAnswer::Decided(answer) => answer,
        RuleAnswer::NoRule => match &call {
            Call::Bash(analysis) => bash_verdict(analysis, args.decide),
            Call::File(f) => f.verdict(mode),
            Call::Fetch | Call::Other => None,
        },
    };
    Ok(answer.map(|(d, reason)| dont_ask(d, reason, mode)))
}

/// In `dontAsk` mode what would ask is refused; saying so spares Claude Code a prompt it
/// would refuse anyway, and the model learns why.
fn dont_ask(decision: Decision, reason: String, mode: PermissionMode) -> (Decision, String) {
    if decision == Decision::Ask && mode == PermissionMode::DontAsk {
        return (
            Decision::Deny,
            format!("{reason} (dontAsk mode refuses calls that need approval)"),
        );
    }
    (decision, reason)
}

fn analyze(command: &str, place: &Place) -> Analysis {
    let mut ctx = Context::new(place.cwd.clone())
        .with_root(place.project.clone())
        .with_sources(toolgate_tools::shell::read_sourced_file);
    if !place.cwd.starts_with(&place.project) {
        ctx = ctx.with_root(place.cwd.clone());
    }
    if let Some(home) = &place.home {
        ctx = ctx.with_home(home.clone());
    }
    toolgate_shell::analyze(command, &ctx)
}

/// What toolgate's rules said.
enum RuleAnswer {
    /// A rule, the mode or the risk floor decided (an allow without `--decide` is `None`:
    /// no opinion, Claude Code's rules apply).
    Decided(Answer),
    /// No rule matched: the built-in checks decide.
    NoRule,
}

/// toolgate's permission engine on the call.
fn engine_verdict(
    input: &Value,
    tool: &str,
    call: &Call,
    place: &Place,
    args: &HookArgs,
) -> Result<RuleAnswer, String> {
    let mode = input.get("permission_mode").and_then(Value::as_str);
    let opts = args.policy.load_options(&place.project, &[], mode);
    let loaded = args
        .policy
        .load(&opts)
        .map_err(|e| format!("toolgate hook: {e}"))?;
    let tool_input = input.get("tool_input").cloned().unwrap_or(Value::Null);
    let (subject, facts) = match call {
        Call::Bash(analysis) => {
            let mut facts = analysis.facts();
            facts.subject = tool_input
                .get("command")
                .and_then(Value::as_str)
                .map(str::to_owned);
            (
                Subject::Command {
                    field: "command".into(),
                },
                facts,
            )
        }
        Call::File(f) => (f.subject(), Default::default()),
        Call::Fetch => (
            Subject::Url {
                field: "url".into(),
            },
            Default::default(),
        ),
        Call::Other => (Subject::None, Default::default()),
    };
    let roots = [place.project.as_path()];
    let request = PolicyRequest {
        tool,
        subject: &subject,
        annotations: ToolAnnotations::default(),
        input: &tool_input,
        facts: &facts,
        mode: loaded.mode,
        hook: None,
        cwd: &place.cwd,
        roots: &roots,
    };
    let decided = loaded.engine.decide(&request);
    let v = decided.verdict;
    // A default-layer ask means no rule spoke, and Claude Code's own rules decide, unless
    // the engine could not see the whole call (a glob too large to expand): like an opaque
    // command, that is asked, since a Claude Code allow rule would not know either.
    let understood = decided.trace.facts.opaque.is_empty();
    Ok(match (v.decision, v.layer) {
        (Decision::Ask, Layer::Default) if understood => RuleAnswer::NoRule,
        (Decision::Allow, _) if !args.decide => RuleAnswer::Decided(None),
        (decision, _) => RuleAnswer::Decided(Some((decision, format!("toolgate: {}", v.reason)))),
    })
}

fn bash_verdict(analysis: &Analysis, decide_allow: bool) -> Answer {
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

/// `path` made absolute against `cwd` (`~/` against home) and normalised lexically.
fn absolute(path: &str, place: &Place) -> PathBuf {
    let expanded = match (path.strip_prefix("~/"), &place.home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if path == "~" => place.home.clone().unwrap_or_else(|| PathBuf::from(path)),
        _ => PathBuf::from(path),
    };
    toolgate_shell::normalize_path(&expanded, &place.cwd)
}

/// `path` and, if it differs, where its symlinks lead: a rule or check that catches either
/// catches the call.
fn with_target(path: PathBuf) -> Vec<PathBuf> {
    let real = std::fs::canonicalize(&path).ok().filter(|r| *r != path);
    std::iter::once(path).chain(real).collect()
}

/// For tests of the helpers that take a [`Place`].
#[cfg(test)]
fn place(cwd: &str, home: Option<&str>) -> Place {
    Place {
        cwd: PathBuf::from(cwd),
        project: PathBuf::from(cwd),
        home: home.map(PathBuf::from),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn paths_are_made_absolute() {
        let p = place("/w/p", Some("/home/u"));
        assert_eq!(absolute("a/../b.rs", &p), Path::new("/w/p/b.rs"));
        assert_eq!(
            absolute("~/.ssh/id_rsa", &p),
            Path::new("/home/u/.ssh/id_rsa")
        );
        assert_eq!(absolute("/etc/x", &p), Path::new("/etc/x"));
    }

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

    #[test]
    fn dont_ask_turns_asks_into_denials() {
        let (d, r) = dont_ask(Decision::Ask, "x".into(), PermissionMode::DontAsk);
        assert_eq!(d, Decision::Deny);
        assert!(r.contains("dontAsk"));
        let (d, _) = dont_ask(Decision::Ask, "x".into(), PermissionMode::Default);
        assert_eq!(d, Decision::Ask);
    }
}
