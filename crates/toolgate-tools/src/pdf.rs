//! PDF text extraction for Read, page by page (lopdf).

use std::io::Read as _;

use serde_json::json;
use toolgate_core::ToolError;
use toolgate_protocol::ToolOutput;

use crate::FileToolsConfig;
use crate::error::Error;
use crate::media::parse_pages;
use crate::paths::{Opened, ResolvedPath};

/// Returns a PDF's text page by page. PDFs with more than
/// `config.pdf_pages_without_range` pages need `pages`; at most `config.pdf_max_pages` pages
/// per call.
pub(crate) fn read_pdf(
    config: &FileToolsConfig,
    resolved: &ResolvedPath,
    mut opened: Opened,
    pages: Option<&str>,
) -> Result<ToolOutput, ToolError> {
    let path = resolved.display.display();
    let size = opened.size();
    if size > config.pdf_max_file_bytes {
        return Err(Error::TooLarge {
            path: resolved.display.clone(),
            size,
            limit: config.pdf_max_file_bytes,
            what: "PDFs",
        }
        .into());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    (&mut opened.file)
        .take(config.pdf_max_file_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("reading", &resolved.real, e))?;
    let unreadable = |why: String| {
        ToolError::InvalidRequest(format!("{path} could not be read as a PDF: {why}"))
    };
    let doc = lopdf::Document::load_mem(&bytes).map_err(|e| unreadable(e.to_string()))?;
    if doc.is_encrypted() {
        return Err(unreadable("it is encrypted".into()));
    }
    let count = doc.get_pages().len();
    let wanted: Vec<u32> = match pages {
        Some(spec) => parse_pages(spec, config.pdf_max_pages).map_err(ToolError::InvalidRequest)?,
        None if count > config.pdf_pages_without_range => {
            return Err(ToolError::InvalidRequest(format!(
                "{path} has {count} pages; send `pages` (e.g. \"1-{}\") to read at most {} pages per call",
                config.pdf_max_pages.min(count),
                config.pdf_max_pages
            )));
        }
        None => (1..=u32::try_from(count).unwrap_or(u32::MAX)).collect(),
    };
    if let Some(p) = wanted.iter().find(|p| **p as usize > count) {
        return Err(ToolError::InvalidRequest(format!(
            "{path} has {count} pages, so page {p} does not exist"
        )));
    }
    let mut text = format!("PDF {path} ({count} pages)\n");
    let mut empty = 0;
    let mut shown = Vec::new();
    for p in &wanted {
        let page = doc
            .extract_text(&[*p])
            .unwrap_or_else(|e| format!("[the text of this page could not be extracted: {e}]"));
        if page.trim().is_empty() {
            empty += 1;
        }
        let block = format!("<page number=\"{p}\">\n{}\n</page>\n", page.trim_end());
        if text.len() + block.len() > config.read_max_output_bytes && !shown.is_empty() {
            text.push_str(&format!(
                "<system-reminder>Partial view: the text is larger than the output limit ({} bytes); pages after {} are not shown. Read them with pages.</system-reminder>\n",
                config.read_max_output_bytes,
                shown.last().copied().unwrap_or(0)
            ));
            break;
        }
        text.push_str(&block);
        shown.push(*p);
    }
    if empty == wanted.len() {
        text.push_str("<system-reminder>These pages have no extractable text (the PDF may be scanned images).</system-reminder>\n");
    }
    Ok(ToolOutput::text(text).with_structured(json!({
        "file_path": resolved.display,
        "pages": count,
        "shown": shown,
    })))
}
