//! ToolSearch at the command line. The built-in tools are never deferred, so without MCP
//! tools ToolSearch is not offered: `tools` leaves it out and `call` refuses it, saying why.
//! Broken `toolgate.toolSearch` settings stop every subcommand before anything runs.

use std::process::{Command, Output};

use serde_json::Value;

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
