//! Group commit: concurrent records share a `write`, keep one chain, and are never lost —
//! also when their tickets are dropped or waited for synchronously on a busy runtime.

use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use toolgate_audit::{AuditLog, AuditOptions, FsyncPolicy, VerifyStatus, read_records, verify};

fn seqs(path: &std::path::Path) -> BTreeSet<u64> {
    read_records(path)
        .unwrap()
        .map(|e| e.unwrap().value["seq"].as_u64().unwrap())
        .collect()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn sixteen_calls_on_one_thread_share_one_write() {
    for policy in [FsyncPolicy::Never, FsyncPolicy::Batch, FsyncPolicy::Always] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.jsonl");
        let log = Arc::new(AuditLog::open(&path, policy).unwrap());
        let rt = current_thread();
        let appended = rt.block_on(async {
            let calls = (0..16).map(|i| {
                let log = Arc::clone(&log);
                async move { log.submit(&json!({"kind": "call", "i": i})).unwrap().await }
            });
            futures::future::join_all(calls).await
        });
        let mut got: Vec<u64> = appended.into_iter().map(|a| a.unwrap().seq).collect();
        got.sort_unstable();
        assert_eq!(got, (1..=16).collect::<Vec<_>>(), "{policy}");
        let stats = log.writer_stats();
        assert_eq!(stats.records, 16, "{policy}");
        assert_eq!(stats.batches, 1, "{policy}: {stats:?}");
        drop(log);
        let r = verify(&path).unwrap();
        assert_eq!((r.status, r.records), (VerifyStatus::Ok, 16), "{policy}");
    }
}

#[test]
fn many_tasks_on_a_multi_threaded_runtime_keep_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.jsonl");
    let log = Arc::new(AuditLog::open(&path, FsyncPolicy::Batch).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..64)
            .map(|t| {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    for i in 0..25 {
                        let a = log.submit(&json!({"t": t, "i": i})).unwrap().await.unwrap();
                        assert!(a.seq >= 1);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let stats = log.writer_stats();
    assert_eq!(stats.records, 64 * 25);
    drop(log);
    let r = verify(&path).unwrap();
    assert_eq!(
        (r.status.clone(), r.records),
        (VerifyStatus::Ok, 64 * 25),
        "{r:?}"
    );
    assert_eq!(seqs(&path), (1..=64 * 25).collect());
}

#[test]
fn a_dropped_ticket_is_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.jsonl");
    let log = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    for i in 0..5 {
        drop(log.submit(&json!({"dropped": i})).unwrap());
    }
    // Not flushed, not dropped: the tickets' own drops wrote them.
    assert_eq!(seqs(&path), (1..=5).collect());
    // A ticket that was polled once (it yielded) and then dropped.
    let rt = current_thread();
    rt.block_on(async {
        let mut ticket = log.submit(&json!({"polled": true})).unwrap();
        let first = futures::poll!(&mut ticket);
        assert!(first.is_pending(), "the first poll yields");
    });
    assert_eq!(seqs(&path), (1..=6).collect());
    drop(log);
    assert_eq!(verify(&path).unwrap().status, VerifyStatus::Ok);
}

#[test]
fn a_blocking_wait_never_waits_for_a_task_on_its_own_thread() {
    // A call dropped mid-flight waits synchronously for its record, on the runtime's only
    // thread, while another call's ticket has yielded and cannot run: it must write the
    // queue itself instead of waiting for that task.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.jsonl");
    let log = Arc::new(AuditLog::open(&path, FsyncPolicy::Always).unwrap());
    let rt = current_thread();
    rt.block_on(async {
        let mut yielded = log.submit(&json!({"async": true})).unwrap();
        assert!(futures::poll!(&mut yielded).is_pending());
        let blocking = log
            .submit(&json!({"blocking": true}))
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(blocking.seq, 2);
        // The yielded ticket was written by the blocking waiter.
        assert_eq!(yielded.await.unwrap().seq, 1);
    });
    assert_eq!(log.writer_stats().batches, 1);
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 2);
}

#[test]
fn records_are_written_in_submission_order_within_a_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("o.jsonl");
    let log = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    let tickets: Vec<_> = (0..10)
        .map(|i| log.submit(&json!({"n": i})).unwrap())
        .collect();
    let seqs: Vec<u64> = tickets.into_iter().map(|t| t.wait().unwrap().seq).collect();
    assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    let ns: Vec<u64> = read_records(&path)
        .unwrap()
        .map(|e| e.unwrap().value["n"].as_u64().unwrap())
        .collect();
    assert_eq!(ns, (0..10).collect::<Vec<_>>());
}

#[test]
fn groups_from_two_processes_worth_of_writers_interleave_without_breaking_the_chain() {
    // Two logs on one file (as two processes would have), each writing groups.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.jsonl");
    let a = Arc::new(AuditLog::open(&path, FsyncPolicy::Never).unwrap());
    let b = Arc::new(AuditLog::open(&path, FsyncPolicy::Never).unwrap());
    let rt = current_thread();
    rt.block_on(async {
        for round in 0..20 {
            let calls = (0..8).map(|i| {
                let log = if i % 2 == 0 {
                    Arc::clone(&a)
                } else {
                    Arc::clone(&b)
                };
                async move { log.submit(&json!({"round": round, "i": i})).unwrap().await }
            });
            for r in futures::future::join_all(calls).await {
                r.unwrap();
            }
        }
    });
    drop((a, b));
    let r = verify(&path).unwrap();
    assert_eq!(
        (r.status.clone(), r.records),
        (VerifyStatus::Ok, 160),
        "{r:?}"
    );
}

#[test]
fn batch_interval_is_an_option() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.jsonl");
    let log = AuditLog::open_with(
        &path,
        AuditOptions {
            batch_interval: std::time::Duration::from_millis(5),
            ..AuditOptions::default()
        },
    )
    .unwrap();
    for i in 0..3 {
        log.append(&json!({"i": i})).unwrap();
    }
    log.flush().unwrap();
    assert_eq!(log.failure(), None);
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 3);
}
