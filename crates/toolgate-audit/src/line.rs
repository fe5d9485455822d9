//! The on-disk line format, shared by the writer and the verifier.
//!
//! A record `{...}` with sequence number `N` and previous hash `P` is written as
//!
//! ```text
//! body = {"seq":N,"prev":"P",...record fields...}
//! line = body without its final `}` + ,"hash":"H"}\n     where H = hex(sha256(body))
//! ```
//!
//! The verifier recomputes `H` from the raw bytes (strip the fixed-length hash suffix, put the
//! `}` back), so no re-serialization is involved and field order or number formatting can
//! never make a good line look bad.

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Write as _;

use crate::TamperKind;

/// The `prev` of the first record: 64 zeros.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Length of a hex sha256.
const HEX_LEN: usize = 64;
const SEQ_PREFIX: &[u8] = b"{\"seq\":";
const PREV_PREFIX: &[u8] = b",\"prev\":\"";
const HASH_PREFIX: &[u8] = b",\"hash\":\"";
/// `,"hash":"<64 hex>"}`
const SUFFIX_LEN: usize = HASH_PREFIX.len() + HEX_LEN + 2;
/// Bytes the envelope adds to a record, beyond the digits of `seq`: used for size checks.
pub(crate) const ENVELOPE_BYTES: usize =
    SEQ_PREFIX.len() + 20 + PREV_PREFIX.len() + HEX_LEN + 2 + SUFFIX_LEN + 1;

/// What a valid line says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineMeta {
    pub seq: u64,
    pub prev: String,
    pub hash: String,
    /// Present when the record is a writer's recovery record.
    pub recovery: Option<Recovery>,
}

/// The torn fragment a recovery record names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recovery {
    pub torn_offset: u64,
    pub torn_bytes: u64,
    pub torn_sha256: String,
}

/// Why a line is not a valid record on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineFault {
    pub kind: TamperKind,
    pub detail: String,
}

impl LineFault {
    fn unparseable(detail: impl Into<String>) -> Self {
        Self {
            kind: TamperKind::Unparseable,
            detail: detail.into(),
        }
    }
}

/// Builds the full line (with `\n`) for `record_json`, which must be a compact JSON object
/// without raw newlines (as `serde_json::to_vec` of an object produces). Returns the line and
/// its hash.
#[cfg(test)]
pub(crate) fn build(seq: u64, prev: &str, record_json: &[u8]) -> (Vec<u8>, String) {
    let mut buf = Vec::with_capacity(record_json.len() + ENVELOPE_BYTES);
    let hash = build_into(&mut buf, seq, prev, record_json);
    (buf, hash)
}

/// [`build`], appending the line to `buf` (which may already hold other lines).
pub(crate) fn build_into(buf: &mut Vec<u8>, seq: u64, prev: &str, record_json: &[u8]) -> String {
    let start = buf.len();
    buf.extend_from_slice(SEQ_PREFIX);
    // Writing an integer into a Vec cannot fail.
    let _ = write!(buf, "{seq}");
    buf.extend_from_slice(PREV_PREFIX);
    buf.extend_from_slice(prev.as_bytes());
    buf.push(b'"');
    match record_json.get(1..) {
        Some(rest) if record_json != b"{}" => {
            buf.push(b',');
            buf.extend_from_slice(rest);
        }
        _ => buf.push(b'}'),
    }
    let hash = hex::encode(Sha256::digest(&buf[start..]));
    buf.pop();
    buf.extend_from_slice(HASH_PREFIX);
    buf.extend_from_slice(hash.as_bytes());
    buf.extend_from_slice(b"\"}\n");
    hash
}

/// The record a valid line carries, as it was given to [`build`]: the bytes between the
/// envelope's `prev` and `hash`, in braces. `{}` for a line that is not one.
pub(crate) fn record_json(line: &[u8]) -> Vec<u8> {
    let body = line
        .strip_prefix(SEQ_PREFIX)
        .and_then(|rest| {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            rest.get(digits + PREV_PREFIX.len() + HEX_LEN + 1..)
        })
        .and_then(|rest| rest.get(..rest.len().checked_sub(SUFFIX_LEN)?));
    match body.and_then(|b| b.strip_prefix(b",")) {
        Some(fields) => {
            let mut out = Vec::with_capacity(fields.len() + 2);
            out.push(b'{');
            out.extend_from_slice(fields);
            out.push(b'}');
            out
        }
        None => b"{}".to_vec(),
    }
}

/// Whether an incomplete last line could be a record cut short by a crash: a prefix of
/// what the writer writes (it starts like a record and is valid UTF-8 except perhaps for a
/// character cut in half at its end). Anything else at the end of a log is not a crash.
pub(crate) fn plausible_fragment(bytes: &[u8]) -> bool {
    if bytes.is_empty() || bytes.len() > crate::MAX_LINE_BYTES {
        return false;
    }
    if bytes.len() <= SEQ_PREFIX.len() {
        return SEQ_PREFIX.starts_with(bytes);
    }
    bytes.starts_with(SEQ_PREFIX)
        && match std::str::from_utf8(bytes) {
            Ok(_) => true,
            Err(e) => e.error_len().is_none(),
        }
}

/// The hex sha256 of arbitrary bytes (used to pin a torn fragment).
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn is_lower_hex(bytes: &[u8]) -> bool {
    bytes.len() == HEX_LEN && bytes.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Only the fields the verifier needs; everything else is skipped (but still syntax-checked).
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    kind: Option<Value>,
    #[serde(default)]
    torn_offset: Option<Value>,
    #[serde(default)]
    torn_bytes: Option<Value>,
    #[serde(default)]
    torn_sha256: Option<Value>,
}

/// Checks one line (without its `\n`) on its own: envelope shape, UTF-8, hash, JSON syntax.
/// Chain checks (`seq`, `prev` against the line before) are the caller's.
pub(crate) fn check(line: &[u8]) -> Result<LineMeta, LineFault> {
    let len = line.len();
    if len < SEQ_PREFIX.len() + PREV_PREFIX.len() + HEX_LEN + 1 + SUFFIX_LEN
        || !line.starts_with(SEQ_PREFIX)
    {
        return Err(LineFault::unparseable(
            "not an audit record: expected a line starting with {\"seq\":",
        ));
    }
    let split = len - SUFFIX_LEN;
    let suffix = &line[split..];
    let hash = &suffix[HASH_PREFIX.len()..HASH_PREFIX.len() + HEX_LEN];
    if !suffix.starts_with(HASH_PREFIX) || !suffix.ends_with(b"\"}") || !is_lower_hex(hash) {
        return Err(LineFault::unparseable(
            "not an audit record: expected a line ending with ,\"hash\":\"<64 hex digits>\"}",
        ));
    }
    // seq digits
    let rest = &line[SEQ_PREFIX.len()..split];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let seq = std::str::from_utf8(&rest[..digits])
        .ok()
        .filter(|d| !(d.len() > 1 && d.starts_with('0')))
        .and_then(|d| d.parse::<u64>().ok())
        .ok_or_else(|| LineFault::unparseable("`seq` is not a plain unsigned integer"))?;
    let rest = &rest[digits..];
    let prev = rest
        .strip_prefix(PREV_PREFIX)
        .and_then(|r| r.get(..HEX_LEN + 1))
        .filter(|p| p[HEX_LEN] == b'"' && is_lower_hex(&p[..HEX_LEN]))
        .map(|p| &p[..HEX_LEN])
        .ok_or_else(|| {
            LineFault::unparseable("expected `\"prev\":\"<64 hex digits>\"` right after `seq`")
        })?;
    let text = std::str::from_utf8(line)
        .map_err(|e| LineFault::unparseable(format!("not valid UTF-8 ({e})")))?;
    let mut hasher = Sha256::new();
    hasher.update(&line[..split]);
    hasher.update(b"}");
    let computed = hex::encode(hasher.finalize());
    if computed.as_bytes() != hash {
        return Err(LineFault {
            kind: TamperKind::BadHash,
            detail: format!(
                "the line's content does not match its hash (stored {}, computed {computed}): \
                 it was edited",
                String::from_utf8_lossy(hash)
            ),
        });
    }
    let peek: Peek = serde_json::from_str(text)
        .map_err(|e| LineFault::unparseable(format!("not a JSON object ({e})")))?;
    let recovery = match (
        &peek.kind,
        peek.torn_offset,
        peek.torn_bytes,
        peek.torn_sha256,
    ) {
        (Some(Value::String(k)), Some(o), Some(b), Some(Value::String(h))) if k == "recovery" => o
            .as_u64()
            .zip(b.as_u64())
            .map(|(torn_offset, torn_bytes)| Recovery {
                torn_offset,
                torn_bytes,
                torn_sha256: h,
            }),
        _ => None,
    };
    Ok(LineMeta {
        seq,
        prev: String::from_utf8_lossy(prev).into_owned(),
        hash: computed,
        recovery,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip_nl(line: &[u8]) -> &[u8] {
        line.strip_suffix(b"\n").unwrap()
    }

    #[test]
    fn build_then_check_round_trips() {
        let (line, hash) = build(7, GENESIS_HASH, br#"{"kind":"call","n":1}"#);
        assert!(line.ends_with(b"\"}\n"));
        let meta = check(strip_nl(&line)).unwrap();
        assert_eq!(meta.seq, 7);
        assert_eq!(meta.prev, GENESIS_HASH);
        assert_eq!(meta.hash, hash);
        assert_eq!(meta.recovery, None);
        let v: Value = serde_json::from_slice(&line).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["seq", "prev", "kind", "n", "hash"]);
    }

    #[test]
    fn the_record_comes_back_out_of_its_line() {
        for record in [
            &br#"{"kind":"call","n":1,"s":"a,\"hash\":\"x\"}"}"#[..],
            b"{}",
        ] {
            let (line, _) = build(12345, GENESIS_HASH, record);
            assert_eq!(record_json(strip_nl(&line)), record);
        }
        assert_eq!(record_json(b"garbage"), b"{}");
    }

    #[test]
    fn empty_record_is_fine() {
        let (line, _) = build(1, GENESIS_HASH, b"{}");
        let meta = check(strip_nl(&line)).unwrap();
        assert_eq!(meta.seq, 1);
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 3);
    }

    #[test]
    fn edits_are_bad_hash_and_garbage_is_unparseable() {
        let (line, _) = build(1, GENESIS_HASH, br#"{"tool":"Bash"}"#);
        let edited = String::from_utf8(line.clone())
            .unwrap()
            .replace("Bash", "Read");
        assert_eq!(
            check(strip_nl(edited.as_bytes())).unwrap_err().kind,
            TamperKind::BadHash
        );
        assert!(plausible_fragment(b"{\"se"));
        assert!(plausible_fragment(&line[..line.len() / 2]));
        assert!(plausible_fragment(
            "{\"seq\":1,\"x\":\"\u{e9}"
                .as_bytes()
                .split_last()
                .unwrap()
                .1
        ));
        assert!(!plausible_fragment(b"garbage"));
        assert!(!plausible_fragment(b""));
        assert!(!plausible_fragment(b"{\"seq\":1,\xff\xfe,"));
        for garbage in [
            &b""[..],
            b"{}",
            b"hello",
            b"\xff\xfe\x00",
            &line[..line.len() / 2],
            b"{\"seq\":01,\"prev\":\"0000\"}",
        ] {
            assert_eq!(check(garbage).unwrap_err().kind, TamperKind::Unparseable);
        }
    }
}
