//! rlimits for the command (cgroups are in `crate::cgroup`).

use crate::error::SandboxError;
use crate::policy::Limits;

/// Resource limits as `(resource, soft, hard)`.
pub(crate) fn rlimits(limits: &Limits, nproc: bool, address_space: bool) -> Vec<(i32, u64, u64)> {
    let mut out = vec![(libc::RLIMIT_CORE as i32, 0, 0)];
    if let Some(secs) = limits.cpu_time_secs {
        // Soft limit → SIGXCPU; hard limit one second later → SIGKILL.
        out.push((libc::RLIMIT_CPU as i32, secs, secs.saturating_add(1)));
    }
    if let Some(n) = limits.open_files {
        out.push((libc::RLIMIT_NOFILE as i32, n, n));
    }
    if let Some(n) = limits.file_size_bytes {
        out.push((libc::RLIMIT_FSIZE as i32, n, n));
    }
    if let (true, Some(n)) = (nproc, limits.processes) {
        out.push((libc::RLIMIT_NPROC as i32, n, n));
    }
    if let (true, Some(n)) = (address_space, limits.memory.bytes()) {
        out.push((libc::RLIMIT_AS as i32, n, n));
    }
    out
}

/// Applies the limits to the calling process (never raising a hard limit).
pub(crate) fn apply(list: &[(i32, u64, u64)]) -> Result<(), SandboxError> {
    for &(res, soft, hard) in list {
        let mut cur = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid rlimit struct.
        unsafe { libc::getrlimit(res as _, &mut cur) };
        let hard = hard.min(cur.rlim_max);
        let new = libc::rlimit {
            rlim_cur: soft.min(hard),
            rlim_max: hard,
        };
        // SAFETY: valid rlimit struct.
        if unsafe { libc::setrlimit(res as _, &new) } != 0 {
            return Err(SandboxError::last_os(
                "rlimits",
                format!("setrlimit({res}, {soft}, {hard})"),
                "lower the limit in the sandbox settings",
            ));
        }
    }
    Ok(())
}
