//! Exports toolgate's audit log to OpenTelemetry (`--otlp URL`): each call becomes a span
//! and every audit record an OTLP log record, sent over OTLP/HTTP (protobuf) by the
//! official `opentelemetry-otlp` exporters.
//!
//! [`OtlpDestination`] is a [`Destination`] of the audit log's shipper
//! ([`toolgate_audit::ship`]): the records come from the local hash-chained file after
//! they were written there, in batches, and a batch counts as delivered only when the
//! collector accepted both its spans and its log records. A collector that is down or
//! answers 5xx leaves the records in the local log (the spool) until it is back; nothing is
//! held in memory beyond one batch, and a call never waits for the collector.
//!
//! What a span carries (OpenTelemetry's GenAI and general semantic conventions where they
//! exist, `toolgate.*` otherwise):
//!
//! | attribute | from the record |
//! |---|---|
//! | `gen_ai.operation.name` | `execute_tool` |
//! | `gen_ai.tool.name`, `gen_ai.tool.call.id` | `tool`, `call_id` |
//! | `session.id`, `toolgate.client` | `session_id`, `client` |
//! | `toolgate.decision`, `toolgate.layer`, `toolgate.rule`, `toolgate.rule.source` | the verdict |
//! | `toolgate.status`, `error.type` | `status`, `code` (span status `Error` when the call failed) |
//! | `toolgate.audit.seq`, `toolgate.audit.hash` | the record's place in the local log |
//!
//! The span starts at the record's `ts` and lasts `duration_us`. Its trace and span ids
//! are derived from the record's hash, so a batch sent twice carries the same ids and a
//! backend can drop the repeat. The log record's body is the audit line itself, exactly as
//! in the file (so it can be verified there), with the span's ids as its trace context.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{LogBatch, LogExporter as _, SdkLogRecord, SdkLoggerProvider};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolgate_audit::ship::{DeliveryError, Destination, Shipped, StartAt};

mod http;

/// How long one export request may take (each of traces and logs).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// The instrumentation scope of everything toolgate exports.
const SCOPE: &str = "toolgate";

/// The exporter could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The `--otlp` URL is not an http(s) URL.
    #[error(
        "--otlp {url}: {reason}; expected the collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318"
    )]
    BadUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The OTLP exporter refused its configuration.
    #[error("cannot set up the OTLP exporter for {endpoint}: {detail}")]
    Exporter {
        /// The endpoint.
        endpoint: String,
        /// What the exporter said.
        detail: String,
    },
}

/// An OpenTelemetry collector reached over OTLP/HTTP (see the crate doc).
pub struct OtlpDestination {
    endpoint: String,
    spans: opentelemetry_otlp::SpanExporter,
    logs: opentelemetry_otlp::LogExporter,
    /// Only a factory for log records: it has no processor, nothing is emitted through it.
    records: opentelemetry_sdk::logs::SdkLogger,
    scope: InstrumentationScope,
}

impl std::fmt::Debug for OtlpDestination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpDestination")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl OtlpDestination {
    /// A destination for the collector at `base` (`http://host:4318`; spans go to
    /// `/v1/traces`, log records to `/v1/logs`). `headers` are sent with every request
    /// (e.g. an API key); the `OTEL_EXPORTER_OTLP_HEADERS` variables apply too.
    pub fn new(base: &str, headers: HashMap<String, String>) -> Result<Self, OtelError> {
        let url = reqwest::Url::parse(base).map_err(|e| OtelError::BadUrl {
            url: base.to_owned(),
            reason: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(OtelError::BadUrl {
                url: base.to_owned(),
                reason: "only http:// and https:// collectors are supported".into(),
            });
        }
        let mut shown = url.clone();
        let _ = shown.set_password(None);
        let _ = shown.set_username("");
        let endpoint = shown.as_str().trim_end_matches('/').to_owned();
        let base = url.as_str().trim_end_matches('/');
        let client = http::Client::new(EXPORT_TIMEOUT).map_err(|e| OtelError::Exporter {
            endpoint: endpoint.clone(),
            detail: e.to_string(),
        })?;
        let resource = Resource::builder().with_service_name("toolgate").build();
        let exporter_err = |e: opentelemetry_otlp::ExporterBuildError| OtelError::Exporter {
            endpoint: endpoint.clone(),
            detail: e.to_string(),
        };
        let mut spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{base}/v1/traces"))
            .with_timeout(EXPORT_TIMEOUT)
            .with_headers(headers.clone())
            .with_http_client(client.clone())
            .build()
            .map_err(exporter_err)?;
        spans.set_resource(&resource);
        let mut logs = opentelemetry_otlp::LogExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{base}/v1/logs"))
            .with_timeout(EXPORT_TIMEOUT)
            .with_headers(headers)
            .with_http_client(client)
            .build()
            .map_err(exporter_err)?;
        logs.set_resource(&resource);
        let scope = InstrumentationScope::builder(SCOPE)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let records = SdkLoggerProvider::builder().build().logger(SCOPE);
        Ok(Self {
            endpoint,
            spans,
            logs,
            records,
            scope,
        })
    }

    fn span(&self, r: &Shipped) -> Option<SpanData> {
        let v = &r.record;
        if v.get("kind").and_then(Value::as_str) != Some("call") {
            return None;
        }
        let (trace_id, span_id) = ids(&r.hash);
        let start = record_time(v);
        let duration =
            Duration::from_micros(v.get("duration_us").and_then(Value::as_u64).unwrap_or(0));
        let code = str_at(v, "/code");
        let status = match code {
            Some(code) if str_at(v, "/status") != Some("ok") => Status::error(code.to_owned()),
            _ => Status::Ok,
        };
        let tool = str_at(v, "/tool").unwrap_or("unknown");
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", tool.to_owned()),
        ];
        let pairs = [
            ("gen_ai.tool.call.id", "/call_id"),
            ("session.id", "/session_id"),
            ("toolgate.client", "/client"),
            ("toolgate.decision", "/verdict/decision"),
            ("toolgate.layer", "/verdict/layer"),
            ("toolgate.rule", "/verdict/rule"),
            ("toolgate.rule.source", "/verdict/source"),
            ("toolgate.status", "/status"),
            ("error.type", "/code"),
        ];
        for (key, pointer) in pairs {
            if let Some(s) = str_at(v, pointer) {
                attributes.push(KeyValue::new(key, s.to_owned()));
            }
        }
        if let Some(layer) = denial_layer(v).filter(|_| str_at(v, "/verdict/layer").is_none()) {
            attributes.push(KeyValue::new("toolgate.layer", layer));
        }
        attributes.push(KeyValue::new(
            "toolgate.duration_us",
            duration.as_micros() as i64,
        ));
        attributes.push(KeyValue::new("toolgate.audit.seq", r.seq as i64));
        attributes.push(KeyValue::new("toolgate.audit.hash", r.hash.clone()));
        Some(SpanData {
            span_context: SpanContext::new(
                trace_id,
                span_id,
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: format!("execute_tool {tool}").into(),
            start_time: start,
            end_time: start + duration,
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: self.scope.clone(),
        })
    }

    fn log_record(&self, r: &Shipped) -> SdkLogRecord {
        let v = &r.record;
        let mut rec = self.records.create_log_record();
        rec.set_event_name("toolgate.audit.record");
        rec.set_timestamp(record_time(v));
        rec.set_observed_timestamp(SystemTime::now());
        let failed = str_at(v, "/status").is_some_and(|s| s != "ok");
        let (severity, text) = if failed {
            (Severity::Warn, "WARN")
        } else {
            (Severity::Info, "INFO")
        };
        rec.set_severity_number(severity);
        rec.set_severity_text(text);
        rec.set_body(AnyValue::String(r.line.clone().into()));
        rec.add_attribute(
            "toolgate.audit.kind",
            str_at(v, "/kind").unwrap_or("").to_owned(),
        );
        rec.add_attribute("toolgate.audit.seq", r.seq as i64);
        rec.add_attribute("toolgate.audit.hash", r.hash.clone());
        for (key, pointer) in [
            ("session.id", "/session_id"),
            ("gen_ai.tool.name", "/tool"),
            ("gen_ai.tool.call.id", "/call_id"),
            ("error.type", "/code"),
        ] {
            if let Some(s) = str_at(v, pointer) {
                rec.add_attribute(key, s.to_owned());
            }
        }
        if v.get("kind").and_then(Value::as_str) == Some("call") {
            let (trace_id, span_id) = ids(&r.hash);
            rec.set_trace_context(trace_id, span_id, Some(TraceFlags::SAMPLED));
        }
        rec
    }
}

#[async_trait]
impl Destination for OtlpDestination {
    fn id(&self) -> String {
        let digest = hex::encode(Sha256::digest(self.endpoint.as_bytes()));
        format!("otlp-{}", &digest[..16])
    }

    fn describe(&self) -> String {
        format!("otlp {}", self.endpoint)
    }

    fn start_at(&self) -> StartAt {
        // A telemetry pipeline wants what happens from now on, not years of history.
        StartAt::End
    }

    async fn deliver(&self, records: &[Shipped]) -> Result<(), DeliveryError> {
        let spans: Vec<SpanData> = records.iter().filter_map(|r| self.span(r)).collect();
        if !spans.is_empty() {
            self.spans
                .export(spans)
                .await
                .map_err(|e| DeliveryError::new(format!("spans: {e}")))?;
        }
        let logs: Vec<SdkLogRecord> = records.iter().map(|r| self.log_record(r)).collect();
        let pairs: Vec<(&SdkLogRecord, &InstrumentationScope)> =
            logs.iter().map(|l| (l, &self.scope)).collect();
        self.logs
            .export(LogBatch::new(&pairs))
            .await
            .map_err(|e| DeliveryError::new(format!("log records: {e}")))
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The layer of a failed stage's verdict, for calls stopped before the decision.
fn denial_layer(v: &Value) -> Option<String> {
    v.get("stages")?
        .as_array()?
        .iter()
        .rev()
        .find_map(|s| str_at(s, "/verdict/layer"))
        .map(str::to_owned)
}

/// Trace and span ids from the record's hash: unique per record, the same when resent.
fn ids(hash: &str) -> (TraceId, SpanId) {
    let bytes = hex::decode(hash).unwrap_or_default();
    let mut trace = [0u8; 16];
    let mut span = [0u8; 8];
    for (i, b) in bytes.iter().take(16).enumerate() {
        trace[i] = *b;
    }
    for (i, b) in bytes.iter().skip(16).take(8).enumerate() {
        span[i] = *b;
    }
    // All-zero ids are invalid in OTLP; a sha256 prefix of zeros is not going to happen,
    // but never send one.
    trace[15] |= u8::from(trace == [0; 16]);
    span[7] |= u8::from(span == [0; 8]);
    (TraceId::from_bytes(trace), SpanId::from_bytes(span))
}

/// The record's `ts` (RFC 3339), or now.
fn record_time(v: &Value) -> SystemTime {
    str_at(v, "/ts")
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or_else(SystemTime::now, SystemTime::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_credentials_are_not_shown() {
        for bad in ["ftp://x", "localhost:4318", "not a url"] {
            let e = OtlpDestination::new(bad, HashMap::new()).unwrap_err();
            assert!(e.to_string().contains("expected the collector"), "{e}");
        }
        let d = OtlpDestination::new("http://user:secret@127.0.0.1:4318/", HashMap::new())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(d.describe(), "otlp http://127.0.0.1:4318");
        assert!(d.id().starts_with("otlp-") && !d.id().contains("secret"));
    }

    #[test]
    fn ids_come_from_the_hash() {
        let h = "ab".repeat(32);
        let (t, s) = ids(&h);
        assert_eq!(t.to_string(), "ab".repeat(16));
        assert_eq!(s.to_string(), "ab".repeat(8));
        assert_eq!(ids(&h), ids(&h));
    }
}
