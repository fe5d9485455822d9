//! toolgate's state shared between processes and replicas. Today that is rate-limit
//! budgets counted in Redis ([`RedisRateStore`], `--state redis://…`), so that a `client`
//! or `global` limit holds across every process and replica using the same server.
//!
//! A call's limits are checked and counted by one Lua script, atomically: if any limit is
//! full nothing is counted (a refused call does not use up the quota), otherwise the call
//! is counted against all of them. Each budget is a sorted set of the calls in its sliding
//! window, scored by the **server's** clock (`TIME`), so replicas whose clocks disagree
//! still count the same window; it expires with its window, so idle budgets leave nothing
//! behind.
//!
//! When the server cannot be reached the store answers with an error and each limit's
//! `fallback` decides (`deny` by default, see `toolgate_policy::rate`). After a failure the
//! store does not try again for [`RETRY_AFTER`], so a server that hangs costs calls
//! nothing but the fallback; a connection that was lost is re-established on the next try.
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolgate_state::StateError> {
//! use std::sync::Arc;
//! use toolgate_policy::Constraints;
//! let store = toolgate_state::RedisRateStore::open("redis://127.0.0.1:6379/0")?;
//! store.probe().await?; // wrong credentials fail here, at start
//! # let constraints = Constraints::default();
//! let constraints = constraints.with_store(Arc::new(store));
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use toolgate_policy::rate::{RateHit, RateStore, RateStoreError, RateVerdict};

/// Longest wait for a TCP connection to the server: a LAN round trip is well under a
/// millisecond, so this only bounds a server that does not answer.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// Longest wait for a reply to one script call; beyond it the call gets the fallback.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);

/// After a failure, how long calls get the fallback at once instead of trying the server.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// KEYS: one sorted set per limit. ARGV: limit and window (ms) per key, then the call's
/// unique member. Returns `{0, 0}` when counted, else `{i, wait_ms}` for the first full
/// limit (1-based).
const HIT_SCRIPT: &str = r"
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS
for i = 1, n do
  local limit = tonumber(ARGV[2 * i - 1])
  local window = tonumber(ARGV[2 * i])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  if redis.call('ZCARD', KEYS[i]) >= limit then
    local oldest = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
    local wait = window
    if oldest[2] then wait = window - (now - tonumber(oldest[2])) end
    return {i, wait}
  end
end
for i = 1, n do
  redis.call('ZADD', KEYS[i], now, ARGV[2 * n + 1])
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2 * i]))
end
return {0, 0}
";

/// Why the shared state cannot be used. Each message names the server (never its
/// password) and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The `--state` URL is not a Redis URL this build can use.
    #[error(
        "--state {url}: {reason}; expected redis://[USER][:PASSWORD@]HOST[:PORT][/DB] or \
         redis+unix:///PATH"
    )]
    BadUrl {
        /// The URL, with any password replaced.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server refused the credentials.
    #[error(
        "the Redis server at {target} refused the credentials ({detail}); fix the user and password in --state"
    )]
    Auth {
        /// Where.
        target: String,
        /// What it said.
        detail: String,
    },
    /// The server did not answer.
    #[error("cannot reach the Redis server at {target}: {detail}")]
    Unreachable {
        /// Where.
        target: String,
        /// What went wrong.
        detail: String,
    },
}

impl StateError {
    /// Whether this is about the configuration (fix and restart) rather than a server that
    /// is down for now (the fallback applies until it is back).
    pub fn is_config(&self) -> bool {
        matches!(self, StateError::BadUrl { .. } | StateError::Auth { .. })
    }
}

/// Rate-limit budgets in a Redis server (see the crate doc).
pub struct RedisRateStore {
    client: redis::Client,
    target: String,
    script: redis::Script,
    /// The connection, once made; dropped after a failure so the next try connects afresh.
    conn: Mutex<Option<ConnectionManager>>,
    /// The last failure, while calls get the fallback without trying.
    down: Mutex<Option<(Instant, String)>>,
}

impl std::fmt::Debug for RedisRateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRateStore")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl RedisRateStore {
    /// Checks the URL; connects on first use (or [`RedisRateStore::probe`]).
    pub fn open(url: &str) -> Result<Self, StateError> {
        let client = redis::Client::open(url).map_err(|e| StateError::BadUrl {
            url: hide_password(url),
            reason: e.to_string(),
        })?;
        let info = client.get_connection_info();
        let target = format!("redis://{}/{}", info.addr(), info.redis_settings().db());
        Ok(Self {
            client,
            target,
            script: redis::Script::new(HIT_SCRIPT),
            conn: Mutex::new(None),
            down: Mutex::new(None),
        })
    }

    /// Connects and pings: a configuration error (wrong password) is an error here, at
    /// start; so is a server that does not answer, which callers may take as a warning
    /// (the fallback applies until it is up). The connection is not kept, so this may run
    /// on a runtime other than the one that will use the store.
    pub async fn probe(&self) -> Result<(), StateError> {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT));
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| self.classify(&e))?;
        redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .map(|_| ())
            .map_err(|e| self.classify(&e))
    }

    /// What a front door does at start: [`open`](Self::open), then [`probe`](Self::probe)
    /// (on a thread of its own, so it may be called from anywhere). A configuration error
    /// is returned; a server that is down is logged and the store returned, each limit's
    /// fallback applying until the server is up.
    pub fn open_checked(url: &str) -> Result<Self, StateError> {
        let store = Self::open(url)?;
        let probed = std::thread::scope(|s| {
            s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| StateError::Unreachable {
                        target: store.target.clone(),
                        detail: format!("cannot start a runtime to check it: {e}"),
                    })
                    .and_then(|rt| rt.block_on(store.probe()))
            })
            .join()
            .unwrap_or_else(|_| {
                Err(StateError::Unreachable {
                    target: store.target.clone(),
                    detail: "the check panicked".into(),
                })
            })
        });
        match probed {
            Ok(()) => Ok(store),
            Err(e) if e.is_config() => Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "shared state unavailable at start; rate limits apply their fallback until it is back");
                Ok(store)
            }
        }
    }

    async fn connection(&self) -> redis::RedisResult<ConnectionManager> {
        if let Some(conn) = &*self.conn.lock().unwrap_or_else(PoisonError::into_inner) {
            return Ok(conn.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(1);
        let conn = ConnectionManager::new_with_config(self.client.clone(), config).await?;
        *self.conn.lock().unwrap_or_else(PoisonError::into_inner) = Some(conn.clone());
        Ok(conn)
    }

    fn classify(&self, e: &redis::RedisError) -> StateError {
        let detail = e.to_string();
        let auth = e.kind() == redis::ErrorKind::AuthenticationFailed
            || [
                "NOAUTH",
                "WRONGPASS",
                "invalid password",
                "invalid username-password",
            ]
            .iter()
            .any(|w| detail.contains(w));
        if auth {
            StateError::Auth {
                target: self.target.clone(),
                detail,
            }
        } else {
            StateError::Unreachable {
                target: self.target.clone(),
                detail,
            }
        }
    }

    async fn try_hit(&self, hits: &[RateHit]) -> redis::RedisResult<RateVerdict> {
        let mut conn = self.connection().await?;
        let mut invocation = self.script.prepare_invoke();
        for h in hits {
            invocation.key(&h.key);
        }
        for h in hits {
            invocation
                .arg(h.limit)
                .arg(u64::try_from(h.window.as_millis()).unwrap_or(u64::MAX));
        }
        invocation.arg(uuid::Uuid::new_v4().to_string());
        let (index, wait_ms): (i64, i64) = invocation.invoke_async(&mut conn).await?;
        Ok(match usize::try_from(index) {
            Ok(0) | Err(_) => RateVerdict::Admitted,
            Ok(i) => RateVerdict::Refused {
                hit: i - 1,
                retry_after: Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0)),
            },
        })
    }
}

#[async_trait]
impl RateStore for RedisRateStore {
    fn describe(&self) -> String {
        self.target.clone()
    }

    async fn hit(&self, hits: &[RateHit]) -> Result<RateVerdict, RateStoreError> {
        if let Some((since, message)) = &*self.down.lock().unwrap_or_else(PoisonError::into_inner)
            && since.elapsed() < RETRY_AFTER
        {
            return Err(RateStoreError {
                message: message.clone(),
            });
        }
        match self.try_hit(hits).await {
            Ok(verdict) => {
                *self.down.lock().unwrap_or_else(PoisonError::into_inner) = None;
                Ok(verdict)
            }
            Err(e) => {
                if !matches!(e.kind(), redis::ErrorKind::Server(_)) {
                    // Not an answer from the server: connect afresh next time.
                    *self.conn.lock().unwrap_or_else(PoisonError::into_inner) = None;
                }
                let message = self.classify(&e).to_string();
                *self.down.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some((Instant::now(), message.clone()));
                Err(RateStoreError { message })
            }
        }
    }
}

/// The URL with the password (if any) replaced, for messages.
fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_are_refused_without_showing_the_password() {
        for url in ["http://x", "redis://:hunter2@[bad", "not a url"] {
            let e = RedisRateStore::open(url).unwrap_err();
            assert!(e.is_config());
            let text = e.to_string();
            assert!(!text.contains("hunter2"), "{text}");
            assert!(text.contains("expected redis://"), "{text}");
        }
        let ok = RedisRateStore::open("redis://:hunter2@127.0.0.1:1/3").unwrap();
        assert_eq!(ok.describe(), "redis://127.0.0.1:1/3");
    }
}
