//! Rate limits counted in a real Redis server (started by the test; `redis-server` must be
//! installed — the test fails, not skips, when it is not).

use std::sync::Arc;

use serde_json::json;
use toolgate_policy::Constraints;
use toolgate_policy::constraints::ConstraintConfig;
use toolgate_policy::rate::{RateScopes, RateStore};
use toolgate_state::{RETRY_AFTER, RedisRateStore, StateError};
use toolgate_test_servers::Redis;

fn limits(spec: serde_json::Value) -> Vec<(String, ConstraintConfig, String)> {
    spec.as_object()
        .unwrap()
        .iter()
        .map(|(tool, rate)| {
            let config = ConstraintConfig {
                rate: Some(serde_json::from_value(rate.clone()).unwrap()),
                ..Default::default()
            };
            (tool.clone(), config, "test settings".to_owned())
        })
        .collect()
}

/// A gate's constraints counting in `url`, as one process or replica would have them.
fn replica(url: &str, spec: &serde_json::Value) -> Constraints {
    let store = RedisRateStore::open(url).unwrap();
    Constraints::new(limits(spec.clone()), None).with_store(Arc::new(store))
}

fn session(id: &str) -> RateScopes<'_> {
    RateScopes {
        session: id,
        client: "agent",
    }
}

#[tokio::test]
async fn a_global_limit_holds_across_replicas_even_when_they_race() {
    let redis = Redis::start();
    let spec = json!({"Bash": {"calls": 10, "perSeconds": 60, "scope": "global"}});
    let replicas: Vec<Arc<Constraints>> = (0..4)
        .map(|_| Arc::new(replica(&redis.url(), &spec)))
        .collect();
    let tasks: Vec<_> = (0..60)
        .map(|i| {
            let c = Arc::clone(&replicas[i % 4]);
            tokio::spawn(async move {
                let id = format!("s{i}");
                c.admit("Bash", &session(&id)).await.is_ok()
            })
        })
        .collect();
    let mut admitted = 0;
    for t in tasks {
        admitted += usize::from(t.await.unwrap());
    }
    assert_eq!(admitted, 10, "a global budget of 10 across 4 replicas");
    // Other tools are not limited.
    assert!(replicas[0].admit("Read", &session("x")).await.is_ok());
}

#[tokio::test]
async fn scopes_and_refusals_count_as_in_memory() {
    let redis = Redis::start();
    let spec = json!({
        "Bash": {"calls": 2, "perSeconds": 60},
        "*": {"calls": 3, "perSeconds": 60, "scope": "client"}
    });
    let a = replica(&redis.url(), &spec);
    let b = replica(&redis.url(), &spec);
    // session scope: per session, across replicas.
    assert!(a.admit("Bash", &session("one")).await.is_ok());
    assert!(b.admit("Bash", &session("one")).await.is_ok());
    let err = a.admit("Bash", &session("one")).await.unwrap_err();
    assert!(
        err.message.contains("at most 2 call(s) of Bash per 60 s"),
        "{}",
        err.message
    );
    // The refused call did not count against the client budget: one left.
    assert!(b.admit("Read", &session("two")).await.is_ok());
    let err = a.admit("Read", &session("three")).await.unwrap_err();
    assert!(err.message.contains("for this client"), "{}", err.message);
    // Another client has its own budget.
    let other = RateScopes {
        session: "four",
        client: "other-agent",
    };
    assert!(a.admit("Read", &other).await.is_ok());
    // Keys expire with their window.
    let ttl_ms = redis_ttl_ms(&redis, "Bash");
    assert!(ttl_ms > 0 && ttl_ms <= 60_000, "{ttl_ms}");
}

/// The TTL of the session-scoped budget of `tool`, read with a raw client.
fn redis_ttl_ms(redis: &Redis, tool: &str) -> i64 {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("toolgate:rate:*")
        .query(&mut conn)
        .unwrap();
    let key = keys
        .iter()
        .find(|k| k.contains(&format!("\"{tool}\"")) && k.contains("\"session\""))
        .unwrap_or_else(|| panic!("no key for {tool} in {keys:?}"));
    redis::cmd("PTTL").arg(key).query(&mut conn).unwrap()
}

#[tokio::test]
async fn a_server_that_goes_away_gets_each_limits_fallback_and_then_counts_again() {
    let mut redis = Redis::start();
    let deny = replica(
        &redis.url(),
        &json!({"Bash": {"calls": 100, "perSeconds": 60, "scope": "global"}}),
    );
    let local = replica(
        &redis.url(),
        &json!({"Bash": {"calls": 1, "perSeconds": 60, "scope": "global", "fallback": "local"}}),
    );
    assert!(deny.admit("Bash", &session("s")).await.is_ok());
    redis.stop();
    let err = deny.admit("Bash", &session("s")).await.unwrap_err();
    assert!(
        err.message.contains("cannot be reached") && err.message.contains("fallback deny"),
        "{}",
        err.message
    );
    let note = local.admit("Bash", &session("s")).await.unwrap();
    assert!(
        note.as_deref()
            .is_some_and(|n| n.contains("counted in this process only")),
        "{note:?}"
    );
    assert!(
        local.admit("Bash", &session("s")).await.is_err(),
        "still limited locally"
    );
    redis.resume();
    tokio::time::sleep(RETRY_AFTER + std::time::Duration::from_millis(100)).await;
    // Back: counted in Redis again (a fresh server: the budget is empty).
    assert_eq!(deny.admit("Bash", &session("s")).await.unwrap(), None);
}

#[tokio::test]
async fn wrong_credentials_are_a_configuration_error_at_start() {
    let redis = Redis::start_with_password("right-password");
    let good = RedisRateStore::open(&redis.url()).unwrap();
    good.probe().await.unwrap();
    let wrong_url = format!("redis://:wrong-password@127.0.0.1:{}/0", redis.port());
    let e = RedisRateStore::open(&wrong_url)
        .unwrap()
        .probe()
        .await
        .unwrap_err();
    assert!(matches!(e, StateError::Auth { .. }) && e.is_config(), "{e}");
    assert!(!e.to_string().contains("wrong-password"), "{e}");
    let none = format!("redis://127.0.0.1:{}/0", redis.port());
    let e = RedisRateStore::open(&none)
        .unwrap()
        .probe()
        .await
        .unwrap_err();
    assert!(
        e.is_config(),
        "no password for a server that wants one: {e}"
    );
}

#[tokio::test]
async fn a_server_that_is_down_at_start_is_not_a_configuration_error() {
    let port = toolgate_test_servers::free_port();
    let store = RedisRateStore::open(&format!("redis://127.0.0.1:{port}/0")).unwrap();
    let e = store.probe().await.unwrap_err();
    assert!(
        matches!(e, StateError::Unreachable { .. }) && !e.is_config(),
        "{e}"
    );
    assert_eq!(store.describe(), format!("redis://127.0.0.1:{port}/0"));
}
