//! The helper: `toolgate __sandbox-exec --spec-fd <fd> <cwd> -- CMD…`, single-threaded.
//!
//! Process tree: the helper (host pid namespace: cgroups, wall-time limit, signal relay,
//! clean-up) → pid 1 of the sandbox ([`init`]) → the command. Setup errors travel over a
//! close-on-exec pipe (`[exit code] message`), so "the sandbox failed" is never confused with
//! the command's own output. What the helper does around pid 1, step by step, is in
//! [`supervise`].

pub(crate) mod bridge;
pub(crate) mod caps;
pub(crate) mod init;
pub(crate) mod landlock;
pub(crate) mod limits;
pub(crate) mod mounts;
pub(crate) mod seccomp;
mod supervise;

use std::ffi::OsString;
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::error::SandboxError;
use crate::plan::{HELPER_ARG, HelperSpec, SPEC_FD_ARG};
use init::EXIT_SETUP_FAILED;

/// Entry point of the helper. Call it first thing in `main` when `argv[1] == HELPER_ARG`,
/// before any thread or async runtime exists.
pub fn helper_main() -> ExitCode {
    crate::timing::mark("helper-main");
    let args: Vec<OsString> = std::env::args_os().collect();
    match run(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("toolgate-sandbox: {e}");
            ExitCode::from(EXIT_SETUP_FAILED)
        }
    }
}

fn usage() -> SandboxError {
    SandboxError::Encoding(format!(
        "usage: EXE {HELPER_ARG} {SPEC_FD_ARG} <fd> <cwd> -- CMD..."
    ))
}

/// Reads the spec from the inherited descriptor `fd` (from offset 0: one `Command` may be
/// spawned more than once) and closes it.
fn read_spec(fd: &std::ffi::OsStr) -> Result<Vec<u8>, SandboxError> {
    use std::os::unix::fs::FileExt;
    let fd: i32 = fd.to_str().and_then(|s| s.parse().ok()).ok_or_else(usage)?;
    // SAFETY: F_GETFD on a number only asks whether it is open.
    if fd < 3 || unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
        return Err(SandboxError::Encoding(format!(
            "spec descriptor {fd} is not open: spawn the Command that \
             toolgate_sandbox::command returned (it hands the descriptor over), not a copy"
        )));
    }
    // SAFETY: the harness passed this open descriptor for us to own.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    let len = file
        .metadata()
        .map_err(|e| SandboxError::Encoding(format!("spec descriptor {fd}: {e}")))?
        .len();
    if len > crate::plan::MAX_SPEC_BYTES as u64 {
        return Err(SandboxError::Encoding(format!(
            "spec of {len} bytes is too large"
        )));
    }
    let mut buf = vec![0; len as usize];
    file.read_exact_at(&mut buf, 0)
        .map_err(|e| SandboxError::Encoding(format!("spec descriptor {fd}: {e}")))?;
    Ok(buf)
}

fn run(args: Vec<OsString>) -> Result<u8, SandboxError> {
    let mut it = args.into_iter().skip(1);
    if it.next().as_deref() != Some(std::ffi::OsStr::new(HELPER_ARG))
        || it.next().as_deref() != Some(std::ffi::OsStr::new(SPEC_FD_ARG))
    {
        return Err(usage());
    }
    let spec = read_spec(&it.next().ok_or_else(usage)?)?;
    let cwd = PathBuf::from(it.next().ok_or_else(usage)?);
    if it.next().as_deref() != Some(std::ffi::OsStr::new("--")) {
        return Err(usage());
    }
    let argv: Vec<OsString> = it.collect();
    if argv.is_empty() {
        return Err(usage());
    }
    let spec_bytes = spec.as_slice();
    let spec: HelperSpec = serde_json::from_slice(spec_bytes)
        .map_err(|e| SandboxError::Encoding(format!("spec: {e}")))?;
    // The helper may be a separate binary (`toolgate-sandbox-helper`); one built from other
    // sources could silently ignore a field it does not know. Re-encoding must give back the
    // exact text, or the helper refuses to run the command.
    if serde_json::to_vec(&spec).ok().as_deref() != Some(spec_bytes) {
        return Err(SandboxError::Encoding(
            "the sandbox helper was built from different sources than the toolgate binary \
             (spec does not round-trip); rebuild both or remove the stale \
             toolgate-sandbox-helper"
                .to_owned(),
        ));
    }
    crate::timing::mark("helper-spec-parsed");
    // The harness started the helper with the command's (filtered) environment.
    supervise::supervise(spec, cwd, argv, std::env::vars_os().collect())
}

/// Runs `argv` in the sandbox from the calling process, without re-executing a helper:
/// `toolgate sandbox run` saves an `execve` this way. The caller must be single-threaded
/// ([`crate::sys::single_threaded`]; `cli::run` checks it just before); its process then plays the
/// helper's part (cgroups, the clone of pid 1, signal relay, wall-time limit). `env` is the
/// command's environment.
pub(crate) fn run_in_process(
    spec: HelperSpec,
    cwd: PathBuf,
    argv: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
) -> Result<u8, SandboxError> {
    supervise::supervise(spec, cwd, argv, env)
}
