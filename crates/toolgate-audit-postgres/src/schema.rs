//! toolgate's tables and their migrations, applied in order under an advisory lock.

use tokio_postgres::Client;

use crate::{PgError, PgTarget};

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i32 = 1;

/// The advisory lock taken while migrating (an arbitrary constant: "tgaudit").
const MIGRATION_LOCK: i64 = 0x0074_6761_7564_6974;

/// Migration `i` brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: records, one chain per session, and the head of each chain.
    r#"
    CREATE TABLE toolgate_audit (
        id          bigserial PRIMARY KEY,
        session_id  text        NOT NULL,
        seq         bigint      NOT NULL,
        prev        text        NOT NULL,
        hash        text        NOT NULL,
        line        text        NOT NULL,
        source_hash text        NOT NULL,
        kind        text        NOT NULL,
        call_id     text,
        ts          timestamptz,
        tool        text,
        status      text,
        code        text,
        decision    text,
        layer       text,
        rule        text,
        client      text,
        duration_us bigint,
        stored_at   timestamptz NOT NULL DEFAULT now(),
        UNIQUE (session_id, seq),
        UNIQUE (source_hash)
    );
    CREATE INDEX toolgate_audit_ts ON toolgate_audit (ts);
    CREATE INDEX toolgate_audit_tool ON toolgate_audit (tool, ts);
    CREATE INDEX toolgate_audit_call ON toolgate_audit (session_id, call_id);
    CREATE TABLE toolgate_audit_heads (
        session_id text   PRIMARY KEY,
        seq        bigint NOT NULL,
        hash       text   NOT NULL
    );
    "#,
];

/// Brings the database to [`SCHEMA_VERSION`]; refuses one that is newer.
pub(crate) async fn migrate(target: &PgTarget, client: &mut Client) -> Result<(), PgError> {
    let err = |e: tokio_postgres::Error| target.error(&e);
    let tx = client.transaction().await.map_err(err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(err)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS toolgate_schema (
            component   text        PRIMARY KEY,
            version     integer     NOT NULL,
            migrated_at timestamptz NOT NULL DEFAULT now()
        )",
    )
    .await
    .map_err(err)?;
    let found: i32 = tx
        .query_opt(
            "SELECT version FROM toolgate_schema WHERE component = 'audit'",
            &[],
        )
        .await
        .map_err(err)?
        .map_or(0, |row| row.get(0));
    if found > SCHEMA_VERSION {
        return Err(PgError::NewerSchema {
            target: target.shown().to_owned(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        tx.batch_execute(sql).await.map_err(err)?;
        tracing::info!(target = %target.shown(), version = from + 1, "migrated the audit schema");
    }
    tx.execute(
        "INSERT INTO toolgate_schema (component, version) VALUES ('audit', $1)
         ON CONFLICT (component) DO UPDATE SET version = $1, migrated_at = now()
         WHERE toolgate_schema.version <> $1",
        &[&SCHEMA_VERSION],
    )
    .await
    .map_err(err)?;
    tx.commit().await.map_err(err)
}

/// Checks that the schema is there and is this version (for reading without writing).
pub(crate) async fn check(target: &PgTarget, client: &Client) -> Result<(), PgError> {
    let row = client
        .query_opt(
            "SELECT version FROM toolgate_schema WHERE component = 'audit'",
            &[],
        )
        .await;
    // No schema table at all: nothing of toolgate's is here.
    let row = match row {
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => None,
        other => other.map_err(|e| target.error(&e))?,
    };
    match row.map(|r| r.get::<_, i32>(0)) {
        Some(SCHEMA_VERSION) => Ok(()),
        Some(found) if found > SCHEMA_VERSION => Err(PgError::NewerSchema {
            target: target.shown().to_owned(),
            found,
            known: SCHEMA_VERSION,
        }),
        other => Err(PgError::Refused {
            target: target.shown().to_owned(),
            detail: format!(
                "no toolgate audit schema here (version {other:?}); a front door with --audit \
                 {} creates it",
                target.shown()
            ),
        }),
    }
}
