//! The stages a policy reload replaces, as one value.
//!
//! A gate's policy — the permission decision, who answers an ask, the hooks, the
//! constraints and the sandbox room — comes from one version of the settings. When the
//! settings change while the gate serves calls, the new version's stages replace the old
//! ones as a whole ([`Gate::replace_stages`](crate::Gate::replace_stages)): a [`StageSet`]
//! sits behind an atomic pointer, every call loads it **once**, when it starts, and keeps
//! that `Arc` until its record is written. So a call in flight finishes under the policy
//! it started with — its post-hooks, its output shaping and its room are the same
//! version's as its decision — and no call ever mixes two versions. The old set is freed
//! when its last call ends.
//!
//! What a reload cannot replace stays in the gate itself: the registry and each session's
//! view (the tool list a client was given), the workspace roots, the audit sink and the
//! gate's limits. Deciding which settings may change at run time is the setup crate's job
//! (`toolgate_setup::live`); this module only makes the swap safe.

use std::sync::Arc;

use crate::sandbox::{NoSandbox, SandboxStage};
use crate::stages::{
    ConstraintStage, DenyPrompter, HookStage, NoConstraints, NoHooks, NoPolicy, PolicyStage,
    Prompter,
};

/// Stages 5–8 and 10–11's policy parts: everything one version of the settings decides.
#[derive(Clone)]
pub struct StageSet {
    /// Stage 6.
    pub policy: Arc<dyn PolicyStage>,
    /// Who answers an ask.
    pub prompter: Arc<dyn Prompter>,
    /// Stages 5 and 10.
    pub hooks: Arc<dyn HookStage>,
    /// Stage 7 (and the constraint part of 11).
    pub constraints: Arc<dyn ConstraintStage>,
    /// Stage 8.
    pub sandbox: Arc<dyn SandboxStage>,
    /// A name for the settings version these stages were built from, when the policy is
    /// versioned (it can be reloaded): stage 6 writes it into each call's record, so the
    /// audit trail says which version decided every call.
    pub version: Option<Arc<str>>,
}

impl Default for StageSet {
    fn default() -> Self {
        Self {
            policy: Arc::new(NoPolicy),
            prompter: Arc::new(DenyPrompter),
            hooks: Arc::new(NoHooks),
            constraints: Arc::new(NoConstraints),
            sandbox: Arc::new(NoSandbox),
            version: None,
        }
    }
}

impl std::fmt::Debug for StageSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageSet")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// Where a gate keeps its current [`StageSet`]: shared by every session of the gate (and
/// every clone), swapped atomically, read without a lock.
pub(crate) struct LiveStages(arc_swap::ArcSwap<StageSet>);

impl LiveStages {
    pub(crate) fn new(stages: StageSet) -> Self {
        Self(arc_swap::ArcSwap::from_pointee(stages))
    }

    /// The set a call runs under, from its start to its record.
    pub(crate) fn pin(&self) -> Arc<StageSet> {
        self.0.load_full()
    }

    /// Replaces the set for calls that start from now on; returns the one it replaced.
    pub(crate) fn replace(&self, stages: StageSet) -> Arc<StageSet> {
        self.0.swap(Arc::new(stages))
    }
}
