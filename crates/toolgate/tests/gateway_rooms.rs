//! A sandboxed MCP server's room is never wider than the permission engine, as Bash's is:
//! at each start the project is walked and every file a deny or ask `Read(…)` rule covers
//! is hidden — a glob such as `Read(**/.env)` too, which no static policy can list — and a
//! walk past its bound refuses the server instead of starting it unmasked. (The static
//! part, literal rules and `sandbox.filesystem`, is tested in gateway.rs.)
//!
//! Like the other sandbox tests, these need a tier that isolates the filesystem (CI's
//! machines have tier A).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/mcp/fixtures/upstream.py"
);

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        Self { dir }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.ws().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn bin(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        c.env_remove("TOOLGATE_LOG")
            .env("NO_COLOR", "1")
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .current_dir(self.ws());
        c
    }

    /// Writes settings (outside the workspace) with a sandboxed fixture server `fx` and
    /// `extra` merged in; returns the file's path.
    fn settings(&self, extra: Value) -> String {
        let mut doc = json!({
            "mcpServers": {"fx": {"command": "python3", "args": [FIXTURE], "sandbox": true}},
        });
        for (k, v) in extra.as_object().unwrap() {
            doc[k] = v.clone();
        }
        let p = self.dir.path().join("settings.json");
        std::fs::write(&p, doc.to_string()).unwrap();
        p.display().to_string()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.bin().args(args).output().unwrap()
    }

    /// Runs `exec` with the calls (name, input) in one session; one result per call.
    fn exec(&self, extra: &[&str], calls: &[(&str, Value)]) -> Vec<Value> {
        let mut cmd = self.bin();
        cmd.args(["exec", "--no-audit"]).args(extra);
        support::exec::results(cmd, calls)
    }
}

fn text(result: &Value) -> String {
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

fn read(path: &str) -> (&'static str, Value) {
    ("mcp__fx__read", json!({ "path": path }))
}

/// A command that reads `path` without naming it where the permission engine could see it:
/// only the room can keep it from Bash.
fn bash_read(path: &Path) -> (&'static str, Value) {
    let (dir, name) = (path.parent().unwrap(), path.file_name().unwrap());
    let script = format!(
        "import sys; sys.stdout.write(open('{}/' + '{}').read())",
        dir.display(),
        name.to_string_lossy()
    );
    (
        "Bash",
        json!({ "command": format!("python3 -c \"{script}\"") }),
    )
}

#[test]
fn a_glob_read_deny_hides_every_match_in_the_project_from_a_servers_room() {
    let env = Env::new();
    env.write("sub/dir/.env", "NESTED-SECRET\n");
    env.write(".env", "TOP-SECRET\n");
    env.write("sub/dir/notes.txt", "notes\n");
    env.write("literal.txt", "LITERAL-SECRET\n");
    env.write("kept.txt", "kept\n");
    let s = env.settings(json!({
        "permissions": {
            "allow": ["mcp__fx", "Bash"],
            "deny": ["Read(**/.env)", "Read(./literal.txt)"],
        },
    }));
    let r = env.exec(
        &["--settings", &s],
        &[
            read("sub/dir/.env"),
            read(".env"),
            read("sub/dir/notes.txt"),
            read("literal.txt"),
            read("kept.txt"),
            bash_read(&env.ws().join("sub/dir/.env")),
        ],
    );
    // The glob's matches, at any depth, are masked: the server's own read fails.
    for (i, secret) in [(0, "NESTED-SECRET"), (1, "TOP-SECRET")] {
        let t = text(&r[i]);
        assert!(!t.contains(secret), "{}", r[i]);
        assert!(t.contains("read failed"), "{}", r[i]);
    }
    // Beside them, what no rule covers is read as usual: the room is up and sees the tree.
    assert_eq!(text(&r[2]), "notes\n", "{}", r[2]);
    // The literal rule, as before.
    assert!(!text(&r[3]).contains("LITERAL-SECRET"), "{}", r[3]);
    assert!(text(&r[3]).contains("read failed"), "{}", r[3]);
    assert_eq!(text(&r[4]), "kept\n", "{}", r[4]);
    // Bash's room hides the same file (the gate allowed the command; the room refused).
    assert_eq!(r[5]["toolgate"]["decision"], "allow", "{}", r[5]);
    assert!(!text(&r[5]).contains("NESTED-SECRET"), "{}", r[5]);
}

#[test]
fn a_server_whose_room_walk_is_too_large_is_refused_not_started_unmasked() {
    // The rule reaches into a directory outside the workspace with more entries than the
    // walk may look at (the workspace itself is small, so the room's other walks pass).
    let env = Env::new();
    env.write("notes.txt", "notes\n");
    let outside = env.dir.path().join("outside");
    for i in 0..40 {
        std::fs::create_dir_all(outside.join(format!("d{i}"))).unwrap();
        std::fs::write(outside.join(format!("d{i}/f.txt")), "x\n").unwrap();
    }
    std::fs::write(outside.join(".env"), "SECRET\n").unwrap();
    let rule = format!("Read(/{}/**/.env)", outside.display());
    let limits = json!({"filesystem": {"maxWalkEntries": 20}});
    let s = env.settings(json!({
        "permissions": {"allow": ["mcp__fx"], "deny": [rule]},
        "sandbox": limits,
    }));
    let out = env.run(&["mcp", "list", "--settings", &s]);
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(
        list.contains("fx  stdio") && list.contains("failed: cannot set up the sandbox"),
        "{list}"
    );
    assert!(
        list.contains("maxWalkEntries") && list.contains("against the deny and ask path rules"),
        "{list}"
    );
    let r = env.exec(
        &["--settings", &s],
        &[read(&outside.join(".env").display().to_string())],
    );
    assert!(!text(&r[0]).contains("SECRET"), "{}", r[0]);
    assert_eq!(r[0]["toolgate"]["code"], "unknown_tool", "{}", r[0]);

    // Control: with the bound raised, the same rule is walked and the server starts.
    let s = env.settings(json!({
        "permissions": {"allow": ["mcp__fx"], "deny": [rule]},
        "sandbox": {"filesystem": {"maxWalkEntries": 1000}},
    }));
    let list =
        String::from_utf8_lossy(&env.run(&["mcp", "list", "--settings", &s]).stdout).into_owned();
    assert!(list.contains("connected ("), "{list}");
}
