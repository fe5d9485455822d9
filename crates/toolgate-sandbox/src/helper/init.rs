//! The sandbox's pid 1 (mini-init) and the final command process.
//!
//! pid 1 waits until the helper has moved it into the cgroups, forks the command process
//! (which inherits them), then builds the filesystem view, brings loopback up, gives up its
//! own privileges (capabilities, `no_new_privs`, dumpable) and starts the proxy bridge while
//! the command process applies the restrictions that do not depend on the
//! view (signal dispositions, session, rlimits, `no_new_privs`, seccomp). The command process
//! waits on a pipe until pid 1 says the view is complete, and only then changes directory,
//! applies Landlock (whose rules name paths of the view), drops its capabilities and execs.
//! On a machine with two cores the two halves of the set-up overlap; on a failure pid 1
//! exits, which closes the pipe, and the command process exits without running anything.
//!
//! pid 1 then forwards signals to the command's process group, reaps every orphan, and when
//! the command exits kills whatever is left and exits with the command's status (128+signal
//! when it was killed).

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use crate::error::SandboxError;
use crate::helper::landlock::LandlockSpec;
use crate::helper::{bridge, caps, landlock, limits, mounts, seccomp};
use crate::policy::{FsMode, SandboxPolicy};
use crate::sys;

/// Exit code reported when the sandbox could not be set up (like `env`/`timeout`).
pub const EXIT_SETUP_FAILED: u8 = 125;
/// Exit code reported when the wall-time limit killed the sandbox (like `timeout`).
pub const EXIT_TIMEOUT: u8 = 124;

/// Signals pid 1 forwards to the command's process group.
pub(crate) const FORWARDED: &[i32] = &[
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
    libc::SIGCONT,
    libc::SIGALRM,
];

/// Everything prepared (allocated) before the forks.
pub(crate) struct Ready {
    pub policy: SandboxPolicy,
    /// Files shown read-only inside the private `/tmp` (the program to run, when it lives there).
    pub tmp_binds: Vec<PathBuf>,
    /// Host paths kept visible inside the hidden socket directories (`mounts::SOCKET_DIRS`).
    pub socket_keeps: Vec<PathBuf>,
    /// The repositories below the project roots (`crate::repos`).
    pub nested: crate::repos::Nested,
    pub tier_a: bool,
    pub net_ns: bool,
    pub cwd: PathBuf,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    pub seccomp: Vec<Vec<libc::sock_filter>>,
    pub rlimits: Vec<(i32, u64, u64)>,
    pub landlock: Option<LandlockSpec>,
    pub strict_caps: bool,
    pub close_range: bool,
    pub err_fd: OwnedFd,
    /// Read end of the pipe on which the helper writes one byte once pid 1 is in the
    /// cgroups (EOF: the helper could not move it, and pid 1 must not go on).
    pub cgroup_gate: Option<OwnedFd>,
    /// Write end of the pipe on which pid 1 lists the placeholders it created.
    pub placeholders: Option<OwnedFd>,
    /// Proxy socket (`O_PATH`), bridge port, and the tag line sent ahead of each connection.
    pub proxy: Option<(OwnedFd, u16, Vec<u8>)>,
    pub parent: libc::pid_t,
}

/// Writes `[code] message` to the error pipe and exits with `code`.
pub(crate) fn fail(err_fd: RawFd, code: u8, msg: &str) -> ! {
    let mut buf = Vec::with_capacity(msg.len() + 1);
    buf.push(code);
    buf.extend_from_slice(msg.as_bytes());
    // SAFETY: writing a buffer to our pipe, then exiting without unwinding.
    unsafe {
        libc::write(err_fd, buf.as_ptr().cast(), buf.len());
        libc::_exit(i32::from(code));
    }
}

pub(crate) fn signal_set(extra: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset manipulation on a local value.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in FORWARDED.iter().chain(extra) {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

extern "C" fn ignore_signal(_: libc::c_int) {}

/// What `/proc/1/cmdline` shows inside the room instead of its creator's command line
/// (which may name settings: `toolgate sandbox run --settings …`).
pub(crate) const INIT_TITLE: &[u8] = b"toolgate-sandbox-init";

/// pid 1. Never returns.
pub(crate) fn run(ready: Ready) -> ! {
    let err = ready.err_fd.as_raw_fd();
    // Before the fork, so that the command process never shows it either.
    if !sys::overwrite_cmdline(INIT_TITLE) {
        fail(
            err,
            EXIT_SETUP_FAILED,
            "cannot replace pid 1's command line (/proc/self/stat unreadable)",
        );
    }
    if let Err(e) = enter(&ready) {
        fail(err, EXIT_SETUP_FAILED, &e.to_string());
    }
    // Dummy handlers: pid 1 of a namespace drops signals whose disposition is SIG_DFL.
    // Installed and blocked before the fork, so that nothing sent meanwhile is lost: it stays
    // pending until `supervise` takes it.
    let set = signal_set(&[libc::SIGCHLD]);
    // SAFETY: installing a no-op handler and blocking; all signals are taken by sigwaitinfo.
    // SIGPIPE ignored: a failed write to the start pipe must be an EPIPE, not our death.
    unsafe {
        for &s in FORWARDED.iter().chain(&[libc::SIGCHLD]) {
            libc::signal(s, ignore_signal as *const () as libc::sighandler_t);
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let (go_rd, go_wr) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
        Ok(p) => p,
        Err(e) => fail(err, EXIT_SETUP_FAILED, &format!("pipe(view ready): {e}")),
    };
    // SAFETY: the helper is single-threaded; the child execs or _exits.
    let child = unsafe { libc::fork() };
    if child < 0 {
        fail(err, EXIT_SETUP_FAILED, "fork(command) failed");
    }
    if child == 0 {
        drop(go_wr);
        exec_command(&ready, &go_rd);
    }
    drop(go_rd);
    if let Err(e) = build_view(&ready, go_wr.as_raw_fd()) {
        // Exiting closes the pipe: the command process sees EOF and exits unrun (and, in a
        // pid namespace, the kernel kills it anyway when its pid 1 dies).
        fail(err, EXIT_SETUP_FAILED, &e.to_string());
    }
    // The only possible failure is EPIPE (SIGPIPE is ignored): the command process already
    // failed and wrote why on the error pipe; `supervise` reaps it and reports its status.
    // SAFETY: writing one byte to our pipe.
    unsafe { libc::write(go_wr.as_raw_fd(), b"1".as_ptr().cast(), 1) };
    drop(go_wr);
    let tier_a = ready.tier_a;
    drop(ready);
    let status = supervise(child, &set);
    crate::timing::mark("init-command-reaped");
    kill_rest(tier_a);
    crate::timing::mark("init-rest-killed");
    // SAFETY: exiting pid 1 (in tier A the kernel then kills the whole namespace).
    unsafe { libc::_exit(status) }
}

/// Kills everything left: the whole pid namespace (tier A: we are its pid 1), or — without a
/// pid namespace — only our own descendants (we are their subreaper). Never `kill(-1)` there.
fn kill_rest(tier_a: bool) {
    if tier_a {
        // SAFETY: as pid 1 of our namespace, -1 means every other process in it.
        // Blocking reap until ECHILD: every process of the namespace is our descendant
        // (orphans are reparented to us), so afterwards none can still be in a syscall.
        unsafe {
            libc::kill(-1, libc::SIGKILL);
            while libc::waitpid(-1, std::ptr::null_mut(), libc::__WALL) > 0
                || sys::errno() == libc::EINTR
            {}
        }
        return;
    }
    // SAFETY: getpid never fails.
    let me = unsafe { libc::getpid() };
    let path = format!("/proc/self/task/{me}/children");
    for _ in 0..100 {
        let children = std::fs::read_to_string(&path).unwrap_or_default();
        let pids: Vec<libc::pid_t> = children
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: killing and reaping our own children (orphans reparented to us).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// First steps of pid 1: die with the helper, and wait until the helper has moved us into the
/// cgroups (before any fork, so that every process of the sandbox is in them).
fn enter(ready: &Ready) -> Result<(), SandboxError> {
    // SAFETY: prctl/getppid with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        // In a new pid namespace the parent is outside it: getppid() is 0 while it lives.
        let expected = if ready.tier_a { 0 } else { ready.parent };
        if libc::getppid() != expected {
            libc::_exit(i32::from(EXIT_SETUP_FAILED));
        }
    }
    crate::timing::mark("init-start");
    if let Some(gate) = &ready.cgroup_gate {
        let mut byte = 0u8;
        // SAFETY: reading one byte from our pipe.
        let n = unsafe { libc::read(gate.as_raw_fd(), (&mut byte as *mut u8).cast(), 1) };
        if n != 1 || byte != b'1' {
            return Err(SandboxError::io(
                "cgroup",
                "wait for cgroup.procs attach by the helper",
                std::io::Error::from_raw_os_error(libc::EPIPE),
                "fix cgroup delegation or disable cgroup layers",
            ));
        }
        crate::timing::mark("init-in-cgroup");
    }
    Ok(())
}

/// The filesystem view, loopback, pid 1's own privileges given up, and the proxy bridge.
/// `go_fd` is the write end of the command's start pipe, closed in the bridge so that only
/// pid 1 holds it.
fn build_view(ready: &Ready, go_fd: RawFd) -> Result<(), SandboxError> {
    if ready.tier_a {
        if ready.policy.filesystem.mode == FsMode::Off {
            mounts::setup_off()?;
        } else {
            let created = mounts::setup(
                &ready.policy,
                &ready.tmp_binds,
                &ready.socket_keeps,
                &ready.nested,
            )?;
            if let Some(fd) = &ready.placeholders {
                // Non-blocking pipe: a list too long for it only means those placeholders
                // stay in the workspace.
                let bytes = crate::placeholders::encode(&created);
                // SAFETY: writing a local buffer to our pipe.
                unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
            }
        }
    } else {
        // No pid namespace: become a subreaper so orphans stay ours to kill.
        // SAFETY: prctl with integer arguments.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    }
    if ready.net_ns {
        let e = sys::loopback_up();
        if e != 0 {
            return Err(SandboxError::io(
                "net_ns",
                "loopback up",
                std::io::Error::from_raw_os_error(e),
                "disable net_ns",
            ));
        }
    }
    crate::timing::mark("init-view-built");
    let listener = match &ready.proxy {
        Some((_, port, _)) => Some(bridge::listen(*port)?),
        None => None,
    };
    // Nothing pid 1 (or the bridge) does from here on needs a privilege: waiting, forwarding
    // signals and killing same-uid processes, relaying bytes to the proxy's socket. Kept,
    // every capability of the sandbox's user namespace (the caller's own, without one) would
    // be the prize for any flaw in code that handles the command's signals and bytes.
    caps::drop_all(ready.strict_caps)?;
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(SandboxError::last_os(
            "no_new_privs",
            "PR_SET_NO_NEW_PRIVS in pid 1",
            "report this bug",
        ));
    }
    // With no capabilities left, pid 1 and the bridge would be the command's equals: same
    // uid, same (empty) capability sets, so `/proc/1/mem` would open for writing unless
    // Landlock's ptrace scoping is there. Non-dumpable, they need CAP_SYS_PTRACE in the
    // host's user namespace instead: no process of the sandbox can take them over and use
    // their freedom from seccomp and Landlock. (The command's own `execve` makes it dumpable
    // again; the bridge inherits this.)
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(SandboxError::last_os(
            "user_ns",
            "PR_SET_DUMPABLE 0 in pid 1",
            "report this bug",
        ));
    }
    if let (Some(listener), Some((path_fd, _, tag_line))) = (listener, &ready.proxy) {
        // SAFETY: single-threaded; the bridge child never returns.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: closing the error pipe's and the start pipe's copies in the bridge.
            unsafe {
                libc::close(ready.err_fd.as_raw_fd());
                libc::close(go_fd);
            }
            bridge::run(listener, path_fd.as_raw_fd(), tag_line);
        }
        if pid < 0 {
            return Err(SandboxError::last_os("net_ns", "fork(bridge)", "retry"));
        }
    }
    Ok(())
}

/// Waits for the command, forwarding signals and reaping orphans; returns the exit code.
fn supervise(child: libc::pid_t, set: &libc::sigset_t) -> i32 {
    loop {
        // SAFETY: waiting for a blocked signal.
        let sig = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::sigwaitinfo(set, &mut info)
        };
        if sig < 0 {
            continue;
        }
        if sig != libc::SIGCHLD {
            // SAFETY: forwarding to the command's process group (it called setsid).
            unsafe {
                if libc::kill(-child, sig) != 0 {
                    libc::kill(child, sig);
                }
            }
            continue;
        }
        loop {
            let mut status = 0;
            // SAFETY: reaping any child.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            if pid == child {
                return if libc::WIFEXITED(status) {
                    libc::WEXITSTATUS(status)
                } else if libc::WIFSIGNALED(status) {
                    128 + libc::WTERMSIG(status)
                } else {
                    i32::from(EXIT_SETUP_FAILED)
                };
            }
        }
    }
}

/// The command process: the restrictions, then `execve` once the view is complete. Never
/// returns.
fn exec_command(ready: &Ready, go: &OwnedFd) -> ! {
    let err = ready.err_fd.as_raw_fd();
    if let Err(e) = restrict_early(ready) {
        fail(err, EXIT_SETUP_FAILED, &e.to_string());
    }
    if !wait_for_view(go) {
        // pid 1 failed (and reports why) or died: run nothing.
        // SAFETY: exiting the forked child without unwinding.
        unsafe { libc::_exit(i32::from(EXIT_SETUP_FAILED)) };
    }
    if let Err(e) = restrict_in_view(ready) {
        fail(err, EXIT_SETUP_FAILED, &e.to_string());
    }
    let mut argv: Vec<*const libc::c_char> = ready.argv.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = ready.envp.iter().map(|a| a.as_ptr()).collect();
    envp.push(std::ptr::null());
    if ready.close_range {
        if err > 3 {
            // SAFETY: closing inherited descriptors below the error pipe.
            unsafe { libc::syscall(libc::SYS_close_range, 3u32, (err - 1) as u32, 0u32) };
        }
        sys::close_range_from(err as u32 + 1);
    } else {
        for fd in 3..65536 {
            if fd != err {
                // SAFETY: closing descriptors we do not use.
                unsafe { libc::close(fd) };
            }
        }
    }
    crate::timing::mark("command-execve");
    // SAFETY: argv/envp are NULL-terminated arrays of valid C strings.
    unsafe { libc::execvpe(argv[0], argv.as_ptr(), envp.as_ptr()) };
    let e = std::io::Error::last_os_error();
    let code = if e.raw_os_error() == Some(libc::ENOENT) {
        127
    } else {
        126
    };
    let name = ready
        .argv
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    fail(err, code, &format!("cannot execute `{name}`: {e}"))
}

/// Blocks until pid 1 writes its byte; `false` on EOF (pid 1 failed or died).
fn wait_for_view(go: &OwnedFd) -> bool {
    loop {
        let mut byte = 0u8;
        // SAFETY: reading one byte from our pipe.
        let n = unsafe { libc::read(go.as_raw_fd(), (&mut byte as *mut u8).cast(), 1) };
        if n == 1 {
            crate::timing::mark("command-view-ready");
            return byte == b'1';
        }
        if n < 0 && sys::errno() == libc::EINTR {
            continue;
        }
        return false;
    }
}

/// What does not depend on the view: it runs while pid 1 builds it (session, rlimits,
/// `no_new_privs`, seccomp — none of them looks up a path).
fn restrict_early(ready: &Ready) -> Result<(), SandboxError> {
    crate::timing::mark("command-forked");
    // SAFETY: signal mask/disposition reset, setsid, prctl — plain syscalls.
    // SIGPIPE too: an ignored signal stays ignored across `execve`, and Rust's runtime (ours,
    // and pid 1's above) ignores it — the command would see EPIPE where a shell pipeline
    // expects to be killed (`yes | head -1` complaining "Broken pipe"). `std::process::Command`
    // resets it for the same reason.
    unsafe {
        for &s in FORWARDED.iter().chain(&[libc::SIGCHLD, libc::SIGPIPE]) {
            libc::signal(s, libc::SIG_DFL);
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        if libc::setsid() < 0 {
            return Err(SandboxError::last_os(
                "session",
                "setsid",
                "report this bug",
            ));
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    limits::apply(&ready.rlimits)?;
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(SandboxError::last_os(
            "no_new_privs",
            "PR_SET_NO_NEW_PRIVS",
            "report this bug",
        ));
    }
    crate::timing::mark("command-rlimits");
    seccomp::install(&ready.seccomp)?;
    crate::timing::mark("command-seccomp");
    Ok(())
}

/// What needs the finished view: the working directory and Landlock's path rules; then the
/// capabilities go (after Landlock, which opens its paths with whatever access they give).
fn restrict_in_view(ready: &Ready) -> Result<(), SandboxError> {
    std::env::set_current_dir(&ready.cwd).map_err(|e| {
        SandboxError::io(
            "mount_ns",
            format!("chdir {}", ready.cwd.display()),
            e,
            "the working directory must exist and be visible in the sandbox",
        )
    })?;
    if let Some(spec) = &ready.landlock {
        landlock::apply(spec)?;
    }
    crate::timing::mark("command-landlock");
    caps::drop_all(ready.strict_caps)?;
    crate::timing::mark("command-caps");
    Ok(())
}
