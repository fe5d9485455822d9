//! The session's working directory, held by a file handle.
//!
//! The cwd is a path, and a command can make the path lie: `cd sub` in one call, then
//! `rm -rf ../sub && ln -s /etc ../sub` in the next (whose own shell, in the deleted
//! directory, reports no new cwd). The path `…/sub` still reads as inside the workspace —
//! the analyzer and the permission engine resolve relative paths against it — while a
//! command started there would run in `/etc`. So when the Bash tool moves the cwd it also
//! opens the directory (`O_PATH`, no symlink on the way), and before each command it asks
//! the handle where that directory is now:
//!
//! - deleted → the workspace root, with a notice;
//! - somewhere else (renamed, or its path replaced by a link to another one) → where the
//!   handle says, if that is inside the roots, else the workspace root, with a notice;
//! - unchanged → as it is; an unsandboxed command then starts there by the handle itself
//!   (`fchdir`), so swapping the path between the check and the start does not move it.

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use toolgate_core::Session;

/// The session's pinned cwd and any notice not yet shown.
#[derive(Debug, Default)]
pub(crate) struct CwdPin {
    state: Mutex<PinState>,
}

#[derive(Debug, Default)]
struct PinState {
    /// The cwd as set by the Bash tool, and a handle on its directory.
    pinned: Option<(PathBuf, OwnedFd)>,
    /// What a re-resolution found, for the next result.
    notices: Vec<String>,
}

impl CwdPin {
    fn of(session: &Session) -> std::sync::Arc<CwdPin> {
        session.extensions.get_or_init(CwdPin::default)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PinState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Opens `dir` as a handle, refusing a symlink anywhere on the way (`dir` is the physical
/// path `pwd -P` reported).
fn open_dir(dir: &Path) -> std::io::Result<OwnedFd> {
    rustix::fs::openat2(
        rustix::fs::CWD,
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(std::io::Error::from)
}

/// Where the directory behind `fd` is now: `None` when it was deleted.
fn where_now(fd: &OwnedFd) -> Option<PathBuf> {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
    let text = link.to_string_lossy();
    if text.ends_with(" (deleted)") || !link.is_absolute() {
        return None;
    }
    Some(link)
}

/// Whether `path` (followed) is the directory behind `fd`.
fn same_dir(path: &Path, fd: &OwnedFd) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(a), Ok(b)) = (std::fs::metadata(path), rustix::fs::fstat(fd.as_fd())) else {
        return false;
    };
    a.dev() == b.st_dev && a.ino() == b.st_ino
}

/// Moves the session's cwd to `dir` and pins it. `false` (cwd unchanged) when `dir` is
/// outside the roots or cannot be opened without following a symlink.
pub(crate) fn set(session: &Session, dir: &Path) -> bool {
    let Ok(fd) = open_dir(dir) else {
        return false;
    };
    if !session.set_cwd(dir) {
        return false;
    }
    CwdPin::of(session).state().pinned = Some((dir.to_path_buf(), fd));
    true
}

/// Re-resolves the session's cwd by its handle (module docs); returns the directory to run
/// in. Notices go to [`take_notices`].
pub(crate) fn resolve(session: &Session) -> PathBuf {
    let pin = CwdPin::of(session);
    let mut state = pin.state();
    let cwd = session.cwd();
    let root = session.workspace().root().to_path_buf();
    let pinned_here = state.pinned.as_ref().is_some_and(|(p, _)| *p == cwd);
    if !pinned_here {
        // Not set by this tool (the root, or a library user's set_cwd): a path check only.
        if cwd.is_dir() {
            return cwd;
        }
        session.set_cwd(&root);
        state.notices.push(format!(
            "The working directory {} no longer exists; the command ran in {}.",
            cwd.display(),
            root.display()
        ));
        return root;
    }
    let now = state.pinned.as_ref().and_then(|(_, fd)| {
        let now = where_now(fd)?;
        Some((now.clone(), now == cwd && same_dir(&cwd, fd)))
    });
    match now {
        Some((_, true)) => cwd,
        Some((elsewhere, false)) if session.workspace().contains(&elsewhere) => {
            if let Some((p, _)) = state.pinned.as_mut() {
                *p = elsewhere.clone();
            }
            session.set_cwd(&elsewhere);
            state.notices.push(format!(
                "The working directory {} is not the directory it was (moved, or its path \
                 replaced); the command ran in that directory, now at {}.",
                cwd.display(),
                elsewhere.display()
            ));
            elsewhere
        }
        other => {
            state.pinned = None;
            session.set_cwd(&root);
            let why = match other {
                Some((elsewhere, _)) => {
                    format!("moved outside the workspace ({})", elsewhere.display())
                }
                None => "no longer exists".to_owned(),
            };
            state.notices.push(format!(
                "The working directory {} {why}; the command ran in {}.",
                cwd.display(),
                root.display()
            ));
            root
        }
    }
}

/// Notices from re-resolutions since the last call.
pub(crate) fn take_notices(session: &Session) -> Vec<String> {
    std::mem::take(&mut CwdPin::of(session).state().notices)
}

/// A duplicate of the handle on `dir` when it is the pinned cwd, for a command to start in
/// by `fchdir` (owned: the pin may move meanwhile).
pub(crate) fn handle(session: &Session, dir: &Path) -> Option<OwnedFd> {
    let pin = CwdPin::of(session);
    let state = pin.state();
    let (p, fd) = state.pinned.as_ref()?;
    if p != dir {
        return None;
    }
    fd.try_clone().ok()
}

/// In the child, between fork and exec: start in the directory behind `fd`.
pub(crate) fn enter(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fchdir on a descriptor this process owns; async-signal-safe.
    if unsafe { libc::fchdir(fd) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
