//! The only door to brush-parser: tokenise and parse with panics contained.

use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::word::WordPieceWithSource;

/// Whether `raw` has a run of 19+ digits, which overflows brush-parser's brace sequence numbers.
pub(crate) fn has_huge_number(raw: &str) -> bool {
    longest_digit_run(raw, |_| true, |_| true) >= 19
}
use brush_parser::{ParserOptions, ast, parse_tokens, uncached_tokenize_str};

/// Parser options: bash mode, extglob on (as brush's own shell), tilde at word start.
pub(crate) fn options() -> ParserOptions {
    ParserOptions::default()
}

/// Length of the longest run of ASCII digits for which `follows` holds on the next byte,
/// and for which `precedes` holds on the byte before the run.
fn longest_digit_run(
    text: &str,
    precedes: impl Fn(Option<u8>) -> bool,
    follows: impl Fn(Option<u8>) -> bool,
) -> usize {
    let b = text.as_bytes();
    let mut best = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let before = start.checked_sub(1).map(|j| b[j]);
            if precedes(before) && follows(b.get(i).copied()) {
                best = best.max(i - start);
            }
        } else {
            i += 1;
        }
    }
    best
}

/// Inputs known to make brush-parser 0.4 panic (an `unwrap` on an integer parse); bash rejects
/// them too, so they are reported as parse errors without calling the parser.
fn known_parser_panic(text: &str) -> Option<&'static str> {
    // `99999999999>x`: a redirect file descriptor that overflows i32.
    if longest_digit_run(text, |_| true, |n| matches!(n, Some(b'<' | b'>'))) >= 10 {
        return Some("file descriptor number out of range");
    }
    // `$(:(<< )`: a here-document without a delimiter inside a substitution makes the
    // tokenizer loop while allocating (found by fuzzing).
    if (text.contains("$(") || text.contains('`')) && heredoc_without_delimiter(text) {
        return Some("here-document without a delimiter inside a substitution");
    }
    None
}

/// Whether some `<<` / `<<-` (not `<<<`) is followed by no delimiter word, or an empty quoted one.
fn heredoc_without_delimiter(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(p) = text[i..].find("<<") {
        let mut j = i + p + 2;
        i = j;
        if b.get(j) == Some(&b'<') {
            i = j + 1;
            continue;
        }
        if b.get(j) == Some(&b'-') {
            j += 1;
        }
        while matches!(b.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        let rest = &b[j.min(b.len())..];
        if rest.is_empty()
            || matches!(
                rest[0],
                b')' | b';' | b'&' | b'|' | b'\n' | b'(' | b'<' | b'>'
            )
            || rest.starts_with(b"''")
            || rest.starts_with(b"\"\"")
        {
            return true;
        }
    }
    false
}

/// Parses a whole program. Errors and parser panics become a message for the opaque list.
pub(crate) fn parse_program(text: &str) -> Result<ast::Program, String> {
    if let Some(why) = known_parser_panic(text) {
        return Err(why.to_owned());
    }
    let opts = options();
    let res = catch_unwind(AssertUnwindSafe(|| {
        let tokens = uncached_tokenize_str(text, &opts.tokenizer_options())
            .map_err(|e| format!("tokenizer: {e}"))?;
        parse_tokens(&tokens, &opts).map_err(|e| format!("{e}"))
    }));
    match res {
        Ok(r) => r,
        Err(_) => Err("the parser failed on this input".to_owned()),
    }
}

/// `~+N` / `~-N` with a directory-stack index that overflows (brush-parser unwraps it).
fn huge_tilde_index(raw: &str) -> bool {
    raw.contains('~')
        && longest_digit_run(raw, |p| matches!(p, Some(b'+' | b'-' | b'~')), |_| true) >= 19
}

/// Word text the word parser must not see (it panics or backtracks exponentially on it).
fn word_trap(raw: &str) -> Option<String> {
    if huge_tilde_index(raw) {
        return Some("directory stack index out of range".to_owned());
    }
    let braces = crate::normalize::unclosed_braces(raw);
    if braces > crate::normalize::MAX_UNCLOSED_PARENS {
        return Some(format!(
            "{braces} unclosed `{{` (the parser is not run on such input)"
        ));
    }
    let open = crate::normalize::unclosed_substitutions(raw);
    (open > crate::normalize::MAX_UNCLOSED_PARENS)
        .then(|| format!("{open} unclosed `$(` (the parser is not run on such input)"))
}

/// Splits a word into its pieces (quotes, expansions, substitutions).
pub(crate) fn parse_word(raw: &str) -> Result<Vec<WordPieceWithSource>, String> {
    if let Some(why) = word_trap(raw) {
        return Err(why);
    }
    let opts = options();
    match catch_unwind(AssertUnwindSafe(|| brush_parser::word::parse(raw, &opts))) {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(format!("{e}")),
        Err(_) => Err("the word parser failed".to_owned()),
    }
}

/// Splits a here-document body (quotes are literal there) into pieces.
pub(crate) fn parse_heredoc(raw: &str) -> Result<Vec<WordPieceWithSource>, String> {
    if let Some(why) = word_trap(raw) {
        return Err(why);
    }
    let opts = options();
    match catch_unwind(AssertUnwindSafe(|| {
        brush_parser::word::parse_heredoc(raw, &opts)
    })) {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(format!("{e}")),
        Err(_) => Err("the here-document parser failed".to_owned()),
    }
}
