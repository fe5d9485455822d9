//! Reloading a gate's policy through `LivePolicy`: a new version from a file or a URL is
//! put in force for the calls that start after it, a call in flight finishes under the
//! version it started with, a bad version (unparseable, uncompilable, changing a
//! restart-only key, a failed fetch) is rejected once and the version in force kept, and
//! each outcome is an audit record.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate_protocol::{ErrorCode, ToolCall};
use toolgate_setup::{AuditChoice, LivePolicy, Reload, Setup, SetupError};

struct Ws {
    dir: tempfile::TempDir,
}

impl Ws {
    fn new() -> Ws {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "alpha\n").unwrap();
        Ws { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn policy(&self) -> PathBuf {
        self.path().join("policy.json")
    }

    fn write_policy(&self, text: &str) {
        // As an operator's tooling would: a new file renamed over the old one.
        let tmp = self.path().join("policy.json.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, self.policy()).unwrap();
    }

    fn audit(&self) -> PathBuf {
        self.path().join("audit.jsonl")
    }

    fn setup(&self, settings: &str) -> Setup {
        let mut setup = Setup::new(self.path());
        setup.settings.files = vec![settings.to_owned()];
        setup.session_id = Some("live-test".into());
        setup.audit = Some(AuditChoice {
            path: Some(self.audit()),
            ..AuditChoice::default()
        });
        setup
    }

    fn records(&self, kind: &str) -> Vec<Value> {
        std::fs::read_to_string(self.audit())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["kind"] == kind)
            .collect()
    }
}

fn read(gate: &toolgate_core::Gate, id: &str) -> Option<ErrorCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(gate.execute(ToolCall::new(id, "Read", json!({"file_path": "notes.txt"}))))
        .error()
        .map(|e| e.code)
}

fn check(live: &LivePolicy) -> Reload {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(live.check())
}

const ALLOW_READ: &str = r#"{"permissions": {"allow": ["Read"]}}"#;
const DENY_NOTES: &str = r#"{"permissions": {"allow": ["Read"], "deny": ["Read(./notes.txt)"]}}"#;

#[test]
fn a_changed_file_is_put_in_force_and_audited() {
    let ws = Ws::new();
    ws.write_policy(ALLOW_READ);
    let (live, built) =
        LivePolicy::start(ws.setup(&ws.policy().display().to_string()), true).unwrap();
    let gate = built.gate;
    let v1 = live.version();
    assert_eq!(read(&gate, "before"), None);
    assert_eq!(check(&live), Reload::Unchanged);

    ws.write_policy(DENY_NOTES);
    let Reload::Accepted { version, previous } = check(&live) else {
        panic!("not accepted");
    };
    assert_eq!(previous, v1);
    assert_ne!(version, v1);
    assert_eq!(read(&gate, "after"), Some(ErrorCode::Denied));
    // A session opened before the reload gets the new version too.
    assert_eq!(check(&live), Reload::Unchanged);

    let reloads = ws.records("reload");
    assert_eq!(reloads.len(), 1, "{reloads:?}");
    let r = &reloads[0];
    assert_eq!(r["status"], "ok");
    assert_eq!(r["session_id"], "live-test");
    assert_eq!(r["input"]["status"], "accepted");
    assert_eq!(r["input"]["version"], version.as_str());
    assert_eq!(r["input"]["previous"], v1.as_str());
    // Each call's record names the version that decided it.
    let notes: Vec<(String, String)> = ws
        .records("call")
        .iter()
        .map(|c| {
            let decide = c["stages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["stage"] == "decide")
                .unwrap();
            (
                c["call_id"].as_str().unwrap().to_owned(),
                decide["note"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        notes,
        [
            ("before".to_owned(), format!("policy {v1}")),
            ("after".to_owned(), format!("policy {version}"))
        ]
    );
    // The chain still verifies with the reload record in it.
    assert_eq!(
        toolgate_audit::verify(ws.audit()).unwrap().status,
        toolgate_audit::VerifyStatus::Ok
    );
}

#[test]
fn bad_versions_are_rejected_once_and_the_version_in_force_kept() {
    let ws = Ws::new();
    ws.write_policy(ALLOW_READ);
    let (live, built) =
        LivePolicy::start(ws.setup(&ws.policy().display().to_string()), true).unwrap();
    let v1 = live.version();
    let bad: &[(&str, &str, &[&str])] = &[
        (
            "unparseable",
            "{\"permissions\": {\"allow\": [\"Read\"",
            &[],
        ),
        ("wrong type", r#"{"permissions": {"allow": "Read"}}"#, &[]),
        (
            "bad rule",
            r#"{"permissions": {"deny": ["Read(./unclosed"]}}"#,
            &[],
        ),
        (
            "restart-only",
            r#"{"permissions": {"allow": ["Read"]}, "env": {"X": "1"}}"#,
            &["env"],
        ),
    ];
    for (what, text, restart) in bad {
        ws.write_policy(text);
        match check(&live) {
            Reload::Rejected {
                reason,
                restart_required,
            } => {
                assert!(!reason.is_empty(), "{what}");
                assert_eq!(&restart_required, restart, "{what}: {reason}");
            }
            other => panic!("{what}: {other:?}"),
        }
        // Reported once, not at every poll.
        assert_eq!(check(&live), Reload::Unchanged, "{what}");
        assert_eq!(live.version(), v1, "{what}");
        assert_eq!(read(&built.gate, what), None, "{what}: v1 allows the read");
    }
    let rejected = ws.records("reload");
    assert_eq!(rejected.len(), bad.len(), "{rejected:?}");
    for r in &rejected {
        assert_eq!(r["input"]["status"], "rejected");
        assert_eq!(r["input"]["in_force"], v1.as_str());
        assert_eq!(r["code"], "invalid_request");
    }
    assert_eq!(rejected[3]["input"]["restart_required"], json!(["env"]));
    // A good version after bad ones is accepted.
    ws.write_policy(DENY_NOTES);
    assert!(matches!(check(&live), Reload::Accepted { .. }));
    assert_eq!(read(&built.gate, "fixed"), Some(ErrorCode::Denied));
}

#[test]
fn every_profile_gate_follows_the_same_version() {
    let ws = Ws::new();
    let with_profile = |deny: &str| {
        json!({"permissions": {"allow": ["Read"]},
               "toolgate": {"profiles": {"ci": {"deny": [deny]}}}})
        .to_string()
    };
    ws.write_policy(&with_profile("Read(./other.txt)"));
    let (live, built) =
        LivePolicy::start(ws.setup(&ws.policy().display().to_string()), true).unwrap();
    let ci = live.gate_for_profile("ci").unwrap();
    assert_eq!(read(&ci, "ci-1"), None);
    ws.write_policy(&with_profile("Read(./notes.txt)"));
    assert!(matches!(check(&live), Reload::Accepted { .. }));
    assert_eq!(read(&ci, "ci-2"), Some(ErrorCode::Denied));
    assert_eq!(
        read(&built.gate, "base"),
        None,
        "the base gate has no such rule"
    );
    assert!(matches!(
        live.gate_for_profile("nope"),
        Err(SetupError::Policy(_))
    ));
}

#[test]
fn a_call_in_flight_finishes_under_the_version_it_started_with() {
    let ws = Ws::new();
    let tagging = |tag: &str| {
        let out = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                                 "additionalContext": format!("from {tag}")}});
        json!({"permissions": {"allow": ["Bash"]},
               "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
                   {"type": "command", "command": format!("echo '{out}'")}]}]}})
        .to_string()
    };
    ws.write_policy(&tagging("v1"));
    let (live, built) =
        LivePolicy::start(ws.setup(&ws.policy().display().to_string()), true).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let gate = built.gate.clone();
        let slow = tokio::spawn(async move {
            gate.execute(ToolCall::new(
                "slow",
                "Bash",
                json!({"command": "sleep 1; echo done"}),
            ))
            .await
        });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        ws.write_policy(&tagging("v2"));
        assert!(matches!(live.check().await, Reload::Accepted { .. }));
        let quick = built
            .gate
            .execute(ToolCall::new(
                "quick",
                "Bash",
                json!({"command": "echo hi"}),
            ))
            .await;
        let slow = slow.await.unwrap();
        assert!(!slow.is_error(), "{slow:?}");
        assert_eq!(slow.additional_context, ["from v1"]);
        assert_eq!(quick.additional_context, ["from v2"]);
    });
}

/// A settings server on loopback: serves `body` with `etag`, answers `304` to a matching
/// `If-None-Match`, and counts what it served.
#[derive(Clone)]
struct PolicyServer {
    state: Arc<Mutex<ServerState>>,
    url: String,
}

struct ServerState {
    status: u16,
    body: String,
    etag: String,
    not_modified: usize,
    extra_headers: String,
    requests: Vec<String>,
}

impl PolicyServer {
    fn start(body: &str) -> PolicyServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/policy.json", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(ServerState {
            status: 200,
            body: body.to_owned(),
            etag: "\"v1\"".into(),
            not_modified: 0,
            extra_headers: String::new(),
            requests: Vec::new(),
        }));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let mut buf = [0u8; 8192];
                let n = conn.read(&mut buf).unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]).to_string();
                let mut s = shared.lock().unwrap();
                s.requests.push(request.clone());
                let matches = request
                    .lines()
                    .any(|l| l.to_ascii_lowercase() == format!("if-none-match: {}", s.etag));
                let response = if matches && s.status == 200 {
                    s.not_modified += 1;
                    format!(
                        "HTTP/1.1 304 Not Modified\r\nETag: {}\r\nConnection: close\r\n\r\n",
                        s.etag
                    )
                } else {
                    format!(
                        "HTTP/1.1 {} X\r\nETag: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}",
                        s.status,
                        s.etag,
                        s.body.len(),
                        s.extra_headers,
                        s.body
                    )
                };
                let _ = conn.write_all(response.as_bytes());
            }
        });
        PolicyServer { state, url }
    }

    fn serve(&self, status: u16, body: &str, etag: &str) {
        let mut s = self.state.lock().unwrap();
        s.status = status;
        s.body = body.to_owned();
        s.etag = etag.to_owned();
    }
}

#[test]
fn a_served_policy_is_polled_with_its_etag_and_a_bad_one_kept_out() {
    let ws = Ws::new();
    let server = PolicyServer::start(ALLOW_READ);
    let (live, built) = LivePolicy::start(ws.setup(&server.url), true).unwrap();
    assert_eq!(read(&built.gate, "v1"), None);
    assert_eq!(check(&live), Reload::Unchanged);
    assert_eq!(
        server.state.lock().unwrap().not_modified,
        1,
        "a conditional GET"
    );
    assert!(
        live.settings()
            .sources
            .iter()
            .any(|s| s.label == server.url),
        "the URL is a settings source"
    );

    for (status, body, what) in [
        (500, "oops", "a server error"),
        (200, "<html>maintenance</html>", "garbage"),
    ] {
        server.serve(status, body, &format!("\"{what}\""));
        let Reload::Rejected { reason, .. } = check(&live) else {
            panic!("{what} was not rejected");
        };
        assert!(reason.contains(&server.url), "{what}: {reason}");
        assert_eq!(
            read(&built.gate, what),
            None,
            "{what}: the version in force stays"
        );
    }
    server.serve(200, DENY_NOTES, "\"v2\"");
    let Reload::Accepted { version, .. } = check(&live) else {
        panic!("v2 not accepted");
    };
    assert_eq!(read(&built.gate, "v2"), Some(ErrorCode::Denied));
    // An outage is reported; once the server answers with the version in force again it
    // is over, and the next outage is reported again.
    for _ in 0..2 {
        server.serve(500, "oops", "\"v2\"");
        assert!(matches!(check(&live), Reload::Rejected { .. }));
        assert_eq!(check(&live), Reload::Unchanged, "reported once");
        server.serve(200, DENY_NOTES, "\"v2\"");
        assert_eq!(check(&live), Reload::Unchanged);
    }
    let reloads = ws.records("reload");
    let statuses: Vec<&str> = reloads
        .iter()
        .map(|r| r["input"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["rejected", "rejected", "accepted", "rejected", "rejected"]
    );
    let last = &reloads[2];
    assert_eq!(last["input"]["version"], version.as_str());
    let source = last["input"]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == server.url.as_str())
        .unwrap();
    assert_eq!(source["etag"], "\"v2\"");
}

#[test]
fn a_settings_url_that_cannot_serve_stops_the_start() {
    let ws = Ws::new();
    let unreachable = format!(
        "http://127.0.0.1:{}/policy.json",
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    );
    let redirect = PolicyServer::start("");
    redirect.serve(302, "", "\"r\"");
    redirect.state.lock().unwrap().extra_headers =
        "Location: http://evil.example/p.json\r\n".into();
    let huge = PolicyServer::start(&format!(
        "{{\"x\": \"{}\"}}",
        "a".repeat(toolgate_setup::policy_url::MAX_SETTINGS_BYTES)
    ));
    let garbage = PolicyServer::start("not json");
    let cases = [
        (unreachable.clone(), "cannot fetch"),
        ("http://policy.example/p.json".to_owned(), "https"),
        (redirect.url.clone(), "redirects are not followed"),
        (huge.url.clone(), "over 1048576 bytes"),
        (garbage.url.clone(), "strict JSON"),
    ];
    for (url, says) in cases {
        let err = LivePolicy::start(ws.setup(&url), true).err().unwrap();
        let text = err.to_string();
        assert!(text.contains(says), "{url}: {text}");
        // The one-shot path (`toolgate call`, `config`) fails the same way.
        let err = ws.setup(&url).build().err().unwrap().to_string();
        assert!(err.contains(says), "{url}: {err}");
    }
    assert!(!ws.audit().exists() || ws.records("call").is_empty());
}

#[test]
fn a_reload_plans_every_view_anew_with_the_new_rules() {
    let ws = Ws::new();
    ws.write_policy(ALLOW_READ);
    let (live, built) =
        LivePolicy::start(ws.setup(&ws.policy().display().to_string()), false).unwrap();
    let gate = built.gate;
    let listed = |g: &toolgate_core::Gate| {
        g.view()
            .entries()
            .iter()
            .any(|e| e.spec().name == "WebFetch")
    };
    let session = gate
        .new_session(toolgate_core::SessionOptions::default(), None)
        .unwrap();
    assert!(listed(&gate) && listed(&session));
    let mut changes = gate.tools_handle().subscribe();

    // A bare-name deny rule removes the tool from every view, existing or new, and whoever
    // serves the list (MCP clients) is told it changed.
    ws.write_policy(r#"{"permissions": {"allow": ["Read"], "deny": ["WebFetch"]}}"#);
    assert!(matches!(check(&live), Reload::Accepted { .. }));
    assert!(changes.has_changed().unwrap());
    changes.mark_unchanged();
    let fresh = gate
        .new_session(toolgate_core::SessionOptions::default(), None)
        .unwrap();
    for g in [&gate, &session, &fresh] {
        assert!(!listed(g), "still listed after the deny rule");
        assert!(g.view().hidden().contains_key("WebFetch"));
    }

    // Taking the rule out shows it again: what a rule hid is not remembered past it.
    ws.write_policy(ALLOW_READ);
    assert!(matches!(check(&live), Reload::Accepted { .. }));
    assert!(changes.has_changed().unwrap());
    assert!(listed(&gate) && listed(&session) && listed(&fresh));
}
