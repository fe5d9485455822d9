//! Placeholders for missing protected paths, and their removal after the run.
//!
//! A protected path that does not exist yet (`.claude/`, `.mcp.json`, `.git/hooks/`, …) can
//! only be kept from being *created* inside the sandbox by mounting something read-only at
//! its name, and a mount needs an inode there: pid 1 creates an empty placeholder on the
//! host and binds it read-only onto itself (Landlock cannot deny creation by name, and a
//! mount over the parent would hide the rest of the workspace).
//!
//! Removing a placeholder while another sandbox still has it mounted would be unsafe: the
//! kernel lets `rmdir`/`unlink` of a mount point in *another* mount namespace succeed and
//! silently detaches that mount, so the other run could then create the path. Hence:
//!
//! - every helper holds a shared `flock` on `<state dir>/sandbox.lock` from before pid 1
//!   creates anything until pid 1 has been reaped (the helper stays in the host's
//!   namespaces, and the sandbox's mount namespace dies with pid 1, so by then no mount of
//!   *this* run's placeholders is left);
//! - afterwards it tries an exclusive, non-blocking lock. Only if that succeeds (no other
//!   sandbox of this user is running, and none can start: they block on the shared lock
//!   meanwhile) does it remove its own placeholders and those recorded as pending by
//!   earlier runs — each only if it is still an empty directory (`rmdir`), an empty
//!   regular file or a `.git/commondir` holding exactly what pid 1 wrote, so anything
//!   written into it outside the sandbox is kept;
//! - otherwise it appends its list to `<state dir>/placeholders.pending` for a later run.
//!
//! The state directory is per user (`$XDG_RUNTIME_DIR/toolgate` or `/tmp/toolgate-<uid>`,
//! mode 0700). Without one, placeholders are left in place (the old behaviour). Limits:
//! sandboxes of *different* users sharing a workspace do not see each other's locks; a
//! helper that is SIGKILLed leaves its placeholders behind (not recorded as pending).

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::policy::COMMONDIR_PLACEHOLDER;

/// The per-run shared lock (held by the helper while the sandbox runs).
pub(crate) struct RunLock {
    fd: OwnedFd,
    dir: PathBuf,
}

fn open_lock(dir: &Path) -> Option<OwnedFd> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(dir.join("sandbox.lock"))
        .ok()
        .map(OwnedFd::from)
}

fn flock(fd: &OwnedFd, op: i32) -> bool {
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(fd.as_raw_fd(), op) } == 0 {
            return true;
        }
        if crate::sys::errno() != libc::EINTR {
            return false;
        }
    }
}

impl RunLock {
    /// Takes the shared lock (waits while another run is cleaning up). `None` without a
    /// usable state directory: placeholders are then never removed.
    pub(crate) fn acquire() -> Option<RunLock> {
        let dir = crate::probe::state_dir()?;
        let fd = open_lock(&dir)?;
        flock(&fd, libc::LOCK_SH).then_some(RunLock { fd, dir })
    }

    /// Releases the run's lock and removes `created` (host paths) if no other sandbox runs;
    /// otherwise records them for a later run.
    pub(crate) fn finish(self, created: Vec<PathBuf>) {
        let RunLock { fd, dir } = self;
        drop(fd);
        let pending_path = dir.join("placeholders.pending");
        let Some(ex) = open_lock(&dir) else { return };
        if !flock(&ex, libc::LOCK_EX | libc::LOCK_NB) {
            if !created.is_empty() {
                append_pending(&pending_path, &created);
            }
            return;
        }
        let mut all = created;
        if let Ok(text) = std::fs::read_to_string(&pending_path) {
            all.extend(text.lines().filter(|l| !l.is_empty()).map(PathBuf::from));
            let _ = std::fs::remove_file(&pending_path);
        }
        // Deepest first, so `.git/hooks` goes before a `.git` we may also have created.
        all.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
        all.dedup();
        for p in all {
            remove_placeholder(&p);
        }
        drop(ex);
    }
}

fn append_pending(path: &Path, created: &[PathBuf]) {
    let mut text = String::new();
    for p in created {
        if let Some(s) = p.to_str().filter(|s| !s.contains('\n')) {
            text.push_str(s);
            text.push('\n');
        }
    }
    // One O_APPEND write per run: lines of concurrent runs do not interleave.
    let _ = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
}

/// Removes a placeholder as it was made: `rmdir` (fails if anything was put in it), or
/// `unlink` of an empty regular file or of a `commondir` that still holds exactly
/// [`COMMONDIR_PLACEHOLDER`]. Symlinks and files with other content are left alone.
pub(crate) fn remove_placeholder(path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() {
        let _ = std::fs::remove_dir(path);
        return;
    }
    if placeholder_file(path, &meta) {
        let _ = std::fs::remove_file(path);
    }
}

/// Whether `path` is shaped like a placeholder some run made: an empty directory, an empty
/// regular file, or a `commondir` holding exactly [`COMMONDIR_PLACEHOLDER`]. Such an entry
/// carries nothing (no hooks, no config), and a room mounts an existing one read-only.
pub(crate) fn is_placeholder_shaped(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if meta.is_dir() {
        return std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none());
    }
    placeholder_file(path, &meta)
}

fn placeholder_file(path: &Path, meta: &std::fs::Metadata) -> bool {
    meta.is_file()
        && (meta.size() == 0
            || (meta.size() == COMMONDIR_PLACEHOLDER.len() as u64
                && path.file_name().is_some_and(|n| n == "commondir")
                && std::fs::read(path).is_ok_and(|content| content == COMMONDIR_PLACEHOLDER)))
}

/// Encodes the list pid 1 sends to the helper (NUL-separated host paths).
pub(crate) fn encode(paths: &[PathBuf]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in paths {
        out.extend_from_slice(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()));
        out.push(0);
    }
    out
}

/// Decodes [`encode`]'s output.
pub(crate) fn decode(bytes: &[u8]) -> Vec<PathBuf> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| PathBuf::from(std::ffi::OsStr::from_bytes(s)))
        .collect()
}

use std::os::unix::ffi::OsStrExt;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_empty_placeholders() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let empty_dir = dir.path().join(".claude");
        let full_dir = dir.path().join(".vscode");
        let empty_file = dir.path().join(".mcp.json");
        let full_file = dir.path().join(".envrc");
        std::fs::create_dir(&empty_dir).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(&full_dir).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(full_dir.join("settings.json"), "{}").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&empty_file, "").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&full_file, "x").unwrap_or_else(|e| panic!("{e}"));
        let ours = dir.path().join("a/commondir");
        let theirs = dir.path().join("b/commondir");
        let not_commondir = dir.path().join("c/HEAD");
        for (path, content) in [
            (&ours, COMMONDIR_PLACEHOLDER),
            (&theirs, b"../elsewhere\n".as_slice()),
            (&not_commondir, COMMONDIR_PLACEHOLDER),
        ] {
            let parent = path.parent().unwrap_or_else(|| panic!("no parent"));
            std::fs::create_dir(parent).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(path, content).unwrap_or_else(|e| panic!("{e}"));
        }
        for p in [
            &empty_dir,
            &full_dir,
            &empty_file,
            &full_file,
            &ours,
            &theirs,
            &not_commondir,
        ] {
            remove_placeholder(p);
        }
        assert!(!empty_dir.exists() && !empty_file.exists() && !ours.exists());
        assert!(full_dir.join("settings.json").exists() && full_file.exists());
        assert!(theirs.exists() && not_commondir.exists());
        let list = vec![empty_dir.clone(), full_file.clone()];
        assert_eq!(decode(&encode(&list)), list);
    }
}
