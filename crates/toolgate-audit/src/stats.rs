//! Counting calls, denials, errors and latencies over a log.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::{AuditError, read_records};

/// Totals over the `"kind":"call"` records of a log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Call records.
    pub calls: u64,
    /// Calls with `status` `ok`.
    pub ok: u64,
    /// Calls with any other status.
    pub errors: u64,
    /// Records of other kinds (recoveries, …).
    pub other_records: u64,
    /// Lines that are not JSON objects (a torn last line, garbage).
    pub unreadable_lines: u64,
    /// `denied` calls by the layer that denied them (see [`Stats::add`]).
    pub denials_by_layer: BTreeMap<String, u64>,
    /// Failed calls by `code` (`unknown` when a failed call has none).
    pub errors_by_code: BTreeMap<String, u64>,
    /// Per tool name.
    pub tools: BTreeMap<String, ToolStats>,
    #[serde(skip)]
    durations: BTreeMap<String, Vec<u64>>,
}

/// Totals for one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolStats {
    /// Calls.
    pub calls: u64,
    /// Failed calls.
    pub errors: u64,
    /// Median `duration_us` (nearest rank), if any call had one.
    pub p50_us: Option<u64>,
    /// 99th percentile `duration_us` (nearest rank).
    pub p99_us: Option<u64>,
}

/// Reads the whole log at `path` and counts. Keeps one `u64` per call in memory for the
/// percentiles.
pub fn stats(path: impl AsRef<Path>) -> Result<Stats, AuditError> {
    let mut s = Stats::default();
    for item in read_records(path)? {
        match item {
            Ok(entry) => s.add(&entry.value),
            Err(AuditError::BadLine { .. }) => s.unreadable_lines += 1,
            Err(e) => return Err(e),
        }
    }
    s.finish();
    Ok(s)
}

/// The nearest-rank percentile of sorted values: the smallest value with at least `p`% of
/// the values at or below it.
pub fn percentile(sorted: &[u64], p: u64) -> Option<u64> {
    let n = sorted.len() as u64;
    if n == 0 {
        return None;
    }
    let rank = (p.min(100) * n).div_ceil(100).max(1);
    sorted.get(usize::try_from(rank - 1).ok()?).copied()
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The layer of a denial: the failing stage's deny verdict, else the record's deny
/// verdict, else a top-level `layer`, else `unknown`.
fn denial_layer(record: &Value) -> String {
    let is_deny = |v: &Value| str_at(v, "/decision") == Some("deny");
    let from_stage = record
        .get("stages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|s| str_at(s, "/status") == Some("fail"))
        .filter_map(|s| s.get("verdict"))
        .rfind(|v| is_deny(v))
        .and_then(|v| str_at(v, "/layer"));
    let from_verdict = record
        .get("verdict")
        .filter(|v| is_deny(v))
        .and_then(|v| str_at(v, "/layer"));
    from_stage
        .or(from_verdict)
        .or_else(|| str_at(record, "/layer"))
        .unwrap_or("unknown")
        .to_owned()
}

impl Stats {
    /// Counts one record. Records whose `kind` is not `call` only count as other records.
    pub fn add(&mut self, record: &Value) {
        if str_at(record, "/kind") != Some("call") {
            self.other_records += 1;
            return;
        }
        self.calls += 1;
        let tool = str_at(record, "/tool").unwrap_or("(none)").to_owned();
        let ok = str_at(record, "/status") == Some("ok");
        let t = self.tools.entry(tool.clone()).or_default();
        t.calls += 1;
        if ok {
            self.ok += 1;
        } else {
            self.errors += 1;
            t.errors += 1;
            let code = str_at(record, "/code").unwrap_or("unknown");
            *self.errors_by_code.entry(code.to_owned()).or_default() += 1;
            if code == "denied" {
                *self
                    .denials_by_layer
                    .entry(denial_layer(record))
                    .or_default() += 1;
            }
        }
        if let Some(d) = record.get("duration_us").and_then(Value::as_u64) {
            self.durations.entry(tool).or_default().push(d);
        }
    }

    /// Computes the percentiles of what was added so far.
    pub fn finish(&mut self) {
        for (tool, durations) in &mut self.durations {
            durations.sort_unstable();
            if let Some(t) = self.tools.get_mut(tool) {
                t.p50_us = percentile(durations, 50);
                t.p99_us = percentile(durations, 99);
            }
        }
    }

    /// Counts `records` and computes percentiles.
    pub fn from_values<'a>(records: impl IntoIterator<Item = &'a Value>) -> Stats {
        let mut s = Stats::default();
        for r in records {
            s.add(r);
        }
        s.finish();
        s
    }

    /// A small table for a person.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "calls {}  ok {}  errors {}  (other records {}, unreadable lines {})",
            self.calls, self.ok, self.errors, self.other_records, self.unreadable_lines
        );
        for (title, map) in [
            ("denials by layer", &self.denials_by_layer),
            ("errors by code", &self.errors_by_code),
        ] {
            if !map.is_empty() {
                let _ = writeln!(out, "\n{title}");
                for (k, n) in map {
                    let _ = writeln!(out, "  {k:<24} {n:>8}");
                }
            }
        }
        if !self.tools.is_empty() {
            let _ = writeln!(
                out,
                "\n{:<24} {:>8} {:>8} {:>10} {:>10}",
                "tool", "calls", "errors", "p50", "p99"
            );
            for (name, t) in &self.tools {
                let _ = writeln!(
                    out,
                    "{name:<24} {:>8} {:>8} {:>10} {:>10}",
                    t.calls,
                    t.errors,
                    human_us(t.p50_us),
                    human_us(t.p99_us)
                );
            }
        }
        out
    }
}

pub(crate) fn human_us(us: Option<u64>) -> String {
    match us {
        None => "-".to_owned(),
        Some(us) if us < 1_000 => format!("{us}us"),
        Some(us) if us < 1_000_000 => format!("{:.1}ms", us as f64 / 1e3),
        Some(us) => format!("{:.2}s", us as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), Some(50));
        assert_eq!(percentile(&v, 99), Some(99));
        assert_eq!(percentile(&[10, 20, 30], 50), Some(20));
        assert_eq!(percentile(&[10, 20, 30], 99), Some(30));
        assert_eq!(percentile(&[7], 99), Some(7));
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(percentile(&[1, 2], 0), Some(1));
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_us(Some(850)), "850us");
        assert_eq!(human_us(Some(1_500)), "1.5ms");
        assert_eq!(human_us(Some(2_500_000)), "2.50s");
        assert_eq!(human_us(None), "-");
    }
}
