//! Capability drop: bounding set, ambient set, securebits (NOROOT, locked), then capset 0.
//!
//! Needed even with a uid map to oneself: when toolgate runs as root, uid 0 inside the user
//! namespace would otherwise regain every capability of that namespace on `execve`.

use crate::error::SandboxError;

const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;

/// Highest capability number probed when `/proc/sys/kernel/cap_last_cap` is unreadable.
const MAX_CAP: libc::c_ulong = 63;

const HINT: &str = "run the helper with CAP_SETPCAP (inside its user namespace) or disable user_ns";

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops every capability. With `strict` (in a user namespace, or real root) a failure to
/// clear the bounding set or lock the securebits is an error; otherwise (unprivileged, no
/// namespace) there is nothing to drop and `EPERM` is expected.
pub(crate) fn drop_all(strict: bool) -> Result<(), SandboxError> {
    for cap in 0..=MAX_CAP {
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            let e = crate::sys::errno();
            if e == libc::EINVAL {
                break; // past the last capability
            }
            if strict {
                return Err(SandboxError::last_os(
                    "capabilities",
                    format!("PR_CAPBSET_DROP {cap}"),
                    HINT,
                ));
            }
            break;
        }
    }
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
    }
    let bits = SECBIT_NOROOT
        | SECBIT_NOROOT_LOCKED
        | SECBIT_NO_SETUID_FIXUP
        | SECBIT_NO_SETUID_FIXUP_LOCKED
        | SECBIT_KEEP_CAPS_LOCKED
        | SECBIT_NO_CAP_AMBIENT_RAISE
        | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) } != 0 && strict {
        return Err(SandboxError::last_os(
            "capabilities",
            "PR_SET_SECUREBITS",
            HINT,
        ));
    }
    let mut header = CapHeader {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: header and data are valid v3 capability structs.
    let r = unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    };
    if r != 0 {
        return Err(SandboxError::last_os("capabilities", "capset(0)", HINT));
    }
    Ok(())
}
