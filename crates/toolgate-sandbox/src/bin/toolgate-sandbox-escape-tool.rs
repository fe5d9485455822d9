//! Test-only: escape attempts for the sandbox test suite, run *inside* the sandbox.
//!
//! Each subcommand tries one thing and prints `ESCAPED …` (exit 0) if it worked or
//! `CONTAINED …` (exit 3) with the error otherwise. The tests treat anything but an
//! explicit `CONTAINED` as a failure, so a crash cannot look like containment.

use std::io::Write;
use std::os::fd::FromRawFd;

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn result(what: &str, escaped: bool, detail: impl std::fmt::Display) -> ! {
    if escaped {
        println!("ESCAPED {what}: {detail}");
        std::process::exit(0);
    }
    println!("CONTAINED {what}: {detail}");
    std::process::exit(3);
}

fn arg(args: &[String], i: usize) -> &str {
    args.get(i).map(String::as_str).unwrap_or("")
}

/// One family of escape attempts: runs `cmd` if it is one of the family's (and exits), else
/// returns.
type Family = fn(&str, &[String]);

/// Every family, tried in turn.
const FAMILIES: [Family; 6] = [filesystem, privilege, syscalls, network, limits, process];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cmd = arg(&args, 1);
    for family in FAMILIES {
        family(cmd, &args);
    }
    eprintln!("unknown subcommand {cmd}");
    std::process::exit(2);
}

/// Reads and writes through paths and inherited descriptors: masks, read-only binds, the
/// writable roots.
fn filesystem(cmd: &str, args: &[String]) {
    match cmd {
        // Use an inherited fd (dir fd on the secret's parent) via /proc/self/fd/N.
        "inherited-fd" => {
            let fd: i32 = arg(args, 2).parse().unwrap_or(-1);
            let rel = arg(args, 3);
            let path = format!("/proc/self/fd/{fd}/{rel}");
            match std::fs::read_to_string(&path) {
                Ok(s) => result(cmd, true, s.trim()),
                Err(e) => {
                    // Also try the raw fd directly.
                    // SAFETY: fstat on an arbitrary fd number.
                    let mut st: libc::stat = unsafe { std::mem::zeroed() };
                    let open = unsafe { libc::fstat(fd, &mut st) } == 0;
                    result(cmd, open, format!("{path}: {e}; fd open: {open}"))
                }
            }
        }
        "read" => match std::fs::read(arg(args, 2)) {
            Ok(b) => result(
                cmd,
                true,
                format!("{} bytes: {}", b.len(), String::from_utf8_lossy(&b).trim()),
            ),
            Err(e) => result(cmd, false, e),
        },
        "write" => {
            let r = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(arg(args, 2))
                .and_then(|mut f| f.write_all(arg(args, 3).as_bytes()));
            match r {
                Ok(()) => result(cmd, true, arg(args, 2)),
                Err(e) => result(cmd, false, e),
            }
        }
        _ => {}
    }
}

/// Privileged kernel operations and other processes: mounts, nested user namespaces,
/// ptrace, signals to the host, terminal injection.
fn privilege(cmd: &str, args: &[String]) {
    match cmd {
        "remount-rw" => {
            // SAFETY: mount syscalls with static strings.
            let r = unsafe {
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REMOUNT | libc::MS_BIND,
                    std::ptr::null(),
                )
            };
            let e1 = errno();
            let target = std::ffi::CString::new(arg(args, 2)).unwrap_or_default();
            // SAFETY: umount2 with a valid C string.
            let u = unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
            let e2 = errno();
            result(
                cmd,
                r == 0 || u == 0,
                format!("remount: {e1}; umount {}: {e2}", arg(args, 2)),
            )
        }
        "unshare-user" => {
            // SAFETY: unshare with a flag.
            let r = unsafe { libc::unshare(libc::CLONE_NEWUSER) };
            let e1 = errno();
            // SAFETY: raw clone with CLONE_NEWUSER; the child exits at once.
            let pid = unsafe {
                libc::syscall(
                    libc::SYS_clone,
                    libc::CLONE_NEWUSER | libc::SIGCHLD,
                    0,
                    0,
                    0,
                    0,
                )
            };
            if pid == 0 {
                // SAFETY: exiting the child.
                unsafe { libc::_exit(0) };
            }
            let e2 = errno();
            result(
                cmd,
                r == 0 || pid > 0,
                format!("unshare: {e1}; clone: {e2}"),
            )
        }
        "ptrace" => {
            let pid: i32 = arg(args, 2).parse().unwrap_or(0);
            // SAFETY: ptrace attach attempt.
            let r = unsafe { libc::ptrace(libc::PTRACE_ATTACH, pid, 0, 0) };
            let e = errno();
            result(cmd, r == 0, format!("PTRACE_ATTACH {pid}: {e}"))
        }
        "kill" => {
            let pid: i32 = arg(args, 2).parse().unwrap_or(0);
            // SAFETY: signal 0 probe, then SIGTERM.
            let r = unsafe { libc::kill(pid, 0) };
            let e = errno();
            let t = unsafe { libc::kill(pid, libc::SIGTERM) };
            result(cmd, r == 0 || t == 0, format!("kill {pid}: {e}"))
        }
        "tiocsti" => {
            let path = arg(args, 2);
            let c = std::ffi::CString::new(if path.is_empty() { "/dev/tty" } else { path })
                .unwrap_or_default();
            // SAFETY: open + ioctl(TIOCSTI) with one byte.
            let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_NOCTTY) };
            let fd = if fd < 0 { 0 } else { fd };
            let ch: libc::c_char = b'x' as libc::c_char;
            let r = unsafe { libc::ioctl(fd, libc::TIOCSTI, &ch) };
            let e = errno();
            result(cmd, r == 0, format!("TIOCSTI on fd {fd}: {e}"))
        }
        _ => {}
    }
}

/// System calls the seccomp filter must refuse, under every number they can be reached by.
fn syscalls(cmd: &str, _args: &[String]) {
    match cmd {
        // A 32-bit syscall from a 64-bit process (`int 0x80`, i386 getpid): another syscall
        // table, which the filter's architecture check must refuse by killing the process.
        #[cfg(target_arch = "x86_64")]
        "int80" => {
            let ret: i64;
            // SAFETY: i386 getpid takes no arguments and touches no memory; the kernel may
            // clobber r8-r11 on the way back.
            unsafe {
                std::arch::asm!(
                    "int 0x80",
                    inlateout("rax") 20i64 => ret,
                    out("r8") _, out("r9") _, out("r10") _, out("r11") _,
                    options(nostack),
                );
            }
            result(cmd, ret > 0, format!("int 0x80 getpid returned {ret}"))
        }
        "syscalls" => {
            let mut open = Vec::new();
            for (name, nr) in [
                ("io_uring_setup", libc::SYS_io_uring_setup),
                ("bpf", libc::SYS_bpf),
                ("perf_event_open", libc::SYS_perf_event_open),
                ("keyctl", libc::SYS_keyctl),
            ] {
                // SAFETY: re-issue to read errno reliably (null/zero arguments).
                let r = unsafe { libc::syscall(nr, 0, 0, 0, 0, 0) };
                let e = errno();
                if r >= 0 || e.raw_os_error() != Some(libc::EPERM) {
                    open.push(format!("{name}: {r} {e}"));
                }
            }
            // clone3 carries its flags in memory, out of the filter's sight: it must be
            // ENOSYS (libc then falls back to clone, whose flags are checked).
            let mut clone_args = [0u64; 11]; // struct clone_args (v2), 88 bytes
            clone_args[0] = libc::CLONE_NEWUSER as u64;
            clone_args[4] = libc::SIGCHLD as u64; // exit_signal
            // SAFETY: clone3 with a valid clone_args; a child (if any) exits at once.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_clone3,
                    clone_args.as_mut_ptr(),
                    std::mem::size_of_val(&clone_args),
                )
            };
            if r == 0 {
                // SAFETY: exiting the child.
                unsafe { libc::_exit(0) };
            }
            let e = errno();
            if r > 0 || e.raw_os_error() != Some(libc::ENOSYS) {
                open.push(format!("clone3: {r} {e}"));
            }
            // x32 numbers (x86_64): the same syscalls under another number.
            #[cfg(target_arch = "x86_64")]
            {
                const X32_BIT: libc::c_long = 0x4000_0000;
                // SAFETY: x32 unshare(CLONE_NEWUSER); fails when filtered.
                let r = unsafe { libc::syscall(X32_BIT | 272, libc::CLONE_NEWUSER) };
                let e = errno();
                if r >= 0 || e.raw_os_error() != Some(libc::ENOSYS) {
                    open.push(format!("x32 unshare: {r} {e}"));
                }
            }
            result(cmd, !open.is_empty(), open.join(", "))
        }
        _ => {}
    }
}

/// Network reach: host TCP and unix sockets, routes out, the loopback of the room, and the
/// allow-list proxy.
fn network(cmd: &str, args: &[String]) {
    match cmd {
        "tcp-connect" => {
            let addr = arg(args, 2);
            match std::net::TcpStream::connect_timeout(
                &addr
                    .parse()
                    .unwrap_or_else(|_| std::net::SocketAddr::from(([127, 0, 0, 1], 1))),
                std::time::Duration::from_secs(2),
            ) {
                Ok(_) => result(cmd, true, addr),
                Err(e) => result(cmd, false, format!("{addr}: {e}")),
            }
        }
        // Connect to a unix socket file of the host and read what its server says.
        "unix-connect" => {
            let path = arg(args, 2);
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(mut s) => {
                    let mut buf = String::new();
                    let _ = std::io::Read::read_to_string(&mut s, &mut buf);
                    result(cmd, true, format!("{path}: {}", buf.trim()))
                }
                Err(e) => result(cmd, false, format!("{path}: {e}")),
            }
        }
        // Send a datagram to a socket of the host from an anonymous datagram pair, which
        // needs no socket(2): `sendto` with an address, then a second `connect`. TARGET is a
        // path, or `@name` for an abstract socket.
        "unix-dgram-send" => {
            use std::os::linux::net::SocketAddrExt;
            use std::os::unix::net::{SocketAddr, UnixDatagram};
            let target = arg(args, 2);
            let addr = match target.strip_prefix('@') {
                Some(name) => SocketAddr::from_abstract_name(name.as_bytes()),
                None => SocketAddr::from_pathname(target),
            }
            .unwrap_or_else(|e| result(cmd, false, format!("address {target}: {e}")));
            let (a, _b) = UnixDatagram::pair()
                .unwrap_or_else(|e| result(cmd, false, format!("socketpair: {e}")));
            let sent = a.send_to_addr(b"PWNED-SENDTO", &addr);
            if sent.is_ok() {
                result(cmd, true, format!("{target}: sendto delivered"));
            }
            let connected = a
                .connect_addr(&addr)
                .and_then(|()| a.send(b"PWNED-CONNECT"));
            match (sent, connected) {
                (_, Ok(_)) => result(cmd, true, format!("{target}: connect+send delivered")),
                (Err(e1), Err(e2)) => {
                    result(cmd, false, format!("{target}: sendto: {e1}; connect: {e2}"))
                }
                (Ok(_), Err(_)) => unreachable!("handled above"),
            }
        }
        // Anonymous connected pairs stay allowed: desired outcome, prints WORKS.
        "socketpair" => {
            let (mut a, mut b) =
                std::os::unix::net::UnixStream::pair().unwrap_or_else(|e| result(cmd, false, e));
            let _ = a.write_all(b"pair");
            drop(a);
            let mut buf = String::new();
            let _ = std::io::Read::read_to_string(&mut b, &mut buf);
            println!("WORKS socketpair: {buf}");
            std::process::exit(if buf == "pair" { 0 } else { 4 });
        }
        // UDP connect sends no packet; it only asks the kernel for a route.
        "udp-route" => {
            let addr = arg(args, 2);
            let sock = std::net::UdpSocket::bind("0.0.0.0:0");
            match sock.and_then(|s| s.connect(addr)) {
                Ok(()) => result(cmd, true, format!("route to {addr} exists")),
                Err(e) => result(cmd, false, format!("{addr}: {e}")),
            }
        }
        "loopback-server" => {
            let l = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap_or_else(|e| result(cmd, false, e));
            let port = l.local_addr().map(|a| a.port()).unwrap_or(0);
            let t = std::thread::spawn(move || {
                if let Ok((mut s, _)) = l.accept() {
                    let _ = s.write_all(b"pong");
                }
            });
            let mut c = std::net::TcpStream::connect(("127.0.0.1", port))
                .unwrap_or_else(|e| result(cmd, false, e));
            let mut buf = String::new();
            let _ = std::io::Read::read_to_string(&mut c, &mut buf);
            let _ = t.join();
            // Success here is the desired outcome: print WORKS.
            println!("WORKS loopback-server: {buf}");
            std::process::exit(if buf == "pong" { 0 } else { 4 });
        }
        // Plain-HTTP request through $HTTP_PROXY: prints the status line (not an escape test).
        "http-proxy" => {
            let proxy = std::env::var("HTTP_PROXY").unwrap_or_default();
            let addr = proxy
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_owned();
            let url = arg(args, 2);
            let mut s = match std::net::TcpStream::connect(&addr) {
                Ok(s) => s,
                Err(e) => {
                    println!("PROXY-UNREACHABLE {addr}: {e}");
                    std::process::exit(5);
                }
            };
            let host = url
                .trim_start_matches("http://")
                .split('/')
                .next()
                .unwrap_or("");
            let _ = write!(
                s,
                "GET {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            );
            let mut resp = String::new();
            let _ = std::io::Read::read_to_string(&mut s, &mut resp);
            let status = resp.lines().next().unwrap_or("").to_owned();
            let body = resp
                .split("\r\n\r\n")
                .nth(1)
                .unwrap_or("")
                .trim()
                .to_owned();
            println!("HTTP {status} BODY {body}");
            std::process::exit(0);
        }
        _ => {}
    }
}

/// Resource limits: memory, processes, CPU time.
fn limits(cmd: &str, args: &[String]) {
    match cmd {
        // The memory limit of the cgroup this process is in (v1 or v2), as `MEMLIMIT <value>`.
        "memory-limit" => {
            let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
            for line in groups.lines() {
                let mut parts = line.splitn(3, ':');
                let (_, controllers, path) = (parts.next(), parts.next(), parts.next());
                let (Some(controllers), Some(path)) = (controllers, path) else {
                    continue;
                };
                let file = if controllers.split(',').any(|c| c == "memory") {
                    format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
                } else if controllers.is_empty() {
                    format!("/sys/fs/cgroup{path}/memory.max")
                } else {
                    continue;
                };
                if let Ok(v) = std::fs::read_to_string(&file) {
                    println!("MEMLIMIT {}", v.trim());
                    std::process::exit(0);
                }
            }
            println!("MEMLIMIT none");
            std::process::exit(0);
        }
        "alloc" => {
            let mb: usize = arg(args, 2).parse().unwrap_or(0);
            let mut v: Vec<Vec<u8>> = Vec::new();
            for _ in 0..mb {
                let mut chunk = Vec::new();
                if chunk.try_reserve_exact(1 << 20).is_err() {
                    result(
                        cmd,
                        false,
                        format!("allocation failed after {} MiB", v.len()),
                    );
                }
                chunk.resize(1 << 20, 1u8);
                v.push(chunk);
            }
            result(cmd, true, format!("allocated {mb} MiB"))
        }
        "forkbomb" => {
            let n: usize = arg(args, 2).parse().unwrap_or(0);
            let mut made = 0;
            for _ in 0..n {
                // SAFETY: children only sleep and exit.
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    std::thread::sleep(std::time::Duration::from_secs(3));
                    // SAFETY: exiting the child.
                    unsafe { libc::_exit(0) };
                }
                if pid < 0 {
                    break;
                }
                made += 1;
            }
            result(cmd, made >= n, format!("forked {made} of {n}"))
        }
        "spin" => loop {
            std::hint::spin_loop();
        },
        _ => {}
    }
}

/// What the command inherits and leaves behind: descriptors, stdin, daemons.
fn process(cmd: &str, args: &[String]) {
    match cmd {
        "daemon" => {
            // A setsid'd grandchild that writes a marker file after a delay.
            let marker = arg(args, 2).to_owned();
            // SAFETY: fork + setsid in the child.
            if unsafe { libc::fork() } == 0 {
                unsafe { libc::setsid() };
                std::thread::sleep(std::time::Duration::from_millis(1500));
                let _ = std::fs::write(&marker, "survived");
                // SAFETY: exiting the child.
                unsafe { libc::_exit(0) };
            }
            println!("STARTED daemon");
            std::process::exit(0);
        }
        "fds" => {
            let n = std::fs::read_dir("/proc/self/fd")
                .map(|d| d.count())
                .unwrap_or(0);
            println!("FDS {n}");
            std::process::exit(0);
        }
        "stdin-fd" => {
            // SAFETY: wrap fd 0 to check it is valid.
            let f = unsafe { std::fs::File::from_raw_fd(0) };
            let ok = f.metadata().is_ok();
            std::mem::forget(f);
            println!("STDIN {ok}");
            std::process::exit(0);
        }
        _ => {}
    }
}
