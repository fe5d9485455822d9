//! One upstream server for the life of the process: its connection, its current tool
//! definitions and their pin states, and restarts with backoff after a crash.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::service::{Peer, RoleClient};

use crate::config::ServerConfig;
use crate::connect::{Connection, StderrLog, connect};
use crate::pins::{PinState, PinStore, fingerprint};

/// The first wait before a crashed server is started again; it doubles per failed start.
pub const RESTART_BACKOFF_START: Duration = Duration::from_millis(500);

/// The longest wait between restarts.
pub const RESTART_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Connected, with this many tools.
    Connected(usize),
    /// Could not start (or crashed and is being restarted): why.
    Failed(String),
    /// A project server that waits for `toolgate trust`.
    WaitsForTrust,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Connected(n) => write!(f, "connected ({n} tools)"),
            Status::Failed(why) => write!(f, "failed: {why}"),
            Status::WaitsForTrust => f.write_str("waits for `toolgate trust`"),
        }
    }
}

pub(crate) enum Live {
    /// Connected: the connection, its current tool definitions and their pin states.
    Up(
        Arc<Connection>,
        Vec<rmcp::model::Tool>,
        BTreeMap<String, PinState>,
    ),
    Down(String),
    Waiting,
}

/// One upstream server.
pub struct Server {
    pub(crate) config: ServerConfig,
    pub(crate) project: PathBuf,
    pub(crate) pins: Option<PinStore>,
    /// What a sandboxed server's room starts from (see `Gateway::start`).
    pub(crate) base_room: Option<Arc<crate::RoomBase>>,
    pub(crate) live: Mutex<Live>,
    pub(crate) stderr: Arc<StderrLog>,
    restarts: AtomicU32,
    /// Set while a restart after a crash is scheduled or running.
    restarting: AtomicBool,
    /// Bumped whenever the state changes, for calls waiting on a restart.
    changed: tokio::sync::watch::Sender<u64>,
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.config.name)
            .finish()
    }
}

impl Server {
    pub(crate) fn new(
        config: ServerConfig,
        project: PathBuf,
        pins: Option<PinStore>,
        base_room: Option<Arc<crate::RoomBase>>,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        let live = if config.waits.is_some() {
            Live::Waiting
        } else if let Some(why) = &config.invalid {
            Live::Down(why.clone())
        } else {
            Live::Down("not started".into())
        };
        Self {
            config,
            project,
            pins,
            base_room,
            live: Mutex::new(live),
            stderr: Arc::new(StderrLog::default()),
            restarts: AtomicU32::new(0),
            restarting: AtomicBool::new(false),
            changed: tokio::sync::watch::Sender::new(0),
            runtime,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The tail of the server's stderr.
    pub fn stderr(&self) -> Vec<String> {
        self.stderr.lines()
    }

    /// Where the server stands.
    pub fn status(&self) -> Status {
        match &*self.lock() {
            Live::Up(_, tools, _) => Status::Connected(tools.len()),
            Live::Down(why) => Status::Failed(why.clone()),
            Live::Waiting => Status::WaitsForTrust,
        }
    }

    /// The current definitions with their pin states (empty unless connected).
    pub fn tools(&self) -> Vec<(rmcp::model::Tool, PinState)> {
        match &*self.lock() {
            Live::Up(_, tools, states) => tools
                .iter()
                .map(|t| {
                    let state = states
                        .get(t.name.as_ref())
                        .cloned()
                        .unwrap_or(PinState::Approved);
                    (t.clone(), state)
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Approves the server's current tool definitions (`toolgate mcp approve`): they become
    /// the pinned ones. Returns how many were pinned.
    pub fn approve(&self) -> Result<usize, crate::GatewayError> {
        let tools = match &*self.lock() {
            Live::Up(_, tools, _) => tools.clone(),
            _ => {
                return Err(crate::GatewayError::Config(format!(
                    "MCP server `{}` is not connected ({}); nothing to approve",
                    self.config.name,
                    self.status()
                )));
            }
        };
        let Some(store) = &self.pins else {
            return Err(crate::GatewayError::Pins(
                "no configuration directory (set XDG_CONFIG_HOME or HOME)".into(),
            ));
        };
        let defs: Vec<(String, String)> = tools
            .iter()
            .map(|t| (t.name.to_string(), fingerprint(t)))
            .collect();
        store.approve(&self.pin_key(), &defs)?;
        if let Live::Up(_, _, states) = &mut *self.lock() {
            for state in states.values_mut() {
                *state = PinState::Approved;
            }
        }
        Ok(defs.len())
    }

    /// The key of this server's pins.
    pub fn pin_key(&self) -> String {
        PinStore::key(&self.project, &self.config.name)
    }

    fn pin_states(&self, tools: &[rmcp::model::Tool]) -> BTreeMap<String, PinState> {
        let defs: Vec<(String, String)> = tools
            .iter()
            .map(|t| (t.name.to_string(), fingerprint(t)))
            .collect();
        match &self.pins {
            Some(store) => match store.check(&self.pin_key(), &defs) {
                Ok(states) => states,
                // An unreadable store approves nothing: every tool waits.
                Err(e) => defs
                    .into_iter()
                    .map(|(n, now)| {
                        (
                            n,
                            PinState::Changed {
                                was: None,
                                now: format!("{now} ({e})"),
                            },
                        )
                    })
                    .collect(),
            },
            None => defs
                .into_iter()
                .map(|(n, _)| (n, PinState::Approved))
                .collect(),
        }
    }

    /// Starts the server (on the gateway runtime) within its start-up limit.
    pub(crate) async fn start(self: &Arc<Self>) {
        if matches!(*self.lock(), Live::Waiting) || self.config.invalid.is_some() {
            return;
        }
        if let Some(why) = crate::config::refuse_loop(&self.config) {
            *self.lock() = Live::Down(why);
            return;
        }
        let me = Arc::clone(self);
        let limit = self.config.startup_timeout;
        let started = self
            .runtime
            .spawn(async move {
                let cwd = me.project.clone();
                let room = me.base_room.as_deref();
                tokio::time::timeout(
                    limit,
                    connect(&me.config, &cwd, Arc::clone(&me.stderr), room),
                )
                .await
            })
            .await;
        let next = match started {
            Ok(Ok(Ok((conn, tools)))) => {
                let states = self.pin_states(&tools);
                Live::Up(Arc::new(conn), tools, states)
            }
            Ok(Ok(Err(why))) => Live::Down(why),
            Ok(Err(_)) => Live::Down(format!(
                "no answer to initialize within {} s",
                limit.as_secs()
            )),
            Err(e) => Live::Down(format!("start-up task failed: {e}")),
        };
        *self.lock() = next;
        self.restarting.store(false, Ordering::SeqCst);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Waits (at most `limit`) for a restart in progress to finish; returns at once when
    /// none is.
    pub(crate) async fn await_restart(&self, limit: Duration) {
        let mut rx = self.changed.subscribe();
        if !self.restarting.load(Ordering::SeqCst) {
            return;
        }
        let _ = tokio::time::timeout(limit, rx.changed()).await;
    }

    /// The connection's peer, when connected.
    pub(crate) fn peer(&self) -> Option<(Peer<RoleClient>, Arc<Connection>)> {
        match &*self.lock() {
            Live::Up(c, _, _) => Some((c.service.peer().clone(), Arc::clone(c))),
            _ => None,
        }
    }

    /// The pin state of one upstream tool (re-reading the store when it is not approved,
    /// so an approval from `toolgate mcp approve` applies without a restart).
    pub(crate) fn pin_state(&self, tool: &str) -> Option<PinState> {
        let (conn, tools, state) = match &*self.lock() {
            Live::Up(c, tools, states) => (Arc::clone(c), tools.clone(), states.get(tool).cloned()),
            _ => return None,
        };
        match state {
            Some(PinState::Approved) => Some(PinState::Approved),
            _ => {
                let states = self.pin_states(&tools);
                let now = states.get(tool).cloned();
                if let Live::Up(c, _, held) = &mut *self.lock()
                    && Arc::ptr_eq(c, &conn)
                {
                    *held = states;
                }
                now
            }
        }
    }

    /// The connection `conn` broke: mark the server down and start it again after a
    /// backoff that grows with each restart.
    pub(crate) fn crashed(self: &Arc<Self>, conn: &Arc<Connection>, why: String) {
        {
            let mut live = self.lock();
            match &*live {
                Live::Up(c, _, _) if Arc::ptr_eq(c, conn) => {
                    self.restarting.store(true, Ordering::SeqCst);
                    *live = Live::Down(why);
                }
                _ => return,
            }
        }
        let n = self.restarts.fetch_add(1, Ordering::SeqCst).min(16);
        let wait = RESTART_BACKOFF_START
            .saturating_mul(1 << n)
            .min(RESTART_BACKOFF_MAX);
        let me = Arc::clone(self);
        self.runtime.spawn(async move {
            tokio::time::sleep(wait).await;
            me.start().await;
        });
    }

    /// Reads the tool list again after `notifications/tools/list_changed`.
    pub(crate) async fn refresh(self: &Arc<Self>, conn: &Arc<Connection>) {
        if !conn.listener.tools_changed.swap(false, Ordering::SeqCst) {
            return;
        }
        let Ok(tools) = conn.service.peer().list_all_tools().await else {
            return;
        };
        let states = self.pin_states(&tools);
        if let Live::Up(c, held_tools, held_states) = &mut *self.lock()
            && Arc::ptr_eq(c, conn)
        {
            *held_tools = tools;
            *held_states = states;
        }
    }
}
