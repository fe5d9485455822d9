//! Planning a policy against the probe, and building the helper command.
//!
//! The harness decides which layers apply ([`Plan`]); the helper applies exactly those and
//! fails (exit [`crate::EXIT_SETUP_FAILED`]) rather than silently skipping one.
//!
//! Wire format: `HELPER argv = [exe, HELPER_ARG, SPEC_FD_ARG, <fd>, <cwd>, "--", CMD...]`.
//! The spec (policy + plan + precompiled seccomp programs, as JSON) is in a sealed memfd
//! the helper inherits as `<fd>`, not on its command line: the sandbox's pid 1 is a copy of
//! the helper, and every process in the room can read `/proc/1/cmdline`. The command's
//! environment travels as the helper's own (cleared and allow-listed) environment.

use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::cgroup::CgroupInfo;
use crate::error::SandboxError;
use crate::helper::seccomp;
use crate::policy::{FsMode, MemoryLimit, NetworkMode, SandboxPolicy};
use crate::probe::{Layer, Probe, Tier};

/// The hidden subcommand: `toolgate __sandbox-exec …` runs [`crate::helper_main`].
pub const HELPER_ARG: &str = "__sandbox-exec";

/// Largest spec the helper is given. A policy's paths — including every file the room
/// masks for a permission rule — fit many times over; a policy past it is refused rather
/// than copied into every helper.
pub(crate) const MAX_SPEC_BYTES: usize = 8 << 20;

/// The helper argument before the spec's descriptor number.
pub(crate) const SPEC_FD_ARG: &str = "--spec-fd";

/// Lowest descriptor number the spec is passed on: above the numbers callers put their own
/// descriptors on in the child (shells' redirections use 0–9, the Bash tool's working
/// directory report 63), so a caller's `dup2` between fork and exec cannot replace it.
pub const MIN_SPEC_FD: i32 = 64;

/// What will be applied for one policy on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Fallback tier in effect.
    pub tier: Tier,
    /// Layers that will be applied.
    pub applied: Vec<Layer>,
    /// Layers the policy needs that are missing, with the probe's reason.
    pub missing: Vec<(Layer, String)>,
    /// Human-readable consequences of what is missing (printed by the helper).
    pub warnings: Vec<String>,
    /// Memory is limited by RLIMIT_AS because no memory cgroup is available.
    pub memory_via_rlimit_as: bool,
}

impl Plan {
    /// Plans `policy` against `probe`.
    pub fn new(policy: &SandboxPolicy, probe: &Probe) -> Result<Plan, SandboxError> {
        let probe = probe.with_disabled(&policy.disabled_layers);
        let mut applied = Vec::new();
        let mut missing = Vec::new();
        let mut warnings = Vec::new();
        let want = |layer: Layer, applied: &mut Vec<Layer>, missing: &mut Vec<_>| {
            if probe.has(layer) {
                applied.push(layer);
                true
            } else {
                missing.push((layer, probe.reason(layer)));
                false
            }
        };
        let mut ns_ok = true;
        for layer in [Layer::UserNs, Layer::MountNs, Layer::PidNs] {
            ns_ok &= want(layer, &mut applied, &mut missing);
        }
        if !ns_ok {
            applied.retain(|l| !matches!(l, Layer::UserNs | Layer::MountNs | Layer::PidNs));
            warnings.push(
                "no namespaces: no private /tmp, no pid isolation by namespace, no read-only \
                 holes for missing protected paths"
                    .to_owned(),
            );
        }
        if policy.network.mode != NetworkMode::Full {
            if ns_ok && probe.has(Layer::NetNs) {
                applied.push(Layer::NetNs);
            } else {
                missing.push((Layer::NetNs, probe.reason(Layer::NetNs)));
                warnings.push(
                    "no network namespace: inet sockets are denied by seccomp instead \
                     (loopback servers and the allow-list proxy do not work)"
                        .to_owned(),
                );
            }
        }
        if policy.filesystem.mode != FsMode::Off
            && !want(Layer::Landlock, &mut applied, &mut missing)
            && !ns_ok
        {
            warnings.push("no filesystem isolation at all (no namespaces, no Landlock)".to_owned());
        }
        if !want(Layer::Seccomp, &mut applied, &mut missing) {
            warnings.push(
                "no seccomp: dangerous syscalls are not filtered and the host's unix sockets \
                 (Docker, D-Bus, agents) can be connected to"
                    .to_owned(),
            );
        }
        if !want(Layer::CloseRange, &mut applied, &mut missing) {
            warnings
                .push("close_range missing: inherited descriptors closed one by one".to_owned());
        }
        if policy.limits.processes.is_some() {
            if probe.has(Layer::CgroupPids) {
                applied.push(Layer::CgroupPids);
            } else if probe.uid == 0 {
                missing.push((Layer::CgroupPids, probe.reason(Layer::CgroupPids)));
                warnings.push(
                    "process limit NOT enforced: running as root (RLIMIT_NPROC is ignored for \
                     uid 0) and no pids cgroup"
                        .to_owned(),
                );
            }
            // Non-root without a pids cgroup: RLIMIT_NPROC (per user namespace) suffices.
        }
        let mut memory_via_rlimit_as = false;
        let memory = policy.limits.memory;
        match (memory, probe.has(Layer::CgroupMemory)) {
            (MemoryLimit::Unlimited, _) => {}
            (_, true) => applied.push(Layer::CgroupMemory),
            (MemoryLimit::Bytes(_), false) => {
                memory_via_rlimit_as = true;
                warnings.push("memory limited by RLIMIT_AS (no memory cgroup)".to_owned());
            }
            (MemoryLimit::Default, false) => warnings.push(
                "default memory limit not enforced (no memory cgroup); set \
                 sandbox.limits.memoryMb to enforce one through RLIMIT_AS"
                    .to_owned(),
            ),
        }
        let tier = if ns_ok {
            Tier::A
        } else if applied.contains(&Layer::Landlock) {
            Tier::B
        } else if applied.contains(&Layer::Seccomp) {
            Tier::C
        } else {
            Tier::None
        };
        if tier == Tier::None || (policy.fail_if_unavailable && !missing.is_empty()) {
            return Err(SandboxError::Unavailable { missing });
        }
        Ok(Plan {
            tier,
            applied,
            missing,
            warnings,
            memory_via_rlimit_as,
        })
    }

    /// Whether `layer` will be applied.
    pub fn applies(&self, layer: Layer) -> bool {
        self.applied.contains(&layer)
    }
}

/// File name of the stand-alone helper binary, preferred by [`helper_exe`].
pub const HELPER_BIN: &str = "toolgate-sandbox-helper";

/// The executable to run as the helper for a harness whose binary is `main_exe`: the small
/// stand-alone `toolgate-sandbox-helper` when it is installed next to `main_exe` (it starts
/// ≈0.7 ms faster than re-executing the large `toolgate` binary), else `main_exe` itself.
///
/// The sibling is used only when it is a regular, executable file that neither group nor
/// others can write, owned by root or by the owner of `main_exe`. A helper built from other
/// sources refuses the spec (it must round-trip exactly), so a stale one fails closed.
pub fn helper_exe(main_exe: &Path) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let Some(dir) = main_exe.parent() else {
        return main_exe.to_path_buf();
    };
    let sibling = dir.join(HELPER_BIN);
    let (Ok(meta), Ok(main)) = (
        std::fs::symlink_metadata(&sibling),
        std::fs::metadata(main_exe),
    ) else {
        return main_exe.to_path_buf();
    };
    let trusted = meta.is_file()
        && meta.mode() & 0o111 != 0
        && meta.mode() & 0o022 == 0
        && (meta.uid() == 0 || meta.uid() == main.uid());
    if trusted {
        sibling
    } else {
        main_exe.to_path_buf()
    }
}

/// Everything the helper needs (serialized into its spec memfd).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HelperSpec {
    pub policy: SandboxPolicy,
    pub plan: Plan,
    /// Precompiled seccomp programs, each instruction packed as `code<<48|jt<<40|jf<<32|k`.
    pub seccomp: Vec<Vec<u64>>,
    pub cgroup: Option<CgroupInfo>,
    pub landlock_abi: i32,
    pub uid: u32,
}

impl HelperSpec {
    /// Validates `policy` and plans it against `probe` (the part of [`prepare`] shared with
    /// the in-process path, [`crate::cli::run`]).
    pub(crate) fn new(
        policy: &SandboxPolicy,
        probe: &Probe,
        cwd: &Path,
    ) -> Result<HelperSpec, SandboxError> {
        validate(policy, cwd)?;
        let plan = Plan::new(policy, probe)?;
        let sockets = seccomp::SocketDenial {
            inet: policy.network.mode != NetworkMode::Full && !plan.applies(Layer::NetNs),
            unix: !policy.network.allow_all_unix_sockets,
        };
        let seccomp = if plan.applies(Layer::Seccomp) {
            seccomp::programs(sockets)?
        } else {
            Vec::new()
        };
        Ok(HelperSpec {
            policy: policy.clone(),
            plan,
            seccomp,
            cgroup: probe.cgroup.clone(),
            landlock_abi: probe.landlock_abi,
            uid: probe.uid,
        })
    }
}

/// A command prepared to run `argv` in the sandbox, with the plan that applies.
#[derive(Debug)]
pub struct Prepared {
    /// The helper command (or the bare command when the sandbox is disabled).
    pub command: Command,
    /// The plan (`None` when the policy disables the sandbox).
    pub plan: Option<Plan>,
}

/// Builds the command that runs `argv` in `cwd` through the helper, planned against the
/// cached [`crate::probe()`]. See [`prepare`] for the plan.
///
/// Spawn this `Command` itself (or a `tokio::process::Command` made from it): it hands the
/// helper its spec on a descriptor numbered [`MIN_SPEC_FD`] or above, between fork and
/// exec. A copy made from its program and arguments runs nothing (the helper refuses).
pub fn command(
    policy: &SandboxPolicy,
    helper_exe: &Path,
    argv: &[OsString],
    cwd: &Path,
) -> Result<Command, SandboxError> {
    prepare(policy, crate::probe::probe(), helper_exe, argv, cwd).map(|p| p.command)
}

/// Like [`command`], with an explicit probe, returning the [`Plan`] too.
pub fn prepare(
    policy: &SandboxPolicy,
    probe: &Probe,
    helper_exe: &Path,
    argv: &[OsString],
    cwd: &Path,
) -> Result<Prepared, SandboxError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(SandboxError::InvalidSettings {
            key: "argv".to_owned(),
            reason: "empty command".to_owned(),
        });
    };
    if !policy.enabled {
        let mut cmd = Command::new(program);
        cmd.args(args).current_dir(cwd);
        toolgate_core::child::only_standard_descriptors(&mut cmd);
        return Ok(Prepared {
            command: cmd,
            plan: None,
        });
    }
    let spec = HelperSpec::new(policy, probe, cwd)?;
    let plan = spec.plan.clone();
    let json = serde_json::to_string(&spec).map_err(|e| SandboxError::Encoding(e.to_string()))?;
    if json.len() > MAX_SPEC_BYTES {
        return Err(SandboxError::InvalidSettings {
            key: "sandbox".to_owned(),
            reason: format!("policy too large ({} bytes > {MAX_SPEC_BYTES})", json.len()),
        });
    }
    let spec_fd = spec_memfd(json.as_bytes())?;
    let raw = spec_fd.as_raw_fd();
    let mut cmd = Command::new(helper_exe);
    // Only 0–2 and the spec (installed next) reach the helper: nothing toolgate holds, such
    // as an approval channel, enters the room.
    toolgate_core::child::only_standard_descriptors(&mut cmd);
    // SAFETY: between fork and exec the closure only calls fcntl, which is
    // async-signal-safe. It owns the memfd, which is close-on-exec everywhere else (no other
    // child of a multi-threaded harness inherits it) and stays open while `cmd` lives.
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(spec_fd.as_raw_fd(), libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.arg(HELPER_ARG)
        .arg(SPEC_FD_ARG)
        .arg(raw.to_string())
        .arg(cwd)
        .arg("--")
        .arg(program)
        .args(args)
        .current_dir("/")
        .env_clear()
        .envs(policy.filtered_env(std::env::vars_os()));
    if crate::timing::enabled() {
        // Benchmarks only: the helper's processes write their marks too.
        cmd.env(crate::timing::TIMING_ENV, "1");
    }
    Ok(Prepared {
        command: cmd,
        plan: Some(plan),
    })
}

/// A sealed, close-on-exec memfd holding `bytes`.
fn spec_memfd(bytes: &[u8]) -> Result<std::os::fd::OwnedFd, SandboxError> {
    use rustix::fs::{MemfdFlags, SealFlags};
    let io = |op: &str, e: std::io::Error| {
        SandboxError::io("helper", op.to_owned(), e, "check memfd_create support")
    };
    let fd = rustix::fs::memfd_create(
        "toolgate-sandbox-spec",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )
    .map_err(|e| io("memfd_create", e.into()))?;
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, bytes).map_err(|e| io("write spec", e))?;
    rustix::fs::fcntl_add_seals(
        &file,
        SealFlags::SEAL | SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE,
    )
    .map_err(|e| io("seal spec", e.into()))?;
    rustix::io::fcntl_dupfd_cloexec(&file, MIN_SPEC_FD).map_err(|e| io("dup spec", e.into()))
}

fn validate(policy: &SandboxPolicy, cwd: &Path) -> Result<(), SandboxError> {
    let fs = &policy.filesystem;
    let all = fs
        .writable_roots
        .iter()
        .chain(&fs.read_denied)
        .chain(&fs.read_allowed)
        .chain(&fs.write_denied)
        .chain(&fs.project_roots)
        .map(PathBuf::as_path)
        .chain(std::iter::once(cwd));
    for path in all {
        check_path(path)?;
    }
    if policy.network.mode == NetworkMode::Allowlist && policy.network.proxy_socket.is_none() {
        return Err(SandboxError::InvalidSettings {
            key: "sandbox.network".to_owned(),
            reason: "allowlist mode needs a running Proxy (set network.proxy_socket)".to_owned(),
        });
    }
    Ok(())
}

fn check_path(path: &Path) -> Result<(), SandboxError> {
    let bad = |reason: &str| SandboxError::InvalidPath {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    };
    if !path.is_absolute() {
        return Err(bad("must be absolute"));
    }
    if path.to_str().is_none() {
        return Err(bad("must be valid UTF-8"));
    }
    if path
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return Err(bad("must not contain `..`"));
    }
    Ok(())
}
