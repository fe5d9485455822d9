//! Storing shipped records: each batch in one transaction, chained per session.

use std::collections::{BTreeMap, HashSet};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio_postgres::Client;
use toolgate_audit::chain;
use toolgate_audit::query::Indexed;
use toolgate_audit::ship::{DeliveryError, Destination, Shipped, StartAt};

use crate::{PgError, PgTarget, schema};

/// The audit table as a destination of the local log's shipper (see the crate doc).
pub struct PgDestination {
    target: PgTarget,
    /// The connection, once made and migrated; dropped after an error so the next batch
    /// connects afresh.
    client: tokio::sync::Mutex<Option<Client>>,
}

impl std::fmt::Debug for PgDestination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgDestination")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl PgDestination {
    /// A destination for `url`; connects on first delivery.
    pub fn new(url: &str) -> Result<Self, PgError> {
        Ok(Self {
            target: PgTarget::parse(url)?,
            client: tokio::sync::Mutex::new(None),
        })
    }

    /// What a front door does at start: parse, connect and migrate (on a thread of its own,
    /// so it may be called from anywhere). Configuration errors are returned; a server that
    /// is down is logged, and the records wait in the local log until it is up.
    pub fn open_checked(url: &str) -> Result<Self, PgError> {
        let dest = Self::new(url)?;
        let checked = std::thread::scope(|s| {
            s.spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| PgError::Unreachable {
                        target: dest.target.shown().to_owned(),
                        detail: format!("cannot start a runtime to check it: {e}"),
                    })?;
                rt.block_on(async {
                    let mut client = dest.target.connect().await?;
                    schema::migrate(&dest.target, &mut client).await
                })
            })
            .join()
            .unwrap_or_else(|_| {
                Err(PgError::Unreachable {
                    target: dest.target.shown().to_owned(),
                    detail: "the check panicked".into(),
                })
            })
        });
        match checked {
            Ok(()) => Ok(dest),
            Err(e) if e.is_config() => Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "PostgreSQL audit store unavailable at start; records wait in the local log");
                Ok(dest)
            }
        }
    }

    /// The server, for messages.
    pub fn target(&self) -> &PgTarget {
        &self.target
    }

    async fn store(&self, client: &mut Client, records: &[Shipped]) -> Result<u64, PgError> {
        let err = |e: tokio_postgres::Error| self.target.error(&e);
        let tx = client.transaction().await.map_err(err)?;
        // Records already stored (a batch sent again after a crash) are skipped.
        let hashes: Vec<&str> = records.iter().map(|r| r.hash.as_str()).collect();
        let stored: HashSet<String> = tx
            .query(
                "SELECT source_hash FROM toolgate_audit WHERE source_hash = ANY($1)",
                &[&hashes],
            )
            .await
            .map_err(err)?
            .into_iter()
            .map(|row| row.get(0))
            .collect();
        let fresh: Vec<(&Shipped, Indexed)> = records
            .iter()
            .filter(|r| !stored.contains(&r.hash))
            .map(|r| (r, Indexed::of(&r.record)))
            .collect();
        if fresh.is_empty() {
            tx.commit().await.map_err(err)?;
            return Ok(0);
        }
        // Lock each session's head, in a fixed order so two writers cannot deadlock.
        let sessions: Vec<&str> = fresh
            .iter()
            .map(|(_, ix)| ix.session.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        tx.execute(
            "INSERT INTO toolgate_audit_heads (session_id, seq, hash)
             SELECT s, 0, $2 FROM unnest($1::text[]) AS s ORDER BY s
             ON CONFLICT (session_id) DO NOTHING",
            &[&sessions, &chain::GENESIS_HASH],
        )
        .await
        .map_err(err)?;
        let mut heads: BTreeMap<String, (i64, String)> = tx
            .query(
                "SELECT session_id, seq, hash FROM toolgate_audit_heads
                 WHERE session_id = ANY($1) ORDER BY session_id FOR UPDATE",
                &[&sessions],
            )
            .await
            .map_err(err)?
            .into_iter()
            .map(|row| (row.get(0), (row.get(1), row.get(2))))
            .collect();
        let mut rows = Rows::default();
        for (r, ix) in &fresh {
            let (seq, prev) = heads
                .get_mut(&ix.session)
                .ok_or_else(|| PgError::Unreachable {
                    target: self.target.shown().to_owned(),
                    detail: format!("the head of session {} was not locked", ix.session),
                })?;
            *seq += 1;
            let (line, hash) = chain::build(*seq as u64, prev, &r.body());
            rows.push(r, ix, *seq, prev, &hash, line);
            *prev = hash;
        }
        rows.insert(&tx).await.map_err(err)?;
        let (ids, seqs, hashes): (Vec<&str>, Vec<i64>, Vec<&str>) = heads
            .iter()
            .map(|(s, (q, h))| (s.as_str(), *q, h.as_str()))
            .fold(
                (vec![], vec![], vec![]),
                |(mut a, mut b, mut c), (s, q, h)| {
                    a.push(s);
                    b.push(q);
                    c.push(h);
                    (a, b, c)
                },
            );
        tx.execute(
            "UPDATE toolgate_audit_heads h SET seq = u.seq, hash = u.hash
             FROM unnest($1::text[], $2::int8[], $3::text[]) AS u(session_id, seq, hash)
             WHERE h.session_id = u.session_id",
            &[&ids, &seqs, &hashes],
        )
        .await
        .map_err(err)?;
        tx.commit().await.map_err(err)?;
        Ok(fresh.len() as u64)
    }
}

/// The columns of the rows to insert, one vector each (inserted with one `unnest`).
#[derive(Default)]
struct Rows {
    session: Vec<String>,
    seq: Vec<i64>,
    prev: Vec<String>,
    hash: Vec<String>,
    line: Vec<String>,
    source: Vec<String>,
    kind: Vec<String>,
    call_id: Vec<Option<String>>,
    ts: Vec<Option<DateTime<Utc>>>,
    tool: Vec<Option<String>>,
    status: Vec<Option<String>>,
    code: Vec<Option<String>>,
    decision: Vec<Option<String>>,
    layer: Vec<Option<String>>,
    rule: Vec<Option<String>>,
    client: Vec<Option<String>>,
    duration: Vec<Option<i64>>,
}

impl Rows {
    fn push(&mut self, r: &Shipped, ix: &Indexed, seq: i64, prev: &str, hash: &str, line: String) {
        self.session.push(ix.session.clone());
        self.seq.push(seq);
        self.prev.push(prev.to_owned());
        self.hash.push(hash.to_owned());
        self.line.push(line);
        self.source.push(r.hash.clone());
        self.kind.push(ix.kind.clone());
        self.call_id.push(ix.call_id.clone());
        self.ts.push(ix.ts);
        self.tool.push(ix.tool.clone());
        self.status.push(ix.status.clone());
        self.code.push(ix.code.clone());
        self.decision.push(ix.decision.clone());
        self.layer.push(ix.layer.clone());
        self.rule.push(ix.rule.clone());
        self.client.push(ix.client.clone());
        self.duration
            .push(ix.duration_us.and_then(|d| i64::try_from(d).ok()));
    }

    async fn insert(
        &self,
        tx: &tokio_postgres::Transaction<'_>,
    ) -> Result<u64, tokio_postgres::Error> {
        tx.execute(
            "INSERT INTO toolgate_audit (session_id, seq, prev, hash, line, source_hash, kind,
                 call_id, ts, tool, status, code, decision, layer, rule, client, duration_us)
             SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[], $5::text[],
                 $6::text[], $7::text[], $8::text[], $9::timestamptz[], $10::text[], $11::text[],
                 $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::int8[])",
            &[
                &self.session,
                &self.seq,
                &self.prev,
                &self.hash,
                &self.line,
                &self.source,
                &self.kind,
                &self.call_id,
                &self.ts,
                &self.tool,
                &self.status,
                &self.code,
                &self.decision,
                &self.layer,
                &self.rule,
                &self.client,
                &self.duration,
            ],
        )
        .await
    }
}

#[async_trait]
impl Destination for PgDestination {
    fn id(&self) -> String {
        self.target.id()
    }

    fn describe(&self) -> String {
        self.target.shown().to_owned()
    }

    fn start_at(&self) -> StartAt {
        // The store should hold every record the log has.
        StartAt::Beginning
    }

    async fn deliver(&self, records: &[Shipped]) -> Result<(), DeliveryError> {
        let mut slot = self.client.lock().await;
        if slot.as_ref().is_none_or(Client::is_closed) {
            let mut client = self
                .target
                .connect()
                .await
                .map_err(|e| DeliveryError::new(e.to_string()))?;
            schema::migrate(&self.target, &mut client)
                .await
                .map_err(|e| DeliveryError::new(e.to_string()))?;
            *slot = Some(client);
        }
        let Some(client) = slot.as_mut() else {
            return Err(DeliveryError::new("no connection"));
        };
        match self.store(client, records).await {
            Ok(stored) => {
                tracing::debug!(
                    stored,
                    sent = records.len(),
                    "audit records stored in PostgreSQL"
                );
                Ok(())
            }
            Err(e) => {
                *slot = None;
                Err(DeliveryError::new(e.to_string()))
            }
        }
    }
}
