//! Skills through `toolgate exec`: found and loaded, narrowing only, project skills waiting
//! for trust, broken and missing skills as structured errors.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::{Exec, code, dirs, text};

fn skill(dir: &Path, name: &str, front: &str, body: &str) {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("SKILL.md"), format!("---\n{front}\n---\n{body}\n")).unwrap();
}

#[test]
fn a_skill_loads_and_its_allowed_tools_only_narrow() {
    let (ws, home) = dirs();
    let user = home.path().join(".claude/skills");
    skill(
        &user,
        "notes",
        "name: notes\ndescription: Summarise the notes\nallowed-tools: Read, Bash(git status:*), Bash(rm:*)",
        "# Notes\nRead notes.txt and summarise it.",
    );
    std::fs::write(user.join("notes/helper.py"), "print('hi')\n").unwrap();
    std::fs::write(ws.path().join("victim.txt"), "x\n").unwrap();
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &[
            "--mode",
            "acceptEdits",
            "--allow",
            "Skill",
            "--deny",
            "Bash(rm *)",
        ],
    );
    let r = exec.call("s1", "Skill", json!({"skill": "notes", "args": "briefly"}));
    assert_eq!(code(&r), None, "{r}");
    let t = text(&r);
    assert!(t.contains("Read notes.txt and summarise it."), "{t}");
    assert!(
        t.contains("ARGUMENTS: briefly") && t.contains("helper.py"),
        "{t}"
    );
    assert!(
        t.contains("you may call only: Read, Bash(git status:*), Bash(rm:*)"),
        "{t}"
    );

    // Inside the scope and allowed by the policy: runs.
    assert_eq!(
        code(&exec.call("r1", "Read", json!({"file_path": "notes.txt"}))),
        None
    );
    // Allowed by the policy (acceptEdits) but outside the scope: refused, naming the skill.
    let w = exec.call(
        "w1",
        "Write",
        json!({"file_path": "new.txt", "content": "x"}),
    );
    assert_eq!(code(&w).as_deref(), Some("denied"), "{w}");
    assert!(text(&w).contains("active skill `notes`"), "{w}");
    assert!(!ws.path().join("new.txt").exists());
    // A Bash command no entry covers: refused by the scope.
    let ls = exec.call("b1", "Bash", json!({"command": "ls"}));
    assert_eq!(code(&ls).as_deref(), Some("denied"), "{ls}");
    // Inside the scope but denied by a rule: the scope does not widen.
    let rm = exec.call("b2", "Bash", json!({"command": "rm victim.txt"}));
    assert_eq!(code(&rm).as_deref(), Some("denied"), "{rm}");
    assert!(text(&rm).contains("Bash(rm *)"), "{rm}");
    assert!(ws.path().join("victim.txt").exists());
    let records = exec.records();
    let w1 = records.iter().find(|r| r["call_id"] == "w1").unwrap();
    assert_eq!(w1["verdict"]["rule"], "skill notes allowed-tools");
}

#[test]
fn broken_missing_and_untrusted_skills_are_structured_errors() {
    let (ws, home) = dirs();
    let user = home.path().join(".claude/skills");
    skill(
        &user,
        "broken",
        "name: broken\ndescription: \"never closed",
        "body",
    );
    skill(
        &ws.path().join(".claude/skills"),
        "proj",
        "name: proj\ndescription: From the repo",
        "PROJECT BODY",
    );
    let mut exec = Exec::start(ws.path(), home.path(), &["--allow", "Skill"]);
    let b = exec.call("b", "Skill", json!({"skill": "broken"}));
    assert_eq!(code(&b).as_deref(), Some("invalid_request"), "{b}");
    assert!(text(&b).contains("SKILL.md:3"), "{b}");
    let m = exec.call("m", "Skill", json!({"skill": "nope"}));
    assert_eq!(code(&m).as_deref(), Some("invalid_request"), "{m}");
    assert!(text(&m).contains("no skill named `nope`"), "{m}");
    let p = exec.call("p", "Skill", json!({"skill": "proj"}));
    assert_eq!(code(&p).as_deref(), Some("denied"), "{p}");
    assert!(
        text(&p).contains("toolgate trust") && !text(&p).contains("PROJECT BODY"),
        "{p}"
    );
    drop(exec);

    // The untrusted project skill is not offered in the tool list either.
    let tools = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .args(["tools", "--format", "anthropic", "--workspace"])
        .arg(ws.path())
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&tools.stdout);
    assert!(listing.contains("\"Skill\""), "{listing}");
    assert!(!listing.contains("From the repo"), "{listing}");

    // Once the user trusts the workspace, the project skill loads.
    let trust = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .args(["trust"])
        .arg(ws.path())
        .output()
        .unwrap();
    assert!(
        trust.status.success(),
        "{}",
        String::from_utf8_lossy(&trust.stderr)
    );
    let mut exec = Exec::start(ws.path(), home.path(), &["--allow", "Skill"]);
    let p = exec.call("p2", "Skill", json!({"skill": "proj"}));
    assert_eq!(code(&p), None, "{p}");
    assert!(text(&p).contains("PROJECT BODY"), "{p}");
    // A skill changed after trust waits for trust again.
    skill(
        &ws.path().join(".claude/skills"),
        "proj",
        "name: proj\ndescription: From the repo",
        "CHANGED BODY",
    );
    let p = exec.call("p3", "Skill", json!({"skill": "proj"}));
    assert_eq!(code(&p).as_deref(), Some("denied"), "{p}");
    assert!(!text(&p).contains("CHANGED BODY"), "{p}");
}
