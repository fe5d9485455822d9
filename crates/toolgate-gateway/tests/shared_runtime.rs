//! A front door that gives its runtime to its upstreams (`run_upstreams_on`, as `toolgate
//! serve` on stdio does) may start servers from a task on that runtime: the start waits
//! without holding the only worker thread, which the servers it waits for start on.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use toolgate_gateway::{GatewayHost, Status, run_upstreams_on};
use toolgate_policy::settings::{Settings, SourceInfo, SourceKind, Sourced};

/// Far beyond a fixture server's start; reaching it means the start never finished.
const START_LIMIT: Duration = Duration::from_secs(60);

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/fixtures/upstream.py")
}

/// User settings with one unsandboxed stdio server, the Python fixture.
fn settings(dir: &Path) -> Settings {
    let mut s = Settings {
        project: dir.to_path_buf(),
        ..Settings::default()
    };
    s.sources.push(SourceInfo {
        kind: SourceKind::User,
        label: "user settings".into(),
        path: None,
        anchor: dir.to_path_buf(),
        claude: false,
    });
    s.mcp_servers.insert(
        "up".into(),
        Sourced {
            value: serde_json::json!({
                "command": "python3",
                "args": [fixture()],
                "sandbox": false,
            }),
            source: 0,
            active: true,
            note: None,
        },
    );
    s
}

#[test]
fn only_a_multi_thread_runtime_is_shared() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert!(run_upstreams_on(&rt).is_err());
}

#[test]
fn a_start_from_a_task_on_the_shared_runtime_finishes() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    run_upstreams_on(&rt).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(dir.path());
    let (tx, rx) = mpsc::channel();
    // On the one worker: the servers' starts are queued on this same thread.
    rt.spawn(async move {
        let started = GatewayHost::default()
            .start(&settings, false, None)
            .map(|g| g.servers().iter().map(|s| s.status()).collect::<Vec<_>>());
        let _ = tx.send(started);
    });
    let Ok(started) = rx.recv_timeout(START_LIMIT) else {
        // Its worker is stuck: dropping the runtime would wait for it forever.
        std::mem::forget(rt);
        panic!("a start on the shared runtime's worker never finished");
    };
    let statuses = started.unwrap();
    assert!(
        matches!(statuses.as_slice(), [Status::Connected(n)] if *n > 0),
        "{statuses:?}"
    );
}
