//! Copying the log elsewhere — an OpenTelemetry collector, a PostgreSQL table — at least
//! once, without ever making a call wait for the network.
//!
//! The local hash-chained file stays the source of truth, and it is also the spool: a
//! [`Shipper`] reads the records after its [`Checkpoint`], checks them as the verifier
//! would (it never sends a record that does not verify), hands them to its
//! [`Destination`] in batches, and moves the checkpoint only once the destination has
//! accepted them. While a destination is down, records simply stay unsent in the log —
//! there is no second copy to lose or to fill a disk — and are sent when it is back;
//! `toolgate audit stats` shows the backlog. A crash between delivery and checkpoint sends
//! a batch twice: destinations recognise records they already have (by the record's hash
//! and call id), which is what "at least once" asks of them.
//!
//! Several processes may share one log: each destination is shipped by whichever process
//! holds its lock file (`<log>.ship/<id>.lock`); the others wait to take over. When
//! deliveries start failing, and when they recover, the shipper appends a `delivery`
//! record to the log itself, so the audit trail says when a copy was behind and why —
//! once per outage: the note is written only after the checkpoint that remembers it is
//! saved, so processes that cannot save it (a full disk) do not repeat it.
//!
//! Delivery is bounded in memory (a batch of at most [`ShipOptions::batch_records`]) and in
//! time ([`ShipOptions::deliver_timeout`]); retries back off up to
//! [`ShipOptions::max_backoff`].

mod checkpoint;
mod reader;

use async_trait::async_trait;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use checkpoint::{Checkpoint, checkpoints, ship_dir};

use crate::AuditLog;
use reader::Stuck;

/// One record as shipped: the line as it is in the log and its parsed value.
#[derive(Debug, Clone, PartialEq)]
pub struct Shipped {
    /// The record's `seq` in the local log.
    pub seq: u64,
    /// The record's hash in the local log: unique, and the same every time it is sent.
    pub hash: String,
    /// Byte offset of the line in the local log.
    pub offset: u64,
    /// The line, without its newline.
    pub line: String,
    /// The line parsed (with `seq`, `prev` and `hash`).
    pub record: Value,
}

impl Shipped {
    /// The record as it was submitted (after redaction), without the local log's `seq`,
    /// `prev` and `hash`: the bytes of the line between them, so a destination can chain
    /// it again in its own order.
    pub fn body(&self) -> Vec<u8> {
        crate::line::record_json(self.line.as_bytes())
    }
}

/// A destination could not take a batch; it is tried again later.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct DeliveryError {
    /// What went wrong, in words (no credentials).
    pub message: String,
}

impl DeliveryError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Where a shipper starts when a destination has no checkpoint yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// Every record the log holds (a store that should have them all).
    Beginning,
    /// Records written from now on (a telemetry pipeline).
    End,
}

/// Somewhere records are copied to.
#[async_trait]
pub trait Destination: Send + Sync {
    /// Names the checkpoint: letters, digits, `-`, `_` and `.`; the same every time for
    /// the same destination, and free of credentials.
    fn id(&self) -> String;

    /// Where, for people (no credentials).
    fn describe(&self) -> String;

    /// Where to start without a checkpoint.
    fn start_at(&self) -> StartAt;

    /// Delivers records in log order. `Ok` means every one is stored (records it already
    /// had count as stored: they may come again after a crash).
    async fn deliver(&self, records: &[Shipped]) -> Result<(), DeliveryError>;
}

/// How a shipper paces itself.
#[derive(Debug, Clone)]
pub struct ShipOptions {
    /// Most records per delivery.
    pub batch_records: usize,
    /// Most bytes of lines per delivery (at least one record is sent).
    pub batch_bytes: usize,
    /// How often to look for new records when there were none.
    pub poll: Duration,
    /// Longest one delivery may take before it counts as failed.
    pub deliver_timeout: Duration,
    /// Longest wait between two failed deliveries (the wait doubles from `poll`).
    pub max_backoff: Duration,
    /// On stop, how long to keep delivering what is left (then it stays for next time).
    pub drain_timeout: Duration,
    /// How often a process that does not hold the destination's lock tries to take it.
    pub lock_retry: Duration,
}

impl Default for ShipOptions {
    fn default() -> Self {
        Self {
            // A collector's or a database's batch, not a call's: big enough that a backlog
            // clears in few round trips, small enough to hold in memory twice.
            batch_records: 512,
            batch_bytes: 4 * 1024 * 1024,
            poll: Duration::from_millis(200),
            deliver_timeout: Duration::from_secs(10),
            max_backoff: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(2),
            lock_retry: Duration::from_secs(2),
        }
    }
}

/// A thread copying one log to one destination; stops (after a bounded drain) when
/// dropped or [`stop`](Self::stop)ped.
pub struct Shipper {
    signal: Arc<Signal>,
    thread: Option<JoinHandle<()>>,
    destination: String,
}

impl std::fmt::Debug for Shipper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shipper")
            .field("destination", &self.destination)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Signal {
    state: Mutex<SignalState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct SignalState {
    stop: bool,
}

impl Signal {
    /// Sleeps up to `d`; returns early when stopped.
    fn sleep(&self, d: Duration) {
        let st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = self
            .changed
            .wait_timeout_while(st, d, |s| !s.stop)
            .unwrap_or_else(PoisonError::into_inner);
    }

    fn stopping(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stop
    }
}

impl Shipper {
    /// Starts shipping `log` to `destination` on a thread of its own (with its own async
    /// runtime, so a slow destination never slows the gate's).
    pub fn start(
        log: Arc<AuditLog>,
        destination: Arc<dyn Destination>,
        options: ShipOptions,
    ) -> std::io::Result<Shipper> {
        let signal = Arc::new(Signal::default());
        let describe = destination.describe();
        // Where "from now on" is, taken now: records of calls made while the thread starts
        // are after it.
        let end = (destination.start_at() == StartAt::End).then(|| reader::end_of(log.path()));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let run = Run {
            path: log.path().to_owned(),
            id: destination.id(),
            log,
            destination,
            options,
            signal: Arc::clone(&signal),
            end,
        };
        let thread = std::thread::Builder::new()
            .name("toolgate-audit-ship".into())
            .spawn(move || rt.block_on(run.run()))?;
        Ok(Shipper {
            signal,
            thread: Some(thread),
            destination: describe,
        })
    }

    /// Delivers what it can within the drain timeout, then stops.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.signal
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stop = true;
        self.signal.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Shipper {
    fn drop(&mut self) {
        self.halt();
    }
}

/// What `toolgate audit stats` says about one destination of a log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Backlog {
    /// The checkpoint's id.
    pub id: String,
    /// The checkpoint.
    #[serde(flatten)]
    pub checkpoint: Checkpoint,
    /// Records in the log after the checkpoint (not yet delivered).
    pub pending: u64,
}

/// The backlog of every destination that has shipped `log`.
pub fn backlogs(log: &Path) -> Vec<Backlog> {
    let head = crate::tail(log, 1)
        .ok()
        .and_then(|t| t.entries.into_iter().flatten().last())
        .and_then(|e| e.value.get("seq").and_then(Value::as_u64))
        .unwrap_or(0);
    checkpoints(log)
        .into_iter()
        .map(|(id, checkpoint)| Backlog {
            pending: head.saturating_sub(checkpoint.seq),
            id,
            checkpoint,
        })
        .collect()
}

struct Run {
    path: PathBuf,
    id: String,
    log: Arc<AuditLog>,
    destination: Arc<dyn Destination>,
    options: ShipOptions,
    signal: Arc<Signal>,
    /// For [`StartAt::End`]: offset, seq and hash of the log's end when shipping started.
    end: Option<(u64, u64, String)>,
}

impl Run {
    async fn run(self) {
        // Held for the life of the loop: one shipper per (log, destination).
        let _lock = loop {
            match checkpoint::try_lock(&self.path, &self.id) {
                Ok(Some(lock)) => break lock,
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(destination = %self.destination.describe(), error = %e, "cannot lock the audit shipping checkpoint; not shipping");
                    return;
                }
            }
            if self.signal.stopping() {
                return;
            }
            self.signal.sleep(self.options.lock_retry);
        };
        let mut cp = self.initial_checkpoint();
        let mut backoff = self.options.poll;
        let mut draining_since: Option<Instant> = None;
        loop {
            if self.signal.stopping() {
                let since = *draining_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= self.options.drain_timeout {
                    return;
                }
            }
            let batch = match reader::read_after(
                &self.path,
                &cp,
                self.options.batch_records,
                self.options.batch_bytes,
            ) {
                Ok(batch) => batch,
                Err(Stuck::Replaced(why)) => {
                    tracing::warn!(destination = %cp.destination, %why, "the audit log was replaced; shipping it from its start");
                    // The outage, if any, carries over: a replaced log is no recovery.
                    let failing_since = cp.failing_since.take();
                    cp = Checkpoint::start(self.destination.describe());
                    cp.failing_since = failing_since;
                    // Never a busy loop, whatever the reader keeps answering.
                    self.signal.sleep(self.options.poll);
                    continue;
                }
                Err(Stuck::Unverified(why)) => {
                    self.failed(
                        &mut cp,
                        &format!("not shipped: {why}; run `toolgate audit verify`"),
                    );
                    if self.signal.stopping() {
                        return;
                    }
                    self.signal.sleep(self.options.max_backoff);
                    continue;
                }
            };
            if batch.records.is_empty() {
                if batch.end != cp.offset {
                    cp.offset = batch.end;
                    let _ = self.save(&cp);
                }
                if self.signal.stopping() {
                    return;
                }
                self.signal.sleep(self.options.poll);
                continue;
            }
            let delivered = tokio::time::timeout(
                self.options.deliver_timeout,
                self.destination.deliver(&batch.records),
            )
            .await
            .unwrap_or_else(|_| {
                Err(DeliveryError::new(format!(
                    "no answer within {:?}",
                    self.options.deliver_timeout
                )))
            });
            cp.attempted = Some(crate::now_rfc3339());
            match delivered {
                Ok(()) => {
                    let last = batch.records.last();
                    cp.seq = last.map_or(cp.seq, |r| r.seq);
                    cp.hash = last.map_or(cp.hash.clone(), |r| r.hash.clone());
                    cp.offset = batch.end;
                    cp.delivered += batch.records.len() as u64;
                    if cp.failing_since.take().is_some() {
                        cp.last_error = None;
                        if self.save(&cp) {
                            self.note("recovered", None, cp.seq);
                        }
                    } else {
                        let _ = self.save(&cp);
                    }
                    backoff = self.options.poll;
                }
                Err(e) => {
                    self.failed(&mut cp, &e.message);
                    if self.signal.stopping() {
                        return;
                    }
                    self.signal.sleep(backoff);
                    backoff = (backoff * 2).min(self.options.max_backoff);
                }
            }
        }
    }

    fn initial_checkpoint(&self) -> Checkpoint {
        let describe = self.destination.describe();
        if let Some(mut cp) = checkpoint::load(&self.path, &self.id) {
            match reader::still_matches(&self.path, &cp) {
                Ok(()) => {
                    cp.destination = describe;
                    return cp;
                }
                Err(Stuck::Replaced(why) | Stuck::Unverified(why)) => {
                    tracing::warn!(destination = %describe, %why, "the audit log changed under its shipping checkpoint; shipping it from its start");
                    return Checkpoint::start(describe);
                }
            }
        }
        let mut cp = Checkpoint::start(describe);
        if let Some((offset, seq, hash)) = &self.end {
            cp.offset = *offset;
            cp.seq = *seq;
            cp.hash.clone_from(hash);
        }
        let _ = self.save(&cp);
        cp
    }

    /// Saves `cp`; `false` (and a warning) when it cannot be.
    fn save(&self, cp: &Checkpoint) -> bool {
        match checkpoint::save(&self.path, &self.id, cp) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(destination = %cp.destination, error = %e, "cannot save the audit shipping checkpoint (records may be sent again)");
                false
            }
        }
    }

    /// A failed delivery. The `failing` note goes into the log only once the checkpoint
    /// that says "already noted" is saved: a process that cannot save it (a full disk)
    /// would otherwise note the same outage again at every start, and every short-lived
    /// `toolgate hook` process is one start.
    fn failed(&self, cp: &mut Checkpoint, error: &str) {
        let first = cp.failing_since.is_none();
        if first {
            cp.failing_since = Some(crate::now_rfc3339());
            tracing::warn!(destination = %cp.destination, %error, "audit records cannot be delivered; they stay in the local log and are sent when the destination is back");
        }
        cp.last_error = Some(error.to_owned());
        if self.save(cp) && first {
            self.note("failing", Some(error), cp.seq);
        }
    }

    /// Appends a `delivery` record to the log: the audit trail says when a copy fell behind.
    fn note(&self, status: &str, error: Option<&str>, delivered_seq: u64) {
        let record = json!({
            "kind": "delivery",
            "ts": crate::now_rfc3339(),
            "destination": self.destination.describe(),
            "status": status,
            "error": error,
            "delivered_seq": delivered_seq,
        });
        if let Err(e) = self.log.append(&record) {
            tracing::error!(error = %e, "cannot record a delivery change in the audit log");
        }
    }
}
