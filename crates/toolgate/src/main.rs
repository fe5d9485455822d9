//! The `toolgate` command line: the front doors to the gate.
//!
//! - `toolgate exec`: JSONL tool calls on stdin, JSONL results on stdout;
//! - `toolgate call NAME JSON`: one call;
//! - `toolgate tools`: the tool definitions of a session's view;
//! - `toolgate audit`: verify, tail and summarise audit logs;
//! - `toolgate sandbox`: the sandbox's status, and running any command in it.

mod alloc;
mod cli;
mod cmd;
mod output;
mod setup;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

#[global_allocator]
static ALLOCATOR: alloc::GateAllocator = alloc::GateAllocator;

/// Exit code for command-line usage errors (BSD `EX_USAGE`).
pub const EXIT_USAGE: u8 = 64;

fn main() -> ExitCode {
    // The sandbox helper is this binary re-executed; it must run before any thread or
    // runtime exists, so it is dispatched before anything else.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(toolgate_sandbox::HELPER_ARG))
    {
        return toolgate_sandbox::helper_main();
    }
    if let Some(code) = cmd::sandbox::fast_run() {
        return code;
    }
    // Before any thread or child exists: what an embedder handed us (`--prompt-fds`, or
    // anything else) stays ours, and our children cannot reach our descriptors through
    // /proc. `sandbox run` above is a plain command runner and passes descriptors on like
    // `env` does. See toolgate_core::child.
    let sealed = toolgate_core::child::seal_inherited_descriptors();
    let hidden = toolgate_core::child::hide_from_children();
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if is_hook_call(&e) => {
            let args: Vec<String> = std::env::args().collect();
            return cmd::hook::refuse_bad_arguments(&args, &e.to_string());
        }
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp
                | clap::error::ErrorKind::DisplayVersion
                | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
                _ => EXIT_USAGE,
            };
            // Printing help or an error can only fail on a closed stream; nothing to do then.
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    init_logging(cli.verbose);
    if let Err(e) = sealed {
        tracing::warn!(error = %e, "inherited descriptors could not be marked close-on-exec");
    }
    if let Err(e) = hidden {
        tracing::warn!(error = %e, "could not make the process non-dumpable");
    }
    cmd::run(cli)
}

/// Whether a command-line error is in the arguments of `toolgate hook` itself (not `hook
/// install`, not `--help`): Claude Code reads any exit but 2 as "no opinion", so those must
/// refuse the call instead of exiting 64.
fn is_hook_call(e: &clap::Error) -> bool {
    use clap::error::ErrorKind;
    let informational = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut words = args.iter().filter(|a| !a.starts_with('-'));
    !informational
        && words.next().is_some_and(|w| w == "hook")
        && words.next().is_none_or(|w| w != "install")
}

fn init_logging(verbose: u8) {
    // `-vv` is toolgate's own debug output; the libraries' (the shell parser prints its
    // whole syntax tree per command) only with `-vvv` or TOOLGATE_LOG.
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "info,toolgate=debug",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Logs go to stderr: stdout carries only protocol (exec, serve) or results.
    // Colour only for a person at a terminal: a log file or a pipe gets plain text.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}
