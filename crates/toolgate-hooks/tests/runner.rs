//! The runner: parallelism, timeouts that kill the process group, huge outputs, stdin
//! handling, async hooks, precedence, `if`, dedupe.

mod common;

use std::time::{Duration, Instant};

use common::{Fixture, cmd, decide, process_gone};
use serde_json::{Value, json};
use toolgate_hooks::{HookConfig, HookEngine, HookEnv};
use toolgate_protocol::{Decision, Layer};

fn input() -> serde_json::Value {
    json!({"text": "hi"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matching_hooks_run_in_parallel() {
    let f = Fixture::new();
    let e = f.pre_engine(json!([cmd("sleep 1"), cmd("sleep 1; true")]));
    let t = Instant::now();
    let out = f.pre(&e, "Echo", input()).await;
    let took = t.elapsed();
    assert_eq!(out.records.len(), 2);
    assert!(
        took >= Duration::from_millis(950) && took < Duration::from_millis(1800),
        "{took:?}"
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let f = Fixture::new();
    let pidfile = f.path().join("pids");
    let c = format!(
        "sleep 100 & echo $! >> {p}; (sleep 100; echo late) & echo $! >> {p}; echo $$ >> {p}; sleep 100",
        p = pidfile.display()
    );
    let e = f.pre_engine(json!([{"type": "command", "command": c, "timeout": 1}]));
    let t = Instant::now();
    let out = f.pre(&e, "Echo", input()).await;
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(out.verdict.is_none(), "a timeout is a non-blocking error");
    assert_eq!(out.records[0].outcome, "timeout");
    assert!(
        out.records[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("process group was killed")
    );
    let pids: Vec<i32> = std::fs::read_to_string(&pidfile)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3);
    // Reparented orphans are reaped by init; give it a moment.
    let deadline = Instant::now() + Duration::from_secs(3);
    while !pids.iter().all(|p| process_gone(*p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for p in pids {
        assert!(process_gone(p), "pid {p} survived the timeout");
    }

    let e = f.pre_engine(
        json!([{"type": "command", "command": "sleep 100", "timeout": 0.5, "failClosed": true}]),
    );
    let v = f.pre(&e, "Echo", input()).await.verdict.unwrap();
    assert_eq!((v.decision, v.layer), (Decision::Deny, Layer::Hook));
}

#[tokio::test]
async fn background_children_do_not_hold_the_hook_open() {
    let f = Fixture::new();
    let pidfile = f.path().join("bg");
    let c = format!("sleep 100 & echo $! > {}; exit 0", pidfile.display());
    let e = f.pre_engine(json!([cmd(&c)]));
    let t = Instant::now();
    f.pre(&e, "Echo", input()).await;
    assert!(t.elapsed() < Duration::from_secs(3));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while !process_gone(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(process_gone(pid));
}

#[tokio::test]
async fn a_100_mb_printer_neither_deadlocks_nor_exhausts_memory() {
    let f = Fixture::new();
    // 100 MB on stdout and on stderr at once, then a decision that is lost in the noise.
    let c = "head -c 100000000 /dev/zero >&2 & head -c 100000000 /dev/zero; wait; exit 2";
    let e = f.pre_engine(json!([{"type": "command", "command": c, "timeout": 60}]));
    let t = Instant::now();
    let out = f.pre(&e, "Echo", input()).await;
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    let v = out.verdict.unwrap();
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.reason.chars().count() <= 10_100);
    // A JSON answer over the cap is an error, not a half-parsed object.
    let c = r#"printf '{"a": "'; head -c 100000000 /dev/zero | tr '\0' x; printf '"}'"#;
    let e = f.pre_engine(json!([cmd(c)]));
    let out = f.pre(&e, "Echo", input()).await;
    assert_eq!(out.records[0].outcome, "error");
    assert!(out.records[0].detail.as_deref().unwrap().contains("1 MiB"));
}

#[tokio::test]
async fn hooks_that_close_or_ignore_stdin() {
    let f = Fixture::new();
    // A 4 MB input: far beyond a pipe buffer.
    let big = json!({"text": "y".repeat(4 * 1024 * 1024)});
    let deny = decide("deny", "closed early");
    let e = f.pre_engine(json!([cmd(&format!("exec 0<&-; {deny}"))]));
    let v = f.pre(&e, "Echo", big.clone()).await.verdict.unwrap();
    assert_eq!(v.reason, "closed early");

    let e = f.pre_engine(json!([cmd("sleep 0.3; echo ignored >&2; exit 2")]));
    let v = f.pre(&e, "Echo", big.clone()).await.verdict.unwrap();
    assert_eq!(v.reason, "ignored");

    // And one that reads it all: the payload arrives whole, on stdin only.
    let e = f.pre_engine(json!([cmd(r#"n=$(wc -c); e=$(env | grep -c yyyyyyyy); echo "{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"additionalContext\": \"$n $e\"}}""#)]));
    let out = f.pre(&e, "Echo", big).await;
    let (n, in_env) = out.additional_context[0].trim().split_once(' ').unwrap();
    assert!(n.parse::<usize>().unwrap() > 4 * 1024 * 1024);
    assert_eq!(in_env, "0", "the payload must not be in the environment");
}

#[tokio::test]
async fn async_hooks_run_detached_and_cannot_decide() {
    let f = Fixture::new();
    let marker = f.path().join("marker");
    let c = format!("sleep 1; touch {}; exit 2", marker.display());
    let e = f.pre_engine(json!([{"type": "command", "command": c, "async": true}]));
    let t = Instant::now();
    let out = f.pre(&e, "Echo", input()).await;
    assert!(t.elapsed() < Duration::from_millis(500));
    assert!(out.verdict.is_none());
    assert_eq!(out.records[0].outcome, "none");
    assert!(!marker.exists());
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(marker.exists());
}

#[tokio::test]
async fn precedence_deny_defer_ask_allow() {
    let f = Fixture::new();
    let cases: &[(&[&str], Decision, &str)] = &[
        (&["allow", "ask", "deny"], Decision::Deny, "deny"),
        (&["deny", "allow"], Decision::Deny, "deny"),
        (&["allow", "ask"], Decision::Ask, "ask"),
        (&["ask", "defer", "allow"], Decision::Ask, "defer"),
        (&["allow", "allow"], Decision::Allow, "allow"),
    ];
    for (hooks, want, reason) in cases {
        // Distinct commands (a trailing no-op) so dedupe keeps them all.
        let handlers: Vec<_> = hooks
            .iter()
            .enumerate()
            .map(|(i, d)| cmd(&format!("{}; : {i}", decide(d, d))))
            .collect();
        let e = f.pre_engine(json!(handlers));
        let out = f.pre(&e, "Echo", input()).await;
        let v = out.verdict.unwrap();
        assert_eq!(
            (v.decision, v.reason.as_str()),
            (*want, *reason),
            "{hooks:?}"
        );
        assert_eq!(out.records.len(), hooks.len());
    }
    // A deny drops another hook's updatedInput; two different updatedInputs deny.
    let upd = |t: &str| {
        let j = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"text": t}}});
        cmd(&format!("echo '{j}'"))
    };
    let e = f.pre_engine(json!([upd("a"), cmd(&decide("deny", "no"))]));
    let out = f.pre(&e, "Echo", input()).await;
    assert!(out.updated_input.is_none());
    let e = f.pre_engine(json!([upd("a"), upd("b")]));
    let out = f.pre(&e, "Echo", input()).await;
    assert_eq!(out.verdict.unwrap().decision, Decision::Deny);
    assert!(out.updated_input.is_none());
}

/// A stand-in for the permission engine's `if` matcher: `Bash(WORD *)` runs the hook when
/// the command contains WORD as a word. The engine's own semantics are tested where it is
/// plugged in (toolgate-setup).
struct WordIf;

impl toolgate_hooks::IfMatcher for WordIf {
    fn matches(&self, rule: &str, _tool: &str, input: &Value) -> bool {
        let word = rule.trim_start_matches("Bash(").trim_end_matches(" *)");
        input["command"]
            .as_str()
            .is_some_and(|c| c.split_whitespace().any(|w| w == word))
    }
}

#[tokio::test]
async fn matchers_and_if_filter() {
    let f = Fixture::new();
    let e = f
        .engine(json!({"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo rm >&2; exit 2", "if": "Bash(rm *)"}]},
            {"matcher": "Edit.*", "hooks": [cmd("echo edit >&2; exit 2")]},
            {"matcher": "Read|Grep", "hooks": [cmd("echo read >&2; exit 2")]},
        ]}))
        .with_if_matcher(std::sync::Arc::new(WordIf));
    let v = f
        .pre(&e, "Bash", json!({"command": "git status && rm -rf x"}))
        .await
        .verdict;
    assert_eq!(v.unwrap().reason, "rm");
    let out = f.pre(&e, "Bash", json!({"command": "ls"})).await;
    assert!(out.verdict.is_none() && out.records.is_empty());
    assert_eq!(
        f.pre(&e, "NotebookEdit", input())
            .await
            .verdict
            .unwrap()
            .reason,
        "edit"
    );
    assert_eq!(
        f.pre(&e, "Grep", input()).await.verdict.unwrap().reason,
        "read"
    );
    assert!(f.pre(&e, "Glob", input()).await.records.is_empty());
    // Without a matcher plugged in, `if` is not interpreted: the hook runs.
    let e = f.engine(json!({"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo rm >&2; exit 2", "if": "Bash(rm *)"}]},
    ]}));
    let v = f.pre(&e, "Bash", json!({"command": "ls"})).await.verdict;
    assert_eq!(v.map(|v| v.reason).as_deref(), Some("rm"));
}

#[tokio::test]
async fn identical_handlers_from_several_sources_run_once() {
    let f = Fixture::new();
    let log = f.path().join("count");
    let h = json!({"PreToolUse": [{"matcher": "*", "hooks": [cmd(&format!("echo x >> {}", log.display()))]}]});
    let config = HookConfig::from_settings(
        &[
            (h.clone(), true, "user".into()),
            (h.clone(), true, "project".into()),
            (h, false, "untrusted".into()),
        ],
        false,
        false,
    )
    .unwrap();
    let e = HookEngine::new(
        config,
        HookEnv {
            project_dir: f.path().into(),
            transcript_path: None,
        },
    );
    let out = f.pre(&e, "Echo", input()).await;
    assert_eq!(out.records.len(), 1);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "x\n");
}

#[tokio::test]
async fn exec_form_passes_arguments_without_a_shell() {
    let f = Fixture::new();
    let e = f.pre_engine(json!([{"type": "command", "command": "sh", "args": ["-c", "echo \"$1\" >&2; exit 2", "sh", "a; b $(x)"]}]));
    assert_eq!(
        f.pre(&e, "Echo", input()).await.verdict.unwrap().reason,
        "a; b $(x)"
    );
    let e = f.pre_engine(json!([{"type": "command", "command": "/nonexistent/hook", "args": []}]));
    let out = f.pre(&e, "Echo", input()).await;
    assert_eq!(out.records[0].outcome, "error");
}

#[tokio::test]
async fn a_cancelled_call_kills_the_hook_group() {
    let f = Fixture::new();
    let pidfile = f.path().join("pids");
    let c = format!(
        "sleep 100 & echo $! >> {p}; echo $$ >> {p}; sleep 100",
        p = pidfile.display()
    );
    let e = f.pre_engine(json!([cmd(&c)]));
    let cancelled =
        tokio::time::timeout(Duration::from_millis(500), f.pre(&e, "Echo", input())).await;
    assert!(cancelled.is_err());
    let pids: Vec<i32> = std::fs::read_to_string(&pidfile)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(3);
    while !pids.iter().all(|p| process_gone(*p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(pids.iter().all(|p| process_gone(*p)), "{pids:?}");
}
