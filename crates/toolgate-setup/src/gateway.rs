//! Upstream MCP servers in the registry: every front door that builds a registry here gets
//! the tools of the servers in `mcpServers` and `.mcp.json` (see toolgate-gateway), started
//! once per front door ([`Upstreams`]).
//!
//! The registry follows the servers while the front door runs: when a server's tools
//! change (it said `notifications/tools/list_changed`, it came up after a failed start),
//! every gate built here gets a new registry ([`toolgate_core::ToolsHandle::replace`]),
//! which `toolgate serve` passes on to its clients as `notifications/tools/list_changed`.
//! Each change, and each tool definition that no longer matches its pin, is an audit
//! record (`kind: "mcp"`, docs/audit.md).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde_json::{Value, json};
use toolgate_core::deferral::is_mcp_tool;
use toolgate_core::stages::AuditSink;
use toolgate_core::{Registry, Snapshot, Tool, ToolsHandle};
use toolgate_gateway::{
    Event, Gateway, GatewayHost, RoomBase, Server, ServerConfig, Status, Transport,
};
use toolgate_policy::Settings;
use toolgate_protocol::{CallRecord, CallStatus, ErrorCode, RecordKind};
use toolgate_sandbox::PathRules;

use crate::SetupError;
use crate::sandbox::EnginePathRules;

/// The upstream servers of one front door, and the gates whose registries hold their
/// tools. Cloning shares them.
#[derive(Clone)]
pub(crate) struct Upstreams {
    host: Arc<GatewayHost>,
    tracker: Arc<Tracker>,
}

impl Default for Upstreams {
    fn default() -> Self {
        Self::new(None, None)
    }
}

/// The gates to update when tools change. Only weak references: a gate that is gone is
/// forgotten, and the servers (which hold this tracker through their event sink) never
/// keep a gate alive.
struct Tracker {
    audit: Option<Arc<dyn AuditSink>>,
    snapshot: Option<PathBuf>,
    gates: Mutex<Vec<TrackedGate>>,
    /// One rebuild at a time: two servers changing at once must not have the older
    /// rebuild put in force after the newer one.
    rebuilding: Mutex<()>,
    /// The session id the records are written under: the first gate's.
    session: Mutex<Option<String>>,
}

struct TrackedGate {
    handle: toolgate_core::live_tools::WeakToolsHandle,
    servers: Vec<Weak<Server>>,
}

impl Upstreams {
    /// Upstreams whose events are recorded in `audit`, for gates pinned to `snapshot`.
    pub(crate) fn new(audit: Option<Arc<dyn AuditSink>>, snapshot: Option<PathBuf>) -> Self {
        let tracker = Arc::new(Tracker {
            audit,
            snapshot,
            gates: Mutex::default(),
            rebuilding: Mutex::default(),
            session: Mutex::default(),
        });
        let sink = Arc::clone(&tracker);
        let host = GatewayHost::with_events(Arc::new(move |event| sink.on_event(event)));
        Self {
            host: Arc::new(host),
            tracker,
        }
    }

    /// What a gate built here must keep alive: the host, which holds the servers that are
    /// down (so they are tried again and their tools can join later).
    pub(crate) fn keep_alive(&self) -> Arc<dyn std::any::Any + Send + Sync> {
        Arc::clone(&self.host) as Arc<dyn std::any::Any + Send + Sync>
    }

    /// Starts (or finds running) the servers of `settings`; see [`start`].
    pub(crate) fn start(&self, settings: &Settings) -> Result<Gateway, SetupError> {
        start_on(&self.host, settings)
    }

    /// Updates `handle`'s registry from now on when the tools of `gateway`'s servers change.
    pub(crate) fn track(&self, handle: &ToolsHandle, gateway: &Gateway, session: &str) {
        if gateway.servers().is_empty() {
            return;
        }
        self.tracker
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(|| session.to_owned());
        let mut gates = self
            .tracker
            .gates
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        gates.retain(|g| g.handle.upgrade().is_some());
        gates.push(TrackedGate {
            handle: handle.downgrade(),
            servers: gateway.servers().iter().map(Arc::downgrade).collect(),
        });
    }
}

impl Tracker {
    fn on_event(&self, event: Event) {
        match &event {
            Event::ToolsChanged { server } => {
                self.refresh_registries();
                self.record(
                    server,
                    json!({"event": "tools_changed", "server": server}),
                    None,
                );
            }
            Event::PinChanged {
                server,
                tool,
                was,
                now,
                flags,
            } => {
                let what = if was.is_some() {
                    "changed since it was approved"
                } else {
                    "is new and not approved"
                };
                tracing::warn!(
                    "MCP server `{server}`: the definition of `{tool}` {what}; calls to it are \
                     refused until `toolgate mcp approve {server}`"
                );
                let input = json!({"event": "pin_changed", "server": server, "tool": tool,
                                   "was": was, "now": now, "flags": flags});
                let name = toolgate_gateway::names::tool_name(server, tool).ok();
                self.record(server, input, name.or(Some(String::new())));
            }
        }
    }

    /// Gives every tracked gate a registry with its servers' tools as they are now.
    fn refresh_registries(&self) {
        let _one = self
            .rebuilding
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let gates: Vec<(ToolsHandle, Gateway)> = {
            let mut gates = self.gates.lock().unwrap_or_else(PoisonError::into_inner);
            gates.retain(|g| g.handle.upgrade().is_some());
            gates
                .iter()
                .filter_map(|g| {
                    let handle = g.handle.upgrade()?;
                    let servers = g.servers.iter().filter_map(Weak::upgrade).collect();
                    Some((handle, Gateway::of(servers)))
                })
                .collect()
        };
        for (handle, gateway) in gates {
            match rebuilt(&handle.registry(), &gateway, self.snapshot.as_deref()) {
                Ok(registry) => {
                    handle.replace(registry);
                }
                Err(e) => tracing::warn!(
                    "the tools of the MCP servers changed, but the registry could not be \
                     rebuilt ({e}); the tools in force are kept"
                ),
            }
        }
    }

    /// Writes a `kind: "mcp"` record; `refused` names the tool a pin change disables.
    fn record(&self, server: &str, input: Value, refused: Option<String>) {
        let Some(audit) = &self.audit else {
            return;
        };
        let session = self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_default();
        let record = CallRecord {
            kind: RecordKind::Mcp,
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            session_id: session,
            call_id: format!("mcp-{}", uuid::Uuid::new_v4()),
            client: None,
            parent_call_id: None,
            mode_change: None,
            tool: refused.clone().unwrap_or_default(),
            input,
            stages: Vec::new(),
            hooks: Vec::new(),
            verdict: None,
            status: if refused.is_some() {
                CallStatus::Error
            } else {
                CallStatus::Ok
            },
            code: refused.is_some().then_some(ErrorCode::Denied),
            duration_us: 0,
            input_bytes: 0,
            output_bytes: 0,
        };
        let receipt = audit.record(&record);
        let server = server.to_owned();
        let report = move |r: Result<(), toolgate_core::stages::AuditFailure>| {
            if let Err(e) = r {
                tracing::error!(error = %e, "MCP server `{server}`: the event could not be recorded in the audit log");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move { report(receipt.await) });
            }
            Err(_) => report(receipt.wait()),
        }
    }
}

/// `current` with its MCP tools replaced by `gateway`'s tools as they are now; the
/// built-in tools stay the very same (with their state).
fn rebuilt(
    current: &Registry,
    gateway: &Gateway,
    snapshot: Option<&std::path::Path>,
) -> Result<Registry, SetupError> {
    let mut builder = Registry::builder();
    for entry in current.entries() {
        if !is_mcp_tool(&entry.spec().name) {
            builder = builder.register_arc(Arc::clone(entry.tool()));
        }
    }
    for tool in listed_tools(gateway) {
        builder = builder.register_arc(tool);
    }
    if let Some(path) = snapshot {
        builder = builder.snapshot(Snapshot::load(path)?);
    }
    Ok(builder.build()?)
}

/// The upstream tools of `gateway`. A server that failed to start, and a tool left out
/// (bad schema, name collision), is logged; it stops nothing.
pub(crate) fn listed_tools(gateway: &Gateway) -> Vec<Arc<dyn Tool>> {
    for server in gateway.servers() {
        match server.status() {
            Status::Failed(why) => {
                tracing::warn!("MCP server `{}` failed: {why}", server.config().name);
            }
            Status::WaitsForTrust => {
                tracing::warn!(
                    "MCP server `{}` waits for `toolgate trust`",
                    server.config().name
                );
            }
            Status::Connected(_) => {}
        }
    }
    let (tools, skipped) = gateway.tools();
    for s in skipped {
        tracing::warn!(
            "MCP server `{}`: tool `{}` left out: {}",
            s.server,
            s.tool,
            s.reason
        );
    }
    tools
}

/// Starts the upstream servers of `settings` on a host of their own, for a command that
/// lists or approves them and exits (`toolgate mcp`); see [`start_on`].
pub fn start(settings: &Settings) -> Result<Gateway, SetupError> {
    start_on(&GatewayHost::default(), settings)
}

/// Starts (or finds running on `host`) the upstream servers of `settings`. A stdio server
/// runs in a sandbox room when its own `sandbox` key says so, else when the sandbox is on
/// for Bash ([`crate::sandbox_state`]): on by default wherever the kernel supports it.
///
/// A server's room starts from the same policy as Bash's ([`crate::sandbox::room_policy`]):
/// the settings' `sandbox.filesystem` and the permission rules' path denies reach it too,
/// and the engine's deny and ask path rules are walked for masks at each start, as for each
/// Bash command ([`EnginePathRules`]).
fn start_on(host: &GatewayHost, settings: &Settings) -> Result<Gateway, SetupError> {
    let on = crate::sandbox_state(settings).on;
    let configs = toolgate_gateway::config::servers(settings, on)?;
    let base = room_base(settings, &configs)?;
    Ok(host.start_configs(settings, configs, Some(base))?)
}

/// The room the sandboxed servers among `configs` start from. The engine is compiled from
/// the settings' rules without a profile — the rules `room_policy` reads, since the servers
/// are shared by every profile of the process — and only when some server has a room.
fn room_base(settings: &Settings, configs: &[ServerConfig]) -> Result<RoomBase, SetupError> {
    let policy = crate::sandbox::room_policy(settings, &[])?;
    let roomed = configs
        .iter()
        .any(|c| c.sandbox == Some(true) && matches!(c.transport, Transport::Stdio { .. }));
    let path_rules: Option<Arc<dyn PathRules>> = if roomed {
        let engine = settings.engine_builder(None).build()?;
        Some(Arc::new(EnginePathRules(Arc::new(engine))))
    } else {
        None
    };
    Ok(RoomBase { policy, path_rules })
}

/// What `toolgate config` says about the MCP servers, without starting them: one line per
/// server, naming those that wait for `toolgate trust`.
pub fn config_status(settings: &Settings) -> String {
    let servers =
        match toolgate_gateway::config::servers(settings, crate::sandbox_state(settings).on) {
            Ok(s) => s,
            Err(e) => return format!("mcp      error: {e}\n"),
        };
    let mut text = String::new();
    for s in servers {
        let state = match (&s.invalid, &s.waits) {
            (Some(why), _) => format!("invalid: {why}"),
            (None, Some(_)) => "waits for `toolgate trust`".to_owned(),
            (None, None) => "starts with each session".to_owned(),
        };
        text.push_str(&format!(
            "mcp      {} ({} {}) from {}: {state}\n",
            s.name,
            s.transport.kind(),
            s.transport.target(),
            s.origin.label
        ));
    }
    text
}
