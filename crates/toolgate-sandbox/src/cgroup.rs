//! Per-command cgroups (v2 with delegation, or v1 as root): `pids` and `memory` limits.
//!
//! The helper creates `toolgate-<pid>` under the caller's own cgroup in each hierarchy,
//! writes the limits, and the sandbox's pid 1 joins it before anything else runs. After the
//! command, the helper removes the directories and reports limit hits.

use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::SandboxError;
use crate::probe::{LayerStatus, missing, ok};

/// Where per-command cgroups are created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupInfo {
    /// 1 or 2.
    pub version: u8,
    /// Parent directory for `pids` cgroups (the caller's own cgroup).
    pub pids: Option<PathBuf>,
    /// Parent directory for `memory` cgroups.
    pub memory: Option<PathBuf>,
}

pub(crate) struct Detected {
    version: u8,
    pids: Result<PathBuf, String>,
    memory: Result<PathBuf, String>,
}

impl Detected {
    pub(crate) fn pids_status(&self) -> LayerStatus {
        match &self.pids {
            Ok(p) => ok(format!("cgroup v{} {}", self.version, p.display())),
            Err(e) => missing(e.clone()),
        }
    }
    pub(crate) fn memory_status(&self) -> LayerStatus {
        match &self.memory {
            Ok(p) => ok(format!("cgroup v{} {}", self.version, p.display())),
            Err(e) => missing(e.clone()),
        }
    }
    pub(crate) fn info(&self) -> Option<CgroupInfo> {
        if self.pids.is_err() && self.memory.is_err() {
            return None;
        }
        Some(CgroupInfo {
            version: self.version,
            pids: self.pids.as_ref().ok().cloned(),
            memory: self.memory.as_ref().ok().cloned(),
        })
    }
}

/// Finds the caller's cgroups and checks that a child can be created in them.
pub(crate) fn detect() -> Detected {
    let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let unified = mount_point(&mountinfo, |fstype, _| fstype == "cgroup2");
    // v1 controllers take precedence: a controller bound to v1 is absent from v2.
    let v1 = |ctrl: &str| -> Option<Result<PathBuf, String>> {
        let (mnt, root) = mount_point(&mountinfo, |fstype, opts| {
            fstype == "cgroup" && opts.split(',').any(|o| o == ctrl)
        })?;
        let path = own.lines().find_map(|l| {
            let mut it = l.splitn(3, ':');
            let (_, ctrls, path) = (it.next()?, it.next()?, it.next()?);
            ctrls.split(',').any(|c| c == ctrl).then(|| path.to_owned())
        })?;
        Some(usable(&join_cg(&mnt, &root, &path), None))
    };
    let v2 = |ctrl: &str| -> Result<PathBuf, String> {
        let Some((mnt, root)) = unified.clone() else {
            return Err("no cgroup2 mount".to_owned());
        };
        let path = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .ok_or_else(|| "no cgroup v2 entry in /proc/self/cgroup".to_owned())?;
        let dir = join_cg(&mnt, &root, path);
        let ctrls = fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
        if !ctrls.split_whitespace().any(|c| c == ctrl) {
            return Err(format!(
                "controller `{ctrl}` not delegated in {}/cgroup.subtree_control (run toolgate \
                 in a systemd scope with Delegate=yes)",
                dir.display()
            ));
        }
        usable(&dir, Some(ctrl))
    };
    let (pids, v1_pids) = match v1("pids") {
        Some(r) => (r, true),
        None => (v2("pids"), false),
    };
    let memory = v1("memory").unwrap_or_else(|| v2("memory"));
    Detected {
        version: if v1_pids { 1 } else { 2 },
        pids,
        memory,
    }
}

fn join_cg(mnt: &Path, root: &str, path: &str) -> PathBuf {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let rel = rel.trim_start_matches('/');
    if rel.is_empty() {
        mnt.to_path_buf()
    } else {
        mnt.join(rel)
    }
}

/// `(mount point, mount root)` of the first mount matching `pred(fstype, super options)`.
fn mount_point(mountinfo: &str, pred: impl Fn(&str, &str) -> bool) -> Option<(PathBuf, String)> {
    mountinfo.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let pre: Vec<&str> = pre.split(' ').collect();
        let post: Vec<&str> = post.split(' ').collect();
        let (root, mnt) = (pre.get(3)?, pre.get(4)?);
        let (fstype, opts) = (post.first()?, post.get(2)?);
        pred(fstype, opts).then(|| (PathBuf::from(mnt), (*root).to_owned()))
    })
}

/// A cgroup dir is usable if we may create children in it (checked with `access(W_OK|X_OK)`
/// rather than a trial mkdir, which costs milliseconds on cgroup v1). v2 also needs the
/// controller enabled for children, which the caller checked in `cgroup.subtree_control`.
fn usable(dir: &Path, _v2_ctrl: Option<&str>) -> Result<PathBuf, String> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| "NUL in path".to_owned())?;
    // SAFETY: access(2) on a valid C string.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(format!(
            "{} not writable: {}",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(dir.to_path_buf())
}

/// The per-command cgroups of one helper run.
pub(crate) struct CommandCgroups {
    dirs: Vec<(OwnedFd, String, PathBuf)>,
    procs: Vec<OwnedFd>,
    pids_dir: Option<PathBuf>,
    memory_dir: Option<PathBuf>,
    version: u8,
}

const LAYER: &str = "cgroup";
const HINT: &str = "disable the cgroup layers (TOOLGATE_SANDBOX_DISABLE=cgroup_pids,cgroup_memory) \
                    or fix cgroup delegation";

impl CommandCgroups {
    /// Creates the cgroups and writes the limits. `None` limits skip that controller.
    pub(crate) fn create(
        info: &CgroupInfo,
        pids_max: Option<u64>,
        memory_max: Option<u64>,
    ) -> Result<CommandCgroups, SandboxError> {
        let name = format!("toolgate-{}", std::process::id());
        let mut cg = CommandCgroups {
            dirs: Vec::new(),
            procs: Vec::new(),
            pids_dir: None,
            memory_dir: None,
            version: info.version,
        };
        let mut wanted: Vec<(&Path, Vec<(&str, String)>)> = Vec::new();
        if let (Some(dir), Some(n)) = (&info.pids, pids_max) {
            wanted.push((dir, vec![("pids.max", n.to_string())]));
        }
        if let (Some(dir), Some(bytes)) = (&info.memory, memory_max) {
            let files = if info.version == 2 {
                vec![
                    ("memory.max", bytes.to_string()),
                    ("memory.swap.max", "0".to_owned()),
                ]
            } else {
                vec![
                    ("memory.limit_in_bytes", bytes.to_string()),
                    ("memory.memsw.limit_in_bytes", bytes.to_string()),
                ]
            };
            match wanted.iter_mut().find(|(d, _)| *d == dir.as_path()) {
                Some((_, f)) => f.extend(files),
                None => wanted.push((dir, files)),
            }
        }
        for (parent, files) in wanted {
            reap_stale(parent);
            let dir = parent.join(&name);
            let parent_fd = fs::File::open(parent).map_err(|e| {
                SandboxError::io(LAYER, format!("open {}", parent.display()), e, HINT)
            })?;
            fs::create_dir(&dir).map_err(|e| {
                SandboxError::io(LAYER, format!("mkdir {}", dir.display()), e, HINT)
            })?;
            cg.dirs.push((parent_fd.into(), name.clone(), dir.clone()));
            for (file, value) in &files {
                let path = dir.join(file);
                if *file == "memory.memsw.limit_in_bytes" && !path.exists() {
                    continue; // no swap accounting: nothing to limit
                }
                fs::write(&path, value).map_err(|e| {
                    SandboxError::io(LAYER, format!("write {}", path.display()), e, HINT)
                })?;
            }
            if files.iter().any(|(f, _)| f.starts_with("pids")) {
                cg.pids_dir = Some(dir.clone());
            }
            if files.iter().any(|(f, _)| f.starts_with("memory")) {
                cg.memory_dir = Some(dir.clone());
            }
            let procs = fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(dir.join("cgroup.procs"))
                .map_err(|e| SandboxError::io(LAYER, "open cgroup.procs", e, HINT))?;
            cg.procs.push(procs.into());
        }
        Ok(cg)
    }

    /// Moves process `pid` into every cgroup. The helper does this for the sandbox's pid 1
    /// while pid 1 builds the filesystem view: on cgroup v1 (and v2 without
    /// `favordynmods`) a migration waits for an RCU grace period (0.2 ms when migrations are
    /// frequent, 4–15 ms after an idle spell), so overlapping it hides most of that wait.
    pub(crate) fn attach(&self, pid: libc::pid_t) -> i32 {
        let text = pid.to_string();
        for fd in &self.procs {
            // SAFETY: writing a pid to an open cgroup.procs fd.
            let n = unsafe { libc::write(fd.as_raw_fd(), text.as_ptr().cast(), text.len()) };
            if n != text.len() as isize {
                return crate::sys::errno();
            }
        }
        0
    }

    /// Closes the `cgroup.procs` descriptors (the helper keeps only the dir fds).
    pub(crate) fn close_procs(&mut self) {
        self.procs.clear();
    }

    /// Messages about limits that were hit, read from the event counters.
    pub(crate) fn limit_hits(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(dir) = &self.pids_dir {
            let events = fs::read_to_string(dir.join("pids.events")).unwrap_or_default();
            if counter(&events, "max") > 0 {
                out.push("process limit reached (fork/clone failed with EAGAIN)".to_owned());
            }
        }
        if let Some(dir) = &self.memory_dir {
            let (file, key) = if self.version == 2 {
                ("memory.events", "oom_kill")
            } else {
                ("memory.oom_control", "oom_kill")
            };
            let events = fs::read_to_string(dir.join(file)).unwrap_or_default();
            if counter(&events, key) > 0 {
                out.push("memory limit reached (a process was OOM-killed)".to_owned());
            }
        }
        out
    }

    /// Removes the cgroups (all processes are gone once the sandbox's pid 1 was reaped).
    pub(crate) fn remove(self) {
        for (parent, name, _) in &self.dirs {
            let Ok(cname) = std::ffi::CString::new(name.as_str()) else {
                continue;
            };
            for _ in 0..200 {
                // SAFETY: rmdir of our own cgroup through the parent's dir fd.
                let r = unsafe {
                    libc::unlinkat(parent.as_raw_fd(), cname.as_ptr(), libc::AT_REMOVEDIR)
                };
                if r == 0 || crate::sys::errno() != libc::EBUSY {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
        }
    }
}

fn counter(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
        .unwrap_or(0)
}

/// Removes `toolgate-<pid>` cgroups left behind by helpers that were SIGKILLed.
fn reap_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("toolgate-")) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

/// Writes `value` to a cgroup file (used by tests).
#[cfg(test)]
fn write(path: &Path, value: &str) -> std::io::Result<()> {
    use std::io::Write;
    fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(value.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mountinfo() {
        let mi = "35 25 0:30 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
                  36 25 0:31 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw";
        let (m, r) =
            mount_point(mi, |t, o| t == "cgroup" && o.contains("pids")).unwrap_or_default();
        assert_eq!(m, PathBuf::from("/sys/fs/cgroup/pids"));
        assert_eq!(r, "/");
        assert_eq!(
            join_cg(&m, &r, "/a/b"),
            PathBuf::from("/sys/fs/cgroup/pids/a/b")
        );
        assert_eq!(counter("max 3\n", "max"), 3);
        assert!(write(Path::new("/nonexistent/x"), "1").is_err());
    }
}
