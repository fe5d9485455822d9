//! Progress a running tool reports to whoever is waiting for the call: an upstream MCP
//! tool relays its server's `notifications/progress` this way to toolgate's own MCP
//! client.
//!
//! The front door that can deliver progress runs the call inside [`with_progress`]; a tool
//! calls [`report`], which does nothing when nobody listens. Reports go through a bounded
//! channel and are dropped when it is full: a tool that reports faster than the client
//! reads cannot grow memory or hold the call up.

use std::future::Future;

/// How many reports may wait for delivery; more are dropped.
pub const PROGRESS_BACKLOG: usize = 64;

/// One progress report.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far the work is, in the tool's own unit; increases with each report.
    pub progress: f64,
    /// The amount of work in all, when known.
    pub total: Option<f64>,
    /// What is happening, in words.
    pub message: Option<String>,
}

tokio::task_local! {
    static SINK: tokio::sync::mpsc::Sender<Progress>;
}

/// A channel for the reports of one call: give the sender to [`with_progress`], read the
/// receiver while the call runs.
pub fn channel() -> (
    tokio::sync::mpsc::Sender<Progress>,
    tokio::sync::mpsc::Receiver<Progress>,
) {
    tokio::sync::mpsc::channel(PROGRESS_BACKLOG)
}

/// Runs `call` with its tools' progress reports going to `sink`.
pub async fn with_progress<F: Future>(
    sink: tokio::sync::mpsc::Sender<Progress>,
    call: F,
) -> F::Output {
    SINK.scope(sink, call).await
}

/// Reports progress of the call running in this task, if anyone listens.
pub fn report(progress: Progress) {
    let _ = SINK.try_with(|sink| {
        // Full or closed: the report is dropped (see the module doc).
        let _ = sink.try_send(progress);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reports_reach_the_listener_and_are_dropped_without_one() {
        report(Progress {
            progress: 1.0,
            total: None,
            message: None,
        });
        let (tx, mut rx) = channel();
        with_progress(tx, async {
            for i in 0..(PROGRESS_BACKLOG + 10) {
                report(Progress {
                    progress: i as f64,
                    total: Some(100.0),
                    message: Some(format!("step {i}")),
                });
            }
        })
        .await;
        let mut got = Vec::new();
        while let Ok(p) = rx.try_recv() {
            got.push(p.progress);
        }
        // The backlog is bounded; the first reports are kept in order.
        assert_eq!(got.len(), PROGRESS_BACKLOG);
        assert_eq!(got[0], 0.0);
        assert_eq!(got[PROGRESS_BACKLOG - 1], (PROGRESS_BACKLOG - 1) as f64);
    }
}
