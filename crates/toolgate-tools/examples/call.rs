//! A minimal `call NAME JSON` runner over the file tools only, for benchmarks when the
//! `toolgate` binary is not built: `call [--workspace DIR] [--audit FILE] NAME JSON`
//! (`--audit` is accepted and ignored, so the bench script can pass the same flags).
//! Prints the result text; exits 1 when the call failed.

use std::process::ExitCode;

use toolgate_core::{Gate, Registry};
use toolgate_protocol::ToolCall;
use toolgate_tools::{FileToolsConfig, register_file_tools};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("call") {
        args.next();
    }
    let mut workspace = String::from(".");
    let mut rest = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--workspace" | "-w" => workspace = args.next().unwrap_or_default(),
            "--audit" => {
                args.next();
            }
            "--no-audit" | "--json" => {}
            _ => rest.push(a),
        }
    }
    let [name, input] = rest.as_slice() else {
        eprintln!("usage: call [--workspace DIR] NAME JSON");
        return ExitCode::from(64);
    };
    let input: serde_json::Value = match serde_json::from_str(input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("the input must be JSON: {e}");
            return ExitCode::from(64);
        }
    };
    let registry =
        match register_file_tools(Registry::builder(), &FileToolsConfig::default()).build() {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(1);
            }
        };
    let gate = match Gate::builder()
        .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
        .workspace(&workspace)
        .registry(registry)
        .build()
    {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(64);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let result = rt.block_on(gate.execute(ToolCall::new("bench", name.as_str(), input)));
    println!("{}", result.model_text());
    if result.is_error() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
