//! Limits of the Bash tool and its background tasks, as named constants with the reason for
//! each value, gathered in [`ShellConfig`].

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Bash: run time when the call gives no `timeout` (Claude Code's value, 2 minutes).
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;

/// Bash: largest `timeout` a call may ask for; larger values are clamped (Claude Code's
/// value, 10 minutes). Anything longer belongs in a background task.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// Bash and TaskOutput: characters of output returned inline. Beyond it the result keeps the
/// head and the tail and names the file holding everything (Claude Code's
/// `BASH_MAX_OUTPUT_LENGTH` default).
pub const DEFAULT_MAX_INLINE_CHARS: usize = 30_000;

/// Bytes of output a command may produce before it is killed. Claude Code's value (5 GB):
/// far beyond anything a model can use, but it keeps a runaway `yes` from filling the disk.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 5_000_000_000;

/// Background tasks that may run at once per session. Each holds a process group, a pipe and
/// an output file; a model that starts more has lost track of them (TaskStop frees a slot).
pub const DEFAULT_MAX_LIVE_TASKS: usize = 16;

/// Finished tasks remembered per session (their status and output stay readable); older
/// finished tasks are forgotten first. Their output files are kept.
pub const MAX_FINISHED_TASKS: usize = 64;

/// Time between SIGTERM and SIGKILL when a task is stopped (TaskStop, session end): long
/// enough for a server to close its sockets and flush its logs.
pub const TERM_GRACE: Duration = Duration::from_secs(2);

/// Time between SIGTERM and SIGKILL when a foreground command times out. Shorter than
/// [`TERM_GRACE`] because the gate drops the call [`toolgate_core::TIMEOUT_GRACE`] (2 s)
/// after its timeout, and the partial output must get back before that.
pub const TIMEOUT_TERM_GRACE: Duration = Duration::from_secs(1);

/// After the shell exits, how long to keep reading for output that is still in flight before
/// the pipe is given up (a process that left the group can hold it open forever).
pub const DRAIN_GRACE: Duration = Duration::from_millis(250);

/// How often a finished shell's process group is checked for remaining processes, and how
/// often a terminating group is checked for exit.
pub const GROUP_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// How often a long-running command's descendants are recorded (a `/proc` scan), so that
/// processes which leave the process group (`setsid`, double forks) can still be killed
/// after their parent is gone. A scan costs a few milliseconds; commands that finish sooner
/// are never scanned.
pub const TRACK_INTERVAL: Duration = Duration::from_secs(2);

/// Most descendants recorded per command (a fork bomb must not grow the record without
/// bound; the process group still reaches all of them).
pub const MAX_TRACKED: usize = 4096;

/// Bytes read from the output pipe at a time: a default Linux pipe's capacity, so one read
/// usually empties it.
pub const READ_CHUNK: usize = 64 * 1024;

/// TaskOutput: how long a blocking call waits for the task to finish when it gives no
/// `timeout` (Claude Code's value).
pub const TASK_OUTPUT_DEFAULT_WAIT_MS: u64 = 30_000;

/// TaskOutput: longest wait a call may ask for (Claude Code's value).
pub const TASK_OUTPUT_MAX_WAIT_MS: u64 = 600_000;

/// The file descriptor on which the shell reports its final working directory (an `EXIT`
/// trap runs `pwd -P >&63`). Above 9, so it never collides with the descriptors scripts
/// open by number (`exec 3>file`); Bash allocates `{var}>` descriptors from 10 upwards
/// and skips it because it is open.
pub const CWD_REPORT_FD: i32 = 63;

/// Settings of the Bash tool and background tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellConfig {
    /// The shell program, looked up on `PATH` when relative. Default `bash`.
    pub shell: PathBuf,
    /// See [`DEFAULT_MAX_INLINE_CHARS`].
    pub max_inline_chars: usize,
    /// See [`DEFAULT_MAX_OUTPUT_BYTES`].
    pub max_output_bytes: u64,
    /// See [`DEFAULT_MAX_LIVE_TASKS`].
    pub max_live_tasks: usize,
    /// Where output files go: a private directory per session is made under it. Default:
    /// the session's output directory, shared with the gate's own spills
    /// (`toolgate_core::outputs`: `<workspace>/.toolgate/outputs/<session>/`, capped per
    /// session, emptied at its end except for the files a result named).
    pub output_dir: Option<PathBuf>,
    /// Environment variables passed on although their names or values look like secrets:
    /// exact names, or prefixes ending in `*` (`MY_APP_*`).
    pub allow_env: Vec<String>,
    /// The environment commands start from, before secrets are removed. `None` uses this
    /// process's environment; set it to give commands a fixed environment (and in tests).
    pub env: Option<Vec<(OsString, OsString)>>,
    /// Variables set for every command after secrets are removed: the settings' `env` (a
    /// sandboxed command gets them from the room's policy instead).
    pub set_env: Vec<(String, String)>,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            shell: PathBuf::from("bash"),
            max_inline_chars: DEFAULT_MAX_INLINE_CHARS,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_live_tasks: DEFAULT_MAX_LIVE_TASKS,
            output_dir: None,
            allow_env: Vec::new(),
            env: None,
            set_env: Vec::new(),
        }
    }
}

impl ShellConfig {
    /// The environment commands start from, before scrubbing.
    pub(crate) fn source_env(&self) -> Vec<(OsString, OsString)> {
        match &self.env {
            Some(env) => env.clone(),
            None => std::env::vars_os().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_grace_leaves_room_for_the_result() {
        assert!(TIMEOUT_TERM_GRACE + DRAIN_GRACE * 2 < toolgate_core::TIMEOUT_GRACE);
    }
}
