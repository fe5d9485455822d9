//! Stage 11: result shaping. A tool keeps its own output limits; this is the gate's safety
//! net, so no tool can flood the model's context: text over the cap keeps its head and tail
//! inline and the whole text is saved to a file whose path is in the result.

use std::io::Write;
use std::path::{Path, PathBuf};

use toolgate_protocol::{Content, ToolOutput};

use crate::outputs::SessionOutputs;

/// Where a cut result's full text is saved: the session's output directory (under `base`
/// when one is configured), within the session's budget.
pub(crate) struct Spill<'a> {
    pub outputs: &'a SessionOutputs,
    pub base: Option<&'a Path>,
}

/// Default cap on the text of one result, in bytes. Generous, because tools apply tighter,
/// tool-specific caps (Read ≈100 KB, Bash 30,000 characters); this catches the rest.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 256 * 1024;

/// Share of the cap kept from the start of an over-long text; the rest comes from the end.
const HEAD_SHARE: f64 = 0.8;

/// Cuts each over-long text block to head + tail and saves the whole block in the session's
/// output directory (kept after the session: the result names it). When saving fails — or
/// the session's budget is spent — the text is still cut, and the notice says so.
pub(crate) fn cap_output(
    mut output: ToolOutput,
    max_bytes: usize,
    spill: &Spill<'_>,
    call_id: &str,
) -> ToolOutput {
    for (index, block) in output.content.iter_mut().enumerate() {
        let Content::Text { text } = block else {
            continue;
        };
        if text.len() <= max_bytes {
            continue;
        }
        let saved = save_full(spill, call_id, index, text);
        let head_len = floor_boundary(text, (max_bytes as f64 * HEAD_SHARE) as usize);
        let tail_start = ceil_boundary(text, text.len() - (max_bytes - head_len));
        let omitted = tail_start - head_len;
        let where_ = match &saved {
            Ok(p) => format!(
                "the full output ({} bytes) is in {}",
                text.len(),
                p.display()
            ),
            Err(e) => format!("the full output could not be saved: {e}"),
        };
        *text = format!(
            "{}\n\n[… {omitted} bytes omitted; {where_} …]\n\n{}",
            &text[..head_len],
            &text[tail_start..]
        );
    }
    output
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn save_full(
    spill: &Spill<'_>,
    call_id: &str,
    index: usize,
    text: &str,
) -> std::io::Result<PathBuf> {
    let dir = spill.outputs.dir(spill.base)?;
    if !spill.outputs.reserve(text.len() as u64) {
        return Err(std::io::Error::other(spill.outputs.over_cap_notice()));
    }
    let dir = dir.as_path();
    let safe_id: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let name = if safe_id.is_empty() {
        format!("output-{}-{index}.txt", uuid::Uuid::new_v4())
    } else {
        format!("{safe_id}-{index}.txt")
    };
    let path = dir.join(name);
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.persist(&path).map_err(|e| e.error)?;
    spill.outputs.keep(&path);
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::session::{Session, SessionOptions, Workspace};

    fn session(dir: &Path) -> Session {
        Session::new(
            Workspace::new(dir).unwrap(),
            SessionOptions {
                id: Some("s".into()),
                ..SessionOptions::default()
            },
        )
    }

    #[test]
    fn short_output_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path());
        let outputs = SessionOutputs::of(&s);
        let spill = Spill {
            outputs: &outputs,
            base: Some(dir.path()),
        };
        let out = cap_output(ToolOutput::text("hello"), 10, &spill, "c1");
        assert_eq!(out.joined_text(), "hello");
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_saves_all() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path());
        let outputs = SessionOutputs::of(&s);
        let spill = Spill {
            outputs: &outputs,
            base: Some(dir.path()),
        };
        let text = format!("{}{}", "a".repeat(1000), "é".repeat(1000));
        let out = cap_output(ToolOutput::text(text.clone()), 200, &spill, "call/1");
        let shaped = out.joined_text();
        assert!(shaped.starts_with(&"a".repeat(160)));
        assert!(shaped.ends_with('é'));
        assert!(shaped.contains("bytes omitted"));
        let saved = std::fs::read_to_string(dir.path().join("s/call_1-0.txt")).unwrap();
        assert_eq!(saved, text);
        // Past the session's budget the text is still cut, and the notice says why.
        outputs.set_cap(outputs.used() + 10);
        let out = cap_output(ToolOutput::text(text), 200, &spill, "call/2");
        assert!(
            out.joined_text().contains("reached their limit"),
            "{}",
            out.joined_text()
        );
    }
}
