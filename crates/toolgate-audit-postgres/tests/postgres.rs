//! The PostgreSQL store against a real server (started by each test; `postgresql` must be
//! installed — the tests fail, not skip, without it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_audit::query::{Filter, parse_time};
use toolgate_audit::ship::{ShipOptions, Shipper, backlogs, ship_dir};
use toolgate_audit::{AuditLog, FsyncPolicy};
use toolgate_audit_postgres::{PgDestination, PgError, query, verify};
use toolgate_test_servers::{PG_PASSWORD, Postgres};

fn eventually(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn fast() -> ShipOptions {
    ShipOptions {
        poll: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
        batch_records: 16,
        ..ShipOptions::default()
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn call(session: &str, id: &str, tool: &str, decision: &str, ts: &str) -> Value {
    let code = if decision == "deny" {
        json!("denied")
    } else {
        Value::Null
    };
    let mut v = json!({
        "kind": "call", "ts": ts, "session_id": session, "call_id": id, "client": "cli",
        "tool": tool, "input": {"x": 1},
        "verdict": {"decision": decision, "layer": "rule", "rule": format!("{tool}(*)"), "source": "t", "reason": "r"},
        "status": if decision == "deny" { "error" } else { "ok" }, "duration_us": 42
    });
    if !code.is_null() {
        v["code"] = code;
    }
    v
}

/// Ships `log` to `url` until its backlog is empty.
fn ship_all(log: &Arc<AuditLog>, url: &str) {
    let dest = Arc::new(PgDestination::open_checked(url).unwrap());
    let shipper = Shipper::start(Arc::clone(log), dest, fast()).unwrap();
    let path = log.path().to_owned();
    eventually("everything stored", || {
        backlogs(&path)
            .first()
            .is_some_and(|b| b.pending == 0 && b.checkpoint.last_error.is_none())
    });
    shipper.stop();
}

fn lines(url: &str, filter: &Filter) -> Vec<Value> {
    let mut out = Vec::new();
    rt().block_on(query(url, filter, |l| {
        out.push(serde_json::from_str(l).unwrap());
        true
    }))
    .unwrap();
    out
}

#[test]
fn records_are_chained_per_session_and_queried_like_the_file() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(AuditLog::open(dir.path().join("a.jsonl"), FsyncPolicy::Never).unwrap());
    for i in 0..30 {
        let session = ["alpha", "beta", "gamma"][i % 3];
        let decision = if i % 5 == 0 { "deny" } else { "allow" };
        let tool = if i % 2 == 0 { "Bash" } else { "Read" };
        let ts = format!("2026-01-01T00:00:{i:02}.000Z");
        log.append(&call(session, &format!("c{i}"), tool, decision, &ts))
            .unwrap();
    }
    ship_all(&log, &url);
    let report = rt().block_on(verify(&url)).unwrap();
    assert_eq!(report.problem, None, "{}", report.render());
    assert_eq!((report.sessions, report.records), (3, 30));
    // Each session is its own chain: 1..=10.
    let beta = lines(
        &url,
        &Filter {
            session: Some("beta".into()),
            ..Filter::default()
        },
    );
    let seqs: Vec<u64> = beta.iter().map(|v| v["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    assert!(beta.iter().all(|v| v["session_id"] == "beta"));
    // Filters mean what they mean on a file.
    let denied_bash = Filter {
        tool: Some("Bash".into()),
        decision: Some("deny".into()),
        since: parse_time("2026-01-01T00:00:05Z").ok(),
        until: parse_time("2026-01-01T00:00:25Z").ok(),
        ..Filter::default()
    };
    let from_pg: Vec<Value> = lines(&url, &denied_bash);
    let ids: Vec<&str> = from_pg
        .iter()
        .map(|v| v["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c10", "c20"]);
    let mut from_file = Vec::new();
    toolgate_audit::query::query_file(log.path(), &denied_bash, |v| {
        from_file.push(v["call_id"].as_str().unwrap().to_owned());
        true
    })
    .unwrap();
    assert_eq!(from_file, ["c10", "c20"]);
    let by_rule = lines(
        &url,
        &Filter {
            rule: Some("Read(*)".into()),
            ..Filter::default()
        },
    );
    assert_eq!(by_rule.len(), 15);
}

#[test]
fn a_batch_sent_again_is_not_stored_twice() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(AuditLog::open(dir.path().join("a.jsonl"), FsyncPolicy::Never).unwrap());
    for i in 0..12 {
        log.append(&call(
            "s",
            &format!("c{i}"),
            "Read",
            "allow",
            "2026-01-01T00:00:00Z",
        ))
        .unwrap();
    }
    ship_all(&log, &url);
    // A crash after storing and before the checkpoint: everything is sent again.
    std::fs::remove_dir_all(ship_dir(log.path())).unwrap();
    log.append(&call("s", "c12", "Read", "allow", "2026-01-01T00:00:00Z"))
        .unwrap();
    ship_all(&log, &url);
    assert_eq!(
        pg.psql("postgres", "SELECT count(*) FROM toolgate_audit")
            .trim(),
        "13"
    );
    let report = rt().block_on(verify(&url)).unwrap();
    assert_eq!((report.problem, report.records), (None, 13));
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

#[test]
fn two_replicas_appending_to_one_session_still_make_one_chain() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    let dir = tempfile::tempdir().unwrap();
    let logs: Vec<Arc<AuditLog>> = (0..2)
        .map(|i| {
            Arc::new(
                AuditLog::open(dir.path().join(format!("r{i}.jsonl")), FsyncPolicy::Never).unwrap(),
            )
        })
        .collect();
    let shippers: Vec<Shipper> = logs
        .iter()
        .map(|log| {
            let dest = Arc::new(PgDestination::open_checked(&url).unwrap());
            Shipper::start(Arc::clone(log), dest, fast()).unwrap()
        })
        .collect();
    for i in 0..40 {
        let log = &logs[i % 2];
        log.append(&call(
            "shared",
            &format!("c{i}"),
            "Read",
            "allow",
            "2026-01-01T00:00:00Z",
        ))
        .unwrap();
    }
    eventually("both stored", || {
        logs.iter()
            .all(|l| backlogs(l.path()).first().is_some_and(|b| b.pending == 0))
    });
    drop(shippers);
    let report = rt().block_on(verify(&url)).unwrap();
    assert_eq!(report.problem, None, "{}", report.render());
    assert_eq!((report.sessions, report.records), (1, 40));
}

#[test]
fn tampering_with_rows_is_found_and_named() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(AuditLog::open(dir.path().join("a.jsonl"), FsyncPolicy::Never).unwrap());
    for i in 0..6 {
        log.append(&call(
            ["a", "b"][i % 2],
            &format!("c{i}"),
            "Bash",
            "allow",
            "2026-01-01T00:00:00Z",
        ))
        .unwrap();
    }
    ship_all(&log, &url);
    let kind_after = |sql: &str| {
        pg.psql("postgres", &format!("BEGIN; {sql}; COMMIT;"));
        let r = rt().block_on(verify(&url)).unwrap();
        let p = r.problem.unwrap_or_else(|| panic!("not found: {sql}"));
        (p.kind, p.session, p.seq)
    };
    // An indexed column changed without its line: queries would lie.
    assert_eq!(
        kind_after("UPDATE toolgate_audit SET tool = 'Read' WHERE session_id = 'a' AND seq = 2"),
        ("column_mismatch".into(), "a".into(), 2)
    );
    pg.psql(
        "postgres",
        "UPDATE toolgate_audit SET tool = 'Bash' WHERE session_id = 'a' AND seq = 2",
    );
    // The line itself edited.
    assert_eq!(
        kind_after(
            "UPDATE toolgate_audit SET line = replace(line, '\"allow\"', '\"deny\"') WHERE session_id = 'b' AND seq = 1"
        ),
        ("bad_hash".into(), "b".into(), 1)
    );
    pg.psql("postgres", "UPDATE toolgate_audit SET line = replace(line, '\"deny\"', '\"allow\"') WHERE session_id = 'b' AND seq = 1");
    // A record removed from the middle, then from the end.
    assert_eq!(
        kind_after("DELETE FROM toolgate_audit WHERE session_id = 'a' AND seq = 2"),
        ("prev_mismatch".into(), "a".into(), 3)
    );
    // A fresh copy in another database, then its last record of session b removed.
    pg.psql("postgres", "CREATE DATABASE second");
    let url2 = pg.url("second");
    ship_all(&log, &url2);
    pg.psql(
        "second",
        "DELETE FROM toolgate_audit WHERE session_id = 'b' AND seq = 3",
    );
    let r = rt().block_on(verify(&url2)).unwrap();
    let p = r.problem.unwrap();
    assert_eq!(
        (p.kind.as_str(), p.session.as_str()),
        ("head_mismatch", "b"),
        "{}",
        p.detail
    );
}

#[test]
fn configuration_errors_stop_at_start_and_an_absent_server_is_waited_for() {
    let mut pg = Postgres::start();
    let port = pg.port();
    // Wrong password, missing database: configuration errors.
    let wrong = format!("postgres://toolgate:nope@127.0.0.1:{port}/postgres");
    let e = PgDestination::open_checked(&wrong).unwrap_err();
    assert!(matches!(e, PgError::Refused { .. }) && e.is_config(), "{e}");
    assert!(!e.to_string().contains("nope"), "{e}");
    let e = PgDestination::open_checked(&pg.url("nosuchdb")).unwrap_err();
    assert!(e.is_config(), "{e}");
    // A role that may not create the tables.
    pg.psql("postgres", "CREATE ROLE weak LOGIN PASSWORD 'weakpw'");
    pg.psql("postgres", "CREATE DATABASE locked");
    pg.psql("locked", "REVOKE CREATE ON SCHEMA public FROM PUBLIC");
    let weak = format!("postgres://weak:weakpw@127.0.0.1:{port}/locked");
    let e = PgDestination::open_checked(&weak).unwrap_err();
    assert!(e.is_config(), "{e}");
    // A schema migrated by a newer toolgate is refused.
    PgDestination::open_checked(&pg.url("postgres")).unwrap();
    pg.psql("postgres", "UPDATE toolgate_schema SET version = 99");
    let e = PgDestination::open_checked(&pg.url("postgres")).unwrap_err();
    assert!(matches!(e, PgError::NewerSchema { found: 99, .. }), "{e}");
    pg.psql(
        "postgres",
        "DROP TABLE toolgate_audit, toolgate_audit_heads, toolgate_schema",
    );
    // Down at start: not an error; records wait in the log and are stored once it is up.
    pg.stop();
    let url = pg.url("postgres");
    let dest = Arc::new(PgDestination::open_checked(&url).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(AuditLog::open(dir.path().join("a.jsonl"), FsyncPolicy::Never).unwrap());
    let shipper = Shipper::start(Arc::clone(&log), dest, fast()).unwrap();
    for i in 0..5 {
        log.append(&call(
            "s",
            &format!("c{i}"),
            "Read",
            "allow",
            "2026-01-01T00:00:00Z",
        ))
        .unwrap();
    }
    let path = log.path().to_owned();
    eventually("failing while down", || {
        backlogs(&path)
            .first()
            .is_some_and(|b| b.checkpoint.failing_since.is_some())
    });
    assert!(backlogs(&path)[0].pending >= 5);
    pg.resume();
    // The missing tables are created by the first delivery.
    eventually("stored once up", || backlogs(&path)[0].pending == 0);
    shipper.stop();
    let r = rt().block_on(verify(&url)).unwrap();
    assert_eq!(r.problem, None, "{}", r.render());
    // 5 calls, plus the `failing` and `recovered` delivery records.
    assert_eq!(r.records, 7);
    let notes = lines(
        &url,
        &Filter {
            session: Some(String::new()),
            ..Filter::default()
        },
    );
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(PG_PASSWORD.len() > 3);
}
