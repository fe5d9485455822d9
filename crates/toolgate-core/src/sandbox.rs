//! The sandbox seam (stage 8): which room a call's processes run in.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_protocol::{CallFacts, Subject, ToolSpec};
use toolgate_sandbox::{Plan, SandboxPolicy};

use crate::session::Session;

/// A room processes can be started in. Tools that spawn processes ask the room to build the
/// command instead of spawning the program directly.
pub trait Room: Send + Sync + std::fmt::Debug {
    /// A short description for the audit log (`namespaces+landlock+seccomp`, …).
    fn describe(&self) -> String;

    /// A command that runs `argv` in `cwd` inside the room.
    fn command(&self, argv: &[OsString], cwd: &Path) -> std::io::Result<tokio::process::Command>;
}

/// Stage 8: picks the room for a call. `Ok(None)` means run unsandboxed; `Err` means the
/// settings require a sandbox that cannot be provided (`sandbox_unavailable`).
pub trait SandboxStage: Send + Sync {
    /// Chooses the room.
    fn select(
        &self,
        spec: &ToolSpec,
        facts: &CallFacts,
        session: &Session,
    ) -> Result<Option<Arc<dyn Room>>, String>;
}

/// No sandbox: every call runs unsandboxed. The default until a sandbox is configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSandbox;

impl SandboxStage for NoSandbox {
    fn select(
        &self,
        _spec: &ToolSpec,
        _facts: &CallFacts,
        _session: &Session,
    ) -> Result<Option<Arc<dyn Room>>, String> {
        Ok(None)
    }
}

/// The Linux sandbox (`toolgate-sandbox`) as stage 8. Tools whose subject is a command
/// (Bash) get a room; other tools run in-process and are confined by their own path checks.
///
/// A room is planned against the machine's probe for every call: if a layer the policy
/// needs is missing and the policy says `failIfUnavailable`, the call is refused
/// (`sandbox_unavailable`); otherwise the helper runs degraded and says so on stderr.
#[derive(Debug, Clone)]
pub struct LinuxSandbox {
    policy: Arc<SandboxPolicy>,
    helper: PathBuf,
}

impl LinuxSandbox {
    /// A sandbox stage for `policy`, using `helper` (the `toolgate` binary, which runs the
    /// helper when given [`toolgate_sandbox::HELPER_ARG`]).
    pub fn new(policy: SandboxPolicy, helper: PathBuf) -> Self {
        Self {
            policy: Arc::new(policy),
            helper,
        }
    }
}

impl SandboxStage for LinuxSandbox {
    fn select(
        &self,
        spec: &ToolSpec,
        _facts: &CallFacts,
        _session: &Session,
    ) -> Result<Option<Arc<dyn Room>>, String> {
        if !self.policy.enabled || !matches!(spec.subject, Subject::Command { .. }) {
            return Ok(None);
        }
        let plan = Plan::new(&self.policy, toolgate_sandbox::probe()).map_err(|e| e.to_string())?;
        let applied: Vec<&str> = plan.applied.iter().map(|l| l.name()).collect();
        let mut description = format!("sandbox tier {:?}: {}", plan.tier, applied.join("+"));
        if !plan.missing.is_empty() {
            let missing: Vec<&str> = plan.missing.iter().map(|(l, _)| l.name()).collect();
            description.push_str(&format!(" (missing: {})", missing.join(", ")));
        }
        Ok(Some(Arc::new(LinuxRoom {
            policy: Arc::clone(&self.policy),
            helper: self.helper.clone(),
            description,
        })))
    }
}

#[derive(Debug)]
struct LinuxRoom {
    policy: Arc<SandboxPolicy>,
    helper: PathBuf,
    description: String,
}

impl Room for LinuxRoom {
    fn describe(&self) -> String {
        self.description.clone()
    }

    fn command(&self, argv: &[OsString], cwd: &Path) -> std::io::Result<tokio::process::Command> {
        toolgate_sandbox::command(&self.policy, &self.helper, argv, cwd)
            .map(tokio::process::Command::from)
            .map_err(std::io::Error::other)
    }
}
