//! Starting a command in its own process group and stopping everything it started.
//!
//! The shell runs as `bash -c` with stdin on `/dev/null` and stdout and stderr on one pipe
//! (so the two stay in order), as the leader of a new process group. Stopping a command
//! signals the group and every process found to descend from the command (by parent links,
//! by sessions that a recorded descendant leads, and by the descendants recorded every
//! [`TRACK_INTERVAL`]), SIGTERM first and SIGKILL after a grace period. A [`Proc`] dropped
//! before its command finished does the same from a helper thread, so a dropped tool call
//! leaves nothing behind.
//!
//! The limit: a process that leaves the group *and* loses its parent before it is recorded
//! (a daemon that double-forks within [`TRACK_INTERVAL`]) cannot be found without a cgroup.
//! Inside a sandbox room the pid namespace ends with the command, which closes that gap.

use std::ffi::OsString;
use std::future::Future;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::MissedTickBehavior;
use toolgate_core::sandbox::Room;

use crate::shell::config::{
    CWD_REPORT_FD, DRAIN_GRACE, GROUP_POLL_INTERVAL, MAX_TRACKED, READ_CHUNK, TRACK_INTERVAL,
};
use crate::shell::output::{OutputBuffer, Pushed};
use crate::shell::procfs::{self, ProcId};

/// Why a command could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    /// The shell program is missing.
    #[error("the shell `{0}` was not found; the Bash tool needs bash installed and on PATH")]
    NoShell(String),
    /// The sandbox room could not build the command.
    #[error("the sandbox could not prepare the command: {0}")]
    Room(io::Error),
    /// Anything else.
    #[error("could not start the command: {0}")]
    Io(#[from] io::Error),
}

/// What to start.
pub(crate) struct SpawnRequest<'a> {
    /// The shell program.
    pub shell: &'a Path,
    /// The command text, as the model sent it.
    pub command: &'a str,
    /// Working directory.
    pub cwd: &'a Path,
    /// A handle on it, to start in by `fchdir` when there is no room (`shell::cwd`).
    pub cwd_handle: Option<OwnedFd>,
    /// The scrubbed environment (used when there is no room).
    pub env: Vec<(OsString, OsString)>,
    /// Names removed by scrubbing (removed from a room's environment too).
    pub removed_env: &'a [OsString],
    /// The sandbox room, if any.
    pub room: Option<&'a dyn Room>,
}

/// How a shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ExitInfo {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal, when a signal ended it.
    pub signal: Option<i32>,
}

impl From<ExitStatus> for ExitInfo {
    fn from(s: ExitStatus) -> Self {
        Self {
            code: s.code(),
            signal: s.signal(),
        }
    }
}

/// Why [`Proc::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The shell exited (and, when following the group, the group is empty).
    Exited,
    /// The stop future fired.
    Stopped,
    /// The output passed its byte limit.
    OverLimit,
}

/// The script `bash -c` runs: an `EXIT` trap that reports the final directory on
/// [`CWD_REPORT_FD`], then the command on the same line (so line numbers in error messages
/// stay right). A command that replaces the trap or `exec`s reports nothing, and the
/// session's directory then follows the static analysis or stays.
fn script(command: &str) -> String {
    format!("trap '{{ pwd -P >&{CWD_REPORT_FD}; }} 2>/dev/null' EXIT; {command}")
}

/// In the child, between fork and exec: puts the report pipe on [`CWD_REPORT_FD`].
fn install_report_fd(raw: RawFd) -> io::Result<()> {
    if raw == CWD_REPORT_FD {
        // dup2 onto itself would keep close-on-exec; clear the flag instead.
        // SAFETY: fcntl on a descriptor this process owns; async-signal-safe.
        if unsafe { libc::fcntl(raw, libc::F_SETFD, 0) } == -1 {
            return Err(io::Error::last_os_error());
        }
    // SAFETY: dup2 of an open descriptor onto a fixed number; async-signal-safe, and the
    // new descriptor is not close-on-exec.
    } else if unsafe { libc::dup2(raw, CWD_REPORT_FD) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Starts a command.
pub(crate) fn spawn(req: SpawnRequest<'_>) -> Result<Proc, SpawnError> {
    let argv: Vec<OsString> = vec![
        req.shell.as_os_str().to_owned(),
        "-c".into(),
        script(req.command).into(),
    ];
    let mut cmd = match req.room {
        Some(room) => {
            let mut cmd = room.command(&argv, req.cwd).map_err(SpawnError::Room)?;
            for name in req.removed_env {
                cmd.env_remove(name);
            }
            cmd
        }
        None => {
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..])
                .current_dir(req.cwd)
                .env_clear()
                .envs(req.env);
            cmd
        }
    };
    let (reader, writer) = io::pipe()?;
    let writer_err = writer.try_clone()?;
    let (cwd_reader, cwd_writer) = io::pipe()?;
    rustix::io::ioctl_fionbio(&cwd_reader, true).map_err(io::Error::from)?;
    let raw = cwd_writer.as_raw_fd();
    cmd.stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_err)
        .process_group(0)
        .kill_on_drop(true);
    // Nothing but 0–2 and the report pipe (installed next) reaches the command: in
    // particular no approval channel (docs/permissions.md). A room's command did this
    // itself, before handing its helper the descriptors the helper needs.
    if req.room.is_none() {
        toolgate_core::child::only_standard_descriptors(cmd.as_std_mut());
    }
    // SAFETY: the closure runs in the child between fork and exec; it only calls dup2 or
    // fcntl (async-signal-safe) and allocates nothing on success.
    unsafe {
        cmd.pre_exec(move || install_report_fd(raw));
    }
    if let (None, Some(handle)) = (req.room, req.cwd_handle) {
        // SAFETY: as above: fchdir only. The closure owns the handle until `cmd` is dropped.
        unsafe {
            cmd.pre_exec(move || crate::shell::cwd::enter(handle.as_raw_fd()));
        }
    }
    let child = cmd.spawn().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound && req.room.is_none() {
            SpawnError::NoShell(req.shell.display().to_string())
        } else {
            SpawnError::Io(e)
        }
    })?;
    // The command holds our copies of the pipes' write ends; close them so that the reader
    // sees end-of-file when the command's processes are done.
    drop(cmd);
    drop(cwd_writer);
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| io::Error::other("the command exited before its pid was known"))?;
    let start = procfs::stat(pid).map_or(0, |s| s.start);
    let stdout = ChildStdout::from_std(std::process::ChildStdout::from(OwnedFd::from(reader)))?;
    Ok(Proc {
        child,
        leader: ProcId { pid, start },
        reader: Some(stdout),
        cwd_report: Some(cwd_reader),
        exit: None,
        tracked: Vec::new(),
        members: Vec::new(),
        started: Instant::now(),
        finished: false,
        buf: vec![0; READ_CHUNK],
    })
}

/// A running command: its shell (the process group leader), the output pipe, and what is
/// known about its descendants. Dropping it before the command finished kills everything.
pub(crate) struct Proc {
    child: Child,
    leader: ProcId,
    reader: Option<ChildStdout>,
    cwd_report: Option<io::PipeReader>,
    exit: Option<ExitInfo>,
    tracked: Vec<ProcId>,
    /// Live members of the group seen last (see [`procfs::group_members`]).
    members: Vec<ProcId>,
    started: Instant,
    /// Nothing of the command is left to kill.
    finished: bool,
    buf: Vec<u8>,
}

async fn read_some(reader: &mut Option<ChildStdout>, buf: &mut [u8]) -> io::Result<usize> {
    match reader {
        Some(r) => r.read(buf).await,
        None => std::future::pending().await,
    }
}

fn lock(out: &Mutex<OutputBuffer>) -> std::sync::MutexGuard<'_, OutputBuffer> {
    out.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Proc {
    /// The shell's pid, which is also the process group id.
    pub(crate) fn pid(&self) -> i32 {
        self.leader.pid
    }

    /// How the shell ended, once it has.
    pub(crate) fn exit(&self) -> Option<ExitInfo> {
        self.exit
    }

    /// Handles one read result: pushes data, or notes end-of-file.
    fn take(&mut self, read: io::Result<usize>, out: &Mutex<OutputBuffer>) -> Pushed {
        match read {
            Ok(0) | Err(_) => {
                self.reader = None;
                Pushed::Ok
            }
            Ok(n) => lock(out).push(&self.buf[..n]),
        }
    }

    /// Records the command's descendants, so that ones which leave the group can be found
    /// after their parents are gone.
    fn track(&mut self) {
        let snapshot = procfs::all();
        let found = procfs::command_processes(&snapshot, self.leader, &self.tracked);
        self.tracked.retain(|p| found.contains(p));
        for p in found {
            if self.tracked.len() >= MAX_TRACKED {
                break;
            }
            if !self.tracked.contains(&p) {
                self.tracked.push(p);
            }
        }
    }

    /// Reads output until the shell exits (and, with `follow_group`, until no process of
    /// the group is left), `stop` fires, or the output passes its limit.
    pub(crate) async fn run(
        &mut self,
        out: &Mutex<OutputBuffer>,
        mut stop: Pin<&mut impl Future<Output = ()>>,
        follow_group: bool,
    ) -> Ended {
        let first_track = tokio::time::Instant::from_std(self.started + TRACK_INTERVAL);
        let mut track = tokio::time::interval_at(first_track, TRACK_INTERVAL);
        track.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut poll = tokio::time::interval(GROUP_POLL_INTERVAL);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            if self.exit.is_some() && !follow_group {
                return Ended::Exited;
            }
            tokio::select! {
                biased;
                () = &mut stop => return Ended::Stopped,
                status = self.child.wait(), if self.exit.is_none() => {
                    self.exit = Some(status.map(ExitInfo::from).unwrap_or_default());
                }
                read = read_some(&mut self.reader, &mut self.buf) => {
                    if self.take(read, out) == Pushed::OverLimit {
                        return Ended::OverLimit;
                    }
                }
                _ = poll.tick(), if self.exit.is_some() => {
                    if procfs::group_members(self.leader.pid, &mut self.members).is_empty() {
                        self.drain(out, DRAIN_GRACE).await;
                        self.finished = true;
                        return Ended::Exited;
                    }
                }
                _ = track.tick() => self.track(),
            }
        }
    }

    /// Reads what is left in the pipe until end-of-file or `grace`.
    async fn drain(&mut self, out: &Mutex<OutputBuffer>, grace: Duration) {
        let deadline = tokio::time::sleep(grace);
        tokio::pin!(deadline);
        while self.reader.is_some() {
            tokio::select! {
                read = read_some(&mut self.reader, &mut self.buf) => {
                    if self.take(read, out) == Pushed::OverLimit {
                        return;
                    }
                }
                () = &mut deadline => return,
            }
        }
    }

    /// After the shell exited: reads the rest of the output (up to [`DRAIN_GRACE`]) and
    /// says whether processes of the group are still running.
    pub(crate) async fn settle(&mut self, out: &Mutex<OutputBuffer>) -> bool {
        self.drain(out, DRAIN_GRACE).await;
        let left = !procfs::group_members(self.leader.pid, &mut self.members).is_empty();
        if !left {
            self.finished = true;
        }
        left
    }

    fn targets(&self) -> Vec<ProcId> {
        procfs::command_processes(&procfs::all(), self.leader, &self.tracked)
    }

    fn anything_alive(&self, targets: &[ProcId]) -> bool {
        procfs::group_alive(self.leader.pid) || targets.iter().any(ProcId::alive)
    }

    /// Stops everything the command started: SIGTERM, up to `grace` for it to exit, then
    /// SIGKILL. Output that arrives meanwhile is kept.
    pub(crate) async fn terminate(&mut self, out: &Mutex<OutputBuffer>, grace: Duration) {
        if self.finished {
            return;
        }
        let mut targets = self.targets();
        signal_all(self.leader.pid, &targets, Signal::TERM);
        let deadline = Instant::now() + grace;
        while self.anything_alive(&targets) && Instant::now() < deadline {
            tokio::select! {
                read = read_some(&mut self.reader, &mut self.buf) => {
                    let _ = self.take(read, out);
                }
                status = self.child.wait(), if self.exit.is_none() => {
                    self.exit = Some(status.map(ExitInfo::from).unwrap_or_default());
                }
                () = tokio::time::sleep(GROUP_POLL_INTERVAL) => {}
            }
        }
        if self.anything_alive(&targets) {
            for p in self.targets() {
                if !targets.contains(&p) {
                    targets.push(p);
                }
            }
            signal_all(self.leader.pid, &targets, Signal::KILL);
        }
        // After SIGKILL the shell is gone at once (unless stuck in the kernel); do not let
        // a stuck one hold the result back.
        if self.exit.is_none()
            && let Ok(status) = tokio::time::timeout(DRAIN_GRACE, self.child.wait()).await
        {
            self.exit = Some(status.map(ExitInfo::from).unwrap_or_default());
        }
        self.drain(out, DRAIN_GRACE).await;
        self.finished = true;
    }

    /// The directory the shell reported on exit, if it did.
    pub(crate) fn reported_cwd(&mut self) -> Option<PathBuf> {
        let mut pipe = self.cwd_report.take()?;
        let mut buf = vec![0u8; 8192];
        let n = pipe.read(&mut buf).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        let line = text.lines().next_back()?.trim_end();
        let path = PathBuf::from(line);
        path.is_absolute().then_some(path)
    }
}

/// Sends `sig` to the group `pgid` and to each target that is still the same process.
fn signal_all(pgid: i32, targets: &[ProcId], sig: Signal) {
    if let Some(group) = Pid::from_raw(pgid) {
        // ESRCH (nobody left) is fine.
        let _ = rustix::process::kill_process_group(group, sig);
    }
    for t in targets {
        if t.alive()
            && let Some(pid) = Pid::from_raw(t.pid)
        {
            let _ = rustix::process::kill_process(pid, sig);
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // The call was dropped (cancelled, or past the gate's deadline) or the runtime is
        // shutting down: SIGTERM now, SIGKILL after the grace period from a thread, since
        // nothing async can run here. The child's kill_on_drop SIGKILLs the shell itself.
        let pgid = self.leader.pid;
        let leader = self.leader;
        let tracked = std::mem::take(&mut self.tracked);
        let targets = procfs::command_processes(&procfs::all(), leader, &tracked);
        signal_all(pgid, &targets, Signal::TERM);
        let grace = crate::shell::config::TIMEOUT_TERM_GRACE;
        let killer = move || {
            let deadline = Instant::now() + grace;
            let alive = |t: &[ProcId]| procfs::group_alive(pgid) || t.iter().any(ProcId::alive);
            while alive(&targets) && Instant::now() < deadline {
                std::thread::sleep(GROUP_POLL_INTERVAL);
            }
            let mut all = targets;
            for p in procfs::command_processes(&procfs::all(), leader, &all) {
                if !all.contains(&p) {
                    all.push(p);
                }
            }
            signal_all(pgid, &all, Signal::KILL);
        };
        if std::thread::Builder::new()
            .name("toolgate-kill".into())
            .spawn(killer)
            .is_err()
        {
            // No thread: kill at once rather than not at all.
            signal_all(pgid, &targets_now(leader, &tracked), Signal::KILL);
        }
    }
}

fn targets_now(leader: ProcId, known: &[ProcId]) -> Vec<ProcId> {
    procfs::command_processes(&procfs::all(), leader, known)
}
