//! WebFetch and WebSearch through the binary (`toolgate call`, `exec`, `tools`, `config`),
//! against fixture servers on loopback only. Settings come from `--settings` (applied at
//! once) or a project file (which waits for `toolgate trust`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use toolgate_web::testing::{Reply, Server};

struct Env {
    ws: tempfile::TempDir,
    config: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            ws: tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
            config: tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
        }
    }

    fn bin(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        // Keep the machine's user settings and trust records out of the tests.
        c.env_remove("TOOLGATE_LOG")
            .env("NO_COLOR", "1")
            .env("XDG_CONFIG_HOME", self.config.path());
        c
    }

    fn ws(&self) -> &Path {
        self.ws.path()
    }

    fn call(&self, extra: &[&str], tool: &str, input: Value) -> (Option<i32>, Value) {
        let out = self
            .bin()
            .args(["call", "--no-audit", "--json", "--workspace"])
            .arg(self.ws())
            .args(extra)
            .arg(tool)
            .arg(input.to_string())
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code(), v)
    }

    fn exec(&self, extra: &[&str], calls: &[Value]) -> Vec<Value> {
        let mut child = self
            .bin()
            .args(["exec", "--no-audit", "--workspace"])
            .arg(self.ws())
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let mut input = String::new();
        for c in calls {
            input.push_str(&c.to_string());
            input.push('\n');
        }
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input.as_bytes())
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.bin()
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn project_settings(&self, v: &Value) -> PathBuf {
        let dir = self.ws().join(".toolgate");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let path = dir.join("settings.json");
        std::fs::write(&path, v.to_string()).unwrap_or_else(|e| panic!("{e}"));
        path
    }
}

/// The text of a result and its error code (from the `toolgate` summary).
fn outcome(v: &Value) -> (String, Option<String>) {
    let text = match &v["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    };
    let code = v["toolgate"]["error"]["code"]
        .as_str()
        .or_else(|| v["toolgate"]["code"].as_str())
        .map(str::to_owned)
        .or_else(|| {
            text.split("code=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .map(str::to_owned)
        });
    (text, code)
}

fn local_settings(servers: &[&Server]) -> String {
    json!({"webFetch": {
        "allowPrivate": servers.iter().map(|s| s.addr().to_string()).collect::<Vec<_>>(),
        "allowHttp": ["127.0.0.1", "*.example"],
        "resolve": {"public.example": ["127.0.0.1"]}
    }})
    .to_string()
}

fn fetch_input(url: &str) -> Value {
    json!({"url": url, "prompt": "summarise"})
}

#[test]
fn call_fetches_an_allowed_local_page_and_refuses_internal_addresses() {
    let env = Env::new();
    let server = Server::start(|_| Reply::ok("text/html", "<h1>Local docs</h1><p>body</p>"))
        .unwrap_or_else(|e| panic!("{e}"));
    let settings = local_settings(&[&server]);
    let allow = ["--settings", &settings, "--allow", "WebFetch"];
    let (status, v) = env.call(&allow, "WebFetch", fetch_input(&server.url("/docs")));
    let (text, code) = outcome(&v);
    assert_eq!((status, code), (Some(0), None), "{v}");
    assert!(
        text.contains("# Local docs") && text.contains("<untrusted-web-content"),
        "{text}"
    );
    // The same server under another spelling, and a name resolving to it on a port the
    // settings do not list: refused, exit code 2.
    let hidden =
        Server::start(|_| Reply::ok("text/plain", "hidden")).unwrap_or_else(|e| panic!("{e}"));
    let p = hidden.addr().port();
    for url in [
        format!("http://0x7f.1:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://public.example:{p}/"),
        format!("http://localhost:{p}/"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    ] {
        let (status, v) = env.call(&allow, "WebFetch", fetch_input(&url));
        let (text, code) = outcome(&v);
        assert_eq!(status, Some(2), "{url}: {v}");
        assert_eq!(code.as_deref(), Some("denied"), "{url}: {v}");
        assert!(text.contains("allowPrivate"), "{url}: {text}");
    }
    assert!(
        hidden.requests().is_empty(),
        "a refused fetch reached the server"
    );
    // Bad input: invalid_input, exit code 1.
    let (status, v) = env.call(&allow, "WebFetch", fetch_input("file:///etc/passwd"));
    assert_eq!(
        (status, outcome(&v).1.as_deref()),
        (Some(1), Some("invalid_input")),
        "{v}"
    );
}

#[test]
fn exec_reports_each_fault_with_its_code() {
    let env = Env::new();
    let server = Server::start(|req| match req.path.as_str() {
        "/loop" => Reply::redirect(302, "/loop"),
        "/endless" => Reply::Endless,
        "/slow" => Reply::Trickle {
            every: std::time::Duration::from_millis(300),
        },
        "/meta" => Reply::redirect(302, "http://169.254.169.254/"),
        "/img" => Reply::ok("image/png", b"\x89PNG".to_vec()),
        _ => Reply::ok("text/html", "<p>page</p>"),
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut settings: Value =
        serde_json::from_str(&local_settings(&[&server])).unwrap_or_else(|e| panic!("{e}"));
    settings["webFetch"]["timeoutMs"] = json!(1500);
    let settings = settings.to_string();
    let call = |id: &str, url: String| json!({"type": "tool_use", "id": id, "name": "WebFetch", "input": fetch_input(&url)});
    let results = env.exec(
        &["--settings", &settings, "--allow", "WebFetch"],
        &[
            call("loop", server.url("/loop")),
            call("endless", server.url("/endless")),
            call("slow", server.url("/slow")),
            call("meta", server.url("/meta")),
            call("img", server.url("/img")),
            call("scheme", "gopher://example.com/".into()),
            call("page", server.url("/")),
            call("again", server.url("/")),
        ],
    );
    let by_id = |id: &str| {
        results
            .iter()
            .find(|r| r["tool_use_id"] == id)
            .map(outcome)
            .unwrap_or_else(|| panic!("no result for {id}: {results:?}"))
    };
    assert_eq!(by_id("loop").1.as_deref(), Some("execution_failed"));
    assert_eq!(by_id("endless").1.as_deref(), Some("execution_failed"));
    assert_eq!(by_id("slow").1.as_deref(), Some("timeout"));
    let (meta, code) = by_id("meta");
    assert_eq!(code.as_deref(), Some("denied"), "{meta}");
    assert!(
        meta.contains("redirected to http://169.254.169.254/"),
        "{meta}"
    );
    assert_eq!(by_id("img").1.as_deref(), Some("invalid_request"));
    assert_eq!(by_id("scheme").1.as_deref(), Some("invalid_input"));
    assert_eq!(by_id("page").1, None);
    assert_eq!(by_id("again").1, None);
    // The second fetch of the page came from the session's cache.
    let pages = server.requests().iter().filter(|r| r.path == "/").count();
    assert_eq!(pages, 1);
}

#[test]
fn project_web_settings_wait_for_trust() {
    let env = Env::new();
    let server = Server::start(|_| Reply::ok("text/plain", "project page"))
        .unwrap_or_else(|e| panic!("{e}"));
    let project: Value =
        serde_json::from_str(&local_settings(&[&server])).unwrap_or_else(|e| panic!("{e}"));
    env.project_settings(&project);
    let input = fetch_input(&server.url("/"));
    let (status, v) = env.call(&["--allow", "WebFetch"], "WebFetch", input.clone());
    assert_eq!(
        status,
        Some(2),
        "the untrusted project's allowPrivate applied: {v}"
    );
    assert!(server.requests().is_empty());
    let config = env.run(&[
        "config",
        "--workspace",
        env.ws().to_str().unwrap_or_default(),
    ]);
    let text = String::from_utf8_lossy(&config.stdout);
    assert!(
        text.contains("webFetch waits for `toolgate trust`"),
        "{text}"
    );
    let trust = env.run(&["trust", env.ws().to_str().unwrap_or_default()]);
    assert!(trust.status.success(), "{trust:?}");
    let (status, v) = env.call(&["--allow", "WebFetch"], "WebFetch", input);
    assert_eq!(status, Some(0), "{v}");
    assert!(outcome(&v).0.contains("project page"));
}

#[test]
fn websearch_is_offered_only_with_a_backend() {
    let env = Env::new();
    let names = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "tools",
            "--format",
            "anthropic",
            "--workspace",
            env.ws().to_str().unwrap_or_default(),
        ];
        args.extend_from_slice(extra);
        let out = env.run(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let plain = names(&[]);
    assert!(
        plain.contains(&"WebFetch".to_owned()) && !plain.contains(&"WebSearch".to_owned()),
        "{plain:?}"
    );
    let config = env.run(&[
        "config",
        "--workspace",
        env.ws().to_str().unwrap_or_default(),
    ]);
    let text = String::from_utf8_lossy(&config.stdout);
    assert!(
        text.contains("WebSearch: not offered") && text.contains("\"backend\": \"searxng\""),
        "{text}"
    );

    let searx = Server::start(|req| {
        if req.path.contains("format=json") {
            Reply::ok("application/json", json!({"results": [{"title": "Hit", "url": "https://docs.example/a", "content": "snippet"}]}).to_string())
        } else {
            Reply::ok("text/html", "<html></html>")
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let settings = json!({"webSearch": {"backend": "searxng", "url": searx.url("")}}).to_string();
    let with = names(&["--settings", &settings]);
    assert!(with.contains(&"WebSearch".to_owned()), "{with:?}");
    let (status, v) = env.call(
        &["--settings", &settings, "--allow", "WebSearch"],
        "WebSearch",
        json!({"query": "docs"}),
    );
    let (text, code) = outcome(&v);
    assert_eq!((status, code), (Some(0), None), "{v}");
    assert!(
        text.contains("1. Hit\n   https://docs.example/a\n   snippet"),
        "{text}"
    );
    // A backend answering HTML: a clear error.
    let html = Server::start(|_| Reply::ok("text/html", "<html>login</html>"))
        .unwrap_or_else(|e| panic!("{e}"));
    let settings = json!({"webSearch": {"backend": "searxng", "url": html.url("")}}).to_string();
    let (status, v) = env.call(
        &["--settings", &settings, "--allow", "WebSearch"],
        "WebSearch",
        json!({"query": "docs"}),
    );
    let (text, code) = outcome(&v);
    assert_eq!(
        (status, code.as_deref()),
        (Some(1), Some("execution_failed")),
        "{v}"
    );
    assert!(text.contains("instead of JSON"), "{text}");
    // Keys never come from settings files.
    let bad = json!({"webSearch": {"backend": "brave", "apiKey": "sk-123"}}).to_string();
    let out = env.run(&[
        "tools",
        "--settings",
        &bad,
        "--workspace",
        env.ws().to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(64));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("apiKeyEnv"),
        "{out:?}"
    );
}

#[test]
fn webfetch_rules_match_the_host_contacted() {
    let env = Env::new();
    let server = Server::start(|_| Reply::ok("text/plain", "ok")).unwrap_or_else(|e| panic!("{e}"));
    let settings = local_settings(&[&server]);
    let p = server.addr().port();
    // Allowed by a domain rule for the name; the address spelled otherwise is another host.
    let rule = [
        "--settings",
        &settings,
        "--allow",
        "WebFetch(domain:public.example)",
    ];
    let (status, v) = env.call(
        &rule,
        "WebFetch",
        fetch_input(&format!("http://public.example:{p}/")),
    );
    assert_eq!(status, Some(0), "{v}");
    let (status, v) = env.call(
        &rule,
        "WebFetch",
        fetch_input(&format!("http://127.0.0.1:{p}/")),
    );
    assert_eq!(status, Some(2), "{v}");
    // A deny rule with a wildcard wins over the allow.
    let deny = [
        "--settings",
        &settings,
        "--allow",
        "WebFetch",
        "--deny",
        "WebFetch(domain:*.example)",
    ];
    let (status, v) = env.call(
        &deny,
        "WebFetch",
        fetch_input(&format!("http://PUBLIC.example.:{p}/")),
    );
    assert_eq!(status, Some(2), "{v}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn webfetch_model_answers_the_prompt_through_the_classifier_client() {
    let env = Env::new();
    let page = Server::start(|_| Reply::ok("text/html", "<p>The answer is 42.</p>"))
        .unwrap_or_else(|e| panic!("{e}"));
    // An Anthropic Messages compatible endpoint that answers every request the same way.
    let model = Server::start(|req| {
        if req.method == "POST" && req.path == "/v1/messages" {
            Reply::ok(
                "application/json",
                json!({"content": [{"type": "text", "text": "It says 42."}]}).to_string(),
            )
        } else {
            Reply::Full {
                status: 404,
                headers: vec![],
                body: Vec::new(),
            }
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut settings: Value =
        serde_json::from_str(&local_settings(&[&page])).unwrap_or_else(|e| panic!("{e}"));
    settings["webFetch"]["model"] =
        json!({"kind": "anthropic", "endpoint": model.url(""), "model": "small"});
    let settings = settings.to_string();
    let (status, v) = env.call(
        &["--settings", &settings, "--allow", "WebFetch"],
        "WebFetch",
        fetch_input(&page.url("/")),
    );
    let (text, code) = outcome(&v);
    assert_eq!((status, code), (Some(0), None), "{v}");
    assert!(
        text.contains("It says 42.") && !text.contains("The answer is 42."),
        "{text}"
    );
    assert_eq!(model.requests().len(), 1);
    let config = env.run(&[
        "config",
        "--settings",
        &settings,
        "--workspace",
        env.ws().to_str().unwrap_or_default(),
    ]);
    assert!(
        String::from_utf8_lossy(&config.stdout)
            .contains("WebFetch: prompts answered by anthropic small")
    );
    // A model setting without an endpoint is refused at start-up.
    let bad = json!({"webFetch": {"model": {"kind": "anthropic"}}}).to_string();
    let out = env.run(&[
        "tools",
        "--settings",
        &bad,
        "--workspace",
        env.ws().to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(64), "{out:?}");
}
