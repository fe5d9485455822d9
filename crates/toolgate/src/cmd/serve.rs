//! `toolgate serve`: the MCP server front door, on stdio (default) or Streamable HTTP.
//!
//! Each connection (the stdio process, an HTTP session) gets its own gate session. Its
//! profile comes from what the client proved, never from what it claims: over stdio the
//! launch's `--profile`; over HTTP the bearer token (`--token` for the server's own
//! settings, `--token-file` for one token per profile). The client's `clientInfo.name` is
//! only a label in the audit log (`NAME`, or `NAME@PROFILE` when a profile token opened
//! the session). Nobody can be asked at a terminal (stdin is the protocol),
//! so "ask" decisions become MCP elicitation requests to clients that support them, and
//! otherwise go to the configured prompter (a JSON-lines UI) or are denied with a reason.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use clap::Args;
use toolgate_core::{Gate, View};
use toolgate_mcp::{
    ClientIdentity, HttpOptions, ProfileToken, SessionError, SessionSource, ToolsMode,
};
use toolgate_setup::LivePolicy;

use crate::cli::{AuditArgs, SessionArgs, WatchArgs};
use crate::cmd::{runtime, usage_error};
use crate::setup;

/// The environment variable holding the HTTP bearer token (kept out of `ps` output).
pub const TOKEN_ENV: &str = "TOOLGATE_MCP_TOKEN";

/// Port used when `--http` names only a host.
const DEFAULT_PORT: u16 = 8765;

/// `toolgate serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Session setup.
    #[command(flatten)]
    pub session: SessionArgs,

    /// Audit log.
    #[command(flatten)]
    pub audit: AuditArgs,

    /// Reloading the settings.
    #[command(flatten)]
    pub watch: WatchArgs,

    /// Which tools `tools/list` offers: `all`, the session's policy-filtered view; or
    /// `search`, only `search_tools` and `call_tool` (for clients that cannot handle many
    /// tools; the same policy applies to what a search finds and to every call).
    #[arg(long, value_name = "MODE", value_enum, default_value_t = ToolsArg::All)]
    pub tools: ToolsArg,

    /// Serve Streamable HTTP at ADDR (`127.0.0.1:8765`, `:8765`, `8765`) on path /mcp,
    /// instead of stdio. A non-loopback address requires a bearer token.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,

    // The options below apply to HTTP only; given without `--http` they are refused, so
    // that nobody believes `--token` protects a stdio server.
    /// Bearer token HTTP clients must send (prefer the TOOLGATE_MCP_TOKEN variable).
    #[arg(long, value_name = "TOKEN", requires = "http")]
    pub token: Option<String>,

    /// A JSON file of bearer tokens that open sessions as a profile, one per profile:
    /// `{"reviewer": "TOKEN", "ci": "TOKEN"}`. Readable by its owner only (mode 0600).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub token_file: Option<PathBuf>,

    /// Most HTTP connections open at once; beyond it new ones wait to be accepted.
    #[arg(long, value_name = "N", default_value_t = toolgate_mcp::MAX_HTTP_CONNECTIONS as u32,
          requires = "http", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// Most HTTP connections open at once from one IP address (raise it behind a reverse
    /// proxy, which is one address for all its clients); beyond it a connection gets 503.
    #[arg(long, value_name = "N",
          default_value_t = toolgate_mcp::MAX_HTTP_CONNECTIONS_PER_PEER as u32,
          requires = "http", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_peer: u32,

    /// Most HTTP sessions kept open at once; beyond it `initialize` is refused until a
    /// session ends (DELETE) or expires after 10 idle minutes.
    #[arg(long, value_name = "N", default_value_t = toolgate_mcp::MAX_HTTP_SESSIONS as u32,
          requires = "http", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions: u32,

    /// Also accept this Host header value over HTTP (repeatable; loopback names always).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allow_hosts: Vec<String>,

    /// Also accept this browser Origin over HTTP, e.g. https://app.example:443
    /// (repeatable; loopback origins always).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,
}

/// `--tools`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ToolsArg {
    /// Every tool of the session's view.
    All,
    /// `search_tools` and `call_tool`.
    Search,
}

impl From<ToolsArg> for ToolsMode {
    fn from(arg: ToolsArg) -> Self {
        match arg {
            ToolsArg::All => ToolsMode::All,
            ToolsArg::Search => ToolsMode::Search,
        }
    }
}

/// Runs `toolgate serve`.
pub fn run(args: ServeArgs) -> ExitCode {
    // One stdio connection is one client whose calls arrive one line at a time: one worker
    // thread serves them without handing every message between worker threads (measured: a
    // third of the context switches, ≈1.4× sequential calls/s). File and search tools still
    // run on the blocking pool (except Reads of small text files), so they use the other
    // cores. The upstream MCP servers' connections share that worker (so it is a
    // multi-thread runtime of one worker: a server start waits on it with
    // `block_in_place`). HTTP serves many sessions at once and keeps the multi-threaded
    // runtime.
    let built = if args.http.is_none() {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
    } else {
        runtime()
    };
    let rt = match built {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolgate serve: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // Before the setup below starts the upstream servers.
    if args.http.is_none()
        && let Err(e) = toolgate_gateway::run_upstreams_on(&rt)
    {
        eprintln!("toolgate serve: {e}");
        return ExitCode::from(1);
    }
    let source = match Profiles::new(&args) {
        Ok(s) => Arc::new(s),
        Err(e) => return usage_error("serve", e),
    };
    // Polls while the server runs (on stdio's single thread too: a poll is a few small
    // reads off the thread and one conditional GET); ends with the runtime.
    if args.watch.watch {
        rt.spawn(Arc::clone(&source.live).watch(args.watch.watch_interval));
    }
    let result = match &args.http {
        // On SIGTERM/SIGINT the serve future is dropped and the runtime shut down, which
        // stops running tools (their process groups are killed on drop). The connection is
        // served on the worker, with the tasks it spawns and the upstream connections, not
        // on this thread.
        None => {
            let serving = rt.spawn(async {
                tokio::select! {
                    result = toolgate_mcp::serve_stdio(source) => result,
                    () = terminated() => Ok(()),
                }
            });
            rt.block_on(serving)
                .unwrap_or_else(|e| Err(toolgate_mcp::ServeError::Task(e.to_string())))
        }
        Some(addr) => {
            let addr = match parse_addr(addr) {
                Ok(a) => a,
                Err(e) => return usage_error("serve", e),
            };
            let mut options = HttpOptions::new(addr);
            options.token = args
                .token
                .clone()
                .or_else(|| std::env::var(TOKEN_ENV).ok())
                .filter(|t| !t.is_empty());
            options.profile_tokens = match &args.token_file {
                Some(path) => match read_token_file(path, &source.names) {
                    Ok(t) => t,
                    Err(e) => return usage_error("serve", e),
                },
                None => Vec::new(),
            };
            if let Some(token) = &options.token
                && options.profile_tokens.iter().any(|p| &p.token == token)
            {
                return usage_error("serve", "--token is also a profile's token in --token-file");
            }
            options.limits.max_connections = args.max_connections as usize;
            options.limits.max_connections_per_peer = args.max_connections_per_peer as usize;
            options.allowed_hosts = args.allow_hosts.clone();
            options.allowed_origins = args.allow_origins.clone();
            options.max_sessions = args.max_sessions as usize;
            rt.block_on(toolgate_mcp::serve_http(
                source,
                options,
                terminated(),
                |bound| eprintln!("toolgate serve: listening on http://{bound}/mcp"),
            ))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ toolgate_mcp::ServeError::TokenRequired(_)) => usage_error("serve", e),
        Err(e) => {
            eprintln!("toolgate serve: {e}");
            ExitCode::from(1)
        }
    }
}

/// Completes on SIGTERM or SIGINT. If the handlers cannot be installed, never completes
/// (the process can still be killed).
async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending::<()>().await,
    }
}

/// `127.0.0.1:8765`, `[::1]:8765`, `:8765` or `8765` (loopback), or a bare IP (port 8765).
fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let port_only = text.strip_prefix(':').unwrap_or(text);
    if let Ok(port) = port_only.parse::<u16>() {
        return Ok(SocketAddr::new(loopback, port));
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_PORT));
    }
    Err(format!(
        "--http {text}: expected IP:PORT, :PORT or PORT (e.g. 127.0.0.1:{DEFAULT_PORT})"
    ))
}

/// Reads `--token-file`: a JSON object of profile name to token. Refused when others can
/// read it, when a profile is not defined in the settings, and when a token is empty or
/// used twice.
fn read_token_file(path: &Path, profiles: &BTreeSet<String>) -> Result<Vec<ProfileToken>, String> {
    use std::os::unix::fs::MetadataExt;
    let what = |e: &dyn std::fmt::Display| format!("--token-file {}: {e}", path.display());
    let meta = std::fs::metadata(path).map_err(|e| what(&e))?;
    if meta.mode() & 0o077 != 0 {
        return Err(what(&format!(
            "readable by others (mode {:o}); tokens are secrets: chmod 600 it",
            meta.mode() & 0o777
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| what(&e))?;
    let map: BTreeMap<String, String> = serde_json::from_str(&text).map_err(|e| {
        what(&format!(
            "expected a JSON object of profile name to token ({{\"reviewer\": \"…\"}}): {e}"
        ))
    })?;
    let mut seen = BTreeSet::new();
    let mut tokens = Vec::new();
    for (profile, token) in map {
        if !profiles.contains(&profile) {
            let known: Vec<&str> = profiles.iter().map(String::as_str).collect();
            return Err(what(&format!(
                "no profile `{profile}` in the settings (defined: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        }
        if token.is_empty() || !seen.insert(token.clone()) {
            return Err(what(&format!(
                "the token of `{profile}` is empty or another profile's"
            )));
        }
        tokens.push(ProfileToken { profile, token });
    }
    Ok(tokens)
}

/// Gate sessions per identity: the server's own settings (with `--profile` when given) for
/// clients without a profile token, the token's profile for the others. All of them come
/// from one settings version, and `--watch` reloads them together.
struct Profiles {
    live: Arc<LivePolicy>,
    /// The gate for clients that authenticated no profile.
    base: Gate,
    /// Profile names in the settings.
    names: BTreeSet<String>,
    /// The launch's `--profile`: the profile of clients that authenticated none.
    launch_profile: Option<String>,
    /// Gates built per profile, on first use.
    by_profile: Mutex<HashMap<String, Gate>>,
    /// `--tools`.
    tools: ToolsMode,
}

impl Profiles {
    fn new(args: &ServeArgs) -> Result<Self, setup::SetupError> {
        let (live, built) = setup::live_serving(
            &args.session,
            Some(&args.audit),
            setup::mcp_prompting(),
            args.watch.watch,
        )?;
        // Fixed for the process: a reload that changes them is refused (restart-only).
        let names = built.settings.profiles.keys().cloned().collect();
        Ok(Self {
            live,
            base: built.gate,
            names,
            launch_profile: args.session.policy.profile.clone(),
            by_profile: Mutex::new(HashMap::new()),
            tools: args.tools.into(),
        })
    }

    fn gate_for(&self, profile: Option<&str>) -> Result<Gate, SessionError> {
        let Some(name) = profile else {
            return Ok(self.base.clone());
        };
        if !self.names.contains(name) {
            return Err(SessionError(format!("no profile `{name}` in the settings")));
        }
        let mut cache = self
            .by_profile
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(gate) = cache.get(name) {
            return Ok(gate.clone());
        }
        let gate = self
            .live
            .gate_for_profile(name)
            .map_err(|e| SessionError(format!("profile {name}: {e}")))?;
        tracing::info!(profile = name, "MCP sessions of the profile's token ready");
        cache.insert(name.to_owned(), gate.clone());
        Ok(gate)
    }
}

impl SessionSource for Profiles {
    fn open(&self, client: &ClientIdentity) -> Result<Gate, SessionError> {
        let gate = self.gate_for(client.profile.as_deref())?;
        // Recorded as the profile the session runs as, whoever chose it.
        let mut label = client.clone();
        if label.profile.is_none() {
            label.profile = self.launch_profile.clone();
        }
        toolgate_mcp::open_labelled(&gate, &label)
    }

    fn default_view(&self) -> View {
        self.base.view().clone()
    }

    fn tools_mode(&self) -> ToolsMode {
        self.tools
    }
}

#[cfg(test)]
mod tests {
    use super::parse_addr;

    #[test]
    fn addresses() {
        assert_eq!(parse_addr("8000").unwrap().to_string(), "127.0.0.1:8000");
        assert_eq!(parse_addr(":8000").unwrap().to_string(), "127.0.0.1:8000");
        assert_eq!(parse_addr("0.0.0.0:1").unwrap().to_string(), "0.0.0.0:1");
        assert_eq!(parse_addr("::1").unwrap().to_string(), "[::1]:8765");
        assert!(parse_addr("nope").is_err());
    }
}
