//! Shipping the log to a destination: in order, at least once, resumed from the checkpoint,
//! never past a line that does not verify, and the audit trail says when a copy was behind.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use toolgate_audit::ship::{
    DeliveryError, Destination, ShipOptions, Shipped, Shipper, StartAt, backlogs,
};
use toolgate_audit::{AuditLog, FsyncPolicy, read_records};

#[derive(Default)]
struct Memory {
    got: Mutex<Vec<Shipped>>,
    fail_next: AtomicUsize,
    start: Option<StartAt>,
}

impl Memory {
    fn seqs(&self) -> Vec<u64> {
        self.got.lock().unwrap().iter().map(|r| r.seq).collect()
    }
}

#[async_trait]
impl Destination for Memory {
    fn id(&self) -> String {
        "memory".into()
    }
    fn describe(&self) -> String {
        "memory://test".into()
    }
    fn start_at(&self) -> StartAt {
        self.start.unwrap_or(StartAt::Beginning)
    }
    async fn deliver(&self, records: &[Shipped]) -> Result<(), DeliveryError> {
        if self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(DeliveryError::new("503 from the collector"));
        }
        self.got.lock().unwrap().extend_from_slice(records);
        Ok(())
    }
}

fn fast() -> ShipOptions {
    ShipOptions {
        poll: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
        lock_retry: Duration::from_millis(20),
        batch_records: 7,
        ..ShipOptions::default()
    }
}

/// Waits (bounded) until `done` holds; the bound only stops a broken shipper from hanging
/// the test.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn log_with(n: u64) -> (tempfile::TempDir, Arc<AuditLog>) {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(AuditLog::open(dir.path().join("audit.jsonl"), FsyncPolicy::Never).unwrap());
    for i in 0..n {
        log.append(&json!({"kind": "call", "call_id": format!("c{i}")}))
            .unwrap();
    }
    (dir, log)
}

#[test]
fn records_arrive_in_order_and_the_checkpoint_follows() {
    let (_d, log) = log_with(20);
    let dest = Arc::new(Memory::default());
    let shipper = Shipper::start(Arc::clone(&log), dest.clone(), fast()).unwrap();
    eventually("20 delivered", || dest.seqs().len() == 20);
    for i in 20..25 {
        log.append(&json!({"kind": "call", "call_id": format!("c{i}")}))
            .unwrap();
    }
    eventually("25 delivered", || dest.seqs().len() == 25);
    shipper.stop();
    assert_eq!(dest.seqs(), (1..=25).collect::<Vec<_>>());
    let first = &dest.got.lock().unwrap()[0];
    assert_eq!(first.body(), br#"{"kind":"call","call_id":"c0"}"#);
    let b = backlogs(log.path());
    assert_eq!(b.len(), 1);
    assert_eq!(
        (b[0].pending, b[0].checkpoint.seq, b[0].checkpoint.delivered),
        (0, 25, 25)
    );
    // A new shipper (a restarted process) resumes: nothing is sent twice.
    let again = Arc::new(Memory::default());
    log.append(&json!({"kind": "call", "call_id": "after restart"}))
        .unwrap();
    let shipper = Shipper::start(Arc::clone(&log), again.clone(), fast()).unwrap();
    eventually("the new record", || again.seqs() == [26]);
    shipper.stop();
}

#[test]
fn a_destination_that_fails_gets_everything_later_and_the_log_says_so() {
    let (_d, log) = log_with(10);
    let dest = Arc::new(Memory {
        fail_next: AtomicUsize::new(3),
        ..Memory::default()
    });
    let shipper = Shipper::start(Arc::clone(&log), dest.clone(), fast()).unwrap();
    eventually("recovered", || {
        read_records(log.path())
            .unwrap()
            .any(|e| e.unwrap().value["status"] == "recovered")
    });
    shipper.stop();
    let records: Vec<Value> = read_records(log.path())
        .unwrap()
        .map(|e| e.unwrap().value)
        .collect();
    let notes: Vec<&Value> = records.iter().filter(|r| r["kind"] == "delivery").collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[0]["status"], "failing");
    assert!(notes[0]["error"].as_str().unwrap().contains("503"));
    assert_eq!(notes[0]["destination"], "memory://test");
    assert_eq!(notes[1]["status"], "recovered");
    // Every call record arrived, in order (the delivery notes too, once shipped).
    let calls: Vec<u64> = dest
        .got
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.record["kind"] == "call")
        .map(|r| r.seq)
        .collect();
    assert_eq!(calls, (1..=10).collect::<Vec<_>>());
}

#[test]
fn an_outage_is_noted_once_even_when_the_checkpoint_cannot_be_saved() {
    // A checkpoint that cannot be written (here: a directory stands where it goes, as a
    // full disk would refuse it) must not make every new process note the same outage
    // again: short-lived `toolgate hook` processes would fill the log with notes.
    let (_d, log) = log_with(3);
    let blocked = toolgate_audit::ship::ship_dir(log.path()).join("memory.json");
    std::fs::create_dir_all(&blocked).unwrap();
    for _ in 0..3 {
        let dest = Arc::new(Memory {
            fail_next: AtomicUsize::new(usize::MAX),
            ..Memory::default()
        });
        let shipper = Shipper::start(Arc::clone(&log), dest.clone(), fast()).unwrap();
        eventually("a failed delivery", || {
            dest.fail_next.load(Ordering::SeqCst) < usize::MAX - 2
        });
        shipper.stop();
    }
    let notes = read_records(log.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().value["kind"] == "delivery")
        .count();
    assert_eq!(notes, 0, "an unsaved outage was noted again");
    assert!(blocked.is_dir());
}

#[test]
fn a_line_that_does_not_verify_stops_shipping_there() {
    let (_d, log) = log_with(6);
    let path = log.path().to_owned();
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen("\"c3\"", "\"cX\"", 1);
    std::fs::write(&path, edited).unwrap();
    let dest = Arc::new(Memory::default());
    let shipper = Shipper::start(Arc::clone(&log), dest.clone(), fast()).unwrap();
    eventually("stuck", || {
        backlogs(&path)
            .first()
            .is_some_and(|b| b.checkpoint.last_error.is_some())
    });
    shipper.stop();
    assert_eq!(dest.seqs(), [1, 2, 3], "nothing from the edited line on");
    let b = &backlogs(&path)[0];
    let why = b.checkpoint.last_error.clone().unwrap();
    assert!(
        why.contains("does not follow") || why.contains("not a valid record"),
        "{why}"
    );
    assert!(b.pending >= 3);
}

#[test]
fn one_process_ships_a_log_to_a_destination_at_a_time() {
    let (_d, log) = log_with(30);
    let a = Arc::new(Memory::default());
    let b = Arc::new(Memory::default());
    let sa = Shipper::start(Arc::clone(&log), a.clone(), fast()).unwrap();
    let sb = Shipper::start(Arc::clone(&log), b.clone(), fast()).unwrap();
    eventually("30 delivered", || a.seqs().len() + b.seqs().len() >= 30);
    drop(sa);
    drop(sb);
    let (na, nb) = (a.seqs().len(), b.seqs().len());
    assert!(na == 0 || nb == 0, "both shipped: {na} and {nb}");
    assert_eq!(na + nb, 30);
}

#[test]
fn a_telemetry_destination_starts_at_the_end() {
    let (_d, log) = log_with(5);
    let dest = Arc::new(Memory {
        start: Some(StartAt::End),
        ..Memory::default()
    });
    let shipper = Shipper::start(Arc::clone(&log), dest.clone(), fast()).unwrap();
    eventually("checkpoint", || !backlogs(log.path()).is_empty());
    log.append(&json!({"kind": "call", "call_id": "new"}))
        .unwrap();
    eventually("the new record", || dest.seqs() == [6]);
    shipper.stop();
}
