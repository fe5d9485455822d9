//! Runs a `command` handler: its own process group, the event JSON on stdin (written
//! concurrently, so a hook that never reads or closes stdin early cannot wedge us), stdout
//! and stderr drained concurrently and capped, and a parent-enforced timeout that kills the
//! whole group.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::error::HookError;

/// Bytes kept from each of a hook's stdout and stderr. Hook answers are small JSON
/// objects; the rest is drained and discarded so a hook printing 100 MB neither blocks on a
/// full pipe nor exhausts memory.
pub const MAX_STREAM_BYTES: usize = 1024 * 1024;

/// Size of the buffer used to drain a stream.
const READ_CHUNK: usize = 64 * 1024;

/// How a handler ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Exited with a code.
    Code(i32),
    /// Killed by a signal (not by us).
    Signal(i32),
    /// Over its time limit; its process group was killed.
    TimedOut,
}

/// What a handler produced.
#[derive(Debug)]
pub(crate) struct RawOutput {
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr: Vec<u8>,
}

/// Runs `command` (with `args`: exec form; without: `sh -c command`).
pub(crate) async fn run_command(
    command: &str,
    args: Option<&[String]>,
    payload: &[u8],
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<RawOutput, HookError> {
    let mut cmd = match args {
        Some(args) => {
            let mut c = Command::new(command);
            c.args(args);
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(command);
            c
        }
    };
    cmd.current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // A hook gets its three pipes and nothing else of toolgate's (docs/permissions.md).
    toolgate_core::child::only_standard_descriptors(cmd.as_std_mut());
    let mut child = cmd
        .spawn()
        .map_err(|e| HookError::io(format!("could not start hook `{command}`"), e))?;
    let pgid = child.id().and_then(|id| Pid::from_raw(id as i32));
    // If the caller drops this future (the call was cancelled), the group still dies.
    let mut guard = GroupGuard(pgid);
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();

    let write = async move {
        if let Some(mut s) = stdin {
            // A hook may exit or close stdin without reading: EPIPE is not an error.
            let _ = s.write_all(payload).await;
            let _ = s.shutdown().await;
        }
    };
    let wait = async {
        let status = child.wait().await;
        // The hook is done: whatever it left running in its group goes with it, so no
        // orphan keeps our pipes (and the drain) open.
        kill_group(pgid);
        status
    };
    let all = async { tokio::join!(write, drain(stdout), drain(stderr), wait) };
    match tokio::time::timeout(timeout, all).await {
        Ok(((), (stdout, stdout_truncated), (stderr, _), status)) => {
            guard.0 = None;
            let status = status.map_err(|e| HookError::io("waiting for a hook", e))?;
            Ok(RawOutput {
                exit: exit_of(status),
                stdout,
                stdout_truncated,
                stderr,
            })
        }
        Err(_) => {
            kill_group(pgid);
            let _ = child.kill().await;
            guard.0 = None;
            Ok(RawOutput {
                exit: Exit::TimedOut,
                stdout: Vec::new(),
                stdout_truncated: false,
                stderr: Vec::new(),
            })
        }
    }
}

/// Kills the process group when dropped while armed.
struct GroupGuard(Option<Pid>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0.take());
    }
}

fn kill_group(pgid: Option<Pid>) {
    if let Some(pgid) = pgid {
        // ESRCH (group already gone) is the normal case.
        let _ = kill_process_group(pgid, Signal::KILL);
    }
}

fn exit_of(status: ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => Exit::Code(c),
        (None, Some(s)) => Exit::Signal(s),
        (None, None) => Exit::Signal(0),
    }
}

/// Reads a stream to its end, keeping the first [`MAX_STREAM_BYTES`].
pub(crate) async fn drain<R: AsyncRead + Unpin>(stream: Option<R>) -> (Vec<u8>, bool) {
    let Some(mut stream) = stream else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_STREAM_BYTES.saturating_sub(kept.len());
                if n > room {
                    truncated = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (kept, truncated)
}
