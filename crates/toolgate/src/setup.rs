//! The command line's session flags as a [`toolgate_setup::Setup`]: every subcommand that
//! runs or lists tools builds its gate through the setup crate, as `serve` and embedders do.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use thiserror::Error;
use toolgate_audit::FsyncPolicy;
use toolgate_core::{Registry, ViewOptions};
use toolgate_policy::JsonLinesSource;
use toolgate_setup::{AuditChoice, LivePolicy, Loaded, SettingsChoice, Setup, ViewChoice};

pub use toolgate_setup::{Built, Prompting};

use crate::cli::{AuditArgs, SessionArgs};
use crate::cmd::config::PolicyArgs;

/// A setup problem: bad arguments, broken settings or an unusable workspace. Reported with
/// exit code 64, before anything runs.
#[derive(Debug, Error)]
pub enum SetupError {
    /// Bad fsync policy name.
    #[error("--fsync: {0}")]
    Fsync(String),
    /// An `--audit` target is neither a file nor a store URL, or names two files.
    #[error("{0}")]
    AuditTarget(String),
    /// `--workspace` names no directory.
    #[error("--workspace {}: {}", .0.path.display(), .0.problem)]
    Workspace(toolgate_setup::WorkspaceError),
    /// Everything the setup crate reports.
    #[error(transparent)]
    Setup(#[from] toolgate_setup::SetupError),
}

/// Refuses a `--workspace` that is not an existing directory, naming the flag.
pub fn check_workspace(workspace: &Path) -> Result<(), SetupError> {
    toolgate_setup::check_workspace(workspace).map_err(SetupError::Workspace)
}

impl From<toolgate_core::registry::RegistryError> for SetupError {
    fn from(e: toolgate_core::registry::RegistryError) -> Self {
        SetupError::Setup(e.into())
    }
}

impl PolicyArgs {
    /// The settings part of a setup.
    pub fn choice(&self) -> SettingsChoice {
        SettingsChoice {
            files: self.settings.clone(),
            allow: self.allow.clone(),
            ask: self.ask.clone(),
            deny: self.deny.clone(),
            claude: self.claude,
            profile: self.profile.clone(),
            allow_root: self.allow_root,
            no_sandbox: self.no_sandbox,
            commands_elsewhere: false,
        }
    }
}

/// The setup for a session's flags.
pub fn setup(
    session: &SessionArgs,
    audit: Option<&AuditArgs>,
    prompting: Prompting,
) -> Result<Setup, SetupError> {
    check_workspace(&session.workspace)?;
    let mut setup = Setup::new(&session.workspace);
    setup.add_dirs = session.add_dirs.clone();
    setup.mode = session.mode.clone();
    setup.settings = session.policy.choice();
    setup.view = ViewChoice {
        simple: session.simple,
        only: session.only.clone(),
        deny_tools: session.deny_tools.clone(),
        deferral: None,
    };
    setup.tools_snapshot = session.tools_snapshot.clone();
    setup.session_id = session.session_id.clone();
    setup.prompting = prompting;
    setup.prompt_ui = prompt_source(session);
    if let Some(audit) = audit {
        setup.state = audit.state.url.clone();
        if !audit.no_audit {
            setup.audit = Some(audit_choice(audit)?);
        }
    }
    Ok(setup)
}

/// `--audit FILE|URL` (repeatable), `--fsync`, `--fsync-interval`, `--otlp`: at most one
/// local log file (the source of truth the copies come from) and any PostgreSQL URLs.
fn audit_choice(audit: &AuditArgs) -> Result<AuditChoice, SetupError> {
    let mut choice = AuditChoice {
        fsync: FsyncPolicy::from_str(&audit.fsync).map_err(|e| SetupError::Fsync(e.to_string()))?,
        batch_interval: std::time::Duration::from_millis(audit.fsync_interval),
        otlp: audit.otlp.clone(),
        ..AuditChoice::default()
    };
    for target in &audit.audit {
        if toolgate_audit_postgres::PgTarget::is_url(target) {
            choice.postgres.push(target.clone());
        } else if target.contains("://") {
            return Err(SetupError::AuditTarget(format!(
                "--audit {target}: not a file path and not a postgres:// URL"
            )));
        } else if choice.path.is_some() {
            return Err(SetupError::AuditTarget(
                "--audit: one log file at most (it is the source of truth that PostgreSQL and \
                 OTLP copies come from)"
                    .into(),
            ));
        } else {
            choice.path = Some(target.into());
        }
    }
    Ok(choice)
}

/// The registry of built-in tools, pinned to a snapshot if one is given.
pub fn registry(
    snapshot: Option<&Path>,
    settings: &toolgate_policy::Settings,
) -> Result<Registry, SetupError> {
    Ok(toolgate_setup::registry(snapshot, settings)?)
}

/// View options from the session arguments and the settings.
pub fn view_options(
    args: &SessionArgs,
    loaded: &Loaded,
    registry: &Registry,
) -> Result<ViewOptions, SetupError> {
    let choice = ViewChoice {
        simple: args.simple,
        only: args.only.clone(),
        deny_tools: args.deny_tools.clone(),
        deferral: Some(toolgate_setup::deferral(&loaded.settings)?),
    };
    Ok(toolgate_setup::view_options(
        &choice,
        loaded.mode,
        registry,
        &loaded.engine,
    ))
}

/// Loads the settings for a session (all sources, merged; see docs/permissions.md).
pub fn load(session: &SessionArgs) -> Result<Loaded, SetupError> {
    Ok(setup(session, None, Prompting::Deny)?.load()?)
}

/// Builds the gate for `exec`, `call`, `check` and `serve`.
pub fn gate(
    session: &SessionArgs,
    audit: Option<&AuditArgs>,
    prompting: Prompting,
) -> Result<Built, SetupError> {
    Ok(setup(session, audit, prompting)?.build()?)
}

/// Builds the gate of a long-running front door (`exec`, `serve`) as a [`LivePolicy`]:
/// every gate it builds later (a profile's) comes from the same settings version, and with
/// `versioned` (`--watch`) each call's record names the version that decided it.
pub fn live(
    session: &SessionArgs,
    audit: Option<&AuditArgs>,
    prompting: Prompting,
    versioned: bool,
) -> Result<(Arc<LivePolicy>, Built), SetupError> {
    Ok(LivePolicy::start(
        setup(session, audit, prompting)?,
        versioned,
    )?)
}

/// [`live`] for `toolgate serve`: nothing is deferred, because MCP clients get one stable
/// tool list (`--tools=search` offers search instead) and defer on their side.
pub fn live_serving(
    session: &SessionArgs,
    audit: Option<&AuditArgs>,
    prompting: Prompting,
    versioned: bool,
) -> Result<(Arc<LivePolicy>, Built), SetupError> {
    let mut setup = setup(session, audit, prompting)?;
    setup.view.deferral = Some(toolgate_core::Deferral::Off);
    Ok(LivePolicy::start(setup, versioned)?)
}

/// `toolgate serve`'s way of asking: MCP elicitation when the calling client supports it,
/// else the fallback.
pub fn mcp_prompting() -> Prompting {
    Prompting::FrontDoor(Arc::new(|engine, fallback| {
        Arc::new(toolgate_mcp::ElicitingPrompter::new(engine, fallback))
    }))
}

/// The JSON-lines UI the command line names (`--prompt-command`, `--prompt-fds`), if any.
fn prompt_source(session: &SessionArgs) -> Option<JsonLinesSource> {
    if let Some(cmd) = &session.prompt_command {
        return Some(JsonLinesSource::Command(cmd.clone()));
    }
    session
        .prompt_fds
        .map(|(input, output)| JsonLinesSource::Fds { input, output })
}
