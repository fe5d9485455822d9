//! Write, Edit and MultiEdit, through the Gate.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;
use serde_json::json;
use toolgate_protocol::ErrorCode;
use toolgate_tools::FileToolsConfig;

#[tokio::test]
async fn write_creates_files_and_parents() {
    let env = Env::new();
    let out = env
        .ok(
            "Write",
            json!({"file_path": "a/b/new.txt", "content": "hi\n"}),
        )
        .await;
    assert!(out.starts_with("File created successfully at:"), "{out}");
    assert_eq!(env.read("a/b/new.txt"), "hi\n");
    // Writing what it just wrote counts as known content: a second write needs no read.
    env.ok(
        "Write",
        json!({"file_path": "a/b/new.txt", "content": "again\n"}),
    )
    .await;
    assert_eq!(env.read("a/b/new.txt"), "again\n");
}

#[tokio::test]
async fn write_over_an_existing_file_needs_a_fresh_read() {
    let env = Env::new();
    env.write("x.txt", "old\n");
    let e = env
        .err("Write", json!({"file_path": "x.txt", "content": "new\n"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "has not been read");
    env.ok("Read", json!({"file_path": "x.txt"})).await;
    env.write("x.txt", "changed by someone\n");
    let e = env
        .err("Write", json!({"file_path": "x.txt", "content": "new\n"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "Read it again");
    assert_eq!(env.read("x.txt"), "changed by someone\n");
    env.ok("Read", json!({"file_path": "x.txt"})).await;
    let out = env
        .ok("Write", json!({"file_path": "x.txt", "content": "new\n"}))
        .await;
    assert!(out.contains("has been overwritten"));
    assert_eq!(env.read("x.txt"), "new\n");
    let e = env
        .err("Write", json!({"file_path": ".", "content": "x"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "is a directory");
}

#[tokio::test]
async fn edit_requires_a_read_first() {
    let env = Env::new();
    env.write("f.rs", "fn a() {}\n");
    let e = env
        .err(
            "Edit",
            json!({"file_path": "f.rs", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "Read it first");
    assert_eq!(e.stage, toolgate_protocol::Stage::Validate);
}

#[tokio::test]
async fn edit_replaces_exactly_once_and_shows_a_diff() {
    let env = Env::new();
    env.write(
        "f.rs",
        "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n",
    );
    env.ok("Read", json!({"file_path": "f.rs"})).await;
    let out = env
        .ok(
            "Edit",
            json!({"file_path": "f.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
        )
        .await;
    assert!(out.contains("has been updated"), "{out}");
    assert!(out.contains("-    let x = 1;\n+    let x = 2;"), "{out}");
    assert_eq!(
        env.read("f.rs"),
        "fn main() {\n    let x = 2;\n    println!(\"{x}\");\n}\n"
    );
    // The edit refreshed the ledger: a second edit needs no new read.
    env.ok(
        "Edit",
        json!({"file_path": "f.rs", "old_string": "2", "new_string": "3"}),
    )
    .await;
}

#[tokio::test]
async fn non_unique_old_string_is_refused_unless_replace_all() {
    let env = Env::new();
    env.write("f.txt", "foo\nbar\nfoo\n");
    env.ok("Read", json!({"file_path": "f.txt"})).await;
    let e = env
        .err(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "foo", "new_string": "baz"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "occurs 2 times (lines 1, 3)");
    assert_eq!(env.read("f.txt"), "foo\nbar\nfoo\n");
    let out = env
        .ok("Edit", json!({"file_path": "f.txt", "old_string": "foo", "new_string": "baz", "replace_all": true}))
        .await;
    assert!(out.contains("2 replacements"), "{out}");
    assert_eq!(env.read("f.txt"), "baz\nbar\nbaz\n");
}

#[tokio::test]
async fn missing_and_identical_strings_are_refused() {
    let env = Env::new();
    env.write("f.txt", "abc\n");
    env.ok("Read", json!({"file_path": "f.txt"})).await;
    let e = env
        .err(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "xyz", "new_string": "q"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "not found");
    let e = env
        .err(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "abc", "new_string": "abc"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "identical");
    assert_eq!(e.stage, toolgate_protocol::Stage::Validate);
}

#[tokio::test]
async fn stale_read_is_detected_by_content_even_with_the_same_mtime_and_size() {
    let env = Env::new();
    let p = env.write("f.txt", "version A\n");
    env.ok("Read", json!({"file_path": "f.txt"})).await;
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    std::fs::write(&p, "version B\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let e = env
        .err(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "version", "new_string": "v"}),
        )
        .await;
    assert_code(
        &e,
        ErrorCode::InvalidRequest,
        "modified on disk since you last read it",
    );
    assert_eq!(env.read("f.txt"), "version B\n");
}

#[tokio::test]
async fn an_edit_racing_a_modification_between_check_and_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.txt");
    std::fs::write(&p, "one\n").unwrap();
    let q = p.clone();
    // The concurrent writer lands after validation (stage 3), before the edit runs (stage 9).
    let hook = RaceHook::on("Edit", move || {
        std::fs::write(&q, "one, changed concurrently\n").unwrap();
    });
    let env = Env::with(FileToolsConfig::default(), |b| {
        b.workspace(dir.path()).hooks(hook)
    });
    env.ok("Read", json!({"file_path": p})).await;
    let e = env
        .err(
            "Edit",
            json!({"file_path": p, "old_string": "one", "new_string": "two"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "Read it again");
    assert_eq!(e.stage, toolgate_protocol::Stage::Execute);
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "one, changed concurrently\n"
    );
}

#[tokio::test]
async fn edits_under_a_concurrent_writer_never_lose_the_writer_silently() {
    let env = Env::new();
    let p = env.write("counter.txt", "count 0\n");
    let stop = Arc::new(AtomicBool::new(false));
    let (s, q) = (stop.clone(), p.clone());
    let writer = std::thread::spawn(move || {
        let mut n = 1u64;
        while !s.load(Ordering::SeqCst) {
            std::fs::write(&q, format!("count {n}\n")).unwrap();
            n += 1;
            std::thread::sleep(Duration::from_micros(200));
        }
    });
    let (mut ok, mut stale) = (0, 0);
    for _ in 0..50 {
        let _ = env.call("Read", json!({"file_path": "counter.txt"})).await;
        let r = env
            .call(
                "Edit",
                json!({"file_path": "counter.txt", "old_string": "count", "new_string": "edited"}),
            )
            .await;
        match r.error() {
            None => ok += 1,
            Some(e) => {
                assert_eq!(e.code, ErrorCode::InvalidRequest, "{}", e.message);
                stale += 1;
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    assert_eq!(ok + stale, 50);
    let text = env.read("counter.txt");
    assert!(
        text.starts_with("count ") || text.starts_with("edited "),
        "{text}"
    );
}

#[tokio::test]
async fn line_endings_and_trailing_newline_are_preserved() {
    let env = Env::new();
    env.write("crlf.txt", "one\r\ntwo\r\nthree\r\n");
    env.write("nonl.txt", "a\nb");
    env.ok("Read", json!({"file_path": "crlf.txt"})).await;
    env.ok("Read", json!({"file_path": "nonl.txt"})).await;
    env.ok(
        "Edit",
        json!({"file_path": "crlf.txt", "old_string": "one\ntwo", "new_string": "1\n2"}),
    )
    .await;
    assert_eq!(env.read("crlf.txt"), "1\r\n2\r\nthree\r\n");
    env.ok(
        "Edit",
        json!({"file_path": "nonl.txt", "old_string": "b", "new_string": "c"}),
    )
    .await;
    assert_eq!(env.read("nonl.txt"), "a\nc");
}

#[tokio::test]
async fn edit_with_empty_old_string_creates_a_file() {
    let env = Env::new();
    env.ok(
        "Edit",
        json!({"file_path": "new.md", "old_string": "", "new_string": "# New\n"}),
    )
    .await;
    assert_eq!(env.read("new.md"), "# New\n");
    let e = env
        .err(
            "Edit",
            json!({"file_path": "absent.md", "old_string": "x", "new_string": "y"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "does not exist");
}

#[tokio::test]
async fn multi_edit_applies_in_order_all_or_nothing() {
    let env = Env::new();
    env.write("m.txt", "alpha beta gamma\n");
    env.ok("Read", json!({"file_path": "m.txt"})).await;
    env.ok(
        "MultiEdit",
        json!({"file_path": "m.txt", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            {"old_string": "ALPHA beta", "new_string": "AB"}
        ]}),
    )
    .await;
    assert_eq!(env.read("m.txt"), "AB gamma\n");
    let e = env
        .err(
            "MultiEdit",
            json!({"file_path": "m.txt", "edits": [
                {"old_string": "gamma", "new_string": "G"},
                {"old_string": "nothing", "new_string": "x"}
            ]}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "edit 2:");
    assert_eq!(env.read("m.txt"), "AB gamma\n");
    let e = env
        .err(
            "MultiEdit",
            json!({"file_path": "m.txt", "edits": [{"old_string": "a", "new_string": "a"}]}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "identical");
    let e = env
        .err("MultiEdit", json!({"file_path": "m.txt", "edits": []}))
        .await;
    assert_eq!(e.code, ErrorCode::InvalidInput);
}
