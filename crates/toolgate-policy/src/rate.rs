//! Rate limits: sliding windows, counted in this process or in a store that several
//! processes share (`toolgate-state`'s Redis store implements [`RateStore`]).
//!
//! A limit's `scope` says whose calls share its budget:
//!
//! | scope | one budget per | key part |
//! |---|---|---|
//! | `session` (default) | gate session (an `exec` run, an MCP session, a `--session-id`) | the session id |
//! | `client` | front-door client: the MCP client's name, else the profile or `cli` | the client name |
//! | `global` | everything that counts in the same place | `*` |
//!
//! In memory, "the same place" is this process; with a shared store it is every process
//! and replica using that store, so a `global` limit holds across a fleet.
//!
//! A shared store that cannot be reached never makes a limit disappear: each limit's
//! `fallback` is `deny` (the default: calls under the limit are refused while the store is
//! down) or `local` (counted in this process until the store is back, and the audit record
//! says so).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A rate limit: at most `calls` calls per `perSeconds` seconds, per `scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateConfig {
    /// Calls allowed in the window.
    pub calls: u32,
    /// The window, in seconds.
    pub per_seconds: u64,
    /// Whose calls share the budget.
    #[serde(default, skip_serializing_if = "is_default")]
    pub scope: RateScope,
    /// What happens while a shared store cannot be reached.
    #[serde(default, skip_serializing_if = "is_default")]
    pub fallback: RateFallback,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// Whose calls share a limit's budget (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateScope {
    /// One budget per gate session.
    #[default]
    Session,
    /// One budget per client name.
    Client,
    /// One budget for every call counted in the same place.
    Global,
}

impl RateScope {
    /// The name in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            RateScope::Session => "session",
            RateScope::Client => "client",
            RateScope::Global => "global",
        }
    }
}

/// What a limit does while its shared store cannot be reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateFallback {
    /// Refuse calls under the limit (`rate_limited`, saying why) until the store is back.
    #[default]
    Deny,
    /// Count in this process meanwhile: each process then allows up to the full budget.
    Local,
}

/// Who a call belongs to, for picking the budget of each scope.
#[derive(Debug, Clone, Copy)]
pub struct RateScopes<'a> {
    /// The gate session's id.
    pub session: &'a str,
    /// The client (or profile) name.
    pub client: &'a str,
}

impl RateScopes<'_> {
    fn id(&self, scope: RateScope) -> &str {
        match scope {
            RateScope::Session => self.session,
            RateScope::Client => self.client,
            RateScope::Global => "*",
        }
    }
}

/// One limit a call must pass: at most `limit` counted calls under `key` in any `window`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateHit {
    /// The budget's name in the store: the same in every process with the same settings.
    pub key: String,
    /// Calls allowed in the window.
    pub limit: u32,
    /// The sliding window.
    pub window: Duration,
}

impl RateHit {
    /// The hit for `config` set on tool `pattern`, for the call described by `scopes`.
    pub fn new(pattern: &str, config: &RateConfig, scopes: &RateScopes<'_>) -> Self {
        // A JSON array keeps the parts apart whatever characters an id holds.
        let parts = serde_json::json!([
            config.scope.as_str(),
            scopes.id(config.scope),
            pattern,
            config.calls,
            config.per_seconds
        ]);
        RateHit {
            key: format!("{KEY_PREFIX}{parts}"),
            limit: config.calls,
            window: Duration::from_secs(config.per_seconds),
        }
    }
}

/// Prefix of every rate-limit key, so a shared store can hold other data too.
pub const KEY_PREFIX: &str = "toolgate:rate:";

/// What a store decided about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateVerdict {
    /// Counted against every limit.
    Admitted,
    /// Limit number `hit` is full; nothing was counted.
    Refused {
        /// Index into the hits given.
        hit: usize,
        /// When the oldest counted call leaves that window.
        retry_after: Duration,
    },
}

/// A shared store could not answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct RateStoreError {
    /// What went wrong, in words (no credentials).
    pub message: String,
}

/// Where rate limits are counted.
#[async_trait]
pub trait RateStore: Send + Sync + std::fmt::Debug {
    /// Where, for messages (no credentials).
    fn describe(&self) -> String;

    /// Atomically: if any limit is full, counts nothing and says which; otherwise counts one
    /// call against every limit.
    async fn hit(&self, hits: &[RateHit]) -> Result<RateVerdict, RateStoreError>;
}

/// After this many calls, windows that have run empty are dropped: sessions end, and their
/// budgets would otherwise stay in memory for the life of the process.
const SWEEP_EVERY: u64 = 4096;

/// Sliding windows in this process's memory.
#[derive(Debug, Default)]
pub struct MemoryRateStore {
    windows: Mutex<HashMap<String, Window>>,
    calls: AtomicU64,
}

#[derive(Debug)]
struct Window {
    span: Duration,
    times: VecDeque<Instant>,
}

impl MemoryRateStore {
    /// [`RateStore::hit`] at a given instant.
    pub fn hit_at(&self, hits: &[RateHit], now: Instant) -> RateVerdict {
        let mut windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        if self.calls.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            windows.retain(|_, w| {
                w.times
                    .back()
                    .is_some_and(|t| now.duration_since(*t) < w.span)
            });
        }
        for (i, h) in hits.iter().enumerate() {
            let Some(q) = windows.get_mut(&h.key).map(|w| &mut w.times) else {
                if h.limit == 0 {
                    return RateVerdict::Refused {
                        hit: i,
                        retry_after: h.window,
                    };
                }
                continue;
            };
            while q
                .front()
                .is_some_and(|t| now.duration_since(*t) >= h.window)
            {
                q.pop_front();
            }
            if q.len() >= h.limit as usize {
                let retry_after = q.front().map_or(h.window, |t| {
                    h.window.saturating_sub(now.duration_since(*t))
                });
                return RateVerdict::Refused {
                    hit: i,
                    retry_after,
                };
            }
        }
        for h in hits {
            windows
                .entry(h.key.clone())
                .or_insert_with(|| Window {
                    span: h.window,
                    times: VecDeque::new(),
                })
                .times
                .push_back(now);
        }
        RateVerdict::Admitted
    }
}

#[async_trait]
impl RateStore for MemoryRateStore {
    fn describe(&self) -> String {
        "this process".to_owned()
    }

    async fn hit(&self, hits: &[RateHit]) -> Result<RateVerdict, RateStoreError> {
        Ok(self.hit_at(hits, Instant::now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(calls: u32, scope: RateScope) -> RateConfig {
        RateConfig {
            calls,
            per_seconds: 10,
            scope,
            fallback: RateFallback::Deny,
        }
    }

    #[test]
    fn keys_separate_scopes_and_ids_whatever_they_contain() {
        let a = RateScopes {
            session: "s\",\"1",
            client: "c",
        };
        let b = RateScopes {
            session: "s",
            client: "c",
        };
        let k = |s: &RateScopes<'_>, scope| RateHit::new("Bash", &cfg(1, scope), s).key;
        assert_ne!(k(&a, RateScope::Session), k(&b, RateScope::Session));
        assert_eq!(k(&a, RateScope::Client), k(&b, RateScope::Client));
        assert_eq!(k(&a, RateScope::Global), k(&b, RateScope::Global));
        assert_ne!(k(&a, RateScope::Client), k(&a, RateScope::Global));
        assert!(k(&a, RateScope::Global).starts_with(KEY_PREFIX));
    }

    #[test]
    fn the_sweep_drops_only_empty_windows() {
        let store = MemoryRateStore::default();
        let t0 = Instant::now();
        let old = RateHit {
            key: "old".into(),
            limit: 5,
            window: Duration::from_secs(1),
        };
        assert_eq!(
            store.hit_at(std::slice::from_ref(&old), t0),
            RateVerdict::Admitted
        );
        let later = t0 + Duration::from_secs(2);
        let live = RateHit {
            key: "live".into(),
            limit: 1,
            window: Duration::from_secs(3600),
        };
        for _ in 0..SWEEP_EVERY {
            let _ = store.hit_at(std::slice::from_ref(&live), later);
        }
        let windows = store.windows.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(!windows.contains_key("old"), "an expired window is swept");
        assert_eq!(
            windows["live"].times.len(),
            1,
            "refused calls are not counted"
        );
    }

    #[test]
    fn settings_spell_scope_and_fallback_and_old_files_still_parse() {
        let old: RateConfig =
            serde_json::from_value(serde_json::json!({"calls": 3, "perSeconds": 60}))
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (old.scope, old.fallback),
            (RateScope::Session, RateFallback::Deny)
        );
        assert_eq!(
            serde_json::to_value(old).unwrap_or_default(),
            serde_json::json!({"calls": 3, "perSeconds": 60})
        );
        let new: RateConfig = serde_json::from_value(serde_json::json!(
            {"calls": 3, "perSeconds": 60, "scope": "global", "fallback": "local"}))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (new.scope, new.fallback),
            (RateScope::Global, RateFallback::Local)
        );
        let bad = serde_json::from_value::<RateConfig>(serde_json::json!(
            {"calls": 3, "perSeconds": 60, "scope": "planet"}));
        assert!(bad.is_err());
    }
}
