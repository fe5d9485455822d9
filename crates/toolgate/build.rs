//! Link options for the `toolgate` binary.
//!
//! Packs the binary's relative relocations (`-z pack-relative-relocs`, `DT_RELR`): the
//! ≈29,000 pointers the dynamic loader adjusts at every start are described in ≈8 KiB
//! instead of ≈700 KiB of `RELA` entries, ≈0.1 ms less per process (`toolgate hook` runs
//! once per tool call, `toolgate sandbox run` once per command). Only when building for the
//! machine the build runs on and its glibc is 2.36 or newer: the linker then records a need
//! for `GLIBC_ABI_DT_RELR`, which an older glibc would refuse to load.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe extern "C" {
    /// glibc's own version, e.g. "2.36".
    fn gnu_get_libc_version() -> *const std::ffi::c_char;
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let env = |key: &str| std::env::var(key).unwrap_or_default();
    let native_glibc = env("TARGET") == env("HOST")
        && env("CARGO_CFG_TARGET_OS") == "linux"
        && env("CARGO_CFG_TARGET_ENV") == "gnu";
    if native_glibc && glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the glibc this build script runs on (the target's, when `TARGET == HOST`) is
/// `major.minor` or newer.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_at_least(major: u32, minor: u32) -> bool {
    // SAFETY: returns a pointer to a static NUL-terminated string (or null on a libc
    // that is not glibc, which the caller's target check has excluded).
    let version = unsafe { gnu_get_libc_version() };
    if version.is_null() {
        return false;
    }
    // SAFETY: non-null, static and NUL-terminated, as above.
    let version = unsafe { std::ffi::CStr::from_ptr(version) }.to_string_lossy();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    found >= (major, minor)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_at_least(_major: u32, _minor: u32) -> bool {
    false
}
