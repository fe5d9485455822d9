//! The only door to brush-parser: tokenise and parse with panics contained.

use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::word::WordPieceWithSource;
use brush_parser::{ParserOptions, ast, parse_tokens, uncached_tokenize_str};

/// Parser options: bash mode, extglob on (as brush's own shell), tilde at word start.
pub(crate) fn options() -> ParserOptions {
    ParserOptions::default()
}

/// Parses a whole program. Errors and parser panics become a message for the opaque list.
pub(crate) fn parse_program(text: &str) -> Result<ast::Program, String> {
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

/// Splits a word into its pieces (quotes, expansions, substitutions).
pub(crate) fn parse_word(raw: &str) -> Result<Vec<WordPieceWithSource>, String> {
    let opts = options();
    match catch_unwind(AssertUnwindSafe(|| brush_parser::word::parse(raw, &opts))) {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(format!("{e}")),
        Err(_) => Err("the word parser failed".to_owned()),
    }
}

/// Splits a here-document body (quotes are literal there) into pieces.
pub(crate) fn parse_heredoc(raw: &str) -> Result<Vec<WordPieceWithSource>, String> {
    let opts = options();
    match catch_unwind(AssertUnwindSafe(|| {
        brush_parser::word::parse_heredoc(raw, &opts)
    })) {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(format!("{e}")),
        Err(_) => Err("the here-document parser failed".to_owned()),
    }
}
