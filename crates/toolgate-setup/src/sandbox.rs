//! The sandbox stage from the settings and the compiled permission engine, so the room is
//! never wider than the engine: the permission rules become the room's masks and writable
//! roots, and `sandbox.excludedCommands` is matched by the engine's own Bash matcher.
//!
//! The sandbox is on by default wherever the kernel supports one ([`state`]);
//! `sandbox.enabled: false` (or `--no-sandbox`) turns it off.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_core::stages::AuditSink;
use toolgate_policy::settings::Settings;
use toolgate_policy::{CommandPatterns, Engine, RuleKind};
use toolgate_sandbox::{
    Excluder, Layer, LinuxSandbox, PathLimit, PathRules, PolicyContext, SandboxPolicy, Tier,
};

use crate::SetupError;

/// Whether the settings turn the sandbox on explicitly (`sandbox.enabled: true`): what
/// counts as sandboxed for calls toolgate only judges (the hook's, which Claude Code runs
/// outside toolgate's room), without probing the kernel.
pub(crate) fn enabled(settings: &Settings) -> bool {
    explicit(settings) == Some(true)
}

fn explicit(settings: &Settings) -> Option<bool> {
    settings
        .sandbox
        .get("enabled")
        .and_then(serde_json::Value::as_bool)
}

fn fail_if_unavailable(settings: &Settings) -> bool {
    settings
        .sandbox
        .get("failIfUnavailable")
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// Whether the commands of a session with these settings run in the sandbox, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxState {
    /// Commands (Bash and the background tasks and monitors it starts) run in the sandbox;
    /// when it cannot start, each is refused with `sandbox_unavailable`.
    pub on: bool,
    /// The best tier this machine supports (`toolgate sandbox status`).
    pub tier: Tier,
    /// Why it is on or off, in words.
    pub why: String,
}

impl SandboxState {
    /// `on (tier A: …)` / `off (…)`, for `toolgate config`.
    pub fn render(&self) -> String {
        let tier = match self.tier {
            Tier::A => "tier A: namespaces, Landlock, seccomp, limits",
            Tier::B => "tier B: no user namespaces; Landlock, seccomp, limits",
            Tier::C => "tier C: seccomp and limits only",
            Tier::None => "no tier: nothing works on this kernel",
        };
        let state = if self.on { "on" } else { "off" };
        format!("sandbox  {state} ({}; {tier})\n", self.why)
    }
}

/// The sandbox state for `settings`: `sandbox.enabled` when a source sets it (`--no-sandbox`
/// sets it false), else on wherever the kernel supports a sandbox (the default). With
/// nothing that works, the default is off unless `sandbox.failIfUnavailable` asks for every
/// command to be refused instead.
pub fn state(settings: &Settings) -> SandboxState {
    let tier = toolgate_sandbox::probe().tier();
    let (on, why) = match explicit(settings) {
        Some(true) => (true, "sandbox.enabled is true".to_owned()),
        Some(false) => (
            false,
            "sandbox.enabled is false, from the settings or --no-sandbox".to_owned(),
        ),
        None if tier != Tier::None => (true, "on by default: the kernel supports it".to_owned()),
        None if fail_if_unavailable(settings) => (
            true,
            "on by default, but the kernel supports no sandbox and sandbox.failIfUnavailable \
             is true: every command is refused"
                .to_owned(),
        ),
        None => (
            false,
            format!(
                "the kernel supports no sandbox, so commands run without one ({}); set \
                 sandbox.failIfUnavailable to refuse them instead, or sandbox.enabled:false \
                 to silence this",
                unavailable_reason()
            ),
        ),
    };
    SandboxState { on, tier, why }
}

/// Why no tier works, from the probe.
fn unavailable_reason() -> String {
    let probe = toolgate_sandbox::probe();
    [Layer::UserNs, Layer::Landlock, Layer::Seccomp]
        .iter()
        .map(|l| format!("{}: {}", l.name(), probe.reason(*l)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Says once per process, on stderr, that the default sandbox cannot start: commands then
/// run without it, which the user must not learn from a breach.
fn warn_unavailable_once(why: &str) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| eprintln!("toolgate: warning: sandbox off: {why}"));
}

/// The room every sandboxed child starts from: the settings' `sandbox` section with the
/// permission rules added (`Read(…)` denies hidden, `Edit(…)` denies read-only), so that
/// no room — Bash's or an MCP server's — is wider than the rules.
pub(crate) fn room_policy(
    settings: &Settings,
    add_dirs: &[PathBuf],
) -> Result<SandboxPolicy, SetupError> {
    let ctx = PolicyContext {
        workspace: settings.project.clone(),
        additional_dirs: add_dirs.to_vec(),
        home: settings.home.clone(),
    };
    let mut policy = SandboxPolicy::from_settings(&settings.sandbox, &ctx)?;
    // On by default: the settings need not say so (see `state`).
    policy.enabled = true;
    let rules = |kind: RuleKind| -> Vec<String> {
        settings
            .rules
            .iter()
            .filter(|r| r.active && r.kind == kind)
            .map(|r| r.text.clone())
            .collect()
    };
    policy.add_rules(&rules(RuleKind::Allow), &rules(RuleKind::Deny), &ctx);
    Ok(policy)
}

/// The sandbox stage, when the sandbox is on (see [`state`]).
pub(crate) fn stage(
    settings: &Settings,
    engine: &Arc<Engine>,
    add_dirs: &[PathBuf],
    helper: Option<&Path>,
    audit: Option<&Arc<dyn AuditSink>>,
) -> Result<Option<LinuxSandbox>, SetupError> {
    let state = state(settings);
    if !state.on {
        if explicit(settings).is_none() {
            warn_unavailable_once(&state.why);
        }
        return Ok(None);
    }
    let mut policy = room_policy(settings, add_dirs)?;
    // The settings' `env` reaches sandboxed commands through the room's own environment.
    policy.env.set.extend(settings.env_vars());
    let excluder: Option<Excluder> = if policy.excluded_commands.is_empty() {
        None
    } else {
        let patterns = CommandPatterns::new(
            &policy.excluded_commands,
            settings.project.clone(),
            settings.home.clone(),
        )?;
        Some(Arc::new(move |facts, session| {
            let roots: Vec<&Path> = session.workspace().roots().collect();
            patterns.cover(facts, &roots).map(|rules| rules.join(", "))
        }))
    };
    let helper = match helper {
        Some(h) => h.to_path_buf(),
        None => {
            let exe = std::env::current_exe().map_err(SetupError::Exe)?;
            toolgate_sandbox::helper_exe(&exe)
        }
    };
    let mut stage = LinuxSandbox::new(policy, helper)
        .with_path_rules(Arc::new(EnginePathRules(Arc::clone(engine))));
    if let Some(excluder) = excluder {
        stage = stage.with_excluded(excluder);
    }
    if let Some(sink) = audit {
        stage = stage.with_audit(Arc::clone(sink));
    }
    Ok(Some(stage))
}

/// The engine's deny and ask path rules as a sandbox room asks about them: how the
/// engine's own matcher reaches the room (`LinuxSandbox::with_path_rules`), so that the room
/// hides what a `Read(…)` rule covers and keeps read-only what an `Edit(…)` rule covers,
/// with the engine's semantics and never a copy of them.
#[derive(Clone)]
pub struct EnginePathRules(pub Arc<Engine>);

impl PathRules for EnginePathRules {
    fn any(&self) -> bool {
        self.0.has_room_path_limits()
    }

    fn limit(&self, path: &Path) -> Option<PathLimit> {
        let limit = self.0.room_path_limit(path)?;
        Some(if limit.hide {
            PathLimit::Hide { rule: limit.rule }
        } else {
            PathLimit::ReadOnly { rule: limit.rule }
        })
    }

    fn reach_beneath(&self, dir: &Path) -> bool {
        self.0.room_path_limits_reach_beneath(dir)
    }

    fn named_dirs(&self) -> Vec<PathBuf> {
        self.0.room_path_rule_dirs()
    }
}
