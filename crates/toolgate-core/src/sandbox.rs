//! The sandbox seam (stage 8): which room a call's processes run in. The Linux sandbox
//! (`toolgate-sandbox`) implements it.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use toolgate_protocol::{CallFacts, ToolSpec};

use crate::session::Session;

/// A room processes can be started in. Tools that spawn processes ask the room to build the
/// command instead of spawning the program directly.
pub trait Room: Send + Sync + std::fmt::Debug {
    /// A short description for the audit log (`namespaces+landlock+seccomp`, …).
    fn describe(&self) -> String;

    /// A command that runs `argv` in `cwd` inside the room.
    fn command(&self, argv: &[OsString], cwd: &Path) -> std::io::Result<tokio::process::Command>;

    /// Tells the room which call it serves (before [`Room::command`]), so what happens in
    /// it (network decisions) is attributed to that call in the audit log.
    fn bind_call(&self, _call_id: &str) {}
}

/// What stage 8 knows of a call when it picks the room.
#[derive(Clone, Copy)]
pub struct SandboxRequest<'a> {
    /// The tool.
    pub spec: &'a ToolSpec,
    /// What stage 4 found the call does.
    pub facts: &'a CallFacts,
    /// The session.
    pub session: &'a Session,
    /// The call asks to run outside the sandbox (a [`RunRequest`](crate::RunRequest) the
    /// tool read from its own input).
    pub outside_sandbox: bool,
}

/// Why the settings' sandbox cannot be provided for a call (`sandbox_unavailable`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct SandboxUnavailable {
    /// What is missing, for the model and the audit log.
    pub reason: String,
}

impl SandboxUnavailable {
    /// The refusal with its reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

/// Stage 8: picks the room for a call. `Ok(None)` means run unsandboxed; `Err` means the
/// settings require a sandbox that cannot be provided (`sandbox_unavailable`).
pub trait SandboxStage: Send + Sync {
    /// Chooses the room.
    fn select(
        &self,
        request: &SandboxRequest<'_>,
    ) -> Result<Option<Arc<dyn Room>>, SandboxUnavailable>;
}

/// No sandbox: every call runs unsandboxed. The default until a sandbox is configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSandbox;

impl SandboxStage for NoSandbox {
    fn select(
        &self,
        _request: &SandboxRequest<'_>,
    ) -> Result<Option<Arc<dyn Room>>, SandboxUnavailable> {
        Ok(None)
    }
}
