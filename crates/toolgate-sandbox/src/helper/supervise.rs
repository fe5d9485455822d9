//! The helper's part of one run, host side, step by step: prepare what pid 1 needs
//! ([`Ready`]), start pid 1 in its namespaces, let it into the cgroups, wait for it while
//! relaying signals, then clean up after it and report.
//!
//! Each step is a function of its own so that the order — which matters (the cgroups exist
//! before pid 1 does, the run lock is held before the placeholders can be mounted, signals
//! are blocked before the fork) — reads off [`supervise`] at a glance.

use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use rustix::pipe::PipeFlags;

use super::init::{self, EXIT_SETUP_FAILED, EXIT_TIMEOUT, Ready};
use super::{bridge, landlock, limits, mounts, seccomp};
use crate::cgroup::CommandCgroups;
use crate::error::SandboxError;
use crate::placeholders::RunLock;
use crate::plan::HelperSpec;
use crate::policy::{FsMode, NetworkMode, SandboxPolicy};
use crate::probe::{Layer, Tier};
use crate::sys;

/// The variables that point package managers and HTTP clients at the room's proxy bridge
/// (allow-list mode): each gets `http://127.0.0.1:<port>`.
const PROXY_VARS: [&str; 11] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NPM_CONFIG_PROXY",
    "NPM_CONFIG_HTTPS_PROXY",
    "YARN_HTTP_PROXY",
    "YARN_HTTPS_PROXY",
    "PIP_PROXY",
];

/// Runs `argv` in the room `spec` describes and returns its exit code (see the module docs).
/// `env` is the command's environment.
pub(super) fn supervise(
    spec: HelperSpec,
    cwd: PathBuf,
    argv: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
) -> Result<u8, SandboxError> {
    let plan = &spec.plan;
    let policy = &spec.policy;
    let tier_a = plan.tier == Tier::A;
    let net_ns = plan.applies(Layer::NetNs);
    warn_if_degraded(&spec);
    let private_tmp = host_private_tmp(policy, tier_a)?;
    let writable = writable_roots(policy, private_tmp.as_ref());
    let landlock = landlock_rules(&spec, &writable)?;
    let path_var = env
        .iter()
        .find(|(k, _)| k.as_bytes() == b"PATH")
        .map(|(_, v)| v.clone());
    let envp = command_env(env, &cwd, &spec, private_tmp.as_deref());
    let cgroups = create_cgroups(&spec)?;
    crate::timing::mark("helper-cgroups-created");
    let proxy = proxy_bridge(policy, net_ns)?;
    let channels = Channels::open(policy, tier_a, cgroups.is_some())?;
    // SAFETY: getuid never fails. (The real uid, not the harness probe's: the helper may
    // run as another user.)
    let uid = unsafe { libc::getuid() };
    let tmp_binds = if tier_a && policy.filesystem.private_tmp {
        program_under_tmp(argv.first(), &cwd, path_var.as_ref())
            .into_iter()
            .collect()
    } else {
        Vec::new()
    };
    let socket_keeps = if tier_a {
        mounts::socket_dir_keeps(policy, &cwd)
    } else {
        Vec::new()
    };
    let scan = scan_roots(policy, &writable)?;
    let ready = Ready {
        policy: policy.clone(),
        tmp_binds,
        socket_keeps,
        nested: match (&scan, tier_a) {
            (Some(scan), true) => scan.nested.clone(),
            _ => crate::repos::Nested::default(),
        },
        tier_a,
        net_ns,
        cwd,
        argv: cstrings(argv.into_iter().map(OsString::into_vec))?,
        envp: cstrings(envp)?,
        seccomp: spec.seccomp.iter().map(|p| seccomp::unpack(p)).collect(),
        rlimits: limits::rlimits(&policy.limits, true, plan.memory_via_rlimit_as),
        landlock,
        strict_caps: tier_a || uid == 0,
        close_range: plan.applies(Layer::CloseRange),
        err_fd: channels.err_wr,
        cgroup_gate: channels.gate_rd,
        placeholders: channels.placeholders_wr,
        proxy,
        // SAFETY: getpid never fails.
        parent: unsafe { libc::getpid() },
    };
    let ours = channels.ours;
    let sfd = relayed_signals()?;
    let InitStarted { pid, ours, sfd } = start_init(ready, ours, sfd, tier_a, net_ns)?;
    crate::timing::mark("helper-init-forked");
    let mut cgroups = cgroups;
    if let (Some(cg), Some(gate)) = (cgroups.as_mut(), ours.gate_wr) {
        open_cgroup_gate(cg, gate, pid);
    }
    let (status, timed_out) = wait(pid, &sfd, policy.limits.wall_time_ms);
    crate::timing::mark("helper-init-reaped");
    let placeholders = match (ours.run_lock, ours.placeholders_rd) {
        (Some(lock), Some(rd)) => remove_placeholders(lock, &rd),
        _ => Vec::new(),
    };
    if let Some(scan) = &scan {
        for msg in scan.after_run(&placeholders) {
            eprintln!("toolgate-sandbox: {msg}");
        }
        crate::timing::mark("helper-repositories-checked");
    }
    let code = report_exit(status, timed_out, &ours.err_rd, policy);
    if let Some(cg) = cgroups {
        for hit in cg.limit_hits() {
            eprintln!("toolgate-sandbox: {hit}");
        }
        cg.remove();
        crate::timing::mark("helper-cgroup-removed");
    }
    if let Some(dir) = private_tmp {
        let _ = std::fs::remove_dir_all(dir);
    }
    crate::timing::mark("helper-done");
    Ok(code)
}

/// With `warnDegraded`, says on stderr which layers this machine lacks: a degraded room must
/// never pass for a full one.
fn warn_if_degraded(spec: &HelperSpec) {
    let plan = &spec.plan;
    if !spec.policy.warn_degraded || plan.missing.is_empty() {
        return;
    }
    let what: Vec<String> = plan
        .missing
        .iter()
        .map(|(l, why)| format!("{l} ({why})"))
        .collect();
    eprintln!(
        "toolgate-sandbox: warning: degraded sandbox (tier {:?}); missing: {}; {}",
        plan.tier,
        what.join(", "),
        plan.warnings.join("; ")
    );
}

/// Tier B/C has no mount namespace for a private tmpfs: a fresh directory on the host
/// (`$TMPDIR/toolgate-sbx-<pid>`, removed after the run) stands in for `/tmp`.
fn host_private_tmp(policy: &SandboxPolicy, tier_a: bool) -> Result<Option<PathBuf>, SandboxError> {
    if tier_a || !policy.filesystem.private_tmp {
        return Ok(None);
    }
    let dir = std::env::temp_dir().join(format!("toolgate-sbx-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).map_err(|e| {
        SandboxError::io("tmp", format!("mkdir {}", dir.display()), e, "check TMPDIR")
    })?;
    Ok(Some(dir))
}

/// The directories the command may write: the policy's writable roots (only in
/// workspace-write mode) and the host private tmp, if any. Landlock and the repository walk
/// both start from this one list.
fn writable_roots(policy: &SandboxPolicy, private_tmp: Option<&PathBuf>) -> Vec<PathBuf> {
    let mut writable = policy.filesystem.writable_roots.clone();
    if let Some(dir) = private_tmp {
        writable.push(dir.clone());
    }
    if policy.filesystem.mode != FsMode::WorkspaceWrite {
        writable.retain(|w| Some(w) == private_tmp);
    }
    writable
}

/// The Landlock ruleset, computed before the fork (pid 1's child only applies it): the sole
/// filesystem layer in tier B, and the TCP and unix-socket scopes on top of the view in tier A.
fn landlock_rules(
    spec: &HelperSpec,
    writable: &[PathBuf],
) -> Result<Option<landlock::LandlockSpec>, SandboxError> {
    if !spec.plan.applies(Layer::Landlock) {
        return Ok(None);
    }
    let policy = &spec.policy;
    let tier_a = spec.plan.tier == Tier::A;
    let deny_tcp = !tier_a && policy.network.mode != NetworkMode::Full;
    let read_denied = expand_host(&policy.filesystem.read_denied);
    let deny_unix_paths = !policy.network.allow_all_unix_sockets;
    Ok(Some(landlock::spec(
        !tier_a,
        writable,
        &read_denied,
        deny_tcp,
        deny_unix_paths,
    )?))
}

/// The command's environment as `KEY=value` entries: the (already filtered) `env`, with
/// `PWD`, `TMPDIR` and, in allow-list mode, the proxy variables set by the room — a value
/// the caller passed for one of those never reaches the command.
fn command_env(
    env: Vec<(OsString, OsString)>,
    cwd: &Path,
    spec: &HelperSpec,
    private_tmp: Option<&Path>,
) -> Vec<Vec<u8>> {
    let policy = &spec.policy;
    let tier_a = spec.plan.tier == Tier::A;
    let mut overrides: Vec<(String, String)> =
        vec![("PWD".into(), cwd.to_string_lossy().into_owned())];
    match (private_tmp, tier_a && policy.filesystem.private_tmp) {
        (Some(dir), _) => overrides.push(("TMPDIR".into(), dir.to_string_lossy().into_owned())),
        (None, true) => overrides.push(("TMPDIR".into(), "/tmp".into())),
        _ => {}
    }
    if policy.network.mode == NetworkMode::Allowlist && spec.plan.applies(Layer::NetNs) {
        let url = format!("http://127.0.0.1:{}", policy.network.proxy_port);
        for k in PROXY_VARS {
            overrides.push((k.into(), url.clone()));
        }
        for k in ["NO_PROXY", "no_proxy"] {
            overrides.push((k.into(), "localhost,127.0.0.1,::1".into()));
        }
    }
    let mut envp: Vec<Vec<u8>> = Vec::new();
    for (k, v) in env {
        if overrides.iter().any(|(o, _)| o.as_bytes() == k.as_bytes()) {
            continue;
        }
        let mut kv = k.into_vec();
        kv.push(b'=');
        kv.extend(v.into_vec());
        envp.push(kv);
    }
    envp.extend(
        overrides
            .iter()
            .map(|(k, v)| format!("{k}={v}").into_bytes()),
    );
    envp
}

/// The per-command `pids` and `memory` cgroups, when the plan applies either layer: made
/// before pid 1 exists, so that nothing of the room ever runs outside them.
fn create_cgroups(spec: &HelperSpec) -> Result<Option<CommandCgroups>, SandboxError> {
    let plan = &spec.plan;
    let Some(info) = &spec.cgroup else {
        return Ok(None);
    };
    if !(plan.applies(Layer::CgroupPids) || plan.applies(Layer::CgroupMemory)) {
        return Ok(None);
    }
    let limits = &spec.policy.limits;
    let pids = plan
        .applies(Layer::CgroupPids)
        .then_some(limits.processes)
        .flatten();
    let mem = plan
        .applies(Layer::CgroupMemory)
        .then_some(limits.memory.bytes())
        .flatten();
    Ok(Some(CommandCgroups::create(info, pids, mem)?))
}

/// Allow-list mode in a network namespace: the proxy's socket, opened here (`O_PATH`)
/// because the room cannot reach it by path, with the bridge port and the tag line.
fn proxy_bridge(
    policy: &SandboxPolicy,
    net_ns: bool,
) -> Result<Option<(OwnedFd, u16, Vec<u8>)>, SandboxError> {
    match (&policy.network.proxy_socket, policy.network.mode, net_ns) {
        (Some(path), NetworkMode::Allowlist, true) => Ok(Some((
            bridge::open_socket_path(path)?,
            policy.network.proxy_port,
            crate::proxy::tag_line(policy.network.proxy_tag.as_deref()),
        ))),
        _ => Ok(None),
    }
}

/// The pipes between the helper and pid 1: the ends pid 1 gets (in [`Ready`]) and the
/// helper's own ([`Ours`]).
struct Channels {
    err_wr: OwnedFd,
    gate_rd: Option<OwnedFd>,
    placeholders_wr: Option<OwnedFd>,
    ours: Ours,
}

/// What the helper keeps of [`Channels`], and the run lock. pid 1 closes these at once.
struct Ours {
    /// Setup errors from pid 1 and the command process (`[exit code] message`).
    err_rd: OwnedFd,
    /// One byte once pid 1 is in the cgroups.
    gate_wr: Option<OwnedFd>,
    /// The placeholders pid 1 created.
    placeholders_rd: Option<OwnedFd>,
    /// Held while placeholders may be mounted (see crate::placeholders).
    run_lock: Option<RunLock>,
}

impl Channels {
    /// Opens the error pipe, and the placeholder pipe (with the shared run lock) and the
    /// cgroup gate when they are needed.
    fn open(policy: &SandboxPolicy, tier_a: bool, cgroups: bool) -> Result<Channels, SandboxError> {
        let pipe = |flags| {
            rustix::pipe::pipe_with(flags)
                .map_err(|e| SandboxError::io("helper", "pipe2", e.into(), "raise RLIMIT_NOFILE"))
        };
        let (err_rd, err_wr) = pipe(PipeFlags::CLOEXEC)?;
        // Placeholders for missing protected paths: hold the shared run lock while they may
        // be mounted, and learn from pid 1 which ones it created (see crate::placeholders).
        let wants_placeholders = tier_a
            && policy.filesystem.mode == FsMode::WorkspaceWrite
            && !policy.filesystem.protected.is_empty();
        let run_lock = if wants_placeholders {
            RunLock::acquire()
        } else {
            None
        };
        let (placeholders_rd, placeholders_wr) = match run_lock {
            Some(_) => {
                pipe(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK).map(|(r, w)| (Some(r), Some(w)))?
            }
            None => (None, None),
        };
        let (gate_rd, gate_wr) = if cgroups {
            pipe(PipeFlags::CLOEXEC).map(|(r, w)| (Some(r), Some(w)))?
        } else {
            (None, None)
        };
        Ok(Channels {
            err_wr,
            gate_rd,
            placeholders_wr,
            ours: Ours {
                err_rd,
                gate_wr,
                placeholders_rd,
                run_lock,
            },
        })
    }
}

/// Blocks the signals the helper relays to pid 1 and returns a signalfd that reads them:
/// blocked before the fork, so that none sent meanwhile is lost.
fn relayed_signals() -> Result<OwnedFd, SandboxError> {
    let set = init::signal_set(&[libc::SIGCHLD]);
    // SAFETY: block the relayed signals before forking; signalfd reads them.
    let sfd = unsafe {
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::signalfd(-1, &set, libc::SFD_CLOEXEC)
    };
    if sfd < 0 {
        return Err(SandboxError::last_os(
            "helper",
            "signalfd",
            "report this bug",
        ));
    }
    // SAFETY: fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(sfd) })
}

/// pid 1 is running; what the helper keeps to supervise it.
struct InitStarted {
    pid: libc::pid_t,
    ours: Ours,
    sfd: OwnedFd,
}

/// Starts pid 1 and, in the child, runs [`init::run`] with `ready` (never returns there).
///
/// Tier A: pid 1 is created *in* the new namespaces (clone), while this process stays in
/// the host's. So the sandbox's mount namespace dies with pid 1 — before we remove the
/// placeholders, which then are plain files and not mount points of a live namespace —
/// and our own exit tears nothing down. Tiers B/C: a plain fork.
fn start_init(
    ready: Ready,
    ours: Ours,
    sfd: OwnedFd,
    tier_a: bool,
    net_ns: bool,
) -> Result<InitStarted, SandboxError> {
    // Before the clone: inside, getuid() is the overflow uid until the map is written.
    let maps = sys::MapStrings::for_self();
    let pid = if tier_a {
        let mut flags = libc::CLONE_NEWUSER
            | libc::CLONE_NEWNS
            | libc::CLONE_NEWPID
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS;
        if net_ns {
            flags |= libc::CLONE_NEWNET;
        }
        // SAFETY: single-threaded (the helper, or a caller checked by run_in_process); the
        // child runs init::run, which never returns.
        let pid = unsafe { sys::clone_into_namespaces(flags) };
        if pid < 0 {
            return Err(SandboxError::io(
                "user_ns",
                "clone(USER|NS|PID|IPC|UTS|NET)",
                std::io::Error::from_raw_os_error(-pid),
                "disable the user_ns layer to fall back to tier B",
            ));
        }
        pid
    } else {
        // SAFETY: as above.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(SandboxError::last_os(
                "pid_ns",
                "fork(init)",
                "raise the process limit",
            ));
        }
        pid
    };
    if pid == 0 {
        drop((ours, sfd));
        if tier_a {
            let e = sys::write_maps(&maps);
            if e != 0 {
                let e = SandboxError::io(
                    "user_ns",
                    "write uid_map/gid_map",
                    std::io::Error::from_raw_os_error(e),
                    "check kernel.apparmor_restrict_unprivileged_userns",
                );
                init::fail(ready.err_fd.as_raw_fd(), EXIT_SETUP_FAILED, &e.to_string());
            }
        }
        init::run(ready);
    }
    // pid 1's ends of the pipes (and the proxy socket) are its own now.
    drop(ready);
    Ok(InitStarted { pid, ours, sfd })
}

/// Moves pid 1 into the cgroups, then lets it go on with one byte on the gate. pid 1 waits
/// for that byte before it forks anything, so all of the room is in the cgroups; dropping
/// the gate without the byte (the move failed) makes pid 1 fail closed.
fn open_cgroup_gate(cg: &mut CommandCgroups, gate: OwnedFd, pid: libc::pid_t) {
    let e = cg.attach(pid);
    cg.close_procs();
    if e == 0 {
        // SAFETY: writing one byte to our pipe.
        unsafe { libc::write(gate.as_raw_fd(), b"1".as_ptr().cast(), 1) };
        crate::timing::mark("helper-cgroup-attached");
    } else {
        eprintln!(
            "toolgate-sandbox: sandbox layer cgroup: write cgroup.procs failed: {}; fix \
             cgroup delegation or disable cgroup layers",
            std::io::Error::from_raw_os_error(e)
        );
    }
    drop(gate);
}

/// After pid 1 is reaped: removes the placeholders it reported (when no other room of this
/// user still needs them) and returns them, so the repository check does not take them
/// for the command's.
fn remove_placeholders(lock: RunLock, rd: &OwnedFd) -> Vec<PathBuf> {
    // pid 1 reaped = every process of its pid namespace is gone, and its mount namespace
    // with them (no process inside can keep it alive: setns and mount are denied). The pipe is
    // non-blocking: what pid 1 wrote is all there is.
    let mut list = Vec::new();
    read_all(rd, &mut list);
    let placeholders = crate::placeholders::decode(&list);
    lock.finish(placeholders.clone());
    crate::timing::mark("helper-placeholders-removed");
    placeholders
}

/// The helper's exit code: the command's, unless the room failed to build (the setup
/// error's code, whose message goes to stderr) or timed out (said on stderr too).
fn report_exit(status: i32, timed_out: bool, err_rd: &OwnedFd, policy: &SandboxPolicy) -> u8 {
    let mut code = exit_code(status, timed_out);
    let mut msg = Vec::new();
    read_all(err_rd, &mut msg);
    if let Some((&c, text)) = msg.split_first() {
        eprintln!("toolgate-sandbox: {}", String::from_utf8_lossy(text));
        code = c;
    }
    if timed_out {
        eprintln!(
            "toolgate-sandbox: wall time limit of {} ms exceeded; the sandbox was killed",
            policy.limits.wall_time_ms.unwrap_or(0)
        );
    }
    code
}

fn cstrings(items: impl IntoIterator<Item = Vec<u8>>) -> Result<Vec<CString>, SandboxError> {
    items
        .into_iter()
        .map(|b| {
            CString::new(b)
                .map_err(|_| SandboxError::Encoding("NUL in argument or environment".to_owned()))
        })
        .collect()
}

/// The program's real path when it lies under `/tmp`, which the private tmpfs would hide:
/// the command the caller asked for must still be executable (read-only) inside.
fn program_under_tmp(
    program: Option<&OsString>,
    cwd: &Path,
    path_var: Option<&OsString>,
) -> Option<PathBuf> {
    let program = Path::new(program?);
    let found = if program.components().count() > 1 {
        Some(cwd.join(program))
    } else {
        path_var.and_then(|path| {
            std::env::split_paths(path)
                .map(|dir| dir.join(program))
                .find(|candidate| candidate.is_file())
        })
    };
    let real = found?.canonicalize().ok()?;
    (real.starts_with("/tmp") && real.is_file()).then_some(real)
}

/// The repositories and persistence names below the writable project roots, before the run
/// (`crate::repos`); `None` when nothing in the roots is writable or protected.
fn scan_roots(
    policy: &SandboxPolicy,
    writable: &[PathBuf],
) -> Result<Option<crate::repos::Scan>, SandboxError> {
    let fs = &policy.filesystem;
    if fs.mode != FsMode::WorkspaceWrite || fs.protected.is_empty() {
        return Ok(None);
    }
    let roots: Vec<PathBuf> = fs
        .project_roots
        .iter()
        .filter(|r| writable.iter().any(|w| r.starts_with(w)))
        .cloned()
        .collect();
    let scan = crate::repos::Scan::new(&roots, &fs.protected, fs.max_walk_entries)?;
    crate::timing::mark("helper-repositories-scanned");
    Ok(Some(scan))
}

/// Expands `*`/`?` in the last component against the host filesystem (tier B Landlock).
fn expand_host(patterns: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in patterns {
        let name = p
            .file_name()
            .map(|n| n.as_bytes().to_vec())
            .unwrap_or_default();
        if !name.contains(&b'*') && !name.contains(&b'?') {
            out.push(p.clone());
            continue;
        }
        let Some(parent) = p.parent() else { continue };
        if let Ok(entries) = std::fs::read_dir(parent) {
            for e in entries.flatten() {
                if mounts::glob_match(&name, e.file_name().as_bytes()) {
                    out.push(e.path());
                }
            }
        }
    }
    out
}

fn exit_code(status: i32, timed_out: bool) -> u8 {
    if timed_out {
        EXIT_TIMEOUT
    } else if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status) as u8
    } else if libc::WIFSIGNALED(status) {
        (128 + libc::WTERMSIG(status)) as u8
    } else {
        EXIT_SETUP_FAILED
    }
}

/// Waits for pid 1, relaying signals and enforcing the wall-time limit.
fn wait(pid: libc::pid_t, sfd: &OwnedFd, wall_ms: Option<u64>) -> (i32, bool) {
    let deadline =
        wall_ms.map(|ms| std::time::Instant::now() + std::time::Duration::from_millis(ms));
    let mut timed_out = false;
    loop {
        let mut status = 0;
        // SAFETY: reaping our own child.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            return (status, timed_out);
        }
        let timeout = match deadline {
            Some(_) if timed_out => -1,
            Some(d) => d
                .saturating_duration_since(std::time::Instant::now())
                .as_millis()
                .min(i32::MAX as u128) as i32,
            None => -1,
        };
        let mut pfd = libc::pollfd {
            fd: sfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout) };
        if n == 0 && !timed_out {
            timed_out = true;
            // SAFETY: SIGKILL to pid 1 takes down the whole pid namespace.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            continue;
        }
        if n > 0 {
            // SAFETY: reading one signalfd_siginfo.
            let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
            let r = unsafe {
                libc::read(
                    sfd.as_raw_fd(),
                    (&mut info as *mut libc::signalfd_siginfo).cast(),
                    std::mem::size_of::<libc::signalfd_siginfo>(),
                )
            };
            if r > 0 && info.ssi_signo as i32 != libc::SIGCHLD {
                // SAFETY: relaying to pid 1, which forwards to the command.
                unsafe { libc::kill(pid, info.ssi_signo as i32) };
            }
        }
    }
}

fn read_all(fd: &OwnedFd, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: reading into a local buffer.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return;
        }
        out.extend_from_slice(&buf[..n as usize]);
    }
}
