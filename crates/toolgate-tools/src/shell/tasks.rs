//! Background tasks: commands that outlive the call that started them. Each task has a
//! supervisor (a tokio task) that reads its output into a file and watches for three ends:
//! the command finishes, TaskStop asks, or the session ends. The table of tasks lives in the
//! session's extensions; [`tasks`] lists it for the library user.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate_core::Session;

use crate::shell::config::{MAX_FINISHED_TASKS, TERM_GRACE};
use crate::shell::exec::{Ended, Proc};
use crate::shell::output::OutputBuffer;

/// Where a background task stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TaskStatus {
    /// Still running.
    Running,
    /// The shell exited and no process of its group is left.
    Completed {
        /// The shell's exit code, when it exited normally.
        exit_code: Option<i32>,
        /// The signal that ended the shell, if one did.
        signal: Option<i32>,
    },
    /// Stopped by TaskStop, or because the session ended.
    Killed,
    /// Stopped by toolgate for a reason given (output over its limit).
    Failed {
        /// Why.
        reason: String,
    },
}

impl TaskStatus {
    /// Whether the task still runs.
    pub fn is_running(&self) -> bool {
        matches!(self, TaskStatus::Running)
    }

    /// The one-word name used in results: `running`, `completed`, `killed`, `failed`.
    pub fn name(&self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Completed { .. } => "completed",
            TaskStatus::Killed => "killed",
            TaskStatus::Failed { .. } => "failed",
        }
    }
}

/// Why a task runs in the background.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TaskOrigin {
    /// The call asked for `run_in_background`.
    Requested,
    /// The analyzer recognised a long-running server or watcher.
    Server {
        /// The server rule that matched (`js_package_script`, `python_server`, …).
        rule: String,
    },
    /// A foreground command exited but left processes running in its group.
    Adopted,
    /// A sub-agent started with `run_in_background` (no process: `pid` is 0).
    Agent {
        /// The agent definition it runs (`general-purpose`, or one of `.claude/agents/`).
        subagent_type: String,
    },
}

/// A background task, as the library user sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskInfo {
    /// The id TaskOutput and TaskStop take.
    pub id: String,
    /// The command as the model sent it.
    pub command: String,
    /// The call's `description`, if any.
    pub description: Option<String>,
    /// The shell's pid, which is also the task's process group id; 0 for a task that is
    /// not a process (a sub-agent).
    pub pid: u32,
    /// Where it stands.
    pub status: TaskStatus,
    /// Why it runs in the background.
    pub origin: TaskOrigin,
    /// The file holding all of its output.
    pub output_path: PathBuf,
    /// Bytes of output so far.
    pub output_bytes: u64,
    /// When it started.
    pub started: SystemTime,
}

/// One background task.
pub(crate) struct Task {
    pub id: String,
    pub command: String,
    pub description: Option<String>,
    pub pid: i32,
    pub origin: TaskOrigin,
    pub started: SystemTime,
    pub output: Arc<Mutex<OutputBuffer>>,
    pub path: PathBuf,
    status: watch::Receiver<TaskStatus>,
    stop: CancellationToken,
    /// Bytes of the output file already returned by TaskOutput.
    read_offset: Mutex<u64>,
}

impl Task {
    /// The current status.
    pub(crate) fn status(&self) -> TaskStatus {
        let status = self.status.borrow().clone();
        if status.is_running() && self.status.has_changed().is_err() {
            // The supervisor is gone without a verdict (its runtime shut down); dropping
            // it killed the process group.
            return TaskStatus::Killed;
        }
        status
    }

    /// Waits up to `limit` for the task to finish; true when it has.
    pub(crate) async fn wait(&self, limit: Duration) -> bool {
        let mut rx = self.status.clone();
        match tokio::time::timeout(limit, rx.wait_for(|s| !s.is_running())).await {
            Ok(_) => true,
            Err(_) => !self.status().is_running(),
        }
    }

    /// Stops the task (SIGTERM, then SIGKILL after [`TERM_GRACE`]) and waits for it.
    pub(crate) async fn stop(&self) -> TaskStatus {
        self.stop.cancel();
        // The supervisor needs the grace period plus a moment to drain the pipe.
        self.wait(TERM_GRACE * 2).await;
        self.status()
    }

    /// The byte range of the output file not yet returned.
    pub(crate) fn peek_unread(&self) -> (u64, u64) {
        let end = self
            .output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .written();
        let offset = *self
            .read_offset
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        (offset.min(end), end)
    }

    /// The byte range of the output file not yet returned, marking it returned.
    pub(crate) fn take_unread(&self) -> (u64, u64) {
        let end = self
            .output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .written();
        let mut offset = self
            .read_offset
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let start = (*offset).min(end);
        *offset = end;
        (start, end)
    }

    /// Up to `max_lines` complete lines of output not yet returned (reading at most
    /// `max_bytes`), marking them returned, and whether more are waiting. A line without
    /// its newline yet stays for the next read unless the task has ended; a line longer
    /// than `max_bytes` comes back cut rather than stalling the stream.
    pub(crate) fn take_lines(
        &self,
        max_lines: usize,
        max_bytes: usize,
    ) -> std::io::Result<(Vec<String>, bool)> {
        use std::io::{Read, Seek, SeekFrom};
        let ended = !self.status().is_running();
        let end = self
            .output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .written();
        let mut offset = self
            .read_offset
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let start = (*offset).min(end);
        if start == end {
            return Ok((Vec::new(), false));
        }
        let want = (end - start).min(max_bytes as u64);
        let mut file = std::fs::File::open(&self.path)?;
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity(want as usize);
        file.take(want).read_to_end(&mut buf)?;
        let mut lines = Vec::new();
        let mut used = 0usize;
        while lines.len() < max_lines {
            let rest = &buf[used..];
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    lines.push(String::from_utf8_lossy(&rest[..i]).into_owned());
                    used += i + 1;
                }
                None => {
                    let at_end = start + buf.len() as u64 == end;
                    // The unterminated tail of an ended task, or a line too long for one read.
                    if !rest.is_empty()
                        && ((ended && at_end) || used == 0 && buf.len() == max_bytes)
                    {
                        lines.push(String::from_utf8_lossy(rest).into_owned());
                        used = buf.len();
                    }
                    break;
                }
            }
        }
        *offset = start + used as u64;
        let more = *offset < end && (lines.len() == max_lines || used < buf.len());
        Ok((lines, more))
    }

    /// Waits until the task writes more output or ends, up to `limit`.
    pub(crate) async fn wait_for_output(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        let unread = || {
            let end = self
                .output
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .written();
            *self
                .read_offset
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                < end
        };
        let mut rx = self.status.clone();
        while !unread() && self.status().is_running() {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return;
            }
            let nap = (deadline - now).min(crate::shell::config::GROUP_POLL_INTERVAL);
            // Output has no notification of its own; the end of the task has.
            let _ = tokio::time::timeout(nap, rx.changed()).await;
        }
    }

    /// The library user's view.
    pub(crate) fn info(&self) -> TaskInfo {
        TaskInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            description: self.description.clone(),
            pid: self.pid.unsigned_abs(),
            status: self.status(),
            origin: self.origin.clone(),
            output_path: self.path.clone(),
            output_bytes: self
                .output
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .total(),
            started: self.started,
        }
    }
}

/// The session's background tasks, oldest first.
#[derive(Default)]
pub(crate) struct TaskTable {
    tasks: Mutex<Vec<Arc<Task>>>,
    counter: AtomicU64,
}

impl TaskTable {
    /// The table of `session`, created on first use.
    pub(crate) fn of(session: &Session) -> Arc<TaskTable> {
        session.extensions.get_or_init(TaskTable::default)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Task>>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The task with this id.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Task>> {
        self.lock().iter().find(|t| t.id == id).cloned()
    }

    /// All tasks, oldest first.
    pub(crate) fn list(&self) -> Vec<Arc<Task>> {
        self.lock().clone()
    }

    /// Tasks still running.
    pub(crate) fn live(&self) -> usize {
        self.lock()
            .iter()
            .filter(|t| t.status().is_running())
            .count()
    }

    /// A fresh id: `b` and six hex digits, unpredictable and unique in the table.
    fn new_id(&self) -> String {
        use std::hash::{BuildHasher, Hasher};
        loop {
            let n = self.counter.fetch_add(1, Ordering::Relaxed);
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(n);
            let id = format!("b{:06x}", h.finish() & 0xff_ffff);
            if self.get(&id).is_none() {
                return id;
            }
        }
    }

    fn insert(&self, task: Arc<Task>) {
        let mut tasks = self.lock();
        tasks.push(task);
        let finished = tasks.iter().filter(|t| !t.status().is_running()).count();
        let mut excess = finished.saturating_sub(MAX_FINISHED_TASKS);
        tasks.retain(|t| {
            if excess > 0 && !t.status().is_running() {
                excess -= 1;
                return false;
            }
            true
        });
    }
}

/// What a new task needs besides its process.
pub(crate) struct NewTask {
    pub command: String,
    pub description: Option<String>,
    pub origin: TaskOrigin,
    pub output: Arc<Mutex<OutputBuffer>>,
    pub path: PathBuf,
    /// Bytes of the output already shown to the model.
    pub read_offset: u64,
    /// The session's cancellation: the task is killed when it fires.
    pub session_end: CancellationToken,
}

/// Registers a task for `proc` and starts its supervisor.
pub(crate) fn start(table: &TaskTable, proc: Proc, new: NewTask) -> Arc<Task> {
    let pid = proc.pid();
    let (task, tx, stop, new) = register(table, pid, new);
    tokio::spawn(supervise(proc, new.output, tx, stop, new.session_end));
    task
}

/// Adds a task to the table: its status channel's sender and its stop token come back for
/// the supervisor.
fn register(
    table: &TaskTable,
    pid: i32,
    new: NewTask,
) -> (
    Arc<Task>,
    watch::Sender<TaskStatus>,
    CancellationToken,
    NewTask,
) {
    let (tx, rx) = watch::channel(TaskStatus::Running);
    let stop = CancellationToken::new();
    let task = Arc::new(Task {
        id: table.new_id(),
        command: new.command.clone(),
        description: new.description.clone(),
        pid,
        origin: new.origin.clone(),
        started: SystemTime::now(),
        output: Arc::clone(&new.output),
        path: new.path.clone(),
        status: rx,
        stop: stop.clone(),
        read_offset: Mutex::new(new.read_offset),
    });
    table.insert(Arc::clone(&task));
    (task, tx, stop, new)
}

async fn supervise(
    mut proc: Proc,
    output: Arc<Mutex<OutputBuffer>>,
    status: watch::Sender<TaskStatus>,
    stop: CancellationToken,
    session_end: CancellationToken,
) {
    let stopped = async {
        tokio::select! {
            () = stop.cancelled() => {}
            () = session_end.cancelled() => {}
        }
    };
    tokio::pin!(stopped);
    let ended = proc.run(&output, stopped.as_mut(), true).await;
    let verdict = match ended {
        Ended::Exited => {
            let exit = proc.exit().unwrap_or_default();
            TaskStatus::Completed {
                exit_code: exit.code,
                signal: exit.signal,
            }
        }
        Ended::Stopped => {
            proc.terminate(&output, TERM_GRACE).await;
            TaskStatus::Killed
        }
        Ended::OverLimit => {
            proc.terminate(&output, TERM_GRACE).await;
            let limit = output
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .max_bytes();
            TaskStatus::Failed {
                reason: format!("it printed more than {limit} bytes and was killed"),
            }
        }
    };
    status.send_replace(verdict);
}

/// The session's background tasks, oldest first (finished ones too, up to
/// [`MAX_FINISHED_TASKS`]).
pub fn tasks(session: &Session) -> Vec<TaskInfo> {
    session
        .extensions
        .get::<TaskTable>()
        .map(|t| t.list().iter().map(|t| t.info()).collect())
        .unwrap_or_default()
}

/// Stops a task of `session` as TaskStop does, returning its final status, or `None` when
/// there is no such task.
pub async fn stop_task(session: &Session, id: &str) -> Option<TaskStatus> {
    let task = session.extensions.get::<TaskTable>()?.get(id)?;
    Some(task.stop().await)
}

/// Where a task that is not a process (a sub-agent) writes its output; TaskOutput, Monitor
/// and the output file read it as they read a command's.
#[derive(Clone)]
pub struct TaskSink {
    output: Arc<Mutex<OutputBuffer>>,
}

impl TaskSink {
    /// Appends text; `false` once the task's output limit is passed (the task should stop).
    pub fn write(&self, text: &str) -> bool {
        let mut out = self.output.lock().unwrap_or_else(PoisonError::into_inner);
        matches!(out.push(text.as_bytes()), crate::shell::output::Pushed::Ok)
    }
}

/// A background task that is not a process, as [`start_work`] takes it.
#[derive(Debug, Clone)]
pub struct WorkTask {
    /// What it runs, as TaskOutput and the task list show it (`agent: review the diff`).
    pub command: String,
    /// The call's description.
    pub description: Option<String>,
    /// Why it runs in the background.
    pub origin: TaskOrigin,
}

/// Starts `work` as a background task of `session`: it writes through the [`TaskSink`] it
/// is given, and its result ends the task (`Ok` as completed with exit code 0, `Err` as
/// failed with the reason). TaskStop, and the end of the session, drop the work (which
/// must stop whatever it started when dropped) and mark the task killed. Refused when the
/// session already runs `config.max_live_tasks` tasks.
pub fn start_work<F>(
    session: &Session,
    config: &crate::shell::ShellConfig,
    task: WorkTask,
    work: impl FnOnce(TaskSink) -> F,
) -> Result<TaskInfo, toolgate_core::ToolError>
where
    F: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    let table = TaskTable::of(session);
    if table.live() >= config.max_live_tasks {
        return Err(toolgate_core::ToolError::InvalidRequest(format!(
            "this session already runs {} background tasks, the most it may; stop one with TaskStop first",
            config.max_live_tasks
        )));
    }
    let output = Arc::new(Mutex::new(OutputBuffer::new(
        config.max_inline_chars,
        config.max_output_bytes,
        toolgate_core::outputs::SessionOutputs::of(session),
        config.output_dir.clone(),
        "agent-",
    )));
    let path = output
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .ensure_file()
        .map_err(|e| {
            toolgate_core::ToolError::Failed(format!(
                "could not create the task's output file: {e}"
            ))
        })?;
    let new = NewTask {
        command: task.command,
        description: task.description,
        origin: task.origin,
        output: Arc::clone(&output),
        path,
        read_offset: 0,
        session_end: session.cancellation().clone(),
    };
    let (registered, status, stop, new) = register(&table, 0, new);
    let fut = work(TaskSink { output });
    tokio::spawn(async move {
        let verdict = tokio::select! {
            r = fut => match r {
                Ok(()) => TaskStatus::Completed { exit_code: Some(0), signal: None },
                Err(reason) => TaskStatus::Failed { reason },
            },
            () = stop.cancelled() => TaskStatus::Killed,
            () = new.session_end.cancelled() => TaskStatus::Killed,
        };
        status.send_replace(verdict);
    });
    Ok(registered.info())
}
