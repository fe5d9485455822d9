//! The orchestration tools through `toolgate exec`: sub-agents on a fixture model endpoint
//! that tries to get past its child gate, questions with and without a user, plan mode,
//! skills, worktrees and Monitor.

mod agent;
mod fixture;
mod plan_ask;
mod skills;
mod worktree;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// A `toolgate exec` session, one call at a time.
pub struct Exec {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pub audit: PathBuf,
}

impl Exec {
    /// Starts `toolgate exec` in `ws` with `home` as `$HOME` and these extra arguments.
    pub fn start(ws: &Path, home: &Path, extra: &[&str]) -> Self {
        Self::start_with(ws, home, extra, |_| {})
    }

    /// As [`Exec::start`], with a chance to adjust the command.
    pub fn start_with(
        ws: &Path,
        home: &Path,
        extra: &[&str],
        setup: impl FnOnce(&mut Command),
    ) -> Self {
        let audit = ws.join(".toolgate-test-audit.jsonl");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        cmd.env_remove("TOOLGATE_LOG")
            .env("NO_COLOR", "1")
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .args(["exec", "--workspace"])
            .arg(ws)
            .arg("--audit")
            .arg(&audit)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        setup(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            audit,
        }
    }

    /// One call; its result line.
    pub fn call(&mut self, id: &str, name: &str, input: Value) -> Value {
        let line = json!({"type": "tool_use", "id": id, "name": name, "input": input});
        writeln!(self.stdin, "{line}").unwrap();
        let mut out = String::new();
        self.stdout.read_line(&mut out).unwrap();
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{out:?}: {e}"))
    }

    /// The audit records so far.
    pub fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.audit)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a result line.
pub fn text(result: &Value) -> String {
    match &result["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The error code of a result line (`None` when it succeeded).
pub fn code(result: &Value) -> Option<String> {
    result["toolgate"]["code"].as_str().map(str::to_owned)
}

/// A workspace and a home directory.
pub fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    (ws, home)
}

/// The `--settings` value that points sub-agents at `url` (`kind`: anthropic or openai).
pub fn agent_settings(kind: &str, url: &str) -> String {
    json!({"toolgate": {"agent": {"kind": kind, "endpoint": url, "model": "fixture"}}}).to_string()
}

/// A prompt UI (`--prompt-command`) in Python: answers every question request with the
/// first of `picks` that is one of the question's options (when none is, the first pick as
/// the user's own words), and denies permission requests. Each request is appended to `log`.
pub fn prompt_ui(picks: &[&str], log: &Path) -> String {
    let picks = serde_json::to_string(picks).unwrap();
    format!(
        r#"python3 -c '
import json, sys
picks = {picks}
for line in sys.stdin:
    req = json.loads(line)
    open({log:?}, "a").write(line)
    if req.get("type") == "question_request":
        answers = []
        for q in req["questions"]:
            labels = [o["label"] for o in q["options"]]
            chosen = [p for p in picks if p in labels]
            answers.append({{"selected": chosen[:1]}} if chosen else {{"other": picks[0]}})
        out = {{"id": req["id"], "nonce": req["nonce"], "answers": answers}}
    else:
        out = {{"id": req["id"], "nonce": req["nonce"], "decision": "deny"}}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
'"#,
        log = log.to_string_lossy(),
    )
}
