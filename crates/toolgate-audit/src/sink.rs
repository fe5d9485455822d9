//! The audit log as the gate's [`AuditSink`] (toolgate-core's seam for where records go).

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use toolgate_core::stages::AuditSink;
use toolgate_protocol::CallRecord;

use crate::{AuditError, AuditLog, FsyncPolicy};

/// An append-only, hash-chained audit log file. After a failed write, every later call is
/// refused (`audit_unavailable`) rather than run unaudited.
///
/// The log redacts every record as a whole when it appends it (with the default rules
/// unless opened with other [`AuditOptions`](crate::AuditOptions)), so this sink does not redact
/// inputs a second time.
pub struct FileAudit {
    log: AuditLog,
    failed: Mutex<Option<String>>,
}

impl FileAudit {
    /// Opens (or creates) the log with the default redaction rules.
    pub fn open(path: &Path, fsync: FsyncPolicy) -> Result<Self, AuditError> {
        Ok(Self::new(AuditLog::open(path, fsync)?))
    }

    /// Wraps an open log.
    pub fn new(log: AuditLog) -> Self {
        Self {
            log,
            failed: Mutex::new(None),
        }
    }

    /// The underlying log.
    pub fn log(&self) -> &AuditLog {
        &self.log
    }
}

impl AuditSink for FileAudit {
    fn ready(&self) -> Result<(), String> {
        match &*self.failed.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(reason) => Err(format!("an earlier audit write failed: {reason}")),
            None => Ok(()),
        }
    }

    fn record(&self, record: &CallRecord) -> Result<(), String> {
        self.log.append(record).map(|_| ()).map_err(|e| {
            let reason = e.to_string();
            *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
            reason
        })
    }
}

impl Drop for FileAudit {
    fn drop(&mut self) {
        if let Err(e) = self.log.flush() {
            tracing::error!(error = %e, "audit log could not be flushed");
        }
    }
}

/// A sink for an audit log that could not be opened: every call is refused with the reason.
#[derive(Debug, Clone)]
pub struct UnavailableAudit(pub String);

impl AuditSink for UnavailableAudit {
    fn ready(&self) -> Result<(), String> {
        Err(self.0.clone())
    }

    fn record(&self, _record: &CallRecord) -> Result<(), String> {
        Err(self.0.clone())
    }
}

/// Opens the log, or returns a sink that refuses every call with the reason it could not.
/// Front doors use this so a broken audit path is reported per call and the process keeps
/// serving.
pub fn open_or_refuse(path: &Path, fsync: FsyncPolicy) -> Arc<dyn AuditSink> {
    match FileAudit::open(path, fsync) {
        Ok(sink) => Arc::new(sink),
        Err(e) => {
            tracing::error!(error = %e, "audit log unavailable; every call will be refused");
            Arc::new(UnavailableAudit(e.to_string()))
        }
    }
}
