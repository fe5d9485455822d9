//! In-namespace TCP → unix-socket bridge for network `allowlist` mode.
//!
//! Listens on `127.0.0.1:PORT` inside the empty network namespace; each connection is relayed
//! by a forked child to the harness's [`crate::Proxy`] socket, reached through an `O_PATH`
//! descriptor opened before `pivot_root` (`/proc/self/fd/N`), so the socket needs no mount.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::error::SandboxError;
use crate::sys::errno;

/// Relay buffer size per direction.
const BUF: usize = 16 * 1024;

/// Listens on 127.0.0.1:`port` (called by pid 1 after loopback is up).
pub(crate) fn listen(port: u16) -> Result<OwnedFd, SandboxError> {
    let fail = |op: &str| {
        SandboxError::last_os(
            "net_ns",
            format!("bridge {op} 127.0.0.1:{port}"),
            "choose another network.proxyPort",
        )
    };
    // SAFETY: plain socket syscalls on a descriptor we own.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(fail("socket"));
        }
        let owned = OwnedFd::from_raw_fd(fd);
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&one as *const libc::c_int).cast(),
            4,
        );
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        if libc::bind(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as u32,
        ) != 0
        {
            return Err(fail("bind"));
        }
        if libc::listen(fd, 64) != 0 {
            return Err(fail("listen"));
        }
        Ok(owned)
    }
}

/// Opens the proxy socket path with `O_PATH` (before `pivot_root`).
pub(crate) fn open_socket_path(path: &std::path::Path) -> Result<OwnedFd, SandboxError> {
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
        .map_err(|_| SandboxError::InvalidPath {
            path: path.to_path_buf(),
            reason: "NUL".to_owned(),
        })?;
    // SAFETY: open with O_PATH on a valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(SandboxError::last_os(
            "net_ns",
            format!("open proxy socket {}", path.display()),
            "start the Proxy before the command",
        ));
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The bridge process: accepts forever, one forked relay per connection. Never returns.
pub(crate) fn run(listener: OwnedFd, proxy_path_fd: RawFd, tag_line: &[u8]) -> ! {
    // SAFETY: auto-reap relay children; sockaddr_un is plain data.
    unsafe {
        libc::signal(libc::SIGCHLD, libc::SIG_IGN);
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let path = format!("/proc/self/fd/{proxy_path_fd}");
        for (i, b) in path.bytes().enumerate() {
            addr.sun_path[i] = b as libc::c_char;
        }
        loop {
            let conn = libc::accept4(
                listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            );
            if conn < 0 {
                if errno() == libc::EINTR || errno() == libc::ECONNABORTED {
                    continue;
                }
                libc::_exit(1);
            }
            let pid = libc::fork();
            if pid == 0 {
                let up = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
                if up < 0
                    || libc::connect(
                        up,
                        (&addr as *const libc::sockaddr_un).cast(),
                        std::mem::size_of::<libc::sockaddr_un>() as u32,
                    ) != 0
                {
                    libc::_exit(2);
                }
                // Always first, before any byte of the command's: the command cannot
                // send a tag line of its own that the proxy would honour.
                if !write_all(up, tag_line) {
                    libc::_exit(2);
                }
                relay(conn, up);
                libc::_exit(0);
            }
            libc::close(conn);
        }
    }
}

/// Copies bytes both ways until both directions are closed.
fn relay(a: RawFd, b: RawFd) {
    let mut buf = vec![0u8; BUF];
    let mut open = [true, true]; // a→b, b→a
    while open[0] || open[1] {
        let mut fds = [
            libc::pollfd {
                fd: if open[0] { a } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if open[1] { b } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: valid pollfd array.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return;
        }
        for (i, (from, to)) in [(a, b), (b, a)].into_iter().enumerate() {
            if fds[i].revents == 0 {
                continue;
            }
            // SAFETY: reading into our buffer.
            let n = unsafe { libc::read(from, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                open[i] = false;
                // SAFETY: half-close the peer's write side.
                unsafe { libc::shutdown(to, libc::SHUT_WR) };
                continue;
            }
            if !write_all(to, &buf[..n as usize]) {
                return;
            }
        }
    }
}

fn write_all(fd: RawFd, mut data: &[u8]) -> bool {
    while !data.is_empty() {
        // SAFETY: writing from a valid slice.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        data = &data[n as usize..];
    }
    true
}
