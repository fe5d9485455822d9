//! Many writers, one chain.

mod common;

use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use toolgate_audit::{AuditLog, FsyncPolicy, VerifyStatus, read_records, verify};

const PER_THREAD: u64 = 150;

fn seqs(path: &std::path::Path) -> BTreeSet<u64> {
    read_records(path)
        .unwrap()
        .map(|e| e.unwrap().value["seq"].as_u64().unwrap())
        .collect()
}

#[test]
fn eight_threads_sharing_one_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let log = Arc::new(AuditLog::open(&path, FsyncPolicy::Batch).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    log.append(&json!({"kind": "call", "thread": t, "i": i}))
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    drop(log);
    let r = verify(&path).unwrap();
    assert_eq!((r.status, r.records), (VerifyStatus::Ok, 8 * PER_THREAD));
    assert_eq!(seqs(&path), (1..=8 * PER_THREAD).collect());
}

#[test]
fn two_writers_on_one_file_interleave() {
    let (_d, path) = common::make_log(2);
    let a = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    let b = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    for i in 0..10 {
        let x = a.append(&json!({"w": "a", "i": i})).unwrap();
        let y = b.append(&json!({"w": "b", "i": i})).unwrap();
        assert_eq!(y.seq, x.seq + 1);
    }
    let r = verify(&path).unwrap();
    assert_eq!((r.status, r.records), (VerifyStatus::Ok, 22));
}

#[test]
fn separate_instances_in_parallel_threads_stay_chained() {
    // Each thread opens its own `AuditLog` (its own file description), as separate
    // processes would; only the flock keeps them apart.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let log = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
                for i in 0..PER_THREAD {
                    log.append(&json!({"w": t, "i": i})).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let r = verify(&path).unwrap();
    assert_eq!(
        (r.status.clone(), r.records),
        (VerifyStatus::Ok, 4 * PER_THREAD),
        "{r:?}"
    );
    assert_eq!(seqs(&path), (1..=4 * PER_THREAD).collect());
}
