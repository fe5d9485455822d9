//! The Bash tool: runs a command with `bash -c` in the session's directory, in its own
//! process group, and returns its merged output, bounded.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_core::outputs::SessionOutputs;
use toolgate_core::{RunRequest, Session, ToolContext, ToolError, TypedTool};
use toolgate_protocol::{
    CallFacts, Concurrency, Subject, TimeoutSpec, ToolAnnotations, ToolOutput, ToolSpec,
};
use toolgate_shell::{Analysis, Context, Origin};

use crate::shell::config::{DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, ShellConfig, TIMEOUT_TERM_GRACE};
use crate::shell::exec::{self, Ended, ExitInfo, Proc, SpawnError, SpawnRequest};
use crate::shell::output::{OutputBuffer, Rendered};
use crate::shell::tasks::{self, NewTask, Task, TaskOrigin, TaskTable};
use crate::shell::{TOOL_VERSION, cwd, env};

/// Bash's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command to run.
    pub command: String,
    /// Time limit in milliseconds (the gate clamps it to the maximum).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// What the command does, in a few words (kept with background tasks).
    #[serde(default)]
    pub description: Option<String>,
    /// Run in the background and return a task id at once.
    #[serde(default)]
    pub run_in_background: bool,
    /// Run outside the sandbox (Claude Code's parameter). Honoured only when the settings
    /// allow unsandboxed commands, and never approved by a mode: it needs an allow rule or
    /// a person. The sandbox stage reads it from the raw input.
    #[serde(default, rename = "dangerouslyDisableSandbox")]
    pub dangerously_disable_sandbox: bool,
    /// The analysis made at stage 3, reused at stages 4 and 9.
    #[serde(skip)]
    analysis: Option<Analysis>,
}

/// The Bash tool.
pub struct BashTool {
    spec: ToolSpec,
    config: Arc<ShellConfig>,
}

impl BashTool {
    /// A Bash tool with these settings.
    pub fn new(config: Arc<ShellConfig>) -> Self {
        let description = format!(
            "Executes a bash command and returns its output (stdout and stderr merged, in order).\n\
             - The command runs in the session's working directory. A `cd` persists to later commands while it stays inside the workspace directories; a `cd` outside them is undone, with a notice. Environment variables and other shell state do not persist.\n\
             - `timeout` is in milliseconds: default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}. At the timeout the command and every process it started are killed.\n\
             - Output over {} characters keeps its start and end inline, and the result names a file holding all of it.\n\
             - A non-zero exit code is reported in the result; it is not an error of the tool.\n\
             - stdin is /dev/null: commands that ask questions get end-of-file at once, so pass flags such as `-y` instead.\n\
             - For long-running commands set `run_in_background: true`: you get a task id at once; read its output with TaskOutput and stop it with TaskStop. Development servers and watchers (npm run dev, vite, uvicorn, …) are started in the background automatically.\n\
             - Prefer the dedicated tools for files: Read rather than cat/head/tail, Grep rather than grep/rg, Glob rather than find/ls, Edit rather than sed.\n\
             - Quote paths that contain spaces; chain dependent commands with `&&`.",
            config.max_inline_chars
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to execute"},
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "description": format!("Optional timeout in milliseconds (max {MAX_TIMEOUT_MS})")
                },
                "description": {
                    "type": "string",
                    "description": "Clear, concise description of what this command does in 5-10 words, in active voice"
                },
                "run_in_background": {
                    "type": "boolean",
                    "description": "Set to true to run this command in the background. Use TaskOutput to read the output later."
                },
                "dangerouslyDisableSandbox": {
                    "type": "boolean",
                    "description": "Set to true to run this command outside the sandbox. Only when the sandbox blocks something the task needs; it always requires the user's approval."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        });
        let spec = ToolSpec {
            name: "Bash".into(),
            version: TOOL_VERSION.into(),
            description,
            input_schema: schema,
            output_schema: None,
            annotations: ToolAnnotations {
                read_only: false,
                destructive: true,
                idempotent: false,
                open_world: true,
            },
            concurrency: Concurrency::Exclusive,
            timeout: TimeoutSpec {
                default_ms: DEFAULT_TIMEOUT_MS,
                max_ms: MAX_TIMEOUT_MS,
            },
            subject: Subject::Command {
                field: "command".into(),
            },
        };
        Self { spec, config }
    }
}

fn home_dir(config: &ShellConfig) -> Option<PathBuf> {
    config
        .source_env()
        .into_iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v))
}

fn analyze_command(command: &str, session: &Session, config: &ShellConfig) -> Analysis {
    let ctx = Context {
        cwd: session.cwd(),
        roots: session.workspace().roots().map(Path::to_path_buf).collect(),
        home: home_dir(config),
        ..Context::default()
    }
    .with_sources(read_sourced_file);
    toolgate_shell::analyze(command, &ctx)
}

/// Largest sourced script the analyzer reads (`. ./env/dev.sh`); a bigger one is not walked
/// (its variables are then untrusted). The analyzer's own value budget is the same.
pub const MAX_SOURCED_BYTES: u64 = toolgate_shell::limits::MAX_VALUE_BYTES as u64;

/// Reads a workspace file a command sources, for the analyzer to walk
/// ([`toolgate_shell::Context::with_sources`]; it asks only for paths inside the roots): a
/// regular file of at most [`MAX_SOURCED_BYTES`], never a credentials file (`source .env`
/// is then not walked, so its values stay out of the analysis).
pub fn read_sourced_file(path: &Path) -> Option<String> {
    use std::io::Read;
    let no_roots: &[&Path] = &[];
    if toolgate_protocol::paths::classify(path, no_roots, None)
        .secret
        .is_some()
    {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_SOURCED_BYTES + 1)
        .read_to_string(&mut text)
        .ok()?;
    (text.len() as u64 <= MAX_SOURCED_BYTES).then_some(text)
}

#[async_trait]
impl TypedTool for BashTool {
    type Input = BashInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut BashInput, ctx: &ToolContext) -> Result<(), ToolError> {
        if input.command.trim().is_empty() {
            return Err(ToolError::InvalidRequest(
                "`command` is empty: send the shell command to run, for example `ls -la`".into(),
            ));
        }
        if input.command.contains('\0') {
            return Err(ToolError::InvalidRequest(
                "`command` contains a NUL byte, which no shell can run; remove it".into(),
            ));
        }
        // The analysis resolves relative paths against the cwd: re-resolve it first.
        cwd::resolve(&ctx.session);
        input.analysis = Some(analyze_command(&input.command, &ctx.session, &self.config));
        Ok(())
    }

    fn run_request(&self, input: &BashInput) -> RunRequest {
        RunRequest {
            timeout_ms: input.timeout,
            outside_sandbox: input.dangerously_disable_sandbox,
        }
    }

    fn analyze(&self, input: &BashInput, ctx: &ToolContext) -> CallFacts {
        let mut facts = match &input.analysis {
            Some(a) => a.facts(),
            None => analyze_command(&input.command, &ctx.session, &self.config).facts(),
        };
        facts.subject = Some(input.command.clone());
        facts
    }

    async fn run(&self, mut input: BashInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let config = &self.config;
        let session = Arc::clone(&ctx.session);
        let analysis = input
            .analysis
            .take()
            .unwrap_or_else(|| analyze_command(&input.command, &session, config));
        let cwd = cwd::resolve(&session);
        let notices = cwd::take_notices(&session);
        let server = analysis.server.as_ref().filter(|s| !s.background);
        let background = input.run_in_background || server.is_some();
        let table = TaskTable::of(&session);
        if background && table.live() >= config.max_live_tasks {
            return Err(cap_error(&table, config.max_live_tasks));
        }
        let output = Arc::new(Mutex::new(OutputBuffer::new(
            config.max_inline_chars,
            config.max_output_bytes,
            SessionOutputs::of(&session),
            config.output_dir.clone(),
            if background { "task-" } else { "bash-" },
        )));
        let path = if background {
            Some(lock(&output).ensure_file().map_err(|e| {
                ToolError::Failed(format!("could not create the task's output file: {e}"))
            })?)
        } else {
            None
        };
        let (mut env, mut removed) = env::scrub(config.source_env(), &config.allow_env);
        env.extend(
            config
                .set_env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        if ctx.room.is_some() && config.env.is_some() {
            // A room builds its own environment, typically from this process's: remove
            // what looks secret there too.
            let (_, more) = env::scrub(std::env::vars_os().collect(), &config.allow_env);
            removed.extend(more);
        }
        if let Some(room) = &ctx.room {
            // Network decisions made in the room are audited under this call.
            room.bind_call(&ctx.call_id);
        }
        let proc = exec::spawn(SpawnRequest {
            shell: &config.shell,
            command: &input.command,
            cwd: &cwd,
            cwd_handle: cwd::handle(&session, &cwd),
            env,
            removed_env: &removed,
            room: ctx.room.as_deref(),
        })
        .map_err(|e| {
            if let Some(p) = &path {
                // Best effort: the task never started, so its empty file is of no use.
                let _ = std::fs::remove_file(p);
            }
            spawn_error(e)
        })?;

        if let Some(path) = path {
            let origin = match server {
                Some(s) if !input.run_in_background => TaskOrigin::Server {
                    rule: s.rule.clone(),
                },
                _ => TaskOrigin::Requested,
            };
            let task = tasks::start(
                &table,
                proc,
                NewTask {
                    command: input.command.clone(),
                    description: input.description.clone(),
                    origin: origin.clone(),
                    output,
                    path: path.clone(),
                    read_offset: 0,
                    session_end: session.cancellation().clone(),
                },
            );
            return Ok(background_result(&task, &origin, &notices));
        }
        let run = Foreground {
            config: Arc::clone(config),
            session,
            input,
            analysis,
            cwd,
            notices,
            output,
        };
        run.run(proc, &ctx).await
    }
}

fn lock(out: &Mutex<OutputBuffer>) -> std::sync::MutexGuard<'_, OutputBuffer> {
    out.lock().unwrap_or_else(PoisonError::into_inner)
}

fn cap_error(table: &TaskTable, cap: usize) -> ToolError {
    let running: Vec<String> = table
        .list()
        .iter()
        .filter(|t| t.status().is_running())
        .map(|t| format!("{} ({})", t.id, clip(&t.command, 60)))
        .collect();
    ToolError::InvalidRequest(format!(
        "{cap} background tasks are already running, the most a session may have: {}. Stop one with TaskStop before starting another",
        running.join(", ")
    ))
}

fn spawn_error(e: SpawnError) -> ToolError {
    match e {
        SpawnError::Room(_) => ToolError::SandboxUnavailable(e.to_string()),
        other => ToolError::Failed(other.to_string()),
    }
}

pub(crate) fn clip(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    if first.chars().count() <= max && first.len() == text.len() {
        return first.to_owned();
    }
    let cut: String = first.chars().take(max).collect();
    format!("{cut}…")
}

fn background_result(task: &Task, origin: &TaskOrigin, notices: &[String]) -> ToolOutput {
    let mut text = String::new();
    if let TaskOrigin::Server { rule } = origin {
        text.push_str(&format!(
            "This looks like a long-running server or watcher (rule `{rule}`), so it was started in the background.\n"
        ));
    }
    text.push_str(&format!(
        "Command running in background with ID: {}. Output is being written to: {}",
        task.id,
        task.path.display()
    ));
    for n in notices {
        text.push('\n');
        text.push_str(n);
    }
    let server_rule = match origin {
        TaskOrigin::Server { rule } => Some(rule.clone()),
        _ => None,
    };
    ToolOutput::text(text).with_structured(json!({
        "background_task_id": task.id,
        "output_path": task.path,
        "pid": task.pid,
        "server_rule": server_rule,
    }))
}

/// What a foreground run came to.
struct Outcome {
    exit: ExitInfo,
    timed_out: bool,
    adopted: Option<Arc<Task>>,
}

/// A foreground command between spawn and result.
struct Foreground {
    config: Arc<ShellConfig>,
    session: Arc<Session>,
    input: BashInput,
    analysis: Analysis,
    cwd: PathBuf,
    notices: Vec<String>,
    output: Arc<Mutex<OutputBuffer>>,
}

impl Foreground {
    /// Runs until the command ends, times out or is cancelled, then shapes the result.
    async fn run(mut self, mut proc: Proc, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let limit = ctx.timeout;
        let stop = async {
            tokio::select! {
                () = tokio::time::sleep(limit) => {}
                () = ctx.cancel.cancelled() => {}
            }
        };
        tokio::pin!(stop);
        let ended = proc.run(&self.output, stop.as_mut(), false).await;
        let mut outcome = Outcome {
            exit: ExitInfo::default(),
            timed_out: false,
            adopted: None,
        };
        let mut leftovers = false;
        match ended {
            Ended::Exited => leftovers = proc.settle(&self.output).await,
            Ended::Stopped if ctx.cancel.is_cancelled() => {
                proc.terminate(&self.output, TIMEOUT_TERM_GRACE).await;
                return Err(ToolError::Cancelled);
            }
            Ended::Stopped => {
                outcome.timed_out = true;
                proc.terminate(&self.output, TIMEOUT_TERM_GRACE).await;
                self.notices.push(format!(
                    "Command timed out after {} ms; it and every process it started were killed. Ask for a longer `timeout` (max {MAX_TIMEOUT_MS}) or use run_in_background.",
                    limit.as_millis()
                ));
            }
            Ended::OverLimit => {
                proc.terminate(&self.output, TIMEOUT_TERM_GRACE).await;
                self.notices.push(format!(
                    "The command printed more than {} bytes and was killed.",
                    self.config.max_output_bytes
                ));
            }
        }
        outcome.exit = proc.exit().unwrap_or_default();
        let reported = proc.reported_cwd();
        update_cwd(
            &self.session,
            reported,
            &self.analysis,
            &self.cwd,
            ended == Ended::Exited,
            &mut self.notices,
        );
        let (rendered, path) = if leftovers {
            self.adopt_or_stop(proc, &mut outcome).await
        } else {
            drop(proc);
            self.render()
        };
        let output = foreground_result(
            &self.analysis,
            &outcome,
            rendered,
            path,
            &self.notices,
            &self.session,
        );
        if outcome.timed_out {
            // A timeout is an error (code `timeout`), so callers and the audit log count it as
            // one; the partial output still reaches the model through the error.
            return Err(ToolError::TimeoutWithOutput {
                ms: limit.as_millis() as u64,
                output: output.joined_text(),
            });
        }
        Ok(output)
    }

    /// The inline output and the file it names, with the file removed when not needed.
    fn render(&self) -> (Rendered, Option<PathBuf>) {
        let mut out = lock(&self.output);
        let rendered = out.render();
        out.discard_file_if_unneeded(&rendered);
        // What is left is named by the result (`stdout_path`): it outlives the session.
        out.keep_file();
        let path = out.path().map(Path::to_path_buf);
        (rendered, path)
    }

    /// The shell exited but processes of its group still run: they become a background
    /// task, or are stopped when no task can be made.
    async fn adopt_or_stop(
        &mut self,
        mut proc: Proc,
        outcome: &mut Outcome,
    ) -> (Rendered, Option<PathBuf>) {
        let table = TaskTable::of(&self.session);
        let reason = if table.live() >= self.config.max_live_tasks {
            format!(
                "{} background tasks are already running",
                self.config.max_live_tasks
            )
        } else {
            // Not inside the match: the guard must be released before `adopt` locks.
            let file = lock(&self.output).ensure_file();
            match file {
                Ok(task_path) => return self.adopt(&table, proc, task_path, outcome),
                Err(e) => format!("their output file could not be created ({e})"),
            }
        };
        proc.terminate(&self.output, TIMEOUT_TERM_GRACE).await;
        drop(proc);
        self.notices.push(format!(
            "The command left processes running; they were stopped because {reason}. Use run_in_background to keep a process running."
        ));
        self.render()
    }

    fn adopt(
        &mut self,
        table: &TaskTable,
        proc: Proc,
        task_path: PathBuf,
        outcome: &mut Outcome,
    ) -> (Rendered, Option<PathBuf>) {
        // Render before the supervisor writes more; TaskOutput starts after what is shown.
        let (rendered, offset) = {
            let out = lock(&self.output);
            (out.render(), out.written())
        };
        let task = tasks::start(
            table,
            proc,
            NewTask {
                command: self.input.command.clone(),
                description: self.input.description.clone(),
                origin: TaskOrigin::Adopted,
                output: Arc::clone(&self.output),
                path: task_path.clone(),
                read_offset: offset,
                session_end: self.session.cancellation().clone(),
            },
        );
        self.notices.push(format!(
            "The command exited but left processes running; they continue as background task {} (output in {}; TaskOutput reads it, TaskStop stops them).",
            task.id,
            task_path.display()
        ));
        outcome.adopted = Some(task);
        let path = rendered.truncated.then_some(task_path);
        (rendered, path)
    }
}

/// Moves the session's cwd to where the command ended, if that is inside the roots.
fn update_cwd(
    session: &Session,
    reported: Option<PathBuf>,
    analysis: &Analysis,
    before: &Path,
    ran_to_end: bool,
    notices: &mut Vec<String>,
) {
    let target = match reported {
        Some(dir) => dir,
        // No report (the command exec'd, replaced the trap, or ran in a room that closes
        // extra descriptors): follow a static `cd`, if the command ran to its end.
        None if ran_to_end => match analysis.cd.as_ref().and_then(|cd| cd.path.clone()) {
            Some(p) => match before.join(p).canonicalize() {
                Ok(p) if p.is_dir() => p,
                _ => return,
            },
            None => return,
        },
        None => return,
    };
    if target == before {
        return;
    }
    if !session.workspace().contains(&target) {
        notices.push(format!(
            "Shell cwd was reset to {}: {} is outside the allowed directories.",
            before.display(),
            target.display()
        ));
    } else if !cwd::set(session, &target) {
        notices.push(format!(
            "Shell cwd was reset to {}: {} cannot be opened without following a symlink.",
            before.display(),
            target.display()
        ));
    }
}

/// What exit code 1 means for commands that use it for "no" rather than for failure
/// (Claude Code treats these as success).
const EXIT_ONE_MEANS: &[(&str, &str)] = &[
    ("grep", "no lines matched"),
    ("egrep", "no lines matched"),
    ("fgrep", "no lines matched"),
    ("rg", "no matches"),
    ("git grep", "no matches"),
    ("diff", "the inputs differ"),
    ("git diff", "the inputs differ"),
    ("cmp", "the inputs differ"),
    ("test", "the condition is false"),
    ("[", "the condition is false"),
    ("[[", "the condition is false"),
    ("find", "some paths could not be visited"),
];

fn exit_one_meaning(analysis: &Analysis) -> Option<&'static str> {
    let last = analysis
        .commands
        .iter()
        .rev()
        .find(|c| c.origin == Origin::Top)?;
    let key = if last.program == "git" {
        match last.argv.get(1).map(String::as_str) {
            Some(sub @ ("diff" | "grep")) => format!("git {sub}"),
            _ => return None,
        }
    } else {
        last.program.clone()
    };
    EXIT_ONE_MEANS
        .iter()
        .find(|(p, _)| *p == key)
        .map(|(_, m)| *m)
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => "signal",
    }
}

fn foreground_result(
    analysis: &Analysis,
    outcome: &Outcome,
    rendered: Rendered,
    path: Option<PathBuf>,
    notices: &[String],
    session: &Session,
) -> ToolOutput {
    let mut text = rendered.text;
    let mut lines: Vec<String> = Vec::new();
    match (outcome.exit.code, outcome.exit.signal) {
        (Some(0), _) => {}
        (Some(1), _) if exit_one_meaning(analysis).is_some() => {
            let meaning = exit_one_meaning(analysis).unwrap_or_default();
            lines.push(format!("Exit code 1 ({meaning}; not an error)"));
        }
        (Some(code), _) => lines.push(format!("Exit code {code}")),
        (None, Some(sig)) if !outcome.timed_out => {
            lines.push(format!("Killed by signal {sig} ({})", signal_name(sig)));
        }
        _ => {}
    }
    lines.extend(notices.iter().cloned());
    if text.is_empty() && lines.is_empty() {
        text = "(no output)".into();
    }
    for line in lines {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&line);
    }
    let mut structured = json!({
        "exit_code": outcome.exit.code,
        "timed_out": outcome.timed_out,
        "interrupted": outcome.timed_out,
        "truncated": rendered.truncated,
        "cwd": session.cwd(),
    });
    if let Value::Object(map) = &mut structured {
        if let Some(sig) = outcome.exit.signal {
            map.insert("signal".into(), json!(sig));
        }
        if let Some(p) = &path {
            map.insert("stdout_path".into(), json!(p));
        }
        if let Some(task) = &outcome.adopted {
            map.insert("background_task_id".into(), json!(task.id));
        }
    }
    ToolOutput::text(text).with_structured(structured)
}
