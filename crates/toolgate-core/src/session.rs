//! Sessions: the roots a call may touch, the current directory, and per-session state that
//! tools keep (read ledgers, todo lists, background tasks).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;
use toolgate_protocol::PermissionMode;

/// The directories a session may act in: the workspace root plus additional directories.
/// All paths are canonical (symlinks resolved) when built with [`Workspace::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
    additional: Vec<PathBuf>,
    home: Option<PathBuf>,
}

impl Workspace {
    /// A workspace rooted at `root` (which must exist); the path is canonicalised.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = root.as_ref();
        let canonical = root
            .canonicalize()
            .map_err(|e| io::Error::new(e.kind(), format!("workspace {}: {e}", root.display())))?;
        if !canonical.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace {} is not a directory", root.display()),
            ));
        }
        Ok(Self {
            root: canonical,
            additional: Vec::new(),
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
        })
    }

    /// Replaces the home directory (taken from `$HOME` by [`Workspace::new`]).
    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// The user's home directory, if known.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// What the path-class table says of an absolute, normalised path in this workspace
    /// (protected, secret, personal), judged below the deepest root or home containing it.
    pub fn classify(&self, path: &Path) -> toolgate_protocol::paths::Classes {
        let roots: Vec<&Path> = self.roots().collect();
        toolgate_protocol::paths::classify(path, &roots, self.home())
    }

    /// Adds an additional directory (must exist; canonicalised).
    pub fn add_dir(&mut self, dir: impl AsRef<Path>) -> io::Result<()> {
        let dir = dir.as_ref();
        let abs = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            self.root.join(dir)
        };
        let canonical = abs.canonicalize().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("additional directory {}: {e}", dir.display()),
            )
        })?;
        if !self.additional.contains(&canonical) && canonical != self.root {
            self.additional.push(canonical);
        }
        Ok(())
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The additional directories.
    pub fn additional(&self) -> &[PathBuf] {
        &self.additional
    }

    /// The root followed by the additional directories.
    pub fn roots(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.root.as_path()).chain(self.additional.iter().map(PathBuf::as_path))
    }

    /// Whether an absolute, normalised path lies inside one of the roots. This is a lexical
    /// check: callers resolve symlinks first (the file tools open paths beneath a root handle
    /// so that a swapped symlink cannot escape either).
    pub fn contains(&self, path: &Path) -> bool {
        self.roots().any(|root| path.starts_with(root))
    }

    /// Joins `path` onto `base` when relative and removes `.` and `..` lexically.
    pub fn absolutize(base: &Path, path: &Path) -> PathBuf {
        let joined = if path.is_absolute() {
            path.to_path_buf()
        } else {
            base.join(path)
        };
        normalize_lexically(&joined)
    }
}

/// Removes `.` and resolves `..` without touching the file system. `..` at the root stays at
/// the root, as the kernel does.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
                if out.as_os_str().is_empty() {
                    out.push("/");
                }
            }
            Component::Normal(c) => out.push(c),
        }
    }
    out
}

/// A typed map of per-session state owned by tools. Each tool stores its own type (a read
/// ledger, a todo list) without the core knowing about it.
#[derive(Default)]
pub struct Extensions {
    map: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Extensions {
    fn lock(&self) -> MutexGuard<'_, HashMap<TypeId, Arc<dyn Any + Send + Sync>>> {
        // A poisoned map only means a tool panicked while inserting; the map itself is
        // still consistent (insert is atomic), so keep going.
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session's value of type `T`, created with `init` on first use.
    pub fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        let mut map = self.lock();
        if let Some(existing) = map
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
        {
            return existing;
        }
        let fresh = Arc::new(init());
        map.insert(TypeId::of::<T>(), fresh.clone());
        fresh
    }

    /// The session's value of type `T`, if any tool created it.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.lock()
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
    }
}

/// Options for a new session.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Session id; a random UUID when `None`.
    pub id: Option<String>,
    /// Permission mode.
    pub mode: PermissionMode,
    /// The client or profile name, recorded in the audit log.
    pub client: Option<String>,
}

/// One agent session: its roots, current directory, mode and tool state.
pub struct Session {
    id: String,
    workspace: Workspace,
    /// Changes only through [`Session::set_mode`] (plan mode's tools); the gate records each
    /// change on the call that made it.
    mode: Mutex<PermissionMode>,
    client: Option<String>,
    cwd: Mutex<PathBuf>,
    /// Per-session state kept by tools.
    pub extensions: Extensions,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("workspace", &self.workspace)
            .field("mode", &self.mode())
            .field("cwd", &self.cwd())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A new session in `workspace`, starting in its root.
    pub fn new(workspace: Workspace, options: SessionOptions) -> Self {
        Self::with_cancellation(workspace, options, CancellationToken::new())
    }

    /// A new session ended by `cancel` too (a sub-agent's session ends with its Agent call).
    pub(crate) fn with_cancellation(
        workspace: Workspace,
        options: SessionOptions,
        cancel: CancellationToken,
    ) -> Self {
        let cwd = workspace.root().to_path_buf();
        Self {
            id: options
                .id
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            workspace,
            mode: Mutex::new(options.mode),
            client: options.client,
            cwd: Mutex::new(cwd),
            extensions: Extensions::default(),
            cancel,
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The roots.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The permission mode.
    pub fn mode(&self) -> PermissionMode {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Switches the permission mode; returns the mode before. Only tools that carry the
    /// user's answer call this (ExitPlanMode, EnterPlanMode): the gate records the change.
    pub fn set_mode(&self, mode: PermissionMode) -> PermissionMode {
        std::mem::replace(
            &mut *self.mode.lock().unwrap_or_else(PoisonError::into_inner),
            mode,
        )
    }

    /// The client or profile name.
    pub fn client(&self) -> Option<&str> {
        self.client.as_deref()
    }

    /// The current directory (always inside the roots).
    pub fn cwd(&self) -> PathBuf {
        self.cwd
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Changes the current directory. Refuses a directory outside the roots and returns
    /// `false`, leaving the cwd unchanged.
    pub fn set_cwd(&self, dir: &Path) -> bool {
        if !self.workspace.contains(dir) {
            return false;
        }
        *self.cwd.lock().unwrap_or_else(PoisonError::into_inner) = dir.to_path_buf();
        true
    }

    /// Cancelled when the session ends; every call's token is a child of it.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Ends the session: cancels running calls (tools holding background tasks watch this).
    pub fn end(&self) {
        self.cancel.cancel();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalisation() {
        assert_eq!(
            normalize_lexically(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(
            normalize_lexically(Path::new("/../../etc")),
            PathBuf::from("/etc")
        );
        let base = Path::new("/ws");
        assert_eq!(
            Workspace::absolutize(base, Path::new("../x")),
            PathBuf::from("/x")
        );
    }

    #[test]
    fn cwd_stays_inside_roots() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let s = Session::new(ws.clone(), SessionOptions::default());
        assert!(!s.set_cwd(Path::new("/")));
        assert_eq!(s.cwd(), ws.root());
        let sub = ws.root().join("sub");
        assert!(s.set_cwd(&sub));
        assert_eq!(s.cwd(), sub);
    }

    #[test]
    fn extensions_are_typed_and_shared() {
        let ext = Extensions::default();
        let a = ext.get_or_init(|| Mutex::new(vec![1u8]));
        a.lock().unwrap().push(2);
        let b = ext.get_or_init(|| Mutex::new(vec![9u8]));
        assert_eq!(*b.lock().unwrap(), vec![1, 2]);
        assert!(ext.get::<String>().is_none());
    }
}
