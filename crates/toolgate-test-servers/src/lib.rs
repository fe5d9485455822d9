//! Throwaway PostgreSQL and Redis servers for toolgate's tests: each test starts its own,
//! on loopback, with its data in a temp dir, and stops it when the handle drops. And a
//! fixture OpenTelemetry collector ([`Collector`]) that decodes what it receives and can
//! be told to fail.
//!
//! The servers come from the distribution's packages (`postgresql`, `redis-server`; CI
//! installs them in `.ci/run`). A test that needs a server that is not installed fails
//! with a message saying what to install: it never skips, so a missing package cannot
//! make a suite look green.
//!
//! PostgreSQL refuses to run as root, and CI runs as root: then `initdb` and `pg_ctl` run as
//! the `postgres` user the package creates (`runuser`), in a directory handed to it.
//!
//! ```no_run
//! let pg = toolgate_test_servers::Postgres::start();
//! let url = pg.url("postgres"); // postgres://toolgate:…@127.0.0.1:PORT/postgres
//! let redis = toolgate_test_servers::Redis::start();
//! let url = redis.url(); // redis://127.0.0.1:PORT/0
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod collector;

pub use collector::{Collector, Log, Span};

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to accept connections before the test fails.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The password of the `toolgate` role in the test PostgreSQL.
pub const PG_PASSWORD: &str = "tg-test-password";

/// A free TCP port on loopback (free when asked; servers bind it right after).
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port on loopback")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Finds a server program on PATH or in the distribution's versioned directories, or fails
/// the test saying which package to install.
fn find_program(name: &str, package: &str) -> PathBuf {
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(name)).collect())
        .unwrap_or_default();
    if let Ok(versions) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut dirs: Vec<PathBuf> = versions.flatten().map(|e| e.path()).collect();
        dirs.sort();
        candidates.extend(dirs.into_iter().rev().map(|d| d.join("bin").join(name)));
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "this test needs `{name}` and it is not installed: install the `{package}` package \
             (`apt-get install {package}`; .ci/run does this in CI)"
            )
        })
}

fn wait_for_port(port: u16, what: &str, log: &Path) {
    let start = Instant::now();
    while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
        if start.elapsed() > START_TIMEOUT {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            panic!(
                "{what} did not accept connections on port {port} within {START_TIMEOUT:?}:\n{log}"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A Redis server on `127.0.0.1:port`.
pub struct Redis {
    dir: tempfile::TempDir,
    port: u16,
    password: Option<String>,
    child: Option<Child>,
}

impl Redis {
    /// Starts a server without a password.
    pub fn start() -> Redis {
        Self::start_with(None)
    }

    /// Starts a server that requires `password`.
    pub fn start_with_password(password: &str) -> Redis {
        Self::start_with(Some(password.to_owned()))
    }

    fn start_with(password: Option<String>) -> Redis {
        let mut redis = Redis {
            dir: tempfile::tempdir().expect("tempdir"),
            port: free_port(),
            password,
            child: None,
        };
        redis.resume();
        redis
    }

    /// `redis://[:password@]127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        match &self.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}/0", self.port),
            None => format!("redis://127.0.0.1:{}/0", self.port),
        }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (its data, in memory only, is lost).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port after [`Redis::stop`].
    pub fn resume(&mut self) {
        let program = find_program("redis-server", "redis-server");
        let log = self.dir.path().join("redis.log");
        let mut cmd = Command::new(program);
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--logfile", &log.display().to_string()])
            .arg("--dir")
            .arg(self.dir.path());
        if let Some(p) = &self.password {
            cmd.args(["--requirepass", p]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        wait_for_port(self.port, "redis-server", &log);
        // Accepting connections is not quite serving: wait for a reply.
        let start = Instant::now();
        loop {
            if let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
                let mut buf = [0u8; 64];
                if s.write_all(b"PING\r\n").is_ok() && s.read(&mut buf).is_ok_and(|n| n > 0) {
                    return;
                }
            }
            assert!(
                start.elapsed() < START_TIMEOUT,
                "redis-server never answered"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A PostgreSQL cluster on `127.0.0.1:port` with a superuser `toolgate` (password
/// [`PG_PASSWORD`], scram-sha-256 over TCP).
pub struct Postgres {
    dir: tempfile::TempDir,
    port: u16,
    running: bool,
}

impl Postgres {
    /// Creates a cluster in a temp dir and starts it.
    pub fn start() -> Postgres {
        let initdb = find_program("initdb", "postgresql");
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PG_PASSWORD).expect("pwfile");
        if is_root() {
            hand_to_postgres(dir.path());
        }
        let out = as_server_user(&initdb)
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "toolgate",
                "-E",
                "UTF8",
                "--no-sync",
                "--auth-local=trust",
            ])
            .args(["--auth-host=scram-sha-256"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut pg = Postgres {
            dir,
            port: free_port(),
            running: false,
        };
        pg.resume();
        pg
    }

    /// `postgres://toolgate:PASSWORD@127.0.0.1:PORT/db`.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://toolgate:{PG_PASSWORD}@127.0.0.1:{}/{db}",
            self.port
        )
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs SQL as the superuser through `psql`, returning its output (unaligned, no
    /// headers).
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let psql = find_program("psql", "postgresql-client");
        let out = Command::new(psql)
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-d", &self.url(db), "-c", sql])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Stops the server at once (no checkpoint; as a crash would).
    pub fn stop(&mut self) {
        if !self.running {
            return;
        }
        self.running = false;
        let _ = as_server_user(&find_program("pg_ctl", "postgresql"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Starts the server again on the same port after [`Postgres::stop`].
    pub fn resume(&mut self) {
        let log = self.dir.path().join("pg.log");
        let out = as_server_user(&find_program("pg_ctl", "postgresql"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .arg("-l")
            .arg(&log)
            .arg("-o")
            .arg(format!(
                "-h 127.0.0.1 -p {} -k {} -c fsync=off -c full_page_writes=off",
                self.port,
                self.dir.path().display()
            ))
            .args(["-w", "-t", "60", "start"])
            .stdin(Stdio::null())
            .output()
            .expect("run pg_ctl");
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        self.running = true;
        wait_for_port(self.port, "postgres", &log);
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The command, run as the `postgres` user when we are root (PostgreSQL refuses root).
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// Gives the temp dir (and what is in it) to the `postgres` user.
fn hand_to_postgres(dir: &Path) {
    let out = Command::new("id")
        .args(["-u", "postgres"])
        .output()
        .expect("run id");
    let uid: u32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| {
            panic!(
                "running as root, this test needs the `postgres` user that the `postgresql` \
                 package creates (`apt-get install postgresql`)"
            )
        });
    for entry in walk(dir) {
        std::os::unix::fs::chown(&entry, Some(uid), None).expect("chown to postgres");
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_owned()];
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            out.extend(walk(&e.path()));
        }
    }
    out
}
