//! Builds a gate from command-line arguments.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use thiserror::Error;
use toolgate_audit::FsyncPolicy;
use toolgate_core::registry::RegistryError;
use toolgate_core::{BuildError, Gate, Registry, SessionOptions, Snapshot, ViewOptions};
use toolgate_protocol::PermissionMode;

use crate::cli::{AuditArgs, SessionArgs};

/// A setup problem: bad arguments or an unusable workspace. Reported with exit code 64.
#[derive(Debug, Error)]
pub enum SetupError {
    /// Unknown mode name.
    #[error(transparent)]
    Mode(#[from] toolgate_protocol::UnknownMode),
    /// Bad fsync policy name.
    #[error("--fsync: {0}")]
    Fsync(String),
    /// The registry, snapshot or view could not be built.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The gate could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
}

/// The registry of built-in tools, pinned to a snapshot if one is given.
pub fn registry(snapshot: Option<&Path>) -> Result<Registry, RegistryError> {
    let mut builder = Registry::builder();
    for tool in crate::cmd::builtin_tools() {
        builder = builder.register_arc(tool);
    }
    if let Some(path) = snapshot {
        builder = builder.snapshot(Snapshot::load(path)?);
    }
    builder.build()
}

/// View options from the session arguments.
pub fn view_options(args: &SessionArgs, mode: PermissionMode) -> ViewOptions {
    ViewOptions {
        mode,
        simple: args.simple,
        allow_only: (!args.only.is_empty()).then(|| args.only.clone()),
        deny: args.deny_tools.clone(),
        deferred: Vec::new(),
    }
}

/// Builds the gate for `exec` and `call`. An audit log that cannot be opened does not stop
/// the gate from starting: every call is refused with `audit_unavailable` instead, so the
/// caller learns why and nothing runs unaudited.
pub fn gate(session: &SessionArgs, audit: Option<&AuditArgs>) -> Result<Gate, SetupError> {
    let mode = PermissionMode::from_str(&session.mode)?;
    let registry = registry(session.tools_snapshot.as_deref())?;
    let mut builder = Gate::builder()
        .workspace(&session.workspace)
        .registry(registry)
        .view(view_options(session, mode))
        .session(SessionOptions {
            id: session.session_id.clone(),
            mode,
            client: Some("cli".into()),
        });
    for dir in &session.add_dirs {
        builder = builder.add_dir(dir);
    }
    if let Some(audit) = audit {
        if !audit.no_audit {
            let fsync = FsyncPolicy::from_str(&audit.fsync)
                .map_err(|e| SetupError::Fsync(e.to_string()))?;
            let path = audit
                .audit
                .clone()
                .unwrap_or_else(|| default_audit_path(&session.workspace));
            builder = builder.audit(toolgate_core::audit::open_or_refuse(&path, fsync));
        }
    }
    Ok(builder.build()?)
}

/// `<workspace>/.toolgate/audit.jsonl`.
pub fn default_audit_path(workspace: &Path) -> PathBuf {
    workspace.join(".toolgate").join("audit.jsonl")
}
