//! Shared fixtures for the sandbox integration tests.
#![allow(dead_code, missing_docs)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use toolgate_sandbox::{Layer, Probe, SandboxPolicy};

pub const HELPER: &str = env!("CARGO_BIN_EXE_toolgate-sandbox-helper");

/// The escape tool (a test-only bin of this crate).
pub fn tool() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolgate-sandbox-escape-tool"))
}

pub fn probe() -> &'static Probe {
    toolgate_sandbox::probe()
}

/// Fails loudly unless the machine has tier A (CI has): tests that need a layer never pass
/// silently without it.
pub fn require(layers: &[Layer]) {
    let p = probe();
    for l in layers {
        assert!(
            p.has(*l),
            "layer {l} unavailable: {} — the escape suite needs it",
            p.reason(*l)
        );
    }
}

/// Where fixtures are made: cargo's target tmp dir, unless that is under `/tmp` or
/// `/dev/shm` (a clone checked out in `/tmp`): the sandbox has private ones, so an "outside"
/// path there would be invisible inside and every attempt on it "contained" for the wrong
/// reason. `/var/tmp` is shared with the host like the rest of the root.
pub fn fixture_base() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let real = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_owned());
    if real.starts_with("/tmp") || real.starts_with("/dev/shm") {
        let base = PathBuf::from("/var/tmp/toolgate-sandbox-tests");
        std::fs::create_dir_all(&base).unwrap_or_else(|e| panic!("{e}"));
        base
    } else {
        real
    }
}

/// A workspace, a fake $HOME with a secret key, and an outside dir, none under /tmp.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub outside: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::new_in(&fixture_base())
    }

    pub fn new_in(base: &Path) -> Fixture {
        let dir = tempfile::tempdir_in(base).unwrap_or_else(|e| panic!("{e}"));
        let root = std::fs::canonicalize(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let ws = root.join("ws");
        let home = root.join("home");
        let outside = root.join("outside");
        for d in [&ws, &home.join(".ssh"), &outside, &ws.join(".git")] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-KEY")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.join(".env"), "API_TOKEN=SECRET-ENV").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.join(".git/config"), "[core]\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(outside.join("victim.txt"), "original").unwrap_or_else(|e| panic!("{e}"));
        // Let an unprivileged test user reach everything.
        let _ = std::process::Command::new("chmod")
            .args(["-R", "a+rwX"])
            .arg(&root)
            .status();
        Fixture {
            _dir: dir,
            root,
            ws,
            home,
            outside,
        }
    }

    pub fn policy(&self) -> SandboxPolicy {
        SandboxPolicy::workspace_write(&self.ws, Some(&self.home))
    }

    /// Runs `argv` in the sandbox with `policy`, cwd = workspace, stdin null.
    pub fn run(&self, policy: &SandboxPolicy, argv: &[&str]) -> Output {
        run_in(policy, argv, &self.ws)
    }

    pub fn sh(&self, policy: &SandboxPolicy, script: &str) -> Output {
        self.run(policy, &["sh", "-c", script])
    }
}

pub fn run_in(policy: &SandboxPolicy, argv: &[&str], cwd: &Path) -> Output {
    let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
    let mut cmd = toolgate_sandbox::command(policy, Path::new(HELPER), &argv, cwd)
        .unwrap_or_else(|e| panic!("command: {e}"));
    cmd.stdin(Stdio::null());
    cmd.output().unwrap_or_else(|e| panic!("spawn: {e}"))
}

pub fn text(out: &Output) -> String {
    format!(
        "status={:?}\nstdout={}\nstderr={}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts the escape tool printed CONTAINED (and not ESCAPED).
#[track_caller]
pub fn assert_contained(out: &Output) {
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("CONTAINED") && !s.contains("ESCAPED") && out.status.code() == Some(3),
        "ESCAPE or unexpected result:\n{}",
        text(out)
    );
}
