//! PDF text extraction, page by page (lopdf): [`pdf_text`] is the one implementation, used by
//! Read for files and by WebFetch for downloaded PDFs.

use std::io::Read as _;

use serde_json::json;
use thiserror::Error;
use toolgate_core::ToolError;
use toolgate_protocol::ToolOutput;

use crate::FileToolsConfig;
use crate::error::Error;
use crate::media::parse_pages;
use crate::paths::{Opened, ResolvedPath};

/// Why a PDF's text could not be extracted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PdfError {
    /// Not a PDF lopdf can read.
    #[error("could not be read as a PDF: {0}")]
    Unreadable(String),
    /// Encrypted (no text without the password).
    #[error("could not be read as a PDF: it is encrypted")]
    Encrypted,
    /// The page list is malformed or too long.
    #[error("{0}")]
    BadPages(String),
    /// More pages than may be read without a page list.
    #[error(
        "has {count} pages; send `pages` (e.g. \"1-{suggest}\") to read at most {max} pages per call"
    )]
    NeedsPages {
        /// Pages in the document.
        count: usize,
        /// A range to suggest.
        suggest: usize,
        /// Most pages per call.
        max: usize,
    },
    /// A requested page does not exist.
    #[error("has {count} pages, so page {page} does not exist")]
    NoSuchPage {
        /// The page asked for.
        page: u32,
        /// Pages in the document.
        count: usize,
    },
}

/// Which pages to extract.
#[derive(Debug, Clone, Copy)]
pub enum PdfPages<'a> {
    /// A page list as Read takes it (`"3"`, `"1-5"`, `"1,4-6"`), at most
    /// [`FileToolsConfig::pdf_max_pages`].
    Listed(&'a str),
    /// Every page if there are at most [`FileToolsConfig::pdf_pages_without_range`], else
    /// [`PdfError::NeedsPages`] (Read without `pages`).
    AllOrAsk,
    /// From the first page on, as many as fit the output cap (WebFetch).
    FromStart,
}

/// A PDF's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdfText {
    /// Pages in the document.
    pub pages: usize,
    /// The pages whose text is in `text`.
    pub shown: Vec<u32>,
    /// `<page number="N">…</page>` blocks.
    pub text: String,
    /// The output cap stopped the text after the last shown page, before all wanted pages.
    pub truncated: bool,
    /// None of the shown pages had extractable text (scanned images).
    pub no_text: bool,
}

/// Extracts the text of `pages` from a PDF in memory, stopping before a page that would take
/// the text past `config.read_max_output_bytes` (the first page is always shown).
pub fn pdf_text(
    bytes: &[u8],
    pages: PdfPages<'_>,
    config: &FileToolsConfig,
) -> Result<PdfText, PdfError> {
    let doc = lopdf::Document::load_mem(bytes).map_err(|e| PdfError::Unreadable(e.to_string()))?;
    if doc.is_encrypted() {
        return Err(PdfError::Encrypted);
    }
    let count = doc.get_pages().len();
    let all = || (1..=u32::try_from(count).unwrap_or(u32::MAX)).collect();
    let wanted: Vec<u32> = match pages {
        PdfPages::Listed(spec) => {
            parse_pages(spec, config.pdf_max_pages).map_err(PdfError::BadPages)?
        }
        PdfPages::AllOrAsk if count > config.pdf_pages_without_range => {
            return Err(PdfError::NeedsPages {
                count,
                suggest: config.pdf_max_pages.min(count),
                max: config.pdf_max_pages,
            });
        }
        PdfPages::AllOrAsk | PdfPages::FromStart => all(),
    };
    if let Some(p) = wanted.iter().find(|p| **p as usize > count) {
        return Err(PdfError::NoSuchPage { page: *p, count });
    }
    let mut out = PdfText {
        pages: count,
        shown: Vec::new(),
        text: String::new(),
        truncated: false,
        no_text: false,
    };
    let mut empty = 0;
    for p in &wanted {
        let page = doc
            .extract_text(&[*p])
            .unwrap_or_else(|e| format!("[the text of this page could not be extracted: {e}]"));
        let block = format!("<page number=\"{p}\">\n{}\n</page>\n", page.trim_end());
        if out.text.len() + block.len() > config.read_max_output_bytes && !out.shown.is_empty() {
            out.truncated = true;
            break;
        }
        if page.trim().is_empty() {
            empty += 1;
        }
        out.text.push_str(&block);
        out.shown.push(*p);
    }
    out.no_text = empty == out.shown.len();
    Ok(out)
}

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
    let which = pages.map_or(PdfPages::AllOrAsk, PdfPages::Listed);
    let pdf = pdf_text(&bytes, which, config).map_err(|e| match e {
        PdfError::BadPages(why) => ToolError::InvalidRequest(why),
        other => ToolError::InvalidRequest(format!("{path} {other}")),
    })?;
    let mut text = format!("PDF {path} ({} pages)\n{}", pdf.pages, pdf.text);
    if pdf.truncated {
        text.push_str(&format!(
            "<system-reminder>Partial view: the text is larger than the output limit ({} bytes); pages after {} are not shown. Read them with pages.</system-reminder>\n",
            config.read_max_output_bytes,
            pdf.shown.last().copied().unwrap_or(0)
        ));
    }
    if pdf.no_text {
        text.push_str("<system-reminder>These pages have no extractable text (the PDF may be scanned images).</system-reminder>\n");
    }
    Ok(ToolOutput::text(text).with_structured(json!({
        "file_path": resolved.display,
        "pages": pdf.pages,
        "shown": pdf.shown,
    })))
}
