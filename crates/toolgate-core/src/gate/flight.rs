//! A call in flight and its audit record: built as stages pass, handed to the sink exactly
//! once — at the end, or on drop if the caller dropped the call's future.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use toolgate_protocol::{
    CallRecord, CallResult, CallStatus, ErrorCode, RecordKind, Stage, StageRecord, StageStatus,
    ToolCall, ToolOutput, Verdict,
};

use crate::session::Session;
use crate::stage_set::StageSet;
use crate::stages::{AuditFailure, AuditReceipt, AuditSink};

/// A call in flight: builds its audit record as stages pass and writes it exactly once — at
/// the end, or on drop if the caller dropped the future (then as `cancelled`).
pub(super) struct Flight {
    audit: Arc<dyn AuditSink>,
    /// The policy's stages this call runs under from start to record, whatever a reload
    /// does meanwhile.
    pub(super) stages: Arc<StageSet>,
    pub(super) record: CallRecord,
    pub(super) started: Instant,
    done: bool,
}

impl Flight {
    pub(super) fn new(gate: &super::Gate, call: &ToolCall) -> Self {
        let mut record =
            Self::record_for(&gate.session, call, gate.shared.audit.redact(&call.input));
        record.parent_call_id = gate.lineage.as_ref().map(|l| l.parent_call_id.clone());
        Self {
            audit: Arc::clone(&gate.shared.audit),
            stages: gate.shared.stages.pin(),
            record,
            started: Instant::now(),
            done: false,
        }
    }

    /// A call's record before any stage ran: an error (`cancelled`) until it finishes.
    pub(super) fn record_for(session: &Session, call: &ToolCall, input: Value) -> CallRecord {
        CallRecord {
            kind: RecordKind::Call,
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            session_id: session.id().to_owned(),
            call_id: call.id.clone(),
            client: session.client().map(str::to_owned),
            parent_call_id: None,
            tool: call.name.clone(),
            input,
            stages: Vec::new(),
            hooks: Vec::new(),
            verdict: None,
            status: CallStatus::Error,
            code: Some(ErrorCode::Cancelled),
            duration_us: 0,
            input_bytes: 0,
            output_bytes: 0,
            mode_change: None,
        }
    }

    /// Records how a stage went.
    pub(super) fn stage(
        &mut self,
        stage: Stage,
        status: StageStatus,
        verdict: Option<Verdict>,
        note: Option<String>,
    ) {
        push_stage(&mut self.record, stage, status, verdict, note);
    }

    /// Completes the record and hands it to the sink (once); the caller waits for the
    /// receipt before answering.
    pub(super) fn finish(&mut self, result: &CallResult) -> Option<AuditReceipt> {
        self.record.status = if result.is_error() {
            CallStatus::Error
        } else {
            CallStatus::Ok
        };
        self.record.code = result.error().map(|e| e.code);
        self.record.output_bytes = result.output().map_or(0, ToolOutput::size_bytes);
        self.submit()
    }

    fn submit(&mut self) -> Option<AuditReceipt> {
        if self.done {
            return None;
        }
        self.done = true;
        self.record.duration_us = self.started.elapsed().as_micros() as u64;
        Some(self.audit.record(&self.record))
    }

    /// Logs a record the sink could not write (the sink then refuses later calls itself).
    pub(super) fn settled(&self, written: Result<(), AuditFailure>) {
        if let Err(e) = written {
            tracing::error!(error = %e, call_id = %self.record.call_id, "audit record could not be written");
        }
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        if !self.done {
            self.record.status = CallStatus::Error;
            self.record.code = Some(ErrorCode::Cancelled);
            self.stage(
                Stage::Execute,
                StageStatus::Fail,
                None,
                Some("the caller dropped the call".into()),
            );
            // Nothing can be awaited here; the receipt's blocking wait never needs this
            // thread's runtime (see `PendingRecord`).
            if let Some(receipt) = self.submit() {
                self.settled(receipt.wait());
            }
        }
    }
}

/// Appends a stage to a record.
pub(super) fn push_stage(
    record: &mut CallRecord,
    stage: Stage,
    status: StageStatus,
    verdict: Option<Verdict>,
    note: Option<String>,
) {
    record.stages.push(StageRecord {
        stage,
        status,
        verdict,
        note,
    });
}
