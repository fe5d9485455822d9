//! The process's allocator: mimalloc for the long-lived gates, glibc's for everything else.
//!
//! `serve` and `exec` run many calls per process, and every call builds and drops JSON
//! trees, strings and buffers: there mimalloc takes ≈18 % less CPU per call than glibc's
//! allocator (docs/mcp.md, Performance). Every other subcommand is a short process —
//! `toolgate hook` starts once per tool call of Claude Code, `toolgate sandbox run` once per
//! command — where mimalloc's set-up, first touch of its fresh segments and purge at exit
//! are most of what it does (≈0.15 ms per process start; docs/sandbox.md, Performance), so
//! those keep the system allocator.
//!
//! The choice is made before `main`, from an `.init_array` entry that glibc calls with
//! `argc`/`argv` (std reads its arguments the same way), and it is fixed by the first
//! allocation: if anything allocated before the choice, the system allocator is kept for
//! good. Either way one allocator serves the whole process, so every block is freed by the
//! allocator that made it. A wrong guess costs speed, never correctness.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

use mimalloc::MiMalloc;

const UNDECIDED: u8 = 0;
const SYSTEM: u8 = 1;
const MIMALLOC: u8 = 2;

/// The process's choice; see the module docs.
static CHOICE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// The global allocator of the `toolgate` binary.
pub struct GateAllocator;

/// Whether `choice` says mimalloc, settling an undecided one on the system allocator.
#[inline]
fn settled_on_mimalloc(choice: &AtomicU8) -> bool {
    match choice.load(Ordering::Relaxed) {
        MIMALLOC => true,
        SYSTEM => false,
        _ => match choice.compare_exchange(UNDECIDED, SYSTEM, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => false,
            Err(now) => now == MIMALLOC,
        },
    }
}

/// Asks for mimalloc; has no effect once anything has allocated.
fn prefer_mimalloc(choice: &AtomicU8) {
    // Losing the race to an allocation is fine: that allocation settled it.
    let _ = choice.compare_exchange(UNDECIDED, MIMALLOC, Ordering::Relaxed, Ordering::Relaxed);
}

/// Whether a command line (without the program name) runs a long-lived gate: its
/// subcommand, the first argument that is not a flag (the only global flag, `-v`, takes no
/// value), is `serve` or `exec`.
fn is_long_lived<'a>(mut args: impl Iterator<Item = &'a [u8]>) -> bool {
    args.find(|a| !a.starts_with(b"-"))
        .is_some_and(|sub| sub == b"serve" || sub == b"exec")
}

// SAFETY (for the four methods): each forwards to one allocator, the same one for the
// whole process (see `settled_on_mimalloc`), so a block is always resized and freed by the
// allocator that allocated it; the callers' contracts pass through unchanged.
unsafe impl GlobalAlloc for GateAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if settled_on_mimalloc(&CHOICE) {
            unsafe { MiMalloc.alloc(layout) }
        } else {
            unsafe { System.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if settled_on_mimalloc(&CHOICE) {
            unsafe { MiMalloc.alloc_zeroed(layout) }
        } else {
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if settled_on_mimalloc(&CHOICE) {
            unsafe { MiMalloc.dealloc(ptr, layout) }
        } else {
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if settled_on_mimalloc(&CHOICE) {
            unsafe { MiMalloc.realloc(ptr, layout, new_size) }
        } else {
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}

/// glibc calls `.init_array` entries with `(argc, argv, envp)` before `main`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[used]
#[unsafe(link_section = ".init_array")]
static CHOOSE_BEFORE_MAIN: extern "C" fn(
    libc::c_int,
    *const *const libc::c_char,
    *const *const libc::c_char,
) = choose_before_main;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn choose_before_main(
    argc: libc::c_int,
    argv: *const *const libc::c_char,
    _envp: *const *const libc::c_char,
) {
    if argv.is_null() {
        return;
    }
    let argc = usize::try_from(argc).unwrap_or(0);
    let args = (1..argc).map_while(|i| {
        // SAFETY: glibc passes the process's `argv`: `argc` valid pointers to
        // NUL-terminated strings that live for the whole process; a null entry (never
        // expected before `argc`) ends the walk.
        let arg = unsafe { *argv.add(i) };
        (!arg.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(arg) }.to_bytes())
    });
    if is_long_lived(args) {
        prefer_mimalloc(&CHOICE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_lived(args: &[&str]) -> bool {
        is_long_lived(args.iter().map(|a| a.as_bytes()))
    }

    #[test]
    fn gates_get_mimalloc_and_short_commands_do_not() {
        assert!(long_lived(&["serve"]));
        assert!(long_lived(&["-v", "serve", "--http", "127.0.0.1:0"]));
        assert!(long_lived(&["exec", "--workspace", "."]));
        assert!(!long_lived(&["hook"]));
        assert!(!long_lived(&["sandbox", "run", "--", "serve"]));
        assert!(!long_lived(&["call", "Read", "serve"]));
        assert!(!long_lived(&["--version"]));
        assert!(!long_lived(&[]));
        assert!(!long_lived(&["servex"]));
    }

    #[test]
    fn the_first_allocation_fixes_the_choice() {
        let choice = AtomicU8::new(UNDECIDED);
        assert!(
            !settled_on_mimalloc(&choice),
            "undecided settles on the system allocator"
        );
        prefer_mimalloc(&choice);
        assert!(
            !settled_on_mimalloc(&choice),
            "a late preference must not switch allocators"
        );

        let choice = AtomicU8::new(UNDECIDED);
        prefer_mimalloc(&choice);
        assert!(settled_on_mimalloc(&choice));
        assert!(settled_on_mimalloc(&choice), "and stays");
    }
}
