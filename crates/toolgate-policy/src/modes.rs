//! What each permission mode approves or refuses on its own (step 4 of the evaluation).
//!
//! | mode | on its own |
//! |---|---|
//! | `default` | reads inside the roots and read-only commands run; everything else asks |
//! | `acceptEdits` | also edits inside the roots, and `mkdir touch rm rmdir mv cp sed` on paths inside the roots |
//! | `plan` | reads run; edits and non-read-only tools are refused; other commands ask |
//! | `auto` | like `acceptEdits`; what would ask goes to the classifier (see [`crate::classifier`]) |
//! | `dontAsk` | like `default`, but what would ask is refused |
//! | `bypassPermissions` | everything not denied by a rule or the hard risk floor runs; ask rules still ask; refuses to run as root outside a sandbox unless `--allow-root` |

use toolgate_protocol::{PermissionMode, Risk};

use crate::engine::PolicyRequest;
use crate::view::{Family, View};

/// Tools that only touch the session's own state (todo lists, plan mode, tool search, the
/// session's own background tasks): they run without a prompt in every mode. Monitor is
/// one: a command it is given runs as a Bash call of its own, decided like any other.
pub const INTERNAL_TOOLS: &[&str] = &[
    "TodoWrite",
    "ToolSearch",
    "AskUserQuestion",
    "ExitPlanMode",
    "EnterPlanMode",
    "TaskOutput",
    "BashOutput",
    "TaskStop",
    "Monitor",
    "KillShell",
    "KillBash",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskUpdate",
    "CronList",
];

/// Tools plan mode lets through to the normal flow although they are not read-only: they
/// start work whose every action is checked on its own (subagents, skills), or only search.
pub const PLAN_DELEGATES: &[&str] = &["Agent", "Skill", "WebSearch"];

/// Programs `acceptEdits` approves on paths inside the roots (compat §5).
pub const ACCEPT_EDITS_PROGRAMS: &[&str] = &["mkdir", "touch", "rm", "rmdir", "mv", "cp", "sed"];

/// What the mode says on its own.
#[derive(Debug)]
pub(crate) enum ModeStep {
    /// Nothing: go on to allow rules.
    Continue,
    /// The mode approves (subject to the soft risk floor).
    Allow(String),
    /// The mode refuses.
    Deny(String),
    /// The mode requires a prompt (allow rules do not apply).
    Ask(String),
}

/// Whether the root guard applies (bypass as root outside a sandbox without `--allow-root`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RootGuard {
    pub is_root: bool,
    /// Commands run in a sandbox (`dangerouslyDisableSandbox` then means leaving it).
    pub sandboxed: bool,
    /// That sandbox also isolates the filesystem: a seccomp-only room (tier C) keeps a
    /// root command from nothing on disk, so it does not lift the guard.
    pub contained: bool,
    pub allow_root: bool,
}

impl RootGuard {
    pub(crate) fn blocks(&self) -> bool {
        self.is_root && !(self.sandboxed && self.contained) && !self.allow_root
    }
}

/// Whether the process runs with effective user id 0 (Linux: read from
/// `/proc/self/status`; elsewhere `false`).
pub fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// The explanation given when the root guard refuses bypass mode.
pub const ROOT_GUARD_REASON: &str = "bypassPermissions skips every prompt, and toolgate is running as root outside a sandbox, so one wrong command could damage the whole machine; run as an ordinary user, enable the sandbox, or pass --allow-root if you accept that";

/// Whether this is a Bash call asking to run outside an enabled sandbox
/// (`dangerouslyDisableSandbox: true`).
pub(crate) fn leaves_sandbox(req: &PolicyRequest<'_>, guard: RootGuard) -> bool {
    guard.sandboxed
        && req.tool == "Bash"
        && req.input.get("dangerouslyDisableSandbox") == Some(&serde_json::Value::Bool(true))
}

pub(crate) fn mode_step(req: &PolicyRequest<'_>, view: &View, guard: RootGuard) -> ModeStep {
    let mode = req.mode;
    let unsandboxed = leaves_sandbox(req, guard);
    if mode == PermissionMode::BypassPermissions {
        // The sandbox is what lets root use bypass; a call that leaves it is judged as if
        // there were none.
        let guard = RootGuard {
            sandboxed: guard.sandboxed && !unsandboxed,
            ..guard
        };
        if guard.blocks() {
            return ModeStep::Deny(ROOT_GUARD_REASON.into());
        }
        return ModeStep::Allow("bypassPermissions mode skips prompts".into());
    }
    if unsandboxed {
        // No mode approves running outside the sandbox (not even a read-only command):
        // only an allow rule, a hook or a person can.
        return ModeStep::Continue;
    }
    if INTERNAL_TOOLS.contains(&req.tool) {
        if req.tool == "AskUserQuestion" && mode == PermissionMode::DontAsk {
            return ModeStep::Deny(
                "dontAsk mode: there is nobody to answer AskUserQuestion".into(),
            );
        }
        return ModeStep::Allow(format!("{} only changes the session's own state", req.tool));
    }
    let edits_ok = matches!(mode, PermissionMode::AcceptEdits | PermissionMode::Auto);
    match view.family {
        // Credentials are read with a person's approval or an allow rule, never by a mode:
        // `cat .env` and `Read .env` get the same answer.
        Family::Read if view.secret_read().is_some() => ModeStep::Continue,
        Family::Read => match reads_inside(view) {
            Ok(()) => ModeStep::Allow("reads inside the workspace run without asking".into()),
            Err(_) => ModeStep::Continue,
        },
        Family::Write if mode == PermissionMode::Plan => ModeStep::Deny(
            "plan mode is read-only: edits are blocked until the plan is approved (ExitPlanMode)"
                .into(),
        ),
        Family::Write
            if edits_ok && !view.paths.is_empty() && view.paths.iter().all(|p| p.inside) =>
        {
            ModeStep::Allow(format!("{mode} mode approves edits inside the workspace"))
        }
        Family::Bash => match read_only_bash(req, view) {
            Ok(()) => ModeStep::Allow(
                "a read-only command (reads inside the workspace, writes nothing)".into(),
            ),
            Err(why) if mode == PermissionMode::Plan => ModeStep::Ask(format!(
                "plan mode runs only read-only commands without approval; {why}"
            )),
            Err(_) if edits_ok && accept_edits_bash(req, view) => ModeStep::Allow(format!(
                "{mode} mode approves file commands ({}) on paths inside the workspace",
                ACCEPT_EDITS_PROGRAMS.join(" ")
            )),
            Err(_) => ModeStep::Continue,
        },
        Family::Other
            if mode == PermissionMode::Plan
                && !PLAN_DELEGATES.contains(&toolgate_protocol::canonical_tool_name(req.tool))
                && (!req.annotations.read_only
                    || req.tool.starts_with(toolgate_protocol::MCP_PREFIX)) =>
        {
            ModeStep::Deny(format!(
                "plan mode is read-only and {} may change things",
                req.tool
            ))
        }
        _ => ModeStep::Continue,
    }
}

fn reads_inside(view: &View) -> Result<(), String> {
    match view.paths.iter().find(|p| !p.inside) {
        Some(p) => Err(format!("{} is outside the workspace", p.path.display())),
        None => Ok(()),
    }
}

/// Why a Bash call is not read-only (or `Ok`).
pub(crate) fn read_only_bash(req: &PolicyRequest<'_>, view: &View) -> Result<(), String> {
    if view.subs.is_empty() {
        return Err("no command was found".into());
    }
    if let Some(o) = view.opaque.first() {
        return Err(format!("part of the command is not understood ({o})"));
    }
    if let Some(b) = &view.allow_blocked {
        return Err(b.clone());
    }
    if let Some(f) = req.facts.findings.iter().find(|f| f.risk > Risk::ReadOnly) {
        return Err(format!("the analyzer found a risk: {}", f.reason));
    }
    if let Some(s) = view
        .subs
        .iter()
        .find(|s| s.allow_blocked.is_some() || !s.read_only)
    {
        return Err(format!("`{}` is not a read-only command", s.allow_text));
    }
    if let Some(p) = view.writes().next() {
        return Err(format!("it writes {}", p.path.display()));
    }
    reads_inside(view)
}

fn accept_edits_bash(req: &PolicyRequest<'_>, view: &View) -> bool {
    !view.subs.is_empty()
        && view.opaque.is_empty()
        && view.allow_blocked.is_none()
        && req.facts.max_risk().is_none_or(|r| r <= Risk::Moderate)
        && view.subs.iter().all(|s| {
            s.allow_blocked.is_none()
                && (s.read_only || ACCEPT_EDITS_PROGRAMS.contains(&s.program()))
                && !s.allow_argv.first().is_some_and(|p| p.contains('/'))
        })
        && view.paths.iter().all(|p| p.inside)
}
