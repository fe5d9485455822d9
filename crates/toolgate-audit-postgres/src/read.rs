//! Reading the table back: verifying every session's chain, and querying.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use futures::{StreamExt as _, pin_mut};
use serde::Serialize;
use serde_json::Value;
use tokio_postgres::types::ToSql;
use toolgate_audit::chain::{GENESIS_HASH, Verifier};
use toolgate_audit::query::{Filter, Indexed};
use toolgate_audit::{EXIT_OK, EXIT_TAMPERED};

use crate::{PgError, PgTarget, schema};

/// The first thing wrong in the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The session whose chain it is in.
    pub session: String,
    /// The row's `seq` in that chain (0 when it is about the chain's end).
    pub seq: u64,
    /// `bad_hash`, `prev_mismatch`, `seq_mismatch`, `unparseable`, `column_mismatch` (an
    /// indexed column does not say what the line says) or `head_mismatch` (the chain does
    /// not end where its head row says: records cut from the end, or a head edited).
    pub kind: String,
    /// In words.
    pub detail: String,
}

/// The verdict on the whole table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PgVerifyReport {
    /// The server (no password).
    pub target: String,
    /// Sessions checked.
    pub sessions: u64,
    /// Records that verified before the first problem.
    pub records: u64,
    /// The first problem, if any.
    pub problem: Option<Problem>,
    /// Things worth knowing that are not tampering (a call id recorded twice in a session).
    pub warnings: Vec<String>,
}

impl PgVerifyReport {
    /// `toolgate audit verify`'s exit code: 0 intact, 1 tampered.
    pub fn exit_code(&self) -> u8 {
        if self.problem.is_some() {
            EXIT_TAMPERED
        } else {
            EXIT_OK
        }
    }

    /// A few lines for a person.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = match &self.problem {
            None => writeln!(
                out,
                "{}: OK, {} records in {} sessions",
                self.target, self.records, self.sessions
            ),
            Some(p) => writeln!(
                out,
                "{}: TAMPERED in session {} at seq {} ({}): {}\n{} valid records before it.",
                self.target, p.session, p.seq, p.kind, p.detail, self.records
            ),
        };
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        out
    }
}

const COLUMNS: &str = "session_id, seq, prev, hash, line, kind, call_id, ts, tool, status, \
                       code, decision, layer, rule, client, duration_us";

/// Verifies every session's chain in the table at `url` (see the crate doc). Errors only
/// when the table cannot be read; every problem with its content is in the report.
pub async fn verify(url: &str) -> Result<PgVerifyReport, PgError> {
    let target = PgTarget::parse(url)?;
    let client = target.connect().await?;
    schema::check(&target, &client).await?;
    let err = |e: tokio_postgres::Error| target.error(&e);
    let heads: HashMap<String, (i64, String)> = client
        .query(
            "SELECT session_id, seq, hash FROM toolgate_audit_heads",
            &[],
        )
        .await
        .map_err(err)?
        .into_iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect();
    let sql = format!("SELECT {COLUMNS} FROM toolgate_audit ORDER BY session_id, seq");
    let rows = client
        .query_raw(&sql, std::iter::empty::<&(dyn ToSql + Sync)>())
        .await
        .map_err(err)?;
    pin_mut!(rows);
    let mut report = PgVerifyReport {
        target: target.shown().to_owned(),
        sessions: 0,
        records: 0,
        problem: None,
        warnings: Vec::new(),
    };
    let mut current: Option<(String, Verifier)> = None;
    let mut call_ids: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut seen: Vec<String> = Vec::new();
    while let Some(row) = rows.next().await {
        let row = row.map_err(err)?;
        let session: String = row.get(0);
        if current.as_ref().is_none_or(|(s, _)| *s != session) {
            if let Some((done, v)) = current.take()
                && let Some(p) = head_problem(&done, &v, &heads)
            {
                report.problem = Some(p);
                return Ok(report);
            }
            report.sessions += 1;
            seen.push(session.clone());
            current = Some((session.clone(), Verifier::new()));
        }
        let Some((_, verifier)) = current.as_mut() else {
            continue;
        };
        if let Some(p) = check_row(&row, &session, verifier) {
            report.problem = Some(p);
            return Ok(report);
        }
        report.records += 1;
        let kind: String = row.get(5);
        if let (Some(call), "call") = (row.get::<_, Option<String>>(6), kind.as_str()) {
            *call_ids.entry((session.clone(), call)).or_default() += 1;
        }
    }
    if let Some((done, v)) = current.take()
        && let Some(p) = head_problem(&done, &v, &heads)
    {
        report.problem = Some(p);
        return Ok(report);
    }
    // A head without rows: a whole session's records were deleted.
    if let Some((session, (seq, _))) = heads
        .iter()
        .find(|(s, (seq, _))| *seq > 0 && !seen.contains(s))
    {
        report.problem = Some(Problem {
            session: session.clone(),
            seq: 0,
            kind: "head_mismatch".into(),
            detail: format!("its head says {seq} records and the table has none"),
        });
        return Ok(report);
    }
    report.warnings = call_ids
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|((s, c), n)| {
            format!(
                "session {s}: call id {c} has {n} call records (a client reused the id, or a \
                 record reached the table twice by two different local logs)"
            )
        })
        .collect();
    Ok(report)
}

/// Checks one row: its line against the chain, and its columns against its line.
fn check_row(row: &tokio_postgres::Row, session: &str, v: &mut Verifier) -> Option<Problem> {
    let seq: i64 = row.get(1);
    let problem = |kind: &str, detail: String| {
        Some(Problem {
            session: session.to_owned(),
            seq: seq.max(0) as u64,
            kind: kind.to_owned(),
            detail,
        })
    };
    let (prev, hash, line): (String, String, String) = (row.get(2), row.get(3), row.get(4));
    let head_before = v.head().1.to_owned();
    let computed = match v.push(line.as_bytes()) {
        Ok(h) => h,
        Err(b) => {
            let kind = serde_json::to_value(b.kind)
                .ok()
                .and_then(|k| k.as_str().map(str::to_owned))
                .unwrap_or_default();
            return problem(&kind, b.detail);
        }
    };
    if seq.max(0) as u64 != v.head().0 || prev != head_before || hash != computed {
        return problem(
            "column_mismatch",
            "the row's seq, prev or hash column does not match its line".into(),
        );
    }
    let parsed: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    let ix = Indexed::of(&parsed);
    let got = |i: usize| row.get::<_, Option<String>>(i);
    let checks: [(&str, Option<String>, Option<String>); 10] = [
        (
            "session_id",
            Some(session.to_owned()),
            Some(ix.session.clone()),
        ),
        ("kind", Some(row.get(5)), Some(ix.kind.clone())),
        ("call_id", got(6), ix.call_id.clone()),
        ("tool", got(8), ix.tool.clone()),
        ("status", got(9), ix.status.clone()),
        ("code", got(10), ix.code.clone()),
        ("decision", got(11), ix.decision.clone()),
        ("layer", got(12), ix.layer.clone()),
        ("rule", got(13), ix.rule.clone()),
        ("client", got(14), ix.client.clone()),
    ];
    for (column, stored, said) in checks {
        if stored != said {
            return problem(
                "column_mismatch",
                format!("`{column}` is {stored:?} but the line says {said:?}"),
            );
        }
    }
    let ts: Option<DateTime<Utc>> = row.get(7);
    let duration: Option<i64> = row.get(15);
    if ts != ix.ts || duration != ix.duration_us.and_then(|d| i64::try_from(d).ok()) {
        return problem(
            "column_mismatch",
            "`ts` or `duration_us` does not match the line".into(),
        );
    }
    None
}

/// Whether a session's chain ends where its head row says.
fn head_problem(
    session: &str,
    v: &Verifier,
    heads: &HashMap<String, (i64, String)>,
) -> Option<Problem> {
    let (seq, hash) = v.head();
    let (head_seq, head_hash) = heads
        .get(session)
        .map_or((0, GENESIS_HASH), |(s, h)| (*s, h.as_str()));
    if head_seq.max(0) as u64 == seq && head_hash == hash {
        return None;
    }
    Some(Problem {
        session: session.to_owned(),
        seq,
        kind: "head_mismatch".into(),
        detail: format!(
            "the chain ends at seq {seq} (hash {hash}) but its head says seq {head_seq} (hash \
             {head_hash}): records were cut from the end, or the head was edited"
        ),
    })
}

/// The records at `url` that match `filter`, ordered by time; `each` gets every one's line
/// (the session chain's line, verifiable like a file's) and returns `false` to stop.
/// Returns how many matched.
pub async fn query(
    url: &str,
    filter: &Filter,
    mut each: impl FnMut(&str) -> bool,
) -> Result<u64, PgError> {
    let target = PgTarget::parse(url)?;
    let client = target.connect().await?;
    schema::check(&target, &client).await?;
    let mut clauses: Vec<String> = Vec::new();
    let mut params: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    let mut add = |clause: &str, value: Box<dyn ToSql + Sync + Send>| {
        params.push(value);
        clauses.push(clause.replace('?', &format!("${}", params.len())));
    };
    let text = |s: &Option<String>| {
        s.clone()
            .map(|v| Box::new(v) as Box<dyn ToSql + Sync + Send>)
    };
    for (clause, value) in [
        ("session_id = ?", text(&filter.session)),
        ("tool = ?", text(&filter.tool)),
        ("decision = ?", text(&filter.decision)),
        ("rule = ?", text(&filter.rule)),
    ] {
        if let Some(v) = value {
            add(clause, v);
        }
    }
    if let Some(t) = filter.since {
        add("ts >= ?", Box::new(t));
    }
    if let Some(t) = filter.until {
        add("ts < ?", Box::new(t));
    }
    let mut sql = "SELECT line FROM toolgate_audit".to_owned();
    if !clauses.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&clauses.join(" AND "));
    }
    sql.push_str(" ORDER BY ts NULLS FIRST, id");
    let rows = client
        .query_raw(
            &sql,
            params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)),
        )
        .await
        .map_err(|e| target.error(&e))?;
    pin_mut!(rows);
    let mut n = 0;
    while let Some(row) = rows.next().await {
        let row = row.map_err(|e| target.error(&e))?;
        n += 1;
        if !each(row.get::<_, &str>(0)) {
            break;
        }
    }
    Ok(n)
}
