//! The small stand-alone sandbox binary, installed next to `toolgate`:
//!
//! - `toolgate-sandbox-helper run [OPTIONS] -- CMD…` is `toolgate sandbox run` (same options,
//!   same behaviour) without the large `toolgate` binary's start-up (≈1 ms less per run);
//! - `toolgate-sandbox-helper status [--json]` is `toolgate sandbox status`;
//! - with [`toolgate_sandbox::HELPER_ARG`] it is the helper that `toolgate` and the gate
//!   start for each sandboxed command ([`toolgate_sandbox::helper_main`]).

use std::io::Write;
use std::process::ExitCode;

use toolgate_sandbox::cli;

/// BSD `EX_USAGE`, as `toolgate` uses for usage errors.
const EXIT_USAGE: u8 = 64;

const USAGE: &str = "usage: toolgate-sandbox-helper run [OPTIONS] -- CMD...\n       \
                     toolgate-sandbox-helper status [--json]";

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let exe = args.next().unwrap_or_default();
    let sub = args.next();
    match sub.as_ref().and_then(|s| s.to_str()) {
        Some(toolgate_sandbox::HELPER_ARG) => toolgate_sandbox::helper_main(),
        Some("run") => match cli::parse_run(std::iter::once(exe).chain(args)) {
            Ok(parsed) => cli::run_main(parsed, std::env::current_exe()),
            Err(e) => {
                let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
                // Only a closed stream can make printing fail; nothing to do then.
                let _ = e.print();
                ExitCode::from(code)
            }
        },
        Some("status") => {
            let json = match args.next() {
                None => false,
                Some(a) if a == "--json" && args.next().is_none() => true,
                Some(_) => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(EXIT_USAGE);
                }
            };
            let _ = writeln!(std::io::stdout(), "{}", cli::status(json));
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
