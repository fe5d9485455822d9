//! The line format and its chain for stores other than the file: a store that keeps a
//! chain of its own (PostgreSQL keeps one per session) builds its lines with [`build`] and
//! checks them with [`Verifier`], so a stored line verifies exactly as a line in the file.

use crate::TamperKind;
use crate::line;

pub use crate::line::GENESIS_HASH;

/// The line (without `\n`) for record `record_json` (a compact JSON object, as
/// [`Shipped::body`](crate::ship::Shipped::body) returns) at `seq` after `prev`, and its
/// hash.
pub fn build(seq: u64, prev: &str, record_json: &[u8]) -> (String, String) {
    let mut buf = Vec::with_capacity(record_json.len() + line::ENVELOPE_BYTES);
    let hash = line::build_into(&mut buf, seq, prev, record_json);
    buf.pop();
    (String::from_utf8_lossy(&buf).into_owned(), hash)
}

/// Why a line breaks a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// What kind of break.
    pub kind: TamperKind,
    /// In words.
    pub detail: String,
}

/// Checks lines in chain order: each must be valid on its own and follow the one before.
#[derive(Debug, Clone)]
pub struct Verifier {
    seq: u64,
    head: String,
}

impl Default for Verifier {
    fn default() -> Self {
        Self {
            seq: 0,
            head: GENESIS_HASH.to_owned(),
        }
    }
}

impl Verifier {
    /// A chain with no line yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next line (without `\n`); returns its hash.
    pub fn push(&mut self, text: &[u8]) -> Result<String, Broken> {
        let meta = line::check(text).map_err(|f| Broken {
            kind: f.kind,
            detail: f.detail,
        })?;
        if meta.prev != self.head {
            return Err(Broken {
                kind: TamperKind::PrevMismatch,
                detail: format!(
                    "`prev` is {} but the record before has hash {}: a record before this one \
                     was removed, inserted or moved",
                    meta.prev, self.head
                ),
            });
        }
        if meta.seq != self.seq + 1 {
            return Err(Broken {
                kind: TamperKind::SeqMismatch,
                detail: format!("`seq` is {} but {} was expected", meta.seq, self.seq + 1),
            });
        }
        self.seq = meta.seq;
        self.head.clone_from(&meta.hash);
        Ok(meta.hash)
    }

    /// `seq` and hash of the last line taken.
    pub fn head(&self) -> (u64, &str) {
        (self.seq, &self.head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_lines_verify_and_edits_do_not() {
        let mut v = Verifier::new();
        let (a, ha) = build(1, GENESIS_HASH, br#"{"tool":"Read"}"#);
        let (b, hb) = build(2, &ha, br#"{"tool":"Bash"}"#);
        assert_eq!(v.push(a.as_bytes()), Ok(ha.clone()));
        assert_eq!(v.push(b.as_bytes()), Ok(hb.clone()));
        assert_eq!(v.head(), (2, hb.as_str()));
        let mut v = Verifier::new();
        assert_eq!(
            v.push(b.as_bytes()).map_err(|e| e.kind),
            Err(TamperKind::PrevMismatch)
        );
        let edited = a.replace("Read", "Edit");
        assert_eq!(
            Verifier::new().push(edited.as_bytes()).map_err(|e| e.kind),
            Err(TamperKind::BadHash)
        );
    }
}
