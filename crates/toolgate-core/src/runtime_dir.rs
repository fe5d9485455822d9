//! The per-user runtime directory toolgate keeps private state in: the sandbox's probe
//! cache and run lock, and session output files when the workspace cannot hold them.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::PathBuf;

/// `$XDG_RUNTIME_DIR/toolgate`, else `$TMPDIR/toolgate-<uid>`, created with mode 0700 if
/// missing; `None` unless it is a real directory owned by this user and closed to everyone
/// else (another user must not feed toolgate a probe, hold its locks or read its files).
pub fn user_state_dir() -> Option<PathBuf> {
    // SAFETY: geteuid never fails.
    let euid = unsafe { libc::geteuid() };
    let dir = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("toolgate"),
        _ => std::env::temp_dir().join(format!("toolgate-{euid}")),
    };
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == euid && meta.mode() & 0o077 == 0).then_some(dir)
}
