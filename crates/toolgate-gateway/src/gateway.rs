//! The set of upstream servers of a process: started once, concurrently, each within its
//! start-up limit, and shared by every gate the process builds (a policy reload does not
//! restart them).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use toolgate_core::Tool;
use toolgate_policy::settings::Settings;

use crate::config::{self, ServerConfig};
use crate::pins::PinStore;
use crate::server::Server;
use crate::tool::{UpstreamTool, always_load, spec_for};
use crate::{GatewayError, RoomBase, names};

/// The runtime the upstream connections live on, whatever runtime (or none) the front
/// door runs: started on first use, for the life of the process.
fn runtime() -> Result<&'static tokio::runtime::Runtime, GatewayError> {
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
    .map_err(|e| GatewayError::Runtime(e.clone()))
}

/// Servers already started in this process, by project and configuration.
fn started() -> &'static Mutex<HashMap<String, Arc<Server>>> {
    static STARTED: OnceLock<Mutex<HashMap<String, Arc<Server>>>> = OnceLock::new();
    STARTED.get_or_init(Default::default)
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
    /// Starts every server configured in `settings` that is not running yet, concurrently,
    /// and waits until each is connected, has failed or has used up its start-up limit.
    /// A server that fails is reported by its status; it does not stop the others.
    ///
    /// `base_room` is what a sandboxed server's room starts from (the settings' filesystem
    /// rules and the permission rules' path denies, and the engine's path rules to walk
    /// for masks: [`RoomBase`]); `None` starts from a plain workspace room.
    pub fn start(
        settings: &Settings,
        sandbox_default: bool,
        base_room: Option<RoomBase>,
    ) -> Result<Self, GatewayError> {
        let configs = config::servers(settings, sandbox_default)?;
        Self::start_configs(settings, configs, base_room)
    }

    /// [`Gateway::start`] for given configurations.
    pub fn start_configs(
        settings: &Settings,
        configs: Vec<ServerConfig>,
        base_room: Option<RoomBase>,
    ) -> Result<Self, GatewayError> {
        let base_room = base_room.map(Arc::new);
        if configs.is_empty() {
            return Ok(Self::default());
        }
        let rt = runtime()?;
        let pins = config::state_dir(settings).map(|d| PinStore::new(&d));
        let project = settings.project.clone();
        let mut servers = Vec::new();
        let mut fresh = Vec::new();
        {
            let mut cache = started().lock().unwrap_or_else(|p| p.into_inner());
            for c in configs {
                let key = format!("{}\0{c:?}", project.display());
                let server = cache.entry(key).or_insert_with(|| {
                    let s = Arc::new(Server::new(
                        c,
                        project.clone(),
                        pins.clone(),
                        base_room.clone(),
                        rt.handle().clone(),
                    ));
                    fresh.push(Arc::clone(&s));
                    s
                });
                servers.push(Arc::clone(server));
            }
        }
        if !fresh.is_empty() {
            let (tx, rx) = std::sync::mpsc::channel();
            rt.spawn(async move {
                futures::future::join_all(fresh.iter().map(|s| s.start())).await;
                let _ = tx.send(());
            });
            // Each start has its own limit, so this wait is bounded by the longest one.
            let _ = rx.recv();
        }
        Ok(Self { servers })
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
            for (def, _) in server.tools() {
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
                let spec = spec_for(name.clone(), &def, cfg.trusted, cfg.call_timeout);
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
