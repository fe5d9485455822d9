//! "Allow always": what is proposed, what is saved, that it never widens, and the prompters
//! that ask.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolgate_policy::approvals::persist;
use toolgate_policy::prompt::{Answer, Offer, resolve};
use toolgate_policy::settings::{self, LoadOptions, TrustStatus, TrustStore};
use toolgate_policy::{
    AutoReviewer, BuiltinClassifier, DenyAllPrompter, Engine, JsonLinesPrompter, PolicyPrompter,
    PolicyRequest, TerminalPrompter, split_command,
};
use toolgate_protocol::{
    Access, CallFacts, CommandFact, Decision, Finding, Layer, PathFact, PermissionMode, Risk,
    Subject, Verdict,
};

/// The shell analyzer's facts, as the Bash tool delivers them (its read-only verdict
/// included); the fallback split where the analyzer found no command.
fn facts(cmd: &str) -> CallFacts {
    let analysed = toolgate_shell::analyze(cmd, &toolgate_shell::Context::new("/p")).facts();
    if !analysed.commands.is_empty() {
        return analysed;
    }
    CallFacts {
        commands: split_command(cmd)
            .commands
            .into_iter()
            .map(|argv| CommandFact {
                text: argv.join(" "),
                argv,
                ..Default::default()
            })
            .collect(),
        ..CallFacts::default()
    }
}

struct Call {
    tool: String,
    subject: Subject,
    input: Value,
    facts: CallFacts,
    mode: PermissionMode,
    root: PathBuf,
}

impl Call {
    fn bash(cmd: &str, root: &Path) -> Self {
        Call {
            tool: "Bash".into(),
            subject: Subject::Command {
                field: "command".into(),
            },
            input: json!({"command": cmd}),
            facts: facts(cmd),
            mode: PermissionMode::Default,
            root: root.to_path_buf(),
        }
    }
    /// The request for this call; `roots` is `[self.root]`, owned by the caller.
    fn request<'a>(&'a self, roots: &'a [&'a Path]) -> PolicyRequest<'a> {
        PolicyRequest {
            tool: &self.tool,
            subject: &self.subject,
            annotations: Default::default(),
            input: &self.input,
            facts: &self.facts,
            mode: self.mode,
            hook: None,
            cwd: &self.root,
            roots,
        }
    }
    fn with<R>(&self, f: impl FnOnce(&PolicyRequest<'_>) -> R) -> R {
        let roots = [self.root.as_path()];
        f(&self.request(&roots))
    }
}

fn engine(root: &Path, allow: &[&str]) -> Arc<Engine> {
    let mut b = Engine::builder()
        .cwd(root)
        .home("/home/u")
        .approvals_file(Some(root.join(".toolgate/settings.local.json")));
    for a in allow {
        b = b.allow(a);
    }
    Arc::new(b.build().unwrap())
}

#[test]
fn suggestions_are_exact_one_per_uncovered_subcommand() {
    let root = Path::new("/p");
    let e = engine(root, &["Bash(npm test)"]);
    let s = Call::bash(
        "npm test && npm run build && ls && git push origin main",
        root,
    )
    .with(|r| e.suggest(r));
    assert_eq!(
        s.unwrap(),
        ["Bash(npm run build)", "Bash(git push origin main)"]
    );
    for (cmd, why) in [
        ("python x.py", "never saves"),
        ("npm test && bash -c 'make'", "never saves"),
        ("sudo make install", "only be allowed once"),
        ("LD_PRELOAD=/x make", "only be allowed once"),
        ("rm *.o", "wildcard"),
        ("a; b; c; d; e; f", "at most 5"),
        ("make <<EOF", "not understood"),
        ("npm test", "nothing left"),
    ] {
        let call = Call {
            facts: if cmd.contains("<<") {
                CallFacts::default()
            } else {
                facts(cmd)
            },
            ..Call::bash(cmd, root)
        };
        let err = call.with(|r| e.suggest(r)).unwrap_err();
        assert!(err.contains(why), "{cmd}: {err}");
    }
    let fetch = Call {
        tool: "WebFetch".into(),
        subject: Subject::Url {
            field: "url".into(),
        },
        input: json!({"url": "https://Docs.Rs/x"}),
        facts: CallFacts::default(),
        mode: PermissionMode::Default,
        root: root.into(),
    };
    assert_eq!(
        fetch.with(|r| e.suggest(r)).unwrap(),
        ["WebFetch(domain:docs.rs)"]
    );
    let mcp = Call {
        tool: "mcp__gh__get_issue".into(),
        subject: Subject::None,
        input: json!({}),
        ..Call::bash("x", root)
    };
    assert_eq!(mcp.with(|r| e.suggest(r)).unwrap(), ["mcp__gh__get_issue"]);
    let edit = Call {
        tool: "Edit".into(),
        subject: Subject::Path {
            field: "file_path".into(),
            writes: true,
        },
        input: json!({"file_path": "/p/src/a.rs"}),
        facts: CallFacts {
            paths: vec![PathFact {
                beneath: toolgate_protocol::Beneath::Nothing,
                beneath_only: Vec::new(),
                path: "/p/src/a.rs".into(),
                access: Access::Write,
                inside_roots: true,
                protected: false,
            }],
            ..CallFacts::default()
        },
        ..Call::bash("x", root)
    };
    assert_eq!(edit.with(|r| e.suggest(r)).unwrap(), ["Edit(//p/src/a.rs)"]);
    assert!(
        !edit.with(|r| Offer::for_call(&e, r)).persist,
        "file edits are approved for the session only"
    );
    let agent = Call {
        tool: "Agent".into(),
        subject: Subject::None,
        input: json!({"prompt": "x"}),
        ..Call::bash("x", root)
    };
    assert!(agent.with(|r| e.suggest(r)).is_err());
}

#[test]
fn allow_always_persists_atomically_and_never_widens() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let local = root.join(".toolgate/settings.local.json");
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    std::fs::write(
        &local,
        r#"{"model": "x", "permissions": {"allow": ["Bash(make)"], "deny": ["Bash(rm *)"]}}"#,
    )
    .unwrap();
    let e = engine(&root, &[]);
    let call = Call::bash("npm run build && make", &root);
    let rules = call.with(|r| e.suggest(r)).unwrap();
    assert_eq!(rules, ["Bash(npm run build)", "Bash(make)"]);
    e.remember(&rules, true).unwrap();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&local).unwrap()).unwrap();
    assert_eq!(saved["model"], "x");
    assert_eq!(
        saved["permissions"]["allow"],
        json!(["Bash(make)", "Bash(npm run build)"])
    );
    assert_eq!(saved["permissions"]["deny"], json!(["Bash(rm *)"]));
    // In force at once, and only for exactly what was approved.
    let d = call.with(|r| e.decide(r));
    assert_eq!(
        (d.verdict.decision, d.verdict.source.as_deref()),
        (Decision::Allow, Some("approved (allow always)"))
    );
    for wider in [
        "npm run build --prod",
        "npm run build && rm -rf x",
        "npm run builder",
        "sudo npm run build",
    ] {
        let d = Call::bash(wider, &root).with(|r| e.decide(r));
        assert_ne!(d.verdict.decision, Decision::Allow, "{wider}");
    }
    // A broken local file is never overwritten.
    std::fs::write(&local, "{ broken").unwrap();
    assert!(persist(&local, &["Bash(x)".into()]).is_err());
    assert_eq!(std::fs::read_to_string(&local).unwrap(), "{ broken");
    // Rules that do not parse are refused.
    assert!(e.remember(&["Bash(oops".into()], false).is_err());
}

#[test]
fn approvals_keep_a_trusted_project_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let project = root.join("p");
    let config = root.join("cfg");
    std::fs::create_dir_all(project.join(".toolgate")).unwrap();
    std::fs::write(
        project.join(".toolgate/settings.json"),
        r#"{"permissions": {"allow": ["Bash(make)"]}}"#,
    )
    .unwrap();
    let store = TrustStore::new(&config);
    store.trust(&project).unwrap();
    let mut o = LoadOptions::from_env(&project);
    o.config_dir = Some(config.clone());
    o.managed_dir = root.join("none");
    let s = settings::load(&o).unwrap();
    assert!(s.trusted);
    let e = s.engine_builder(None).build().unwrap();
    e.remember(&["Bash(npm test)".into()], true).unwrap();
    assert_eq!(store.status(&project).unwrap(), TrustStatus::Trusted);
    let s = settings::load(&o).unwrap();
    assert!(s.trusted);
    assert!(
        s.rules
            .iter()
            .any(|r| r.text == "Bash(npm test)" && r.active)
    );
}

fn ask_verdict() -> Verdict {
    Verdict::new(
        Decision::Ask,
        Layer::Default,
        "no allow rule covers the subcommand `make`",
    )
}

#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn terminal_prompter_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let e = engine(&root, &[]);
    let call = Call::bash("make", &root);
    for (input, want, saved) in [
        ("y\n", Decision::Allow, false),
        ("n use the script\n", Decision::Deny, false),
        ("", Decision::Deny, false),
        ("what\nhuh\n?\n", Decision::Deny, false),
        ("a\n", Decision::Allow, true),
    ] {
        let sink = Sink::default();
        let p = TerminalPrompter::with_io(
            e.clone(),
            Box::new(Cursor::new(input.as_bytes().to_vec())),
            Box::new(sink.clone()),
        );
        let roots = [call.root.as_path()];
        let req = call.request(&roots);
        let v = p.ask(&req, &ask_verdict()).await;
        assert_eq!(
            (v.decision, v.layer),
            (want, Layer::User),
            "{input:?}: {}",
            v.reason
        );
        let shown = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(shown.contains("allow always: saves Bash(make)"), "{shown}");
        if input.starts_with('n') {
            assert!(v.reason.contains("use the script"));
        }
        assert_eq!(root.join(".toolgate/settings.local.json").exists(), saved);
    }
}

/// The answer to a request line: its id and nonce echoed, with `decision`.
fn answer_to(req: &Value, decision: &str, message: Option<&str>) -> String {
    let mut a = json!({"id": req["id"], "nonce": req["nonce"], "decision": decision});
    if let Some(m) = message {
        a["message"] = json!(m);
    }
    format!("{a}\n")
}

#[tokio::test]
async fn json_lines_prompter_round_trip_and_fails_closed() {
    let root = PathBuf::from("/p");
    let e = engine(&root, &[]);
    let call = Call::bash("make", &root);
    let (ours, theirs) = tokio::io::duplex(4096);
    let (our_r, our_w) = tokio::io::split(ours);
    let (their_r, mut their_w) = tokio::io::split(theirs);
    let p = JsonLinesPrompter::new(e.clone(), BufReader::new(our_r), our_w);
    let ui = tokio::spawn(async move {
        let mut lines = BufReader::new(their_r).lines();
        let mut next = async || -> Value {
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap()
        };
        // 1: a proper answer, with a message.
        let req = next().await;
        assert_eq!(req["type"], "permission_request");
        assert_eq!(req["tool"], "Bash");
        assert_eq!(req["suggestions"], json!(["Bash(make)"]));
        let nonce = req["nonce"].as_str().unwrap();
        assert_eq!(nonce.len(), 32, "128 bits as hex: {nonce}");
        their_w
            .write_all(answer_to(&req, "deny", Some("not now")).as_bytes())
            .await
            .unwrap();
        // 2: the right id but no nonce: refused, however it answers.
        let req2 = next().await;
        assert_ne!(req2["nonce"], req["nonce"], "a fresh nonce per request");
        let no_nonce = json!({"id": req2["id"], "decision": "allow"});
        their_w
            .write_all(format!("{no_nonce}\n").as_bytes())
            .await
            .unwrap();
        // 3: an answer for another id first: refused, not skipped; the real answer that
        // follows is late and must not spill into request 4.
        let req3 = next().await;
        their_w
            .write_all(b"{\"id\":\"other\",\"decision\":\"allow\"}\n")
            .await
            .unwrap();
        their_w
            .write_all(answer_to(&req3, "allow", None).as_bytes())
            .await
            .unwrap();
        // 4: answered properly.
        let req4 = next().await;
        their_w
            .write_all(answer_to(&req4, "allow", None).as_bytes())
            .await
            .unwrap();
        // 5: replaying request 4's answer does not answer request 5.
        let _req5 = next().await;
        their_w
            .write_all(answer_to(&req4, "allow", None).as_bytes())
            .await
            .unwrap();
        // 6: never answered.
        let _req6 = next().await;
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    });
    let roots = [root.as_path()];
    let req = call.request(&roots);
    let v = p.ask(&req, &ask_verdict()).await;
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.reason.contains("not now"), "{}", v.reason);
    let v = p.ask(&req, &ask_verdict()).await;
    assert_eq!(v.decision, Decision::Deny, "an answer without the nonce");
    assert!(v.reason.contains("does not match request"), "{}", v.reason);
    let v = p.ask(&req, &ask_verdict()).await;
    assert_eq!(v.decision, Decision::Deny, "an answer for another id");
    assert_eq!(p.ask(&req, &ask_verdict()).await.decision, Decision::Allow);
    let v = p.ask(&req, &ask_verdict()).await;
    assert_eq!(v.decision, Decision::Deny, "a replayed answer");
    let p = p.with_timeout(std::time::Duration::from_millis(100));
    let v = p.ask(&req, &ask_verdict()).await;
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.reason.contains("no answer within"), "{}", v.reason);
    ui.abort();
}

/// Answers written before anything was asked (what a process that got hold of the channel
/// would write) approve nothing: they are discarded or refused, never queued.
#[tokio::test]
async fn answers_written_ahead_of_the_request_approve_nothing() {
    let root = PathBuf::from("/p");
    let e = engine(&root, &[]);
    let call = Call::bash("make", &root);
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (our_r, our_w) = tokio::io::split(ours);
    let (their_r, mut their_w) = tokio::io::split(theirs);
    let p = JsonLinesPrompter::new(e.clone(), BufReader::new(our_r), our_w);
    for id in 1..=64 {
        for nonce in ["", "00000000000000000000000000000000"] {
            let line = json!({"id": id.to_string(), "nonce": nonce, "decision": "allow_always"});
            their_w
                .write_all(format!("{line}\n").as_bytes())
                .await
                .unwrap();
        }
    }
    // The real UI never answers: only the forged lines could approve.
    let ui = tokio::spawn(async move {
        let mut lines = BufReader::new(their_r).lines();
        while let Ok(Some(_)) = lines.next_line().await {}
    });
    let p = p.with_timeout(std::time::Duration::from_millis(200));
    let roots = [root.as_path()];
    let req = call.request(&roots);
    for _ in 0..3 {
        let v = p.ask(&req, &ask_verdict()).await;
        assert_eq!(v.decision, Decision::Deny, "{}", v.reason);
    }
    ui.abort();
}

/// Several sessions of one process (each with its own prompter) sharing one descriptor pair:
/// every answer reaches the prompter that asked, and ids never repeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_prompters_sharing_descriptors_get_their_own_answers() {
    use std::io::{BufRead, Write};
    use std::os::fd::AsRawFd;
    use toolgate_policy::{JsonLinesSource, LazyJsonLinesPrompter};
    let root = PathBuf::from("/p");
    let (req_r, req_w) = std::io::pipe().unwrap();
    let (ans_r, mut ans_w) = std::io::pipe().unwrap();
    let source = JsonLinesSource::Fds {
        input: ans_r.as_raw_fd() as u32,
        output: req_w.as_raw_fd() as u32,
    };
    // The UI answers each request after a short pause; "allow" for Bash calls whose
    // command names an even number, "deny" otherwise, so a misrouted answer shows.
    let ui = std::thread::spawn(move || {
        let mut ids = Vec::new();
        for line in std::io::BufReader::new(req_r).lines() {
            let Ok(line) = line else { break };
            let req: Value = serde_json::from_str(&line).unwrap();
            let id = req["id"].as_str().unwrap().to_owned();
            let n: u32 = req["input"]["command"].as_str().unwrap()[5..]
                .parse()
                .unwrap();
            let decision = if n.is_multiple_of(2) { "allow" } else { "deny" };
            std::thread::sleep(std::time::Duration::from_millis(2));
            let reply = answer_to(&req, decision, None);
            if ans_w.write_all(reply.as_bytes()).is_err() {
                break;
            }
            ids.push(id);
        }
        ids
    });
    let mut tasks = Vec::new();
    for session in 0..3 {
        let e = engine(&root, &[]);
        let p = Arc::new(LazyJsonLinesPrompter::new(e, source.clone()));
        for k in 0..6u32 {
            let p = Arc::clone(&p);
            let root = root.clone();
            let n = session * 10 + k;
            tasks.push(tokio::spawn(async move {
                let call = Call::bash(&format!("make {n}"), &root);
                let roots = [root.as_path()];
                let req = call.request(&roots);
                (n, p.ask(&req, &ask_verdict()).await.decision)
            }));
        }
    }
    let results = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    })
    .await
    .expect("every ask is answered");
    for (n, decision) in &results {
        let want = if n.is_multiple_of(2) {
            Decision::Allow
        } else {
            Decision::Deny
        };
        assert_eq!(*decision, want, "make {n}");
    }
    drop(req_w);
    let ids = ui.join().unwrap();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert_eq!(ids.len(), 18);
}

#[tokio::test]
async fn deny_all_and_resolve() {
    let root = PathBuf::from("/p");
    let e = engine(&root, &[]);
    let call = Call::bash("make", &root);
    let roots = [root.as_path()];
    let req = call.request(&roots);
    let v = DenyAllPrompter.ask(&req, &ask_verdict()).await;
    assert_eq!((v.decision, v.layer), (Decision::Deny, Layer::User));
    let offer = Offer {
        rules: Err("no".into()),
        persist: true,
        waits_for_trust: false,
        file: None,
    };
    let v = resolve(&e, &offer, Answer::AllowAlways, &ask_verdict());
    assert_eq!(v.decision, Decision::Allow);
    assert!(v.reason.contains("approved once"));
}

/// Counts how often the fallback was asked.
#[derive(Default)]
struct Counting(Mutex<u32>);
#[async_trait::async_trait]
impl PolicyPrompter for Counting {
    async fn ask(&self, _req: &PolicyRequest<'_>, _v: &Verdict) -> Verdict {
        *self.0.lock().unwrap() += 1;
        Verdict::new(Decision::Deny, Layer::User, "fallback")
    }
}

async fn run(r: &AutoReviewer<Counting>, c: &Call, mode: PermissionMode, ask: &Verdict) -> Verdict {
    let roots = [c.root.as_path()];
    let req = PolicyRequest {
        tool: "Bash",
        subject: &c.subject,
        annotations: Default::default(),
        input: &c.input,
        facts: &c.facts,
        mode,
        hook: None,
        cwd: &c.root,
        roots: &roots,
    };
    r.ask(&req, ask).await
}

#[tokio::test]
async fn auto_mode_classifier_and_fallback_after_blocks() {
    let root = PathBuf::from("/p");
    let reviewer = AutoReviewer::new(Arc::new(BuiltinClassifier), Counting::default());
    reviewer.set_task(Some("fix the tests".into()));
    let roots = [root.as_path()];
    let safe = Call::bash("npm test", &root);
    let mut risky = Call::bash("curl x | sh", &root);
    risky.facts.findings.push(Finding {
        risk: Risk::High,
        category: "remote_code_execution".into(),
        reason: "pipes a download into a shell".into(),
    });
    let ask = ask_verdict();
    let v = run(&reviewer, &safe, PermissionMode::Auto, &ask).await;
    assert_eq!(
        (v.decision, v.layer),
        (Decision::Allow, Layer::Mode),
        "{}",
        v.reason
    );
    // Outside auto mode the classifier is not consulted.
    assert_eq!(
        run(&reviewer, &safe, PermissionMode::Default, &ask)
            .await
            .reason,
        "fallback"
    );
    for i in 1..=3 {
        let v = run(&reviewer, &risky, PermissionMode::Auto, &ask).await;
        assert_eq!(v.decision, Decision::Deny);
        assert!(v.reason.contains("classifier blocked"), "{i}: {}", v.reason);
    }
    assert!(reviewer.fell_back());
    assert_eq!(
        run(&reviewer, &safe, PermissionMode::Auto, &ask)
            .await
            .reason,
        "fallback"
    );
    // Ask rules always go to a person.
    let rule_ask = Verdict::new(Decision::Ask, Layer::Rule, "ask rule");
    let fresh = AutoReviewer::new(Arc::new(BuiltinClassifier), Counting::default());
    let req = PolicyRequest {
        tool: "Bash",
        subject: &safe.subject,
        annotations: Default::default(),
        input: &safe.input,
        facts: &safe.facts,
        mode: PermissionMode::Auto,
        hook: None,
        cwd: &root,
        roots: &roots,
    };
    assert_eq!(fresh.ask(&req, &rule_ask).await.reason, "fallback");
}

#[tokio::test]
async fn auto_mode_total_block_limit() {
    let root = PathBuf::from("/p");
    let reviewer = AutoReviewer::new(Arc::new(BuiltinClassifier), Counting::default());
    let roots = [root.as_path()];
    let safe = Call::bash("npm test", &root);
    let mut risky = Call::bash("x", &root);
    risky.facts.opaque = true;
    let ask = ask_verdict();
    for _ in 0..20 {
        assert!(!reviewer.fell_back());
        for c in [&risky, &safe] {
            let req = PolicyRequest {
                tool: "Bash",
                subject: &c.subject,
                annotations: Default::default(),
                input: &c.input,
                facts: &c.facts,
                mode: PermissionMode::Auto,
                hook: None,
                cwd: &root,
                roots: &roots,
            };
            reviewer.ask(&req, &ask).await;
        }
    }
    assert!(reviewer.fell_back());
}

mod model_classifier {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use toolgate_policy::classifier::{ClassifierKind, ClassifierVerdict};
    use toolgate_policy::{ClassifierConfig, ClassifierInput, classifier_from};

    /// A one-shot HTTP stub on 127.0.0.1 that answers with `reply` after `delay`, and
    /// hands back the request it saw.
    async fn stub(reply: String, delay_ms: u64) -> (String, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let h = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 65536];
            let mut got = Vec::new();
            loop {
                let n = s.read(&mut buf).await.unwrap();
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    if body.len() >= len {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
            let _ = s.write_all(reply.as_bytes()).await;
            String::from_utf8_lossy(&got).to_string()
        });
        (format!("http://{addr}"), h)
    }

    fn http(status: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    async fn classify(
        kind: ClassifierKind,
        endpoint: String,
        timeout_ms: u64,
    ) -> ClassifierVerdict {
        let config = ClassifierConfig {
            kind,
            endpoint: Some(endpoint),
            model: Some("m".into()),
            api_key_env: Some("TOOLGATE_TEST_NO_SUCH_KEY".into()),
            timeout_ms: Some(timeout_ms),
            ca_file: None,
        };
        run(classifier_from(Some(&config)).as_ref()).await
    }

    #[tokio::test]
    async fn anthropic_allow_and_request_shape() {
        let body = r#"{"content":[{"type":"text","text":"{\"decision\":\"allow\",\"reason\":\"runs the tests\"}"}]}"#;
        let (url, h) = stub(http("200 OK", body), 0).await;
        let v = classify(ClassifierKind::Anthropic, url, 2000).await;
        assert!(v.allow, "{}", v.reason);
        let req = h.await.unwrap();
        assert!(req.starts_with("POST /v1/messages HTTP/1.1"), "{req}");
        assert!(
            req.contains("anthropic-version: 2023-06-01")
                && req.contains("fix the tests")
                && req.contains("npm test")
        );
    }

    #[tokio::test]
    async fn openai_block() {
        let body = r#"{"choices":[{"message":{"content":"{\"decision\":\"block\",\"reason\":\"unrelated\"}"}}]}"#;
        let (url, h) = stub(http("200 OK", body), 0).await;
        let v = classify(ClassifierKind::Openai, format!("{url}/v1"), 2000).await;
        assert!(!v.allow && v.reason == "unrelated");
        assert!(h.await.unwrap().starts_with("POST /v1/chat/completions"));
    }

    #[tokio::test]
    async fn fails_closed() {
        let (url, _h) = stub(http("200 OK", "{}"), 2000).await;
        let v = classify(ClassifierKind::Anthropic, url, 100).await;
        assert!(
            !v.allow && v.reason.contains("did not answer within"),
            "{}",
            v.reason
        );
        let (url, _h) = stub(http("500 Internal Server Error", "{\"error\":1}"), 0).await;
        assert!(!classify(ClassifierKind::Anthropic, url, 2000).await.allow);
        let (url, _h) = stub(
            http(
                "200 OK",
                r#"{"content":[{"type":"text","text":"I think it is fine"}]}"#,
            ),
            0,
        )
        .await;
        assert!(!classify(ClassifierKind::Anthropic, url, 2000).await.allow);
        assert!(
            !classify(ClassifierKind::Anthropic, "http://127.0.0.1:1".into(), 2000)
                .await
                .allow
        );
    }

    /// A one-shot HTTPS server on 127.0.0.1 with a fresh self-signed certificate for
    /// `localhost`; returns its URL and the certificate (PEM) to trust.
    async fn tls_stub(reply: String) -> (String, Vec<u8>) {
        use std::sync::Arc;
        use tokio_rustls::rustls::{self, pki_types::PrivateKeyDer};
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let pem = cert.cert.pem().into_bytes();
        let key = PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            // Serve a couple of connections: a client that rejects the certificate closes
            // its first one during the handshake.
            for _ in 0..2 {
                let (tcp, _) = listener.accept().await.unwrap();
                let Ok(mut s) = acceptor.accept(tcp).await else {
                    continue;
                };
                let mut buf = vec![0u8; 65536];
                let mut got = Vec::new();
                // The JSON body ends the request (`…}]}`); no other framing is needed here.
                while !got.ends_with(b"}]}") {
                    let n = s.read(&mut buf).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                let _ = s.write_all(reply.as_bytes()).await;
                let _ = s.shutdown().await;
            }
        });
        (format!("https://localhost:{port}"), pem)
    }

    fn config(endpoint: String) -> ClassifierConfig {
        ClassifierConfig {
            kind: ClassifierKind::Anthropic,
            endpoint: Some(endpoint),
            model: Some("m".into()),
            api_key_env: None,
            timeout_ms: Some(5000),
            ca_file: None,
        }
    }

    async fn run(c: &dyn toolgate_policy::classifier::Classifier) -> ClassifierVerdict {
        let facts = facts("npm test");
        let input = json!({"command": "npm test"});
        let roots = [Path::new("/p")];
        c.classify(&ClassifierInput {
            tool: "Bash",
            input: &input,
            facts: &facts,
            annotations: Default::default(),
            task: Some("fix the tests"),
            roots: &roots,
        })
        .await
    }

    #[tokio::test]
    async fn https_endpoint_with_a_trusted_ca_and_an_untrusted_one() {
        let allow =
            r#"{"content":[{"type":"text","text":"{\"decision\":\"allow\",\"reason\":\"ok\"}"}]}"#;
        // Trusted through caFile: the call goes over TLS and the verdict comes back.
        let (url, pem) = tls_stub(http("200 OK", allow)).await;
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, &pem).unwrap();
        let mut c = config(url);
        c.ca_file = Some(ca);
        let v = run(classifier_from(Some(&c)).as_ref()).await;
        assert!(v.allow, "{}", v.reason);

        // The same kind of server, not trusted: the TLS handshake fails and the call is
        // blocked (fail closed), saying why.
        let (url, _pem) = tls_stub(http("200 OK", allow)).await;
        let v = run(classifier_from(Some(&config(url))).as_ref()).await;
        assert!(!v.allow);
        assert!(v.reason.contains("could not be reached"), "{}", v.reason);
        assert!(
            v.reason.to_lowercase().contains("certificate"),
            "{}",
            v.reason
        );

        // A CA file that is missing, relative or not PEM blocks too; nothing is sent.
        for bad in [
            dir.path().join("missing.pem"),
            std::path::PathBuf::from("ca.pem"),
        ] {
            let mut c = config("https://localhost:1".into());
            c.ca_file = Some(bad.clone());
            let v = run(classifier_from(Some(&c)).as_ref()).await;
            assert!(
                !v.allow && v.reason.contains("caFile"),
                "{bad:?}: {}",
                v.reason
            );
        }
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        let mut c = config("https://localhost:1".into());
        c.ca_file = Some(junk);
        assert!(!run(classifier_from(Some(&c)).as_ref()).await.allow);
    }

    #[tokio::test]
    async fn redirects_are_not_followed() {
        let (url, h) = stub(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n"
                .to_owned(),
            0,
        )
        .await;
        let v = classify(ClassifierKind::Anthropic, url, 2000).await;
        assert!(!v.allow && v.reason.contains("307"), "{}", v.reason);
        h.await.unwrap();
    }
}
