//! `kill -9` in the middle of appending never looks like tampering.

mod common;

use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolgate_audit::{AuditLog, AuditOptions, FsyncPolicy, Redactor, VerifyStatus, verify};

const CHILD_ENV: &str = "TOOLGATE_AUDIT_CRASH_CHILD";

/// Not a test on its own: when the parent test re-runs this binary with `CHILD_ENV` set,
/// this appends large records until it is killed.
#[test]
fn crash_child_writer() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    // No redaction and big records: the child spends much of its time inside `write`.
    let options = AuditOptions {
        fsync: FsyncPolicy::Never,
        redactor: Redactor::disabled(),
        ..AuditOptions::default()
    };
    let log = AuditLog::open_with(&path, options).unwrap();
    let pad = "abcdefgh".repeat(128 * 1024);
    for i in 0u64.. {
        log.append(&json!({"kind": "call", "tool": "Write", "i": i, "pad": pad}))
            .unwrap();
        if i == 0 {
            std::fs::write(format!("{path}.ready"), b"").unwrap();
        }
    }
}

#[test]
fn kill_minus_nine_mid_write_is_ok_or_torn_never_tampered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.jsonl");
    let exe = std::env::current_exe().unwrap();
    for round in 0..3u64 {
        let ready = format!("{}.ready", path.display());
        let _ = std::fs::remove_file(&ready);
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_child_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !std::path::Path::new(&ready).exists() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "child never wrote"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(10 + 7 * round));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let r = verify(&path).unwrap();
        assert!(
            matches!(r.status, VerifyStatus::Ok | VerifyStatus::TornTail { .. }),
            "round {round}: {r:?}"
        );
        let log = AuditLog::open(&path, FsyncPolicy::Always).unwrap();
        log.append(&json!({"kind": "call", "tool": "after", "round": round}))
            .unwrap();
        drop(log);
        let r = verify(&path).unwrap();
        assert_eq!(r.status, VerifyStatus::Ok, "round {round}: {r:?}");
    }
}
