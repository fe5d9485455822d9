//! Jupyter notebooks (nbformat 4): rendering for Read, and the cell model NotebookEdit
//! changes.

use std::path::Path;

use serde_json::{Map, Value, json};
use toolgate_core::ToolError;
use toolgate_protocol::{Content, ToolOutput};

/// Characters kept of one cell output; long logs would otherwise crowd out the code.
const MAX_OUTPUT_CHARS: usize = 10_000;

/// Images from outputs sent along with the text, at most.
const MAX_OUTPUT_IMAGES: usize = 10;

/// Parses a notebook; the error says what is wrong.
pub(crate) fn parse(bytes: &[u8], path: &Path) -> Result<Map<String, Value>, ToolError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        ToolError::InvalidRequest(format!(
            "{} is not a valid notebook (JSON error: {e})",
            path.display()
        ))
    })?;
    let Value::Object(nb) = value else {
        return Err(ToolError::InvalidRequest(format!(
            "{} is not a valid notebook: the top level is not an object",
            path.display()
        )));
    };
    if !nb.get("cells").is_some_and(Value::is_array) {
        return Err(ToolError::InvalidRequest(format!(
            "{} is not a valid notebook: it has no `cells` list",
            path.display()
        )));
    }
    Ok(nb)
}

/// A cell's text: nbformat stores it as a string or a list of lines.
pub(crate) fn joined(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// Splits text into the list-of-lines form Jupyter writes (each line keeps its `\n`).
pub(crate) fn split_source(text: &str) -> Value {
    Value::Array(
        text.split_inclusive('\n')
            .map(|l| Value::String(l.to_owned()))
            .collect(),
    )
}

/// The id a cell is addressed by: its `id`, or `cell-N` for notebooks without ids.
pub(crate) fn cell_label(cell: &Value, index: usize) -> String {
    cell.get("id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("cell-{index}"), str::to_owned)
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for n in chars.by_ref() {
                if n.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn capped(mut s: String) -> String {
    if let Some((at, _)) = s.char_indices().nth(MAX_OUTPUT_CHARS) {
        let rest = s.len() - at;
        s.truncate(at);
        s.push_str(&format!("\n… [{rest} more bytes of output]"));
    }
    s
}

/// Renders every cell with its outputs.
pub(crate) fn render(bytes: &[u8], path: &Path) -> Result<ToolOutput, ToolError> {
    let nb = parse(bytes, path)?;
    let cells = nb
        .get("cells")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let language = nb
        .get("metadata")
        .and_then(|m| m.get("kernelspec"))
        .and_then(|k| k.get("language"))
        .and_then(Value::as_str)
        .unwrap_or("python");
    let mut text = format!(
        "Notebook {} ({} cells, language {language})\n",
        path.display(),
        cells.len()
    );
    let mut images = Vec::new();
    for (index, cell) in cells.iter().enumerate() {
        let kind = cell
            .get("cell_type")
            .and_then(Value::as_str)
            .unwrap_or("code");
        let mut attrs = format!(
            "id=\"{}\" index=\"{index}\" type=\"{kind}\"",
            cell_label(cell, index)
        );
        if let Some(n) = cell.get("execution_count").and_then(Value::as_u64) {
            attrs.push_str(&format!(" execution_count=\"{n}\""));
        }
        text.push_str(&format!("<cell {attrs}>\n"));
        let source = joined(cell.get("source"));
        text.push_str(&source);
        if !source.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("</cell>\n");
        for output in cell
            .get("outputs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            render_output(output, &mut text, &mut images);
        }
    }
    let mut content = vec![Content::Text { text }];
    content.extend(images);
    Ok(ToolOutput {
        content,
        structured: Some(json!({ "file_path": path, "cells": cells.len() })),
        meta: None,
    })
}

fn render_output(output: &Value, text: &mut String, images: &mut Vec<Content>) {
    let kind = output
        .get("output_type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let body = match kind {
        "stream" => joined(output.get("text")),
        "error" => {
            let ename = output
                .get("ename")
                .and_then(Value::as_str)
                .unwrap_or("Error");
            let evalue = output.get("evalue").and_then(Value::as_str).unwrap_or("");
            let trace: Vec<String> = output
                .get("traceback")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(strip_ansi)
                .collect();
            format!("{ename}: {evalue}\n{}", trace.join("\n"))
        }
        "execute_result" | "display_data" => {
            let data = output.get("data");
            for mime in ["image/png", "image/jpeg"] {
                if let Some(b64) = data.and_then(|d| d.get(mime)) {
                    if images.len() < MAX_OUTPUT_IMAGES {
                        images.push(Content::Image {
                            media_type: mime.to_owned(),
                            data: joined(Some(b64)).replace('\n', ""),
                        });
                    }
                    text.push_str(&format!(
                        "<output type=\"{kind}\">[{mime} image]</output>\n"
                    ));
                }
            }
            match data.and_then(|d| d.get("text/plain")) {
                Some(t) => joined(Some(t)),
                None => return,
            }
        }
        _ => return,
    };
    let body = capped(strip_ansi(&body));
    text.push_str(&format!("<output type=\"{kind}\">\n{body}"));
    if !body.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("</output>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_cells_and_outputs() {
        let nb = json!({
            "cells": [
                {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# Title\n", "text"]},
                {"cell_type": "code", "id": "c1", "execution_count": 2, "metadata": {},
                 "source": "print(1)", "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["1\n"]},
                    {"output_type": "error", "ename": "ValueError", "evalue": "bad",
                     "traceback": ["\u{1b}[0;31mValueError\u{1b}[0m: bad"]}
                 ]}
            ],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5
        });
        let out = render(nb.to_string().as_bytes(), Path::new("/x.ipynb")).unwrap();
        let text = out.joined_text();
        assert!(
            text.contains("<cell id=\"m1\" index=\"0\" type=\"markdown\">\n# Title\ntext\n</cell>")
        );
        assert!(text.contains("execution_count=\"2\""));
        assert!(text.contains("<output type=\"stream\">\n1\n</output>"));
        assert!(text.contains("ValueError: bad\nValueError: bad"));
    }

    #[test]
    fn split_keeps_newlines() {
        assert_eq!(split_source("a\nb"), json!(["a\n", "b"]));
        assert_eq!(split_source(""), json!([]));
    }
}
