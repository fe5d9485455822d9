//! The capability probe: which sandbox layers work on this machine, and why not.
//!
//! [`probe()`] runs once per process and is cached. The namespace checks (≈2–3 ms) run in a
//! forked child that only makes raw system calls (no allocation), so probing is safe from a
//! multi-threaded harness; their result is also cached per boot in a private file (see
//! [`PROBE_CACHE_ENV`]), so short-lived processes such as `toolgate sandbox run` do not pay for
//! it on every start. Layers can be forced off with the environment variable
//! [`DISABLE_ENV`] (comma-separated layer names, or `all`) — read once, by [`probe()`] — or per
//! policy with [`crate::SandboxPolicy::disabled_layers`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::cgroup::{self, CgroupInfo};
use crate::sys;

/// Environment variable listing layers to treat as unavailable (e.g. `user_ns,landlock`).
pub const DISABLE_ENV: &str = "TOOLGATE_SANDBOX_DISABLE";

/// Set to `0` to bypass the per-boot probe cache (`$XDG_RUNTIME_DIR/toolgate/` or
/// `/tmp/toolgate-<uid>/`, a directory owned by the user with mode 0700).
pub const PROBE_CACHE_ENV: &str = "TOOLGATE_SANDBOX_PROBE_CACHE";

/// One layer of the sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// Unprivileged user namespace with a uid map to oneself.
    UserNs,
    /// Mount namespace, tmpfs, bind mounts and recursive read-only (`mount_setattr`).
    MountNs,
    /// PID namespace with a fresh `/proc` (plus IPC and UTS namespaces).
    PidNs,
    /// Network namespace with loopback up.
    NetNs,
    /// Landlock filesystem rules (and, by ABI, TCP ports and scopes).
    Landlock,
    /// seccomp-bpf syscall filter (with `no_new_privs`).
    Seccomp,
    /// cgroup `pids` controller for a per-command process limit.
    CgroupPids,
    /// cgroup `memory` controller for a per-command memory limit.
    CgroupMemory,
    /// `close_range(2)` for closing inherited file descriptors.
    CloseRange,
}

impl Layer {
    /// All layers, in setup order.
    pub const ALL: [Layer; 9] = [
        Layer::UserNs,
        Layer::MountNs,
        Layer::PidNs,
        Layer::NetNs,
        Layer::Landlock,
        Layer::Seccomp,
        Layer::CgroupPids,
        Layer::CgroupMemory,
        Layer::CloseRange,
    ];

    /// The snake_case name (as in JSON and [`DISABLE_ENV`]).
    pub fn name(self) -> &'static str {
        match self {
            Layer::UserNs => "user_ns",
            Layer::MountNs => "mount_ns",
            Layer::PidNs => "pid_ns",
            Layer::NetNs => "net_ns",
            Layer::Landlock => "landlock",
            Layer::Seccomp => "seccomp",
            Layer::CgroupPids => "cgroup_pids",
            Layer::CgroupMemory => "cgroup_memory",
            Layer::CloseRange => "close_range",
        }
    }

    /// Parses a layer name.
    pub fn from_name(name: &str) -> Option<Layer> {
        Layer::ALL.into_iter().find(|l| l.name() == name.trim())
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether one layer works, and the evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerStatus {
    /// The layer works on this machine.
    pub available: bool,
    /// What was found (version, or the failing syscall and errno).
    pub detail: String,
}

/// The fallback tier the probe allows (see `docs/sandbox.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Namespaces + mounts + everything below.
    A,
    /// No user namespaces: Landlock + seccomp + rlimits.
    B,
    /// seccomp + rlimits only.
    C,
    /// Nothing works: commands are refused.
    None,
}

/// What [`probe()`] found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// `uname -r`.
    pub kernel: String,
    /// Real uid of the probing process (0 = root; RLIMIT_NPROC is ignored for root).
    pub uid: u32,
    /// Landlock ABI version (0 = unavailable).
    pub landlock_abi: i32,
    /// Per-layer status.
    pub layers: BTreeMap<Layer, LayerStatus>,
    /// cgroup hierarchy used for per-command limits, if any.
    pub cgroup: Option<CgroupInfo>,
    /// `dev.tty.legacy_tiocsti` (1 = TIOCSTI injection possible without seccomp/setsid).
    pub legacy_tiocsti: Option<bool>,
}

impl Probe {
    /// Runs the probe now (uncached), treating `disabled` layers as unavailable. Refreshes
    /// the per-boot cache of the namespace checks.
    pub fn detect(disabled: &[Layer]) -> Probe {
        let ns = probe_namespaces();
        cache::store(&ns);
        Self::assemble(ns, disabled)
    }

    /// Like [`Probe::detect`], but takes the namespace checks from the per-boot cache when it
    /// is valid (same boot, kernel, uid, toolgate version and user-namespace sysctls).
    ///
    /// A stale entry cannot weaken the sandbox: a layer the cache wrongly calls available
    /// makes the helper fail closed (exit 125, naming the syscall); one it wrongly calls
    /// missing degrades the plan with the usual warning. `sandbox status` always re-probes.
    pub fn detect_cached(disabled: &[Layer]) -> Probe {
        let ns = match cache::load() {
            Some(ns) => ns,
            None => {
                let ns = probe_namespaces();
                cache::store(&ns);
                ns
            }
        };
        Self::assemble(ns, disabled)
    }

    fn assemble(ns: NsProbe, disabled: &[Layer]) -> Probe {
        let mut layers = BTreeMap::new();
        let ns_layers = [
            (Layer::UserNs, ns.user),
            (Layer::MountNs, ns.mount),
            (Layer::PidNs, ns.pid),
            (Layer::NetNs, ns.net),
            (Layer::Seccomp, ns.seccomp),
            (Layer::CloseRange, ns.close_range),
        ];
        for (layer, status) in ns_layers {
            layers.insert(layer, status);
        }
        let landlock_abi = sys::landlock_abi();
        layers.insert(
            Layer::Landlock,
            if landlock_abi > 0 {
                ok(format!("ABI {landlock_abi}"))
            } else {
                missing(format!(
                    "landlock_create_ruleset: {}",
                    std::io::Error::from_raw_os_error(-landlock_abi)
                ))
            },
        );
        let cg = cgroup::detect();
        layers.insert(Layer::CgroupPids, cg.pids_status());
        layers.insert(Layer::CgroupMemory, cg.memory_status());
        for layer in disabled {
            if let Some(status) = layers.get_mut(layer) {
                *status = missing(format!("disabled ({DISABLE_ENV} or policy)"));
            }
        }
        let legacy_tiocsti = std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti")
            .ok()
            .map(|s| s.trim() == "1");
        Probe {
            kernel: sys::kernel_release(),
            // SAFETY: getuid never fails.
            uid: unsafe { libc::getuid() },
            landlock_abi: landlock_abi.max(0),
            layers,
            cgroup: cg.info(),
            legacy_tiocsti,
        }
    }

    /// Whether `layer` works.
    pub fn has(&self, layer: Layer) -> bool {
        self.layers.get(&layer).is_some_and(|s| s.available)
    }

    /// Why `layer` does not work ("" when it does).
    pub fn reason(&self, layer: Layer) -> String {
        match self.layers.get(&layer) {
            Some(s) if !s.available => s.detail.clone(),
            Some(_) => String::new(),
            None => "not probed".to_owned(),
        }
    }

    /// The best tier this machine supports.
    pub fn tier(&self) -> Tier {
        if self.has(Layer::UserNs) && self.has(Layer::MountNs) && self.has(Layer::PidNs) {
            Tier::A
        } else if self.has(Layer::Landlock) {
            Tier::B
        } else if self.has(Layer::Seccomp) {
            Tier::C
        } else {
            Tier::None
        }
    }

    /// The same probe with `disabled` layers forced off.
    pub fn with_disabled(&self, disabled: &[Layer]) -> Probe {
        let mut probe = self.clone();
        for layer in disabled {
            if let Some(status) = probe.layers.get_mut(layer)
                && status.available
            {
                *status = missing("disabled by policy".to_owned());
            }
        }
        probe
    }

    /// Human-readable report (`toolgate sandbox status`).
    pub fn render(&self) -> String {
        let mut out = format!(
            "kernel {}  uid {}  tier {:?}\n",
            self.kernel,
            self.uid,
            self.tier()
        );
        for (layer, status) in &self.layers {
            let mark = if status.available {
                "ok     "
            } else {
                "MISSING"
            };
            out.push_str(&format!(
                "  {mark} {:<14} {}\n",
                layer.name(),
                status.detail
            ));
        }
        if self.uid == 0 && !self.has(Layer::CgroupPids) {
            out.push_str(
                "  note: running as root without a pids cgroup: RLIMIT_NPROC is ignored for \
                 uid 0, so the process limit is not enforced\n",
            );
        }
        if self.legacy_tiocsti == Some(true) {
            out.push_str(
                "  note: dev.tty.legacy_tiocsti=1; TIOCSTI is blocked by setsid + seccomp\n",
            );
        }
        out
    }
}

pub(crate) fn ok(detail: String) -> LayerStatus {
    LayerStatus {
        available: true,
        detail,
    }
}

pub(crate) fn missing(detail: String) -> LayerStatus {
    LayerStatus {
        available: false,
        detail,
    }
}

static PROBE: OnceLock<Probe> = OnceLock::new();

/// The cached probe of this process, honouring [`DISABLE_ENV`].
pub fn probe() -> &'static Probe {
    PROBE.get_or_init(|| Probe::detect_cached(&disabled_from_env()))
}

/// Layers named in [`DISABLE_ENV`].
pub fn disabled_from_env() -> Vec<Layer> {
    let Ok(value) = std::env::var(DISABLE_ENV) else {
        return Vec::new();
    };
    if value.trim() == "all" {
        return Layer::ALL.to_vec();
    }
    value.split(',').filter_map(Layer::from_name).collect()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct NsProbe {
    user: LayerStatus,
    mount: LayerStatus,
    pid: LayerStatus,
    net: LayerStatus,
    seccomp: LayerStatus,
    close_range: LayerStatus,
}

/// Step indices of the forked probe child; each slot holds 0 (ok), an errno, or -1 (skipped).
const STEP_USERNS: usize = 0;
const STEP_MAPS: usize = 1;
const STEP_UNSHARE: usize = 2;
const STEP_MOUNT: usize = 3;
const STEP_SETATTR: usize = 4;
const STEP_PROC: usize = 5;
const STEP_NETNS: usize = 6;
const STEP_LO: usize = 7;
const STEP_SECCOMP: usize = 8;
const STEP_CLOSE_RANGE: usize = 9;
const STEPS: usize = 10;

fn probe_namespaces() -> NsProbe {
    let results = match sys::run_probe_child::<STEPS>(probe_child) {
        Ok(r) => r,
        Err(e) => {
            let why = format!("probe child: {e}");
            return NsProbe {
                user: missing(why.clone()),
                mount: missing(why.clone()),
                pid: missing(why.clone()),
                net: missing(why.clone()),
                seccomp: missing(why.clone()),
                close_range: missing(why),
            };
        }
    };
    let step = |i: usize, what: &str| -> Result<(), String> {
        match results[i] {
            0 => Ok(()),
            -1 => Err(format!("{what}: not tried (an earlier step failed)")),
            e => Err(format!("{what}: {}", std::io::Error::from_raw_os_error(e))),
        }
    };
    let to_status = |r: Result<(), String>, good: &str| match r {
        Ok(()) => ok(good.to_owned()),
        Err(e) => missing(e),
    };
    let user = step(STEP_USERNS, "unshare(CLONE_NEWUSER)")
        .and_then(|_| step(STEP_MAPS, "write uid_map/gid_map"));
    let mount = user
        .clone()
        .and_then(|_| step(STEP_UNSHARE, "unshare(NEWNS|NEWPID|NEWIPC|NEWUTS)"))
        .and_then(|_| step(STEP_MOUNT, "mount(tmpfs)"))
        .and_then(|_| step(STEP_SETATTR, "mount_setattr(MOUNT_ATTR_RDONLY)"));
    let pid = mount.clone().and_then(|_| step(STEP_PROC, "mount(proc)"));
    let net = user
        .clone()
        .and_then(|_| step(STEP_NETNS, "unshare(CLONE_NEWNET)"))
        .and_then(|_| step(STEP_LO, "ioctl(SIOCSIFFLAGS lo up)"));
    NsProbe {
        user: to_status(user, "unshare(CLONE_NEWUSER) + uid map to self"),
        mount: to_status(mount, "tmpfs, bind, mount_setattr read-only"),
        pid: to_status(pid, "pid namespace with fresh /proc"),
        net: to_status(net, "empty network namespace, loopback up"),
        seccomp: to_status(
            step(STEP_SECCOMP, "seccomp(SECCOMP_SET_MODE_FILTER)"),
            "seccomp-bpf filter mode",
        ),
        close_range: to_status(step(STEP_CLOSE_RANGE, "close_range"), "close_range(2)"),
    }
}

pub(crate) use cache::state_dir;

/// The per-boot cache of [`NsProbe`]: one JSON file in a directory only the user can write.
mod cache {
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::path::PathBuf;

    use serde::{Deserialize, Serialize};

    use super::{NsProbe, PROBE_CACHE_ENV};

    #[derive(Serialize, Deserialize, PartialEq)]
    struct Key {
        boot_id: String,
        kernel: String,
        uid: u32,
        version: String,
        /// Sysctls that switch unprivileged user namespaces on and off at run time.
        sysctls: Vec<String>,
    }

    #[derive(Serialize, Deserialize)]
    struct Entry {
        key: Key,
        ns: NsProbe,
    }

    const SYSCTLS: &[&str] = &[
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ];

    fn key() -> Option<Key> {
        let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        Some(Key {
            boot_id: boot_id.trim().to_owned(),
            kernel: crate::sys::kernel_release(),
            // SAFETY: getuid never fails.
            uid: unsafe { libc::getuid() },
            version: env!("CARGO_PKG_VERSION").to_owned(),
            sysctls: SYSCTLS
                .iter()
                .map(|p| {
                    std::fs::read_to_string(p)
                        .unwrap_or_default()
                        .trim()
                        .to_owned()
                })
                .collect(),
        })
    }

    fn dir() -> Option<PathBuf> {
        if std::env::var_os(PROBE_CACHE_ENV).is_some_and(|v| v == "0") {
            return None;
        }
        super::state_dir()
    }

    /// The per-user state directory (`toolgate_core::user_state_dir`): another user must
    /// not feed us a probe or hold our locks.
    pub(crate) fn state_dir() -> Option<PathBuf> {
        toolgate_core::user_state_dir()
    }

    pub(super) fn load() -> Option<NsProbe> {
        let path = dir()?.join("probe.json");
        let meta = std::fs::symlink_metadata(&path).ok()?;
        // SAFETY: geteuid never fails.
        if !meta.is_file() || meta.uid() != unsafe { libc::geteuid() } {
            return None;
        }
        let entry: Entry = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
        (entry.key == key()?).then_some(entry.ns)
    }

    /// Best effort: a failed write only means the next process probes again.
    pub(super) fn store(ns: &NsProbe) {
        let (Some(dir), Some(key)) = (dir(), key()) else {
            return;
        };
        let Ok(json) = serde_json::to_vec(&Entry {
            key,
            ns: ns.clone(),
        }) else {
            return;
        };
        let tmp = dir.join(format!("probe.json.{}", std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&json));
        if written.is_err() || std::fs::rename(&tmp, dir.join("probe.json")).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// Runs in the forked probe child: raw syscalls only, no allocation.
fn probe_child(res: &mut [i32; STEPS], maps: &sys::MapStrings) {
    *res = [-1; STEPS];
    let user_ok = sys::unshare(libc::CLONE_NEWUSER);
    res[STEP_USERNS] = user_ok;
    if user_ok == 0 {
        res[STEP_MAPS] = sys::write_maps(maps);
    }
    if res[STEP_MAPS] == 0 {
        res[STEP_UNSHARE] = sys::unshare(
            libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS,
        );
    }
    if res[STEP_UNSHARE] == 0 {
        res[STEP_MOUNT] = sys::probe_tmpfs(c"/tmp", c"/tmp/p");
    }
    if res[STEP_MOUNT] == 0 {
        res[STEP_SETATTR] = sys::setattr_readonly(c"/tmp");
        res[STEP_PROC] = sys::probe_proc_in_child(c"/tmp/p");
    }
    if res[STEP_MAPS] == 0 {
        res[STEP_NETNS] = sys::unshare(libc::CLONE_NEWNET);
        if res[STEP_NETNS] == 0 {
            res[STEP_LO] = sys::loopback_up();
        }
    }
    res[STEP_CLOSE_RANGE] = sys::close_range_probe();
    res[STEP_SECCOMP] = sys::seccomp_allow_all();
}
