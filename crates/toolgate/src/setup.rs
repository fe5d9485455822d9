//! Builds a gate from command-line arguments and the settings files.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use thiserror::Error;
use toolgate_audit::FsyncPolicy;
use toolgate_core::policy::{EngineConstraints, EnginePolicy, EnginePrompter};
use toolgate_core::registry::RegistryError;
use toolgate_core::sandbox::LinuxSandbox;
use toolgate_core::{BuildError, Gate, Registry, SessionOptions, Snapshot, ViewOptions};
use toolgate_hooks::{DisableHooks, HookConfig, HookEngine, HookEnv, HookSource};
use toolgate_policy::settings::SourceKind;
use toolgate_policy::{
    AutoReviewer, DenyAllPrompter, Engine, JsonLinesSource, LazyJsonLinesPrompter, PolicyError,
    PolicyPrompter, RuleKind, TerminalPrompter, classifier_from,
};
use toolgate_protocol::PermissionMode;
use toolgate_sandbox::{PolicyContext, SandboxError, SandboxPolicy};

use crate::cli::{AuditArgs, SessionArgs};
use crate::cmd::config::Loaded;

/// A setup problem: bad arguments, broken settings or an unusable workspace. Reported with
/// exit code 64, before anything runs.
#[derive(Debug, Error)]
pub enum SetupError {
    /// Unknown mode name.
    #[error(transparent)]
    Mode(#[from] toolgate_protocol::UnknownMode),
    /// Bad fsync policy name.
    #[error("--fsync: {0}")]
    Fsync(String),
    /// Settings could not be loaded or compiled.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The sandbox settings are invalid.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The registry, snapshot or view could not be built.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The gate could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The hooks in the settings are malformed.
    #[error(transparent)]
    Hooks(#[from] toolgate_hooks::HookError),
    /// An `--audit` target is neither a file nor a store URL.
    #[error("{0}")]
    AuditTarget(String),
    /// The PostgreSQL audit store is misconfigured.
    #[error("--audit: {0}")]
    AuditStore(#[from] toolgate_audit_postgres::PgError),
    /// The OTLP exporter is misconfigured.
    #[error(transparent)]
    Otlp(#[from] toolgate_otel::OtelError),
    /// The shared state (`--state`) is misconfigured.
    #[error(transparent)]
    State(#[from] toolgate_state::StateError),
    /// The path of this executable (the sandbox helper) is unknown.
    #[error("cannot find the toolgate executable for the sandbox helper: {0}")]
    Exe(std::io::Error),
}

/// Who answers an "ask".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompting {
    /// Nobody: asks are denied with a reason (exec, pipes, CI).
    Deny,
    /// The user at the controlling terminal.
    Terminal,
    /// The MCP client's user, by elicitation, when the calling client supports it; else
    /// the JSON-lines UI when one is configured, else nobody (`toolgate serve`).
    Mcp,
}

/// A gate and the engine deciding its calls.
pub struct Built {
    /// The gate.
    pub gate: Gate,
    /// The permission engine (for `check`'s trace).
    pub engine: Arc<Engine>,
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

/// Loads the settings for a session (all sources, merged; see docs/permissions.md).
pub fn load(session: &SessionArgs) -> Result<Loaded, SetupError> {
    if let Some(mode) = &session.mode {
        PermissionMode::from_str(mode)?;
    }
    let opts = session.policy.load_options(
        &session.workspace,
        &session.add_dirs,
        session.mode.as_deref(),
    );
    Ok(session.policy.load(&opts)?)
}

/// Builds the gate for `exec`, `call` and `check`. An audit log that cannot be opened does
/// not stop the gate from starting: every call is refused with `audit_unavailable` instead,
/// so the caller learns why and nothing runs unaudited.
pub fn gate(
    session: &SessionArgs,
    audit: Option<&AuditArgs>,
    prompting: Prompting,
) -> Result<Built, SetupError> {
    let Loaded {
        settings,
        profile,
        mode,
        engine,
    } = load(session)?;
    let engine = Arc::new(engine);
    let registry = registry(session.tools_snapshot.as_deref())?;
    let mut view = view_options(session, mode);
    // Bare-name deny rules and a profile's tool list remove tools from the view.
    for entry in registry.entries() {
        let name = &entry.spec().name;
        if engine.removes_tool(name).is_some() {
            view.deny.push(name.clone());
        }
    }
    let scope = profile
        .as_ref()
        .map_or_else(|| "cli".to_owned(), |p| p.name.clone());
    let mut builder = Gate::builder()
        .workspace(&session.workspace)
        .registry(registry)
        .view(view)
        .session(SessionOptions {
            id: session.session_id.clone(),
            mode,
            client: Some(scope.clone()),
        })
        .policy(Arc::new(EnginePolicy(Arc::clone(&engine))))
        .prompter(Arc::new(EnginePrompter(prompter(
            &engine,
            prompting,
            &settings,
            prompt_source(session),
        ))))
        .constraints(Arc::new(EngineConstraints {
            constraints: Arc::new(constraints(&settings, profile.as_ref(), audit)?),
            scope,
        }));
    let mut add_dirs: Vec<PathBuf> = session.add_dirs.clone();
    add_dirs.extend(settings.additional_dirs());
    for dir in &add_dirs {
        builder = builder.add_dir(dir);
    }
    // Opened before the sandbox stage, which records its network decisions in it too.
    let mut audit_sink = None;
    if let Some(audit) = audit
        && !audit.no_audit
    {
        audit_sink = Some(audit_sink_for(&session.workspace, audit)?);
    }
    if settings
        .sandbox
        .get("enabled")
        .and_then(serde_json::Value::as_bool)
        == Some(true)
    {
        let ctx = PolicyContext {
            workspace: settings.project.clone(),
            additional_dirs: add_dirs.clone(),
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
        let exe = std::env::current_exe().map_err(SetupError::Exe)?;
        let exe = toolgate_sandbox::helper_exe(&exe);
        let mut sandbox = LinuxSandbox::new(policy, exe);
        if let Some(sink) = &audit_sink {
            sandbox = sandbox.with_audit(Arc::clone(sink));
        }
        builder = builder.sandbox(Arc::new(sandbox));
    }
    let hooks = hook_config(&settings)?;
    if !hooks.is_empty() {
        // `if` rules get the permission engine's semantics (per-subcommand Bash matching,
        // gitignore-style paths), not the hook crate's simpler built-in matcher.
        let if_matcher =
            crate::cmd::hook::PolicyIfMatcher::new(settings.project.clone(), settings.home.clone());
        builder = builder.hooks(Arc::new(
            HookEngine::new(
                hooks,
                HookEnv {
                    project_dir: settings.project.clone(),
                    transcript_path: None,
                },
            )
            .with_if_matcher(Arc::new(if_matcher)),
        ));
    }
    if let Some(sink) = audit_sink {
        builder = builder.audit(sink);
    }
    Ok(Built {
        gate: builder.build()?,
        engine,
    })
}

/// The audit sink `--audit` and `--otlp` ask for: the local log (the file given, else the
/// default), copied to each PostgreSQL URL and the OTLP collector. A log that cannot be
/// opened refuses every call; a misconfigured destination stops the front door here.
fn audit_sink_for(
    workspace: &Path,
    audit: &AuditArgs,
) -> Result<Arc<dyn toolgate_core::stages::AuditSink>, SetupError> {
    let fsync =
        FsyncPolicy::from_str(&audit.fsync).map_err(|e| SetupError::Fsync(e.to_string()))?;
    let mut files = Vec::new();
    let mut destinations: Vec<Arc<dyn toolgate_audit::ship::Destination>> = Vec::new();
    for target in &audit.audit {
        if toolgate_audit_postgres::PgTarget::is_url(target) {
            destinations.push(Arc::new(
                toolgate_audit_postgres::PgDestination::open_checked(target)?,
            ));
        } else if target.contains("://") {
            return Err(SetupError::AuditTarget(format!(
                "--audit {target}: not a file path and not a postgres:// URL"
            )));
        } else {
            files.push(PathBuf::from(target));
        }
    }
    if files.len() > 1 {
        return Err(SetupError::AuditTarget(
            "--audit: one log file at most (it is the source of truth that PostgreSQL and \
             OTLP copies come from)"
                .into(),
        ));
    }
    if let Some(url) = &audit.otlp {
        destinations.push(Arc::new(toolgate_otel::OtlpDestination::new(
            url,
            Default::default(),
        )?));
    }
    let path = files.pop().unwrap_or_else(|| default_audit_path(workspace));
    let options = toolgate_audit::AuditOptions {
        fsync,
        batch_interval: std::time::Duration::from_millis(audit.fsync_interval),
        ..toolgate_audit::AuditOptions::default()
    };
    Ok(toolgate_audit::open_or_refuse_with(
        &path,
        options,
        destinations,
    ))
}

/// The settings' constraints, their rate limits counted in the `--state` store if given.
fn constraints(
    settings: &toolgate_policy::Settings,
    profile: Option<&toolgate_policy::Profile>,
    audit: Option<&AuditArgs>,
) -> Result<toolgate_policy::Constraints, SetupError> {
    let constraints = settings.constraints(profile);
    match audit.and_then(|a| a.state.url.as_deref()) {
        Some(url) => {
            let store = toolgate_state::RedisRateStore::open_checked(url)?;
            Ok(constraints.with_store(Arc::new(store)))
        }
        None => Ok(constraints),
    }
}

/// The hooks of every settings source. A project's hooks are active only once the
/// workspace is trusted; `disableAllHooks` from managed settings disables every hook, from
/// any other source only the non-managed ones.
fn hook_config(settings: &toolgate_policy::Settings) -> Result<HookConfig, SetupError> {
    let is_managed = |source: usize| {
        settings
            .sources
            .get(source)
            .is_some_and(|s| s.kind == SourceKind::Managed)
    };
    let sources: Vec<HookSource> = settings
        .hooks
        .iter()
        .map(|h| HookSource {
            hooks: h.value.clone(),
            active: h.active,
            label: settings
                .sources
                .get(h.source)
                .map_or_else(|| "settings".to_owned(), |s| s.label.clone()),
            managed: is_managed(h.source),
        })
        .collect();
    let disable = match &settings.disable_all_hooks {
        Some(d) if d.value && d.active && is_managed(d.source) => DisableHooks::All,
        Some(d) if d.value && d.active => DisableHooks::NonManaged,
        _ => DisableHooks::None,
    };
    Ok(HookConfig::from_sources(
        &sources,
        disable,
        settings.managed_hooks_only,
    )?)
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

/// The prompter for a session: a JSON-lines UI when the command line names one, else the
/// terminal when asked for and available, else deny-all; in auto mode the classifier
/// reviews first.
fn prompter(
    engine: &Arc<Engine>,
    prompting: Prompting,
    settings: &toolgate_policy::Settings,
    ui: Option<JsonLinesSource>,
) -> Arc<dyn PolicyPrompter> {
    let classifier = classifier_from(settings.classifier.as_ref().map(|c| &c.value));
    if prompting == Prompting::Mcp {
        let fallback: Arc<dyn PolicyPrompter> = match ui {
            Some(source) => Arc::new(LazyJsonLinesPrompter::new(Arc::clone(engine), source)),
            None => Arc::new(DenyAllPrompter),
        };
        let mcp = toolgate_mcp::ElicitingPrompter::new(Arc::clone(engine), fallback);
        return Arc::new(AutoReviewer::new(classifier, mcp));
    }
    if let Some(source) = ui {
        let ui = LazyJsonLinesPrompter::new(Arc::clone(engine), source);
        return Arc::new(AutoReviewer::new(classifier, ui));
    }
    if prompting == Prompting::Terminal {
        match TerminalPrompter::open(Arc::clone(engine)) {
            Ok(terminal) => return Arc::new(AutoReviewer::new(classifier, terminal)),
            Err(e) => tracing::warn!(error = %e, "no terminal to ask on; asks are denied"),
        }
    }
    Arc::new(AutoReviewer::new(classifier, DenyAllPrompter))
}

/// `<workspace>/.toolgate/audit.jsonl`.
pub fn default_audit_path(workspace: &Path) -> PathBuf {
    workspace.join(".toolgate").join("audit.jsonl")
}
