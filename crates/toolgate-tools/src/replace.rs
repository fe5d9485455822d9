//! Exact string replacement for Edit and MultiEdit, with line endings and the trailing
//! newline preserved, and a short unified diff of the change.

use std::time::Duration;

use similar::TextDiff;

/// Lines of context around each change in the diff snippet.
const DIFF_CONTEXT: usize = 3;

/// Most lines of diff shown; the rest is summarised.
const DIFF_MAX_LINES: usize = 60;

/// Time the diff may take; beyond it the diff is coarser (large files with many changes).
const DIFF_DEADLINE: Duration = Duration::from_millis(200);

/// Occurrence lines listed when `old_string` is not unique.
const LIST_OCCURRENCES: usize = 10;

/// One replacement.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditOp {
    /// The exact text to replace.
    pub old_string: String,
    /// The text to replace it with.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// Why an edit cannot be applied; the message tells the model what to send instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EditRefusal(pub String);

/// Checks that do not need the file.
pub(crate) fn check_op(op: &EditOp, index: Option<usize>) -> Result<(), EditRefusal> {
    if op.old_string == op.new_string {
        return Err(EditRefusal(format!(
            "{}old_string and new_string are identical, so there is nothing to change; send the text you want instead in new_string",
            prefix(index)
        )));
    }
    Ok(())
}

fn prefix(index: Option<usize>) -> String {
    index.map_or_else(String::new, |i| format!("edit {}: ", i + 1))
}

/// The line style of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    Lf,
    /// Every line break is CRLF: edits work on LF text and CRLF is restored.
    Crlf,
}

fn detect_eol(text: &str) -> Eol {
    let lf = text.matches('\n').count();
    let crlf = text.matches("\r\n").count();
    if crlf > 0 && crlf == lf {
        Eol::Crlf
    } else {
        Eol::Lf
    }
}

/// Applies `ops` in order to `original`. All or nothing: the first refusal stops it.
/// Returns the new text and the number of replacements.
pub(crate) fn apply(
    original: &str,
    ops: &[EditOp],
    numbered: bool,
) -> Result<(String, usize), EditRefusal> {
    let eol = detect_eol(original);
    let norm = |s: &str| match eol {
        Eol::Crlf => s.replace("\r\n", "\n"),
        Eol::Lf => s.to_owned(),
    };
    let mut text = norm(original);
    let mut count = 0;
    for (i, op) in ops.iter().enumerate() {
        let index = numbered.then_some(i);
        check_op(op, index)?;
        let old = norm(&op.old_string);
        let new = norm(&op.new_string);
        if old.is_empty() {
            if text.is_empty() {
                text = new;
                count += 1;
                continue;
            }
            return Err(EditRefusal(format!(
                "{}old_string is empty, which only works for creating a file or filling an empty one; copy the text to replace from the file",
                prefix(index)
            )));
        }
        let hits: Vec<usize> = text.match_indices(&old).map(|(at, _)| at).collect();
        match hits.len() {
            0 => {
                let earlier = if i > 0 {
                    " (earlier edits of this call have already been applied to the text it is matched against)"
                } else {
                    ""
                };
                return Err(EditRefusal(format!(
                    "{}old_string was not found in the file{earlier}. It must match exactly, including whitespace, indentation and line breaks; Read the file and copy the text",
                    prefix(index)
                )));
            }
            1 => {}
            n if !op.replace_all => {
                let lines: Vec<String> = hits
                    .iter()
                    .take(LIST_OCCURRENCES)
                    .map(|at| (text[..*at].matches('\n').count() + 1).to_string())
                    .collect();
                let more = if n > LIST_OCCURRENCES { ", …" } else { "" };
                return Err(EditRefusal(format!(
                    "{}old_string occurs {n} times (lines {}{more}); include more surrounding lines to make it unique, or set replace_all to change every occurrence",
                    prefix(index),
                    lines.join(", ")
                )));
            }
            _ => {}
        }
        count += hits.len();
        text = text.replace(&old, &new);
    }
    if original.ends_with('\n') && !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if eol == Eol::Crlf {
        text = text.replace('\n', "\r\n");
    }
    Ok((text, count))
}

/// A unified diff of the change, cut to a readable length.
pub(crate) fn diff_snippet(before: &str, after: &str, name: &str) -> String {
    let diff = TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(before, after);
    let unified = diff
        .unified_diff()
        .context_radius(DIFF_CONTEXT)
        .header(name, name)
        .to_string();
    let mut lines = unified.lines();
    let mut out: Vec<&str> = lines.by_ref().take(DIFF_MAX_LINES).collect();
    let rest = lines.count();
    if rest > 0 {
        out.push("");
        let note = format!("… {rest} more diff lines");
        return format!("{}{note}\n", out.join("\n"));
    }
    out.push("");
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(old: &str, new: &str, all: bool) -> EditOp {
        EditOp {
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn unique_replacement() {
        assert_eq!(
            apply("a b c\n", &[op("b", "x", false)], false),
            Ok(("a x c\n".into(), 1))
        );
    }

    #[test]
    fn non_unique_is_refused_unless_replace_all() {
        let err = apply("x\ny\nx\n", &[op("x", "z", false)], false).unwrap_err();
        assert!(err.0.contains("occurs 2 times (lines 1, 3)"), "{}", err.0);
        assert_eq!(
            apply("x\ny\nx\n", &[op("x", "z", true)], false),
            Ok(("z\ny\nz\n".into(), 2))
        );
    }

    #[test]
    fn identical_and_missing() {
        assert!(
            apply("a", &[op("a", "a", false)], false)
                .unwrap_err()
                .0
                .contains("identical")
        );
        assert!(
            apply("a", &[op("q", "r", false)], false)
                .unwrap_err()
                .0
                .contains("not found")
        );
    }

    #[test]
    fn crlf_is_preserved() {
        let (out, _) = apply(
            "one\r\ntwo\r\nthree\r\n",
            &[op("one\ntwo", "1\n2\n2b", false)],
            false,
        )
        .unwrap();
        assert_eq!(out, "1\r\n2\r\n2b\r\nthree\r\n");
    }

    #[test]
    fn trailing_newline_is_preserved() {
        let (out, _) = apply("a\nb\n", &[op("\nb\n", "", false)], false).unwrap();
        assert_eq!(out, "a\n");
        let (out, _) = apply("a\nb", &[op("b", "c", false)], false).unwrap();
        assert_eq!(out, "a\nc");
    }

    #[test]
    fn multi_edits_apply_in_order_all_or_nothing() {
        let ops = [op("a", "b", false), op("b", "c", true)];
        assert_eq!(apply("a\n", &ops, true), Ok(("c\n".into(), 2)));
        let ops = [op("a", "b", false), op("zzz", "c", false)];
        assert!(
            apply("a\n", &ops, true)
                .unwrap_err()
                .0
                .starts_with("edit 2:")
        );
    }

    #[test]
    fn diff_shows_the_change() {
        let d = diff_snippet("a\nb\nc\n", "a\nB\nc\n", "f.txt");
        assert!(d.contains("-b\n+B\n"), "{d}");
    }
}
