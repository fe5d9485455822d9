//! Starting one upstream: the stdio child with its environment allow-list and a bounded
//! stderr log, the MCP handshake and the first `tools/list`, all within the start-up limit.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, Implementation, JsonRpcMessage,
    ListToolsRequest, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerJsonRpcMessage, ServerNotification, ServerResult,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt as _};
use tokio::io::AsyncBufReadExt as _;

use toolgate_sandbox::{NetworkMode, PathRules, SandboxPolicy};

use crate::config::{INHERITED_ENV, Network, ServerConfig, Transport};

/// What a sandboxed server's room starts from, as Bash's does: the filesystem policy of the
/// settings and the permission rules (`toolgate_setup::sandbox::room_policy`), and the
/// permission engine's deny and ask path rules, which each start of the server turns into
/// masks by walking the project ([`SandboxPolicy::add_rule_limits`]): a glob such as
/// `Read(**/.env)` hides every `.env` the walk finds, which the static policy cannot.
#[derive(Clone)]
pub struct RoomBase {
    /// The filesystem policy every room starts from (its `filesystem` part is used; the
    /// network and environment are the server's own).
    pub policy: SandboxPolicy,
    /// The engine's path rules; `None` adds no masks beyond `policy`'s.
    pub path_rules: Option<Arc<dyn PathRules>>,
}

impl std::fmt::Debug for RoomBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoomBase")
            .field("policy", &self.policy)
            .field("path_rules", &self.path_rules.is_some())
            .finish()
    }
}

impl From<SandboxPolicy> for RoomBase {
    fn from(policy: SandboxPolicy) -> Self {
        Self {
            policy,
            path_rules: None,
        }
    }
}

/// The most stderr kept per server (the tail; older lines are dropped).
pub const MAX_STDERR_BYTES: usize = 64 * 1024;

/// How long a server that failed its handshake gets to finish writing its stderr.
const STDERR_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Stderr lines quoted in a start-up failure.
const STDERR_LINES_QUOTED: usize = 3;

/// `message`, with the last lines the server wrote on stderr, if any.
fn with_stderr_tail(message: String, stderr: &StderrLog) -> String {
    let lines = stderr.lines();
    let tail: Vec<&str> = lines
        .iter()
        .rev()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .take(STDERR_LINES_QUOTED)
        .collect();
    if tail.is_empty() {
        return message;
    }
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    format!("{message}; its stderr ends: {}", tail.join(" | "))
}

/// The tail of a server's stderr.
#[derive(Debug, Default)]
pub struct StderrLog {
    lines: Mutex<(VecDeque<String>, usize)>,
}

impl StderrLog {
    fn push(&self, line: String) {
        let Ok(mut g) = self.lines.lock() else {
            return;
        };
        let (lines, bytes) = &mut *g;
        *bytes += line.len();
        lines.push_back(line);
        while *bytes > MAX_STDERR_BYTES {
            match lines.pop_front() {
                Some(old) => *bytes -= old.len(),
                None => break,
            }
        }
    }

    /// The kept lines.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .map(|g| g.0.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// What the client side of a connection hears from the server.
#[derive(Debug, Default)]
pub(crate) struct Listener {
    /// How many `notifications/tools/list_changed` the server sent. Counted as each comes
    /// off the wire, before the answer that follows it is read: a call made after that
    /// answer sees the count and reads the list again before it goes upstream (a rug pull
    /// announced in one answer is judged at the very next call).
    pub(crate) tool_changes: AtomicU64,
    /// Woken by `notifications/tools/list_changed`, for the task that reads the list again
    /// at once (so the gate's clients hear of new tools without waiting for a call).
    pub(crate) tools_changed_now: tokio::sync::Notify,
    /// Where each call in flight wants its `notifications/progress`.
    progress: Mutex<ProgressRoutes>,
}

/// Progress notifications by progress token, and those that came before their call
/// subscribed: rmcp picks a request's token when it sends it, so a fast server can report
/// progress before the caller learns the token. Tokens are never reused within a
/// connection, so an early note can only be for the call that subscribes to its token.
#[derive(Debug, Default)]
struct ProgressRoutes {
    routes: HashMap<ProgressToken, tokio::sync::mpsc::Sender<ProgressNotificationParam>>,
    early: VecDeque<ProgressNotificationParam>,
}

/// How many progress notifications of one call may wait to be relayed; more are dropped,
/// so a server that floods them cannot grow memory or stall the connection.
const PROGRESS_BACKLOG: usize = 16;

/// How many progress notifications for tokens nobody subscribed to yet are kept (for all
/// calls of a connection together; the oldest go first).
const EARLY_PROGRESS: usize = 64;

impl Listener {
    /// The progress notifications the server sends for `token`, until the returned
    /// subscription is dropped.
    pub(crate) fn progress_of(self: &Arc<Self>, token: ProgressToken) -> ProgressSubscription {
        let (tx, rx) = tokio::sync::mpsc::channel(PROGRESS_BACKLOG);
        let mut progress = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        let early = std::mem::take(&mut progress.early);
        for note in early {
            if note.progress_token == token {
                let _ = tx.try_send(note);
            } else {
                progress.early.push_back(note);
            }
        }
        progress.routes.insert(token.clone(), tx);
        drop(progress);
        ProgressSubscription {
            listener: Arc::clone(self),
            token,
            updates: rx,
        }
    }

    /// Looks at one message as it comes off the wire, before rmcp reads it: progress is
    /// relayed here because rmcp runs each notification's handler as a task of its own,
    /// which can run after the answer that follows it, and in any order (so "1, 2, 3"
    /// arrived as "3, 1, 2" and the earlier values were refused as not increasing). Seen
    /// here, progress is relayed in the server's order and before the answer.
    pub(crate) fn observe_raw(&self, bytes: &[u8]) {
        // Most messages are not notifications; only these are parsed twice.
        if memchr::memmem::find(bytes, b"notifications/").is_none() {
            return;
        }
        if let Ok(message) = serde_json::from_slice::<ServerJsonRpcMessage>(bytes) {
            self.observe(&message);
        }
    }

    /// [`Listener::observe_raw`] for a message already parsed.
    pub(crate) fn observe(&self, message: &ServerJsonRpcMessage) {
        let JsonRpcMessage::Notification(n) = message else {
            return;
        };
        match &n.notification {
            ServerNotification::ProgressNotification(p) => self.relay_progress(p.params.clone()),
            ServerNotification::ToolListChangedNotification(_) => {
                self.tool_changes.fetch_add(1, Ordering::SeqCst);
                self.tools_changed_now.notify_one();
            }
            _ => {}
        }
    }

    fn relay_progress(&self, note: ProgressNotificationParam) {
        let mut progress = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        match progress.routes.get(&note.progress_token) {
            Some(tx) => {
                let _ = tx.try_send(note);
            }
            // Its call may not have subscribed yet; a note for a call that ended, or a
            // token the server made up, ages out.
            None => {
                if progress.early.len() >= EARLY_PROGRESS {
                    progress.early.pop_front();
                }
                progress.early.push_back(note);
            }
        }
    }
}

/// The progress notifications of one call; unsubscribes when dropped.
pub(crate) struct ProgressSubscription {
    listener: Arc<Listener>,
    token: ProgressToken,
    pub(crate) updates: tokio::sync::mpsc::Receiver<ProgressNotificationParam>,
}

impl Drop for ProgressSubscription {
    fn drop(&mut self) {
        self.listener
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .routes
            .remove(&self.token);
    }
}

#[derive(Clone)]
pub(crate) struct GatewayClient {
    pub(crate) listener: Arc<Listener>,
}

/// Notifications are seen on the wire ([`Listener::observe_raw`]), not here: rmcp runs
/// these handlers as tasks that may run after the answers that follow them.
impl ClientHandler for GatewayClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// The command that starts a stdio server: in a sandbox room when the server's settings
/// (or the session's `sandbox.enabled`) ask for one — the workspace read-only unless the
/// server may `write`, the network per `network`, the home directory's credentials hidden.
fn stdio_command(
    server: &ServerConfig,
    command: &str,
    args: &[String],
    cwd: &Path,
    base_room: Option<&SandboxPolicy>,
) -> Result<(tokio::process::Command, Option<RoomProxy>), String> {
    if server.sandbox != Some(true) {
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args).current_dir(cwd);
        return Ok((cmd, None));
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let mut policy = SandboxPolicy::workspace_write(cwd, home.as_deref());
    // The files the settings and the permission rules keep from Bash's room are kept from
    // this one too (read denies hidden, write denies read-only): one policy for every room.
    // Network, environment and the rest are the server's own.
    if let Some(base) = base_room {
        policy.filesystem = base.filesystem.clone();
    }
    if !server.write {
        // Read-only, yet visible: the workspace stays a root of the room (a root outside
        // it could sit under the room's private /tmp) with a read-only carve-out over all
        // of it.
        policy.filesystem.write_denied.push(cwd.to_path_buf());
    }
    let mut proxy = None;
    policy.network.mode = match server.network {
        Network::None => NetworkMode::None,
        Network::Full => NetworkMode::Full,
        Network::Proxy => {
            let running = RoomProxy::start(server)?;
            policy.network.proxy_socket = Some(running.socket());
            proxy = Some(running);
            NetworkMode::Allowlist
        }
    };
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the sandbox helper: {e}"))?;
    let mut argv = vec![OsString::from(command)];
    argv.extend(args.iter().map(OsString::from));
    let std_cmd =
        toolgate_sandbox::command(&policy, &toolgate_sandbox::helper_exe(&exe), &argv, cwd)
            .map_err(|e| format!("cannot set up the sandbox: {e}"))?;
    Ok((tokio::process::Command::from(std_cmd), proxy))
}

/// `base`'s policy with the masks its path rules call for, found by walking the project
/// now: as for each Bash command, what the rules cover is what exists when the server starts
/// (a restart walks again). A walk past its bound refuses the server rather than starting
/// it without its masks. The walk may take a while on a large tree, so it runs off the
/// runtime the other servers' calls share.
async fn masked_room(base: &RoomBase) -> Result<SandboxPolicy, String> {
    let mut policy = base.policy.clone();
    let Some(rules) = base.path_rules.clone() else {
        return Ok(policy);
    };
    let walked =
        tokio::task::spawn_blocking(move || policy.add_rule_limits(&*rules).map(|_| policy))
            .await
            .map_err(|e| format!("cannot set up the sandbox: {e}"))?;
    walked.map_err(|e| format!("cannot set up the sandbox: {e}"))
}

/// The allow-list proxy of one server's room, on a socket in a private directory; both go
/// when the connection does.
pub(crate) struct RoomProxy {
    proxy: Option<toolgate_sandbox::Proxy>,
    dir: tempfile::TempDir,
}

impl RoomProxy {
    fn start(server: &ServerConfig) -> Result<Self, String> {
        // tempfile makes the directory 0700: only this user may connect to the socket.
        let dir = tempfile::Builder::new()
            .prefix("toolgate-mcp-proxy-")
            .tempdir()
            .map_err(|e| format!("network proxy: {e}"))?;
        let rules =
            toolgate_sandbox::DomainRules::new(&server.allowed_domains, &server.denied_domains);
        let name = server.name.clone();
        let socket = dir.path().join("proxy.sock");
        let proxy = toolgate_sandbox::Proxy::start(&socket, rules, move |d| {
            tracing::debug!(
                "MCP server `{name}`: proxy {} {}:{} allowed={}",
                d.method,
                d.host,
                d.port,
                d.allowed
            );
            true
        })
        .map_err(|e| format!("network proxy: {e}"))?;
        Ok(Self {
            proxy: Some(proxy),
            dir,
        })
    }

    fn socket(&self) -> std::path::PathBuf {
        self.dir.path().join("proxy.sock")
    }
}

impl Drop for RoomProxy {
    fn drop(&mut self) {
        // The proxy stops before its directory goes.
        drop(self.proxy.take());
    }
}

/// Most pages of `tools/list` read from one server: a cursor that never ends is refused.
const MAX_TOOL_PAGES: usize = 100;

/// Every tool the server offers now, page by page. Always asked of the server: rmcp would
/// answer from its response cache for as long as the server's own `ttlMs` says, and
/// whether a definition changed is exactly what the server must not decide.
pub(crate) async fn list_tools(
    peer: &rmcp::service::Peer<RoleClient>,
) -> Result<Vec<rmcp::model::Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_TOOL_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let page = match peer
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?
        {
            ServerResult::ListToolsResult(page) => page,
            _ => return Err("the answer to tools/list is not a tool list".into()),
        };
        tools.extend(page.tools);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tools),
        }
    }
    Err(format!(
        "tools/list went on for more than {MAX_TOOL_PAGES} pages"
    ))
}

/// A live connection.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, GatewayClient>,
    pub(crate) listener: Arc<Listener>,
    /// The `tool_changes` count the server's tool list was last read at.
    pub(crate) tools_as_of: AtomicU64,
    /// One reading of the tool list at a time; a call waits for one in progress.
    pub(crate) listing: tokio::sync::Mutex<()>,
    /// Kept so that dropping the connection stops the child (and its room's proxy).
    _child: Option<(tokio::process::Child, Option<RoomProxy>)>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The task that waits for this connection's list changes wakes, finds the
        // connection gone and ends.
        self.listener.tools_changed_now.notify_one();
    }
}

/// Starts `server` and reads its tools. Must run on the gateway's runtime (the child's
/// reaper and the service loop live there).
pub(crate) async fn connect(
    server: &ServerConfig,
    cwd: &std::path::Path,
    stderr: Arc<StderrLog>,
    base_room: Option<&RoomBase>,
) -> Result<(Connection, Vec<rmcp::model::Tool>), String> {
    let listener = Arc::new(Listener::default());
    let client = GatewayClient {
        listener: Arc::clone(&listener),
    };
    let (service, child) = match &server.transport {
        Transport::Stdio { command, args, env } => {
            let room = match base_room {
                Some(base) if server.sandbox == Some(true) => Some(masked_room(base).await?),
                _ => None,
            };
            let (mut cmd, proxy) = stdio_command(server, command, args, cwd, room.as_ref())?;
            cmd.env_clear()
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                // A sandboxed server stops when its stdin closes, so the room's helper can
                // clean up after it (a SIGKILLed helper leaves its placeholders behind).
                .kill_on_drop(server.sandbox != Some(true));
            for name in INHERITED_ENV {
                if let Some(v) = std::env::var_os(name) {
                    cmd.env(name, v);
                }
            }
            cmd.envs(env).env(crate::config::UPSTREAM_MARKER_ENV, "1");
            let mut child = cmd
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err("the child's stdio was not captured".into());
            };
            let reader = child.stderr.take().map(|err| {
                let stderr = Arc::clone(&stderr);
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(err).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        stderr.push(line);
                    }
                })
            });
            let stdout = crate::linecap::LineCap::new(stdout, crate::linecap::MAX_STDIO_LINE_BYTES)
                .observed_by(Arc::clone(&listener));
            let service = match client.serve((stdout, stdin)).await {
                Ok(service) => service,
                Err(e) => {
                    // What the server (or the sandbox helper that was to start it) said
                    // on its way out is the useful part: "No such file", a traceback.
                    if let Some(reader) = reader {
                        let _ = tokio::time::timeout(STDERR_GRACE, reader).await;
                    }
                    return Err(with_stderr_tail(format!("initialize failed: {e}"), &stderr));
                }
            };
            (service, Some((child, proxy)))
        }
        Transport::Http { url, headers } => {
            let service = crate::http::connect(client, url, headers).await?;
            (service, None)
        }
        Transport::Sse { url, headers } => {
            let service = crate::sse::connect(client, url, headers).await?;
            (service, None)
        }
    };
    // Changes announced before the first list is read are in that list.
    let tools_as_of = AtomicU64::new(listener.tool_changes.load(Ordering::SeqCst));
    let tools = list_tools(service.peer())
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let conn = Connection {
        service,
        listener,
        tools_as_of,
        listing: tokio::sync::Mutex::new(()),
        _child: child,
    };
    Ok((conn, tools))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn progress_line(token: i64, progress: u32) -> Vec<u8> {
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": progress}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn progress_is_routed_in_wire_order_even_before_its_call_subscribes() {
        let listener = Arc::new(Listener::default());
        // Before the call knows its token: kept.
        for p in [1, 2] {
            listener.observe_raw(&progress_line(7, p));
        }
        listener.observe_raw(&progress_line(8, 1));
        listener.observe_raw(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
        let mut sub = listener.progress_of(ProgressToken(NumberOrString::Number(7)));
        listener.observe_raw(&progress_line(7, 3));
        let got: Vec<f64> = std::iter::from_fn(|| sub.updates.try_recv().ok())
            .map(|n| n.progress)
            .collect();
        assert_eq!(got, [1.0, 2.0, 3.0]);
        // The other call's note waits for its own subscriber.
        let mut other = listener.progress_of(ProgressToken(NumberOrString::Number(8)));
        assert_eq!(other.updates.try_recv().map(|n| n.progress).ok(), Some(1.0));
        // Unclaimed notes are bounded.
        for p in 0..(EARLY_PROGRESS as u32 + 10) {
            listener.observe_raw(&progress_line(99, p));
        }
        let kept = listener.progress.lock().unwrap().early.len();
        assert_eq!(kept, EARLY_PROGRESS);
        // A dropped subscription stops routing to it.
        drop(sub);
        let routes = &listener.progress.lock().unwrap().routes;
        assert!(!routes.contains_key(&ProgressToken(NumberOrString::Number(7))));
    }
}
