//! Repositories and persistence files below the project roots: found before a run, checked
//! after it (host side, in the helper).
//!
//! A repository's hooks, `core.fsmonitor` and aliases run at the next `git` command in it —
//! outside the sandbox, by the user, a shell prompt or an editor's repository scan. The root's
//! own `.git` is protected by the view (`mounts::protect_git`); this module covers the rest:
//!
//! - **Before the run**, a bounded walk of every writable project root finds the git
//!   directories below it — nested `.git` directories, bare repositories, and the git
//!   directories under a repository's `modules/` and `worktrees/` — and the nested `.git`
//!   files and links. The view pins each git directory and makes its `config`, `hooks`,
//!   `config.worktree`, `commondir` and `info` read-only as for the root's own
//!   (`mounts::protect_nested`); a `.git` file is read-only, a `.git` link masked. The walk
//!   remembers every directory it looked at (device, inode, ctime) and which
//!   [`WhenMissing::MoveAside`] names were absent. Past its bound the room is refused.
//! - **After the run** (pid 1 reaped: nothing of the room is left), a directory whose ctime
//!   moved has gained or lost entries — a command can set a file's times, never its ctime —
//!   so it is read again, and directories that are new are walked. A `.git` entry or a git
//!   directory that did not exist before is neutralised: `.git` is moved aside to
//!   `.git.toolgate-blocked`, a bare repository's `HEAD` to `HEAD.toolgate-blocked`, so git
//!   no longer finds a repository there. A persistence name created in a root is moved aside
//!   the same way. Each move is reported on stderr.
//!
//! Limits: what a run creates exists until it ends (an editor scanning for repositories
//! meanwhile could run git in it); `git worktree add` and `git submodule update --init` in
//! the room leave their new `.git` files moved aside; only project roots are walked, not
//! other writable roots (`allowWrite`).

use std::collections::HashSet;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::SandboxError;
use crate::policy::{ProtectedName, WhenMissing};

/// The suffix of what is moved aside.
pub(crate) const BLOCKED_SUFFIX: &str = ".toolgate-blocked";

/// How many same-named `…toolgate-blocked-N` targets are tried before giving up on a move.
const MAX_ASIDE_NAMES: usize = 100;

/// The git directories and `.git` links below the project roots (not a root's own `.git`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Nested {
    /// Git directories: protected like a root's `.git`.
    pub git_dirs: Vec<PathBuf>,
    /// `.git` files (read-only) and symlinks (masked).
    pub git_links: Vec<PathBuf>,
}

/// What the pre-run walk found, for the view and for the check after the run.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub nested: Nested,
    roots: Vec<PathBuf>,
    /// Every `.git` entry and git directory that existed before the run.
    known: HashSet<PathBuf>,
    /// Every directory looked at, with what it was.
    dirs: Vec<(PathBuf, Stamp, Kind)>,
    /// The coarse clock when the walk began. A directory changed in the same clock tick as
    /// it was read could change again without its ctime moving ("racy", as git calls its
    /// index entries): those whose ctime is not older than this are always read again.
    started: (i64, i64),
    seen: HashSet<PathBuf>,
    /// [`WhenMissing::MoveAside`] names absent from a root before the run.
    absent: Vec<PathBuf>,
    max: usize,
    /// Entries the walk may still look at.
    budget: usize,
}

/// Identity and last change of a directory: a new entry, a removed or renamed one, all move
/// the ctime, and nothing but the kernel sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    ctime: (i64, i64),
}

fn stamp(meta: &Metadata) -> Stamp {
    Stamp {
        dev: meta.dev(),
        ino: meta.ino(),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    }
}

/// The kernel's coarse clock, which file timestamps are taken from (one tick, 1–10 ms, is
/// their granularity on most filesystems).
fn coarse_now() -> (i64, i64) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
    (ts.tv_sec, ts.tv_nsec)
}

/// How a directory is walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A plain directory: everything below it.
    Plain,
    /// A git directory: only its `modules/` and `worktrees/` (not `objects/` and the rest).
    GitDir,
    /// Below `modules/` or `worktrees/`: directories, some of them git directories.
    GitInternal,
}

/// What one directory holds, as far as repositories go: its subdirectories and the names
/// git looks for, by `d_type` (no `stat`, and no allocation for plain files).
#[derive(Default)]
struct Listing {
    dirs: Vec<std::ffi::OsString>,
    /// A `.git` entry: `Some(is a directory)`.
    git: Option<bool>,
    head: bool,
    objects: bool,
    refs: bool,
    commondir: bool,
}

impl Listing {
    /// Adds one entry; `is_dir`/`is_file` by `d_type`, not following links.
    fn add(&mut self, name: &std::ffi::OsStr, is_dir: bool, is_file: bool) {
        match name.as_encoded_bytes() {
            b".git" => self.git = Some(is_dir),
            b"HEAD" => self.head |= is_file,
            b"objects" => self.objects |= is_dir,
            b"refs" => self.refs |= is_dir,
            b"commondir" => self.commondir |= is_file,
            _ => {}
        }
        if is_dir && name != ".git" {
            self.dirs.push(name.to_os_string());
        }
    }

    /// A git directory: `HEAD`, and either `objects/` and `refs/` (a repository) or
    /// `commondir` (a linked worktree's).
    fn is_git_dir(&self) -> bool {
        self.head && ((self.objects && self.refs) || self.commondir)
    }
}

/// Reads `dir`, counting each entry against `budget`; `Err(())` past it. An unreadable
/// directory is empty (unreadable to the command too).
fn list(dir: &Path, budget: &mut usize) -> Result<Listing, ()> {
    let mut out = Listing::default();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    for e in rd.flatten() {
        *budget = budget.checked_sub(1).ok_or(())?;
        let t = e.file_type().ok();
        out.add(
            &e.file_name(),
            t.is_some_and(|t| t.is_dir()),
            t.is_some_and(|t| t.is_file()),
        );
    }
    Ok(out)
}

impl Scan {
    /// Walks `roots` (writable project roots), looking at no more than `max` entries.
    pub(crate) fn new(
        roots: &[PathBuf],
        protected: &[ProtectedName],
        max: usize,
    ) -> Result<Scan, SandboxError> {
        let mut scan = Scan {
            roots: roots.to_vec(),
            max,
            budget: max,
            started: coarse_now(),
            ..Scan::default()
        };
        for root in roots {
            for name in protected
                .iter()
                .filter(|n| n.when_missing == WhenMissing::MoveAside)
            {
                let p = root.join(&name.path);
                if std::fs::symlink_metadata(&p).is_err() {
                    scan.absent.push(p);
                }
            }
            scan.visit(root, root, Kind::Plain)?;
        }
        Ok(scan)
    }

    fn visit(&mut self, root: &Path, dir: &Path, kind: Kind) -> Result<(), SandboxError> {
        let Ok(meta) = std::fs::symlink_metadata(dir) else {
            return Ok(());
        };
        if !meta.is_dir() {
            return Ok(());
        }
        let listing = list(dir, &mut self.budget).map_err(|()| SandboxError::WalkTooLarge {
            root: root.to_path_buf(),
            max: self.max,
            purpose: "for repositories below it".to_owned(),
            hint: "raise sandbox.filesystem.maxWalkEntries, or run the command with a smaller \
                   workspace"
                .to_owned(),
        })?;
        let mut kind = kind;
        if kind != Kind::GitDir && dir != root && listing.is_git_dir() {
            // A bare repository, or one under `modules/` or `worktrees/`.
            self.nested.git_dirs.push(dir.to_path_buf());
            self.known.insert(dir.to_path_buf());
            kind = Kind::GitDir;
        }
        self.dirs.push((dir.to_path_buf(), stamp(&meta), kind));
        self.seen.insert(dir.to_path_buf());
        if kind == Kind::Plain
            && let Some(is_dir) = listing.git
        {
            let git = dir.join(".git");
            self.known.insert(git.clone());
            if is_dir {
                if dir != root {
                    self.nested.git_dirs.push(git.clone());
                }
                self.visit(root, &git, Kind::GitDir)?;
            } else if dir != root {
                self.nested.git_links.push(git);
            }
        }
        for name in &listing.dirs {
            let inner = match kind {
                Kind::Plain | Kind::GitInternal => kind,
                Kind::GitDir if name == "modules" || name == "worktrees" => Kind::GitInternal,
                Kind::GitDir => continue,
            };
            self.visit(root, &dir.join(name), inner)?;
        }
        Ok(())
    }

    /// After the run: moves aside every repository and persistence name created meanwhile
    /// (`ignore`: the placeholders pid 1 made). Returns one message per move or problem.
    pub(crate) fn after_run(&self, ignore: &[PathBuf]) -> Vec<String> {
        let mut check = After {
            scan: self,
            ignore,
            budget: self.max,
            over: false,
            messages: Vec::new(),
        };
        for (dir, before, kind) in &self.dirs {
            let Ok(meta) = std::fs::symlink_metadata(dir) else {
                continue;
            };
            let racy = before.ctime >= self.started;
            if meta.is_dir() && (racy || stamp(&meta) != *before) {
                check.changed(dir, *kind);
            }
        }
        for p in &self.absent {
            if !ignore.contains(p) && std::fs::symlink_metadata(p).is_ok() {
                check.move_aside(
                    p,
                    "a persistence file created in the sandbox; create it outside the sandbox \
                     if it is wanted",
                );
            }
        }
        check.messages
    }
}

/// The check after a run.
struct After<'a> {
    scan: &'a Scan,
    ignore: &'a [PathBuf],
    budget: usize,
    /// The budget ran out (said once).
    over: bool,
    messages: Vec<String>,
}

const NEW_REPOSITORY: &str = "a repository created in the sandbox: its hooks, core.fsmonitor \
                              or aliases would run at the next git command there, outside it";

impl After<'_> {
    fn read(&mut self, dir: &Path) -> Option<Listing> {
        match list(dir, &mut self.budget) {
            Ok(listing) => Some(listing),
            Err(()) => {
                if !self.over {
                    self.over = true;
                    self.messages.push(format!(
                        "warning: more than {} entries changed during the run; {} and what \
                         is left was not checked for new repositories",
                        self.scan.max,
                        dir.display()
                    ));
                }
                None
            }
        }
    }

    /// A directory known before the run whose entries changed.
    fn changed(&mut self, dir: &Path, kind: Kind) {
        let Some(listing) = self.read(dir) else {
            return;
        };
        if kind == Kind::Plain && !self.scan.roots.iter().any(|r| r == dir) && listing.is_git_dir()
        {
            self.new_git_dir(dir);
            return;
        }
        if kind == Kind::Plain && listing.git.is_some() {
            let git = dir.join(".git");
            // A root's `.git` is a protected path: another room running meanwhile may have
            // made an (empty) placeholder there, which carries nothing and which every
            // later room mounts read-only. Moving it aside would unmount that room's
            // protection; a `.git` with anything in it is still moved.
            let concurrent_placeholder = self.scan.roots.iter().any(|r| r == dir)
                && crate::placeholders::is_placeholder_shaped(&git);
            if !self.scan.known.contains(&git)
                && !self.ignore.contains(&git)
                && !concurrent_placeholder
            {
                self.move_aside(&git, NEW_REPOSITORY);
            }
        }
        for name in &listing.dirs {
            let path = dir.join(name);
            if self.scan.seen.contains(&path) {
                continue; // checked on its own
            }
            match kind {
                Kind::Plain | Kind::GitInternal => self.walk_new(&path, kind),
                Kind::GitDir if name == "modules" || name == "worktrees" => {
                    self.walk_new(&path, Kind::GitInternal);
                }
                Kind::GitDir => {}
            }
        }
    }

    /// A directory that did not exist before the run: everything in it is new.
    fn walk_new(&mut self, dir: &Path, kind: Kind) {
        if self.ignore.iter().any(|p| p == dir) {
            return;
        }
        let Some(listing) = self.read(dir) else {
            return;
        };
        if listing.is_git_dir() {
            self.new_git_dir(dir);
            return;
        }
        if kind == Kind::Plain && listing.git.is_some() {
            self.move_aside(&dir.join(".git"), NEW_REPOSITORY);
        }
        for name in &listing.dirs {
            self.walk_new(&dir.join(name), kind);
        }
    }

    /// A git directory that did not exist before: git no longer finds it without `HEAD`.
    fn new_git_dir(&mut self, dir: &Path) {
        if self.scan.known.contains(dir) {
            return;
        }
        self.move_aside(&dir.join("HEAD"), NEW_REPOSITORY);
    }

    fn move_aside(&mut self, path: &Path, why: &str) {
        let Some(name) = path.file_name() else {
            return;
        };
        for n in 1..=MAX_ASIDE_NAMES {
            let mut aside = name.to_os_string();
            aside.push(BLOCKED_SUFFIX);
            if n > 1 {
                aside.push(format!("-{n}"));
            }
            let target = path.with_file_name(aside);
            if std::fs::symlink_metadata(&target).is_ok() {
                continue;
            }
            // The room is gone: nothing can swap `path` between the check and the rename,
            // and rename never follows a link in its last component.
            let msg = match std::fs::rename(path, &target) {
                Ok(()) => format!(
                    "moved {} aside to {}: {why}",
                    path.display(),
                    target.display()
                ),
                Err(e) => format!(
                    "warning: could not move {} aside ({e}): {why}; remove it before running \
                     git or other tools there",
                    path.display()
                ),
            };
            self.messages.push(msg);
            return;
        }
        self.messages.push(format!(
            "warning: {} not moved aside (too many {BLOCKED_SUFFIX} names): {why}",
            path.display()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::default_protected;

    fn mk(root: &Path, dirs: &[&str], files: &[&str]) {
        for d in dirs {
            std::fs::create_dir_all(root.join(d)).unwrap_or_else(|e| panic!("{e}"));
        }
        for f in files {
            std::fs::write(root.join(f), "x").unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn finds_nested_repositories_and_neutralises_new_ones() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = dir.path().to_path_buf();
        mk(
            &ws,
            &[
                ".git/objects",
                ".git/refs",
                ".git/modules/sub/objects",
                ".git/modules/sub/refs",
                "vendor/lib/.git/objects",
                "vendor/lib/.git/refs",
                "fixtures/bare.git/objects",
                "fixtures/bare.git/refs",
                "sub",
            ],
            &[
                ".git/HEAD",
                ".git/modules/sub/HEAD",
                "vendor/lib/.git/HEAD",
                "fixtures/bare.git/HEAD",
                "sub/.git",
            ],
        );
        let scan = Scan::new(std::slice::from_ref(&ws), &default_protected(), 1000)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut dirs = scan.nested.git_dirs.clone();
        dirs.sort();
        assert_eq!(
            dirs,
            [
                ws.join(".git/modules/sub"),
                ws.join("fixtures/bare.git"),
                ws.join("vendor/lib/.git"),
            ]
        );
        assert_eq!(scan.nested.git_links, [ws.join("sub/.git")]);
        assert!(scan.after_run(&[]).is_empty(), "nothing changed");

        // What a command could leave behind.
        mk(
            &ws,
            &["new/.git/objects", "deep/a/b", "vendor/lib/x/.git"],
            &["new/.git/HEAD", "deep/a/b/.git", ".envrc", ".gitmodules"],
        );
        mk(
            &ws,
            &["deep/bare/objects", "deep/bare/refs"],
            &["deep/bare/HEAD"],
        );
        let placeholder = ws.join(".mcp.json");
        std::fs::write(&placeholder, "").unwrap_or_else(|e| panic!("{e}"));
        let msgs = scan.after_run(std::slice::from_ref(&placeholder));
        for moved in [
            "new/.git.toolgate-blocked",
            "deep/a/b/.git.toolgate-blocked",
            "vendor/lib/x/.git.toolgate-blocked",
            "deep/bare/HEAD.toolgate-blocked",
            ".envrc.toolgate-blocked",
            ".gitmodules.toolgate-blocked",
        ] {
            assert!(ws.join(moved).exists(), "{moved}: {msgs:?}");
        }
        assert!(!ws.join("new/.git").exists() && !ws.join(".envrc").exists());
        assert!(placeholder.exists(), "a placeholder is not the command's");
        assert!(ws.join(".git/HEAD").exists() && ws.join("sub/.git").exists());
        assert_eq!(msgs.len(), 6, "{msgs:?}");
    }

    #[test]
    fn past_the_bound_the_scan_fails() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        mk(dir.path(), &["a", "b", "c"], &[]);
        let err = Scan::new(&[dir.path().to_path_buf()], &[], 2);
        assert!(matches!(
            err,
            Err(SandboxError::WalkTooLarge { max: 2, .. })
        ));
    }
}
