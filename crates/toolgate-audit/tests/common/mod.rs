//! Helpers shared by the integration tests.
#![allow(dead_code)]

use serde_json::json;
use std::path::{Path, PathBuf};
use toolgate_audit::{AuditLog, FsyncPolicy};

/// A fresh log with `n` small call records, in its own temp dir.
pub fn make_log(n: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    for i in 1..=n {
        log.append(&json!({"kind": "call", "tool": "Bash", "i": i}))
            .unwrap();
    }
    (dir, path)
}

/// The file's lines, each with its `\n` (the last may lack one).
pub fn lines(path: &Path) -> Vec<Vec<u8>> {
    std::fs::read(path)
        .unwrap()
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

pub fn write_lines(path: &Path, lines: &[Vec<u8>]) {
    std::fs::write(path, lines.concat()).unwrap();
}
