//! A fixture OpenTelemetry collector: accepts OTLP/HTTP protobuf on `/v1/traces` and
//! `/v1/logs`, keeps what it decoded, and can be told to answer 500 for a while.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;

/// A span as the collector received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The span name.
    pub name: String,
    /// Attributes, values as text.
    pub attributes: BTreeMap<String, String>,
    /// Hex trace id.
    pub trace_id: String,
    /// Hex span id.
    pub span_id: String,
    /// The status message when the status is an error.
    pub error: Option<String>,
    /// Start and end, ns since the epoch.
    pub times: (u64, u64),
}

/// A log record as the collector received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Log {
    /// The body, as text.
    pub body: String,
    /// Attributes, values as text.
    pub attributes: BTreeMap<String, String>,
    /// Hex trace id (empty when none).
    pub trace_id: String,
}

#[derive(Default)]
struct Received {
    spans: Mutex<Vec<Span>>,
    logs: Mutex<Vec<Log>>,
    fail_next: AtomicUsize,
    refused: AtomicUsize,
}

/// The running collector; stops when dropped.
pub struct Collector {
    addr: SocketAddr,
    received: Arc<Received>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Collector {
    /// Starts on a free loopback port.
    pub fn start() -> Collector {
        Self::start_on(0)
    }

    /// Starts on `port` (0: any free one).
    pub fn start_on(port: u16) -> Collector {
        let received = Arc::new(Received::default());
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&received);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let app = axum::Router::new()
                    .route("/v1/traces", post(traces))
                    .route("/v1/logs", post(logs))
                    .with_state(state);
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        Collector {
            addr,
            received,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Answers the next `n` requests with 500.
    pub fn fail_next(&self, n: usize) {
        self.received.fail_next.store(n, Ordering::SeqCst);
    }

    /// How many requests were answered with 500.
    pub fn refused(&self) -> usize {
        self.received.refused.load(Ordering::SeqCst)
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.received.spans.lock().expect("lock").clone()
    }

    /// The log records received so far.
    pub fn logs(&self) -> Vec<Log> {
        self.received.logs.lock().expect("lock").clone()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn refuse(r: &Received) -> bool {
    let failing = r
        .fail_next
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if failing {
        r.refused.fetch_add(1, Ordering::SeqCst);
    }
    failing
}

async fn traces(State(r): State<Arc<Received>>, body: Bytes) -> StatusCode {
    if refuse(&r) {
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    let Ok(req) = ExportTraceServiceRequest::decode(body) else {
        return StatusCode::BAD_REQUEST;
    };
    let mut spans = r.spans.lock().expect("lock");
    for rs in req.resource_spans {
        for ss in rs.scope_spans {
            for s in ss.spans {
                let error = s.status.filter(|st| st.code == 2).map(|st| st.message);
                spans.push(Span {
                    name: s.name,
                    attributes: attributes(&s.attributes),
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    error,
                    times: (s.start_time_unix_nano, s.end_time_unix_nano),
                });
            }
        }
    }
    StatusCode::OK
}

async fn logs(State(r): State<Arc<Received>>, body: Bytes) -> StatusCode {
    if refuse(&r) {
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    let Ok(req) = ExportLogsServiceRequest::decode(body) else {
        return StatusCode::BAD_REQUEST;
    };
    let mut logs = r.logs.lock().expect("lock");
    for rl in req.resource_logs {
        for sl in rl.scope_logs {
            for l in sl.log_records {
                logs.push(Log {
                    body: l.body.as_ref().map(text).unwrap_or_default(),
                    attributes: attributes(&l.attributes),
                    trace_id: hex(&l.trace_id),
                });
            }
        }
    }
    StatusCode::OK
}

fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter()
        .map(|kv| {
            (
                kv.key.clone(),
                kv.value.as_ref().map(text).unwrap_or_default(),
            )
        })
        .collect()
}

fn text(v: &AnyValue) -> String {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
