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

/// The least time between two reports that a server's tools changed. A server can announce
/// changes as fast as it likes; each report rebuilds registries, tells every client and
/// writes an audit record, so faster changes are reported together, once per interval,
/// with the tools as they are then.
pub const TOOLS_CHANGED_INTERVAL: Duration = Duration::from_secs(1);

/// The least time between two readings of a server's tool list that it asked for with
/// `notifications/tools/list_changed`, so a server that announces changes without end
/// cannot keep the gateway busy listing. A call still reads the list before it goes
/// upstream whenever a change was announced.
const RELIST_INTERVAL: Duration = Duration::from_millis(100);

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

/// Something about an upstream that the front door acts on: rebuild the registry, write
/// an audit record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The server's tools are not the ones it offered before: it said so
    /// (`notifications/tools/list_changed`), it came up after a failed start, or it came
    /// back from a restart with other tools.
    ToolsChanged {
        /// The server.
        server: String,
    },
    /// A tool's definition is not the approved one (changed, or new): calls to it are
    /// refused until `toolgate mcp approve`. Reported once per definition.
    PinChanged {
        /// The server.
        server: String,
        /// The tool's upstream name.
        tool: String,
        /// The approved fingerprint; `None` for a tool that was never approved.
        was: Option<String>,
        /// The fingerprint of the definition the server offers now.
        now: String,
        /// Injection markers found in the new definition ([`crate::scan::scan_tool`]).
        flags: Vec<String>,
    },
}

/// Who hears a server's [`Event`]s.
pub type EventSink = Arc<dyn Fn(Event) + Send + Sync>;

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
    /// Who hears of new tools and changed pins.
    events: Option<EventSink>,
    /// The tools (name and fingerprint) last reported, to report only real changes.
    offered: Mutex<Option<Vec<(String, String)>>>,
    /// The pin changes already reported (tool, fingerprint), to report each once.
    reported_pins: Mutex<std::collections::BTreeSet<(String, String)>>,
    /// When the tools were last reported changed, and whether a report is waiting for the
    /// end of its interval ([`TOOLS_CHANGED_INTERVAL`]).
    tools_reported: Mutex<(Option<std::time::Instant>, bool)>,
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
        events: Option<EventSink>,
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
            events,
            offered: Mutex::new(None),
            reported_pins: Mutex::default(),
            tools_reported: Mutex::new((None, false)),
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
        let up = match &next {
            Live::Up(conn, _, _) => Some(Arc::clone(conn)),
            _ => None,
        };
        *self.lock() = next;
        self.restarting.store(false, Ordering::SeqCst);
        self.changed.send_modify(|n| *n += 1);
        match up {
            Some(conn) => {
                self.restarts.store(0, Ordering::SeqCst);
                self.watch_list_changes(&conn);
                self.report_changes();
            }
            // A server that could not start is tried again, like one that crashed: it may
            // have been waiting for a network, a database, a login.
            None => self.schedule_restart(),
        }
    }

    /// Reads the tool list again, as soon as the server says it changed, for as long as
    /// `conn` is the server's connection.
    fn watch_list_changes(self: &Arc<Self>, conn: &Arc<Connection>) {
        let server = Arc::downgrade(self);
        let weak_conn = Arc::downgrade(conn);
        let listener = Arc::clone(&conn.listener);
        self.runtime.spawn(async move {
            loop {
                listener.tools_changed_now.notified().await;
                let (Some(server), Some(conn)) = (server.upgrade(), weak_conn.upgrade()) else {
                    return;
                };
                if server.peer().is_none_or(|(_, c)| !Arc::ptr_eq(&c, &conn)) {
                    return;
                }
                if let Err(why) = server.refresh(&conn).await {
                    tracing::warn!("MCP server `{}`: {why}", server.config.name);
                }
                drop((server, conn));
                tokio::time::sleep(RELIST_INTERVAL).await;
            }
        });
    }

    /// Tells the event sink what changed since the last report: the tools offered, and
    /// definitions that are not the approved ones.
    fn report_changes(self: &Arc<Self>) {
        let Some(events) = &self.events else {
            return;
        };
        let (tools, states) = match &*self.lock() {
            Live::Up(_, tools, states) => (tools.clone(), states.clone()),
            _ => return,
        };
        let name = &self.config.name;
        let mut fresh_pins = Vec::new();
        {
            let mut reported = self
                .reported_pins
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for tool in &tools {
                if let Some(PinState::Changed { was, now }) = states.get(tool.name.as_ref())
                    && reported.insert((tool.name.to_string(), now.clone()))
                {
                    fresh_pins.push(Event::PinChanged {
                        server: name.clone(),
                        tool: tool.name.to_string(),
                        was: was.clone(),
                        now: now.clone(),
                        flags: crate::scan::scan_tool(tool),
                    });
                }
            }
        }
        for event in fresh_pins {
            events(event);
        }
        let mut offered: Vec<(String, String)> = tools
            .iter()
            .map(|t| (t.name.to_string(), fingerprint(t)))
            .collect();
        offered.sort();
        let changed = {
            let mut last = self
                .offered
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let first = last.is_none();
            let changed = last.as_ref() != Some(&offered);
            *last = Some(offered);
            // The first list is the one the registry is built from: nothing to tell.
            changed && !first
        };
        if changed {
            self.announce_tools_changed();
        }
    }

    /// Reports that the tools changed, at most once per [`TOOLS_CHANGED_INTERVAL`]: a change
    /// within the interval is reported at its end.
    fn announce_tools_changed(self: &Arc<Self>) {
        let Some(events) = &self.events else {
            return;
        };
        let now = std::time::Instant::now();
        let wait = {
            let mut reported = self
                .tools_reported
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match reported.0 {
                Some(last) if now.duration_since(last) < TOOLS_CHANGED_INTERVAL => {
                    if reported.1 {
                        return;
                    }
                    reported.1 = true;
                    Some(TOOLS_CHANGED_INTERVAL - now.duration_since(last))
                }
                _ => {
                    reported.0 = Some(now);
                    None
                }
            }
        };
        let Some(wait) = wait else {
            events(Event::ToolsChanged {
                server: self.config.name.clone(),
            });
            return;
        };
        let me = Arc::downgrade(self);
        self.runtime.spawn(async move {
            tokio::time::sleep(wait).await;
            let Some(me) = me.upgrade() else {
                return;
            };
            *me.tools_reported
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                (Some(std::time::Instant::now()), false);
            if let Some(events) = &me.events {
                events(Event::ToolsChanged {
                    server: me.config.name.clone(),
                });
            }
        });
    }

    /// The registry was built now: a server that is not up yet offered no tools to it, so
    /// its tools are news when it comes up.
    pub(crate) fn mark_listed(&self) {
        let mut last = self
            .offered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.is_none() {
            *last = Some(Vec::new());
        }
    }

    /// Waits (at most `limit`) for a restart in progress to finish; returns at once when
    /// none is.
    pub(crate) async fn await_restart(&self, limit: Duration) {
        // Every call passes here: the common case answers without subscribing.
        if !self.restarting.load(Ordering::SeqCst) {
            return;
        }
        let mut rx = self.changed.subscribe();
        // A restart that ended before the subscription is not waited for.
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
        // The approved case, every call's, copies nothing; only a tool that waits for its
        // approval has the definitions copied, to check the store outside the lock.
        let (conn, tools) = match &*self.lock() {
            Live::Up(_, _, states) if states.get(tool) == Some(&PinState::Approved) => {
                return Some(PinState::Approved);
            }
            Live::Up(c, tools, _) => (Arc::clone(c), tools.clone()),
            _ => return None,
        };
        let states = self.pin_states(&tools);
        let now = states.get(tool).cloned();
        let approved_since = matches!(now, Some(PinState::Approved));
        if let Live::Up(c, _, held) = &mut *self.lock()
            && Arc::ptr_eq(c, &conn)
        {
            *held = states;
        }
        // Approved in another process (`toolgate mcp approve`): the registry may
        // now carry the real definition instead of the disabled one.
        if approved_since && let Some(events) = &self.events {
            events(Event::ToolsChanged {
                server: self.config.name.clone(),
            });
        }
        now
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
        self.schedule_restart();
    }

    /// Starts the server again after a backoff that doubles with each failed attempt.
    /// Calls wait for the first attempt after a crash only ([`Server::await_restart`]);
    /// while later attempts fail they are refused at once.
    fn schedule_restart(self: &Arc<Self>) {
        let n = self.restarts.fetch_add(1, Ordering::SeqCst).min(16);
        let wait = RESTART_BACKOFF_START
            .saturating_mul(1 << n)
            .min(RESTART_BACKOFF_MAX);
        // Weak: a gateway that is dropped stops restarting its servers.
        let me = Arc::downgrade(self);
        self.runtime.spawn(async move {
            tokio::time::sleep(wait).await;
            if let Some(me) = me.upgrade() {
                me.start().await;
            }
        });
    }

    /// Reads the tool list again if the server announced a change since it was last read
    /// (`notifications/tools/list_changed`), or waits for a reading in progress. An error
    /// means the list the server now offers is not known: a call must not go upstream on
    /// the old approval.
    pub(crate) async fn refresh(self: &Arc<Self>, conn: &Arc<Connection>) -> Result<(), String> {
        let current = || conn.listener.tool_changes.load(Ordering::SeqCst);
        if current() == conn.tools_as_of.load(Ordering::SeqCst) {
            return Ok(());
        }
        let _one = conn.listing.lock().await;
        let seen = current();
        if seen == conn.tools_as_of.load(Ordering::SeqCst) {
            return Ok(());
        }
        let tools = crate::connect::list_tools(conn.service.peer())
            .await
            .map_err(|e| format!("its tools changed and could not be listed again: {e}"))?;
        let states = self.pin_states(&tools);
        let current = {
            let mut live = self.lock();
            match &mut *live {
                Live::Up(c, held_tools, held_states) if Arc::ptr_eq(c, conn) => {
                    *held_tools = tools;
                    *held_states = states;
                    true
                }
                _ => false,
            }
        };
        conn.tools_as_of.store(seen, Ordering::SeqCst);
        if current {
            self.report_changes();
        }
        Ok(())
    }
}
