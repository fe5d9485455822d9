//! When written records reach stable storage: the fsync policy, applied by one thread per
//! log so that no caller (and no async runtime thread) waits for a `fdatasync` it does not
//! need to.
//!
//! - `never`: nothing to do; tickets complete once the batch is written.
//! - `batch`: tickets complete once written; the thread fsyncs at most every
//!   [`AuditOptions::batch_interval`](crate::AuditOptions) and no later than that after a
//!   write, so a power failure loses at most that much.
//! - `always`: tickets complete only after an fsync that started after their write. The
//!   thread fsyncs whatever was written while the previous fsync ran, so concurrent calls
//!   share one fsync (group commit).

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::group::Slot;
use crate::{Appended, AuditError, FsyncPolicy};

/// The fsync side of a log.
#[derive(Debug)]
pub(crate) struct Durable {
    policy: FsyncPolicy,
    interval: Duration,
    path: PathBuf,
    handle: File,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Debug)]
struct State {
    /// Written since the last fsync started.
    dirty: bool,
    /// Under `always`: written tickets waiting for an fsync.
    waiting: Vec<(Arc<Slot>, Appended)>,
    last_sync: Instant,
    stop: bool,
    /// The thread is waiting with nothing to do (so a write must wake it; while it waits
    /// for a due fsync, writes need not).
    idle: bool,
}

impl Durable {
    pub(crate) fn new(
        policy: FsyncPolicy,
        interval: Duration,
        path: PathBuf,
        handle: File,
    ) -> Self {
        Self {
            policy,
            interval,
            path,
            handle,
            state: Mutex::new(State {
                dirty: false,
                waiting: Vec::new(),
                last_sync: Instant::now(),
                stop: false,
                idle: false,
            }),
            wake: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the fsync thread (none under `never`). `on_error` hears of a failed fsync.
    pub(crate) fn start(
        self: &Arc<Self>,
        on_error: impl Fn(&AuditError) + Send + 'static,
    ) -> std::io::Result<Option<JoinHandle<()>>> {
        if self.policy == FsyncPolicy::Never {
            return Ok(None);
        }
        let this = Arc::clone(self);
        std::thread::Builder::new()
            .name("toolgate-audit-fsync".into())
            .spawn(move || this.run(&on_error))
            .map(Some)
    }

    /// Bytes were written to the file.
    pub(crate) fn written(&self) {
        if self.policy == FsyncPolicy::Never {
            return;
        }
        let mut st = self.lock();
        st.dirty = true;
        if st.idle {
            st.idle = false;
            self.wake.notify_one();
        }
    }

    /// Completes written tickets now, or under `always` after the next fsync.
    pub(crate) fn complete(&self, written: impl Iterator<Item = (Arc<Slot>, Appended)>) {
        if self.policy != FsyncPolicy::Always {
            written.for_each(|(slot, appended)| slot.complete(Ok(appended)));
            return;
        }
        let mut st = self.lock();
        st.waiting.extend(written);
        // Under `always` the thread never waits with a deadline: it is idle or busy syncing
        // (and then looks at `waiting` again before it sleeps).
        if st.idle {
            st.idle = false;
            self.wake.notify_one();
        }
    }

    /// Fsyncs now, on the caller's thread (an explicit flush).
    pub(crate) fn sync_now(&self) -> Result<(), AuditError> {
        self.lock().dirty = false;
        let result = self.fdatasync();
        self.lock().last_sync = Instant::now();
        result
    }

    /// Asks the thread to finish: it fsyncs what is left and completes every waiting ticket.
    pub(crate) fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_one();
    }

    fn fdatasync(&self) -> Result<(), AuditError> {
        self.handle.sync_data().map_err(|source| AuditError::Sync {
            path: self.path.clone(),
            source,
        })
    }

    fn run(&self, on_error: &dyn Fn(&AuditError)) {
        let mut st = self.lock();
        loop {
            let due = st.last_sync + self.interval;
            let now = Instant::now();
            let sync_waiting = !st.waiting.is_empty();
            let sync_dirty =
                st.dirty && (st.stop || self.policy == FsyncPolicy::Always || now >= due);
            if sync_waiting || sync_dirty {
                let waiting = std::mem::take(&mut st.waiting);
                st.dirty = false;
                drop(st);
                let result = self.fdatasync();
                if let Err(e) = &result {
                    on_error(e);
                }
                for (slot, appended) in waiting {
                    slot.complete(match &result {
                        Ok(()) => Ok(appended),
                        Err(e) => Err(e.duplicate()),
                    });
                }
                st = self.lock();
                st.last_sync = Instant::now();
                continue;
            }
            if st.stop {
                return;
            }
            st = if st.dirty {
                // An fsync is already due at `due`: later writes need not wake the thread.
                self.wake
                    .wait_timeout(st, due.saturating_duration_since(now))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            } else {
                st.idle = true;
                self.wake.wait(st).unwrap_or_else(PoisonError::into_inner)
            };
            st.idle = false;
        }
    }
}
