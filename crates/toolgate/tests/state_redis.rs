//! `--state redis://…` through the CLI: one budget for separate `toolgate` processes, a
//! clear error for wrong credentials, and each limit's fallback while Redis is down —
//! recorded in the audit log. Starts its own `redis-server` (installed by .ci/run; the
//! test fails, not skips, without it).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use toolgate_test_servers::Redis;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    c.env_remove("TOOLGATE_LOG").env("NO_COLOR", "1").env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("toolgate-tests-no-user-config"),
    );
    c
}

struct Ws {
    dir: tempfile::TempDir,
}

impl Ws {
    fn new(rate: Value) -> Ws {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "alpha\n").unwrap();
        let settings = json!({"toolgate": {"constraints": {"Read": {"rate": rate}}}});
        std::fs::write(dir.path().join("limits.json"), settings.to_string()).unwrap();
        Ws { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn audit(&self) -> std::path::PathBuf {
        self.path().join("audit.jsonl")
    }

    /// One `toolgate call` process reading notes.txt.
    fn call(&self, state: &str, session: &str) -> Output {
        bin()
            .args(["call", "--json", "--workspace"])
            .arg(self.path())
            .arg("--settings")
            .arg(self.path().join("limits.json"))
            .arg("--audit")
            .arg(self.audit())
            .args(["--state", state, "--session-id", session])
            .args(["Read", r#"{"file_path":"notes.txt"}"#])
            .output()
            .unwrap()
    }

    fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(self.audit())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn codes(ws: &Ws) -> Vec<String> {
    ws.records()
        .iter()
        .map(|r| r["code"].as_str().unwrap_or("ok").to_owned())
        .collect()
}

#[test]
fn separate_processes_share_one_global_budget() {
    let redis = Redis::start();
    let ws = Ws::new(json!({"calls": 3, "perSeconds": 300, "scope": "global"}));
    for i in 0..5 {
        let out = ws.call(&redis.url(), &format!("session-{i}"));
        let expected = if i < 3 { 0 } else { 1 };
        assert_eq!(
            out.status.code(),
            Some(expected),
            "call {i}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        codes(&ws),
        ["ok", "ok", "ok", "rate_limited", "rate_limited"]
    );
    // Without --state each process counts alone: the same call is allowed again.
    let alone = bin()
        .args(["call", "--json", "--no-audit", "--workspace"])
        .arg(ws.path())
        .arg("--settings")
        .arg(ws.path().join("limits.json"))
        .args(["Read", r#"{"file_path":"notes.txt"}"#])
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(0));
}

#[test]
fn a_session_scope_counts_one_session_across_processes() {
    let redis = Redis::start();
    let ws = Ws::new(json!({"calls": 1, "perSeconds": 300}));
    assert_eq!(ws.call(&redis.url(), "same").status.code(), Some(0));
    assert_eq!(ws.call(&redis.url(), "same").status.code(), Some(1));
    assert_eq!(ws.call(&redis.url(), "other").status.code(), Some(0));
}

#[test]
fn wrong_credentials_and_bad_urls_stop_the_front_door_at_start() {
    let redis = Redis::start_with_password("sesame");
    let ws = Ws::new(json!({"calls": 3, "perSeconds": 60, "scope": "global"}));
    let wrong = format!("redis://:letmein@127.0.0.1:{}/0", redis.port());
    for url in [
        wrong.as_str(),
        "http://example.com",
        "redis://:letmein@[oops",
    ] {
        let out = ws.call(url, "s");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{url}: {err}");
        assert!(!err.contains("letmein"), "the password leaked: {err}");
        assert!(err.contains("redis"), "{url}: {err}");
    }
    assert!(ws.records().is_empty(), "nothing ran");
    let right = format!("redis://:sesame@127.0.0.1:{}/0", redis.port());
    assert_eq!(ws.call(&right, "s").status.code(), Some(0));
}

#[test]
fn while_redis_is_down_each_limit_gets_its_fallback_and_the_record_says_so() {
    let mut redis = Redis::start();
    let url = redis.url();
    redis.stop();
    // deny (the default): refused, saying why; starting is not refused.
    let deny = Ws::new(json!({"calls": 100, "perSeconds": 60, "scope": "global"}));
    let out = deny.call(&url, "s");
    assert_eq!(out.status.code(), Some(1));
    let record = &deny.records()[0];
    assert_eq!(record["code"], "rate_limited");
    let note = record["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "constrain")
        .and_then(|s| s["note"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(
        note.contains("cannot be reached") && note.contains("fallback deny"),
        "{note}"
    );
    // local: runs, and the audit record notes the degradation.
    let local =
        Ws::new(json!({"calls": 100, "perSeconds": 60, "scope": "global", "fallback": "local"}));
    assert_eq!(local.call(&url, "s").status.code(), Some(0));
    let record = &local.records()[0];
    let constrain = record["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "constrain")
        .cloned()
        .unwrap();
    assert_eq!(constrain["status"], "pass");
    assert!(
        constrain["note"]
            .as_str()
            .is_some_and(|n| n.contains("counted in this process only")),
        "{constrain}"
    );
}
