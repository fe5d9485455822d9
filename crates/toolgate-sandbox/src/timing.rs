//! Start-up timing marks, for `bench/sandbox.py`'s per-phase breakdown.
//!
//! With `TOOLGATE_SANDBOX_TIMING=1` in the environment, each process of a sandbox run (the
//! harness, the helper, pid 1, the command before `execve`) writes one line per mark to
//! stderr: `toolgate-sandbox-timing <mark> <CLOCK_MONOTONIC ns>`. The clock is shared by all
//! processes, so marks from different processes can be subtracted. Off by default: a mark
//! then costs one relaxed atomic load.

use std::sync::atomic::{AtomicU8, Ordering};

/// Environment variable that turns the marks on.
pub const TIMING_ENV: &str = "TOOLGATE_SANDBOX_TIMING";

/// 0 = not read yet, 1 = off, 2 = on.
static STATE: AtomicU8 = AtomicU8::new(0);

/// Whether marks are written (reads the environment once per process).
pub(crate) fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var_os(TIMING_ENV).is_some_and(|v| v == "1");
            STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        s => s == 2,
    }
}

/// Nanoseconds on `CLOCK_MONOTONIC`.
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Writes one mark when timing is on. Formats into a stack buffer and writes with one
/// `write(2)`, so it is usable between `fork` and `execve` (no allocation, no lock).
pub(crate) fn mark(name: &str) {
    if !enabled() {
        return;
    }
    let mut buf = [0u8; 128];
    let mut len = 0;
    let mut push = |bytes: &[u8]| {
        let n = bytes.len().min(buf.len() - len);
        buf[len..len + n].copy_from_slice(&bytes[..n]);
        len += n;
    };
    push(b"toolgate-sandbox-timing ");
    push(name.as_bytes());
    push(b" ");
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = now_ns();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    push(&digits[i..]);
    push(b"\n");
    // SAFETY: writing a local buffer to stderr.
    unsafe { libc::write(2, buf.as_ptr().cast(), len) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_moves_forward() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a && a > 0);
    }
}
