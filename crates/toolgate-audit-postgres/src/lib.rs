//! toolgate's audit log in PostgreSQL (`--audit postgres://…`): one table of records, a
//! hash chain per session, delivered at least once from the local log, and read back by
//! `toolgate audit verify|query postgres://…`.
//!
//! **Delivery.** The local hash-chained file stays the source of truth and the spool:
//! [`PgDestination`] is a destination of its shipper ([`toolgate_audit::ship`]), so a call
//! never waits for the database, and records written while it is down (or unreachable, or
//! refusing) are stored when it is back. A batch is stored in one transaction; a record
//! the table already holds (same local hash: a resend after a crash) is skipped, never
//! stored twice.
//!
//! **Chains.** Each session's records form a chain of their own, in the file's line format
//! (`{"seq":N,"prev":…,…,"hash":…}`, [`toolgate_audit::chain`]), stored verbatim in `line`;
//! the other columns index it for queries. Sessions are chained independently, so several
//! replicas share one table: a session's head is a row in `toolgate_audit_heads`, locked
//! while its records are appended, so two writers of one session still make one chain.
//! [`verify`] checks every chain, that the indexed columns say what the line says, and
//! that each chain ends where its head says.
//!
//! **Schema.** toolgate creates and migrates its tables itself, under an advisory lock (so
//! replicas starting together do not race), and records the version in
//! `toolgate_schema`. A database migrated by a newer toolgate is refused, not written.
//!
//! **Faults.** A wrong URL, wrong credentials, a missing database or missing privileges are
//! configuration errors: [`PgDestination::open_checked`] returns them and the front door
//! stops at start. A server that is down is not: it is logged, the records wait in the
//! local log, the shipper appends a `delivery` record saying so, and delivery resumes when
//! the server is back.
//!
//! Connections are made without TLS: reach PostgreSQL over loopback, a Unix socket, or a
//! tunnel. A URL that asks for TLS (`sslmode=require`) is refused rather than downgraded.
#![deny(missing_docs)]

mod read;
mod schema;
mod store;

use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio_postgres::config::{Host, SslMode};

pub use read::{PgVerifyReport, Problem, query, verify};
pub use schema::SCHEMA_VERSION;
pub use store::PgDestination;

/// Longest wait for a connection (and its login).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the PostgreSQL store cannot be used. Messages name the server, never its password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The URL is not a PostgreSQL URL this build can use.
    #[error("{url}: {reason}; expected postgres://USER:PASSWORD@HOST[:PORT]/DATABASE")]
    BadUrl {
        /// The URL, password hidden.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The server refused the login, the database does not exist, or the role may not
    /// create toolgate's tables: fix the configuration.
    #[error("PostgreSQL at {target} refused: {detail}")]
    Refused {
        /// Where.
        target: String,
        /// What it said (SQLSTATE and message).
        detail: String,
    },
    /// The database was migrated by a newer toolgate.
    #[error(
        "PostgreSQL at {target} has toolgate's audit schema version {found}; this toolgate \
         knows versions up to {known}: upgrade toolgate rather than writing an older format"
    )]
    NewerSchema {
        /// Where.
        target: String,
        /// The version in the database.
        found: i32,
        /// The newest this build knows.
        known: i32,
    },
    /// The server could not be reached or the connection broke.
    #[error("cannot reach PostgreSQL at {target}: {detail}")]
    Unreachable {
        /// Where.
        target: String,
        /// What went wrong.
        detail: String,
    },
}

impl PgError {
    /// Whether this is about the configuration (fix and restart) rather than a server that
    /// is down for now.
    pub fn is_config(&self) -> bool {
        !matches!(self, PgError::Unreachable { .. })
    }
}

/// A parsed PostgreSQL URL: how to connect, and how to name the server in messages.
#[derive(Clone)]
pub struct PgTarget {
    config: tokio_postgres::Config,
    shown: String,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl PgTarget {
    /// Whether `text` is meant as a PostgreSQL URL (rather than a file path).
    pub fn is_url(text: &str) -> bool {
        text.starts_with("postgres://") || text.starts_with("postgresql://")
    }

    /// Parses a `postgres://` URL.
    pub fn parse(url: &str) -> Result<Self, PgError> {
        let bad = |reason: String| PgError::BadUrl {
            url: hide_password(url),
            reason,
        };
        if !Self::is_url(url) {
            return Err(bad("not a postgres:// URL".into()));
        }
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| bad(format!("{e}")))?;
        if matches!(config.get_ssl_mode(), SslMode::Require) {
            return Err(bad(
                "TLS connections are not supported by this build; use loopback, a Unix socket \
                 or a tunnel, and sslmode=disable or prefer"
                    .into(),
            ));
        }
        if config.get_dbname().is_none() {
            return Err(bad("no database named".into()));
        }
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("toolgate");
        let host = config
            .get_hosts()
            .first()
            .map(|h| match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => path.display().to_string(),
            })
            .unwrap_or_else(|| "localhost".into());
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let shown = format!(
            "postgres://{}@{host}:{port}/{}",
            config.get_user().unwrap_or(""),
            config.get_dbname().unwrap_or("")
        );
        Ok(Self { config, shown })
    }

    /// `postgres://user@host:port/db`, without the password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// A stable name for checkpoints: derived from [`shown`](Self::shown).
    pub fn id(&self) -> String {
        let digest = hex::encode(Sha256::digest(self.shown.as_bytes()));
        format!("postgres-{}", &digest[..16])
    }

    /// Connects; the connection is driven by a task on the current runtime.
    pub async fn connect(&self) -> Result<tokio_postgres::Client, PgError> {
        let (client, connection) = self
            .config
            .connect(tokio_postgres::NoTls)
            .await
            .map_err(|e| self.error(&e))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "PostgreSQL connection ended");
            }
        });
        Ok(client)
    }

    /// Classifies a driver error: SQLSTATE classes 28 (authorization), 3D (no such
    /// database) and 42 (privileges, syntax) are configuration; the rest is reachability.
    pub(crate) fn error(&self, e: &tokio_postgres::Error) -> PgError {
        match e.as_db_error() {
            Some(db)
                if ["28", "3D", "42"]
                    .iter()
                    .any(|c| db.code().code().starts_with(c)) =>
            {
                PgError::Refused {
                    target: self.shown.clone(),
                    detail: format!("{} ({})", db.message(), db.code().code()),
                }
            }
            Some(db) => PgError::Unreachable {
                target: self.shown.clone(),
                detail: format!("{} ({})", db.message(), db.code().code()),
            },
            None => PgError::Unreachable {
                target: self.shown.clone(),
                detail: e.to_string(),
            },
        }
    }
}

/// The URL with its password hidden, for messages.
fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_passwords_hidden() {
        let t = PgTarget::parse("postgres://tg:hunter2@127.0.0.1:5433/audit")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.shown(), "postgres://tg@127.0.0.1:5433/audit");
        assert!(!format!("{t:?}").contains("hunter2"));
        assert!(t.id().starts_with("postgres-"));
        for bad in [
            "postgres://tg:hunter2@127.0.0.1/audit?sslmode=require",
            "postgres://tg:hunter2@127.0.0.1:notaport/audit",
            "mysql://tg:hunter2@127.0.0.1/audit",
        ] {
            let e = PgTarget::parse(bad).map(|_| ()).unwrap_err();
            let text = e.to_string();
            assert!(e.is_config() && !text.contains("hunter2"), "{text}");
        }
    }
}
