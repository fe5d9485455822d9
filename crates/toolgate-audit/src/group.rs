//! Group commit: records of concurrent callers go to the file together, one `flock` and one
//! `write` for many.
//!
//! A caller hands its record over ([`AuditLog::submit`](crate::AuditLog::submit)) and gets a
//! [`Ticket`]. There is no writer thread to hand records to and wake: the first ticket that
//! comes back to a queue nobody is writing takes everything queued and writes it as one
//! batch, then the batches queued meanwhile, and completes every ticket it wrote.
//!
//! Awaiting a ticket first yields once to the runtime. That yield is what makes groups: the
//! other calls that are ready run to their own record meanwhile (on the current-thread
//! runtime of stdio `serve` as much as on a multi-threaded one), and the first ticket back
//! writes them all. Alone, a call pays one extra poll; it does not wait for a timer or a
//! thread.
//!
//! Nobody ever blocks on a task: [`Ticket::wait`] (the synchronous path, used when a call's
//! future is dropped and by [`AuditLog::append`](crate::AuditLog::append)) writes the queue
//! itself when nobody is writing, and otherwise waits for a writer that is running on
//! another thread right now. A dropped ticket does the same, so a record once submitted is
//! written even if nobody awaits it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use crate::writer::Shared;
use crate::{Appended, AuditError};

/// How many batches one writer writes in a row before handing the queue to the callers
/// still waiting: under constant load the queue may never run dry, and the call whose
/// ticket became the writer would otherwise not get its answer back.
const MAX_DRAIN_ROUNDS: usize = 4;

/// Most bytes of records in one `write`: a batch is held in memory twice (the records and
/// their lines) and written in one system call, so it is bounded even when many large
/// records are queued. One record larger than this is still written, alone.
pub(crate) const MAX_BATCH_BYTES: usize = 1024 * 1024;

/// Records waiting to be written, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    pending: std::collections::VecDeque<Pending>,
    /// Number of the next record submitted.
    next: u64,
    /// Every record numbered below this has been taken by a writer.
    taken: u64,
    /// Someone is writing the queue.
    writing: bool,
}

#[derive(Debug)]
struct Pending {
    json: Vec<u8>,
    slot: Arc<Slot>,
}

/// Where a record's outcome is left for its ticket.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct SlotState {
    result: Option<Result<Appended, AuditError>>,
    waker: Option<Waker>,
    /// The ticket was dropped: nobody will come back for this record.
    dropped: bool,
    /// A writer stopped and asks the waiting tickets to take over.
    handover: bool,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Leaves the outcome and wakes the ticket, whichever way it waits.
    pub(crate) fn complete(&self, result: Result<Appended, AuditError>) {
        let waker = {
            let mut st = self.lock();
            st.result = Some(result);
            st.waker.take()
        };
        self.changed.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn hand_over(&self) {
        let waker = {
            let mut st = self.lock();
            st.handover = true;
            st.waker.take()
        };
        self.changed.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn is_dropped(&self) -> bool {
        self.lock().dropped
    }
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one prepared record (compact, redacted JSON object).
    pub(crate) fn enqueue(self: &Arc<Self>, json: Vec<u8>) -> Ticket {
        let slot = Arc::new(Slot::default());
        let number = {
            let mut q = self.queue();
            let n = q.next;
            q.next += 1;
            q.pending.push_back(Pending {
                json,
                slot: Arc::clone(&slot),
            });
            n
        };
        Ticket {
            shared: Arc::clone(self),
            slot,
            number,
            yielded: false,
            done: false,
        }
    }

    /// Becomes the writer if nobody is writing and record `number` is still queued (or, with
    /// `None`, if anything is queued), then writes. Returns whether it wrote.
    pub(crate) fn try_drain(&self, number: Option<u64>) -> bool {
        {
            let mut q = self.queue();
            let queued = match number {
                Some(n) => n >= q.taken,
                None => !q.pending.is_empty(),
            };
            if q.writing || !queued {
                return false;
            }
            q.writing = true;
        }
        self.drain();
        true
    }

    /// Writes everything queued now, waiting for a writer at work on another thread.
    pub(crate) fn drain_all(&self) {
        loop {
            {
                let mut q = self.queue();
                if q.pending.is_empty() && !q.writing {
                    return;
                }
                if q.writing {
                    drop(q);
                    // The writer holds no lock we need and finishes its batch in microseconds.
                    std::thread::yield_now();
                    continue;
                }
                q.writing = true;
            }
            self.drain();
        }
    }

    /// As the writer: writes batches until the queue is empty, or hands it over after
    /// [`MAX_DRAIN_ROUNDS`] if a waiting ticket can take it.
    fn drain(&self) {
        // If writing ever panicked, the next caller must still be able to write.
        struct Unmark<'a>(&'a Shared);
        impl Drop for Unmark<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.queue().writing = false;
                }
            }
        }
        let _unmark = Unmark(self);
        let mut rounds = 0;
        loop {
            let batch = {
                let mut q = self.queue();
                if q.pending.is_empty() {
                    q.writing = false;
                    return;
                }
                if rounds >= MAX_DRAIN_ROUNDS {
                    let live: Vec<Arc<Slot>> = q
                        .pending
                        .iter()
                        .filter(|p| !p.slot.is_dropped())
                        .map(|p| Arc::clone(&p.slot))
                        .collect();
                    if !live.is_empty() {
                        q.writing = false;
                        drop(q);
                        live.iter().for_each(|s| s.hand_over());
                        return;
                    }
                }
                take_batch(&mut q)
            };
            self.write_batch(batch);
            rounds += 1;
        }
    }

    /// Appends one batch and completes its tickets (after the fsync, under `always`).
    fn write_batch(&self, batch: Vec<Pending>) {
        let records: Vec<&[u8]> = batch.iter().map(|p| p.json.as_slice()).collect();
        let written = {
            let mut file = self.file();
            let written = file.append_batch(&records);
            if file.take_dirty() {
                self.durable.written();
            }
            written
        };
        self.counters.batch(batch.len());
        match written {
            Ok(appended) => {
                self.durable
                    .complete(batch.into_iter().map(|p| p.slot).zip(appended));
            }
            Err(e) => {
                self.fail(&e);
                for p in batch {
                    p.slot.complete(Err(e.duplicate()));
                }
            }
        }
    }
}

/// Takes the oldest records, up to [`MAX_BATCH_BYTES`] (at least one).
fn take_batch(q: &mut Queue) -> Vec<Pending> {
    let mut bytes = 0;
    let mut batch = Vec::new();
    while let Some(p) = q.pending.front() {
        if !batch.is_empty() && bytes + p.json.len() > MAX_BATCH_BYTES {
            break;
        }
        bytes += p.json.len();
        if let Some(p) = q.pending.pop_front() {
            batch.push(p);
        }
    }
    q.taken += batch.len() as u64;
    batch
}

/// A submitted record: resolves once it is written under the log's fsync policy (or could
/// not be). Dropping it does not withdraw the record.
#[derive(Debug)]
#[must_use = "a ticket resolves when its record is written; drop it to not wait"]
pub struct Ticket {
    shared: Arc<Shared>,
    slot: Arc<Slot>,
    number: u64,
    yielded: bool,
    done: bool,
}

impl Ticket {
    /// Blocks this thread until the record is written; writes the queue itself when nobody
    /// else is writing it. Never waits for an async task, so it is safe on a runtime's
    /// thread (it blocks that thread for the write, and under `always` for the fsync).
    pub fn wait(mut self) -> Result<Appended, AuditError> {
        self.done = true;
        loop {
            if let Some(r) = self.slot.lock().result.take() {
                return r;
            }
            if self.shared.try_drain(Some(self.number)) {
                continue;
            }
            let mut st = self.slot.lock();
            while st.result.is_none() && !st.handover {
                st = self
                    .slot
                    .changed
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            st.handover = false;
        }
    }
}

impl Future for Ticket {
    type Output = Result<Appended, AuditError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(r) = this.slot.lock().result.take() {
            this.done = true;
            return Poll::Ready(r);
        }
        if !this.yielded {
            // Let the other ready calls reach their records first (see the module doc).
            this.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        this.shared.try_drain(Some(this.number));
        let mut st = this.slot.lock();
        if let Some(r) = st.result.take() {
            this.done = true;
            return Poll::Ready(r);
        }
        if std::mem::take(&mut st.handover) {
            // Asked to take over: come back at once.
            cx.waker().wake_by_ref();
        } else {
            st.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.slot.lock().dropped = true;
        // Nobody will come back for this record: write it now unless a writer is at work.
        self.shared.try_drain(Some(self.number));
    }
}
