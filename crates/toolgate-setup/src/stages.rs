//! The policy's stages from one version of the settings: the permission engine's decision
//! and prompter, the constraints, the hooks and the sandbox room. Built once at start and
//! again by every accepted reload ([`crate::live`]), so both paths build them the same way.

use std::path::PathBuf;
use std::sync::Arc;

use toolgate_core::StageSet;
use toolgate_core::sandbox::{NoSandbox, SandboxStage};
use toolgate_core::stages::{ConstraintStage, HookStage, NoHooks};
use toolgate_hooks::{HookEngine, HookEnv};
use toolgate_policy::settings::Settings;
use toolgate_policy::{Engine, EngineConstraints, EnginePolicy, EnginePrompter, Profile};

use crate::{Opened, PolicyIfMatcher, Setup, SetupError, hook_config, prompting, sandbox};

/// The client name recorded for sessions whose front door gave none: the profile, or `cli`.
pub(crate) fn scope(profile: Option<&Profile>) -> String {
    profile.map_or_else(|| "cli".to_owned(), |p| p.name.clone())
}

/// The directories besides the workspace the session may act in: `--add-dir` and the
/// settings' `additionalDirectories`.
pub(crate) fn add_dirs(setup: &Setup, settings: &Settings) -> Vec<PathBuf> {
    let mut dirs = setup.add_dirs.clone();
    dirs.extend(settings.additional_dirs());
    dirs
}

/// One version's stages, with what a later version needs to know to keep state that did
/// not change.
#[derive(Clone)]
pub(crate) struct Parts {
    engine: Arc<Engine>,
    prompter: Arc<dyn toolgate_core::stages::Prompter>,
    hooks: Arc<dyn HookStage>,
    sandbox: Arc<dyn SandboxStage>,
    constraints: Arc<dyn ConstraintStage>,
    /// The constraints as configured (with the mask salt): while it stays the same across
    /// versions, the same constraint stage is kept, so its in-memory rate windows and
    /// masking salt carry on instead of starting afresh.
    constraints_key: String,
}

impl Parts {
    /// Builds the stages for `settings` (and `profile`) around a compiled `engine`; `prev`
    /// is the version they replace, if any.
    pub(crate) fn build(
        setup: &Setup,
        settings: &Settings,
        profile: Option<&Profile>,
        engine: &Arc<Engine>,
        opened: &Opened,
        prev: Option<&Parts>,
    ) -> Result<Self, SetupError> {
        let prompter =
            prompting::prompter(engine, &setup.prompting, settings, setup.prompt_ui.clone());
        let constraints_key = constraints_key(settings, profile);
        let constraints: Arc<dyn ConstraintStage> = match prev {
            Some(p) if p.constraints_key == constraints_key => Arc::clone(&p.constraints),
            _ => {
                let mut constraints = settings.constraints(profile);
                if let Some(store) = &opened.rate_store {
                    constraints = constraints.with_store(Arc::clone(store));
                }
                Arc::new(EngineConstraints {
                    constraints: Arc::new(constraints),
                    scope: scope(profile),
                })
            }
        };
        let sandbox: Arc<dyn SandboxStage> = match sandbox::stage(
            settings,
            engine,
            &add_dirs(setup, settings),
            setup.sandbox_helper.as_deref(),
            opened.audit.as_ref(),
        )? {
            Some(stage) => Arc::new(stage),
            None => Arc::new(NoSandbox),
        };
        let hooks = hook_config(settings)?;
        let hooks: Arc<dyn HookStage> = if hooks.is_empty() {
            Arc::new(NoHooks)
        } else {
            // `if` rules get the permission engine's semantics (per-subcommand Bash
            // matching, gitignore-style paths).
            let if_matcher = PolicyIfMatcher::new(settings.project.clone(), settings.home.clone());
            Arc::new(
                HookEngine::new(
                    hooks,
                    HookEnv {
                        project_dir: settings.project.clone(),
                        transcript_path: None,
                    },
                )
                .with_if_matcher(Arc::new(if_matcher)),
            )
        };
        Ok(Self {
            engine: Arc::clone(engine),
            prompter: Arc::new(EnginePrompter(prompter)),
            hooks,
            sandbox,
            constraints,
            constraints_key,
        })
    }

    /// The compiled engine of this version.
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The gate's stage set, labelled `version` when the policy is versioned.
    pub(crate) fn into_stage_set(self, version: Option<Arc<str>>) -> StageSet {
        StageSet {
            // An active skill's allowed-tools narrows the engine's decisions, never widens them.
            policy: Arc::new(toolgate_orch::SkillScope(Arc::new(EnginePolicy(
                Arc::clone(&self.engine),
            )))),
            prompter: self.prompter,
            hooks: self.hooks,
            constraints: self.constraints,
            sandbox: self.sandbox,
            version,
        }
    }
}

/// What the constraint stage is built from, as text to compare.
fn constraints_key(settings: &Settings, profile: Option<&Profile>) -> String {
    let profile_constraints = profile.map(|p| &p.constraints);
    serde_json::json!([
        settings
            .constraints
            .iter()
            .map(|(pattern, config, _)| (pattern, config))
            .collect::<Vec<_>>(),
        profile_constraints,
        settings.mask_salt,
    ])
    .to_string()
}
