//! Opening and replacing files beneath a root directory handle.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::fd::OwnedFd;
use rustix::fs::{self as rfs, AtFlags, CWD, FileType, Mode, OFlags, RenameFlags, ResolveFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// How often `openat2` is retried when the kernel reports a concurrent rename (`EAGAIN`).
const OPENAT2_RETRIES: usize = 8;

/// How many temporary names are tried before giving up on a write.
const TEMP_NAME_ATTEMPTS: u32 = 16;

/// Resolution flags for every open beneath a root. The path passed is the *real* path, which
/// contains no symlinks, so `NO_SYMLINKS` refuses exactly the symlinks swapped in after the
/// check; `BENEATH` refuses absolute paths and `..` out of the root; `NO_MAGICLINKS` refuses
/// `/proc`-style links.
fn resolve_flags() -> ResolveFlags {
    ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS | ResolveFlags::NO_SYMLINKS
}

/// What an inode is, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else, named.
    Other(&'static str),
}

pub(crate) fn describe_kind(mode: u32) -> FileKind {
    match FileType::from_raw_mode(mode) {
        FileType::RegularFile => FileKind::File,
        FileType::Directory => FileKind::Dir,
        FileType::Symlink => FileKind::Other("symlink"),
        FileType::Fifo => FileKind::Other("FIFO"),
        FileType::Socket => FileKind::Other("socket"),
        FileType::CharacterDevice => FileKind::Other("character device"),
        FileType::BlockDevice => FileKind::Other("block device"),
        FileType::Unknown => FileKind::Other("special file"),
    }
}

/// A handle on a session root; every open goes beneath it.
#[derive(Debug)]
pub(crate) struct RootDir {
    fd: OwnedFd,
    path: PathBuf,
    force_walk: bool,
}

impl RootDir {
    /// Opens a root. Roots are canonical, so no symlink may appear on the way.
    pub(crate) fn open(root: &Path) -> Result<Self> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = match rfs::openat2(
            CWD,
            root,
            flags,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        ) {
            Err(Errno::NOSYS) | Err(Errno::PERM) => {
                rfs::openat(CWD, root, flags | OFlags::NOFOLLOW, Mode::empty())
            }
            other => other,
        }
        .map_err(|e| Error::io("opening the root", root, e.into()))?;
        Ok(Self {
            fd,
            path: root.to_path_buf(),
            force_walk: false,
        })
    }

    /// Uses the component walk even where `openat2` works (tests of the fallback).
    #[cfg(test)]
    pub(crate) fn forcing_walk(mut self) -> Self {
        self.force_walk = true;
        self
    }

    /// The root's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Opens `rel` beneath the root. `rel` must be a relative path of normal components.
    pub(crate) fn open_beneath(
        &self,
        rel: &Path,
        flags: OFlags,
        mode: Mode,
    ) -> io::Result<OwnedFd> {
        if !rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(Errno::XDEV.into());
        }
        let flags = flags | OFlags::CLOEXEC;
        if !self.force_walk {
            let target: &Path = if rel.as_os_str().is_empty() {
                Path::new(".")
            } else {
                rel
            };
            for _ in 0..OPENAT2_RETRIES {
                match rfs::openat2(&self.fd, target, flags, mode, resolve_flags()) {
                    Err(Errno::AGAIN) => continue,
                    Err(Errno::NOSYS) | Err(Errno::PERM) => break,
                    other => return other.map_err(Into::into),
                }
            }
        }
        self.walk(rel, flags, mode)
    }

    /// The fallback: one component at a time, never following a symlink.
    fn walk(&self, rel: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
        let comps: Vec<&std::ffi::OsStr> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        let Some((last, parents)) = comps.split_last() else {
            return Ok(rfs::openat(&self.fd, ".", flags, mode)?);
        };
        let mut dir: Option<OwnedFd> = None;
        for comp in parents {
            let base = dir.as_ref().unwrap_or(&self.fd);
            let next = rfs::openat(
                base,
                *comp,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            dir = Some(next);
        }
        let base = dir.as_ref().unwrap_or(&self.fd);
        Ok(rfs::openat(base, *last, flags | OFlags::NOFOLLOW, mode)?)
    }
}

/// Maps an open error onto the crate's error for `real`.
fn open_error(e: io::Error, real: &Path, op: &'static str) -> Error {
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        Some(Errno::NOENT) => Error::NotFound(real.to_path_buf()),
        Some(Errno::XDEV) | Some(Errno::LOOP) | Some(Errno::NOTDIR) => {
            Error::Escaped(real.to_path_buf())
        }
        _ => Error::io(op, real, e),
    }
}

/// A regular file opened for reading beneath a root.
#[derive(Debug)]
pub(crate) struct Opened {
    /// The file.
    pub file: File,
    /// Its status at open time.
    pub stat: rfs::Stat,
}

impl Opened {
    /// The size in bytes at open time.
    pub(crate) fn size(&self) -> u64 {
        u64::try_from(self.stat.st_size).unwrap_or(0)
    }
}

/// Opens a regular file for reading. Refuses directories, special files and, unless allowed,
/// files with several hard links.
pub(crate) fn open_file(
    root: &RootDir,
    rel: &Path,
    real: &Path,
    allow_hard_links: bool,
) -> Result<Opened> {
    // O_NONBLOCK so that a FIFO cannot block the open; it is refused right after.
    let fd = root
        .open_beneath(
            rel,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(|e| open_error(e, real, "opening"))?;
    let stat = rfs::fstat(&fd).map_err(|e| Error::io("inspecting", real, e.into()))?;
    check_regular(&stat, real, allow_hard_links)?;
    Ok(Opened {
        file: File::from(fd),
        stat,
    })
}

fn check_regular(stat: &rfs::Stat, real: &Path, allow_hard_links: bool) -> Result<()> {
    match describe_kind(stat.st_mode) {
        FileKind::File => {}
        FileKind::Dir => return Err(Error::IsDirectory(real.to_path_buf())),
        FileKind::Other(kind) => {
            return Err(Error::NotRegular {
                path: real.to_path_buf(),
                kind,
            });
        }
    }
    // `nlink_t` is 32 bits on some targets.
    #[allow(clippy::useless_conversion)]
    let links = u64::from(stat.st_nlink);
    if links > 1 && !allow_hard_links {
        return Err(Error::HardLinked {
            path: real.to_path_buf(),
            links,
        });
    }
    Ok(())
}

/// Opens a directory for reading beneath a root.
pub(crate) fn open_dir(root: &RootDir, rel: &Path, real: &Path) -> Result<OwnedFd> {
    root.open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
        .map_err(|e| match e.raw_os_error().map(Errno::from_raw_os_error) {
            Some(Errno::NOTDIR) => Error::NotDirectory(real.to_path_buf()),
            _ => open_error(e, real, "opening"),
        })
}

/// What the file at the target must look like when the write commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Nothing may exist there (the rename refuses to replace anything).
    Absent,
    /// A regular file with exactly this content hash.
    Content([u8; 32]),
}

/// Options for [`write_atomic`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteOptions {
    /// Create missing parent directories (beneath the root).
    pub create_parents: bool,
    /// The state the write replaces.
    pub expect: Expect,
    /// Whether an existing file may have several hard links (the rename breaks the link, so
    /// the other names keep the old content).
    pub allow_hard_links: bool,
}

/// Replaces `rel` atomically: a temporary file in the same directory is written, synced,
/// given the old file's mode (and owner, where permitted) and renamed over the target. The
/// target's current content is checked against `opts.expect` just before the rename, so a
/// concurrent change is reported instead of overwritten (the window left is the rename
/// itself).
pub(crate) fn write_atomic(
    root: &RootDir,
    rel: &Path,
    real: &Path,
    data: &[u8],
    opts: WriteOptions,
) -> Result<()> {
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return Err(Error::IsDirectory(real.to_path_buf()));
    };
    let dir = if opts.create_parents {
        make_dirs(root, parent, real)?
    } else {
        open_dir(root, parent, real.parent().unwrap_or(real))?
    };
    let (tmp_name, tmp) = create_temp(&dir, name, real)?;
    let cleanup = |e: Error| {
        let _ = rfs::unlinkat(&dir, tmp_name.as_os_str(), AtFlags::empty());
        e
    };
    let mut tmp = File::from(tmp);
    tmp.write_all(data)
        .and_then(|()| tmp.sync_all())
        .map_err(|e| cleanup(Error::io("writing", real, e)))?;
    match opts.expect {
        Expect::Absent => {
            rfs::renameat_with(
                &dir,
                tmp_name.as_os_str(),
                &dir,
                name,
                RenameFlags::NOREPLACE,
            )
            .map_err(|e| {
                cleanup(match e {
                    Errno::EXIST => Error::NotRead(real.to_path_buf()),
                    other => Error::io("renaming into place", real, other.into()),
                })
            })?;
        }
        Expect::Content(hash) => {
            let current = rfs::openat(
                &dir,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| cleanup(open_error(e.into(), real, "opening")))?;
            let stat = rfs::fstat(&current)
                .map_err(|e| cleanup(Error::io("inspecting", real, e.into())))?;
            check_regular(&stat, real, opts.allow_hard_links).map_err(cleanup)?;
            let mut current = File::from(current);
            let now =
                hash_reader(&mut current).map_err(|e| cleanup(Error::io("reading", real, e)))?;
            if now != hash {
                return Err(cleanup(Error::Stale(real.to_path_buf())));
            }
            let perm = Mode::from_raw_mode(stat.st_mode & 0o7777);
            let _ = rfs::fchmod(&tmp, perm);
            if stat.st_uid != rustix::process::geteuid().as_raw() {
                // Only root can give a file away; elsewhere this fails and the file keeps
                // our ownership, which is what writing it means.
                let _ = rfs::fchown(
                    &tmp,
                    Some(rustix::fs::Uid::from_raw(stat.st_uid)),
                    Some(rustix::fs::Gid::from_raw(stat.st_gid)),
                );
            }
            rfs::renameat(&dir, tmp_name.as_os_str(), &dir, name)
                .map_err(|e| cleanup(Error::io("renaming into place", real, e.into())))?;
        }
    }
    // The rename is durable once the directory is synced; failure here is not worth
    // undoing a completed write for.
    let _ = rfs::fsync(&dir);
    Ok(())
}

/// Creates a uniquely named temporary file next to the target.
fn create_temp(dir: &OwnedFd, name: &std::ffi::OsStr, real: &Path) -> Result<(OsString, OwnedFd)> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let pid = std::process::id();
    let mut last = Errno::EXIST;
    for attempt in 0..TEMP_NAME_ATTEMPTS {
        let mut tmp = OsString::from(".");
        // Keep the name short enough for NAME_MAX even for long file names.
        let stem: Vec<u8> = name.as_bytes().iter().copied().take(120).collect();
        tmp.push(std::ffi::OsStr::from_bytes(&stem));
        tmp.push(format!(".{pid}.{nanos:x}.{attempt}.toolgate-tmp"));
        match rfs::openat(
            dir,
            tmp.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        ) {
            Ok(fd) => return Ok((tmp, fd)),
            Err(Errno::EXIST) => last = Errno::EXIST,
            Err(e) => return Err(Error::io("creating a temporary file for", real, e.into())),
        }
    }
    Err(Error::io(
        "creating a temporary file for",
        real,
        last.into(),
    ))
}

/// Opens (creating as needed) the directory `rel` beneath the root, one level at a time.
fn make_dirs(root: &RootDir, rel: &Path, real: &Path) -> Result<OwnedFd> {
    let mut prefix = PathBuf::new();
    for comp in rel.components() {
        let Component::Normal(name) = comp else {
            return Err(Error::Escaped(real.to_path_buf()));
        };
        let parent = root
            .open_beneath(&prefix, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
            .map_err(|e| open_error(e, real, "opening"))?;
        match rfs::mkdirat(&parent, name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(Error::io("creating the directory for", real, e.into())),
        }
        prefix.push(name);
    }
    root.open_beneath(&prefix, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
        .map_err(|e| match e.raw_os_error().map(Errno::from_raw_os_error) {
            Some(Errno::NOTDIR) => Error::NotDirectory(root.path().join(&prefix)),
            _ => open_error(e, real, "opening"),
        })
}

/// SHA-256 of everything a reader yields.
pub(crate) fn hash_reader(reader: &mut impl Read) -> io::Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().into())
}
