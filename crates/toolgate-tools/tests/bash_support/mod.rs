//! Helpers shared by the Bash tests: a gate with the shell tools, calls, and checks by pid.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate_core::{Gate, Registry};
use toolgate_protocol::{CallResult, ErrorCode, ToolCall};
use toolgate_tools::shell::{ShellConfig, register_shell_tools};

/// A config whose commands see a fixed environment: this process's PATH and HOME plus
/// `extra`.
pub fn config_with_env(extra: &[(&str, &str)]) -> ShellConfig {
    let mut env: Vec<(OsString, OsString)> = ["PATH", "HOME", "LANG"]
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
        .collect();
    env.extend(
        extra
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    ShellConfig {
        env: Some(env),
        ..ShellConfig::default()
    }
}

/// A gate over `dir` with the shell tools. Output files go under `dir/.outputs` (so they
/// are removed with the test's directory) unless the config says otherwise.
pub fn gate_with(dir: &Path, config: &ShellConfig) -> Gate {
    let mut config = config.clone();
    if config.output_dir.is_none() {
        config.output_dir = Some(dir.join(".outputs"));
    }
    let registry = register_shell_tools(Registry::builder(), &config)
        .build()
        .expect("registry");
    Gate::builder()
        .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
        .workspace(dir)
        .registry(registry)
        .build()
        .expect("gate")
}

/// A gate over `dir` with the default shell settings.
pub fn gate(dir: &Path) -> Gate {
    gate_with(dir, &ShellConfig::default())
}

/// Runs one call.
pub async fn call(gate: &Gate, tool: &str, input: Value) -> CallResult {
    gate.execute(ToolCall::new("t", tool, input)).await
}

/// Runs a Bash command.
pub async fn bash(gate: &Gate, command: &str) -> CallResult {
    call(gate, "Bash", serde_json::json!({ "command": command })).await
}

/// The result's text (panics on an error, showing it).
pub fn text(r: &CallResult) -> String {
    match &r.outcome {
        Ok(out) => out.joined_text(),
        Err(e) => panic!("expected success, got {e}"),
    }
}

/// The result's structured value.
pub fn structured(r: &CallResult) -> Value {
    r.output()
        .and_then(|o| o.structured.clone())
        .unwrap_or(Value::Null)
}

/// The error code (panics on success).
pub fn code(r: &CallResult) -> ErrorCode {
    match &r.outcome {
        Ok(out) => panic!("expected an error, got {}", out.joined_text()),
        Err(e) => e.code,
    }
}

/// Whether a process has exited (gone, or a zombie nobody reaped yet).
pub fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Waits (generously) until every pid is gone; returns those still running.
pub async fn survivors(pids: &[i32], within: Duration) -> Vec<i32> {
    let deadline = Instant::now() + within;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| !gone(*p)).collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `file` holds at least `n` pids, one per line, and returns them.
pub async fn pids_in(file: &Path, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pids: Vec<i32> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.len() >= n {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "{} never got {n} pids (has {pids:?})",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The background task id in a Bash result.
pub fn task_id(r: &CallResult) -> String {
    let s = structured(r);
    s["background_task_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task id in {}", text(r)))
        .to_owned()
}
