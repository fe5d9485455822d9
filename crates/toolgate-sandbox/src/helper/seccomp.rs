//! The seccomp filter: compiled once per process on the harness side, loaded by the helper.
//!
//! One program: a hand-written prefix, then seccompiler's filter.
//! - the prefix checks the architecture, answers `ENOSYS` for x32 syscall numbers (x86_64;
//!   they would otherwise bypass the lists) and for `clone3` (so libc falls back to `clone`,
//!   whose flags the filter can inspect — `clone3` passes them in memory);
//! - seccompiler's filter answers `EPERM` for the dangerous list below.
//!
//! One program rather than three stacked ones: each loaded filter costs the kernel a pass over
//! every syscall number at load time and one more program run per syscall afterwards.
//! A foreign-architecture syscall (e.g. `int 0x80`) kills the process.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::error::SandboxError;
use crate::sys::SYS_OPEN_TREE_ATTR;

/// Syscalls denied outright with `EPERM`.
const DENIED: &[(i64, &str)] = &[
    (libc::SYS_ptrace, "ptrace"),
    (libc::SYS_process_vm_readv, "process_vm_readv"),
    (libc::SYS_process_vm_writev, "process_vm_writev"),
    (libc::SYS_mount, "mount"),
    (libc::SYS_umount2, "umount2"),
    (libc::SYS_pivot_root, "pivot_root"),
    (libc::SYS_open_tree, "open_tree"),
    (libc::SYS_move_mount, "move_mount"),
    (libc::SYS_fsopen, "fsopen"),
    (libc::SYS_fsmount, "fsmount"),
    (libc::SYS_fsconfig, "fsconfig"),
    (libc::SYS_fspick, "fspick"),
    (libc::SYS_mount_setattr, "mount_setattr"),
    (SYS_OPEN_TREE_ATTR, "open_tree_attr"),
    (libc::SYS_unshare, "unshare"),
    (libc::SYS_setns, "setns"),
    (libc::SYS_bpf, "bpf"),
    (libc::SYS_perf_event_open, "perf_event_open"),
    (libc::SYS_userfaultfd, "userfaultfd"),
    (libc::SYS_keyctl, "keyctl"),
    (libc::SYS_add_key, "add_key"),
    (libc::SYS_request_key, "request_key"),
    (libc::SYS_io_uring_setup, "io_uring_setup"),
    (libc::SYS_io_uring_enter, "io_uring_enter"),
    (libc::SYS_io_uring_register, "io_uring_register"),
    (libc::SYS_kexec_load, "kexec_load"),
    (libc::SYS_kexec_file_load, "kexec_file_load"),
    (libc::SYS_init_module, "init_module"),
    (libc::SYS_finit_module, "finit_module"),
    (libc::SYS_delete_module, "delete_module"),
    (libc::SYS_open_by_handle_at, "open_by_handle_at"),
];

/// Namespace flags that `clone(2)` may not use.
const CLONE_NS_FLAGS: &[i32] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
    0x80, // CLONE_NEWTIME
];

/// ioctl requests denied on any fd (terminal input injection).
#[allow(clippy::unnecessary_cast)] // c_ulong on some targets
const DENIED_IOCTLS: &[u64] = &[libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// `personality(2)` values still allowed: query, PER_LINUX, ADDR_NO_RANDOMIZE.
const ALLOWED_PERSONALITIES: &[u64] = &[0xffff_ffff, 0, 0x0040000];

/// Socket families denied always (vsock reaches the hypervisor host, bypassing netns).
const DENIED_FAMILIES: &[i32] = &[libc::AF_VSOCK];

/// Socket families additionally denied when network isolation must come from seccomp.
const INET_FAMILIES: &[i32] = &[libc::AF_INET, libc::AF_INET6, libc::AF_PACKET];

/// Unix sockets, denied unless `allowAllUnixSockets`: the read-only view does not stop
/// `connect(2)` to a socket file of the host (a read-only mount refuses writes to files,
/// directories and links, not to sockets), and behind those files are daemons that run
/// commands outside any sandbox — the Docker socket, the user's systemd and D-Bus, agents
/// holding keys. The path of a `connect` is out of seccomp's sight, so it is `socket(2)`
/// that is refused; `socketpair(2)` (anonymous, connected pairs) stays allowed except for
/// [`UNIX_PAIR_TYPES_DENIED`].
const UNIX_FAMILIES: &[i32] = &[libc::AF_UNIX];

/// `socketpair(AF_UNIX, type)` types refused with [`UNIX_FAMILIES`]: a datagram socket is
/// never bound to its pair for good — `sendto(2)` with an address, or a second
/// `connect(2)`, sends to any datagram socket of the host (`/dev/log`, journald's, chronyd's
/// command socket). Stream and seqpacket pairs stay connected (the kernel answers `EISCONN`
/// to a `connect` and ignores or refuses a `sendto` address), so they are kept: pipes to
/// child processes, Node's and Python's IPC. The mount view hides where host daemons keep
/// their sockets as well (`mounts.rs`), so this rule is the second layer, not the only one.
const UNIX_PAIR_TYPES_DENIED: &[i32] = &[libc::SOCK_DGRAM];

/// The bits of `socketpair`'s `type` argument that name the type (the rest are
/// `SOCK_NONBLOCK` and `SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;

/// Which socket families the filter refuses beyond [`DENIED_FAMILIES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SocketDenial {
    /// `AF_INET`, `AF_INET6`, `AF_PACKET` (no network namespace to isolate them).
    pub inet: bool,
    /// `AF_UNIX` via `socket(2)`, and datagram pairs via `socketpair(2)`.
    pub unix: bool,
}

fn arch() -> Result<TargetArch, SandboxError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|e| SandboxError::Seccomp(e.to_string()))
}

fn cond(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, SandboxError> {
    SeccompCondition::new(arg, len, op, value).map_err(|e| SandboxError::Seccomp(e.to_string()))
}

fn rule(conds: Vec<SeccompCondition>) -> Result<SeccompRule, SandboxError> {
    SeccompRule::new(conds).map_err(|e| SandboxError::Seccomp(e.to_string()))
}

fn deny_program(sockets: SocketDenial) -> Result<BpfProgram, SandboxError> {
    use SeccompCmpArgLen::{Dword, Qword};
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (nr, _) in DENIED {
        rules.insert(*nr, Vec::new());
    }
    let mut clone_rules = Vec::new();
    for flag in CLONE_NS_FLAGS {
        let f = *flag as u64;
        clone_rules.push(rule(vec![cond(0, Qword, SeccompCmpOp::MaskedEq(f), f)?])?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    let mut ioctl_rules = Vec::new();
    for req in DENIED_IOCTLS {
        ioctl_rules.push(rule(vec![cond(
            1,
            Dword,
            SeccompCmpOp::MaskedEq(0xffff_ffff),
            *req,
        )?])?);
    }
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    let mut pers = Vec::new();
    for v in ALLOWED_PERSONALITIES {
        pers.push(cond(0, Dword, SeccompCmpOp::Ne, *v)?);
    }
    rules.insert(libc::SYS_personality, vec![rule(pers)?]);
    let mut socket_rules = Vec::new();
    let families = DENIED_FAMILIES
        .iter()
        .chain(if sockets.inet { INET_FAMILIES } else { &[] })
        .chain(if sockets.unix { UNIX_FAMILIES } else { &[] });
    for fam in families {
        socket_rules.push(rule(vec![cond(0, Dword, SeccompCmpOp::Eq, *fam as u64)?])?);
    }
    rules.insert(libc::SYS_socket, socket_rules);
    if sockets.unix {
        let mut pair_rules = Vec::new();
        for ty in UNIX_PAIR_TYPES_DENIED {
            pair_rules.push(rule(vec![
                cond(0, Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?,
                cond(1, Dword, SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK), *ty as u64)?,
            ])?);
        }
        rules.insert(libc::SYS_socketpair, pair_rules);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch()?,
    )
    .map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    BpfProgram::try_from(filter).map_err(|e| SandboxError::Seccomp(e.to_string()))
}

/// `AUDIT_ARCH_*` of the native architecture (the value in `seccomp_data.arch`).
const AUDIT_ARCH: u32 = if cfg!(target_arch = "x86_64") {
    0xc000_003e
} else {
    0xc000_00b7 // aarch64; other targets fail earlier, in `arch()`
};

/// The prefix (see the module doc), packed. Falls through to the next program's first
/// instruction; BPF jumps are relative, so the program appended after it is unaffected.
fn prefix() -> Vec<u64> {
    const X32_BIT: u64 = 0x4000_0000;
    let ld_abs = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u64;
    let jeq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u64;
    let jge = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u64;
    let ret = (libc::BPF_RET | libc::BPF_K) as u64;
    let enosys = (ret << 48) | (libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32) as u64;
    let kill = (ret << 48) | libc::SECCOMP_RET_KILL_PROCESS as u64;
    // Instruction: code<<48 | jt<<40 | jf<<32 | k.
    let mut p = vec![
        (ld_abs << 48) | 4,                              // A = seccomp_data.arch
        (jeq << 48) | (1 << 40) | u64::from(AUDIT_ARCH), // native? skip the kill
        kill,                                            //
        ld_abs << 48,                                    // A = seccomp_data.nr
        (jeq << 48) | (libc::SYS_clone3 as u64 & 0xffff_ffff) | (1 << 32), // clone3? ENOSYS
        enosys,                                          //
    ];
    if cfg!(target_arch = "x86_64") {
        p.extend([
            (jge << 48) | (1 << 32) | X32_BIT, // nr >= X32_BIT? ENOSYS : skip it
            enosys,
        ]);
    }
    p
}

fn pack(prog: &BpfProgram) -> Vec<u64> {
    prog.iter()
        .map(|i| {
            ((i.code as u64) << 48) | ((i.jt as u64) << 40) | ((i.jf as u64) << 32) | i.k as u64
        })
        .collect()
}

/// Unpacks one program into `libc::sock_filter`s.
pub(crate) fn unpack(packed: &[u64]) -> Vec<libc::sock_filter> {
    packed
        .iter()
        .map(|&w| libc::sock_filter {
            code: (w >> 48) as u16,
            jt: (w >> 40) as u8,
            jf: (w >> 32) as u8,
            k: w as u32,
        })
        .collect()
}

/// The packed programs for one socket variant (cached per process).
pub(crate) fn programs(sockets: SocketDenial) -> Result<Vec<Vec<u64>>, SandboxError> {
    static CACHE: [OnceLock<Vec<Vec<u64>>>; 4] = [const { OnceLock::new() }; 4];
    let slot = &CACHE[usize::from(sockets.inet) | usize::from(sockets.unix) << 1];
    if let Some(p) = slot.get() {
        return Ok(p.clone());
    }
    let mut program = prefix();
    program.extend(pack(&deny_program(sockets)?));
    if program.len() > usize::from(u16::MAX) {
        return Err(SandboxError::Seccomp("filter too long".to_owned()));
    }
    Ok(slot.get_or_init(|| vec![program]).clone())
}

/// Installs the programs on the calling thread (`no_new_privs` must already be set).
pub(crate) fn install(programs: &[Vec<libc::sock_filter>]) -> Result<(), SandboxError> {
    for prog in programs {
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: fprog points to a valid program that outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &fprog as *const libc::sock_fprog,
            )
        };
        if r != 0 {
            return Err(SandboxError::last_os(
                "seccomp",
                "seccomp(SECCOMP_SET_MODE_FILTER)",
                "disable the seccomp layer if this kernel lacks CONFIG_SECCOMP_FILTER",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_compile_and_roundtrip() {
        for (inet, unix) in [(false, false), (true, false), (false, true), (true, true)] {
            let progs = programs(SocketDenial { inet, unix }).unwrap_or_default();
            assert_eq!(progs.len(), 1, "one merged program");
            let unpacked = unpack(&progs[0]);
            assert_eq!(unpacked.len(), progs[0].len());
            // The prefix comes first, then seccompiler's filter (which starts with its own
            // architecture check: a load of seccomp_data.arch at offset 4).
            let pre = prefix();
            assert_eq!(&progs[0][..pre.len()], &pre[..]);
            let next = unpacked[pre.len()];
            assert_eq!(
                u32::from(next.code),
                libc::BPF_LD | libc::BPF_W | libc::BPF_ABS
            );
            assert_eq!(next.k, 4);
        }
    }
}
