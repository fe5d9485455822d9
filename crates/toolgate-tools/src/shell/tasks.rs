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
    /// The shell's pid, which is also the task's process group id.
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
    let (tx, rx) = watch::channel(TaskStatus::Running);
    let stop = CancellationToken::new();
    let task = Arc::new(Task {
        id: table.new_id(),
        command: new.command,
        description: new.description,
        pid: proc.pid(),
        origin: new.origin,
        started: SystemTime::now(),
        output: Arc::clone(&new.output),
        path: new.path,
        status: rx,
        stop: stop.clone(),
        read_offset: Mutex::new(new.read_offset),
    });
    table.insert(Arc::clone(&task));
    tokio::spawn(supervise(proc, new.output, tx, stop, new.session_end));
    task
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
