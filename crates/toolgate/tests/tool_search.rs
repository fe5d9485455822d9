//! ToolSearch at the command line. The built-in tools are never deferred, so without MCP
//! tools ToolSearch is not offered: `tools` leaves it out and `call` refuses it, saying why.
//! Broken `toolgate.toolSearch` settings stop every subcommand before anything runs. MCP
//! tools that are always loaded (a server's `alwaysLoad`, a tool's
//! `_meta["anthropic/alwaysLoad"]`) are sent in full and called without ToolSearch, and
//! still decided by the rules.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/mcp/fixtures/upstream.py"
);

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    // Keep the machine's user settings (and trust records) out of the tests.
    c.env_remove("TOOLGATE_LOG").env("NO_COLOR", "1").env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("toolgate-tests-no-user-config"),
    );
    c
}

fn run(ws: &tempfile::TempDir, args: &[&str]) -> Output {
    let (cmd, rest) = args.split_first().unwrap();
    bin()
        .arg(cmd)
        .args(["--no-audit", "--workspace"])
        .arg(ws.path())
        .args(rest)
        .output()
        .unwrap()
}

#[test]
fn toolsearch_is_not_offered_when_nothing_is_deferred() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "alpha\n").unwrap();
    let out = bin()
        .args(["tools", "--format", "anthropic", "--workspace"])
        .arg(ws.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let defs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = defs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Read"), "{names:?}");
    assert!(!names.contains(&"ToolSearch"), "{names:?}");
    assert!(
        defs.as_array()
            .unwrap()
            .iter()
            .all(|d| d.get("defer_loading").is_none())
    );

    let out = run(&ws, &["call", "ToolSearch", r#"{"query":"select:Read"}"#]);
    assert_eq!(out.status.code(), Some(2), "a denial: {out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["is_error"], true, "{v}");
    assert_eq!(v["toolgate"]["code"], "denied", "{v}");
    assert!(v.to_string().contains("no tool is deferred"), "{v}");
    // Forcing deferral on changes nothing for built-in tools.
    let always = r#"{"toolgate":{"toolSearch":{"mode":"always"}}}"#;
    let out = run(
        &ws,
        &[
            "call",
            "--settings",
            always,
            "Read",
            r#"{"file_path":"notes.txt"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn config_shows_the_tool_search_settings() {
    let ws = tempfile::tempdir().unwrap();
    let settings = r#"{"toolgate":{"toolSearch":{"mode":"auto","thresholdPercent":5}}}"#;
    let out = bin()
        .args(["config", "--json", "--settings", settings, "--workspace"])
        .arg(ws.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["toolSearch"]["mode"], "auto", "{v}");
    assert_eq!(v["toolSearch"]["thresholdPercent"], 5, "{v}");
}

#[test]
fn broken_tool_search_settings_stop_before_anything_runs() {
    let ws = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"toolgate":{"toolSearch":{"thresholdPercent":250}}}"#,
            "thresholdPercent",
        ),
        (
            r#"{"toolgate":{"toolSearch":{"contextTokens":0}}}"#,
            "contextTokens",
        ),
        (
            r#"{"toolgate":{"toolSearch":{"mode":"sometimes"}}}"#,
            "sometimes",
        ),
        (r#"{"toolgate":{"toolSearch":{"treshold":5}}}"#, "treshold"),
    ];
    for (settings, says) in cases {
        for cmd in [
            &[
                "call",
                "--settings",
                settings,
                "Read",
                r#"{"file_path":"x"}"#,
            ][..],
            &["tools", "--settings", settings][..],
        ] {
            let out = if cmd[0] == "tools" {
                bin()
                    .args(cmd)
                    .arg("--workspace")
                    .arg(ws.path())
                    .output()
                    .unwrap()
            } else {
                run(&ws, cmd)
            };
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(64), "{settings}: {err}");
            assert!(err.contains(says), "{settings}: {err}");
            assert!(out.stdout.is_empty(), "{settings}: nothing ran");
        }
    }
}

/// Runs `exec` in `ws` with the calls (name, input) in one session; one result per call.
fn exec(
    ws: &tempfile::TempDir,
    config: &Path,
    extra: &[&str],
    calls: &[(&str, Value)],
) -> Vec<Value> {
    let mut cmd = bin();
    cmd.env("XDG_CONFIG_HOME", config)
        .args(["exec", "--no-audit", "--workspace"])
        .arg(ws.path())
        .args(extra);
    support::exec::results(cmd, calls)
}

#[test]
fn always_loaded_mcp_tools_are_sent_in_full_and_still_decided_by_the_rules() {
    let ws = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    // `fx` marks one tool always loaded in its `_meta` (and says false for another);
    // `pinned` is always loaded as a whole server. Only `fx`'s other tools are deferred.
    let tools = ws.path().join("fx-tools.json");
    std::fs::write(
        &tools,
        json!([
            {"name": "echo", "description": "Echoes its input.",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
             "_meta": {"anthropic/alwaysLoad": true}},
            {"name": "env", "description": "Lists environment variable names.",
             "inputSchema": {"type": "object"}, "_meta": {"anthropic/alwaysLoad": false}},
            {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object"}},
        ])
        .to_string(),
    )
    .unwrap();
    let settings = ws.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({
            "mcpServers": {
                "fx": {"command": "python3", "args": [FIXTURE, "--tools", tools], "sandbox": false},
                "pinned": {"command": "python3", "args": [FIXTURE], "sandbox": false, "alwaysLoad": true},
            },
            "toolgate": {"toolSearch": {"mode": "always"}},
            "permissions": {
                "allow": ["mcp__fx", "mcp__pinned__echo", "mcp__pinned__fail"],
                "deny": ["mcp__pinned__fail"],
            },
        })
        .to_string(),
    )
    .unwrap();
    let s = settings.to_str().unwrap();

    let out = bin()
        .env("XDG_CONFIG_HOME", config.path())
        .args([
            "tools",
            "--format",
            "anthropic",
            "--settings",
            s,
            "--workspace",
        ])
        .arg(ws.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let defs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let def = |name: &str| -> Value {
        defs.as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no definition of {name}: {defs}"))
    };
    let echo = def("mcp__fx__echo");
    assert!(echo.get("defer_loading").is_none(), "{echo}");
    assert_eq!(echo["input_schema"]["properties"]["text"]["type"], "string");
    for name in ["mcp__fx__env", "mcp__fx__fail"] {
        assert_eq!(def(name)["defer_loading"], true, "{name}");
    }
    let pinned: Vec<&Value> = defs
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["name"].as_str().unwrap().starts_with("mcp__pinned__"))
        .collect();
    assert!(pinned.len() > 5, "{defs}");
    assert!(
        pinned.iter().all(|d| d.get("defer_loading").is_none()),
        "{defs}"
    );
    def("ToolSearch");

    let r = exec(
        &ws,
        config.path(),
        &["--settings", s],
        &[
            // Always loaded: called at once, no ToolSearch.
            ("mcp__fx__echo", json!({"text": "hi"})),
            ("mcp__pinned__echo", json!({"text": "ho"})),
            // Deferred: must be loaded first.
            ("mcp__fx__env", json!({})),
            ("ToolSearch", json!({"query": "select:mcp__fx__env"})),
            ("mcp__fx__env", json!({})),
            // Always loaded is not allowed: a deny rule still denies, no rule still asks.
            ("mcp__pinned__fail", json!({})),
            ("mcp__pinned__env", json!({})),
        ],
    );
    assert_eq!(r[0]["content"][0]["text"], r#"{"text": "hi"}"#, "{}", r[0]);
    assert_eq!(r[1]["content"][0]["text"], r#"{"text": "ho"}"#, "{}", r[1]);
    assert_eq!(r[2]["toolgate"]["code"], "tool_not_loaded", "{}", r[2]);
    assert!(r[3]["toolgate"]["code"].is_null(), "{}", r[3]);
    assert!(r[4]["toolgate"]["code"].is_null(), "{}", r[4]);
    assert!(r[4]["content"].to_string().contains("PATH"), "{}", r[4]);
    assert_eq!(r[5]["toolgate"]["code"], "denied", "{}", r[5]);
    assert_eq!(r[5]["toolgate"]["layer"], "rule", "{}", r[5]);
    assert_eq!(r[6]["toolgate"]["code"], "denied", "{}", r[6]);
    assert!(
        r[6]["content"].to_string().contains("needs approval"),
        "{}",
        r[6]
    );

    // `toolgate mcp get` says which are always loaded.
    let get = |name: &str| -> Value {
        let out = bin()
            .env("XDG_CONFIG_HOME", config.path())
            .args(["mcp", "get", name, "--json", "--settings", s, "--workspace"])
            .arg(ws.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let fx = get("fx");
    assert_eq!(fx["always_load"], false, "{fx}");
    let by_tool: Vec<(String, bool)> = fx["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["upstream"].as_str().unwrap().to_owned(),
                t["always_load"] == true,
            )
        })
        .collect();
    assert_eq!(
        by_tool,
        [
            ("echo".into(), true),
            ("env".into(), false),
            ("fail".into(), false)
        ]
    );
    let pinned = get("pinned");
    assert_eq!(pinned["always_load"], true, "{pinned}");
    assert!(
        pinned["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["always_load"] == true),
        "{pinned}"
    );
}
