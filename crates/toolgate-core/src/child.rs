//! What toolgate's child processes inherit: descriptors 0–2 and what a spawn site hands them
//! on purpose, nothing else.
//!
//! Every unsandboxed child (a Bash command, a hook, later an MCP upstream) runs with the
//! user's authority, so anything it inherits it can use: an inherited approval channel
//! (`--prompt-fds`) let a command write "allow always" answers for asks that had not been
//! made yet (issue #21). Three measures, each cheap:
//!
//! 1. [`seal_inherited_descriptors`] at start-up marks every descriptor the process was
//!    started with (beyond 0–2) close-on-exec, so what an embedder hands toolgate stays
//!    toolgate's. Descriptors toolgate opens itself are close-on-exec already: the standard
//!    library and tokio open everything with `O_CLOEXEC` / `SOCK_CLOEXEC`.
//! 2. [`only_standard_descriptors`] at each spawn site marks everything beyond 0–2
//!    close-on-exec again in the child, between `fork` and `exec` — a second line for a
//!    descriptor some library opened without the flag. A spawn site that hands a descriptor
//!    on (the Bash tool's directory report) installs it after this.
//! 3. [`hide_from_children`] makes the process non-dumpable, so a child running as the same
//!    (non-root) user can neither reopen toolgate's descriptors through `/proc/<pid>/fd/N`
//!    nor read its memory. It does not stop a child with `CAP_SYS_PTRACE` (root); the
//!    prompt protocol's nonce is what holds there (see docs/permissions.md).
//!
//! Non-dumpable costs toolgate nothing it uses: its own `/proc/self` stays readable (the
//! kernel exempts the process itself), children get their own dumpable flag back at `execve`
//! (so the sandbox helper can still write its `uid_map`), and the only losses are core dumps
//! and attaching a debugger without root.

use std::io;

/// The first descriptor a child must not inherit unasked.
const FIRST_PRIVATE_FD: u32 = 3;

/// `close_range(first, last, CLOSE_RANGE_CLOEXEC)`: marks the range close-on-exec without
/// closing it. One system call, async-signal-safe (usable between `fork` and `exec`).
/// Linux 5.11 and later; older kernels answer `ENOSYS` or `EINVAL`.
fn cloexec_range(first: u32) -> io::Result<()> {
    // SAFETY: a raw system call with integer arguments; touches only the descriptor table.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Marks every descriptor of this process from 3 up close-on-exec (they stay open for this
/// process). Call first thing at start-up, before any thread or child exists. On kernels
/// without `close_range` it walks `/proc/self/fd` instead.
pub fn seal_inherited_descriptors() -> io::Result<()> {
    if cloexec_range(FIRST_PRIVATE_FD).is_ok() {
        return Ok(());
    }
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd >= FIRST_PRIVATE_FD as i32)
        .collect();
    for fd in fds {
        // SAFETY: F_GETFD/F_SETFD on a descriptor number; a number that closed meanwhile
        // (the directory's own) just fails with EBADF.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
}

/// Makes this process non-dumpable (`PR_SET_DUMPABLE` 0): children running as the same
/// non-root user cannot open `/proc/<toolgate>/fd/N`, `mem` or `environ`. Children regain
/// their own dumpable flag when they `execve`.
pub fn hide_from_children() -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether this process is dumpable (for `toolgate config` and tests).
pub fn is_dumpable() -> bool {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) == 1 }
}

/// Makes `cmd`'s child start with only descriptors 0–2 (plus what a later `pre_exec`
/// installs, which runs after this one). Register it before the spawn site's own
/// `pre_exec` closures (a `tokio::process::Command` passes `cmd.as_std_mut()`).
pub fn only_standard_descriptors(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: the closure runs between fork and exec and makes one async-signal-safe
    // system call; it allocates nothing. A kernel without close_range leaves the
    // start-up seal and the library's O_CLOEXEC discipline as the guard.
    unsafe {
        cmd.pre_exec(|| {
            let _ = cloexec_range(FIRST_PRIVATE_FD);
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn cloexec(fd: i32) -> bool {
        // SAFETY: F_GETFD on an open descriptor.
        unsafe { libc::fcntl(fd, libc::F_GETFD) & libc::FD_CLOEXEC != 0 }
    }

    #[test]
    fn sealing_marks_inherited_descriptors_and_keeps_them_open() {
        let (r, _w) = std::io::pipe().unwrap();
        // An inherited descriptor looks like this: open, without close-on-exec.
        // SAFETY: clearing the flag on our own pipe.
        unsafe { libc::fcntl(r.as_raw_fd(), libc::F_SETFD, 0) };
        assert!(!cloexec(r.as_raw_fd()));
        seal_inherited_descriptors().unwrap();
        assert!(cloexec(r.as_raw_fd()));
        // Still usable by this process.
        // SAFETY: F_GETFL on an open descriptor.
        assert!(unsafe { libc::fcntl(r.as_raw_fd(), libc::F_GETFL) } >= 0);
        // 0–2 keep their flags.
        assert!(!cloexec(2));
    }

    #[tokio::test]
    async fn children_start_with_only_the_standard_descriptors() {
        let (r, _w) = std::io::pipe().unwrap();
        let leaked = r.as_raw_fd();
        // SAFETY: clearing the flag on our own pipe, as an inherited one would be.
        unsafe { libc::fcntl(leaked, libc::F_SETFD, 0) };
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c").arg("ls /proc/$$/fd");
        only_standard_descriptors(cmd.as_std_mut());
        let out = cmd.output().await.unwrap();
        let mut fds: Vec<i32> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect();
        fds.sort_unstable();
        assert_eq!(fds, vec![0, 1, 2], "descriptor {leaked} leaked");
    }
}
