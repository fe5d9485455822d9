//! `toolgate serve`: the MCP server front door, on stdio (default) or Streamable HTTP.
//!
//! Each connection (the stdio process, an HTTP session) gets its own gate session. When the
//! client's `clientInfo.name` is the name of a profile in the settings (and `--profile` was
//! not given), the session runs as that profile; the name is recorded as the audit
//! record's `client` either way. Nobody can be asked at a terminal (stdin is the protocol),
//! so "ask" decisions become MCP elicitation requests to clients that support them, and
//! otherwise go to the configured prompter (a JSON-lines UI) or are denied with a reason.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use clap::Args;
use toolgate_core::{Gate, View};
use toolgate_mcp::{HttpOptions, SessionError, SessionSource};

use crate::cli::{AuditArgs, SessionArgs};
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

    /// Serve Streamable HTTP at ADDR (`127.0.0.1:8765`, `:8765`, `8765`) on path /mcp,
    /// instead of stdio. A non-loopback address requires a bearer token.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,

    // The options below apply to HTTP only; given without `--http` they are refused, so
    // that nobody believes `--token` protects a stdio server.
    /// Bearer token HTTP clients must send (prefer the TOOLGATE_MCP_TOKEN variable).
    #[arg(long, value_name = "TOKEN", requires = "http")]
    pub token: Option<String>,

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

/// Runs `toolgate serve`.
pub fn run(args: ServeArgs) -> ExitCode {
    let source = match Profiles::new(&args) {
        Ok(s) => Arc::new(s),
        Err(e) => return usage_error("serve", e),
    };
    // One stdio connection is one client whose calls arrive one line at a time: a
    // single-threaded runtime serves them without handing every message between worker
    // threads (measured: a third of the context switches, ≈1.4× sequential calls/s). File
    // and search tools still run on the blocking pool (except Reads of small text files),
    // so they use the other cores. HTTP serves many sessions at once and keeps the
    // multi-threaded runtime.
    let built = if args.http.is_none() {
        tokio::runtime::Builder::new_current_thread()
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
    let result = match &args.http {
        // On SIGTERM/SIGINT the serve future is dropped and the runtime shut down, which
        // stops running tools (their process groups are killed on drop).
        None => rt.block_on(async {
            tokio::select! {
                result = toolgate_mcp::serve_stdio(source) => result,
                () = terminated() => Ok(()),
            }
        }),
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

/// Gate sessions per client: the profile named like the client when one exists.
struct Profiles {
    session: SessionArgs,
    audit: AuditArgs,
    /// The gate for clients without a profile of their name (or all, with `--profile`).
    base: Gate,
    /// Profile names in the settings; empty when `--profile` fixes the profile.
    names: BTreeSet<String>,
    /// Gates built per profile, on first use.
    by_profile: Mutex<HashMap<String, Gate>>,
}

impl Profiles {
    fn new(args: &ServeArgs) -> Result<Self, setup::SetupError> {
        let names = if args.session.policy.profile.is_some() {
            BTreeSet::new()
        } else {
            setup::load(&args.session)?
                .settings
                .profiles
                .keys()
                .cloned()
                .collect()
        };
        let base = setup::gate(&args.session, Some(&args.audit), setup::mcp_prompting())?.gate;
        Ok(Self {
            session: args.session.clone(),
            audit: args.audit.clone(),
            base,
            names,
            by_profile: Mutex::new(HashMap::new()),
        })
    }

    fn gate_for(&self, client: Option<&str>) -> Result<Gate, SessionError> {
        let Some(name) = client.filter(|n| self.names.contains(*n)) else {
            return Ok(self.base.clone());
        };
        let mut cache = self
            .by_profile
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(gate) = cache.get(name) {
            return Ok(gate.clone());
        }
        let mut session = self.session.clone();
        session.policy.profile = Some(name.to_owned());
        let gate = setup::gate(&session, Some(&self.audit), setup::mcp_prompting())
            .map_err(|e| SessionError(format!("profile {name}: {e}")))?
            .gate;
        tracing::info!(profile = name, "MCP client runs as the profile of its name");
        cache.insert(name.to_owned(), gate.clone());
        Ok(gate)
    }
}

impl SessionSource for Profiles {
    fn open(&self, client: Option<&str>) -> Result<Gate, SessionError> {
        self.gate_for(client)?.open(client)
    }

    fn default_view(&self) -> View {
        self.base.view().clone()
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
