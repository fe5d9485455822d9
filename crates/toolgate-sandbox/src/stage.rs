//! The Linux sandbox as the gate's stage 8 ([`LinuxSandbox`]): which room a call's
//! processes run in, the allow-list proxy shared by a stage's rooms, and the audit records of
//! the proxy's network decisions.

use std::collections::HashMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::json;
use toolgate_core::Session;
use toolgate_core::sandbox::{Room, SandboxRequest, SandboxStage, SandboxUnavailable};
use toolgate_core::stages::AuditSink;
use toolgate_protocol::{
    CallFacts, CallRecord, CallStatus, ErrorCode, PermissionMode, RecordKind, Subject,
};

use crate::{
    DomainRules, NetworkMode, PathRules, Plan, Proxy, ProxyDecision, SandboxPolicy, encode_tag,
};

/// Decides whether a command may run outside the sandbox (`sandbox.excludedCommands`):
/// `Some(reason)` when it may. Built by the caller from the permission engine's compiled Bash
/// matcher, so excluded-command patterns mean exactly what permission rules mean.
pub type Excluder = Arc<dyn Fn(&CallFacts, &Session) -> Option<String> + Send + Sync>;

/// The Linux sandbox (`toolgate-sandbox`) as stage 8. Tools whose subject is a command
/// (Bash) get a room; other tools run in-process and are confined by their own path checks.
///
/// A room is planned against the machine's probe for every call: if a layer the policy
/// needs is missing and the policy says `failIfUnavailable`, the call is refused
/// (`sandbox_unavailable`); otherwise the helper runs degraded and says so on stderr.
///
/// Network `allowlist`: one [`Proxy`] per stage, started with the first room that needs it
/// (on a unix socket in a private temp directory, removed with the stage). Each room tags
/// its connections with the session and call ids; every proxy decision becomes a
/// `kind: "network"` record in the audit sink given with [`LinuxSandbox::with_audit`].
#[derive(Clone)]
pub struct LinuxSandbox {
    policy: Arc<SandboxPolicy>,
    helper: PathBuf,
    audit: Option<Arc<dyn AuditSink>>,
    excluded: Option<Excluder>,
    proxy_hosts: HashMap<String, Vec<SocketAddr>>,
    proxy: Arc<OnceLock<Result<RunningProxy, String>>>,
    path_rules: Option<Arc<dyn PathRules>>,
}

impl std::fmt::Debug for LinuxSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxSandbox")
            .field("policy", &self.policy)
            .field("helper", &self.helper)
            .field("audit", &self.audit.is_some())
            .finish()
    }
}

/// The stage's proxy and its socket directory (removed on drop, after the proxy stopped).
struct RunningProxy {
    proxy: Option<Proxy>,
    dir: PathBuf,
    /// The policy with `proxy_socket` set.
    policy: Arc<SandboxPolicy>,
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        drop(self.proxy.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl LinuxSandbox {
    /// A sandbox stage for `policy`, using `helper` (the `toolgate` binary, which runs the
    /// helper when given [`crate::HELPER_ARG`], or the stand-alone helper, see
    /// [`crate::helper_exe`]).
    pub fn new(policy: SandboxPolicy, helper: PathBuf) -> Self {
        Self {
            policy: Arc::new(policy),
            helper,
            audit: None,
            excluded: None,
            proxy_hosts: HashMap::new(),
            proxy: Arc::new(OnceLock::new()),
            path_rules: None,
        }
    }

    /// Reflects the permission engine's deny and ask path rules in every room: what they
    /// cover when the room starts is hidden (`Read`) or read-only (`Edit`), found by a
    /// bounded walk; past the bound the call is refused (`sandbox_unavailable`).
    pub fn with_path_rules(mut self, rules: Arc<dyn PathRules>) -> Self {
        self.path_rules = Some(rules);
        self
    }

    /// Records every network decision of the allow-list proxy in `audit` (the gate's sink).
    pub fn with_audit(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Lets the commands `excluded` names run outside the sandbox (`sandbox.excludedCommands`,
    /// matched by the permission engine). Without it every command gets a room.
    pub fn with_excluded(mut self, excluded: Excluder) -> Self {
        self.excluded = Some(excluded);
        self
    }

    /// Resolves these names to fixed addresses in the proxy instead of asking DNS (tests,
    /// pinning).
    pub fn with_proxy_hosts(mut self, hosts: HashMap<String, Vec<SocketAddr>>) -> Self {
        self.proxy_hosts = hosts;
        self
    }

    /// The policy rooms use: with the running proxy's socket in allow-list mode.
    fn effective_policy(&self) -> Result<Arc<SandboxPolicy>, String> {
        if self.policy.network.mode != NetworkMode::Allowlist
            || self.policy.network.proxy_socket.is_some()
        {
            return Ok(Arc::clone(&self.policy));
        }
        let running = self.proxy.get_or_init(|| self.start_proxy());
        match running {
            Ok(r) => Ok(Arc::clone(&r.policy)),
            Err(e) => Err(e.clone()),
        }
    }

    fn start_proxy(&self) -> Result<RunningProxy, String> {
        let dir = private_dir().map_err(|e| format!("network proxy: {e}"))?;
        let sock = dir.join("proxy.sock");
        let rules = DomainRules::new(
            &self.policy.network.allowed_domains,
            &self.policy.network.denied_domains,
        );
        let audit = self.audit.clone();
        let started = Proxy::start_with_hosts(&sock, rules, self.proxy_hosts.clone(), move |d| {
            record_decision(audit.as_deref(), d)
        });
        let proxy = match started {
            Ok(p) => p,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!("network proxy: {e}"));
            }
        };
        let mut policy = (*self.policy).clone();
        policy.network.proxy_socket = Some(sock);
        Ok(RunningProxy {
            proxy: Some(proxy),
            dir,
            policy: Arc::new(policy),
        })
    }
}

/// A fresh 0700 directory for the proxy socket (only this user may connect to it).
fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("toolgate-proxy-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

/// The room's tag: `<session id> <call id> <tool>`, each percent-encoded.
fn room_tag(session: &str, call: &str, tool: &str) -> String {
    format!(
        "{}+{}+{}",
        encode_tag(session),
        encode_tag(call),
        encode_tag(tool)
    )
}

fn decode_tag(tag: &str) -> Vec<String> {
    tag.split('+')
        .map(|part| {
            let bytes = part.as_bytes();
            let mut out = Vec::with_capacity(bytes.len());
            let mut i = 0;
            while i < bytes.len() {
                let hex = (bytes[i] == b'%')
                    .then(|| part.get(i + 1..i + 3))
                    .flatten()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(bytes[i]);
                        i += 1;
                    }
                }
            }
            String::from_utf8_lossy(&out).into_owned()
        })
        .collect()
}

/// The audit record of one proxy decision: `kind: "network"`, the spawning call's session
/// and call ids (from the room's tag), the request in `input`, `status` `ok` (allowed) or
/// `error` with code `denied`.
pub fn network_record(d: &ProxyDecision) -> CallRecord {
    let parts = d.tag.as_deref().map(decode_tag).unwrap_or_default();
    let part = |i: usize| parts.get(i).cloned().unwrap_or_default();
    CallRecord {
        kind: RecordKind::Network,
        ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        session_id: part(0),
        call_id: part(1),
        client: None,
        parent_call_id: None,
        tool: part(2),
        input: json!({
            "method": d.method,
            "host": d.host,
            "port": d.port,
            "decision": d.verdict(),
            "reason": d.reason,
        }),
        stages: Vec::new(),
        hooks: Vec::new(),
        verdict: None,
        status: if d.allowed {
            CallStatus::Ok
        } else {
            CallStatus::Error
        },
        code: (!d.allowed).then_some(ErrorCode::Denied),
        duration_us: 0,
        input_bytes: 0,
        output_bytes: 0,
        mode_change: None,
    }
}

/// Whether the decision was recorded; `false` makes the proxy refuse the connection.
fn record_decision(audit: Option<&dyn AuditSink>, d: &ProxyDecision) -> bool {
    let Some(audit) = audit else {
        tracing::info!(host = %d.host, port = d.port, allowed = d.allowed, reason = %d.reason, "sandbox network decision");
        return true;
    };
    // A failed write also marks the sink failed, so the gate refuses every later call.
    match audit.record(&network_record(d)).wait() {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(error = %e, host = %d.host, "network decision could not be audited; connection refused");
            false
        }
    }
}

impl SandboxStage for LinuxSandbox {
    fn select(
        &self,
        request: &SandboxRequest<'_>,
    ) -> Result<Option<Arc<dyn Room>>, SandboxUnavailable> {
        let SandboxRequest {
            spec,
            facts,
            session,
            outside_sandbox,
        } = *request;
        if !self.policy.enabled || !matches!(spec.subject, Subject::Command { .. }) {
            return Ok(None);
        }
        // Stage 8 comes after the permission decision: an excluded command has already
        // been allowed (or asked for) like any other; only its room changes.
        // As root in bypassPermissions the policy's root guard relies on the sandbox, so
        // exclusions do not apply there.
        let root_bypass =
            session.mode() == PermissionMode::BypassPermissions && crate::probe().uid == 0;
        if !root_bypass && let Some(why) = self.excluded.as_ref().and_then(|ex| ex(facts, session))
        {
            tracing::info!(reason = %why, "command runs outside the sandbox (sandbox.excludedCommands)");
            return Ok(None);
        }
        // `dangerouslyDisableSandbox`: the policy never lets a mode approve it (an allow rule,
        // a hook or a person did), and `allowUnsandboxedCommands: false` makes it ignored.
        if !root_bypass && self.policy.allow_unsandboxed_commands && outside_sandbox {
            tracing::info!("command runs outside the sandbox (dangerouslyDisableSandbox)");
            return Ok(None);
        }
        let mut policy = self.effective_policy().map_err(SandboxUnavailable::new)?;
        let mut limited = None;
        if let Some(rules) = self.path_rules.as_deref().filter(|r| r.any()) {
            // Per room: what the rules cover is what exists when the command starts.
            let mut p = (*policy).clone();
            let found = p
                .add_rule_limits(rules)
                .map_err(|e| SandboxUnavailable::new(e.to_string()))?;
            limited = Some((found.hidden.len(), found.read_only.len()));
            policy = Arc::new(p);
        }
        let plan = Plan::new(&policy, crate::probe())
            .map_err(|e| SandboxUnavailable::new(e.to_string()))?;
        let applied: Vec<&str> = plan.applied.iter().map(|l| l.name()).collect();
        let mut description = format!("sandbox tier {:?}: {}", plan.tier, applied.join("+"));
        if !plan.missing.is_empty() {
            let missing: Vec<&str> = plan.missing.iter().map(|(l, _)| l.name()).collect();
            description.push_str(&format!(" (missing: {})", missing.join(", ")));
        }
        if let Some((hidden, read_only)) = limited {
            description.push_str(&format!(
                "; permission rules: {hidden} hidden, {read_only} read-only"
            ));
        }
        Ok(Some(Arc::new(LinuxRoom {
            policy,
            helper: self.helper.clone(),
            description,
            session_id: session.id().to_owned(),
            tool: spec.name.clone(),
            call_id: Mutex::new(None),
        })))
    }
}

#[derive(Debug)]
struct LinuxRoom {
    policy: Arc<SandboxPolicy>,
    helper: PathBuf,
    description: String,
    session_id: String,
    tool: String,
    call_id: Mutex<Option<String>>,
}

impl Room for LinuxRoom {
    fn describe(&self) -> String {
        self.description.clone()
    }

    fn command(&self, argv: &[OsString], cwd: &Path) -> std::io::Result<tokio::process::Command> {
        let mut policy = Arc::clone(&self.policy);
        if policy.network.proxy_socket.is_some() {
            let call = self
                .call_id
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
                .unwrap_or_default();
            Arc::make_mut(&mut policy).network.proxy_tag =
                Some(room_tag(&self.session_id, &call, &self.tool));
        }
        crate::command(&policy, &self.helper, argv, cwd)
            .map(tokio::process::Command::from)
            .map_err(std::io::Error::other)
    }

    fn bind_call(&self, call_id: &str) {
        *self.call_id.lock().unwrap_or_else(PoisonError::into_inner) = Some(call_id.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use toolgate_core::{SessionOptions, Workspace};
    use toolgate_protocol::{Concurrency, TimeoutSpec, ToolAnnotations};

    /// Keeps records in memory: the stage's job is to produce them, the audit crate's to
    /// chain and store them.
    #[derive(Default)]
    struct Records(Mutex<Vec<CallRecord>>);

    impl AuditSink for Records {
        fn ready(&self) -> Result<(), toolgate_core::stages::AuditFailure> {
            Ok(())
        }

        fn record(&self, record: &CallRecord) -> toolgate_core::stages::AuditReceipt {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(record.clone());
            toolgate_core::stages::AuditReceipt::done(Ok(()))
        }
    }

    fn bash_spec() -> toolgate_protocol::ToolSpec {
        toolgate_protocol::ToolSpec {
            name: "Bash".into(),
            version: "1".into(),
            description: String::new(),
            input_schema: json!({}),
            output_schema: None,
            annotations: ToolAnnotations::default(),
            concurrency: Concurrency::Exclusive,
            timeout: TimeoutSpec {
                default_ms: 1000,
                max_ms: 1000,
            },
            subject: Subject::Command {
                field: "command".into(),
            },
        }
    }

    /// The stand-alone helper built next to this test binary (`target/<profile>/`).
    fn helper() -> PathBuf {
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .unwrap_or_else(|| panic!("no target dir"));
        let helper = dir.join(crate::HELPER_BIN);
        assert!(
            helper.is_file(),
            "{} missing: run `cargo build -p toolgate-sandbox` first",
            helper.display()
        );
        helper
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("toolgate-stage-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        std::fs::canonicalize(&dir).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn dangerously_disable_sandbox_is_honoured_only_when_allowed() {
        let root = scratch("ddsb");
        let mut policy = SandboxPolicy::workspace_write(&root, None);
        policy.enabled = true;
        let session = Session::new(
            Workspace::new(&root).unwrap_or_else(|e| panic!("{e}")),
            SessionOptions::default(),
        );
        let facts = CallFacts::default();
        let spec = bash_spec();
        let room = |policy: &SandboxPolicy, outside_sandbox: bool| {
            LinuxSandbox::new(policy.clone(), PathBuf::from("/nonexistent/helper"))
                .select(&SandboxRequest {
                    spec: &spec,
                    facts: &facts,
                    session: &session,
                    outside_sandbox,
                })
                .map(|r| r.is_some())
        };
        // Without the flag the command gets a room; with it (allowed by default) none.
        // (The flag is typed: Bash's schema refuses `"dangerouslyDisableSandbox": "yes"`.)
        assert_eq!(room(&policy, false), Ok(true));
        assert_eq!(room(&policy, true), Ok(false));
        // allowUnsandboxedCommands: false makes the flag ignored.
        policy.allow_unsandboxed_commands = false;
        assert_eq!(room(&policy, true), Ok(true));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[tokio::test]
    async fn network_decisions_are_audited_under_the_call() {
        if !crate::probe().has(crate::Layer::NetNs) {
            panic!("this test needs network namespaces (see `toolgate sandbox status`)");
        }
        let root = scratch("netaudit");
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap_or_else(|e| panic!("{e}"));
        // A local HTTP server that "allowed.test" and "blocked.test" both resolve to.
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = server.local_addr().unwrap_or_else(|e| panic!("{e}"));
        std::thread::spawn(move || {
            for conn in server.incoming().take(2) {
                let Ok(mut s) = conn else { return };
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ =
                    s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 18\r\n\r\nhello-from-allowed");
            }
        });
        let sink = Arc::new(Records::default());
        let mut policy = SandboxPolicy::workspace_write(&ws, None);
        policy.enabled = true;
        policy.network.mode = NetworkMode::Allowlist;
        // Any port: the server listens on a random one (80 and 443 only by default).
        policy.network.allowed_domains = vec!["allowed.test:*".into()];
        let hosts = HashMap::from([
            ("allowed.test".to_owned(), vec![addr]),
            ("blocked.test".to_owned(), vec![addr]),
        ]);
        let stage = LinuxSandbox::new(policy, helper())
            .with_audit(Arc::clone(&sink) as Arc<dyn AuditSink>)
            .with_proxy_hosts(hosts);
        let session = Session::new(
            Workspace::new(&ws).unwrap_or_else(|e| panic!("{e}")),
            SessionOptions {
                id: Some("sess-1".into()),
                ..SessionOptions::default()
            },
        );
        let spec = bash_spec();
        let room = stage
            .select(&SandboxRequest {
                spec: &spec,
                facts: &CallFacts::default(),
                session: &session,
                outside_sandbox: false,
            })
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no room"));
        room.bind_call("call-42");
        let port = addr.port();
        let script = format!(
            "for h in allowed.test blocked.test; do exec 3<>/dev/tcp/127.0.0.1/3128 || exit 9; \
             printf 'GET http://%s:{port}/ HTTP/1.0\\r\\n\\r\\n' $h >&3; cat <&3; exec 3<&-; done"
        );
        let argv: Vec<OsString> = vec!["bash".into(), "-c".into(), script.into()];
        let out = room
            .command(&argv, &ws)
            .unwrap_or_else(|e| panic!("{e}"))
            .output()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("hello-from-allowed") && stdout.contains("403"),
            "stdout={stdout} stderr={}",
            String::from_utf8_lossy(&out.stderr)
        );
        drop(room);
        drop(stage);
        let records: Vec<serde_json::Value> = sink
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|r| serde_json::to_value(r).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let text = format!("{records:?}");
        let find = |host: &str| {
            records
                .iter()
                .find(|r| r["kind"] == "network" && r["input"]["host"] == host)
                .cloned()
                .unwrap_or_else(|| panic!("no record for {host}: {text}"))
        };
        let allowed = find("allowed.test");
        assert_eq!(allowed["input"]["decision"], "allowed");
        assert_eq!(allowed["status"], "ok");
        assert_eq!(allowed["call_id"], "call-42", "{allowed}");
        assert_eq!(allowed["session_id"], "sess-1");
        assert_eq!(allowed["tool"], "Bash");
        let denied = find("blocked.test");
        assert_eq!(denied["input"]["decision"], "denied");
        assert_eq!(denied["status"], "error");
        assert_eq!(denied["call_id"], "call-42");
        assert_eq!(records.len(), 2);
        let _ = std::fs::remove_dir_all(&root);
    }
}
