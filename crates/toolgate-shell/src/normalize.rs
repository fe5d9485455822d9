//! Text normalisation and the pre-parse budget check.
//!
//! Before brush-parser sees a command we strip terminal escape sequences, NULs and zero-width
//! characters, apply Unicode NFKC (so full-width `ｒｍ` reads as `rm`) and measure lexical
//! nesting with a small quote-aware scanner, so that no input can drive the recursive-descent
//! parser into a stack overflow.

use unicode_normalization::UnicodeNormalization;

/// Result of [`normalize_text`].
pub(crate) struct Normalized {
    /// The text to analyse.
    pub text: String,
    /// What was changed, for the opaque list (empty when nothing was).
    pub notes: Vec<&'static str>,
}

fn is_zero_width(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{00AD}')
}

/// Strips ANSI CSI/OSC sequences, NULs and zero-width characters, then applies NFKC.
pub(crate) fn normalize_text(input: &str) -> Normalized {
    let mut notes = Vec::new();
    if input.is_ascii() && !input.contains(['\u{1b}', '\0']) {
        return Normalized {
            text: input.to_owned(),
            notes,
        };
    }
    let mut out = String::with_capacity(input.len());
    let mut chars = input.chars().peekable();
    let mut stripped_ctl = false;
    let mut stripped_zw = false;
    while let Some(c) = chars.next() {
        match c {
            '\0' => stripped_ctl = true,
            '\u{1b}' => {
                stripped_ctl = true;
                match chars.peek() {
                    Some('[') => {
                        chars.next();
                        // CSI: parameters and intermediates, then one final byte @..~
                        for d in chars.by_ref() {
                            if ('@'..='~').contains(&d) {
                                break;
                            }
                        }
                    }
                    Some(']') => {
                        chars.next();
                        // OSC: until BEL or ESC '\'
                        while let Some(d) = chars.next() {
                            if d == '\u{7}' {
                                break;
                            }
                            if d == '\u{1b}' {
                                if chars.peek() == Some(&'\\') {
                                    chars.next();
                                }
                                break;
                            }
                        }
                    }
                    _ => {
                        chars.next();
                    }
                }
            }
            c if is_zero_width(c) => stripped_zw = true,
            c => out.push(c),
        }
    }
    if stripped_ctl {
        notes.push("terminal control characters (ANSI escapes or NUL) were stripped");
    }
    if stripped_zw {
        notes.push("zero-width characters were stripped");
    }
    if !out.is_ascii() {
        let nf: String = out.nfkc().collect();
        out = nf;
    }
    Normalized { text: out, notes }
}

/// Lexical nesting depth of `text`, an upper estimate of how deep brush-parser will recurse.
///
/// Counts `(`, `$(`, `{`, `${`, backticks and the keywords `if`, `case`, `while`, `until`,
/// `for`, `select` as openers and their partners as closers, respecting single quotes,
/// double quotes, backslashes, comments and here-document bodies. It stops early and returns
/// `limit + 1` as soon as the depth passes `limit`.
pub(crate) fn nesting_depth(text: &str, limit: usize) -> usize {
    scan(text, limit).0
}

/// Most `(` left unclosed at the end of the text before the parse is refused.
///
/// brush-parser backtracks exponentially on runs of unclosed `(` (each may open a subshell or
/// an arithmetic command): 24 take a second, 30 take a minute. Such input is a syntax error for
/// bash anyway; a little slack absorbs imprecision of the scanner.
pub(crate) const MAX_UNCLOSED_PARENS: usize = 4;

/// `$(` / `(` left unclosed at the end of a here-document body or word, where quotes are
/// literal text. brush-parser's word parser backtracks exponentially on them (a 3 KB here-doc
/// took 33 s; found by fuzzing).
pub(crate) fn unclosed_substitutions(text: &str) -> usize {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'$' if b.get(i + 1) == Some(&b'(') => {
                depth += 1;
                i += 1;
            }
            b'(' if depth > 0 => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    depth
}

/// `{` left unclosed at the end of a word. brush-parser's brace-expansion and word parsers
/// backtrack exponentially on them (16 take 4 s; found by fuzzing).
pub(crate) fn unclosed_braces(text: &str) -> usize {
    let mut depth = 0usize;
    let mut escaped = false;
    for c in text.bytes() {
        match c {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    depth
}

/// `(` left unclosed at the end of `text` (see [`MAX_UNCLOSED_PARENS`]).
pub(crate) fn unclosed_parens(text: &str, limit: usize) -> usize {
    scan(text, limit).1
}

/// Scans `text`: (maximum nesting depth, `(` still open at the end).
fn scan(text: &str, limit: usize) -> (usize, usize) {
    #[derive(Clone, Copy, PartialEq)]
    enum Ctx {
        Code,
        Paren,
        Brace,
        Keyword,
        Case,
        Dq,
        Tick,
    }
    let b = text.as_bytes();
    let mut stack: Vec<Ctx> = vec![Ctx::Code];
    let mut max = 0usize;
    let mut i = 0usize;
    let mut pending_heredocs: Vec<(String, bool)> = Vec::new();
    let mut word_start = true;
    while i < b.len() {
        let depth = stack.len() - 1;
        if depth > max {
            max = depth;
            if max > limit {
                return (max, 0);
            }
        }
        let top = stack.last().copied().unwrap_or(Ctx::Code);
        let c = b[i];
        if c == b'\\' {
            i += 2;
            word_start = false;
            continue;
        }
        if top == Ctx::Dq {
            match c {
                b'"' => {
                    stack.pop();
                }
                b'$' if b.get(i + 1) == Some(&b'(') => {
                    stack.push(Ctx::Paren);
                    i += 1;
                }
                b'$' if b.get(i + 1) == Some(&b'{') => {
                    stack.push(Ctx::Brace);
                    i += 1;
                }
                b'`' => stack.push(Ctx::Tick),
                _ => {}
            }
            i += 1;
            continue;
        }
        match c {
            b'\'' => {
                // `$'…'` allows backslash escapes; plain '…' does not.
                let ansi = i > 0 && b[i - 1] == b'$';
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    if ansi && b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                word_start = false;
                continue;
            }
            b'"' => stack.push(Ctx::Dq),
            b'`' => {
                if top == Ctx::Tick {
                    stack.pop();
                } else {
                    stack.push(Ctx::Tick);
                }
            }
            b'(' => stack.push(Ctx::Paren),
            b'{' => stack.push(Ctx::Brace),
            b')' if top == Ctx::Paren => {
                stack.pop();
            }
            b'}' if top == Ctx::Brace => {
                stack.pop();
            }
            b'#' if word_start => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'<' if b.get(i + 1) == Some(&b'<') && b.get(i + 2) != Some(&b'<') => {
                if let Some(h) = heredoc_delimiter(b, &mut i) {
                    pending_heredocs.push(h);
                }
                continue;
            }
            b'\n' if !pending_heredocs.is_empty() => {
                i += 1;
                for (delim, strip) in std::mem::take(&mut pending_heredocs) {
                    skip_heredoc_body(b, &mut i, &delim, strip);
                }
                word_start = true;
                continue;
            }
            _ => {}
        }
        if word_start && c.is_ascii_alphabetic() {
            let end = b[i..]
                .iter()
                .position(|x| !x.is_ascii_alphanumeric() && *x != b'_')
                .map_or(b.len(), |p| i + p);
            let word = &text[i..end];
            let delimited = end >= b.len() || b" \t\n;&|)".contains(&b[end]);
            if delimited {
                match word {
                    "if" | "while" | "until" | "for" | "select" => stack.push(Ctx::Keyword),
                    "case" => stack.push(Ctx::Case),
                    "fi" | "done" if top == Ctx::Keyword => {
                        stack.pop();
                    }
                    "esac" if top == Ctx::Case => {
                        stack.pop();
                    }
                    _ => {}
                }
            }
            i = end;
            word_start = false;
            continue;
        }
        word_start = matches!(
            c,
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'{'
        );
        i += 1;
    }
    let open_parens = stack.iter().filter(|c| **c == Ctx::Paren).count();
    (max.max(stack.len() - 1), open_parens)
}

/// Reads the delimiter of a here-document at `<<` (`i` on the first `<`): the word after
/// `<<` or `<<-`, quotes removed, and whether tabs are stripped.
fn heredoc_delimiter(b: &[u8], i: &mut usize) -> Option<(String, bool)> {
    *i += 2;
    let strip = b.get(*i) == Some(&b'-');
    if strip {
        *i += 1;
    }
    while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
        *i += 1;
    }
    let mut delim = String::new();
    while *i < b.len() && !b" \t\n;&|<>()".contains(&b[*i]) {
        if !matches!(b[*i], b'\'' | b'"' | b'\\') {
            delim.push(char::from(b[*i]));
        }
        *i += 1;
    }
    (!delim.is_empty()).then_some((delim, strip))
}

/// Moves past a here-document's body lines up to and including its delimiter line.
fn skip_heredoc_body(b: &[u8], i: &mut usize, delim: &str, strip: bool) {
    while *i < b.len() {
        let end = b[*i..]
            .iter()
            .position(|&x| x == b'\n')
            .map_or(b.len(), |p| *i + p);
        let line = String::from_utf8_lossy(&b[*i..end]);
        let line = if strip {
            line.trim_start_matches('\t')
        } else {
            &line
        };
        *i = (end + 1).min(b.len());
        if line == delim {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_and_folds() {
        let n = normalize_text("\u{ff52}\u{ff4d} -rf /");
        assert_eq!(n.text, "rm -rf /");
        let n = normalize_text("r\u{200b}m x\u{1b}[31m");
        assert_eq!(n.text, "rm x");
        assert_eq!(n.notes.len(), 2);
        assert!(normalize_text("ls").notes.is_empty());
    }

    #[test]
    fn measures_nesting() {
        assert_eq!(nesting_depth("ls -la", 32), 0);
        assert_eq!(nesting_depth("echo $(echo $(id))", 32), 2);
        assert_eq!(nesting_depth("echo '(((((('", 32), 0);
        assert_eq!(nesting_depth("echo \"$(a \"$(b)\")\"", 32), 4);
        assert_eq!(nesting_depth("if a; then if b; then c; fi; fi", 32), 2);
        assert_eq!(nesting_depth("cat <<EOF\n'\nEOF\n(x)", 32), 1);
        assert_eq!(unclosed_parens("((((((d", 32), 6);
        assert_eq!(unclosed_parens("(a) (b) $(c)", 32), 0);
        assert_eq!(unclosed_parens("case x in a) ls;; esac", 32), 0);
        let deep = format!("{}x{}", "(".repeat(100), ")".repeat(100));
        assert!(nesting_depth(&deep, 32) > 32);
    }
}
