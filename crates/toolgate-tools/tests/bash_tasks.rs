//! Background tasks through the gate: start, incremental output, completion, TaskStop, the
//! cap on live tasks, session end, server detection and the legacy tool names.

mod bash_support;

use std::time::{Duration, Instant};

use bash_support::*;
use serde_json::json;
use toolgate_protocol::ErrorCode;
use toolgate_tools::shell::{ShellConfig, TaskOrigin, TaskStatus, tasks};

async fn start(g: &toolgate_core::Gate, command: &str) -> String {
    let r = call(
        g,
        "Bash",
        json!({"command": command, "run_in_background": true}),
    )
    .await;
    let t = text(&r);
    let id = task_id(&r);
    assert!(
        t.starts_with(&format!(
            "Command running in background with ID: {id}. Output is being written to: "
        )),
        "{t}"
    );
    id
}

/// Waits until the task's output file contains `needle`.
async fn output_contains(g: &toolgate_core::Gate, id: &str, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let path = tasks(g.session())
        .into_iter()
        .find(|t| t.id == id)
        .map(|t| t.output_path)
        .unwrap();
    while !std::fs::read_to_string(&path)
        .unwrap_or_default()
        .contains(needle)
    {
        assert!(Instant::now() < deadline, "{needle} never appeared");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn background_lifecycle_with_incremental_reads() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let started = Instant::now();
    let id = start(
        &g,
        "echo one; until [ -e go ]; do sleep 0.05; done; echo two; echo three; exit 5",
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "background start must not wait"
    );

    output_contains(&g, &id, "one").await;
    let r = call(&g, "TaskOutput", json!({"task_id": id, "block": false})).await;
    let t = text(&r);
    assert!(
        t.contains("<retrieval_status>not_ready</retrieval_status>"),
        "{t}"
    );
    assert!(t.contains("<status>running</status>"), "{t}");
    assert!(t.contains("<output>\none"), "{t}");
    assert!(!t.contains("three"));
    std::fs::write(dir.path().join("go"), "").unwrap();

    let r = call(&g, "TaskOutput", json!({"task_id": id})).await;
    let t = text(&r);
    assert!(
        t.contains("<retrieval_status>success</retrieval_status>"),
        "{t}"
    );
    assert!(
        t.contains("<status>completed</status>\n<exit_code>5</exit_code>"),
        "{t}"
    );
    assert!(t.contains("three"), "{t}");
    assert!(
        !t.contains("one"),
        "already-read output is not repeated: {t}"
    );

    let r = call(&g, "TaskOutput", json!({"task_id": id})).await;
    assert!(text(&r).contains("(no new output)"));

    let info = tasks(g.session());
    assert_eq!(info.len(), 1);
    assert_eq!(info[0].command.split(';').next(), Some("echo one"));
    assert_eq!(info[0].origin, TaskOrigin::Requested);
    assert_eq!(
        info[0].status,
        TaskStatus::Completed {
            exit_code: Some(5),
            signal: None
        }
    );
    assert_eq!(
        std::fs::read_to_string(&info[0].output_path).unwrap(),
        "one\ntwo\nthree\n"
    );
}

#[tokio::test]
async fn task_output_waits_no_longer_than_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let id = start(&g, "sleep 1000").await;
    let began = Instant::now();
    let r = call(
        &g,
        "TaskOutput",
        json!({"task_id": id, "block": true, "timeout": 300}),
    )
    .await;
    assert!(began.elapsed() < Duration::from_secs(5));
    let t = text(&r);
    assert!(
        t.contains("<retrieval_status>timeout</retrieval_status>")
            && t.contains("<status>running</status>"),
        "{t}"
    );
    call(&g, "TaskStop", json!({"task_id": id})).await;
}

#[tokio::test]
async fn task_stop_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let id = start(
        &g,
        "echo $$ > pids; sleep 1000 & echo $! >> pids; setsid sleep 1000 & echo $! >> pids; wait",
    )
    .await;
    let pids = pids_in(&dir.path().join("pids"), 3).await;
    assert!(pids.iter().all(|p| !gone(*p)));
    let r = call(&g, "TaskStop", json!({"task_id": id})).await;
    assert!(
        text(&r).starts_with(&format!("Successfully stopped task: {id}")),
        "{}",
        text(&r)
    );
    assert_eq!(
        survivors(&pids, Duration::from_secs(10)).await,
        Vec::<i32>::new()
    );
    let r = call(&g, "TaskOutput", json!({"task_id": id})).await;
    assert!(text(&r).contains("<status>killed</status>"), "{}", text(&r));
    // Stopping it again says why not.
    let r = call(&g, "TaskStop", json!({"task_id": id})).await;
    assert_eq!(code(&r), ErrorCode::InvalidRequest);
    assert!(r.error().unwrap().message.contains("is not running"));
}

#[tokio::test]
async fn live_tasks_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let config = ShellConfig {
        max_live_tasks: 2,
        ..ShellConfig::default()
    };
    let g = gate_with(dir.path(), &config);
    let a = start(&g, "sleep 1000").await;
    let _b = start(&g, "sleep 1000").await;
    let r = call(
        &g,
        "Bash",
        json!({"command": "sleep 1000", "run_in_background": true}),
    )
    .await;
    assert_eq!(code(&r), ErrorCode::InvalidRequest);
    let message = &r.error().unwrap().message;
    assert!(
        message.contains("TaskStop") && message.contains(&a),
        "{message}"
    );
    // At the cap, processes a foreground command leaves behind are stopped, not adopted.
    let r = bash(&g, "sleep 1000 >/dev/null 2>&1 & echo $! > left; echo hi").await;
    let t = text(&r);
    assert!(t.starts_with("hi\nThe command left processes running; they were stopped because 2 background tasks are already running"), "{t}");
    let left = pids_in(&dir.path().join("left"), 1).await;
    assert_eq!(
        survivors(&left, Duration::from_secs(10)).await,
        Vec::<i32>::new()
    );
    call(&g, "TaskStop", json!({"task_id": a})).await;
    start(&g, "sleep 1000").await;
    g.session().end();
}

#[tokio::test]
async fn ending_the_session_kills_every_task() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    start(&g, "echo $$ > a; sleep 1000 & echo $! >> a; wait").await;
    start(&g, "echo $$ > b; sleep 1000").await;
    // A foreground command's leftovers are tasks too.
    bash(&g, "sleep 1000 >/dev/null & echo $! > c").await;
    let mut pids = pids_in(&dir.path().join("a"), 2).await;
    pids.extend(pids_in(&dir.path().join("b"), 1).await);
    pids.extend(pids_in(&dir.path().join("c"), 1).await);
    assert!(pids.iter().all(|p| !gone(*p)));
    drop(g);
    assert_eq!(
        survivors(&pids, Duration::from_secs(10)).await,
        Vec::<i32>::new()
    );
}

fn has_python() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test]
async fn servers_start_in_the_background_by_themselves() {
    if !has_python() {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let began = Instant::now();
    let r = bash(&g, "python3 -m http.server 0 --bind 127.0.0.1").await;
    assert!(began.elapsed() < Duration::from_secs(10));
    let t = text(&r);
    assert!(
        t.contains("long-running server") && t.contains("python_server"),
        "{t}"
    );
    let id = task_id(&r);
    let info = tasks(g.session());
    assert_eq!(
        info[0].origin,
        TaskOrigin::Server {
            rule: "python_server".into()
        }
    );
    output_contains(&g, &id, "Serving HTTP").await;
    let r = call(&g, "TaskOutput", json!({"task_id": id, "block": false})).await;
    assert!(text(&r).contains("<status>running</status>"));
    let pid = info[0].pid as i32;
    let r = call(&g, "TaskStop", json!({"task_id": id})).await;
    assert!(!r.is_error());
    assert_eq!(
        survivors(&[pid], Duration::from_secs(10)).await,
        Vec::<i32>::new()
    );
}

#[tokio::test]
async fn legacy_names_work() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let fresh = start(&g, "printf 'ERROR a\\nok\\nERROR b\\n'").await;
    output_contains(&g, &fresh, "ERROR b").await;
    let r = call(
        &g,
        "BashOutput",
        json!({"bash_id": fresh, "filter": "^ERROR"}),
    )
    .await;
    let t = text(&r);
    assert!(t.contains("<stdout>\nERROR a\nERROR b\n</stdout>"), "{t}");
    let r = call(&g, "BashOutput", json!({"bash_id": fresh, "filter": "("})).await;
    assert_eq!(code(&r), ErrorCode::InvalidRequest);

    let k = start(&g, "sleep 1000").await;
    let r = call(&g, "KillShell", json!({"shell_id": k})).await;
    assert!(
        text(&r).starts_with(&format!("Successfully killed shell: {k}")),
        "{}",
        text(&r)
    );
    let s = start(&g, "sleep 1000").await;
    let r = call(&g, "TaskStop", json!({"shell_id": s})).await;
    assert!(!r.is_error(), "{:?}", r.error());
    let r = call(&g, "TaskStop", json!({})).await;
    assert_eq!(code(&r), ErrorCode::InvalidRequest);
}

#[tokio::test]
async fn unknown_task_ids_list_the_real_ones() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let r = call(&g, "TaskOutput", json!({"task_id": "nope"})).await;
    assert_eq!(code(&r), ErrorCode::InvalidRequest);
    assert!(r.error().unwrap().message.contains("no background tasks"));
    let id = start(&g, "true").await;
    let r = call(&g, "TaskStop", json!({"task_id": "nope"})).await;
    assert!(r.error().unwrap().message.contains(&id));
}

#[tokio::test]
async fn long_task_output_is_capped_inline() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let id = start(&g, "seq 1 100000").await;
    let r = call(&g, "TaskOutput", json!({"task_id": id})).await;
    let t = text(&r);
    assert!(t.contains("<output>\n1\n2\n3\n"), "{}", &t[..200]);
    assert!(t.contains("99999\n100000\n</output>"));
    assert!(t.contains("bytes omitted"));
    assert_eq!(structured(&r)["truncated"], true);
    assert!(t.len() < 40_000);
}
