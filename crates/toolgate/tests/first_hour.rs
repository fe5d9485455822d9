//! What a new user trips over in the first hour (issue 27), through the front doors where
//! each was seen: Glob's note on what it left out, the messages of `check`, `trust` and
//! `sandbox run`, `exec --format openai`, `tools --write-snapshot`, and the everyday
//! commands that default mode lets through without asking.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    c.env_remove("TOOLGATE_LOG")
        .env("NO_COLOR", "1")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("toolgate-tests-no-user-config"),
        )
        .stdin(Stdio::null());
    c
}

fn call(dir: &Path, args: &[&str]) -> (Output, Value) {
    let out = bin()
        .args(["call", "--no-audit", "--json", "--workspace"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, v)
}

/// Glob counts only the denied files that matched its pattern: a pattern that could not
/// have matched a denied file says nothing about it, and one file is "1 file".
#[test]
fn glob_counts_only_denied_files_that_matched_and_says_1_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret.txt"), "s\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "n\n").unwrap();
    std::fs::create_dir(dir.path().join("keys")).unwrap();
    std::fs::write(dir.path().join("keys/a.pem"), "k\n").unwrap();
    std::fs::write(dir.path().join("keys/b.pem"), "k\n").unwrap();
    let deny = ["--deny", "Read(./secret.txt)", "--deny", "Read(./keys/*.pem)"];
    let glob = |pattern: &str| {
        let input = serde_json::json!({ "pattern": pattern }).to_string();
        let mut args = deny.to_vec();
        args.extend(["Glob", &input]);
        let (out, v) = call(dir.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{pattern}: {v}");
        v.to_string()
    };
    for pattern in ["**/*.nomatch", "*.md", "keys/*.txt", "**/notes.txt"] {
        let text = glob(pattern);
        assert!(!text.contains("Left out"), "{pattern}: {text}");
    }
    let text = glob("**/*.txt");
    assert!(text.contains("notes.txt") && !text.contains("secret.txt"), "{text}");
    assert!(
        text.contains("deny reading them: 1 file.)"),
        "one file, singular: {text}"
    );
    let text = glob("**/*.pem");
    assert!(text.contains("deny reading them: 2 files.)"), "{text}");
    // Grep with a glob filter that leaves the denied file out says nothing either.
    let input = r#"{"pattern": "s", "glob": "*.nomatch"}"#;
    let mut args = deny.to_vec();
    args.extend(["Grep", input]);
    let (_, v) = call(dir.path(), &args);
    assert!(!v.to_string().contains("Left out"), "{v}");
    let mut args = deny.to_vec();
    args.extend(["Grep", r#"{"pattern": "s", "glob": "*.txt"}"#]);
    let (_, v) = call(dir.path(), &args);
    assert!(v.to_string().contains("deny reading them: 1 file.)"), "{v}");
}
