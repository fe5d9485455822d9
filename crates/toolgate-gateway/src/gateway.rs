//! The upstream servers of a front door: started once, concurrently, each within its
//! start-up limit, and shared by every gate the front door builds (a profile's gate, a
//! rebuilt registry) through its [`GatewayHost`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use toolgate_core::Tool;
use toolgate_policy::settings::Settings;

use crate::config::{self, ServerConfig};
use crate::pins::{PinState, PinStore};
use crate::server::{EventSink, Server};
use crate::tool::{UpstreamTool, always_load, spec_for};
use crate::{GatewayError, RoomBase, names};

/// The runtime the upstream connections live on: the front door's, when it gave its own
/// ([`run_upstreams_on`]), else one of the gateway's own, whatever runtime (or none) the
/// front door runs. That one is one per process and never dropped: it is a thread, not
/// state — what a front door started is in its [`GatewayHost`] — and a runtime cannot be
/// dropped where the last gate holding an upstream tool may be dropped (inside another
/// runtime).
fn runtime() -> Result<tokio::runtime::Handle, GatewayError> {
    if let Some(shared) = SHARED.get() {
        return Ok(shared.clone());
    }
    static RT: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("toolgate-mcp-upstream")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map(|rt| rt.handle().clone())
    .map_err(|e| GatewayError::Runtime(e.clone()))
}

/// The front door's runtime, once it asked for its upstreams to share it.
static SHARED: OnceLock<tokio::runtime::Handle> = OnceLock::new();

/// Runs the upstream connections this process starts from now on on `runtime`, the front
/// door's own, instead of a thread of their own. For a front door whose calls run on one
/// worker thread (`toolgate serve` on stdio): a call to an upstream then goes out and its
/// answer comes back on that thread, where on a runtime of their own every call woke the
/// other thread to send it and was woken back by it with the answer (measured on the 2-core
/// machine, `bench/mcp_gateway.py`'s calls: the serve process's context switches 5 → 2 per
/// call, its CPU ≈250 → ≈215 µs per call, ≈90 µs less latency at p50).
///
/// `runtime` must be a multi-thread runtime (a server start called on it waits with
/// [`tokio::task::block_in_place`]) that outlives every use of the gateway in this process;
/// only the first call has an effect.
pub fn run_upstreams_on(runtime: &tokio::runtime::Runtime) -> Result<(), GatewayError> {
    let handle = runtime.handle();
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return Err(GatewayError::Runtime(
            "the upstreams can share only a multi-thread runtime".into(),
        ));
    }
    let _ = SHARED.set(handle.clone());
    Ok(())
}

/// Waits for `done` (the servers' starts, on the gateway's runtime). On a worker of a
/// multi-thread runtime (the front door's, shared with the upstreams) the worker hands its
/// other tasks over meanwhile, so the starts it waits for can run.
fn wait_for_starts(done: &std::sync::mpsc::Receiver<()>) {
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker {
        tokio::task::block_in_place(|| {
            let _ = done.recv();
        });
    } else {
        let _ = done.recv();
    }
}

/// The servers one front door started, keyed by project, configuration and room, and who
/// hears their [`Event`](crate::Event)s. Each front door (and each embedding of
/// toolgate-setup) has its own: two in one process never share a server, so one's room or
/// pins never leak into the other's.
#[derive(Default)]
pub struct GatewayHost {
    started: Mutex<HashMap<String, Arc<Server>>>,
    events: Option<EventSink>,
}

impl std::fmt::Debug for GatewayHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let started = self.started.lock().map(|s| s.len()).unwrap_or_default();
        f.debug_struct("GatewayHost")
            .field("started", &started)
            .finish_non_exhaustive()
    }
}

impl GatewayHost {
    /// A host whose servers report their events to `events`.
    pub fn with_events(events: EventSink) -> Self {
        Self {
            started: Mutex::default(),
            events: Some(events),
        }
    }

    /// Starts every server configured in `settings` that this host has not started yet,
    /// concurrently, and waits until each is connected, has failed or has used up its
    /// start-up limit. A server that fails is reported by its status, does not stop the
    /// others, and is tried again with backoff.
    ///
    /// `base_room` is the policy a sandboxed server's room starts from (the settings'
    /// filesystem rules and the permission rules' path denies); `None` starts from a plain
    /// workspace room.
    pub fn start(
        &self,
        settings: &Settings,
        sandbox_default: bool,
        base_room: Option<RoomBase>,
    ) -> Result<Gateway, GatewayError> {
        let configs = config::servers(settings, sandbox_default)?;
        self.start_configs(settings, configs, base_room)
    }

    /// [`GatewayHost::start`] for given configurations.
    pub fn start_configs(
        &self,
        settings: &Settings,
        configs: Vec<ServerConfig>,
        base_room: Option<RoomBase>,
    ) -> Result<Gateway, GatewayError> {
        if configs.is_empty() {
            return Ok(Gateway::default());
        }
        let room_key = format!("{base_room:?}");
        let base_room = base_room.map(Arc::new);
        let rt = runtime()?;
        let pins = config::state_dir(settings).map(|d| PinStore::new(&d));
        let project = settings.project.clone();
        let mut servers = Vec::new();
        let mut fresh = Vec::new();
        {
            let mut cache = self.started.lock().unwrap_or_else(|p| p.into_inner());
            for c in configs {
                let key = format!("{}\0{c:?}\0{room_key}", project.display());
                let server = cache.entry(key).or_insert_with(|| {
                    let s = Arc::new(Server::new(
                        c,
                        project.clone(),
                        pins.clone(),
                        base_room.clone(),
                        rt.clone(),
                        self.events.clone(),
                    ));
                    fresh.push(Arc::clone(&s));
                    s
                });
                servers.push(Arc::clone(server));
            }
        }
        if !fresh.is_empty() {
            let (tx, rx) = std::sync::mpsc::channel();
            let starting = fresh.clone();
            rt.spawn(async move {
                futures::future::join_all(starting.iter().map(|s| s.start())).await;
                let _ = tx.send(());
            });
            // Each start has its own limit, so this wait is bounded by the longest one.
            wait_for_starts(&rx);
            for server in &fresh {
                server.mark_listed();
            }
        }
        Ok(Gateway { servers })
    }
}

impl Gateway {
    /// [`GatewayHost::start`] on a host of its own, for a command that lists or approves
    /// and exits.
    pub fn start(
        settings: &Settings,
        sandbox_default: bool,
        base_room: Option<RoomBase>,
    ) -> Result<Self, GatewayError> {
        GatewayHost::default().start(settings, sandbox_default, base_room)
    }

    /// [`GatewayHost::start_configs`] on a host of its own.
    pub fn start_configs(
        settings: &Settings,
        configs: Vec<ServerConfig>,
        base_room: Option<RoomBase>,
    ) -> Result<Self, GatewayError> {
        GatewayHost::default().start_configs(settings, configs, base_room)
    }
}

/// One tool an upstream offers that is not in the registry, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The server.
    pub server: String,
    /// The upstream tool name.
    pub tool: String,
    /// Why.
    pub reason: String,
}

/// The upstream servers of a session.
#[derive(Debug, Default, Clone)]
pub struct Gateway {
    servers: Vec<Arc<Server>>,
}

impl Gateway {
    /// The gateway of these servers (running ones, from a [`GatewayHost`]).
    pub fn of(servers: Vec<Arc<Server>>) -> Self {
        Self { servers }
    }

    /// The servers, in configuration order.
    pub fn servers(&self) -> &[Arc<Server>] {
        &self.servers
    }

    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.config().name == name)
    }

    /// Every upstream tool as a registry entry, and the tools left out with the reason
    /// (a name that collides or is too long, an input schema that is not valid JSON Schema).
    pub fn tools(&self) -> (Vec<Arc<dyn Tool>>, Vec<Skipped>) {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut skipped = Vec::new();
        let mut taken: BTreeMap<String, (String, String)> = BTreeMap::new();
        for server in &self.servers {
            let cfg = server.config();
            for (def, pin) in server.tools() {
                let upstream = def.name.to_string();
                let skip = |reason: String| Skipped {
                    server: cfg.name.clone(),
                    tool: upstream.clone(),
                    reason,
                };
                let name = match names::tool_name(&cfg.name, &upstream) {
                    Ok(n) => n,
                    Err(e) => {
                        skipped.push(skip(e));
                        continue;
                    }
                };
                if let Some((s, t)) = taken.get(&name) {
                    skipped.push(skip(format!(
                        "its name `{name}` collides with `{t}` of server `{s}`; rename one of the servers"
                    )));
                    continue;
                }
                let mut spec = spec_for(name.clone(), &def, cfg.trusted, cfg.call_timeout);
                if pin != PinState::Approved {
                    // Not one word of a definition nobody approved reaches the model: its
                    // description and parameter descriptions are where a rug pull hides its
                    // instructions. Calls are refused until it is approved.
                    spec.description = format!(
                        "[disabled by toolgate: this tool's definition on MCP server `{}` is new \
                         or changed since it was approved; the user must review it (`toolgate \
                         mcp get {}`) and run `toolgate mcp approve {}`]",
                        cfg.name, cfg.name, cfg.name
                    );
                    spec.input_schema = serde_json::json!({"type": "object"});
                    spec.output_schema = None;
                }
                if let Err(e) = jsonschema::validator_for(&spec.input_schema) {
                    skipped.push(skip(format!(
                        "its input schema is not valid JSON Schema: {e}"
                    )));
                    continue;
                }
                taken.insert(name, (cfg.name.clone(), upstream.clone()));
                let always = always_load(cfg, &def);
                tools.push(Arc::new(
                    UpstreamTool::new(Arc::clone(server), upstream, spec).with_always_load(always),
                ));
            }
        }
        (tools, skipped)
    }
}
