//! What the fuzz targets share: one isolated home and workspace per fuzzing process, and a
//! gate built by `toolgate_setup` the way `toolgate exec` and `toolgate serve` build theirs.
//!
//! The gate offers only the file tools (Read, Glob, Grep, and the writing tools, which ask
//! and are therefore denied: nobody answers). Bash and the web tools are left out so that
//! arbitrary inputs cannot start processes or reach the network from the fuzzer.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use toolgate_core::Gate;
use toolgate_setup::Setup;

/// The tools the fuzzing gate offers.
pub const FUZZ_TOOLS: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "TodoWrite",
];

/// A home directory and a workspace of a few files, alive as long as the process.
pub struct Fixture {
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
}

impl Fixture {
    /// The workspace root (canonical).
    pub fn workspace(&self) -> PathBuf {
        self.workspace
            .path()
            .canonicalize()
            .unwrap_or_else(|_| self.workspace.path().to_path_buf())
    }

    /// The home directory.
    pub fn home(&self) -> &Path {
        self.home.path()
    }
}

/// The process's fixture. The first call points `HOME`, `XDG_CONFIG_HOME` and
/// `CLAUDE_CONFIG_DIR` at an empty temporary home so that no settings of the machine's user
/// are read.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let home = tempfile::tempdir().expect("temporary home");
        let workspace = tempfile::tempdir().expect("temporary workspace");
        // SAFETY: called once, before any fuzz target starts threads of its own.
        unsafe {
            std::env::set_var("HOME", home.path());
            std::env::set_var("XDG_CONFIG_HOME", home.path().join(".config"));
            std::env::set_var("CLAUDE_CONFIG_DIR", home.path().join(".claude"));
        }
        let ws = workspace.path();
        for (rel, text) in [
            ("README.md", "# demo\nhello world\n"),
            ("src/lib.rs", "pub fn add(a: u32, b: u32) -> u32 { a + b }\n"),
            (".env", "API_KEY=sk_live_0123456789abcdefghijklmn\n"),
            ("notes/todo.txt", "one\ntwo\nthree\n"),
        ] {
            let p = ws.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).expect("fixture directory");
            }
            std::fs::write(&p, text).expect("fixture file");
        }
        Fixture { home, workspace }
    })
}

/// A setup for the fixture's workspace with the fuzzing tool set.
pub fn setup() -> Setup {
    let mut setup = Setup::new(fixture().workspace());
    setup.view.only = FUZZ_TOOLS.iter().map(|t| (*t).to_owned()).collect();
    setup
}

/// The process's gate (see the module doc).
pub fn gate() -> Arc<Gate> {
    static GATE: OnceLock<Arc<Gate>> = OnceLock::new();
    Arc::clone(GATE.get_or_init(|| Arc::new(setup().build().expect("the fuzzing gate").gate)))
}

/// A single-threaded runtime for the targets that drive async code.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}
