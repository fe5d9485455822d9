//! The helper: `toolgate __sandbox-exec --spec-fd <fd> <cwd> -- CMD…`, single-threaded.
//!
//! Process tree: the helper (host pid namespace: cgroups, wall-time limit, signal relay,
//! clean-up) → pid 1 of the sandbox ([`init`]) → the command. Setup errors travel over a
//! close-on-exec pipe (`[exit code] message`), so "the sandbox failed" is never confused with
//! the command's own output.

pub(crate) mod bridge;
pub(crate) mod caps;
pub(crate) mod init;
pub(crate) mod landlock;
pub(crate) mod limits;
pub(crate) mod mounts;
pub(crate) mod seccomp;

use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::process::ExitCode;

use rustix::pipe::PipeFlags;

use crate::cgroup::CommandCgroups;
use crate::error::SandboxError;
use crate::plan::{HELPER_ARG, HelperSpec, SPEC_FD_ARG};
use crate::policy::NetworkMode;
use crate::probe::{Layer, Tier};
use crate::sys;
use init::{EXIT_SETUP_FAILED, EXIT_TIMEOUT, Ready};

/// Entry point of the helper. Call it first thing in `main` when `argv[1] == HELPER_ARG`,
/// before any thread or async runtime exists.
pub fn helper_main() -> ExitCode {
    crate::timing::mark("helper-main");
    let args: Vec<OsString> = std::env::args_os().collect();
    match run(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("toolgate-sandbox: {e}");
            ExitCode::from(EXIT_SETUP_FAILED)
        }
    }
}

fn usage() -> SandboxError {
    SandboxError::Encoding(format!(
        "usage: EXE {HELPER_ARG} {SPEC_FD_ARG} <fd> <cwd> -- CMD..."
    ))
}

/// Reads the spec from the inherited descriptor `fd` (from offset 0: one `Command` may be
/// spawned more than once) and closes it.
fn read_spec(fd: &std::ffi::OsStr) -> Result<Vec<u8>, SandboxError> {
    use std::os::unix::fs::FileExt;
    let fd: i32 = fd.to_str().and_then(|s| s.parse().ok()).ok_or_else(usage)?;
    // SAFETY: F_GETFD on a number only asks whether it is open.
    if fd < 3 || unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
        return Err(SandboxError::Encoding(format!(
            "spec descriptor {fd} is not open: spawn the Command that \
             toolgate_sandbox::command returned (it hands the descriptor over), not a copy"
        )));
    }
    // SAFETY: the harness passed this open descriptor for us to own.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    let len = file
        .metadata()
        .map_err(|e| SandboxError::Encoding(format!("spec descriptor {fd}: {e}")))?
        .len();
    if len > crate::plan::MAX_SPEC_BYTES as u64 {
        return Err(SandboxError::Encoding(format!(
            "spec of {len} bytes is too large"
        )));
    }
    let mut buf = vec![0; len as usize];
    file.read_exact_at(&mut buf, 0)
        .map_err(|e| SandboxError::Encoding(format!("spec descriptor {fd}: {e}")))?;
    Ok(buf)
}

fn run(args: Vec<OsString>) -> Result<u8, SandboxError> {
    let mut it = args.into_iter().skip(1);
    if it.next().as_deref() != Some(std::ffi::OsStr::new(HELPER_ARG))
        || it.next().as_deref() != Some(std::ffi::OsStr::new(SPEC_FD_ARG))
    {
        return Err(usage());
    }
    let spec = read_spec(&it.next().ok_or_else(usage)?)?;
    let cwd = PathBuf::from(it.next().ok_or_else(usage)?);
    if it.next().as_deref() != Some(std::ffi::OsStr::new("--")) {
        return Err(usage());
    }
    let argv: Vec<OsString> = it.collect();
    if argv.is_empty() {
        return Err(usage());
    }
    let spec_bytes = spec.as_slice();
    let spec: HelperSpec = serde_json::from_slice(spec_bytes)
        .map_err(|e| SandboxError::Encoding(format!("spec: {e}")))?;
    // The helper may be a separate binary (`toolgate-sandbox-helper`); one built from other
    // sources could silently ignore a field it does not know. Re-encoding must give back the
    // exact text, or the helper refuses to run the command.
    if serde_json::to_vec(&spec).ok().as_deref() != Some(spec_bytes) {
        return Err(SandboxError::Encoding(
            "the sandbox helper was built from different sources than the toolgate binary \
             (spec does not round-trip); rebuild both or remove the stale \
             toolgate-sandbox-helper"
                .to_owned(),
        ));
    }
    crate::timing::mark("helper-spec-parsed");
    // The harness started the helper with the command's (filtered) environment.
    supervise(spec, cwd, argv, std::env::vars_os().collect())
}

/// Runs `argv` in the sandbox from the calling process, without re-executing a helper:
/// `toolgate sandbox run` saves an `execve` this way. The caller must be single-threaded
/// ([`sys::single_threaded`]; `cli::run` checks it just before); its process then plays the
/// helper's part (cgroups, the clone of pid 1, signal relay, wall-time limit). `env` is the
/// command's environment.
pub(crate) fn run_in_process(
    spec: HelperSpec,
    cwd: PathBuf,
    argv: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
) -> Result<u8, SandboxError> {
    supervise(spec, cwd, argv, env)
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
    cwd: &std::path::Path,
    path_var: Option<&OsString>,
) -> Option<PathBuf> {
    let program = std::path::Path::new(program?);
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

fn supervise(
    spec: HelperSpec,
    cwd: PathBuf,
    argv: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
) -> Result<u8, SandboxError> {
    let plan = &spec.plan;
    let policy = &spec.policy;
    let tier_a = plan.tier == Tier::A;
    let net_ns = plan.applies(Layer::NetNs);
    if policy.warn_degraded && !plan.missing.is_empty() {
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
    // Tier B/C: a private temp dir on the host instead of a tmpfs.
    let mut private_tmp: Option<PathBuf> = None;
    let mut writable = policy.filesystem.writable_roots.clone();
    if !tier_a && policy.filesystem.private_tmp {
        let dir = std::env::temp_dir().join(format!("toolgate-sbx-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|e| {
            SandboxError::io("tmp", format!("mkdir {}", dir.display()), e, "check TMPDIR")
        })?;
        writable.push(dir.clone());
        private_tmp = Some(dir);
    }
    if policy.filesystem.mode != crate::policy::FsMode::WorkspaceWrite {
        writable.retain(|w| Some(w) == private_tmp.as_ref());
    }
    let landlock = if plan.applies(Layer::Landlock) {
        let deny_tcp = !tier_a && policy.network.mode != NetworkMode::Full;
        let read_denied = expand_host(&policy.filesystem.read_denied);
        let deny_unix_paths = !policy.network.allow_all_unix_sockets;
        Some(landlock::spec(
            !tier_a,
            &writable,
            &read_denied,
            deny_tcp,
            deny_unix_paths,
        )?)
    } else {
        None
    };
    let mut envp: Vec<Vec<u8>> = Vec::new();
    let mut overrides: Vec<(String, String)> =
        vec![("PWD".into(), cwd.to_string_lossy().into_owned())];
    match (&private_tmp, tier_a && policy.filesystem.private_tmp) {
        (Some(dir), _) => overrides.push(("TMPDIR".into(), dir.to_string_lossy().into_owned())),
        (None, true) => overrides.push(("TMPDIR".into(), "/tmp".into())),
        _ => {}
    }
    if policy.network.mode == NetworkMode::Allowlist && net_ns {
        let url = format!("http://127.0.0.1:{}", policy.network.proxy_port);
        for k in [
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
        ] {
            overrides.push((k.into(), url.clone()));
        }
        for k in ["NO_PROXY", "no_proxy"] {
            overrides.push((k.into(), "localhost,127.0.0.1,::1".into()));
        }
    }
    let path_var = env
        .iter()
        .find(|(k, _)| k.as_bytes() == b"PATH")
        .map(|(_, v)| v.clone());
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

    let cgroups = match (
        &spec.cgroup,
        plan.applies(Layer::CgroupPids) || plan.applies(Layer::CgroupMemory),
    ) {
        (Some(info), true) => {
            let pids = plan
                .applies(Layer::CgroupPids)
                .then_some(policy.limits.processes)
                .flatten();
            let mem = plan
                .applies(Layer::CgroupMemory)
                .then_some(policy.limits.memory.bytes())
                .flatten();
            Some(CommandCgroups::create(info, pids, mem)?)
        }
        _ => None,
    };
    crate::timing::mark("helper-cgroups-created");
    let proxy = match (&policy.network.proxy_socket, policy.network.mode, net_ns) {
        (Some(path), NetworkMode::Allowlist, true) => Some((
            bridge::open_socket_path(path)?,
            policy.network.proxy_port,
            crate::proxy::tag_line(policy.network.proxy_tag.as_deref()),
        )),
        _ => None,
    };
    let pipe = |flags| {
        rustix::pipe::pipe_with(flags)
            .map_err(|e| SandboxError::io("helper", "pipe2", e.into(), "raise RLIMIT_NOFILE"))
    };
    let (err_rd, err_wr) = pipe(PipeFlags::CLOEXEC)?;
    // Placeholders for missing protected paths: hold the shared run lock while they may be
    // mounted, and learn from pid 1 which ones it created (see crate::placeholders).
    let wants_placeholders = tier_a
        && policy.filesystem.mode == crate::policy::FsMode::WorkspaceWrite
        && !policy.filesystem.protected.is_empty();
    let run_lock = if wants_placeholders {
        crate::placeholders::RunLock::acquire()
    } else {
        None
    };
    let (ph_rd, ph_wr) = match run_lock {
        Some(_) => {
            pipe(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK).map(|(r, w)| (Some(r), Some(w)))?
        }
        None => (None, None),
    };
    let (gate_rd, gate_wr) = match cgroups {
        Some(_) => pipe(PipeFlags::CLOEXEC).map(|(r, w)| (Some(r), Some(w)))?,
        None => (None, None),
    };

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
        err_fd: err_wr,
        cgroup_gate: gate_rd,
        placeholders: ph_wr,
        proxy,
        // SAFETY: getpid never fails.
        parent: unsafe { libc::getpid() },
    };
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
    let sfd = unsafe { OwnedFd::from_raw_fd(sfd) };
    // Before the clone: inside, getuid() is the overflow uid until the map is written.
    let maps = sys::MapStrings::for_self();
    // Tier A: pid 1 is created *in* the new namespaces (clone), while this process stays in
    // the host's. So the sandbox's mount namespace dies with pid 1 — before we remove the
    // placeholders, which then are plain files and not mount points of a live namespace —
    // and our own exit tears nothing down.
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
        drop((err_rd, sfd, gate_wr, ph_rd, run_lock));
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
    crate::timing::mark("helper-init-forked");
    let Ready {
        err_fd,
        cgroup_gate,
        placeholders,
        proxy,
        ..
    } = ready;
    drop((err_fd, proxy, cgroup_gate, placeholders));
    let mut cgroups = cgroups;
    if let (Some(cg), Some(gate)) = (cgroups.as_mut(), gate_wr) {
        // pid 1 waits for the byte before it forks anything (so all of it is in the cgroups).
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
        // Dropping the write end without a byte makes pid 1 fail closed.
        drop(gate);
    }
    let (status, timed_out) = wait(pid, &sfd, policy.limits.wall_time_ms);
    crate::timing::mark("helper-init-reaped");
    let mut placeholders = Vec::new();
    if let (Some(lock), Some(rd)) = (run_lock, ph_rd) {
        // pid 1 reaped = every process of its pid namespace is gone, and its mount namespace
        // with them (no process inside can keep it alive: setns and mount are denied). The pipe is
        // non-blocking: what pid 1 wrote is all there is.
        let mut list = Vec::new();
        read_all(&rd, &mut list);
        placeholders = crate::placeholders::decode(&list);
        lock.finish(placeholders.clone());
        crate::timing::mark("helper-placeholders-removed");
    }
    if let Some(scan) = &scan {
        for msg in scan.after_run(&placeholders) {
            eprintln!("toolgate-sandbox: {msg}");
        }
        crate::timing::mark("helper-repositories-checked");
    }
    let mut code = exit_code(status, timed_out);
    let mut msg = Vec::new();
    read_all(&err_rd, &mut msg);
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

/// The repositories and persistence names below the writable project roots, before the run
/// (`crate::repos`); `None` when nothing in the roots is writable or protected.
fn scan_roots(
    policy: &crate::policy::SandboxPolicy,
    writable: &[PathBuf],
) -> Result<Option<crate::repos::Scan>, SandboxError> {
    let fs = &policy.filesystem;
    if fs.mode != crate::policy::FsMode::WorkspaceWrite || fs.protected.is_empty() {
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
