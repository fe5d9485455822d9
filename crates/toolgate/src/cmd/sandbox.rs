//! `toolgate sandbox`: which sandbox layers work here, and running any command in the room.
//!
//! Thin: the logic lives in `toolgate_sandbox::cli`. The helper is this same binary,
//! re-executed with `toolgate_sandbox::HELPER_ARG` (dispatched first thing in `main`).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use toolgate_sandbox::NetworkMode;
use toolgate_sandbox::cli::{self, RunOptions};

/// Network mode flag values.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum NetworkArg {
    /// Empty network namespace, loopback up.
    None,
    /// Only the listed domains, through toolgate's proxy.
    Allowlist,
    /// The host network.
    Full,
}

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
    Run {
        /// Settings file or inline JSON (repeatable; Claude Code `sandbox` keys).
        #[arg(long = "settings", value_name = "FILE|JSON")]
        settings: Vec<String>,
        /// Workspace (writable root); default: the current directory.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Additional writable directory (repeatable).
        #[arg(long = "add-dir", value_name = "DIR")]
        add_dir: Vec<PathBuf>,
        /// Network mode (default from settings: none, or allowlist when domains are listed).
        #[arg(long, value_enum)]
        network: Option<NetworkArg>,
        /// Allow a domain through the proxy (repeatable; implies --network allowlist).
        #[arg(long = "allow-domain", value_name = "DOMAIN")]
        allow_domain: Vec<String>,
        /// Wall-clock limit in seconds; the whole sandbox is killed after it (exit 124).
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
        /// Treat a layer as unavailable (testing; see `sandbox status`).
        #[arg(long = "disable-layer", value_name = "LAYER")]
        disable_layer: Vec<String>,
        /// The command and its arguments.
        #[arg(required = true, last = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
}

/// Runs a `sandbox` subcommand; the exit code is the command's (128+signal when killed).
pub fn run(cmd: SandboxCmd) -> ExitCode {
    match cmd {
        SandboxCmd::Status { json } => {
            // Ignore a closed stdout (`| head`).
            let _ = writeln!(std::io::stdout(), "{}", cli::status(json));
            ExitCode::SUCCESS
        }
        SandboxCmd::Run {
            settings,
            workspace,
            add_dir,
            network,
            allow_domain,
            timeout,
            disable_layer,
            command,
        } => {
            let opts = RunOptions {
                settings,
                workspace,
                add_dirs: add_dir,
                network: network.map(|n| match n {
                    NetworkArg::None => NetworkMode::None,
                    NetworkArg::Allowlist => NetworkMode::Allowlist,
                    NetworkArg::Full => NetworkMode::Full,
                }),
                allow_domains: allow_domain,
                timeout_secs: timeout,
                disable_layers: disable_layer,
            };
            let helper = match std::env::current_exe() {
                Ok(p) => toolgate_sandbox::helper_exe(&p),
                Err(e) => {
                    eprintln!("toolgate sandbox: cannot locate the toolgate binary: {e}");
                    return ExitCode::from(toolgate_sandbox::EXIT_SETUP_FAILED);
                }
            };
            match cli::run(&opts, &helper, &command) {
                Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(255)),
                Err(e) => {
                    eprintln!("toolgate sandbox: {e}");
                    ExitCode::from(toolgate_sandbox::EXIT_SETUP_FAILED)
                }
            }
        }
    }
}
