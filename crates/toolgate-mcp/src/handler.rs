//! The MCP server handler: `tools/list` from the session's view, `tools/call` through the
//! gate, and the `input_required` round trip of approvals on 2026-07-28 ([`crate::mrtr`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CustomRequest,
    CustomResult, ElicitRequest, ElicitResult, GetPromptRequestParams, GetPromptResponse,
    Implementation, InitializeRequestParams, InitializeResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_core::Gate;
use toolgate_protocol::{CallError, CallResult, ErrorCode, Stage, ToolCall};

use crate::convert;
use crate::elicit::{Answered, Asker, Round};
use crate::http::Principal;
use crate::mrtr::{APPROVAL_INPUT, Approvals, Binding, StateError, digest};
use crate::search_mode::{self, ToolsMode};
use crate::source::{ClientIdentity, SessionSource};

/// How often a long call reports progress to a client that asked for it (with a
/// `progressToken`): often enough that clients with idle timeouts keep waiting, rarely
/// enough to cost nothing.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// Instructions sent to the client with `initialize`.
const INSTRUCTIONS: &str = "Tools behind toolgate: every call is checked (schema, hooks, \
permission rules, sandbox) and audited. A result with isError and _meta \
\"toolgate/code\": \"denied\" is a policy decision: do not retry it unchanged. \
\"invalid_input\" and \"invalid_request\" mean the arguments need fixing.";

/// Where a handler keeps its gate session.
#[derive(Clone)]
enum Slot {
    /// One session for the connection (stdio, an HTTP session), opened on first use, with
    /// the profile its opener authenticated as: every later request must carry the same.
    Connection(Arc<Mutex<Option<Opened>>>),
    /// Sessionless requests (2026-07-28 HTTP): one session per identity (authenticated
    /// profile and client name), shared by every request that carries it.
    ByClient(ByName),
}

/// A connection's session and the profile its opener authenticated as.
type Opened = (Gate, Option<String>);

/// Gate sessions by client identity, with when each was last used.
type ByName = Arc<Mutex<HashMap<ClientIdentity, (Gate, Instant)>>>;

/// Most sessionless clients (distinct identities) kept at once; beyond this the least
/// recently used session is ended, so clients inventing names cannot grow memory.
pub const MAX_SESSIONLESS_CLIENTS: usize = 64;

/// An MCP server in front of a gate. One value serves one connection; clones share it.
#[derive(Clone)]
pub struct GateServer {
    source: Arc<dyn SessionSource>,
    slot: Slot,
    /// Set once an `initialize` arrived: the connection has a session of its own.
    initialized: Arc<AtomicBool>,
    stateless: Option<Slot>,
    /// Cancelled when the connection's input ends: running calls stop.
    closed: CancellationToken,
    /// Seals and redeems the `requestState` of approval questions (2026-07-28); `None`
    /// when no signing key could be made, and then such clients get the configured
    /// prompter.
    approvals: Option<Arc<Approvals>>,
}

impl GateServer {
    /// A server for one connection, taking its session from `source` on first use.
    pub fn new(source: Arc<dyn SessionSource>) -> Self {
        Self::with_parts(source, None, Approvals::shared())
    }

    fn with_parts(
        source: Arc<dyn SessionSource>,
        stateless: Option<Slot>,
        approvals: Option<Arc<Approvals>>,
    ) -> Self {
        Self {
            source,
            slot: Slot::Connection(Arc::default()),
            initialized: Arc::default(),
            stateless,
            closed: CancellationToken::new(),
            approvals,
        }
    }

    /// Cancels every running call of this connection when `closed` is cancelled.
    pub fn cancel_on(mut self, closed: CancellationToken) -> Self {
        self.closed = closed;
        self
    }

    /// A server for one HTTP request or session. Requests that never `initialize` (the
    /// sessionless 2026-07-28 protocol) share the sessions in `shared`, one per client name.
    pub(crate) fn for_http(source: Arc<dyn SessionSource>, shared: &SharedSessions) -> Self {
        // One key for the whole server: a retry is a new HTTP request, often a new handler,
        // and must open the state the first request sealed.
        Self::with_parts(
            source,
            Some(Slot::ByClient(Arc::clone(&shared.by_name))),
            shared.approvals.clone(),
        )
    }

    /// The session for a request: the connection's, opened on first use for the profile
    /// the request authenticated as and the client's name from `initialize` or `_meta`.
    fn gate(&self, context: &RequestContext<RoleServer>) -> Result<Gate, McpError> {
        // A sessionless (2026-07-28) request names its client in `_meta`; rmcp then fills
        // `peer_info` with a placeholder, so `_meta` comes first.
        let name = context
            .meta
            .client_info()
            .map(|info| info.name)
            .or_else(|| {
                context
                    .peer
                    .peer_info()
                    .map(|info| info.client_info.name.clone())
            });
        self.gate_for(&ClientIdentity::new(
            authenticated_profile(context).as_deref(),
            name.as_deref(),
        ))
    }

    fn gate_for(&self, client: &ClientIdentity) -> Result<Gate, McpError> {
        let open_error = |e: crate::SessionError| McpError::internal_error(e.to_string(), None);
        let slot = match (&self.stateless, self.is_initialized()) {
            (Some(shared), false) => shared,
            _ => &self.slot,
        };
        let label = client.audit_label();
        match slot {
            Slot::Connection(cell) => {
                let mut cell = cell.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some((gate, profile)) = cell.as_ref() {
                    if *profile != client.profile {
                        tracing::warn!(client = label, "request for another identity's session");
                        return Err(McpError::invalid_request(
                            "this MCP session was opened with another bearer token; \
                             initialize a session of your own",
                            None,
                        ));
                    }
                    return Ok(gate.clone());
                }
                let gate = self.source.open(client).map_err(open_error)?;
                tracing::info!(
                    client = label,
                    session = gate.session().id(),
                    "MCP session opened"
                );
                *cell = Some((gate.clone(), client.profile.clone()));
                Ok(gate)
            }
            Slot::ByClient(map) => {
                let key = client.clone();
                let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
                let now = Instant::now();
                // Idle sessions end like idle HTTP sessions do.
                map.retain(|_, (_, used)| now.duration_since(*used) < crate::SESSION_IDLE_TIMEOUT);
                if let Some((gate, used)) = map.get_mut(&key) {
                    *used = now;
                    return Ok(gate.clone());
                }
                if map.len() >= MAX_SESSIONLESS_CLIENTS
                    && let Some(oldest) = map
                        .iter()
                        .min_by_key(|(_, (_, used))| *used)
                        .map(|(k, _)| k.clone())
                {
                    map.remove(&oldest);
                }
                let gate = self.source.open(client).map_err(open_error)?;
                tracing::info!(
                    client = label,
                    session = gate.session().id(),
                    "sessionless MCP client"
                );
                map.insert(key, (gate.clone(), now));
                Ok(gate)
            }
        }
    }

    fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }
}

/// The methods this server answers, named in the error for any other.
const SERVED_METHODS: &str = "initialize, ping, tools/list, tools/call";

/// The JSON-RPC error for a method this server does not serve: what it is, what is served
/// instead, and the method in `data` for programs.
fn not_served(method: &str) -> McpError {
    McpError::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!(
            "method not found: {method} (toolgate is an MCP server of tools only and answers \
             {SERVED_METHODS}); check the method name and the server's capabilities"
        ),
        Some(json!({ "method": method, "served": SERVED_METHODS.split(", ").collect::<Vec<_>>() })),
    )
}

/// The profile an HTTP request's bearer token authenticated (see [`crate::http`]); `None`
/// over stdio and for the server's own token.
fn authenticated_profile(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .and_then(|p| p.profile.as_deref().map(str::to_owned))
}

/// What every request of one HTTP server shares: the sessions of sessionless requests,
/// keyed by client name, and the approval-state key.
#[derive(Clone)]
pub(crate) struct SharedSessions {
    by_name: ByName,
    approvals: Option<Arc<Approvals>>,
}

impl SharedSessions {
    pub(crate) fn new() -> Self {
        Self {
            by_name: ByName::default(),
            approvals: Approvals::shared(),
        }
    }
}

impl ServerHandler for GateServer {
    fn get_info(&self) -> ServerConfig {
        // The tool list changes when an upstream MCP server's tools do (toolgate-gateway).
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut info = InitializeResult::new(capabilities).with_instructions(INSTRUCTIONS);
        info.server_info = Implementation::new("toolgate", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        self.initialized.store(true, Ordering::Release);
        // Open the session now so a broken profile fails the handshake, not the first call.
        self.gate_for(&ClientIdentity::new(
            authenticated_profile(&context).as_deref(),
            Some(&request.client_info.name),
        ))?;
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.source.tools_mode() == ToolsMode::Search {
            // `search_tools` and `call_tool` never change; searches see the tools in force.
            return;
        }
        let Slot::Connection(cell) = &self.slot else {
            return;
        };
        let Some(gate) = cell
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|(gate, _)| gate.clone())
        else {
            return;
        };
        tokio::spawn(tell_tool_changes(
            gate.tools_handle().subscribe(),
            context.peer,
            self.closed.clone(),
        ));
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let gate = self.gate(&context)?;
        let tools = match self.source.tools_mode() {
            ToolsMode::All => convert::tools(&gate.view()),
            ToolsMode::Search => search_mode::meta_tools(),
        }
        .map_err(|e| McpError::internal_error(format!("tool definition: {e}"), None))?;
        let mut result = ListToolsResult::with_all_items(tools);
        // Not cached: the list changes with upstream servers' tools (announced with
        // `notifications/tools/list_changed`) and settings; private because it is
        // filtered by this client's policy.
        result.ttl_ms = Some(0);
        result.cache_scope = Some(rmcp::model::CacheScope::Private);
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        match self.source.tools_mode() {
            ToolsMode::All => convert::tool(&self.source.default_view(), name),
            ToolsMode::Search => search_mode::meta_tools()
                .ok()?
                .into_iter()
                .find(|t| t.name == name),
        }
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(not_served(&request.method))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Err(not_served("prompts/list"))
    }

    async fn get_prompt(
        &self,
        _request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        Err(not_served("prompts/get"))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Err(not_served("resources/list"))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Err(not_served("resources/templates/list"))
    }

    async fn read_resource(
        &self,
        _request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Err(not_served("resources/read"))
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        Err(not_served("completion/complete"))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let gate = self.gate(&context)?;
        let CallToolRequestParams {
            name,
            arguments,
            input_responses,
            request_state,
            ..
        } = request;
        let (name, arguments) = match self.source.tools_mode() {
            ToolsMode::All => (name.into_owned(), arguments),
            ToolsMode::Search => {
                match search_mode::route(&gate, &context.id, name.into_owned(), arguments) {
                    search_mode::Routed::Call(name, arguments) => (name, arguments),
                    search_mode::Routed::Answer(result) => {
                        let out = search_mode::answer(&result)
                            .map_err(|e| McpError::internal_error(format!("result: {e}"), None))?;
                        return Ok(CallToolResponse::Complete(out));
                    }
                }
            }
        };
        let call = convert::tool_call(&context.id, &name, arguments);
        let asker = match self.asker(&context, &gate, &call, input_responses, request_state) {
            Ok(asker) => asker,
            Err(e) => return Err(refuse(&gate, call, &e)),
        };
        // The arguments as sent, kept only while a question may have to be sealed for them
        // (the gate consumes the call; most calls never ask).
        let sent =
            matches!(&asker, Asker::Mrtr(round) if round.can_ask()).then(|| call.input.clone());
        let progress = context.meta.get_progress_token();
        let cancel = CancelOn {
            request: &context.ct,
            connection: &self.closed,
        };
        // An ask during this call goes to this request's client, if it can be asked.
        // Sub-agent turns may be sampled from a legacy-era client (2026-07-28 forbids
        // server-to-client requests).
        let client = (!crate::elicit::is_modern(&context)).then(|| context.peer.clone());
        let result = crate::elicit::with_asker(
            asker.clone(),
            client,
            run(&gate, call, cancel, progress, &context.peer),
        )
        .await;
        if let (Asker::Mrtr(round), Some(sent)) = (&asker, &sent)
            && result.error().map(|e| e.code) == Some(ErrorCode::InputRequired)
            && let Some(question) = round.take_question()
        {
            return self.input_required(&result, &binding(&gate, &name, sent), question);
        }
        let out = convert::call_tool_result(&result)
            .map_err(|e| McpError::internal_error(format!("result: {e}"), None))?;
        Ok(CallToolResponse::Complete(out))
    }
}

impl GateServer {
    /// How this call may ask its client, after verifying the answer a 2026-07-28 retry
    /// carries. An unverifiable `requestState` refuses the call before anything runs.
    fn asker(
        &self,
        context: &RequestContext<RoleServer>,
        gate: &Gate,
        call: &ToolCall,
        responses: Option<InputResponses>,
        state: Option<String>,
    ) -> Result<Asker, StateError> {
        let answered = match (state, responses) {
            (None, None) => None,
            (None, Some(_)) => return Err(StateError::ResponsesWithoutState),
            (Some(state), responses) => {
                let approvals = self.approvals.as_ref().ok_or(StateError::Unavailable)?;
                // Read the answer before redeeming, so a malformed answer does not use the
                // state up. An answer left out is asked for again (the spec's way).
                let result = match responses.and_then(|mut r| r.remove(APPROVAL_INPUT)) {
                    None => None,
                    Some(value) => Some(
                        serde_json::from_value::<ElicitResult>(value)
                            .map_err(|e| StateError::MalformedAnswer(e.to_string()))?,
                    ),
                };
                let question = approvals.redeem(&state, &binding(gate, &call.name, &call.input))?;
                result.map(|result| Answered { question, result })
            }
        };
        let can_ask = crate::elicit::declares_form_elicitation(context);
        if crate::elicit::is_modern(context) {
            let can_ask = can_ask && self.approvals.is_some();
            if can_ask || answered.is_some() {
                return Ok(Asker::Mrtr(Arc::new(Round::new(can_ask, answered))));
            }
            return Ok(Asker::Nobody);
        }
        if answered.is_some() {
            // A verified answer on a legacy request (a client switching eras mid-session):
            // apply it, but never return input_required, which legacy clients cannot read.
            return Ok(Asker::Mrtr(Arc::new(Round::new(false, answered))));
        }
        Ok(if can_ask {
            Asker::Request(context.peer.clone())
        } else {
            Asker::Nobody
        })
    }

    /// The `input_required` reply for a call the prompter handed a question back for: the
    /// form as an elicitation input request, and the sealed state the retry must echo.
    fn input_required(
        &self,
        result: &CallResult,
        binding: &Binding,
        question: crate::elicit::Question,
    ) -> Result<CallToolResponse, McpError> {
        let approvals = self
            .approvals
            .as_ref()
            .ok_or_else(|| StateError::Unavailable.to_mcp())?;
        let state = approvals
            .issue(binding, &question.digest, question.ttl)
            .map_err(|e| e.to_mcp())?;
        let mut requests = InputRequests::new();
        requests.insert(
            APPROVAL_INPUT.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(question.params)),
        );
        let reply = InputRequiredResult::new(Some(requests), Some(state))
            .with_meta(MetaObject(convert::result_meta(result)));
        Ok(CallToolResponse::InputRequired(reply))
    }
}

/// What an approval state is bound to: the tool, the arguments as the client sent them,
/// and the gate session (its client name and id).
fn binding(gate: &Gate, tool: &str, input: &Value) -> Binding {
    Binding {
        tool: tool.to_owned(),
        input: digest([input]),
        client: gate.session().client().map(str::to_owned),
        session: gate.session().id().to_owned(),
    }
}

/// Records a call refused for its `requestState` (one audit record per call, also for
/// these) and returns the JSON-RPC error for the client.
fn refuse(gate: &Gate, call: ToolCall, error: &StateError) -> McpError {
    tracing::info!(tool = %call.name, reason = error.reason(), "requestState refused");
    let rejected = CallError::new(
        ErrorCode::InvalidRequest,
        Stage::Decide,
        format!(
            "the approval answer was refused ({}): {error}",
            error.reason()
        ),
    )
    .with_details(json!({ "request_state": error.reason() }));
    gate.reject(call, rejected);
    error.to_mcp()
}

/// How often a connection that waits for tool changes checks that its client is still
/// there (an HTTP session can end without a word).
const CLIENT_GONE_CHECK: Duration = Duration::from_secs(30);

/// Sends `notifications/tools/list_changed` to the client each time the session's tools
/// change (an upstream server's tools appeared or changed), until the connection ends.
async fn tell_tool_changes(
    mut changes: tokio::sync::watch::Receiver<u64>,
    peer: Peer<RoleServer>,
    closed: CancellationToken,
) {
    let mut check = tokio::time::interval(CLIENT_GONE_CHECK);
    loop {
        tokio::select! {
            () = closed.cancelled() => return,
            _ = check.tick() => {
                if peer.is_transport_closed() {
                    return;
                }
            }
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!(error = %e, "tools/list_changed not sent; the client is gone");
                    return;
                }
            }
        }
    }
}

/// What cancels a call: the client's `notifications/cancelled` (or rmcp ending the
/// connection), or the end of the connection's input.
#[derive(Clone, Copy)]
struct CancelOn<'a> {
    request: &'a CancellationToken,
    connection: &'a CancellationToken,
}

impl CancelOn<'_> {
    async fn cancelled(self) {
        tokio::select! {
            () = self.request.cancelled() => {}
            () = self.connection.cancelled() => {}
        }
    }
}

/// Runs a call, cancelling it when the client cancels the request (or the connection ends)
/// and sending progress while it runs when the client asked for progress: what the tool
/// reports (an upstream MCP server's own progress, relayed), else a heartbeat each
/// [`PROGRESS_INTERVAL`].
async fn run(
    gate: &Gate,
    call: toolgate_protocol::ToolCall,
    client: CancelOn<'_>,
    progress: Option<ProgressToken>,
    peer: &Peer<RoleServer>,
) -> toolgate_protocol::CallResult {
    let name = call.name.clone();
    let cancel = gate.session().cancellation().child_token();
    let (sink, mut reports) = toolgate_core::progress::channel();
    // On the heap: the pipeline's future is large, and held inline it made every request
    // task that much larger to move into and out of the runtime (≈8 % of a small call's CPU
    // in memcpy).
    let mut exec = Box::pin(toolgate_core::progress::with_progress(
        sink,
        gate.execute_with_cancel(call, cancel.clone()),
    ));
    let started = Instant::now();
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + PROGRESS_INTERVAL,
        PROGRESS_INTERVAL,
    );
    let mut cancelled = false;
    let mut sent = Sent::default();
    loop {
        tokio::select! {
            Some(report) = reports.recv() => {
                sent.relayed = true;
                if !cancelled {
                    relay(peer, progress.as_ref(), &mut sent, report).await;
                }
            }
            result = &mut exec => {
                // What the tool reported before it finished goes out before the result.
                while let Ok(report) = reports.try_recv() {
                    relay(peer, progress.as_ref(), &mut sent, report).await;
                }
                return result;
            }
            () = client.cancelled(), if !cancelled => {
                tracing::info!(tool = %name, "client cancelled the call");
                cancelled = true;
                cancel.cancel();
            }
            _ = ticker.tick(), if progress.is_some() && !cancelled && !sent.relayed => {
                let secs = started.elapsed().as_secs_f64().floor();
                if let Some(token) = progress.clone()
                    && sent.advances(secs)
                {
                    let note = ProgressNotificationParam::new(token, secs)
                        .with_message(format!("{name} running for {secs}s"));
                    notify(peer, note).await;
                }
            }
        }
    }
}

/// Sends a tool's progress report to the client, if it asked for progress and the value
/// advances.
async fn relay(
    peer: &Peer<RoleServer>,
    token: Option<&ProgressToken>,
    sent: &mut Sent,
    report: toolgate_core::progress::Progress,
) {
    let Some(token) = token else {
        return;
    };
    if !sent.advances(report.progress) {
        return;
    }
    let mut note = ProgressNotificationParam::new(token.clone(), report.progress);
    note.total = report.total;
    note.message = report.message;
    notify(peer, note).await;
}

/// The progress sent for one call: each value must be larger than the last (the spec's
/// rule), and once the tool reports its own, the heartbeat stops.
#[derive(Default)]
struct Sent {
    last: Option<f64>,
    relayed: bool,
}

impl Sent {
    /// Whether `progress` may be sent next; remembers it if so.
    fn advances(&mut self, progress: f64) -> bool {
        if !progress.is_finite() || self.last.is_some_and(|last| progress <= last) {
            return false;
        }
        self.last = Some(progress);
        true
    }
}

async fn notify(peer: &Peer<RoleServer>, note: ProgressNotificationParam) {
    if let Err(e) = peer.notify_progress(note).await {
        tracing::debug!(error = %e, "progress notification not sent");
    }
}
