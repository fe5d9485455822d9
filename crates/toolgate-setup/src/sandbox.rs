//! The sandbox stage from the settings and the compiled permission engine, so the room is
//! never wider than the engine: the permission rules become the room's masks and writable
//! roots, and `sandbox.excludedCommands` is matched by the engine's own Bash matcher.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_core::stages::AuditSink;
use toolgate_policy::settings::Settings;
use toolgate_policy::{CommandPatterns, Engine, RuleKind};
use toolgate_sandbox::{
    Excluder, LinuxSandbox, PathLimit, PathRules, PolicyContext, SandboxPolicy,
};

use crate::SetupError;

/// Whether the settings turn the sandbox on.
pub(crate) fn enabled(settings: &Settings) -> bool {
    settings
        .sandbox
        .get("enabled")
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// The sandbox stage, when the settings enable the sandbox.
pub(crate) fn stage(
    settings: &Settings,
    engine: &Arc<Engine>,
    add_dirs: &[PathBuf],
    helper: Option<&Path>,
    audit: Option<&Arc<dyn AuditSink>>,
) -> Result<Option<LinuxSandbox>, SetupError> {
    if !enabled(settings) {
        return Ok(None);
    }
    let ctx = PolicyContext {
        workspace: settings.project.clone(),
        additional_dirs: add_dirs.to_vec(),
        home: settings.home.clone(),
    };
    let mut policy = SandboxPolicy::from_settings(&settings.sandbox, &ctx)?;
    let rules = |kind: RuleKind| -> Vec<String> {
        settings
            .rules
            .iter()
            .filter(|r| r.active && r.kind == kind)
            .map(|r| r.text.clone())
            .collect()
    };
    policy.add_rules(&rules(RuleKind::Allow), &rules(RuleKind::Deny), &ctx);
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
