//! Where output that does not fit a result goes: one private directory per session, with a
//! byte budget for the whole session, emptied when the session ends except for the files a
//! returned result names.
//!
//! The gate's shaping (stage 11) and the Bash tool (its output files and background tasks'
//! files) share one [`SessionOutputs`], kept in the session's extensions.
//!
//! **Where.** `<workspace>/.toolgate/outputs/<session>/`: toolgate's own directory in the
//! workspace (the audit log's default place too), where the Read tool and a sandboxed
//! command can read the files back (a sandboxed command only reads: `.toolgate` is
//! read-only in the room), with a `.gitignore` that keeps them out of git. When that cannot
//! be used safely — a `.toolgate` or `outputs` that is a symlink or not the user's, a
//! read-only workspace — the per-user runtime directory instead
//! (`crate::user_state_dir()`: `$XDG_RUNTIME_DIR/toolgate` or
//! `$TMPDIR/toolgate-<uid>`, mode 0700). Never the shared `/tmp/toolgate-outputs`, where
//! another user could read the files or plant the directory first. Session directories are
//! mode 0700.
//!
//! **How much.** [`DEFAULT_MAX_SESSION_OUTPUT_BYTES`] for all of a session's files together
//! ([`SessionOutputs::set_cap`] changes it); a writer that would pass it stops saving and
//! says so in its result.
//!
//! **How long.** When the session ends (its last handle is dropped), every file in its
//! directories that no returned result named ([`SessionOutputs::keep`]) is removed, and the
//! directories too once empty.

use std::collections::HashSet;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::session::Session;

/// Bytes of output files one session may write in all (Bash output past the inline budget,
/// background tasks' output, results the gate cuts). A gigabyte holds far more than a model
/// can read back; it keeps a session of runaway commands (each may print up to its own
/// limit) from filling the disk of the workspace.
pub const DEFAULT_MAX_SESSION_OUTPUT_BYTES: u64 = 1 << 30;

/// The directory under the workspace's `.toolgate/`.
const WORKSPACE_DIR: &str = "outputs";

/// What the `.gitignore` in [`WORKSPACE_DIR`] says: nothing here belongs in git.
const GITIGNORE: &str = "# toolgate's output files (removed when their session ends)\n*\n";

/// One session's output files.
#[derive(Debug)]
pub struct SessionOutputs {
    workspace: PathBuf,
    session: String,
    cap: AtomicU64,
    used: AtomicU64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Session directories made (removed at the end once empty).
    dirs: Vec<PathBuf>,
    /// Files a returned result named.
    kept: HashSet<PathBuf>,
}

/// A file-name-safe version of an id chosen by someone else (a session id).
fn safe_name(id: &str) -> String {
    let cleaned: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    if cleaned.is_empty() || cleaned.chars().all(|c| c == '_') {
        "session".to_owned()
    } else {
        cleaned
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid never fails.
    unsafe { libc::geteuid() }
}

/// `dir` as a real directory (created with `mode` when missing) owned by this user, not a
/// symlink; `private`: closed to everyone else too.
fn own_dir(dir: &Path, mode: u32, private: bool) -> std::io::Result<()> {
    match std::fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => {
            // The umask may have narrowed it; never widened.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    let ok = meta.is_dir() && meta.uid() == euid() && (!private || meta.mode() & 0o077 == 0);
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "{} is not a private directory of this user",
            dir.display()
        )))
    }
}

impl SessionOutputs {
    /// The session's outputs (made on first use).
    pub fn of(session: &Session) -> Arc<SessionOutputs> {
        session.extensions.get_or_init(|| SessionOutputs {
            workspace: session.workspace().root().to_path_buf(),
            session: safe_name(session.id()),
            cap: AtomicU64::new(DEFAULT_MAX_SESSION_OUTPUT_BYTES),
            used: AtomicU64::new(0),
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the session's byte budget (see [`DEFAULT_MAX_SESSION_OUTPUT_BYTES`]).
    pub fn set_cap(&self, bytes: u64) {
        self.cap.store(bytes, Ordering::Relaxed);
    }

    /// The session's byte budget.
    pub fn cap(&self) -> u64 {
        self.cap.load(Ordering::Relaxed)
    }

    /// The session's directory under `base` (made private when missing), or under the
    /// default place (module docs) when `base` is `None`.
    pub fn dir(&self, base: Option<&Path>) -> std::io::Result<PathBuf> {
        let dir = match base {
            Some(base) => {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(base)?;
                let dir = base.join(&self.session);
                own_dir(&dir, 0o700, true)?;
                dir
            }
            None => self.in_workspace().or_else(|_| self.in_runtime_dir())?,
        };
        let mut state = self.state();
        if !state.dirs.contains(&dir) {
            state.dirs.push(dir.clone());
        }
        Ok(dir)
    }

    fn in_workspace(&self) -> std::io::Result<PathBuf> {
        let toolgate = self.workspace.join(".toolgate");
        own_dir(&toolgate, 0o755, false)?;
        let base = toolgate.join(WORKSPACE_DIR);
        own_dir(&base, 0o700, true)?;
        let ignore = base.join(".gitignore");
        if std::fs::symlink_metadata(&ignore).is_err() {
            std::fs::write(&ignore, GITIGNORE)?;
        }
        let dir = base.join(&self.session);
        own_dir(&dir, 0o700, true)?;
        Ok(dir)
    }

    fn in_runtime_dir(&self) -> std::io::Result<PathBuf> {
        let state = crate::user_state_dir().ok_or_else(|| {
            std::io::Error::other("no private per-user directory for output files")
        })?;
        let base = state.join("outputs");
        own_dir(&base, 0o700, true)?;
        let dir = base.join(&self.session);
        own_dir(&dir, 0o700, true)?;
        Ok(dir)
    }

    /// Takes `bytes` from the session's budget; `false` (nothing taken) when they do not
    /// fit.
    pub fn reserve(&self, bytes: u64) -> bool {
        let cap = self.cap();
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|n| *n <= cap)
            })
            .is_ok()
    }

    /// Bytes written so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Marks `path` as named by a returned result: it outlives the session.
    pub fn keep(&self, path: &Path) {
        self.state().kept.insert(path.to_path_buf());
    }

    /// A notice for a writer the budget stopped.
    pub fn over_cap_notice(&self) -> String {
        format!(
            "the session's output files reached their limit of {} bytes; the rest was not saved",
            self.cap()
        )
    }
}

impl Drop for SessionOutputs {
    /// The session has ended: what no result named goes.
    fn drop(&mut self) {
        let state = self.state();
        for dir in &state.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if !state.kept.contains(&path) && entry.file_type().is_ok_and(|t| t.is_file()) {
                    // Best effort: a file that cannot go stays in the private directory.
                    let _ = std::fs::remove_file(&path);
                }
            }
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{SessionOptions, Workspace};

    #[test]
    fn budget_location_and_cleanup() {
        let ws = tempfile::tempdir().unwrap();
        let session = Session::new(
            Workspace::new(ws.path()).unwrap(),
            SessionOptions {
                id: Some("../s1".into()),
                ..SessionOptions::default()
            },
        );
        let outputs = SessionOutputs::of(&session);
        let dir = outputs.dir(None).unwrap();
        let root = std::fs::canonicalize(ws.path()).unwrap();
        assert_eq!(dir, root.join(".toolgate/outputs/___s1"));
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        assert!(root.join(".toolgate/outputs/.gitignore").is_file());
        outputs.set_cap(10);
        assert!(outputs.reserve(6) && !outputs.reserve(5) && outputs.reserve(4));
        let (kept, gone) = (dir.join("kept.txt"), dir.join("gone.txt"));
        std::fs::write(&kept, "k").unwrap();
        std::fs::write(&gone, "g").unwrap();
        outputs.keep(&kept);
        drop(outputs);
        drop(session);
        assert!(kept.exists() && !gone.exists());
    }

    #[test]
    fn a_planted_toolgate_link_is_not_followed() {
        let ws = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), ws.path().join(".toolgate")).unwrap();
        let session = Session::new(
            Workspace::new(ws.path()).unwrap(),
            SessionOptions::default(),
        );
        let dir = SessionOutputs::of(&session).dir(None).unwrap();
        assert!(!dir.starts_with(ws.path()), "{}", dir.display());
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    }
}
