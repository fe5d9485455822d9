//! Root-confined path resolution: the security core every file tool goes through.
//!
//! A path from the model is handled in two steps:
//!
//! 1. **Check** ([`resolve`], stage 3): `~` is expanded, a relative path is joined onto the
//!    session's cwd, `.` and `..` are removed lexically, `/proc` is refused, and the path is
//!    resolved to its *real* path (symlinks followed, a missing tail appended to the deepest
//!    existing ancestor). The real path must lie inside one of the session's roots.
//! 2. **Use** ([`open`]): the file is opened relative to a handle on that root with
//!    `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS)`. The real path
//!    contains no symlinks, so a symlink met at this point was swapped in after the check; the
//!    kernel refuses it, as it refuses any step out of the root. Where `openat2` is
//!    unavailable, a component-by-component walk with `O_NOFOLLOW` gives the same guarantee.
//!
//! Hard links cannot be traced back to their other names, so regular files with more than
//! one link are refused unless the configuration allows them. Writes replace a file by
//! renaming a temporary file over it, which never writes through a link of any kind.

mod open;

use std::ffi::OsString;
use std::os::fd::AsRawFd as _;
use std::os::unix::ffi::OsStringExt as _;
use std::path::{Component, Path, PathBuf};

use rustix::fd::OwnedFd;
use rustix::fs::{self as rfs, FileType, Mode, OFlags};
use rustix::io::Errno;

use toolgate_core::Session;
use toolgate_core::session::normalize_lexically;
use toolgate_protocol::{Access, PathFact};

use crate::error::{Error, Result};

pub(crate) use open::{
    Expect, FileKind, Opened, RootDir, WriteOptions, describe_kind, open_dir, open_file,
    write_atomic,
};

/// A path checked against the session's roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute and lexically normalised, `~` expanded: what hooks and the audit log see.
    pub display: PathBuf,
    /// The real path: symlinks resolved; for a missing file, the real parent plus the name.
    pub real: PathBuf,
    /// The root the real path lies beneath.
    pub root: PathBuf,
    /// `real` relative to `root` (empty for the root itself); contains no `..` or symlinks.
    pub rel: PathBuf,
    /// Whether something exists at the real path.
    pub exists: bool,
    /// Whether it is a directory.
    pub is_dir: bool,
}

impl ResolvedPath {
    /// The policy facts for this path: the real path, and the path as given when it differs
    /// (a deny rule should match either).
    pub fn facts(&self, session: &Session, access: Access) -> Vec<PathFact> {
        let mut facts = vec![PathFact {
            beneath: toolgate_protocol::Beneath::Nothing,
            beneath_only: Vec::new(),
            path: self.real.clone(),
            access,
            inside_roots: true,
            protected: is_protected_in(session, &self.real),
        }];
        if self.display != self.real {
            facts.push(PathFact {
                beneath: toolgate_protocol::Beneath::Nothing,
                beneath_only: Vec::new(),
                path: self.display.clone(),
                access,
                inside_roots: session.workspace().contains(&self.display),
                protected: is_protected_in(session, &self.display),
            });
        }
        facts
    }

    /// A handle on the root this path lies beneath.
    pub(crate) fn root_dir(&self) -> Result<RootDir> {
        RootDir::open(&self.root)
    }
}

/// Whether a path is protected (the path-class table, judged below the root that contains
/// it, so a workspace that itself lives under, say, `~/.cargo` is not protected as a whole).
pub fn is_protected_in(session: &Session, path: &Path) -> bool {
    session.workspace().classify(path).protected.is_some()
}

/// Expands `~` and `~/…` with `$HOME`; refuses `~user`.
fn expand_tilde(raw: &str) -> Result<PathBuf> {
    if raw == "~" || raw.starts_with("~/") {
        let home = std::env::var_os("HOME").ok_or_else(|| Error::BadPath {
            path: raw.to_owned(),
            reason: "`~` cannot be expanded because $HOME is not set; use an absolute path".into(),
        })?;
        let mut p = PathBuf::from(home);
        if let Some(rest) = raw.strip_prefix("~/") {
            p.push(rest);
        }
        return Ok(p);
    }
    if raw.starts_with('~') {
        return Err(Error::BadPath {
            path: raw.to_owned(),
            reason: "only `~` and `~/…` are expanded; use an absolute path".into(),
        });
    }
    Ok(PathBuf::from(raw))
}

/// The absolute, lexically normalised form of a path from the model (relative paths are
/// taken from the session's cwd). Does not touch the file system.
pub fn absolute(session: &Session, raw: &str) -> Result<PathBuf> {
    if raw.is_empty() {
        return Err(Error::BadPath {
            path: raw.to_owned(),
            reason: "the path is empty".into(),
        });
    }
    if raw.contains('\0') {
        return Err(Error::BadPath {
            path: raw.escape_debug().to_string(),
            reason: "the path contains a NUL byte".into(),
        });
    }
    let expanded = expand_tilde(raw)?;
    let abs = if expanded.is_absolute() {
        normalize_lexically(&expanded)
    } else {
        normalize_lexically(&session.cwd().join(expanded))
    };
    Ok(abs)
}

/// Resolves `raw` for a tool: see the module documentation.
pub fn resolve(session: &Session, raw: &str) -> Result<ResolvedPath> {
    let display = absolute(session, raw)?;
    if display.starts_with("/proc") {
        return Err(Error::Proc(display));
    }
    let (real, is_dir) = real_path(&display)?;
    if real.starts_with("/proc") {
        return Err(Error::Proc(real));
    }
    let root = session
        .workspace()
        .roots()
        .filter(|r| real.starts_with(r))
        .max_by_key(|r| r.as_os_str().len())
        .map(Path::to_path_buf)
        .ok_or_else(|| Error::OutsideRoots {
            path: real.clone(),
            roots: session
                .workspace()
                .roots()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let rel = real
        .strip_prefix(&root)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    debug_assert!(rel.components().all(|c| matches!(c, Component::Normal(_))));
    Ok(ResolvedPath {
        display,
        real,
        root,
        rel,
        exists: is_dir.is_some(),
        is_dir: is_dir.unwrap_or(false),
    })
}

/// The real path of an absolute, normalised path and, when something exists there, whether
/// it is a directory. A missing tail is appended to the real path of the deepest existing
/// ancestor; a dangling symlink anywhere is refused (its target is not known to be inside
/// the roots).
fn real_path(abs: &Path) -> Result<(PathBuf, Option<bool>)> {
    // `O_PATH` follows symlinks exactly as `realpath(3)` does, but in one walk by the kernel
    // instead of a `readlink` per component, and the handle answers "is it a directory"
    // too. Nothing is opened for reading: FIFOs and devices are not touched.
    match rfs::open(abs, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => {
            let is_dir = rfs::fstat(&fd)
                .map(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
                .map_err(|e| Error::io("resolving", abs, e.into()))?;
            let real = match path_of_open(&fd) {
                Some(real) => real,
                None => std::fs::canonicalize(abs).map_err(|e| Error::io("resolving", abs, e))?,
            };
            Ok((real, Some(is_dir)))
        }
        Err(Errno::NOENT) => {
            if std::fs::symlink_metadata(abs).is_ok() {
                return Err(Error::Dangling(abs.to_path_buf()));
            }
            let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
                return Err(Error::NotFound(abs.to_path_buf()));
            };
            let (real_parent, _) = real_path(parent)?;
            Ok((real_parent.join(name), None))
        }
        Err(Errno::NOTDIR) => Err(Error::BadPath {
            path: abs.display().to_string(),
            reason: "a component of the path is a file, not a directory".into(),
        }),
        Err(e) => Err(Error::io("resolving", abs, e.into())),
    }
}

/// The path the kernel has for an open handle (`/proc/self/fd/N`), or `None` when it
/// cannot say: `/proc` not mounted, the file deleted meanwhile (the kernel appends
/// ` (deleted)`, which a real name may end with too), or not a path at all.
fn path_of_open(fd: &OwnedFd) -> Option<PathBuf> {
    let link = rfs::readlink(format!("/proc/self/fd/{}", fd.as_raw_fd()), Vec::new()).ok()?;
    let bytes = link.into_bytes();
    if !bytes.starts_with(b"/") || bytes.ends_with(b" (deleted)") {
        return None;
    }
    Some(PathBuf::from(OsString::from_vec(bytes)))
}

#[cfg(test)]
mod tests;
