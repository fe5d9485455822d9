//! toolgate-setup: settings in, a ready [`Gate`] out.
//!
//! Every front door — `toolgate exec`/`call`/`check`, `toolgate serve`, `toolgate hook` and
//! a Rust agent that embeds the gate — builds its gate here, so they all enforce the same
//! compiled policy: the settings sources merged with their trust rules, the permission engine
//! and its risk floor, the user's hooks (whose `if` rules the engine matches), constraints,
//! the sandbox (whose masks and `excludedCommands` come from the same engine), prompts and
//! the audit log.
//!
//! ```no_run
//! use toolgate_setup::Setup;
//! use toolgate_protocol::{ToolCall, wire};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut setup = Setup::new("/path/to/project");
//! setup.settings.allow.push("Bash(npm test)".into());
//! setup.audit = Some(toolgate_setup::AuditChoice::default());
//! let built = setup.build()?;
//! let gate = built.gate;
//!
//! // The definitions to send to the model, then every tool_use block through the gate.
//! let tools = gate.definitions(wire::Format::Anthropic);
//! let call = ToolCall::new("toolu_1", "Read", serde_json::json!({"file_path": "README.md"}));
//! let result = gate.execute(call).await;
//! let block = wire::result(&result, wire::Format::Anthropic);
//! # let _ = (tools, block);
//! # Ok(()) }
//! ```
//!
//! [`Setup::load`] stops after the settings: the merged [`Settings`], the profile, the mode
//! and the compiled [`Engine`] (what `toolgate config` and `toolgate hook` need).
#![deny(missing_docs)]

// docs/library.md's examples, compiled and run as doctests of this crate.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
struct LibraryDocs;

pub mod gateway;
mod if_matcher;
pub mod live;
pub mod policy_url;
mod prompting;
pub mod restart_only;
mod sandbox;
mod stages;
mod web;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;
use toolgate_audit::FsyncPolicy;
use toolgate_core::deferral::{DEFAULT_CONTEXT_TOKENS, DEFAULT_THRESHOLD_PERCENT};
use toolgate_core::registry::RegistryError;
use toolgate_core::tool_search::TOOL_SEARCH;
use toolgate_core::{
    BuildError, Deferral, Gate, Registry, SessionOptions, Snapshot, Tool, ViewOptions, ViewPlanner,
};
use toolgate_hooks::{DisableHooks, HookConfig, HookSource};
use toolgate_policy::settings::{self, LoadOptions, Settings, SourceKind, ToolSearchMode};
use toolgate_policy::{Engine, JsonLinesSource, PolicyError, Profile};
use toolgate_protocol::PermissionMode;

pub use if_matcher::PolicyIfMatcher;
pub use live::{LivePolicy, Reload};
pub use prompting::{Prompting, WrapPrompter};
pub use restart_only::{RESTART_ONLY, RestartOnly};
pub use sandbox::{SandboxState, state as sandbox_state};
pub use web::status as web_status;

/// A setup problem: bad options, broken settings or an unusable workspace. Nothing ran.
#[derive(Debug, Error)]
pub enum SetupError {
    /// Unknown mode name.
    #[error(transparent)]
    Mode(#[from] toolgate_protocol::UnknownMode),
    /// Settings could not be loaded or compiled.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The sandbox settings are invalid, or the sandbox cannot be set up.
    #[error(transparent)]
    Sandbox(#[from] toolgate_sandbox::SandboxError),
    /// The registry, snapshot or view could not be built.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The gate could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The hooks in the settings are malformed.
    #[error(transparent)]
    Hooks(#[from] toolgate_hooks::HookError),
    /// The web tools' settings are invalid.
    #[error(transparent)]
    Web(#[from] toolgate_web::WebError),
    /// The PostgreSQL audit store is misconfigured or unreachable.
    #[error("--audit: {0}")]
    AuditStore(#[from] toolgate_audit_postgres::PgError),
    /// The OTLP exporter is misconfigured.
    #[error(transparent)]
    Otlp(#[from] toolgate_otel::OtelError),
    /// The shared state (`--state`) is misconfigured or unreachable.
    #[error(transparent)]
    State(#[from] toolgate_state::StateError),
    /// A settings URL could not be fetched, or is not one toolgate fetches from.
    #[error(transparent)]
    SettingsUrl(#[from] policy_url::FetchError),
    /// `mcpServers` or `.mcp.json` is malformed, or the MCP pin store is unusable.
    #[error(transparent)]
    Gateway(#[from] toolgate_gateway::GatewayError),
    /// `toolgate.toolSearch` has a value out of range.
    #[error("toolgate.toolSearch: {0}")]
    ToolSearch(String),
    /// The path of the sandbox helper is unknown.
    #[error("cannot find the toolgate executable for the sandbox helper: {0}")]
    Exe(std::io::Error),
    /// The workspace does not exist or is not a directory.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
}

/// A workspace that cannot be used: nothing is created for it (a mistyped path must not
/// become an empty folder the session then runs in).
#[derive(Debug, Error)]
#[error("the workspace {}: {problem}", path.display())]
pub struct WorkspaceError {
    /// The workspace as given.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
}

/// Checks that `workspace` is an existing directory; only `.toolgate/` is ever created
/// inside it, never the workspace itself.
pub fn check_workspace(workspace: &Path) -> Result<(), WorkspaceError> {
    let problem = match std::fs::metadata(workspace) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => "not a directory".to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            "no such directory (toolgate does not create it)".to_owned()
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => "not a directory".to_owned(),
        Err(e) => format!("cannot be used: {e}"),
    };
    Err(WorkspaceError {
        path: workspace.to_path_buf(),
        problem,
    })
}

/// Where settings come from beyond the files toolgate finds itself (managed, project, user):
/// the command line's `--settings`, `--allow`, `--ask`, `--deny`, `--claude`, `--profile`.
#[derive(Debug, Clone, Default)]
pub struct SettingsChoice {
    /// Settings files or inline JSON, merged above project and user settings.
    pub files: Vec<String>,
    /// Allow rules.
    pub allow: Vec<String>,
    /// Ask rules.
    pub ask: Vec<String>,
    /// Deny rules.
    pub deny: Vec<String>,
    /// Also read Claude Code's settings (`.claude/`, `~/.claude/settings.json`).
    pub claude: bool,
    /// The profile to run as (`toolgate.profiles.NAME`).
    pub profile: Option<String>,
    /// Allow `bypassPermissions` while running as root outside a sandbox.
    pub allow_root: bool,
    /// Run commands without the sandbox (`sandbox.enabled: false` on the command line).
    pub no_sandbox: bool,
    /// The calls judged are run by someone else (Claude Code, for `toolgate hook`), so
    /// toolgate's own sandbox default does not contain them: they count as sandboxed only
    /// when the settings enable the sandbox explicitly.
    pub commands_elsewhere: bool,
}

/// How the session's tool list is trimmed beyond what policy removes.
#[derive(Debug, Clone, Default)]
pub struct ViewChoice {
    /// Only the simple tool set (Bash, Read, Edit).
    pub simple: bool,
    /// Only these tools (names or `*` globs).
    pub only: Vec<String>,
    /// Remove these tools (bare-name deny rules).
    pub deny_tools: Vec<String>,
    /// When MCP tools are deferred behind ToolSearch; `None`: as the settings say
    /// (`toolgate.toolSearch`, see [`deferral`]).
    pub deferral: Option<Deferral>,
}

/// Where audit records go: the local hash-chained log (the source of truth), and the
/// destinations that get a copy of it from its checkpoint.
#[derive(Debug, Clone)]
pub struct AuditChoice {
    /// The log file; default `<workspace>/.toolgate/audit.jsonl`.
    pub path: Option<PathBuf>,
    /// When to fsync.
    pub fsync: FsyncPolicy,
    /// Under [`FsyncPolicy::Batch`]: the longest a written record waits for its fsync.
    pub batch_interval: Duration,
    /// PostgreSQL URLs (`postgres://USER:PASSWORD@HOST[:PORT]/DB`) that get a copy.
    pub postgres: Vec<String>,
    /// An OpenTelemetry collector (OTLP/HTTP base URL) that gets every call as a span and
    /// every record as a log record.
    pub otlp: Option<String>,
}

impl Default for AuditChoice {
    fn default() -> Self {
        Self {
            path: None,
            fsync: FsyncPolicy::default(),
            batch_interval: toolgate_audit::AuditOptions::default().batch_interval,
            postgres: Vec::new(),
            otlp: None,
        }
    }
}

/// Everything a gate is built from. Plain data: fill it, then [`Setup::build`].
#[derive(Clone)]
pub struct Setup {
    /// The workspace root: tools act only inside it (and `add_dirs`).
    pub workspace: PathBuf,
    /// Additional directories the session may act in.
    pub add_dirs: Vec<PathBuf>,
    /// The permission mode, overriding the settings' `defaultMode`.
    pub mode: Option<String>,
    /// Settings sources and rules from the caller.
    pub settings: SettingsChoice,
    /// How the tool list is trimmed.
    pub view: ViewChoice,
    /// Tool specs pinned in a registry snapshot file.
    pub tools_snapshot: Option<PathBuf>,
    /// The session id recorded in the audit log (default: a random UUID).
    pub session_id: Option<String>,
    /// Who answers an ask.
    pub prompting: Prompting,
    /// A JSON-lines UI that answers asks (`--prompt-command`, `--prompt-fds`).
    pub prompt_ui: Option<JsonLinesSource>,
    /// The audit log; `None` writes none.
    pub audit: Option<AuditChoice>,
    /// A Redis URL where rate limits are counted, shared by every process and replica using
    /// it; `None` counts them in this process.
    pub state: Option<String>,
    /// The sandbox helper executable (default: this executable, or the stand-alone helper
    /// next to it; see `toolgate_sandbox::helper_exe`).
    pub sandbox_helper: Option<PathBuf>,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("workspace", &self.workspace)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The settings of a session, loaded and compiled.
pub struct Loaded {
    /// The effective settings.
    pub settings: Settings,
    /// The selected profile.
    pub profile: Option<Profile>,
    /// The session's mode.
    pub mode: PermissionMode,
    /// The compiled permission engine.
    pub engine: Engine,
}

/// A gate and what it was built from.
pub struct Built {
    /// The gate.
    pub gate: Gate,
    /// The permission engine deciding its calls (for `check`'s trace).
    pub engine: Arc<Engine>,
    /// The effective settings.
    pub settings: Arc<Settings>,
    /// Plans the gate's views; a reload gives it the new engine.
    pub(crate) planner: Arc<Planner>,
}

impl Setup {
    /// A setup for `workspace` with defaults everywhere: the settings files toolgate finds,
    /// nobody to ask, no audit log.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            add_dirs: Vec::new(),
            mode: None,
            settings: SettingsChoice::default(),
            view: ViewChoice::default(),
            tools_snapshot: None,
            session_id: None,
            prompting: Prompting::Deny,
            prompt_ui: None,
            audit: None,
            state: None,
            sandbox_helper: None,
        }
    }

    /// Where to look for settings.
    pub fn load_options(&self) -> LoadOptions {
        let project = self
            .workspace
            .canonicalize()
            .unwrap_or_else(|_| self.workspace.clone());
        let mut o = LoadOptions::from_env(project);
        o.claude = self.settings.claude;
        o.cli.settings = self.settings.files.clone();
        o.cli.allow = self.settings.allow.clone();
        o.cli.ask = self.settings.ask.clone();
        o.cli.deny = self.settings.deny.clone();
        o.cli.add_dirs = self.add_dirs.clone();
        o.cli.mode = self.mode.clone();
        o.cli.no_sandbox = self.settings.no_sandbox;
        o
    }

    /// Loads and merges the settings, selects the profile and mode, and compiles the
    /// engine.
    pub fn load(&self) -> Result<Loaded, SetupError> {
        if let Some(mode) = &self.mode {
            PermissionMode::from_str(mode)?;
        }
        let mut opts = self.load_options();
        let urls: Vec<String> = opts
            .cli
            .settings
            .iter()
            .filter(|s| settings::is_settings_url(s))
            .cloned()
            .collect();
        for (url, fetched) in policy_url::fetch_all_blocking(&urls)? {
            if let policy_url::Fetched::Body { text, .. } = fetched {
                opts.cli.served.push(settings::Served { url, text });
            }
        }
        load_with(&opts, &self.settings)
    }

    /// Builds the gate (see [`from_settings`]).
    pub fn build(&self) -> Result<Built, SetupError> {
        from_settings(self)
    }
}

/// Loads settings for `opts`, selects `choice.profile` and the mode, and compiles the engine.
/// The root guard (and the rule that no mode approves `dangerouslyDisableSandbox`) counts
/// the session as sandboxed when the sandbox is on ([`sandbox_state`]); for commands run
/// elsewhere ([`SettingsChoice::commands_elsewhere`]) only when the settings enable it.
pub fn load_with(opts: &LoadOptions, choice: &SettingsChoice) -> Result<Loaded, SetupError> {
    let settings = settings::load(opts)?;
    let sandboxed = if choice.commands_elsewhere {
        Sandboxed::elsewhere(sandbox::enabled(&settings))
    } else {
        Sandboxed::here(&sandbox::state(&settings))
    };
    compile_sandboxed(
        settings,
        choice.profile.as_deref(),
        choice.allow_root,
        sandboxed,
    )
}

/// What the root guard knows of the sandbox: on, and isolating the filesystem.
#[derive(Clone, Copy)]
struct Sandboxed {
    on: bool,
    contained: bool,
}

impl Sandboxed {
    /// toolgate's own sandbox: only tiers A and B isolate the filesystem.
    fn here(state: &sandbox::SandboxState) -> Self {
        Self {
            on: state.on,
            contained: matches!(
                state.tier,
                toolgate_sandbox::Tier::A | toolgate_sandbox::Tier::B
            ),
        }
    }

    /// The sandbox of whoever runs the commands (Claude Code's, for the hook), as the
    /// settings describe it.
    fn elsewhere(on: bool) -> Self {
        Self { on, contained: on }
    }
}

/// Selects `profile` in loaded settings, resolves the mode and compiles the engine: what
/// [`load_with`] does after reading the files, and what a reload does for each profile
/// from one version of the settings.
pub fn compile(
    settings: Settings,
    profile: Option<&str>,
    allow_root: bool,
) -> Result<Loaded, SetupError> {
    let sandboxed = Sandboxed::here(&sandbox::state(&settings));
    compile_sandboxed(settings, profile, allow_root, sandboxed)
}

fn compile_sandboxed(
    settings: Settings,
    profile: Option<&str>,
    allow_root: bool,
    sandboxed: Sandboxed,
) -> Result<Loaded, SetupError> {
    let profile = match profile {
        Some(name) => Some(settings.profile(name)?),
        None => None,
    };
    let mode = settings.resolve_mode(profile.as_ref())?;
    let engine = settings
        .engine_builder(profile.as_ref())
        .root(
            toolgate_policy::modes::running_as_root(),
            sandboxed.on,
            allow_root,
        )
        .root_containment(sandboxed.contained)
        .build()?;
    Ok(Loaded {
        settings,
        profile,
        mode,
        engine,
    })
}

/// The tools a session with these settings starts with: the file and shell tools (their
/// commands get the settings' `env`), WebFetch, WebSearch when a backend is configured, and
/// the orchestration tools (AskUserQuestion, Skill, Agent, worktrees, plan mode), and
/// ToolSearch (offered only when tools are deferred).
pub fn builtin_tools(settings: &Settings) -> Result<Vec<Arc<dyn Tool>>, SetupError> {
    let mut tools = toolgate_tools::builtin_file_tools(&toolgate_tools::FileToolsConfig::default());
    let shell = toolgate_tools::shell::ShellConfig {
        set_env: settings.env_vars(),
        ..Default::default()
    };
    tools.extend(toolgate_tools::shell::shell_tools(&shell));
    tools.extend(web::tools(settings)?);
    tools.extend(toolgate_orch::tools(&orch_config(settings)));
    // Hidden by the view unless some tool is deferred.
    tools.push(Arc::new(toolgate_tools::ToolSearchTool::new()));
    Ok(tools)
}

/// What the orchestration tools (Skill, Agent, …) take from the settings.
pub fn orch_config(settings: &Settings) -> toolgate_orch::OrchConfig {
    toolgate_orch::OrchConfig {
        project: settings.project.clone(),
        home: settings.home.clone(),
        config_dir: settings.config_dir.clone(),
        trusted: settings.trusted,
        agent_model: settings.agent.as_ref().map(|a| a.value.clone()),
    }
}

/// The registry of the tools for `settings` (built-in and upstream MCP tools), pinned to a
/// snapshot if one is given. The upstream servers are started for this registry alone (for
/// a command that lists tools and exits); a front door's gates share theirs.
pub fn registry(snapshot: Option<&Path>, settings: &Settings) -> Result<Registry, SetupError> {
    Ok(registry_on(snapshot, settings, &gateway::Upstreams::default())?.0)
}

/// [`registry`] with the servers of `upstreams`, and the gateway whose tools it holds.
fn registry_on(
    snapshot: Option<&Path>,
    settings: &Settings,
    upstreams: &gateway::Upstreams,
) -> Result<(Registry, toolgate_gateway::Gateway), SetupError> {
    let mut builder = Registry::builder();
    for tool in builtin_tools(settings)? {
        builder = builder.register_arc(tool);
    }
    let gateway = upstreams.start(settings)?;
    for tool in gateway::listed_tools(&gateway) {
        builder = builder.register_arc(tool);
    }
    if let Some(path) = snapshot {
        builder = builder.snapshot(Snapshot::load(path)?);
    }
    Ok((builder.build()?, gateway))
}

/// The view of a session in `mode`, trimmed by `choice`, by bare-name deny rules and by the
/// profile's tool list, with MCP tools deferred as `choice.deferral` says (default
/// [`Deferral::default`]). Nothing is deferred when ToolSearch is not in the view (a rule
/// denies it): deferred tools could then never be loaded.
pub fn view_options(
    choice: &ViewChoice,
    mode: PermissionMode,
    registry: &Registry,
    engine: &Engine,
) -> ViewOptions {
    plan_view(
        own_view_options(choice, mode),
        choice.deferral.unwrap_or_default(),
        registry,
        engine,
    )
}

/// What `choice` itself asks of a view in `mode`, before the rules and deferral.
fn own_view_options(choice: &ViewChoice, mode: PermissionMode) -> ViewOptions {
    ViewOptions {
        mode,
        simple: choice.simple,
        allow_only: (!choice.only.is_empty()).then(|| choice.only.clone()),
        deny: choice.deny_tools.clone(),
        deferred: Vec::new(),
    }
}

/// `view` with the tools of `registry` that bare-name deny rules remove added to its deny
/// list, and its deferred tools chosen anew.
fn plan_view(
    mut view: ViewOptions,
    deferral: Deferral,
    registry: &Registry,
    engine: &Engine,
) -> ViewOptions {
    view.deferred.clear();
    for entry in registry.entries() {
        let name = &entry.spec().name;
        if engine.removes_tool(name).is_some() && !view.deny.contains(name) {
            view.deny.push(name.clone());
        }
    }
    // A view that cannot be built (a bad pattern) fails where the gate builds it.
    if deferral == Deferral::Off {
        return view;
    }
    let Ok(full) = registry.view(&view) else {
        return view;
    };
    view.deferred = deferral.deferred(&full);
    if !view.deferred.is_empty() {
        let searchable = registry
            .view(&view)
            .is_ok_and(|v| v.entries().iter().any(|e| e.spec().name == TOOL_SEARCH));
        if !searchable {
            view.deferred.clear();
        }
    }
    view
}

/// Plans each session's view with the engine in force: tools that bare-name deny rules
/// remove are hidden and MCP tools deferred, for the first registry, for one rebuilt when
/// upstream tools change, and again after a policy reload ([`Planner::set_engine`]).
pub(crate) struct Planner {
    engine: std::sync::RwLock<Arc<Engine>>,
    deferral: Deferral,
}

impl Planner {
    fn new(engine: Arc<Engine>, deferral: Deferral) -> Self {
        Self {
            engine: std::sync::RwLock::new(engine),
            deferral,
        }
    }

    /// Plans with `engine` from now on (a reload put it in force).
    pub(crate) fn set_engine(&self, engine: Arc<Engine>) {
        *self
            .engine
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = engine;
    }
}

impl ViewPlanner for Planner {
    fn plan(&self, registry: &Registry, options: &ViewOptions) -> ViewOptions {
        let engine = Arc::clone(
            &self
                .engine
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        plan_view(options.clone(), self.deferral, registry, &engine)
    }
}

/// `toolgate.toolSearch` as a [`Deferral`]: `auto` (the default) at
/// [`DEFAULT_THRESHOLD_PERCENT`] of [`DEFAULT_CONTEXT_TOKENS`] unless set, `always`, `off`.
pub fn deferral(settings: &Settings) -> Result<Deferral, SetupError> {
    let Some(config) = settings.tool_search else {
        return Ok(Deferral::default());
    };
    Ok(match config.mode {
        ToolSearchMode::Off => Deferral::Off,
        ToolSearchMode::Always => Deferral::Always,
        ToolSearchMode::Auto => {
            let threshold_percent = config
                .threshold_percent
                .unwrap_or(DEFAULT_THRESHOLD_PERCENT);
            if !(1..=100).contains(&threshold_percent) {
                return Err(SetupError::ToolSearch(format!(
                    "thresholdPercent is {threshold_percent}; use a share of the context from 1 to 100"
                )));
            }
            let context_tokens = config.context_tokens.unwrap_or(DEFAULT_CONTEXT_TOKENS);
            if context_tokens == 0 {
                return Err(SetupError::ToolSearch(
                    "contextTokens is 0; use the model's context size in tokens (e.g. 200000)"
                        .into(),
                ));
            }
            Deferral::Auto {
                context_tokens,
                threshold_percent,
            }
        }
    })
}

/// Builds the gate for `setup`: settings merged and compiled, the registry and view, policy,
/// prompter, constraints, hooks, sandbox and audit log. An audit log that cannot be opened
/// does not stop the gate from starting: every call is refused with `audit_unavailable`
/// instead, so the caller learns why and nothing runs unaudited.
pub fn from_settings(setup: &Setup) -> Result<Built, SetupError> {
    check_workspace(&setup.workspace)?;
    let loaded = setup.load()?;
    let opened = Opened::open(setup)?;
    build_from(setup, loaded, &opened, None)
}

/// What a gate keeps whatever version of the settings it runs, opened once: the audit sink,
/// the shared rate-limit store and the upstream MCP servers.
#[derive(Clone, Default)]
pub(crate) struct Opened {
    pub(crate) audit: Option<Arc<dyn toolgate_core::stages::AuditSink>>,
    pub(crate) rate_store: Option<Arc<dyn toolgate_policy::rate::RateStore>>,
    /// The upstream MCP servers, started once for every gate built from here.
    pub(crate) upstreams: gateway::Upstreams,
}

impl Opened {
    /// Opens `setup`'s audit destinations and state store; a misconfigured one (a bad URL,
    /// credentials) stops the setup here, before anything runs.
    pub(crate) fn open(setup: &Setup) -> Result<Self, SetupError> {
        let audit = match &setup.audit {
            Some(audit) => Some(audit_sink(&setup.workspace, audit)?),
            None => None,
        };
        let rate_store = match &setup.state {
            Some(url) => Some(Arc::new(toolgate_state::RedisRateStore::open_checked(url)?)
                as Arc<dyn toolgate_policy::rate::RateStore>),
            None => None,
        };
        let upstreams = gateway::Upstreams::new(audit.clone(), setup.tools_snapshot.clone());
        Ok(Self {
            audit,
            rate_store,
            upstreams,
        })
    }
}

/// The gate for compiled settings, with the sinks already opened; its policy's stages are
/// labelled `version` when the policy can be reloaded.
pub(crate) fn build_from(
    setup: &Setup,
    loaded: Loaded,
    opened: &Opened,
    version: Option<Arc<str>>,
) -> Result<Built, SetupError> {
    let engine = Arc::new(loaded.engine);
    let parts = stages::Parts::build(
        setup,
        &loaded.settings,
        loaded.profile.as_ref(),
        &engine,
        opened,
        None,
    )?;
    build_with_parts(setup, loaded.settings, loaded.mode, parts, opened, version)
}

/// The gate around stages already built from `settings`.
pub(crate) fn build_with_parts(
    setup: &Setup,
    settings: Settings,
    mode: PermissionMode,
    parts: stages::Parts,
    opened: &Opened,
    version: Option<Arc<str>>,
) -> Result<Built, SetupError> {
    let engine = Arc::clone(parts.engine());
    for warning in &settings.warnings {
        tracing::warn!("{warning}");
    }
    let (registry, upstream) = registry_on(
        setup.tools_snapshot.as_deref(),
        &settings,
        &opened.upstreams,
    )?;
    let mut choice = setup.view.clone();
    if choice.deferral.is_none() {
        choice.deferral = Some(deferral(&settings)?);
    }
    // The session's own options; the planner adds what the rules remove and defers.
    let view = own_view_options(&choice, mode);
    let planner = Arc::new(Planner::new(
        Arc::clone(&engine),
        choice.deferral.unwrap_or_default(),
    ));
    let mut builder = Gate::builder()
        .workspace(&setup.workspace)
        .registry(registry)
        .view(view)
        .view_planner(Arc::clone(&planner) as Arc<dyn ViewPlanner>)
        .retain(opened.upstreams.keep_alive())
        .session(SessionOptions {
            id: setup.session_id.clone(),
            mode,
            client: Some(stages::scope(engine.profile())),
        });
    for dir in stages::add_dirs(setup, &settings) {
        builder = builder.add_dir(dir);
    }
    builder = builder.stages(parts.into_stage_set(version));
    if let Some(sink) = &opened.audit {
        builder = builder.audit(Arc::clone(sink));
    }
    let gate = builder.build()?;
    opened
        .upstreams
        .track(&gate.tools_handle(), &upstream, gate.session().id());
    Ok(Built {
        gate,
        engine,
        settings: Arc::new(settings),
        planner,
    })
}

/// The audit sink `audit` asks for: the local log, copied to each PostgreSQL URL and the
/// OTLP collector. A log that cannot be opened refuses every call (`audit_unavailable`); a
/// misconfigured destination (a bad URL, credentials, a missing database) stops the setup
/// here, before anything runs.
pub fn audit_sink(
    workspace: &Path,
    audit: &AuditChoice,
) -> Result<Arc<dyn toolgate_core::stages::AuditSink>, SetupError> {
    let mut destinations: Vec<Arc<dyn toolgate_audit::ship::Destination>> = Vec::new();
    for url in &audit.postgres {
        destinations.push(Arc::new(
            toolgate_audit_postgres::PgDestination::open_checked(url)?,
        ));
    }
    if let Some(url) = &audit.otlp {
        destinations.push(Arc::new(toolgate_otel::OtlpDestination::new(
            url,
            Default::default(),
        )?));
    }
    let path = audit
        .path
        .clone()
        .unwrap_or_else(|| default_audit_path(workspace));
    let options = toolgate_audit::AuditOptions {
        fsync: audit.fsync,
        batch_interval: audit.batch_interval,
        ..toolgate_audit::AuditOptions::default()
    };
    Ok(toolgate_audit::open_or_refuse_with(
        &path,
        options,
        destinations,
    ))
}

/// The settings' constraints, their rate limits counted in the Redis store at `state` if
/// one is given.
pub fn constraints(
    settings: &Settings,
    profile: Option<&toolgate_policy::Profile>,
    state: Option<&str>,
) -> Result<toolgate_policy::Constraints, SetupError> {
    let constraints = settings.constraints(profile);
    match state {
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
pub fn hook_config(settings: &Settings) -> Result<HookConfig, SetupError> {
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

/// `<workspace>/.toolgate/audit.jsonl`.
pub fn default_audit_path(workspace: &Path) -> PathBuf {
    workspace.join(".toolgate").join("audit.jsonl")
}
