//! Picking records: the filter of `toolgate audit query`, the same for a file and for a
//! store (which applies it in its own query language, with these meanings).

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;
use std::path::Path;

use crate::{AuditError, read_records};

/// Which records to keep. Every field that is set must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// `session_id` equals this.
    pub session: Option<String>,
    /// `tool` equals this.
    pub tool: Option<String>,
    /// The verdict's `decision` (`allow`, `ask`, `deny`) equals this.
    pub decision: Option<String>,
    /// The verdict's `rule` equals this (the rule's text, as `check --explain` shows it).
    pub rule: Option<String>,
    /// `ts` at or after this.
    pub since: Option<DateTime<Utc>>,
    /// `ts` before this.
    pub until: Option<DateTime<Utc>>,
}

/// A time given on the command line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a time: use RFC 3339 (2026-01-31T12:00:00Z, 2026-01-31T13:00:00+01:00) or a \
     date (2026-01-31, midnight UTC)"
)]
pub struct BadTime(pub String);

/// Reads `--since` / `--until`: RFC 3339, or a date (midnight UTC).
pub fn parse_time(text: &str) -> Result<DateTime<Utc>, BadTime> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| BadTime(text.to_owned()))
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The fields of a record a filter looks at, as a store indexes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Indexed {
    /// `kind`.
    pub kind: String,
    /// `session_id` (empty for records outside a session: recoveries, deliveries).
    pub session: String,
    /// `call_id`.
    pub call_id: Option<String>,
    /// `ts`.
    pub ts: Option<DateTime<Utc>>,
    /// `tool`.
    pub tool: Option<String>,
    /// `status`.
    pub status: Option<String>,
    /// `code`.
    pub code: Option<String>,
    /// The verdict's decision.
    pub decision: Option<String>,
    /// The verdict's layer, else the layer of the last stage verdict.
    pub layer: Option<String>,
    /// The verdict's rule.
    pub rule: Option<String>,
    /// `client`.
    pub client: Option<String>,
    /// `duration_us`.
    pub duration_us: Option<u64>,
}

impl Indexed {
    /// Reads the indexed fields of a record.
    pub fn of(v: &Value) -> Indexed {
        let s = |p: &str| str_at(v, p).map(str::to_owned);
        let stage_layer = || {
            v.get("stages")
                .and_then(Value::as_array)
                .and_then(|st| st.iter().rev().find_map(|s| str_at(s, "/verdict/layer")))
                .map(str::to_owned)
        };
        Indexed {
            kind: s("/kind").unwrap_or_default(),
            session: s("/session_id").unwrap_or_default(),
            call_id: s("/call_id"),
            ts: str_at(v, "/ts")
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc)),
            tool: s("/tool"),
            status: s("/status"),
            code: s("/code"),
            decision: s("/verdict/decision"),
            layer: s("/verdict/layer").or_else(stage_layer),
            rule: s("/verdict/rule"),
            client: s("/client"),
            duration_us: v.get("duration_us").and_then(Value::as_u64),
        }
    }
}

impl Filter {
    /// Whether a record matches.
    pub fn matches(&self, v: &Value) -> bool {
        let ix = Indexed::of(v);
        let eq = |want: &Option<String>, got: &Option<String>| {
            want.as_ref().is_none_or(|w| got.as_deref() == Some(w))
        };
        self.session.as_ref().is_none_or(|s| *s == ix.session)
            && eq(&self.tool, &ix.tool)
            && eq(&self.decision, &ix.decision)
            && eq(&self.rule, &ix.rule)
            && self.since.is_none_or(|t| ix.ts.is_some_and(|ts| ts >= t))
            && self.until.is_none_or(|t| ix.ts.is_some_and(|ts| ts < t))
    }
}

/// The records of the log at `path` that match, in log order; `each` gets every one (its
/// line as JSON) and returns `false` to stop. Returns how many matched. Lines that are not
/// records are skipped (`verify` reports them).
pub fn query_file(
    path: impl AsRef<Path>,
    filter: &Filter,
    mut each: impl FnMut(&Value) -> bool,
) -> Result<u64, AuditError> {
    let mut n = 0;
    for entry in read_records(path)? {
        let Ok(entry) = entry else { continue };
        if filter.matches(&entry.value) {
            n += 1;
            if !each(&entry.value) {
                break;
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_and_filters() {
        assert_eq!(
            parse_time("2026-01-31").map(|t| t.to_rfc3339()),
            Ok("2026-01-31T00:00:00+00:00".to_owned())
        );
        assert!(parse_time("2026-01-31T13:00:00+01:00").is_ok());
        assert!(parse_time("yesterday").is_err());
        let r = json!({"kind": "call", "ts": "2026-01-31T12:00:00.000Z", "session_id": "s",
                        "tool": "Bash", "verdict": {"decision": "deny", "rule": "Bash(rm:*)"}});
        let f = |f: Filter| f.matches(&r);
        assert!(f(Filter::default()));
        assert!(f(Filter {
            tool: Some("Bash".into()),
            decision: Some("deny".into()),
            rule: Some("Bash(rm:*)".into()),
            session: Some("s".into()),
            since: parse_time("2026-01-31").ok(),
            until: parse_time("2026-02-01").ok(),
        }));
        assert!(!f(Filter {
            tool: Some("bash".into()),
            ..Filter::default()
        }));
        assert!(!f(Filter {
            until: parse_time("2026-01-31T12:00:00Z").ok(),
            ..Filter::default()
        }));
        assert!(!f(Filter {
            decision: Some("allow".into()),
            ..Filter::default()
        }));
        let no_ts = json!({"kind": "recovery"});
        assert!(
            !Filter {
                since: parse_time("2000-01-01").ok(),
                ..Filter::default()
            }
            .matches(&no_ts)
        );
    }
}
