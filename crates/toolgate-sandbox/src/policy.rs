//! [`SandboxPolicy`]: what the room looks like — filesystem, network, limits, environment.
//!
//! A policy is plain data (serde-serialisable). It is built from settings
//! ([`SandboxPolicy::from_settings`]) or by hand, then handed to [`crate::command`], which
//! plans it against the machine's [`crate::Probe`] and passes it to the helper.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toolgate_protocol::paths::{self, InRoom, Pattern};

use crate::probe::Layer;

/// Paths under `$HOME` that are unreadable inside the sandbox by default: the secret
/// entries of the path-class table (`toolgate_protocol::paths`) marked
/// [`InRoom::HiddenInHome`], as paths relative to home.
pub fn default_home_read_deny() -> Vec<&'static str> {
    paths::room_entries()
        .filter(|e| e.room == InRoom::HiddenInHome)
        .filter_map(|e| match e.pattern {
            Pattern::Dir(name) | Pattern::File(name) | Pattern::Home(name) => Some(name),
            Pattern::Glob(_) | Pattern::Abs(_) => None,
        })
        .fold(Vec::new(), |mut out, name| {
            if !out.contains(&name) {
                out.push(name);
            }
            out
        })
}

/// Name patterns (last path component, `*` globs) unreadable at the top of every writable
/// root: the table's entries marked [`InRoom::HiddenAtRootTop`] (dotenv files).
pub fn default_root_read_deny() -> Vec<&'static str> {
    paths::room_entries()
        .filter(|e| e.room == InRoom::HiddenAtRootTop)
        .filter_map(|e| match e.pattern {
            Pattern::Glob(name) | Pattern::File(name) => Some(name),
            _ => None,
        })
        .collect()
}

/// The content of a `.git/commondir` placeholder (see [`WhenMissing::PlaceholderCommonDir`]).
pub const COMMONDIR_PLACEHOLDER: &[u8] = b".\n";

/// How an entry of [`default_protected`] is protected when it does not exist yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WhenMissing {
    /// Create an empty placeholder of this kind (a directory) and mount it read-only, so the
    /// path cannot be created inside the sandbox.
    PlaceholderDir,
    /// Create an empty placeholder file and mount it read-only.
    PlaceholderFile,
    /// Create a placeholder file holding [`COMMONDIR_PLACEHOLDER`] and mount it read-only:
    /// for `.git/commondir`, where an empty file would break git and the line `.` points
    /// the repository's common directory at itself, which is what no file means.
    PlaceholderCommonDir,
    /// Only protect it if it exists (creating it is not a persistence vector on its own, or an
    /// empty placeholder would break tools outside the sandbox).
    Skip,
    /// Protect it if it exists; if the command creates it, move it aside after the run
    /// (`NAME` → `NAME.toolgate-blocked`) and say so. For names directly in a root whose
    /// empty placeholder could upset a tool outside the sandbox meanwhile (an empty
    /// `.pre-commit-config.yaml`, `.envrc`, `lefthook.yml`) or clutter every workspace (shell
    /// rc files). What is created exists until the run ends.
    MoveAside,
    /// Not protected: a writable exception inside a protected entry above it, bound back
    /// read-write when it exists (`.claude/worktrees`, where agent worktrees live).
    Exception,
}

/// One write-protected name, relative to the top of each writable root (workspace and
/// additional directories; not the private temp dir).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedName {
    /// Relative path, e.g. `.git/hooks`.
    pub path: String,
    /// What to do when it does not exist yet.
    pub when_missing: WhenMissing,
}

/// Write-protected carve-outs inside writable roots: the path-class table's protected
/// entries, as `(relative path, when missing)`.
///
/// Existing entries become read-only bind mounts. Missing ones with a placeholder policy get an
/// empty placeholder on the host, mounted read-only inside and removed after the run when no
/// other sandbox of the user still runs (`placeholders.rs`); missing [`WhenMissing::MoveAside`]
/// ones are moved aside after the run if the command created them (`repos.rs`); an entry's
/// `except_child` (`.claude/worktrees`) becomes a [`WhenMissing::Exception`]. When `.git` is
/// missing, the placeholder of every `.git/*` entry is `.git` itself, their first missing
/// component; a `.git` file is made read-only. The `.git/*` entries also apply inside every
/// repository found below a project root (nested `.git` directories, bare repositories, and
/// the git directories under a repository's `modules/` and `worktrees/`).
fn protected_in_room() -> Vec<(String, WhenMissing)> {
    let mut out: Vec<(String, WhenMissing)> = Vec::new();
    for e in paths::room_entries() {
        let name = match e.pattern {
            Pattern::Dir(name) | Pattern::File(name) => name,
            _ => continue,
        };
        match e.room {
            InRoom::ReadOnly(missing) => {
                out.push((name.to_owned(), missing.into()));
                if let Some(child) = e.except_child {
                    out.push((format!("{name}/{child}"), WhenMissing::Exception));
                }
            }
            InRoom::ReadOnlyParts(parts) => out.extend(
                parts
                    .iter()
                    .map(|(part, missing)| (format!("{name}/{part}"), (*missing).into())),
            ),
            InRoom::Nothing | InRoom::HiddenInHome | InRoom::HiddenAtRootTop => {}
        }
    }
    out
}

impl From<paths::WhenMissing> for WhenMissing {
    fn from(w: paths::WhenMissing) -> Self {
        match w {
            paths::WhenMissing::PlaceholderDir => WhenMissing::PlaceholderDir,
            paths::WhenMissing::PlaceholderFile => WhenMissing::PlaceholderFile,
            paths::WhenMissing::PlaceholderCommonDir => WhenMissing::PlaceholderCommonDir,
            paths::WhenMissing::Skip => WhenMissing::Skip,
            paths::WhenMissing::MoveAside => WhenMissing::MoveAside,
        }
    }
}

/// Environment variables passed into the sandbox by default (trailing `*` = prefix).
pub const DEFAULT_ENV_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    "NVM_DIR",
    "CI",
];

/// Default size cap of the private `/tmp` (tmpfs). Large enough for builds that use `/tmp`,
/// small enough that a runaway writer cannot fill host memory (tmpfs pages are RAM).
pub const DEFAULT_TMP_SIZE_BYTES: u64 = 1 << 30;

/// Default cap on processes/threads inside one sandbox: enough for `make -j` or a test
/// runner, far below what a fork bomb needs to hurt the host.
pub const DEFAULT_MAX_PROCESSES: u64 = 1024;

/// The room's default memory limit, as a share of the machine's RAM (percent): a compiler,
/// linker or test runner gets plenty, and a runaway command leaves the other half to the
/// host — the harness, the user's editor — instead of waking the host's OOM killer.
pub const DEFAULT_MEMORY_PERCENT: u64 = 50;

/// The default memory limit when the machine's RAM cannot be read (`sysinfo(2)` failed).
pub const FALLBACK_DEFAULT_MEMORY_BYTES: u64 = 4 << 30;

/// Default TCP port of the in-sandbox proxy bridge (`HTTP(S)_PROXY=http://127.0.0.1:PORT`).
pub const DEFAULT_PROXY_PORT: u16 = 3128;

/// Filesystem mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FsMode {
    /// No filesystem isolation (host filesystem, read-write).
    Off,
    /// Read-only root; the writable roots are writable (minus carve-outs).
    #[default]
    WorkspaceWrite,
    /// Everything read-only except the private temp dir.
    ReadOnly,
}

/// Network mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// Empty network namespace with loopback up: nothing outside is reachable.
    #[default]
    None,
    /// Empty network namespace whose only way out is the HTTP(S) proxy of [`crate::Proxy`].
    Allowlist,
    /// The host network.
    Full,
}

/// Filesystem part of a [`SandboxPolicy`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct FsPolicy {
    /// Mode.
    pub mode: FsMode,
    /// Writable roots (absolute): workspace, additional directories, `allowWrite` paths.
    /// The first entry is the workspace. Ignored in [`FsMode::ReadOnly`].
    pub writable_roots: Vec<PathBuf>,
    /// Roots that get the [`default_protected`] carve-outs and the [`default_root_read_deny`]
    /// masks (workspace and additional directories).
    pub project_roots: Vec<PathBuf>,
    /// Mount a private tmpfs on `/tmp` (writable, discarded afterwards).
    pub private_tmp: bool,
    /// Unreadable paths (absolute). The last component may contain `*` and `?`.
    pub read_denied: Vec<PathBuf>,
    /// Readable exceptions inside `read_denied` directories (`allowRead`).
    pub read_allowed: Vec<PathBuf>,
    /// Read-only carve-outs inside writable roots (absolute; `denyWrite`).
    pub write_denied: Vec<PathBuf>,
    /// Names protected inside each project root; defaults to [`default_protected`].
    pub protected: Vec<ProtectedName>,
    /// Most entries one walk at a room's start may look at (`sandbox.filesystem.
    /// maxWalkEntries`): the permission rules' masks, the repositories below the project
    /// roots. Past it the room is refused.
    pub max_walk_entries: usize,
}

impl Default for FsPolicy {
    fn default() -> Self {
        FsPolicy {
            mode: FsMode::default(),
            writable_roots: Vec::new(),
            project_roots: Vec::new(),
            private_tmp: false,
            read_denied: Vec::new(),
            read_allowed: Vec::new(),
            write_denied: Vec::new(),
            protected: Vec::new(),
            max_walk_entries: crate::rule_limits::DEFAULT_MAX_WALK_ENTRIES,
        }
    }
}

/// Network part of a [`SandboxPolicy`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NetworkPolicy {
    /// Mode.
    pub mode: NetworkMode,
    /// Domains reachable through the proxy (`example.com`, `*.example.com`).
    pub allowed_domains: Vec<String>,
    /// Domains always refused (checked first).
    pub denied_domains: Vec<String>,
    /// Unix socket of the running [`crate::Proxy`] (allowlist mode).
    pub proxy_socket: Option<PathBuf>,
    /// Port of the in-sandbox TCP bridge to the proxy.
    pub proxy_port: u16,
    /// Attribution tag the bridge sends ahead of every connection it relays (one
    /// `TOOLGATE-TAG <tag>` line), so a proxy shared by many runs knows which run (call) a
    /// request came from. Sent as is when it is printable ASCII without spaces; other bytes
    /// are percent-encoded.
    pub proxy_tag: Option<String>,
    /// `sandbox.network.allowAllUnixSockets`: let the command create unix sockets. Off by
    /// default, because a socket file of the host stays connectable through the read-only
    /// view, and daemons behind such files (Docker, the user's systemd and D-Bus, ssh and
    /// gpg agents) act outside the sandbox on the caller's behalf. When off, `socket(2)`
    /// with `AF_UNIX` fails with `EPERM`; `socketpair(2)` still works.
    pub allow_all_unix_sockets: bool,
}

impl Default for NetworkPolicy {
    fn default() -> Self {
        NetworkPolicy {
            mode: NetworkMode::None,
            allowed_domains: Vec::new(),
            denied_domains: Vec::new(),
            proxy_socket: None,
            proxy_port: DEFAULT_PROXY_PORT,
            proxy_tag: None,
            allow_all_unix_sockets: false,
        }
    }
}

/// The memory limit of a room (`sandbox.limits.memoryMb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryLimit {
    /// [`default_memory_bytes`], enforced by the memory cgroup only: its fallback,
    /// RLIMIT_AS, counts reserved address space, which runtimes that reserve large ranges
    /// (the JVM, V8's WebAssembly) would exceed without using the memory.
    #[default]
    Default,
    /// This many bytes: the memory cgroup, else RLIMIT_AS.
    Bytes(u64),
    /// No limit (`memoryMb: 0`).
    Unlimited,
}

impl MemoryLimit {
    /// The limit in bytes, if there is one.
    pub fn bytes(self) -> Option<u64> {
        match self {
            MemoryLimit::Default => Some(default_memory_bytes()),
            MemoryLimit::Bytes(n) => Some(n),
            MemoryLimit::Unlimited => None,
        }
    }

    /// Whether RLIMIT_AS stands in for a missing memory cgroup (an explicit limit only).
    pub fn rlimit_as_fallback(self) -> bool {
        matches!(self, MemoryLimit::Bytes(_))
    }
}

/// [`DEFAULT_MEMORY_PERCENT`] of this machine's RAM (read once per process).
pub fn default_memory_bytes() -> u64 {
    static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        // SAFETY: sysinfo fills a zeroed struct we own.
        let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
        if unsafe { libc::sysinfo(&mut info) } != 0 {
            return FALLBACK_DEFAULT_MEMORY_BYTES;
        }
        // `c_ulong`: 32 bits on some targets.
        #[allow(clippy::useless_conversion)]
        let total = u64::from(info.totalram).saturating_mul(u64::from(info.mem_unit));
        match total / 100 * DEFAULT_MEMORY_PERCENT {
            0 => FALLBACK_DEFAULT_MEMORY_BYTES,
            n => n,
        }
    })
}

/// Resource limits. `None` = not limited by the sandbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Limits {
    /// Wall-clock limit; on expiry the whole sandbox (pid namespace) is SIGKILLed.
    pub wall_time_ms: Option<u64>,
    /// CPU seconds (RLIMIT_CPU soft; hard = soft + 1 → SIGKILL).
    pub cpu_time_secs: Option<u64>,
    /// Memory (cgroup `memory.max`; see [`MemoryLimit`] for when RLIMIT_AS stands in).
    pub memory: MemoryLimit,
    /// Processes (cgroup `pids.max`; RLIMIT_NPROC backstop for non-root).
    pub processes: Option<u64>,
    /// Largest file the command may write (RLIMIT_FSIZE).
    pub file_size_bytes: Option<u64>,
    /// Open files (RLIMIT_NOFILE).
    pub open_files: Option<u64>,
    /// Size of the private `/tmp`.
    pub tmp_size_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall_time_ms: None,
            cpu_time_secs: None,
            memory: MemoryLimit::Default,
            processes: Some(DEFAULT_MAX_PROCESSES),
            file_size_bytes: None,
            open_files: None,
            tmp_size_bytes: DEFAULT_TMP_SIZE_BYTES,
        }
    }
}

/// Environment passed to the command: everything else is cleared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EnvPolicy {
    /// Names copied from the caller's environment (trailing `*` = prefix).
    pub allow: Vec<String>,
    /// Variables set explicitly (win over `allow`).
    pub set: BTreeMap<String, String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        EnvPolicy {
            allow: DEFAULT_ENV_ALLOW.iter().map(|s| (*s).to_owned()).collect(),
            set: BTreeMap::new(),
        }
    }
}

/// The complete description of a sandbox: see the crate docs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SandboxPolicy {
    /// `sandbox.enabled`: when false, [`crate::command`] runs the command without the helper.
    pub enabled: bool,
    /// `sandbox.failIfUnavailable`: refuse to run when any needed layer is missing.
    pub fail_if_unavailable: bool,
    /// Filesystem.
    pub filesystem: FsPolicy,
    /// Network.
    pub network: NetworkPolicy,
    /// Limits.
    pub limits: Limits,
    /// Environment.
    pub env: EnvPolicy,
    /// `sandbox.excludedCommands` (Bash-rule syntax), matched by the caller.
    pub excluded_commands: Vec<String>,
    /// `sandbox.allowUnsandboxedCommands` (default true): whether a Bash call's
    /// `dangerouslyDisableSandbox: true` is honoured (after approval) or ignored.
    pub allow_unsandboxed_commands: bool,
    /// Layers forced off (testing, or known-broken kernels); they count as missing.
    pub disabled_layers: Vec<Layer>,
    /// Print one `toolgate-sandbox: warning:` line on stderr when running degraded.
    pub warn_degraded: bool,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            enabled: true,
            fail_if_unavailable: false,
            filesystem: FsPolicy {
                private_tmp: true,
                protected: default_protected(),
                ..FsPolicy::default()
            },
            network: NetworkPolicy::default(),
            limits: Limits::default(),
            env: EnvPolicy::default(),
            excluded_commands: Vec::new(),
            allow_unsandboxed_commands: true,
            disabled_layers: Vec::new(),
            warn_degraded: true,
        }
    }
}

/// The write-protected names of every project root in the room, from the path-class table.
pub fn default_protected() -> Vec<ProtectedName> {
    protected_in_room()
        .into_iter()
        .map(|(path, when_missing)| ProtectedName { path, when_missing })
        .collect()
}

impl SandboxPolicy {
    /// A workspace-write policy for `workspace` with the default denies and protections,
    /// network `none`, and `home`'s credentials hidden.
    pub fn workspace_write(workspace: &Path, home: Option<&Path>) -> Self {
        let mut policy = SandboxPolicy::default();
        policy
            .filesystem
            .writable_roots
            .push(workspace.to_path_buf());
        policy
            .filesystem
            .project_roots
            .push(workspace.to_path_buf());
        if let Some(home) = home {
            for rel in default_home_read_deny() {
                policy.filesystem.read_denied.push(home.join(rel));
            }
        }
        policy.add_root_read_denies(workspace);
        policy
    }

    /// Adds the [`default_root_read_deny`] patterns under `root`.
    pub(crate) fn add_root_read_denies(&mut self, root: &Path) {
        for pat in default_root_read_deny() {
            push_unique(&mut self.filesystem.read_denied, root.join(pat));
        }
    }

    /// The environment variables the command gets, read from `vars` (usually
    /// `std::env::vars_os()`), filtered by [`EnvPolicy::allow`] plus [`EnvPolicy::set`].
    pub fn filtered_env<I>(&self, vars: I) -> BTreeMap<String, String>
    where
        I: IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    {
        let mut out = BTreeMap::new();
        for (k, v) in vars {
            let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else {
                continue;
            };
            if self.env.allow.iter().any(|pat| env_name_matches(pat, k)) {
                out.insert(k.to_owned(), v.to_owned());
            }
        }
        for (k, v) in &self.env.set {
            out.insert(k.clone(), v.clone());
        }
        out
    }
}

fn env_name_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

pub(crate) fn push_unique(list: &mut Vec<PathBuf>, path: PathBuf) {
    if !list.contains(&path) {
        list.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_filter_keeps_only_allowed() {
        let policy = SandboxPolicy::default();
        let vars = [
            ("PATH", "/bin"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("LC_ALL", "C"),
            ("GITHUB_TOKEN", "y"),
        ]
        .map(|(k, v)| (k.into(), v.into()));
        let env = policy.filtered_env(vars);
        assert_eq!(env.keys().collect::<Vec<_>>(), ["LC_ALL", "PATH"]);
    }

    #[test]
    fn policy_roundtrips_through_json() {
        let policy = SandboxPolicy::workspace_write(Path::new("/w"), Some(Path::new("/h")));
        let json = serde_json::to_string(&policy).unwrap_or_default();
        let back: SandboxPolicy = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(policy, back);
        assert!(
            back.filesystem
                .read_denied
                .contains(&PathBuf::from("/h/.ssh"))
        );
        assert!(
            back.filesystem
                .read_denied
                .contains(&PathBuf::from("/w/.env"))
        );
        assert!(
            back.filesystem
                .read_denied
                .contains(&PathBuf::from("/w/.env.*"))
        );
    }
}
