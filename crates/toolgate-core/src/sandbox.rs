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

/// Stage 8: picks the room for a call. `Ok(None)` means run unsandboxed; `Err` means the
/// settings require a sandbox that cannot be provided (`sandbox_unavailable`).
pub trait SandboxStage: Send + Sync {
    /// Chooses the room.
    fn select(
        &self,
        spec: &ToolSpec,
        input: &serde_json::Value,
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
        _input: &serde_json::Value,
        _facts: &CallFacts,
        _session: &Session,
    ) -> Result<Option<Arc<dyn Room>>, String> {
        Ok(None)
    }
}
