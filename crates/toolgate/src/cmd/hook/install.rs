//! `toolgate hook install`: adds `toolgate hook` to a Claude Code settings file.
//!
//! The file is someone's configuration, so the edit is careful:
//!
//! - it is parsed strictly; a syntax error is reported with line and column and nothing is
//!   written (no "repair" that could drop a key);
//! - every other key, and every other hook, stays as it was, in its order;
//! - installing twice changes nothing; an older toolgate entry (another executable path or
//!   other arguments) is updated in place rather than duplicated;
//! - the old file is copied to `settings.json.bak` (or `settings.json.bak.<unix time>` when
//!   that exists) and the new one is written to a temporary file in the same directory,
//!   flushed, and renamed over it, so a crash leaves either the old or the new file;
//! - a symlinked `settings.json` (dotfile managers) is edited where it points, keeping the
//!   link; the file's permissions are kept.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use serde_json::{Map, Value, json};
use thiserror::Error;

/// The tools the installed hook is asked about: every tool `toolgate hook` has checks for.
pub const INSTALL_MATCHER: &str = "Bash|Read|Edit|Write|MultiEdit|NotebookEdit|WebFetch|Grep|Glob";

/// Seconds Claude Code waits for the hook; it answers in milliseconds, and a hung hook
/// should not stall the agent for Claude Code's default 10 minutes.
const INSTALL_TIMEOUT_SECS: u64 = 30;

/// Options of `toolgate hook install`.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Install into the project's `.claude/settings.json` (the default).
    #[arg(long, conflicts_with = "user")]
    pub project: bool,

    /// Install into the user's `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR` if set).
    #[arg(long)]
    pub user: bool,

    /// The project directory for `--project` (default: the top level of the git repository
    /// around the current directory, else the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub project_dir: Option<PathBuf>,

    /// Install into the current directory's `.claude/settings.json` even inside a git
    /// repository whose top level is elsewhere.
    #[arg(long, conflicts_with_all = ["user", "project_dir"])]
    pub here: bool,

    /// Arguments for the installed hook, after `--`: e.g. `-- --claude --decide`.
    #[arg(last = true, value_name = "HOOK_ARGS")]
    pub hook_args: Vec<String>,
}

/// Why the settings file was not changed.
#[derive(Debug, Error)]
pub enum InstallError {
    /// The file is not valid JSON.
    #[error("{path}: line {line}, column {column}: {message}; fix the file, nothing was written")]
    Syntax {
        /// The settings file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's description.
        message: String,
    },
    /// The JSON has an unexpected shape.
    #[error("{path}: `{at}` must be {expected}; fix the file, nothing was written")]
    Shape {
        /// The settings file.
        path: PathBuf,
        /// JSON path of the bad value.
        at: String,
        /// What it must be.
        expected: &'static str,
    },
    /// The arguments for the installed hook are not valid `toolgate hook` arguments.
    #[error("the hook arguments are not valid for `toolgate hook`: {0}")]
    HookArgs(String),
    /// No home directory for `--user`.
    #[error("--user: neither CLAUDE_CONFIG_DIR nor HOME is set")]
    NoHome,
    /// File system trouble.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> InstallError {
    let context = context.into();
    move |source| InstallError::Io { context, source }
}

/// What installing did.
#[derive(Debug, PartialEq, Eq)]
pub enum Installed {
    /// A new hook entry was added.
    Added { backup: Option<PathBuf> },
    /// An older toolgate entry got the new command.
    Updated { backup: Option<PathBuf> },
    /// The same entry was already there; the file was not touched.
    Unchanged,
}

/// Runs `toolgate hook install`.
pub fn run(args: &InstallArgs) -> ExitCode {
    let result = settings_path(args).and_then(|path| {
        let command = hook_command(&args.hook_args)?;
        let project = (!args.user).then(|| project_of(&path));
        let trusted = project.as_deref().and_then(Trust::before);
        let r = install(&path, &command)?;
        let kept = match (&trusted, &r) {
            (Some(t), Installed::Added { .. } | Installed::Updated { .. }) => Some(t.keep()),
            _ => None,
        };
        Ok((path, r, kept))
    });
    match result {
        Ok((path, r, kept)) => {
            let p = path.display();
            match r {
                Installed::Unchanged => println!("toolgate hook is already installed in {p}"),
                Installed::Added { backup } | Installed::Updated { backup } => {
                    print!("toolgate hook installed in {p}");
                    match backup {
                        Some(b) => println!(" (previous version: {})", b.display()),
                        None => println!(),
                    }
                }
            }
            match kept {
                Some(Ok(())) => println!(
                    "the workspace stays trusted: its trust record now includes the hook entry"
                ),
                Some(Err(e)) => eprintln!(
                    "toolgate hook install: the workspace was trusted, but the trust record \
                     could not be updated ({e}); run `toolgate trust` to trust it again"
                ),
                None => {}
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("toolgate hook install: {e}");
            ExitCode::from(1)
        }
    }
}

/// The settings file `args` name.
fn settings_path(args: &InstallArgs) -> Result<PathBuf, InstallError> {
    if args.user {
        let dir = match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d),
            None => std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".claude"))
                .ok_or(InstallError::NoHome)?,
        };
        return Ok(dir.join("settings.json"));
    }
    let project = match &args.project_dir {
        Some(d) => d.clone(),
        None => {
            let cwd = std::env::current_dir().map_err(io("the current directory"))?;
            if args.here {
                cwd
            } else {
                git_top_level(&cwd).unwrap_or(cwd)
            }
        }
    };
    Ok(project.join(".claude").join("settings.json"))
}

/// The top level of the git repository around `dir`: the nearest ancestor holding a `.git`
/// directory or file (a worktree or submodule). Claude Code reads a project's settings at
/// the repository root, so a hook installed in a subdirectory would never run. A home
/// directory kept in git (dotfiles) is not a project: there, as in Claude Code, the
/// current directory is (and `~/.claude/settings.json` is the user's file, `--user`).
fn git_top_level(dir: &Path) -> Option<PathBuf> {
    let top = dir
        .ancestors()
        .find(|d| fs::symlink_metadata(d.join(".git")).is_ok())?;
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    let is_home = home.is_some_and(|h| {
        let h = PathBuf::from(h);
        top == h || fs::canonicalize(&h).is_ok_and(|h| top == h)
    });
    (!is_home).then(|| top.to_path_buf())
}

/// The project of a project settings file (`<project>/.claude/settings.json`).
fn project_of(settings: &Path) -> PathBuf {
    settings
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// A project trusted (`toolgate trust`) before the install: the trust record covers
/// `.claude/settings.json`, so the hook entry the user adds would silently undo the trust.
struct Trust {
    store: toolgate_policy::settings::TrustStore,
    project: PathBuf,
}

impl Trust {
    /// The project's trust, when it is trusted as its files are now.
    fn before(project: &Path) -> Option<Trust> {
        let opts = toolgate_policy::settings::LoadOptions::from_env(project);
        let store = toolgate_policy::settings::TrustStore::new(opts.config_dir.as_deref()?);
        let trusted =
            store.status(project).ok()? == toolgate_policy::settings::TrustStatus::Trusted;
        trusted.then(|| Trust {
            store,
            project: project.to_path_buf(),
        })
    }

    /// Trusts the project again, now with the hook entry: the only change since it was
    /// trusted is the one the user just asked for.
    fn keep(&self) -> Result<(), toolgate_policy::PolicyError> {
        self.store.trust(&self.project).map(|_| ())
    }
}

/// The shell command Claude Code will run: this executable's absolute path, quoted, then
/// `hook` and the arguments, which are checked now so that a typo cannot install a hook that
/// fails (and so blocks) every call.
pub fn hook_command(hook_args: &[String]) -> Result<String, InstallError> {
    let mut argv = vec!["toolgate".to_owned(), "hook".to_owned()];
    argv.extend(hook_args.iter().cloned());
    match crate::cli::Cli::try_parse_from(&argv) {
        Ok(crate::cli::Cli {
            command: crate::cli::Command::Hook(h),
            ..
        }) if h.action.is_none() => {}
        Ok(_) => return Err(InstallError::HookArgs("`install` cannot be nested".into())),
        Err(e) => return Err(InstallError::HookArgs(e.to_string())),
    }
    let exe = std::env::current_exe().map_err(io("finding this executable"))?;
    let exe = fs::canonicalize(&exe).unwrap_or(exe);
    let mut command = format!("{} hook", shell_quote(&exe.to_string_lossy()));
    for a in hook_args {
        command.push(' ');
        command.push_str(&shell_quote(a));
    }
    Ok(command)
}

/// `s` as one `sh` word.
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Whether `command` runs some toolgate's `hook` (an earlier install).
fn is_toolgate_hook(command: &str) -> bool {
    let command = command.trim_start();
    let (program, rest) = match command.strip_prefix('\'') {
        Some(quoted) => match quoted.split_once('\'') {
            Some((p, rest)) => (p, rest),
            None => return false,
        },
        None => command.split_at(command.find(char::is_whitespace).unwrap_or(command.len())),
    };
    Path::new(program)
        .file_name()
        .is_some_and(|n| n == "toolgate")
        && rest.split_whitespace().next() == Some("hook")
}

/// Adds the hook with `command` to the settings file at `path`.
pub fn install(path: &Path, command: &str) -> Result<Installed, InstallError> {
    // Edit the file a symlink points to, so the link survives.
    let path = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let old = match fs::read_to_string(&path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(format!("reading {}", path.display()))(e)),
    };
    let mut root: Value = match old.as_deref().map(str::trim) {
        None | Some("") => json!({}),
        Some(text) => serde_json::from_str(text).map_err(|e| InstallError::Syntax {
            path: path.clone(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?,
    };
    let shape = |at: &str, expected| InstallError::Shape {
        path: path.clone(),
        at: at.to_owned(),
        expected,
    };
    let settings = root
        .as_object_mut()
        .ok_or_else(|| shape("(top level)", "an object"))?;
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| shape("hooks", "an object"))?;
    let groups = hooks
        .entry("PreToolUse")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| shape("hooks.PreToolUse", "an array"))?;
    let mut existing: Option<&mut Map<String, Value>> = None;
    for (i, group) in groups.iter_mut().enumerate() {
        let at = format!("hooks.PreToolUse[{i}]");
        let handlers = group
            .as_object_mut()
            .ok_or_else(|| shape(&at, "an object"))?
            .get_mut("hooks")
            .map(|h| {
                h.as_array_mut()
                    .ok_or_else(|| shape(&format!("{at}.hooks"), "an array"))
            })
            .transpose()?;
        for handler in handlers.into_iter().flatten() {
            let Some(h) = handler.as_object_mut() else {
                continue;
            };
            let Some(c) = h.get("command").and_then(Value::as_str) else {
                continue;
            };
            if c == command {
                return Ok(Installed::Unchanged);
            }
            if existing.is_none() && is_toolgate_hook(c) {
                existing = Some(h);
            }
        }
    }
    let updated = match existing {
        Some(h) => {
            h.insert("command".into(), json!(command));
            true
        }
        None => {
            groups.push(json!({
                "matcher": INSTALL_MATCHER,
                "hooks": [{"type": "command", "command": command, "timeout": INSTALL_TIMEOUT_SECS}]
            }));
            false
        }
    };
    let mut text = serde_json::to_string_pretty(&root).map_err(|e| InstallError::Io {
        context: "serialising the settings".into(),
        source: e.into(),
    })?;
    text.push('\n');
    let backup = match &old {
        Some(_) => Some(backup(&path)?),
        None => None,
    };
    write_atomically(&path, text.as_bytes())?;
    Ok(if updated {
        Installed::Updated { backup }
    } else {
        Installed::Added { backup }
    })
}

/// Copies `path` to a backup name not yet taken; returns it.
fn backup(path: &Path) -> Result<PathBuf, InstallError> {
    let name = path.file_name().map_or_else(
        || "settings.json".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut candidate = path.with_file_name(format!("{name}.bak"));
    if candidate.exists() {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        candidate = path.with_file_name(format!("{name}.bak.{secs}"));
        let mut n = 1;
        while candidate.exists() {
            candidate = path.with_file_name(format!("{name}.bak.{secs}.{n}"));
            n += 1;
        }
    }
    fs::copy(path, &candidate).map_err(io(format!("backing up to {}", candidate.display())))?;
    Ok(candidate)
}

/// Writes `bytes` to a temporary file next to `path` and renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), InstallError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let mode = fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
    let name = path.file_name().map_or_else(
        || "settings.json".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let tmp = dir.join(format!(".{name}.toolgate-{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        // `mode` at creation is masked by the umask; set it exactly.
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io(format!("writing {}", path.display()))(e));
    }
    // The rename is durable only once the directory is flushed; failing that is not an error
    // worth undoing the install for.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_detection() {
        assert_eq!(shell_quote("/usr/bin/toolgate"), "/usr/bin/toolgate");
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
        assert!(is_toolgate_hook("/usr/local/bin/toolgate hook"));
        assert!(is_toolgate_hook("'/home/u/my bin/toolgate' hook --claude"));
        assert!(!is_toolgate_hook("/usr/bin/toolgate call x"));
        assert!(!is_toolgate_hook("python3 guard.py toolgate hook"));
        assert!(!is_toolgate_hook("'unterminated"));
    }

    #[test]
    fn hook_args_are_checked() {
        assert!(hook_command(&["--claude".into(), "--decide".into()]).is_ok());
        assert!(hook_command(&["--no-such-flag".into()]).is_err());
        assert!(hook_command(&["install".into()]).is_err());
    }
}
