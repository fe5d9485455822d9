//! `toolgate sandbox`: which sandbox layers work here, and running any command in the room.
//!
//! Thin: the logic lives in `toolgate_sandbox::cli`. When a helper process is needed (the
//! allow-list proxy) it is `toolgate-sandbox-helper` next to this binary, else this same
//! binary re-executed with `toolgate_sandbox::HELPER_ARG` (dispatched first thing in `main`).

use std::io::Write;
use std::process::ExitCode;

use toolgate_sandbox::cli::{self, RunArgs};

/// `toolgate sandbox …`
#[derive(Debug, clap::Subcommand)]
pub enum SandboxCmd {
    /// Show which sandbox layers work on this machine, and why not.
    Status {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Run a command in the sandbox: `toolgate sandbox run [OPTIONS] -- CMD...`.
    Run(RunArgs),
}

/// `toolgate sandbox run …` without building the whole command line: parsing only this
/// subcommand's arguments, and not setting up logging (the sandbox does not log), saves a
/// few hundred microseconds of every run — the command's start-up is what the sandbox's
/// overhead is measured by. `None` when the arguments are not `sandbox run …` or do not
/// parse here: the full parser then handles them, with its own help and errors.
pub fn fast_run() -> Option<ExitCode> {
    let mut args = std::env::args_os();
    let exe = args.next()?;
    if args.next()? != "sandbox" || args.next()? != "run" {
        return None;
    }
    let parsed = cli::parse_run(std::iter::once(exe).chain(args)).ok()?;
    Some(cli::run_main(parsed, std::env::current_exe()))
}

/// Runs a `sandbox` subcommand; the exit code is the command's (128+signal when killed).
pub fn run(cmd: SandboxCmd) -> ExitCode {
    match cmd {
        SandboxCmd::Status { json } => {
            // Ignore a closed stdout (`| head`).
            let _ = writeln!(std::io::stdout(), "{}", cli::status(json));
            ExitCode::SUCCESS
        }
        SandboxCmd::Run(args) => cli::run_main(args, std::env::current_exe()),
    }
}
