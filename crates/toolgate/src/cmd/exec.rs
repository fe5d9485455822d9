//! `toolgate exec`: JSONL tool calls on stdin, one JSONL result per call on stdout, in order.
//!
//! A line that is not a tool call gets an error result (`malformed_call`) and processing goes
//! on. When stdout is closed, nobody reads the results any more, so exec stops instead of
//! running further calls unseen.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use serde_json::{Value, json};
use toolgate_core::Gate;
use toolgate_protocol::wire::{self, Format};
use toolgate_protocol::{CallError, CallResult, ErrorCode, Stage, ToolCall};

use crate::cli::{ExecArgs, ResultFormat};
use crate::cmd::{runtime, usage_error};
use crate::setup;

/// Longest accepted input line. Longer lines are skipped (to their newline) and answered
/// with `malformed_call`, so one runaway line cannot exhaust memory; the gate's own input
/// cap (8 MiB) applies below this.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

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
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let Some(fits) = read_line_capped(input, &mut buf, MAX_LINE_BYTES)? else {
            return Ok(());
        };
        line_no += 1;
        if fits && buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let result = match parse_line(&buf, fits, line_no) {
            Ok(call) => rt.block_on(gate.execute(call)),
            Err(failure) => {
                let (call, err) = *failure;
                gate.reject(call, err)
            }
        };
        let line = render(&result, format);
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
}

/// One result line: the API's result object plus a `"toolgate"` summary.
pub fn render(result: &CallResult, format: Format) -> String {
    let mut value = wire::result(result, format);
    if let Some(obj) = value.as_object_mut() {
        obj.insert("toolgate".into(), wire::gate_summary(result));
    }
    value.to_string()
}

fn malformed(line_no: u64, id: String, message: String) -> Box<(ToolCall, CallError)> {
    let err = CallError::new(
        ErrorCode::MalformedCall,
        Stage::Resolve,
        format!("line {line_no}: {message}"),
    )
    .with_details(json!({ "line": line_no }));
    Box::new((ToolCall::new(id, "", Value::Null), err))
}

fn parse_line(
    buf: &[u8],
    fits: bool,
    line_no: u64,
) -> Result<ToolCall, Box<(ToolCall, CallError)>> {
    if !fits {
        return Err(malformed(
            line_no,
            String::new(),
            format!("the line is longer than {MAX_LINE_BYTES} bytes and was skipped"),
        ));
    }
    let text = std::str::from_utf8(buf).map_err(|e| {
        malformed(
            line_no,
            String::new(),
            format!("the line is not valid UTF-8 ({e})"),
        )
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        malformed(
            line_no,
            String::new(),
            format!("the line is not valid JSON ({e})"),
        )
    })?;
    wire::parse_call(&value).map_err(|e| {
        let id = ["id", "call_id"]
            .iter()
            .find_map(|k| value.get(*k).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        malformed(line_no, id, e.to_string())
    })
}

/// Reads one line (without its newline) into `buf`, keeping at most `cap` bytes. Returns
/// `None` at end of input, `Some(true)` for a whole line, `Some(false)` when the line was
/// longer than `cap` (the rest is consumed and dropped).
fn read_line_capped(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<bool>> {
    let mut fits = true;
    let mut read_any = false;
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(read_any.then_some(fits));
        }
        read_any = true;
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if fits {
            if buf.len() + chunk.len() > cap {
                fits = false;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let consumed = done.unwrap_or(available.len());
        input.consume(consumed);
        if done.is_some() {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Some(fits));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_reader_splits_and_skips() {
        let data = b"short\nthis line is too long\r\nok\nlast";
        let mut r = io::BufReader::with_capacity(4, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line_capped(&mut r, &mut buf, 10).unwrap(), Some(true));
        assert_eq!(buf, b"short");
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 10).unwrap(), Some(false));
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 10).unwrap(), Some(true));
        assert_eq!(buf, b"ok");
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 10).unwrap(), Some(true));
        assert_eq!(buf, b"last");
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 10).unwrap(), None);
    }

    #[test]
    fn malformed_lines_name_the_problem() {
        let e = parse_line(b"\xff\xfe", true, 3).unwrap_err().1;
        assert!(e.message.contains("line 3") && e.message.contains("UTF-8"));
        let e = parse_line(b"{nope", true, 1).unwrap_err().1;
        assert!(e.message.contains("not valid JSON"));
        let (call, e) =
            *parse_line(br#"{"type":"tool_use","id":"t9","input":{}}"#, true, 2).unwrap_err();
        assert_eq!(call.id, "t9");
        assert!(e.message.contains("`name`"));
    }
}
