//! Thin raw-syscall wrappers shared by the probe and the helper.
//!
//! Functions returning `i32` return 0 on success and the `errno` on failure; they do not
//! allocate, so they are safe in a child forked from a multi-threaded process.

use std::ffi::CStr;
use std::io;

/// `struct mount_attr` for `mount_setattr(2)` (not in libc).
#[repr(C)]
pub(crate) struct MountAttr {
    pub attr_set: u64,
    pub attr_clr: u64,
    pub propagation: u64,
    pub userns_fd: u64,
}

pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(crate) const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub(crate) const MOUNT_ATTR_NODEV: u64 = 0x4;
pub(crate) const AT_RECURSIVE: libc::c_uint = 0x8000;
pub(crate) const OPEN_TREE_CLONE: libc::c_uint = 1;
pub(crate) const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
/// `open_tree_attr(2)` (Linux 6.15), same number on every architecture.
pub(crate) const SYS_OPEN_TREE_ATTR: i64 = 467;

/// The current `errno`.
pub(crate) fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn rc(ret: libc::c_long) -> i32 {
    if ret < 0 { errno() } else { 0 }
}

/// Whether the calling process has exactly one thread (`fork` from a multi-threaded
/// process may deadlock in the child's allocator, and `unshare(CLONE_NEWUSER)` fails).
pub(crate) fn single_threaded() -> bool {
    match std::fs::read_dir("/proc/self/task") {
        Ok(tasks) => tasks.take(2).count() == 1,
        Err(_) => false,
    }
}

/// Overwrites the calling process's argument strings — what `/proc/PID/cmdline` shows to
/// every process that can see this one — with `title`, then NULs. Returns whether it did.
///
/// The sandbox's pid 1 is a copy of its creator: `toolgate sandbox run --settings …`, or the
/// helper. Every process in the room can read `/proc/1/cmdline` (unlike `environ`, it needs
/// no ptrace access), and the settings named there are no business of the command's. The
/// kernel keeps the argument area's bounds (`arg_start`, `arg_end`: fields 48 and 49 of
/// `/proc/self/stat`) and reads the bytes from there, as `setproctitle(3)` relies on.
pub(crate) fn overwrite_cmdline(title: &[u8]) -> bool {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return false;
    };
    // Fields after the command name (which may hold spaces and parentheses) start at 3.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<usize>().ok());
    let (Some(start), Some(end)) = (field(48), field(49)) else {
        return false;
    };
    if end <= start {
        return false;
    }
    let len = end - start;
    let keep = title.len().min(len - 1);
    // SAFETY: [start, end) is this process's own argument area (on its stack, writable),
    // as the kernel reports it; the process is single-threaded, and the only reader of it
    // in Rust, `std::env::args`, sees the new strings afterwards, which is fine here.
    unsafe {
        let area = start as *mut u8;
        std::ptr::copy_nonoverlapping(title.as_ptr(), area, keep);
        std::ptr::write_bytes(area.add(keep), 0, len - keep);
    }
    true
}

/// `clone(flags | SIGCHLD)` without a new stack: `fork`, with the child created in the new
/// namespaces `flags` names (bubblewrap's `raw_clone`). The caller stays in its own
/// namespaces, so its exit never pays for tearing the sandbox's down. Returns the child's
/// pid in the parent, 0 in the child, `-errno` on failure.
///
/// # Safety
/// As for `fork`: the caller must be single-threaded. The child must not rely on glibc's
/// cached thread id (only `fork` refreshes it); the sandbox's pid 1 does not.
pub(crate) unsafe fn clone_into_namespaces(flags: libc::c_int) -> libc::pid_t {
    let flags = (flags | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: clone with a NULL stack continues on a copy of the caller's stack, like fork;
    // the pointer arguments are unused without CLONE_*TID/CLONE_SETTLS.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    if r < 0 { -errno() } else { r as libc::pid_t }
}

/// `unshare(flags)`.
pub(crate) fn unshare(flags: libc::c_int) -> i32 {
    // SAFETY: plain syscall with an integer argument.
    rc(unsafe { libc::unshare(flags) } as libc::c_long)
}

/// Writes `data` to the file at `path` (O_WRONLY), raw.
pub(crate) fn write_file(path: &CStr, data: &[u8]) -> i32 {
    // SAFETY: path is a valid C string; the fd is closed before returning.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return errno();
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = if n < 0 {
            errno()
        } else if n as usize != data.len() {
            libc::EIO
        } else {
            0
        };
        libc::close(fd);
        err
    }
}

/// Pre-formatted `uid_map` / `gid_map` lines ("ID ID 1"), built before any fork.
pub(crate) struct MapStrings {
    uid: [u8; 48],
    uid_len: usize,
    gid: [u8; 48],
    gid_len: usize,
}

impl MapStrings {
    /// Maps the caller's real uid/gid to themselves.
    pub(crate) fn for_self() -> MapStrings {
        // SAFETY: getuid/getgid never fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let mut m = MapStrings {
            uid: [0; 48],
            uid_len: 0,
            gid: [0; 48],
            gid_len: 0,
        };
        let u = format!("{uid} {uid} 1\n");
        let g = format!("{gid} {gid} 1\n");
        m.uid[..u.len()].copy_from_slice(u.as_bytes());
        m.uid_len = u.len();
        m.gid[..g.len()].copy_from_slice(g.as_bytes());
        m.gid_len = g.len();
        m
    }
}

/// Writes `setgroups=deny`, `uid_map` and `gid_map` of the calling process.
pub(crate) fn write_maps(maps: &MapStrings) -> i32 {
    let e = write_file(c"/proc/self/setgroups", b"deny");
    if e != 0 && e != libc::ENOENT {
        return e;
    }
    let e = write_file(c"/proc/self/uid_map", &maps.uid[..maps.uid_len]);
    if e != 0 {
        return e;
    }
    write_file(c"/proc/self/gid_map", &maps.gid[..maps.gid_len])
}

/// `mount(2)` with optional arguments.
pub(crate) fn mount(
    src: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> i32 {
    let p = |c: Option<&CStr>| c.map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: all pointers are valid C strings or null.
    rc(
        unsafe { libc::mount(p(src), target.as_ptr(), p(fstype), flags, p(data).cast()) }
            as libc::c_long,
    )
}

/// `mount_setattr(path, AT_RECURSIVE, set, clr)`.
pub(crate) fn mount_setattr(
    dirfd: i32,
    path: &CStr,
    flags: libc::c_uint,
    set: u64,
    clr: u64,
) -> i32 {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clr,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: attr is a valid struct of the size passed.
    rc(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    })
}

/// Recursive read-only + nosuid on the mount at `path`.
pub(crate) fn setattr_readonly(path: &CStr) -> i32 {
    mount_setattr(
        libc::AT_FDCWD,
        path,
        AT_RECURSIVE,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
        0,
    )
}

/// Probe: private `/`, tmpfs on `dir`, `mkdir(sub)`.
pub(crate) fn probe_tmpfs(dir: &CStr, sub: &CStr) -> i32 {
    let e = mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None);
    if e != 0 {
        return e;
    }
    let e = mount(Some(c"tmpfs"), dir, Some(c"tmpfs"), 0, Some(c"size=16k"));
    if e != 0 {
        return e;
    }
    // SAFETY: valid C string.
    rc(unsafe { libc::mkdir(sub.as_ptr(), 0o755) } as libc::c_long)
}

/// Probe: fork a child (pid 1 of the new pid namespace) that mounts procfs on `dir`.
pub(crate) fn probe_proc_in_child(dir: &CStr) -> i32 {
    // SAFETY: fork in a single-threaded probe child; the grandchild only makes syscalls.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return errno();
        }
        if pid == 0 {
            let e = mount(
                Some(c"proc"),
                dir,
                Some(c"proc"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                None,
            );
            libc::_exit(e);
        }
        let mut status = 0;
        if libc::waitpid(pid, &mut status, 0) < 0 {
            return errno();
        }
        if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            libc::ECHILD
        }
    }
}

/// Brings the loopback interface of the current network namespace up.
pub(crate) fn loopback_up() -> i32 {
    // SAFETY: ifreq is plain data; the socket is closed before returning.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return errno();
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        ifr.ifr_name[0] = b'l' as libc::c_char;
        ifr.ifr_name[1] = b'o' as libc::c_char;
        let mut e = 0;
        if libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut ifr) < 0 {
            e = errno();
        } else {
            ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            if libc::ioctl(sock, libc::SIOCSIFFLAGS, &ifr) < 0 {
                e = errno();
            }
        }
        libc::close(sock);
        e
    }
}

/// `close_range(3, ~0, 0)`; returns 0 or errno.
pub(crate) fn close_range_from(first: u32) -> i32 {
    // SAFETY: closing descriptors we don't use any more.
    rc(unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0u32) })
}

/// Probe `close_range` without closing anything that exists.
pub(crate) fn close_range_probe() -> i32 {
    // SAFETY: the range holds no open descriptors.
    rc(unsafe { libc::syscall(libc::SYS_close_range, u32::MAX - 1, u32::MAX, 0u32) })
}

/// `no_new_privs` + an allow-all seccomp filter: proves seccomp filter mode works.
pub(crate) fn seccomp_allow_all() -> i32 {
    // SAFETY: a one-instruction BPF program returning SECCOMP_RET_ALLOW.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return errno();
        }
        let insn = [libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        }];
        let prog = libc::sock_fprog {
            len: 1,
            filter: insn.as_ptr() as *mut libc::sock_filter,
        };
        rc(libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &prog as *const libc::sock_fprog,
        ))
    }
}

/// Landlock ABI version (> 0), or `-errno`.
pub(crate) fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: the version query takes no ruleset attribute.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 { -errno() } else { v as i32 }
}

/// `uname -r`.
pub(crate) fn kernel_release() -> String {
    // SAFETY: utsname is plain data filled by the kernel.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return "unknown".to_owned();
        }
        CStr::from_ptr(u.release.as_ptr())
            .to_string_lossy()
            .into_owned()
    }
}

/// Forks a child that runs `f` (raw syscalls only), returns its result array via a pipe.
pub(crate) fn run_probe_child<const N: usize>(
    f: fn(&mut [i32; N], &MapStrings),
) -> io::Result<[i32; N]> {
    let maps = MapStrings::for_self();
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid 2-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [rd, wr] = fds;
    // SAFETY: the child only calls `f` (raw syscalls, no allocation), writes and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = io::Error::last_os_error();
        // SAFETY: closing our own pipe ends.
        unsafe {
            libc::close(rd);
            libc::close(wr);
        }
        return Err(e);
    }
    if pid == 0 {
        let mut res = [-1i32; N];
        f(&mut res, &maps);
        // SAFETY: writing a plain i32 array to our pipe, then exiting without unwinding.
        unsafe {
            libc::write(wr, res.as_ptr().cast(), std::mem::size_of_val(&res));
            libc::_exit(0);
        }
    }
    // SAFETY: closing the write end we handed to the child.
    unsafe { libc::close(wr) };
    let mut res = [-1i32; N];
    let want = std::mem::size_of_val(&res);
    // SAFETY: reading into a plain i32 array of `want` bytes.
    let n = unsafe { libc::read(rd, res.as_mut_ptr().cast(), want) };
    let read_err = io::Error::last_os_error();
    // SAFETY: closing our pipe end; reaping our child.
    unsafe {
        libc::close(rd);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
    if n < 0 {
        return Err(read_err);
    }
    if n as usize != want {
        return Err(io::Error::other("probe child died before reporting"));
    }
    Ok(res)
}
