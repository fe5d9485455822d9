//! `toolgate exec`: JSONL tool calls on stdin, one JSONL result per call on stdout, in order.
//!
//! A line that is not a tool call gets an error result (`malformed_call`) and processing goes
//! on (the framing is [`toolgate_protocol::jsonl`]). When stdout is closed, nobody reads the results any more, so exec stops instead of
//! running further calls unseen.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use toolgate_core::Gate;
use toolgate_protocol::jsonl::{self, CallReader, Malformed};
use toolgate_protocol::wire::Format;

use crate::cli::{ExecArgs, ResultFormat};
use crate::cmd::{runtime, usage_error};
use crate::setup;

/// Runs `toolgate exec`.
pub fn run(args: ExecArgs) -> ExitCode {
    // stdin carries the calls, so nobody can be asked: asks are denied with a reason.
    let started = setup::live(
        &args.session,
        Some(&args.audit),
        setup::Prompting::Deny,
        args.watch.watch,
    );
    let (live, gate) = match started {
        Ok((live, built)) => (live, built.gate),
        Err(e) => return usage_error("exec", e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolgate exec: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // Polls on the runtime's workers, between and during calls; ends with the runtime.
    if args.watch.watch {
        rt.spawn(live.watch(args.watch.watch_interval));
    }
    let format = match args.format {
        ResultFormat::Anthropic => Format::Anthropic,
        ResultFormat::Openai => Format::OpenAi,
    };
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match serve(&rt, &gate, &mut input, &mut out, format) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("toolgate exec: {e}; stopping");
            ExitCode::from(1)
        }
    }
}

/// The exec loop over any reader and writer.
pub fn serve(
    rt: &tokio::runtime::Runtime,
    gate: &Gate,
    input: &mut impl BufRead,
    out: &mut impl Write,
    format: Format,
) -> io::Result<()> {
    let mut calls = CallReader::new(input);
    while let Some(line) = calls.next_call()? {
        let result = match line {
            Ok(call) => rt.block_on(gate.execute(call)),
            Err(malformed) => {
                let Malformed { call, error } = *malformed;
                gate.reject(call, error)
            }
        };
        let line = jsonl::result_line_for(&result, format, calls.last_was_responses());
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(())
}
