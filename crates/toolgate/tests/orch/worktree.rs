//! EnterWorktree / ExitWorktree and Monitor through `toolgate exec`.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::{Exec, code, dirs, text};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-C"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn repo(ws: &Path) {
    git(ws, &["init", "-q", "-b", "main"]);
    git(ws, &["add", "notes.txt"]);
    git(ws, &["commit", "-qm", "first"]);
}

const WT: [&str; 6] = [
    "--allow",
    "EnterWorktree",
    "--allow",
    "ExitWorktree",
    "--allow",
    "Bash(pwd)",
];

#[test]
fn a_worktree_is_made_inside_the_workspace_and_the_session_moves_there_and_back() {
    let (ws, home) = dirs();
    repo(ws.path());
    let root = ws.path().canonicalize().unwrap();
    let mut exec = Exec::start(ws.path(), home.path(), &WT);
    let r = exec.call("e", "EnterWorktree", json!({"name": "feature"}));
    assert_eq!(code(&r), None, "{r}");
    let path = root.join(".claude/worktrees/feature");
    assert!(path.join("notes.txt").is_file());
    let pwd = exec.call("p", "Bash", json!({"command": "pwd"}));
    assert_eq!(text(&pwd).trim(), path.to_string_lossy(), "{pwd}");
    assert!(git(&root, &["branch", "--list", "worktree-feature"]).contains("worktree-feature"));
    // One worktree at a time.
    let again = exec.call("e2", "EnterWorktree", json!({"name": "other"}));
    assert_eq!(code(&again).as_deref(), Some("invalid_request"), "{again}");
    // Clean: removed, branch with nothing new deleted, back in the root.
    let x = exec.call("x", "ExitWorktree", json!({}));
    assert_eq!(code(&x), None, "{x}");
    assert!(!path.exists());
    assert!(!git(&root, &["branch", "--list"]).contains("worktree-feature"));
    let pwd = exec.call("p2", "Bash", json!({"command": "pwd"}));
    assert_eq!(text(&pwd).trim(), root.to_string_lossy(), "{pwd}");
    let x = exec.call("x2", "ExitWorktree", json!({}));
    assert_eq!(code(&x).as_deref(), Some("invalid_request"), "{x}");
}

#[test]
fn bad_names_taken_names_and_no_repository_are_refused() {
    let (ws, home) = dirs();
    let mut exec = Exec::start(ws.path(), home.path(), &WT);
    let r = exec.call("n", "EnterWorktree", json!({"name": "x"}));
    assert_eq!(code(&r).as_deref(), Some("invalid_request"), "{r}");
    assert!(text(&r).contains("not inside a git repository"), "{r}");
    assert!(!ws.path().join(".claude").exists());
    drop(exec);

    repo(ws.path());
    let mut exec = Exec::start(ws.path(), home.path(), &WT);
    for bad in ["../escape", "a/b", "..", "/tmp/x", ".hidden"] {
        let r = exec.call("b", "EnterWorktree", json!({"name": bad}));
        assert_eq!(code(&r).as_deref(), Some("invalid_request"), "{bad}: {r}");
    }
    assert!(!ws.path().join(".claude").exists());
    assert!(!ws.path().parent().unwrap().join("escape").exists());
    // A `.claude` that is a symlink out of the workspace: nothing is made over there.
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), ws.path().join(".claude")).unwrap();
    let r = exec.call("s", "EnterWorktree", json!({"name": "sneaky"}));
    assert_eq!(code(&r).as_deref(), Some("invalid_request"), "{r}");
    assert!(text(&r).contains("outside the workspace roots"), "{r}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    std::fs::remove_file(ws.path().join(".claude")).unwrap();
    std::fs::create_dir_all(ws.path().join(".claude/worktrees/taken")).unwrap();
    let r = exec.call("t", "EnterWorktree", json!({"name": "taken"}));
    assert_eq!(code(&r).as_deref(), Some("invalid_request"), "{r}");
    assert!(text(&r).contains("exists already"), "{r}");
}

#[test]
fn a_failed_worktree_add_leaves_nothing_behind() {
    let (ws, home) = dirs();
    repo(ws.path());
    // A checkout filter that fails: `git worktree add` makes the branch, the directory and
    // its administrative entry, then fails while checking out.
    std::fs::write(ws.path().join(".gitattributes"), "*.txt filter=broken\n").unwrap();
    git(ws.path(), &["add", ".gitattributes"]);
    git(ws.path(), &["commit", "-qm", "attrs"]);
    git(ws.path(), &["config", "filter.broken.smudge", "false"]);
    git(ws.path(), &["config", "filter.broken.required", "true"]);
    let mut exec = Exec::start(ws.path(), home.path(), &WT);
    let r = exec.call("f", "EnterWorktree", json!({"name": "doomed"}));
    assert_eq!(code(&r).as_deref(), Some("execution_failed"), "{r}");
    assert!(text(&r).contains("nothing was left behind"), "{r}");
    assert!(
        !ws.path().join(".claude").exists(),
        "the folders made for it remain"
    );
    assert!(!git(ws.path(), &["branch", "--list"]).contains("worktree-doomed"));
    assert_eq!(
        git(ws.path(), &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    assert!(!ws.path().join(".git/worktrees/doomed").exists());
    let pwd = exec.call("p", "Bash", json!({"command": "pwd"}));
    assert_eq!(
        text(&pwd).trim(),
        ws.path().canonicalize().unwrap().to_string_lossy()
    );
}

#[test]
fn a_worktree_with_changes_is_removed_only_with_the_users_approval() {
    let (ws, home) = dirs();
    repo(ws.path());
    let root = ws.path().canonicalize().unwrap();
    let mut exec = Exec::start(ws.path(), home.path(), &WT);
    assert_eq!(
        code(&exec.call("e", "EnterWorktree", json!({"name": "dirty"}))),
        None
    );
    let path = root.join(".claude/worktrees/dirty");
    std::fs::write(path.join("notes.txt"), "changed\n").unwrap();
    // Nobody to ask: kept, and the session stays in it.
    let x = exec.call("x", "ExitWorktree", json!({}));
    assert_eq!(code(&x).as_deref(), Some("execution_failed"), "{x}");
    assert!(text(&x).contains("nothing was removed"), "{x}");
    assert_eq!(
        std::fs::read_to_string(path.join("notes.txt")).unwrap(),
        "changed\n"
    );
    // keep: true leaves it in place and goes back.
    let k = exec.call("k", "ExitWorktree", json!({"keep": true}));
    assert_eq!(code(&k), None, "{k}");
    assert!(path.exists());
    drop(exec);

    // With a user who approves, it goes.
    let log = home.path().join("wt.jsonl");
    let ui = crate::prompt_ui(&["Remove and discard them"], &log);
    let mut extra: Vec<&str> = WT.to_vec();
    extra.extend(["--prompt-command", &ui]);
    let mut exec = Exec::start(ws.path(), home.path(), &extra);
    assert_eq!(
        code(&exec.call("e", "EnterWorktree", json!({"name": "dirty2"}))),
        None
    );
    let path = root.join(".claude/worktrees/dirty2");
    std::fs::write(path.join("notes.txt"), "changed\n").unwrap();
    let x = exec.call("x", "ExitWorktree", json!({}));
    assert_eq!(code(&x), None, "{x}");
    assert!(!path.exists());
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("uncommitted changes")
    );
}

#[test]
fn monitor_streams_a_tasks_lines_and_its_command_is_a_checked_bash_call() {
    let (ws, home) = dirs();
    let cmd = "for i in 1 2 3; do echo line$i; done; sleep 0.3; echo last";
    let allow = format!("Bash({cmd})");
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--allow", &allow, "--deny", "Bash(rm *)"],
    );
    let batch = |r: &serde_json::Value| -> Vec<String> {
        let t = text(r);
        let inner = t
            .split("<lines>\n")
            .nth(1)
            .unwrap()
            .split("</lines>")
            .next()
            .unwrap();
        inner.lines().map(str::to_owned).collect()
    };
    let m = exec.call("m1", "Monitor", json!({"command": cmd, "max_lines": 1}));
    assert_eq!(code(&m), None, "{m}");
    let t = text(&m);
    let id = t
        .split("<task_id>")
        .nth(1)
        .unwrap()
        .split('<')
        .next()
        .unwrap()
        .to_owned();
    let mut lines = batch(&m);
    assert!(lines.len() <= 1, "{t}");
    for i in 0..40 {
        let n = exec.call(
            &format!("n{i}"),
            "Monitor",
            json!({"task_id": id, "timeout_ms": 5000, "max_lines": 1}),
        );
        if code(&n).is_some() {
            // Ended with everything returned.
            assert!(text(&n).contains("already ended"), "{n}");
            break;
        }
        let b = batch(&n);
        assert!(b.len() <= 1, "{n}");
        lines.extend(b);
    }
    assert_eq!(lines, ["line1", "line2", "line3", "last"]);
    // A finished task with nothing unread: nothing to monitor.
    let done = exec.call("d", "Monitor", json!({"task_id": id}));
    assert_eq!(code(&done).as_deref(), Some("invalid_request"), "{done}");
    assert!(text(&done).contains("already ended"), "{done}");

    // A command a rule denies is refused as the Bash call it becomes, recorded under Monitor.
    let denied = exec.call("m2", "Monitor", json!({"command": "rm -rf notes.txt"}));
    assert_eq!(code(&denied).as_deref(), Some("denied"), "{denied}");
    assert!(ws.path().join("notes.txt").exists());
    let records = exec.records();
    let bash = records.iter().find(|r| r["call_id"] == "m2/bash").unwrap();
    assert_eq!(bash["parent_call_id"], "m2");
    assert_eq!(bash["code"], "denied");
    assert_eq!(bash["verdict"]["rule"], "Bash(rm *)");
    let started = records.iter().find(|r| r["call_id"] == "m1/bash").unwrap();
    assert_eq!(started["parent_call_id"], "m1");
    // Neither or both of task_id and command: refused.
    let both = exec.call("b", "Monitor", json!({"task_id": id, "command": "ls"}));
    assert_eq!(code(&both).as_deref(), Some("invalid_request"), "{both}");
    let unknown = exec.call("u", "Monitor", json!({"task_id": "b000000"}));
    assert_eq!(
        code(&unknown).as_deref(),
        Some("invalid_request"),
        "{unknown}"
    );
}

#[test]
fn a_repository_outside_the_roots_gets_no_worktree() {
    // The workspace is a folder inside a repository: `git worktree add` would write the
    // repository's .git, outside the roots.
    let (outer, home) = dirs();
    repo(outer.path());
    let ws = outer.path().join("sub");
    std::fs::create_dir(&ws).unwrap();
    let mut exec = Exec::start(&ws, home.path(), &WT);
    let r = exec.call("o", "EnterWorktree", json!({"name": "x"}));
    assert_eq!(code(&r).as_deref(), Some("invalid_request"), "{r}");
    assert!(text(&r).contains("outside the workspace roots"), "{r}");
    assert!(!git(outer.path(), &["branch", "--list"]).contains("worktree-x"));
    assert!(!ws.join(".claude").exists());
}
