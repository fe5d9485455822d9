//! The audit log as the gate's [`AuditSink`] (toolgate-core's seam for where records go).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use toolgate_core::stages::{AuditFailure, AuditReceipt, AuditSink, PendingRecord};
use toolgate_protocol::CallRecord;

use crate::ship::{Destination, ShipOptions, Shipper};
use crate::{AuditError, AuditLog, AuditOptions, FsyncPolicy, Ticket};

/// An append-only, hash-chained audit log file. After a failed write, every later call is
/// refused (`audit_unavailable`) rather than run unaudited.
///
/// Records of concurrent calls are written in groups; a call's result is returned once its
/// record is written under the log's fsync policy (see [`AuditLog`]).
///
/// The log redacts every record as a whole when it appends it (with the default rules
/// unless opened with other [`AuditOptions`](crate::AuditOptions)), so this sink does not redact
/// inputs a second time.
///
/// Copies of the log go to [`Destination`]s (an OpenTelemetry collector, PostgreSQL) by
/// [`Shipper`]s the sink owns: the file stays the source of truth, calls never wait for a
/// destination, and a destination that is down catches up later (see [`crate::ship`]).
pub struct FileAudit {
    log: Arc<AuditLog>,
    failed: Mutex<Option<String>>,
    shippers: Mutex<Vec<Shipper>>,
}

impl FileAudit {
    /// Opens (or creates) the log with the default redaction rules.
    pub fn open(path: &Path, fsync: FsyncPolicy) -> Result<Self, AuditError> {
        Ok(Self::new(AuditLog::open(path, fsync)?))
    }

    /// Wraps an open log.
    pub fn new(log: AuditLog) -> Self {
        Self {
            log: Arc::new(log),
            failed: Mutex::new(None),
            shippers: Mutex::new(Vec::new()),
        }
    }

    /// The underlying log.
    pub fn log(&self) -> &AuditLog {
        &self.log
    }

    /// Also copies the log to `destination`, from a thread of its own.
    pub fn ship_to(
        &self,
        destination: Arc<dyn Destination>,
        options: ShipOptions,
    ) -> Result<(), AuditError> {
        let shipper =
            Shipper::start(Arc::clone(&self.log), destination, options).map_err(|source| {
                AuditError::Open {
                    path: self.log.path().to_owned(),
                    source,
                }
            })?;
        self.shippers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(shipper);
        Ok(())
    }
}

impl AuditSink for FileAudit {
    fn ready(&self) -> Result<(), AuditFailure> {
        let refused = self
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match refused.or_else(|| self.log.failure()) {
            Some(reason) => Err(AuditFailure::new(format!(
                "an earlier audit write failed: {reason}"
            ))),
            None => Ok(()),
        }
    }

    fn record(&self, record: &CallRecord) -> AuditReceipt {
        match self.log.submit(record) {
            Ok(ticket) => AuditReceipt::pending(Written(ticket)),
            Err(e) => {
                let reason = e.to_string();
                *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
                AuditReceipt::done(Err(AuditFailure::new(reason)))
            }
        }
    }
}

/// A queued record as the gate waits for it. (A failed write is remembered by the log
/// itself, so [`FileAudit::ready`] refuses later calls even if nobody awaits this.)
struct Written(Ticket);

impl Future for Written {
    type Output = Result<(), AuditFailure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|r| r.map(|_| ()).map_err(|e| AuditFailure::new(e.to_string())))
    }
}

impl PendingRecord for Written {
    fn wait(self: Box<Self>) -> Result<(), AuditFailure> {
        self.0
            .wait()
            .map(|_| ())
            .map_err(|e| AuditFailure::new(e.to_string()))
    }
}

impl Drop for FileAudit {
    fn drop(&mut self) {
        // Each delivers what it can within its drain timeout; the rest waits in the log.
        let shippers =
            std::mem::take(&mut *self.shippers.lock().unwrap_or_else(PoisonError::into_inner));
        shippers.into_iter().for_each(Shipper::stop);
        if let Err(e) = self.log.flush() {
            tracing::error!(error = %e, "audit log could not be flushed");
        }
    }
}

/// A sink for an audit log that could not be opened: every call is refused with the reason.
#[derive(Debug, Clone)]
pub struct UnavailableAudit(pub String);

impl AuditSink for UnavailableAudit {
    fn ready(&self) -> Result<(), AuditFailure> {
        Err(AuditFailure::new(self.0.clone()))
    }

    fn record(&self, _record: &CallRecord) -> AuditReceipt {
        AuditReceipt::done(Err(AuditFailure::new(self.0.clone())))
    }
}

/// Opens the log, or returns a sink that refuses every call with the reason it could not.
/// Front doors use this so a broken audit path is reported per call and the process keeps
/// serving.
pub fn open_or_refuse(path: &Path, fsync: FsyncPolicy) -> Arc<dyn AuditSink> {
    open_or_refuse_with(
        path,
        AuditOptions {
            fsync,
            ..AuditOptions::default()
        },
        Vec::new(),
    )
}

/// [`open_or_refuse`] with chosen options, shipping the log to `destinations`.
pub fn open_or_refuse_with(
    path: &Path,
    options: AuditOptions,
    destinations: Vec<Arc<dyn Destination>>,
) -> Arc<dyn AuditSink> {
    let opened = AuditLog::open_with(path, options).map(FileAudit::new);
    let shipped = opened.and_then(|sink| {
        for d in destinations {
            sink.ship_to(d, ShipOptions::default())?;
        }
        Ok(sink)
    });
    match shipped {
        Ok(sink) => Arc::new(sink),
        Err(e) => {
            tracing::error!(error = %e, "audit log unavailable; every call will be refused");
            Arc::new(UnavailableAudit(e.to_string()))
        }
    }
}
