//! Glob, through the Gate.

mod common;

use std::time::{Duration, SystemTime};

use common::*;
use serde_json::json;
use toolgate_protocol::ErrorCode;
use toolgate_tools::FileToolsConfig;

fn touch(path: &std::path::Path, secs_ago: u64) {
    let t = SystemTime::now() - Duration::from_secs(secs_ago);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn lines(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with('/'))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn newest_first() {
    let env = Env::new();
    for (name, age) in [("old.txt", 300), ("new.txt", 10), ("mid.txt", 100)] {
        touch(&env.write(name, "x"), age);
    }
    let out = env.ok("Glob", json!({"pattern": "*.txt"})).await;
    let ws = env.ws();
    assert_eq!(
        lines(&out),
        ["new.txt", "mid.txt", "old.txt"].map(|n| ws.join(n).display().to_string())
    );
}

#[tokio::test]
async fn capped_at_100_with_a_truncation_flag() {
    let env = Env::new();
    for i in 0..150 {
        env.write(&format!("f{i:03}.rs"), "");
    }
    let r = env.call("Glob", json!({"pattern": "**/*.rs"})).await;
    let out = output(&r);
    assert_eq!(lines(&out.joined_text()).len(), 100);
    let s = out.structured.as_ref().unwrap();
    assert_eq!(s["truncated"], json!(true));
    assert_eq!(s["totalMatches"], json!(150));
    assert!(out.joined_text().contains("Results are truncated"));
}

#[tokio::test]
async fn pattern_forms() {
    let env = Env::new();
    env.write("src/a.rs", "");
    env.write("src/sub/b.rs", "");
    env.write("top.rs", "");
    env.write("src/c.txt", "");
    let names = |out: String| {
        let mut v: Vec<String> = lines(&out)
            .into_iter()
            .map(|l| l.rsplit('/').next().unwrap().to_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names(env.ok("Glob", json!({"pattern": "*.rs"})).await),
        ["a.rs", "b.rs", "top.rs"]
    );
    assert_eq!(
        names(env.ok("Glob", json!({"pattern": "**/*.rs"})).await),
        ["a.rs", "b.rs", "top.rs"]
    );
    assert_eq!(
        names(env.ok("Glob", json!({"pattern": "src/*.rs"})).await),
        ["a.rs"]
    );
    assert_eq!(
        names(env.ok("Glob", json!({"pattern": "src/**/*.rs"})).await),
        ["a.rs", "b.rs"]
    );
    assert_eq!(
        names(
            env.ok("Glob", json!({"pattern": "*.{rs,txt}", "path": "src"}))
                .await
        ),
        ["a.rs", "b.rs", "c.txt"]
    );
    let abs = format!("{}/src/**/*.txt", env.ws().display());
    assert_eq!(
        names(env.ok("Glob", json!({"pattern": abs})).await),
        ["c.txt"]
    );
    assert_eq!(
        env.ok("Glob", json!({"pattern": "*.zig"})).await,
        "No files found"
    );
}

#[tokio::test]
async fn dotfiles_included_gitignore_not_honoured_by_default() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".git/objects")).unwrap();
    env.write(".git/objects/deadbeef.txt", "");
    env.write(".gitignore", "ignored.txt\n");
    env.write("ignored.txt", "");
    env.write(".hidden.txt", "");
    env.write("kept.txt", "");
    let mut got: Vec<String> = lines(&env.ok("Glob", json!({"pattern": "**/*.txt"})).await);
    got.sort();
    let ws = env.ws();
    assert_eq!(
        got,
        [".hidden.txt", "ignored.txt", "kept.txt"].map(|n| ws.join(n).display().to_string())
    );

    let config = FileToolsConfig {
        glob_honour_gitignore: true,
        ..FileToolsConfig::default()
    };
    let root = env.dir.path().to_path_buf();
    let honour = Env::with(config, |b| b.workspace(root));
    let mut got = lines(
        &honour
            .ok("Glob", json!({"pattern": "**/*.txt", "path": &ws}))
            .await,
    );
    got.sort();
    assert_eq!(
        got,
        [".hidden.txt", "kept.txt"].map(|n| ws.join(n).display().to_string())
    );
}

#[tokio::test]
async fn bad_inputs() {
    let env = Env::new();
    env.write("file.txt", "");
    let e = env.err("Glob", json!({"pattern": "[unclosed"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "invalid glob pattern");
    let e = env
        .err("Glob", json!({"pattern": "*", "path": "file.txt"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "not a directory");
    let e = env.err("Glob", json!({"pattern": "*", "path": "/"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "outside the directories");
    let e = env.err("Glob", json!({"pattern": "/etc/*"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "outside the directories");
}

#[tokio::test]
async fn the_time_limit_returns_partial_results() {
    let config = FileToolsConfig {
        glob_time_limit: Duration::ZERO,
        ..FileToolsConfig::default()
    };
    let env = Env::with(config, |b| b);
    for i in 0..600 {
        env.write(&format!("d{}/f{i}.txt", i % 7), "");
    }
    let r = env.call("Glob", json!({"pattern": "**/*.txt"})).await;
    let out = output(&r);
    assert!(
        out.joined_text().contains("The search stopped after 0 s"),
        "{}",
        out.joined_text()
    );
    assert_eq!(out.structured.as_ref().unwrap()["truncated"], json!(true));
}

#[tokio::test]
async fn symlinks_are_listed_not_followed() {
    let env = Env::new();
    env.write("real.cfg", "");
    symlink(env.path("real.cfg"), env.path("alias.cfg"));
    symlink(env.out(), env.path("outside-dir"));
    std::fs::write(env.out().join("leak.cfg"), "").unwrap();
    let mut got: Vec<String> = lines(&env.ok("Glob", json!({"pattern": "**/*.cfg"})).await);
    got.sort();
    let ws = env.ws();
    assert_eq!(
        got,
        ["alias.cfg", "real.cfg"].map(|n| ws.join(n).display().to_string())
    );
}
