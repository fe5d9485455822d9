//! Upstream MCP tools that change while an embedded gate runs: a gate from
//! `Setup::build` (whose setup objects the caller drops) still follows its servers — one
//! that is down at first joins when it comes up, under the settings' rules and deferral.

use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_protocol::ToolCall;
use toolgate_setup::Setup;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/mcp/fixtures/upstream.py"
);

/// A bound so a broken build fails instead of hanging; not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn an_embedded_gate_picks_up_a_server_that_comes_up_late() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let marker = dir.path().join("up.marker");
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({
            "mcpServers": {"up": {"command": "python3", "sandbox": false,
                "args": [FIXTURE, "--crash-init-unless", marker.display().to_string()]}},
            "permissions": {"allow": ["mcp__up__echo"], "deny": ["mcp__up__env"]},
        })
        .to_string(),
    )
    .unwrap();
    // Pins go to a scratch configuration directory, never the user's.
    // SAFETY: this test binary runs this one test, and no other thread exists yet.
    unsafe { std::env::set_var("XDG_CONFIG_HOME", dir.path().join("config")) };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut setup = Setup::new(&ws);
    setup.settings.files = vec![settings.display().to_string()];
    // Only the gate is kept: what its upstream tools depend on must live with it.
    let gate = setup.build().unwrap().gate;
    rt.block_on(async move {
        let mut changes = gate.tools_handle().subscribe();
        assert!(
            gate.view()
                .entries()
                .iter()
                .all(|e| !e.spec().name.starts_with("mcp__up__")),
            "the server is down: none of its tools yet"
        );

        std::fs::write(&marker, "").unwrap();
        let deadline = Instant::now() + PATIENCE;
        while !gate
            .view()
            .entries()
            .iter()
            .any(|e| e.spec().name == "mcp__up__echo")
        {
            let left = deadline.saturating_duration_since(Instant::now());
            tokio::time::timeout(left, changes.changed())
                .await
                .expect("the server's tools never joined")
                .unwrap();
        }
        // A bare-name deny rule hides a late tool as it would a first one.
        assert!(gate.view().hidden().contains_key("mcp__up__env"));
        let echoed = gate
            .execute(ToolCall::new("1", "mcp__up__echo", json!({"text": "late"})))
            .await;
        assert!(echoed.error().is_none(), "{echoed:?}");
        let env = gate
            .execute(ToolCall::new("2", "mcp__up__env", json!({})))
            .await;
        assert_eq!(
            env.error().map(|e| e.code),
            Some(toolgate_protocol::ErrorCode::Denied)
        );
    });
}
