//! The filesystem view (tier A), built by the sandbox's pid 1 inside the new mount namespace.
//!
//! 1. `/` private; tmpfs base on `/tmp`; `pivot_root` into it (old root at `/oldroot`).
//! 2. rbind `/oldroot` → `/newroot`, then one recursive `mount_setattr(RDONLY|NOSUID|NODEV)`.
//! 3. Private `/tmp` (tmpfs), minimal `/dev` (tmpfs + binds of a few device nodes), and
//!    unless `allowAllUnixSockets`, an empty read-only tmpfs over `/run` (and a real
//!    `/var/run`) with what must stay readable bound back ([`SOCKET_DIRS`]).
//! 4. Writable roots: rbind from `/oldroot` (the host's writable mounts), nosuid/nodev.
//! 5. Carve-outs: read-only self-binds; missing protected paths get an empty placeholder first;
//!    a protected symlink gets a mask mounted on the link itself (`move_mount`, no-follow).
//!    Directories the carve-outs live in (`.git`, the parents of `denyWrite` paths) are
//!    pinned — bound onto themselves, read-write — so they cannot be moved aside.
//! 6. Read denies: a mode-000 empty dir/file mounted over each match.
//! 7. Fresh `/proc` with `sys`, `sysrq-trigger`, `irq`, `bus`, `fs` read-only.
//! 8. `pivot_root(".", ".")` in `/newroot`, detach the old root.

use std::ffi::CString;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use crate::error::SandboxError;
use crate::policy::{COMMONDIR_PLACEHOLDER, FsMode, SandboxPolicy, WhenMissing};
use crate::sys::{self, AT_RECURSIVE, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};

const LAYER: &str = "mount_ns";
const HINT: &str = "check the path, or disable the mount_ns layer (tier B: Landlock only)";
const NEW: &str = "/newroot";
const OLD: &str = "/oldroot";
const MASK_FILE: &str = "/mask-file";
const MASK_DIR: &str = "/mask-dir";

/// Device nodes bound into the minimal `/dev`.
const DEV_NODES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// Where the host's daemons keep their sockets (FHS: `/run`, and `/var/run`, its old name,
/// when that is a directory of its own rather than a link to `/run`). Hidden behind an empty
/// tmpfs unless `allowAllUnixSockets`: `connect(2)` and `sendto(2)` reach a socket file
/// through a read-only mount, and a datagram socket — journald's, `/dev/log`'s target,
/// chronyd's command socket — accepts from any datagram socket, including one of an
/// anonymous pair. This layer does not depend on how the command got its socket; seccomp
/// (datagram pairs refused) and Landlock ABI 9 (no pathname socket) add to it. What
/// programs read there is bound back read-only: see [`socket_dir_keeps`].
pub(crate) const SOCKET_DIRS: &[&str] = &["/run", "/var/run"];

/// Size of the tmpfs hiding a [`SOCKET_DIRS`] entry: it holds only the mount points of what
/// is bound back.
const SOCKET_DIR_TMPFS: &str = "mode=0755,size=64k";

/// `/proc` entries made read-only (writable by uid 0 without capabilities otherwise).
const PROC_READONLY: &[&str] = &["sys", "sysrq-trigger", "irq", "bus", "fs", "acpi", "scsi"];

fn cstr(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::InvalidPath {
        path: path.to_path_buf(),
        reason: "contains NUL".to_owned(),
    })
}

fn check(e: i32, op: impl FnOnce() -> String) -> Result<(), SandboxError> {
    if e == 0 {
        return Ok(());
    }
    Err(SandboxError::io(
        LAYER,
        op(),
        std::io::Error::from_raw_os_error(e),
        HINT,
    ))
}

fn bind(src: &Path, dst: &Path, recursive: bool) -> Result<(), SandboxError> {
    let flags = libc::MS_BIND | if recursive { libc::MS_REC } else { 0 };
    let e = sys::mount(Some(&cstr(src)?), &cstr(dst)?, None, flags, None);
    check(e, || format!("bind {} -> {}", src.display(), dst.display()))
}

fn setattr(path: &Path, set: u64) -> Result<(), SandboxError> {
    let e = sys::mount_setattr(libc::AT_FDCWD, &cstr(path)?, AT_RECURSIVE, set, 0);
    check(e, || format!("mount_setattr {}", path.display()))
}

fn tmpfs(target: &Path, opts: &str) -> Result<(), SandboxError> {
    let data = CString::new(opts).unwrap_or_default();
    let e = sys::mount(
        Some(c"tmpfs"),
        &cstr(target)?,
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&data),
    );
    check(e, || format!("mount tmpfs on {}", target.display()))
}

fn io_err(op: String) -> impl FnOnce(std::io::Error) -> SandboxError {
    move |e| SandboxError::io(LAYER, op, e, HINT)
}

fn mkdir_p(path: &Path) -> Result<(), SandboxError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(path)
        .map_err(io_err(format!("mkdir -p {}", path.display())))
}

fn touch(path: &Path, mode: u32) -> Result<(), SandboxError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(mode)
        .open(path)
        .map(drop)
        .map_err(io_err(format!("create {}", path.display())))
}

/// `/newroot` + absolute `path`.
fn under(base: &str, path: &Path) -> PathBuf {
    let rel: PathBuf = path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    Path::new(base).join(rel)
}

/// Mounts `mask` (a file) onto the symlink `link` itself, without following it.
fn mask_symlink(mask: &Path, link: &Path) -> Result<(), SandboxError> {
    let src = cstr(mask)?;
    let dst = cstr(link)?;
    // SAFETY: raw open_tree/move_mount with valid C strings; the fd is closed below.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            src.as_ptr(),
            sys::OPEN_TREE_CLONE | libc::O_CLOEXEC as u32,
        ) as i32;
        if fd < 0 {
            return check(sys::errno(), || format!("open_tree {}", mask.display()));
        }
        let r = libc::syscall(
            libc::SYS_move_mount,
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            dst.as_ptr(),
            sys::MOVE_MOUNT_F_EMPTY_PATH,
        );
        let e = if r < 0 { sys::errno() } else { 0 };
        libc::close(fd);
        check(e, || {
            format!("move_mount mask onto symlink {}", link.display())
        })?;
    }
    setattr(
        link,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
    )
}

/// Makes `path` (inside /newroot) read-only, creating a placeholder when it is missing
/// (pushed onto `created`, as a host path, for removal after the run).
fn protect(
    path: &Path,
    root: &Path,
    when_missing: WhenMissing,
    created: &mut Vec<PathBuf>,
) -> Result<(), SandboxError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => mask_symlink(Path::new(MASK_FILE), path),
        Ok(_) => {
            bind(path, path, true)?;
            setattr(
                path,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            )
        }
        Err(_)
            if matches!(
                when_missing,
                WhenMissing::Skip | WhenMissing::MoveAside | WhenMissing::Exception
            ) =>
        {
            Ok(())
        }
        Err(_) => {
            // Create the first missing component (a directory unless it is the leaf).
            let mut cur = root.to_path_buf();
            let rel = path.strip_prefix(root).unwrap_or(path);
            let n = rel.components().count();
            for (i, comp) in rel.components().enumerate() {
                cur.push(comp);
                match std::fs::symlink_metadata(&cur) {
                    Ok(m) if m.is_dir() => continue,
                    Ok(_) => return protect(&cur, root, WhenMissing::Skip, created),
                    Err(_) => {
                        let made = if i + 1 < n || when_missing == WhenMissing::PlaceholderDir {
                            std::fs::DirBuilder::new().mode(0o755).create(&cur)
                        } else if when_missing == WhenMissing::PlaceholderCommonDir {
                            // Created and filled in one go: git outside may read it any time.
                            std::fs::OpenOptions::new()
                                .write(true)
                                .create_new(true)
                                .mode(0o644)
                                .open(&cur)
                                .and_then(|mut f| f.write_all(COMMONDIR_PLACEHOLDER))
                        } else {
                            std::fs::OpenOptions::new()
                                .write(true)
                                .create_new(true)
                                .mode(0o644)
                                .open(&cur)
                                .map(drop)
                        };
                        match made {
                            Ok(()) => {}
                            // Inside a placeholder made read-only for an earlier entry
                            // (`.cargo/` for `.cargo/config.toml`): nothing can be created
                            // there in the room anyway.
                            Err(e) if e.raw_os_error() == Some(libc::EROFS) => return Ok(()),
                            // Another room running meanwhile made it first (its
                            // placeholder): protect what is there, and leave its removal
                            // to the run that made it.
                            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                                return protect(&cur, root, WhenMissing::Skip, created);
                            }
                            Err(e) => {
                                return Err(io_err(format!("placeholder {}", cur.display()))(e));
                            }
                        }
                        created.push(Path::new("/").join(cur.strip_prefix(NEW).unwrap_or(&cur)));
                        return protect(&cur, root, WhenMissing::Skip, created);
                    }
                }
            }
            Ok(())
        }
    }
}

/// Whether `git` is a directory with something in it (an empty one is no repository).
fn is_repository_dir(git: &Path) -> bool {
    std::fs::symlink_metadata(git).is_ok_and(|m| m.is_dir())
        && std::fs::read_dir(git).is_ok_and(|mut entries| entries.next().is_some())
}

/// Keeps the `.git` of a project root from being created, replaced or moved aside; the
/// `.git/…` carve-outs inside a repository directory (`repository`: see
/// [`is_repository_dir`]) are the caller's.
///
/// - No repository (no `.git`, or an empty directory such as a placeholder another run
///   still holds): a command could create one whose hooks and `core.fsmonitor` run at the
///   user's next `git` command there. The first missing component of every `.git/…` name is
///   `.git` itself, so the read-only placeholder goes there (no `git init` inside: run it
///   outside or as an excluded command).
/// - A repository directory: pinned ([`pin_dir`]) — else `mv .git elsewhere` and a fresh
///   `.git` would shed every carve-out inside it.
/// - A `.git` file (a linked worktree's or a submodule's `gitdir:` pointer): read-only.
/// - A `.git` symlink: masked (git does not work inside): the link could be replaced, and
///   carve-outs through it would land wherever it points.
fn protect_git(
    git: &Path,
    repository: bool,
    root: &Path,
    created: &mut Vec<PathBuf>,
    pinned: &mut Vec<PathBuf>,
) -> Result<(), SandboxError> {
    if repository {
        return pin_dir(git, pinned);
    }
    protect(git, root, WhenMissing::PlaceholderDir, created)
}

/// Binds `dir` onto itself, read-write, once: a mount point cannot be renamed or removed,
/// so the carve-outs below it cannot be shed by moving it aside and recreating the path.
fn pin_dir(dir: &Path, pinned: &mut Vec<PathBuf>) -> Result<(), SandboxError> {
    if pinned.iter().any(|p| p == dir) {
        return Ok(());
    }
    bind(dir, dir, true)?;
    setattr(dir, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)?;
    pinned.push(dir.to_path_buf());
    Ok(())
}

/// Pins (see [`pin_dir`]) every directory strictly between `root` and `path`, top down,
/// stopping at the first that is missing or not a plain directory (a symlinked component
/// is followed by the carve-out and cannot be pinned: see docs/sandbox.md).
fn pin_ancestors(path: &Path, root: &Path, pinned: &mut Vec<PathBuf>) -> Result<(), SandboxError> {
    let Some(parent) = path.parent() else {
        return Ok(());
    };
    let Ok(rel) = parent.strip_prefix(root) else {
        return Ok(());
    };
    let mut cur = root.to_path_buf();
    for comp in rel.components() {
        cur.push(comp);
        if !std::fs::symlink_metadata(&cur).is_ok_and(|m| m.is_dir()) {
            return Ok(());
        }
        pin_dir(&cur, pinned)?;
    }
    Ok(())
}

/// Hides `path` (inside /newroot); `allowed` are readable exceptions beneath it (host paths).
fn mask(path: &Path, allowed: &[PathBuf]) -> Result<(), SandboxError> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if meta.file_type().is_symlink() {
        return mask_symlink(Path::new(MASK_FILE), path);
    }
    if !meta.is_dir() {
        bind(Path::new(MASK_FILE), path, false)?;
        return setattr(path, ro);
    }
    let host = Path::new("/").join(path.strip_prefix(NEW).unwrap_or(path));
    let inner: Vec<&PathBuf> = allowed
        .iter()
        .filter(|a| a.starts_with(&host) && **a != host)
        .collect();
    if inner.is_empty() {
        bind(Path::new(MASK_DIR), path, false)?;
        return setattr(path, ro);
    }
    tmpfs(path, "mode=0755,size=64k")?;
    for a in inner {
        let src = under(OLD, a);
        let dst = under(NEW, a);
        if src.is_dir() {
            mkdir_p(&dst)?;
        } else if src.exists() {
            if let Some(parent) = dst.parent() {
                mkdir_p(parent)?;
            }
            touch(&dst, 0o644)?;
        } else {
            continue;
        }
        bind(&src, &dst, true)?;
    }
    setattr(path, ro)
}

/// Expands a pattern whose last component may contain `*` / `?` (against the new root).
fn expand(pattern: &Path) -> Vec<PathBuf> {
    let name = pattern
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?']) {
        return vec![under(NEW, pattern)];
    }
    let Some(parent) = pattern.parent() else {
        return Vec::new();
    };
    let dir = under(NEW, parent);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| glob_match(name.as_bytes(), e.file_name().as_bytes()))
        .map(|e| dir.join(e.file_name()))
        .collect()
}

/// `*` and `?` glob over one path component.
pub(crate) fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    match (pat.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob_match(&pat[1..], s) || (!s.is_empty() && glob_match(pat, &s[1..])),
        (Some(b'?'), Some(_)) => glob_match(&pat[1..], &s[1..]),
        (Some(p), Some(c)) if p == c => glob_match(&pat[1..], &s[1..]),
        _ => false,
    }
}

fn mount_proc(target: &Path) -> Result<(), SandboxError> {
    let e = sys::mount(
        Some(c"proc"),
        &cstr(target)?,
        Some(c"proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    );
    check(e, || format!("mount proc on {}", target.display()))?;
    for entry in PROC_READONLY {
        let p = target.join(entry);
        if p.exists() {
            bind(&p, &p, true)?;
            setattr(&p, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)?;
        }
    }
    Ok(())
}

fn private_root() -> Result<(), SandboxError> {
    let e = sys::mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None);
    check(e, || "mount --make-rprivate /".to_owned())
}

/// `FsMode::Off`: keep the host filesystem, but a fresh `/proc` for the pid namespace.
pub(crate) fn setup_off() -> Result<(), SandboxError> {
    private_root()?;
    mount_proc(Path::new("/proc"))
}

/// The host paths inside a hidden [`SOCKET_DIRS`] entry that must stay visible (computed
/// on the host side, before pid 1 exists): the resolver configuration `/etc/resolv.conf`
/// links to (`/run/systemd/resolve/stub-resolv.conf` and the like), and the roots and the
/// working directory when they lie there. Empty when nothing is hidden.
pub(crate) fn socket_dir_keeps(policy: &SandboxPolicy, cwd: &Path) -> Vec<PathBuf> {
    if policy.network.allow_all_unix_sockets || policy.filesystem.mode == FsMode::Off {
        return Vec::new();
    }
    let hidden: Vec<&Path> = SOCKET_DIRS
        .iter()
        .map(Path::new)
        .filter(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()))
        .collect();
    let under_hidden = |p: &Path| hidden.iter().any(|h| p.starts_with(h));
    let mut keep = Vec::new();
    if let Ok(resolv) = std::fs::canonicalize("/etc/resolv.conf")
        && under_hidden(&resolv)
        && resolv.is_file()
    {
        keep.push(resolv);
    }
    let fs = &policy.filesystem;
    for p in fs
        .writable_roots
        .iter()
        .chain(&fs.project_roots)
        .map(PathBuf::as_path)
        .chain(std::iter::once(cwd))
    {
        if under_hidden(p) && !keep.iter().any(|k| k == p) {
            keep.push(p.to_path_buf());
        }
    }
    keep
}

/// Mounts an empty tmpfs over each [`SOCKET_DIRS`] directory and binds `keep` back
/// read-only. Returns the tmpfs mount points, to be made read-only once every later mount
/// point inside them exists.
fn hide_socket_dirs(keep: &[PathBuf]) -> Result<Vec<PathBuf>, SandboxError> {
    let mut hidden = Vec::new();
    for dir in SOCKET_DIRS.iter().map(Path::new) {
        let dst = under(NEW, dir);
        if !std::fs::symlink_metadata(&dst).is_ok_and(|m| m.is_dir()) {
            continue; // missing, or a link into another hidden directory
        }
        tmpfs(&dst, SOCKET_DIR_TMPFS)?;
        for k in keep.iter().filter(|k| k.starts_with(dir)) {
            let (src, kdst) = (under(OLD, k), under(NEW, k));
            if src.is_dir() {
                mkdir_p(&kdst)?;
                bind(&src, &kdst, true)?;
            } else {
                if let Some(parent) = kdst.parent() {
                    mkdir_p(parent)?;
                }
                touch(&kdst, 0o444)?;
                bind(&src, &kdst, false)?;
            }
            setattr(
                &kdst,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            )?;
        }
        hidden.push(dst);
    }
    Ok(hidden)
}

/// The protected names of one project root (`nroot`, inside /newroot): the root's `.git`,
/// every [`crate::policy::default_protected`] entry, and the writable exceptions inside them.
fn protect_root(
    policy: &SandboxPolicy,
    nroot: &Path,
    created: &mut Vec<PathBuf>,
    pinned: &mut Vec<PathBuf>,
) -> Result<(), SandboxError> {
    let fs = &policy.filesystem;
    let git = nroot.join(".git");
    let repository = is_repository_dir(&git);
    if fs.protected.iter().any(|n| n.path.starts_with(".git/")) {
        protect_git(&git, repository, nroot, created, pinned)?;
    }
    for name in &fs.protected {
        if (name.path.starts_with(".git/") && !repository)
            || name.when_missing == WhenMissing::Exception
        {
            continue; // `.git` itself is read-only or masked; exceptions come below
        }
        let path = nroot.join(&name.path);
        if !name.path.starts_with(".git/") {
            // `.cargo/config.toml`: else `mv .cargo x && mkdir .cargo` sheds the carve-out.
            pin_ancestors(&path, nroot, pinned)?;
        }
        protect(&path, nroot, name.when_missing, created)?;
    }
    for name in fs
        .protected
        .iter()
        .filter(|n| n.when_missing == WhenMissing::Exception)
    {
        let p = nroot.join(&name.path);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            bind(&p, &p, true)?;
            let e = sys::mount_setattr(
                libc::AT_FDCWD,
                &cstr(&p)?,
                AT_RECURSIVE,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                MOUNT_ATTR_RDONLY,
            );
            check(e, || format!("mount_setattr rw {}", p.display()))?;
        }
    }
    Ok(())
}

/// The repositories found below the project roots (`crate::repos`): each git directory is
/// pinned and gets the `.git/…` carve-outs of the root's own; each nested `.git` file is
/// read-only and each `.git` symlink masked.
fn protect_nested(
    policy: &SandboxPolicy,
    nested: &crate::repos::Nested,
    created: &mut Vec<PathBuf>,
    pinned: &mut Vec<PathBuf>,
) -> Result<(), SandboxError> {
    for dir in &nested.git_dirs {
        let ndir = under(NEW, dir);
        if !std::fs::symlink_metadata(&ndir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        pin_dir(&ndir, pinned)?;
        for name in &policy.filesystem.protected {
            if let Some(inner) = name.path.strip_prefix(".git/") {
                protect(&ndir.join(inner), &ndir, name.when_missing, created)?;
            }
        }
    }
    for link in &nested.git_links {
        protect(
            &under(NEW, link),
            Path::new(NEW),
            WhenMissing::Skip,
            created,
        )?;
    }
    Ok(())
}

/// Builds the whole view and pivots into it. Returns the placeholders it created on the
/// host (see `crate::placeholders`). `socket_keeps`: see [`socket_dir_keeps`]; `nested`:
/// the repositories found below the project roots.
pub(crate) fn setup(
    policy: &SandboxPolicy,
    tmp_binds: &[PathBuf],
    socket_keeps: &[PathBuf],
    nested: &crate::repos::Nested,
) -> Result<Vec<PathBuf>, SandboxError> {
    let fs = &policy.filesystem;
    let mut created = Vec::new();
    private_root()?;
    tmpfs(Path::new("/tmp"), "mode=0755,size=1m")?;
    let base = Path::new("/tmp");
    for d in ["newroot", "oldroot"] {
        mkdir_p(&base.join(d))?;
    }
    std::fs::DirBuilder::new()
        .mode(0o000)
        .create(base.join("mask-dir"))
        .map_err(io_err("mkdir mask-dir".to_owned()))?;
    touch(&base.join("mask-file"), 0)?;
    std::env::set_current_dir(base).map_err(io_err("chdir base".to_owned()))?;
    // SAFETY: pivot_root with valid C strings.
    let r = unsafe { libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c"oldroot".as_ptr()) };
    check(if r < 0 { sys::errno() } else { 0 }, || {
        "pivot_root(base)".to_owned()
    })?;
    std::env::set_current_dir("/").map_err(io_err("chdir /".to_owned()))?;
    let (new, old) = (Path::new(NEW), Path::new(OLD));
    bind(old, new, true)?;
    setattr(
        new,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
    )?;

    if fs.private_tmp {
        let t = new.join("tmp");
        if t.is_dir() {
            tmpfs(
                &t,
                &format!("mode=1777,size={}", policy.limits.tmp_size_bytes),
            )?;
            for file in tmp_binds.iter().filter(|f| f.starts_with("/tmp")) {
                let dst = under(NEW, file);
                if let Some(parent) = dst.parent() {
                    mkdir_p(parent)?;
                }
                touch(&dst, 0o555)?;
                bind(&under(OLD, file), &dst, false)?;
                setattr(
                    &dst,
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                )?;
            }
        }
    }
    setup_dev(new, policy.limits.tmp_size_bytes)?;
    let hidden = if policy.network.allow_all_unix_sockets {
        Vec::new()
    } else {
        hide_socket_dirs(socket_keeps)?
    };

    let mut writable: Vec<&PathBuf> = if fs.mode == FsMode::WorkspaceWrite {
        fs.writable_roots.iter().collect()
    } else {
        Vec::new()
    };
    writable.sort_by_key(|p| p.components().count());
    for root in &writable {
        let src = under(OLD, root);
        let Ok(meta) = std::fs::symlink_metadata(&src) else {
            continue; // missing additional directory: nothing to make writable
        };
        if meta.file_type().is_symlink() {
            return Err(SandboxError::InvalidPath {
                path: (*root).clone(),
                reason: "writable root is a symlink; pass its canonical path".to_owned(),
            });
        }
        let dst = under(NEW, root);
        if !dst.exists() {
            mkdir_p(&dst)?; // under the private /tmp
        }
        bind(&src, &dst, true)?;
        setattr(&dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)?;
    }
    let is_writable = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let mut pinned = Vec::new();
    for root in fs.project_roots.iter().filter(|r| is_writable(r)) {
        protect_root(policy, &under(NEW, root), &mut created, &mut pinned)?;
    }
    protect_nested(policy, nested, &mut created, &mut pinned)?;
    for p in fs.write_denied.iter().filter(|p| is_writable(p)) {
        let np = under(NEW, p);
        // The innermost writable root holding it: its ancestors up to there are pinned.
        if let Some(root) = writable
            .iter()
            .filter(|w| p.starts_with(w))
            .max_by_key(|w| w.components().count())
        {
            pin_ancestors(&np, &under(NEW, root), &mut pinned)?;
        }
        let parent_exists = np.parent().is_some_and(Path::exists);
        let when = if parent_exists {
            WhenMissing::PlaceholderFile
        } else {
            WhenMissing::Skip
        };
        let root = np
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| np.clone());
        protect(&np, &root, when, &mut created)?;
    }
    for pattern in &fs.read_denied {
        for p in expand(pattern) {
            mask(&p, &fs.read_allowed)?;
        }
    }
    for dir in &hidden {
        // Only the tmpfs itself: what is bound into it keeps its own flags.
        let e = sys::mount_setattr(
            libc::AT_FDCWD,
            &cstr(dir)?,
            0,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            0,
        );
        check(e, || format!("mount_setattr {}", dir.display()))?;
    }
    mount_proc(&new.join("proc"))?;

    std::env::set_current_dir(new).map_err(io_err("chdir /newroot".to_owned()))?;
    // SAFETY: pivot_root(".", ".") then detach the stacked old root.
    unsafe {
        if libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) < 0 {
            return check(sys::errno(), || "pivot_root(newroot)".to_owned()).map(|()| Vec::new());
        }
        if libc::umount2(c".".as_ptr(), libc::MNT_DETACH) < 0 {
            return check(sys::errno(), || "umount2(old root)".to_owned()).map(|()| Vec::new());
        }
    }
    std::env::set_current_dir("/").map_err(io_err("chdir /".to_owned()))?;
    Ok(created)
}

/// A minimal `/dev` on a small tmpfs. `/dev/shm` gets a tmpfs of its own, as large as the
/// private `/tmp` (`shm_size`): POSIX shared memory (Chromium, PyTorch workers, `sem_open`)
/// needs megabytes, and its pages are charged to the command's memory cgroup like any other.
fn setup_dev(new: &Path, shm_size: u64) -> Result<(), SandboxError> {
    let dev = new.join("dev");
    tmpfs(&dev, "mode=0755,size=64k")?;
    for node in DEV_NODES {
        let src = Path::new(OLD).join("dev").join(node);
        if !src.exists() {
            continue;
        }
        let dst = dev.join(node);
        touch(&dst, 0o666)?;
        bind(&src, &dst, false)?;
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ] {
        std::os::unix::fs::symlink(target, dev.join(link))
            .map_err(io_err(format!("symlink /dev/{link}")))?;
    }
    let shm = dev.join("shm");
    std::fs::DirBuilder::new()
        .mode(0o1777)
        .create(&shm)
        .map_err(io_err("mkdir /dev/shm".to_owned()))?;
    tmpfs(&shm, &format!("mode=1777,size={shm_size}"))?;
    let pts = dev.join("pts");
    mkdir_p(&pts)?;
    // Best effort: a private devpts for tools that allocate a pty.
    let _ = sys::mount(
        Some(c"devpts"),
        &cstr(&pts)?,
        Some(c"devpts"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some(c"newinstance,ptmxmode=0666,mode=0620"),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob() {
        assert!(glob_match(b".env*", b".env"));
        assert!(glob_match(b".env*", b".env.local"));
        assert!(!glob_match(b".env*", b"env"));
        assert!(glob_match(b"id_?sa", b"id_rsa"));
        assert_eq!(under(NEW, Path::new("/a/b")), PathBuf::from("/newroot/a/b"));
    }
}
