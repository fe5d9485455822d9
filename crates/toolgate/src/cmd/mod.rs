//! The subcommands.

pub mod audit;
mod call;
pub mod check;
pub mod config;
mod exec;
pub mod hook;
pub mod mcp;
pub mod sandbox;
pub mod serve;
mod tools;
pub mod trust;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Exec(args) => exec::run(args),
        Command::Call(args) => call::run(args),
        Command::Tools(args) => tools::run(args),
        Command::Check(args) => check::run(args),
        Command::Config(args) => config::run(args),
        Command::Trust(args) => trust::run(args),
        Command::Audit(cmd) => audit::run(cmd),
        Command::Sandbox(cmd) => sandbox::run(cmd),
        Command::Hook(args) => hook::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Mcp(cmd) => mcp::run(cmd),
    }
}

/// A multi-threaded runtime for the gate; shared tools in a batch run in parallel on it.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

/// Prints a usage-class error and returns exit code 64.
pub fn usage_error(command: &str, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("toolgate {command}: {message}");
    ExitCode::from(crate::EXIT_USAGE)
}
