//! toolgate-sandbox: runs a command in a bounded room.
//!
//! The room is described by a [`SandboxPolicy`] (filesystem mode and writable roots, read
//! denies, write carve-outs, network mode, limits, environment), built from Claude Code
//! compatible `sandbox` settings with [`SandboxPolicy::from_settings`]. [`command`] turns a
//! policy and an argv into a [`std::process::Command`] that runs the command through the
//! *helper*: the `toolgate` binary re-executed with the hidden argument [`HELPER_ARG`], whose
//! `main` calls [`helper_main`] before anything else (`toolgate sandbox run`, single-threaded,
//! plays the helper's part in its own process instead; see [`cli`]). The helper:
//!
//! 1. creates per-command cgroups (`pids`, `memory`; memory defaults to half the RAM) when
//!    available, and walks the writable project roots for repositories (`repos`);
//! 2. `clone`s pid 1 into new `USER|NS|PID|IPC|UTS[|NET]` namespaces (the helper itself stays
//!    in the host's); pid 1 maps the caller's uid/gid to themselves;
//! 3. pid 1 replaces its command line (`/proc/1/cmdline` would show its creator's), forks the
//!    command process, then builds a read-only view of `/` with the writable roots,
//!    carve-outs (the persistence names of [`default_protected`], every repository found),
//!    masks, private `/tmp`, an empty `/run`, minimal `/dev`, fresh `/proc`, `pivot_root`s
//!    into it, brings loopback up and (allow-list mode) starts the proxy bridge;
//! 4. meanwhile the command process applies `setsid`, rlimits, `no_new_privs` and seccomp,
//!    waits until pid 1 reports the view complete (and exits unrun if pid 1 fails), then
//!    applies Landlock, drops capabilities, `close_range`s and `execve`s with the
//!    allow-listed environment;
//! 5. relays signals, enforces the wall-time limit, neutralises repositories and persistence
//!    files the command created, and exits with the command's status
//!    (128+signal when killed, [`EXIT_TIMEOUT`] on timeout, [`EXIT_SETUP_FAILED`] when the
//!    sandbox could not be built — with a `toolgate-sandbox:` line on stderr).
//!
//! [`SandboxPolicy::add_rule_limits`] reflects the permission engine's deny and ask path rules
//! (through [`PathRules`]) as masks and read-only carve-outs, so the room is never wider than
//! the engine. [`probe()`] reports which layers work on this machine (cached per process); [`Plan`]
//! degrades layer by layer and refuses to run when `failIfUnavailable` is set and something
//! is missing — never silently unsandboxed. [`Proxy`] is the domain allow-list HTTP(S) proxy
//! for network `allowlist` mode.
//!
//! ```no_run
//! use std::ffi::OsString;
//! use std::path::Path;
//! use toolgate_sandbox::{PolicyContext, SandboxPolicy};
//!
//! let settings = serde_json::json!({"sandbox": {"enabled": true}});
//! let policy = SandboxPolicy::from_settings(&settings, &PolicyContext::new("/work/project"))?;
//! let argv: Vec<OsString> = vec!["sh".into(), "-c".into(), "echo hi".into()];
//! let helper = std::env::current_exe()?;
//! let status = toolgate_sandbox::command(&policy, &helper, &argv, Path::new("/work/project"))?
//!     .status()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! See `docs/sandbox.md` for what is and is not contained, and on which kernels.
#![deny(missing_docs)]

mod cgroup;
pub mod cli;
mod error;
mod helper;
mod placeholders;
mod plan;
mod policy;
mod probe;
mod proxy;
mod repos;
mod rule_limits;
mod settings;
mod stage;
mod sys;
mod timing;

pub use cgroup::CgroupInfo;
pub use error::SandboxError;
pub use helper::helper_main;
pub use helper::init::{EXIT_SETUP_FAILED, EXIT_TIMEOUT};
pub use plan::{HELPER_ARG, HELPER_BIN, MIN_SPEC_FD, Plan, Prepared, command, helper_exe, prepare};
pub use policy::{
    COMMONDIR_PLACEHOLDER, DEFAULT_ENV_ALLOW, DEFAULT_MAX_PROCESSES, DEFAULT_MEMORY_PERCENT,
    DEFAULT_PROXY_PORT, DEFAULT_TMP_SIZE_BYTES, EnvPolicy, FALLBACK_DEFAULT_MEMORY_BYTES, FsMode,
    FsPolicy, Limits, MemoryLimit, NetworkMode, NetworkPolicy, ProtectedName, SandboxPolicy,
    WhenMissing, default_home_read_deny, default_memory_bytes, default_protected,
    default_root_read_deny,
};
pub use probe::{
    DISABLE_ENV, Layer, LayerStatus, PROBE_CACHE_ENV, Probe, Tier, disabled_from_env, probe,
};

pub use proxy::{
    DomainRules, MAX_PROXY_CONNECTIONS, MAX_PROXY_CONNECTIONS_PER_TAG, Proxy, ProxyDecision,
    encode_tag,
};
pub use rule_limits::{DEFAULT_MAX_WALK_ENTRIES, PathLimit, PathRules, RuleLimits};
pub use settings::{PolicyContext, normalize};
pub use stage::{Excluder, LinuxSandbox, network_record};
pub use timing::TIMING_ENV;
