//! Many replicas (issue 26, item 6): four `toolgate serve --http` processes share one
//! PostgreSQL audit store and one Redis rate-limit store, as replicas behind a load
//! balancer would. The test starts real servers (toolgate-test-servers; .ci/run installs
//! them), drives a few thousand mixed MCP calls through the replicas, kills one with
//! SIGKILL in the middle and starts it again on the same local log, and checks:
//!
//! - every answered call has exactly one audit record in PostgreSQL, by call id, saying
//!   what the client was told — including the calls the killed replica answered before it
//!   died, whose records its local log held and its restart shipped;
//! - no call id is stored twice, answered or not (a call cut off by the kill has one
//!   record if its record was written before the kill, else none: the client got no
//!   answer either way);
//! - `toolgate audit verify postgres://…` verifies every session's chain;
//! - the `scope: global` rate limit held across the replicas: no more Globs allowed than
//!   the budget, in the store and in the answers.
//!
//! It prints calls/s with one replica and with four, for the report; it asserts nothing
//! about time.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::mcp_http::{McpHttp, Unanswered, code};
use toolgate_test_servers::{Postgres, Redis};

const REPLICAS: usize = 4;
/// Calls in flight at once, across the replicas (the load balancer's clients).
const CONCURRENCY: usize = 16;
/// Calls in each throughput phase (one replica, then four), and in the phase with the kill.
const PHASE_CALLS: usize = 600;
const CHAOS_CALLS: usize = 1800;
/// Globs allowed in the whole run, for every replica together.
const GLOB_BUDGET: u64 = 150;
/// Generous bound on anything expected "soon": a hang fails the test instead of CI.
const PATIENCE: Duration = Duration::from_secs(60);

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    c.env_remove("TOOLGATE_LOG").env("NO_COLOR", "1").env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("toolgate-tests-no-user-config"),
    );
    c
}

/// One `serve --http` replica: its own port and local log, the shared stores.
struct Replica {
    args: Vec<String>,
    port: u16,
    log: PathBuf,
    child: Option<Child>,
}

impl Replica {
    fn start(&mut self) {
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log.with_extension("stderr"))
            .unwrap();
        let child = bin()
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                let log = std::fs::read_to_string(self.log.with_extension("stderr"));
                panic!(
                    "replica on {} exited at start ({status}): {log:?}",
                    self.port
                );
            }
            assert!(
                start.elapsed() < PATIENCE,
                "replica {} never listened",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: no shutdown, no draining; what it had not shipped waits in its log.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// SIGTERM and wait: the replica ships what it can (up to 2 s) and exits.
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill(2) on our own child's pid; no memory is involved.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            c.wait().unwrap();
        }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The call with index `i`: a mix of allowed, rate-limited, denied and malformed calls.
fn call_for(i: usize) -> (&'static str, Value) {
    match i % 6 {
        0 => ("Read", json!({"file_path": "notes.txt"})),
        1 => ("Grep", json!({"pattern": "alpha"})),
        2 => ("Glob", json!({"pattern": "*.txt"})),
        3 => ("Bash", json!({"command": "echo hi"})),
        4 => ("Read", json!({"file_path": 7})),
        _ => ("Nope", json!({})),
    }
}

/// What the client saw for one call.
#[derive(Debug, Clone)]
struct Sent {
    tool: &'static str,
    replica: usize,
    /// The result's code (`ok`, `denied`, …), or `None` when no answer came.
    answer: Option<String>,
}

type Outcomes = Arc<Mutex<BTreeMap<String, Sent>>>;

/// Sends `count` calls (ids `PREFIX-N`) over `CONCURRENCY` clients, call `n` to replica
/// `route(n)`; returns the seconds it took.
async fn drive(
    prefix: &str,
    count: usize,
    bases: Arc<Vec<String>>,
    route: fn(usize) -> usize,
    outcomes: Outcomes,
    answered: Arc<std::sync::atomic::AtomicUsize>,
) -> f64 {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(CONCURRENCY)
        .build()
        .unwrap();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..CONCURRENCY {
        let (client, bases, outcomes, answered) = (
            client.clone(),
            Arc::clone(&bases),
            Arc::clone(&outcomes),
            Arc::clone(&answered),
        );
        let prefix = prefix.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut sessions: HashMap<usize, McpHttp> = HashMap::new();
            for n in (worker..count).step_by(CONCURRENCY) {
                let replica = route(n);
                let id = format!("{prefix}-{n}");
                let (tool, input) = call_for(n);
                let mut answer = None;
                if let std::collections::hash_map::Entry::Vacant(slot) = sessions.entry(replica) {
                    let name = format!("worker-{worker}");
                    if let Ok(s) = McpHttp::connect(&client, &bases[replica], &name).await {
                        slot.insert(s);
                    }
                }
                if let Some(session) = sessions.get(&replica) {
                    match session.call(&id, tool, input).await {
                        Ok(result) => answer = Some(code(&result)),
                        Err(Unanswered::SessionGone | Unanswered::Transport(_)) => {
                            sessions.remove(&replica);
                        }
                        Err(e @ Unanswered::Http(..)) => panic!("{id}: {e:?}"),
                    }
                }
                if answer.is_some() {
                    answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                outcomes.lock().unwrap().insert(
                    id,
                    Sent {
                        tool,
                        replica,
                        answer,
                    },
                );
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    started.elapsed().as_secs_f64()
}

fn audit(args: &[&str]) -> std::process::Output {
    bin().arg("audit").args(args).output().unwrap()
}

/// Every record in the store, as `audit query` prints them.
fn stored(pg_url: &str) -> Vec<Value> {
    let out = audit(&["query", pg_url]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn local_calls(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == "call")
        .count()
}

/// Records of `log` after the PostgreSQL shipper's checkpoint (all of them before its
/// first delivery).
fn backlog(log: &Path) -> usize {
    let ship = log.with_file_name(format!(
        "{}.ship",
        log.file_name().unwrap().to_string_lossy()
    ));
    let delivered = std::fs::read_dir(&ship)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str::<Value>(&t).ok())
        .filter(|cp| {
            cp["destination"]
                .as_str()
                .is_some_and(|d| d.starts_with("postgres"))
        })
        .filter_map(|cp| cp["seq"].as_u64())
        .max()
        .unwrap_or(0);
    let total = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .count() as u64;
    total.saturating_sub(delivered) as usize
}

#[test]
fn four_replicas_share_one_audit_store_and_one_budget_through_a_kill() {
    let pg = Postgres::start();
    let redis = Redis::start();
    let pg_url = pg.url("postgres");
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let settings = dir.path().join("fleet.json");
    std::fs::write(
        &settings,
        json!({
            "permissions": {"allow": ["Read", "Grep", "Glob"], "deny": ["Bash"]},
            "toolgate": {"constraints": {"Glob": {"rate": {
                "calls": GLOB_BUDGET, "perSeconds": 3600, "scope": "global"}}}}
        })
        .to_string(),
    )
    .unwrap();

    let mut replicas: Vec<Replica> = (0..REPLICAS)
        .map(|i| {
            let port = toolgate_test_servers::free_port();
            let log = dir.path().join(format!("replica-{i}.jsonl"));
            let args: Vec<String> = [
                "serve",
                "--http",
                &format!("127.0.0.1:{port}"),
                "--workspace",
                &ws.display().to_string(),
                "--settings",
                &settings.display().to_string(),
                "--audit",
                &log.display().to_string(),
                "--audit",
                &pg_url,
                "--state",
                &redis.url(),
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
            Replica {
                args,
                port,
                log,
                child: None,
            }
        })
        .collect();
    for r in &mut replicas {
        r.start();
    }
    let bases = Arc::new(replicas.iter().map(Replica::base).collect::<Vec<_>>());
    let replicas = Arc::new(Mutex::new(replicas));
    let outcomes: Outcomes = Arc::default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // Throughput: the same calls through one replica, then spread over four.
    let answered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let one = rt.block_on(drive(
        "one",
        PHASE_CALLS,
        Arc::clone(&bases),
        |_| 0,
        Arc::clone(&outcomes),
        Arc::clone(&answered),
    ));
    let four = rt.block_on(drive(
        "four",
        PHASE_CALLS,
        Arc::clone(&bases),
        |n| n % REPLICAS,
        Arc::clone(&outcomes),
        Arc::clone(&answered),
    ));
    println!(
        "throughput, {PHASE_CALLS} calls, {CONCURRENCY} in flight: 1 replica {:.0} calls/s, \
         {REPLICAS} replicas {:.0} calls/s ({} cores; debug build unless --release)",
        PHASE_CALLS as f64 / one,
        PHASE_CALLS as f64 / four,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // The kill: once a third of the chaos phase is answered, SIGKILL the last replica, and
    // start it again on the same local log half a second later.
    let victim = REPLICAS - 1;
    let before_chaos = answered.load(std::sync::atomic::Ordering::Relaxed);
    let killer = {
        let replicas = Arc::clone(&replicas);
        let answered = Arc::clone(&answered);
        std::thread::spawn(move || {
            let start = Instant::now();
            while answered.load(std::sync::atomic::Ordering::Relaxed)
                < before_chaos + CHAOS_CALLS / 3
            {
                assert!(start.elapsed() < PATIENCE, "the chaos phase stalled");
                std::thread::sleep(Duration::from_millis(5));
            }
            let log = {
                let mut all = replicas.lock().unwrap();
                all[victim].kill();
                all[victim].log.clone()
            };
            println!(
                "killed replica {victim}: {} records in its local log, {} of them not yet in \
                 PostgreSQL (its checkpoint)",
                local_calls(&log),
                backlog(&log)
            );
            std::thread::sleep(Duration::from_millis(500));
            replicas.lock().unwrap()[victim].start();
        })
    };
    rt.block_on(drive(
        "chaos",
        CHAOS_CALLS,
        Arc::clone(&bases),
        |n| n % REPLICAS,
        Arc::clone(&outcomes),
        Arc::clone(&answered),
    ));
    killer.join().unwrap();

    // Wait until every record of every local log (the restarted replica's backlog too) is
    // in the store, then stop the replicas.
    let logs: Vec<PathBuf> = replicas
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.log.clone())
        .collect();
    let start = Instant::now();
    let mut records = loop {
        let records = stored(&pg_url);
        let in_store = records.iter().filter(|r| r["kind"] == "call").count();
        let local: usize = logs.iter().map(|l| local_calls(l)).sum();
        if in_store >= local {
            break records;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the store has {in_store} call records, the local logs {local}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    for r in replicas.lock().unwrap().iter_mut() {
        r.stop();
    }
    records.retain(|r| r["kind"] == "call");

    let outcomes = outcomes.lock().unwrap().clone();
    let total = outcomes.len();
    assert_eq!(total, 2 * PHASE_CALLS + CHAOS_CALLS);
    let unanswered: Vec<&String> = outcomes
        .iter()
        .filter(|(_, s)| s.answer.is_none())
        .map(|(id, _)| id)
        .collect();
    let killed_answered = outcomes
        .iter()
        .filter(|(id, s)| id.starts_with("chaos") && s.replica == victim && s.answer.is_some())
        .count();
    println!(
        "{total} calls: {} answered, {} unanswered (sent to the killed replica while it was \
         down or in flight at the kill); the killed replica answered {killed_answered} chaos calls",
        total - unanswered.len(),
        unanswered.len()
    );
    assert!(
        killed_answered > 0,
        "the victim answered nothing in the chaos phase"
    );
    assert!(
        !unanswered.is_empty(),
        "the kill cut nothing off: it came too late"
    );

    // Exactly one record per answered call, saying what the client was told; none twice.
    let mut by_id: HashMap<&str, Vec<&Value>> = HashMap::new();
    for r in &records {
        by_id
            .entry(r["call_id"].as_str().unwrap())
            .or_default()
            .push(r);
    }
    for (id, rs) in &by_id {
        assert_eq!(
            rs.len(),
            1,
            "call {id} is stored {} times: {rs:?}",
            rs.len()
        );
        assert!(
            outcomes.contains_key(*id),
            "a record for a call never sent: {id}"
        );
    }
    for (id, sent) in &outcomes {
        let Some(answer) = &sent.answer else { continue };
        let Some(rs) = by_id.get(id.as_str()) else {
            panic!("answered call {id} ({sent:?}) has no record in PostgreSQL");
        };
        let recorded = rs[0]["code"].as_str().unwrap_or("ok");
        assert_eq!(
            recorded, answer,
            "call {id}: told {answer}, recorded {recorded}"
        );
    }

    // The global budget held across the replicas.
    let globs_allowed = records
        .iter()
        .filter(|r| r["tool"] == "Glob" && r["status"] == "ok")
        .count() as u64;
    let answered_allowed = outcomes
        .values()
        .filter(|s| s.tool == "Glob" && s.answer.as_deref() == Some("ok"))
        .count() as u64;
    let limited = outcomes
        .values()
        .filter(|s| s.answer.as_deref() == Some("rate_limited"))
        .count();
    println!(
        "Glob: budget {GLOB_BUDGET}, {globs_allowed} allowed across {REPLICAS} replicas, \
         {limited} refused as rate_limited"
    );
    assert!(globs_allowed <= GLOB_BUDGET);
    assert!(answered_allowed <= GLOB_BUDGET);
    let glob_unanswered = unanswered
        .iter()
        .filter(|id| outcomes[**id].tool == "Glob")
        .count() as u64;
    assert!(
        answered_allowed + glob_unanswered >= GLOB_BUDGET,
        "the budget was not used up: {answered_allowed} allowed"
    );
    assert!(limited > 0);

    // Every session's chain verifies.
    let verify = audit(&["verify", &pg_url]);
    assert!(
        verify.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
}
