//! The JSON-lines call stream of `toolgate exec`: one tool call per line, in any shape
//! [`wire::parse_call`](crate::wire::parse_call) accepts.
//!
//! Framing and decoding live here, apart from the command, so that they can be tested and
//! fuzzed without a process (`fuzz/fuzz_targets/exec_jsonl.rs`). The reader never fails on
//! what a line holds: a line that is not a tool call becomes a [`Malformed`] value carrying
//! the `malformed_call` error to answer it with (and the call's id when one could be read),
//! and reading goes on. Only the reader itself failing is an [`io::Error`].
//!
//! ```
//! use toolgate_protocol::jsonl::CallReader;
//!
//! let input = b"{\"name\":\"Read\",\"input\":{\"file_path\":\"a\"}}\n\n{nope\n";
//! let mut reader = CallReader::new(&input[..]);
//! let first = reader.next_call().unwrap().unwrap();
//! assert_eq!(first.unwrap().name, "Read");
//! let second = reader.next_call().unwrap().unwrap(); // the blank line is skipped
//! assert!(second.unwrap_err().error.message.contains("line 3"));
//! assert!(reader.next_call().unwrap().is_none());
//! ```

use std::io::{self, BufRead};

use serde_json::{Value, json};

use crate::wire::{self, Format};
use crate::{CallError, CallResult, ErrorCode, Stage, ToolCall};

/// Longest accepted input line. Longer lines are skipped (to their newline) and answered
/// with `malformed_call`, so one runaway line cannot exhaust memory; the gate's own input
/// cap (8 MiB) applies below this.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// A line that is not a tool call: the stand-in call to record it under (its id when the
/// line had one, no name) and the `malformed_call` error that answers it.
#[derive(Debug, Clone)]
pub struct Malformed {
    /// The call the error is recorded for.
    pub call: ToolCall,
    /// What was wrong, naming the line.
    pub error: CallError,
}

/// Reads tool calls from a JSON-lines stream; blank lines are skipped.
#[derive(Debug)]
pub struct CallReader<R> {
    input: R,
    cap: usize,
    line_no: u64,
    buf: Vec<u8>,
    /// The last line was an OpenAI Responses `function_call` item.
    responses: bool,
}

impl<R: BufRead> CallReader<R> {
    /// A reader with the [`MAX_LINE_BYTES`] line limit.
    pub fn new(input: R) -> Self {
        Self::with_line_limit(input, MAX_LINE_BYTES)
    }

    /// A reader that skips lines longer than `cap` bytes (newline excluded).
    pub fn with_line_limit(input: R, cap: usize) -> Self {
        Self {
            input,
            cap,
            line_no: 0,
            buf: Vec::new(),
            responses: false,
        }
    }

    /// Whether the last call read was an OpenAI Responses `function_call` item (`"type":
    /// "function_call"`), which is answered with a `function_call_output` item rather than
    /// a Chat Completions `role: tool` message.
    pub fn last_was_responses(&self) -> bool {
        self.responses
    }

    /// The number of the last line read (1-based; blank lines count).
    pub fn line_no(&self) -> u64 {
        self.line_no
    }

    /// The next call, or the error answering a malformed line; `None` at end of input.
    pub fn next_call(&mut self) -> io::Result<Option<Result<ToolCall, Box<Malformed>>>> {
        loop {
            self.buf.clear();
            let Some(fits) = read_line_capped(&mut self.input, &mut self.buf, self.cap)? else {
                return Ok(None);
            };
            self.line_no += 1;
            if fits && self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let (call, responses) = parse_line(&self.buf, fits, self.cap, self.line_no);
            self.responses = responses;
            return Ok(Some(call));
        }
    }
}

/// One result line of `toolgate exec` (without its newline): the API's result object in
/// `format` plus a `"toolgate"` summary.
pub fn result_line(result: &CallResult, format: Format) -> String {
    let mut value = wire::result(result, format);
    if let Some(obj) = value.as_object_mut() {
        obj.insert("toolgate".into(), wire::gate_summary(result));
    }
    value.to_string()
}

/// [`result_line`], answering an OpenAI Responses `function_call` item (`responses`, see
/// [`CallReader::last_was_responses`]) with a `function_call_output` item when `format` is
/// OpenAI: each API's call is answered in its own shape.
pub fn result_line_for(result: &CallResult, format: Format, responses: bool) -> String {
    if !(responses && format == Format::OpenAi) {
        return result_line(result, format);
    }
    let mut value = wire::responses_output(result);
    if let Some(obj) = value.as_object_mut() {
        obj.insert("toolgate".into(), wire::gate_summary(result));
    }
    value.to_string()
}

fn malformed(line_no: u64, id: String, message: String) -> Box<Malformed> {
    let error = CallError::new(
        ErrorCode::MalformedCall,
        Stage::Resolve,
        format!("line {line_no}: {message}"),
    )
    .with_details(json!({ "line": line_no }));
    Box::new(Malformed {
        call: ToolCall::new(id, "", Value::Null),
        error,
    })
}

/// The line's call (or the error answering it), and whether it was a Responses
/// `function_call` item.
fn parse_line(
    buf: &[u8],
    fits: bool,
    cap: usize,
    line_no: u64,
) -> (Result<ToolCall, Box<Malformed>>, bool) {
    let mut responses = false;
    let call = parse_value(buf, fits, cap, line_no, &mut responses);
    (call, responses)
}

fn parse_value(
    buf: &[u8],
    fits: bool,
    cap: usize,
    line_no: u64,
    responses: &mut bool,
) -> Result<ToolCall, Box<Malformed>> {
    if !fits {
        return Err(malformed(
            line_no,
            String::new(),
            format!("the line is longer than {cap} bytes and was skipped"),
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
    *responses = value.get("type").and_then(Value::as_str) == Some("function_call");
    wire::parse_call(&value).map_err(|e| {
        let id = ["id", "call_id"]
            .iter()
            .find_map(|k| value.get(*k).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        malformed(line_no, id, e.to_string())
    })
}

/// Reads one line (without its newline and a `\r` before it) into `buf`, keeping at most
/// `cap` bytes. Returns `None` at end of input, `Some(true)` for a whole line, `Some(false)`
/// when the line was longer than `cap` (the rest is consumed and dropped).
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
        let e = parse_line(b"\xff\xfe", true, 10, 3).0.unwrap_err().error;
        assert!(e.message.contains("line 3") && e.message.contains("UTF-8"));
        let e = parse_line(b"{nope", true, 10, 1).0.unwrap_err().error;
        assert!(e.message.contains("not valid JSON"));
        let m = parse_line(br#"{"type":"tool_use","id":"t9","input":{}}"#, true, 99, 2)
            .0
            .unwrap_err();
        assert_eq!(m.call.id, "t9");
        assert!(m.error.message.contains("`name`"));
        let e = parse_line(b"", false, 64, 4).0.unwrap_err().error;
        assert!(e.message.contains("longer than 64 bytes"), "{}", e.message);
    }

    #[test]
    fn responses_items_are_told_apart_even_when_malformed() {
        let line = br#"{"type":"function_call","call_id":"r1","name":"Read","arguments":"{}"}"#;
        assert!(parse_line(line, true, 999, 1).1);
        let bad = br#"{"type":"function_call","call_id":"r2","name":"Read","arguments":"no"}"#;
        let (call, responses) = parse_line(bad, true, 999, 2);
        assert!(call.is_err() && responses);
        let chat = br#"{"id":"c","type":"function","function":{"name":"Read","arguments":"{}"}}"#;
        assert!(!parse_line(chat, true, 999, 3).1);
    }

    #[test]
    fn the_reader_counts_blank_lines_and_goes_on_after_bad_ones() {
        let input = b"\n  \r\n{\"name\":\"A\"}\n[1]\n\xff\n{\"name\":\"B\",\"id\":\"x\"}";
        let mut r = CallReader::with_line_limit(&input[..], 1024);
        let a = r.next_call().unwrap().unwrap().unwrap();
        assert_eq!((a.name.as_str(), r.line_no()), ("A", 3));
        let e = r.next_call().unwrap().unwrap().unwrap_err();
        assert!(
            e.error.message.starts_with("line 4:"),
            "{}",
            e.error.message
        );
        assert_eq!(e.error.code, ErrorCode::MalformedCall);
        let e = r.next_call().unwrap().unwrap().unwrap_err();
        assert!(e.error.message.contains("UTF-8"));
        let b = r.next_call().unwrap().unwrap().unwrap();
        assert_eq!((b.name.as_str(), b.id.as_str()), ("B", "x"));
        assert!(r.next_call().unwrap().is_none());
    }
}
