//! From a response to text for the model: HTML to Markdown (htmd, on html5ever), plain text
//! and JSON (pretty-printed) as they are, PDF as text (Read's extraction), images refused.

use std::rc::Rc;

use markup5ever_rcdom::{Node, NodeData};
use toolgate_tools::{FileToolsConfig, PdfPages, pdf_text};

use super::client::Fetched;
use crate::config::{MAX_HTML_BYTES, MAX_HTML_DEPTH};
use crate::error::WebError;

/// Stack of the thread converting HTML: the converter recurses once per element level, and
/// [`MAX_HTML_DEPTH`] levels take a few MiB in a debug build; only the pages touched count.
const HTML_STACK_BYTES: usize = 64 * 1024 * 1024;

/// Elements whose content is never page text.
const SKIPPED_TAGS: [&str; 7] = [
    "script", "style", "noscript", "template", "iframe", "object", "svg",
];

/// What a body was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// HTML, converted to Markdown.
    Html,
    /// Text as sent.
    Text,
    /// JSON, pretty-printed.
    Json,
    /// PDF text.
    Pdf,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Html => "html",
            Kind::Text => "text",
            Kind::Json => "json",
            Kind::Pdf => "pdf",
        }
    }
}

/// The media type, lower-case, without parameters.
fn media_type(content_type: Option<&str>) -> Option<String> {
    content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty())
}

/// What the body is, by its declared type, else by its first bytes.
fn kind_of(fetched: &Fetched) -> Result<Kind, WebError> {
    let url = &fetched.url;
    let media = media_type(fetched.content_type.as_deref());
    let sniffed = || {
        let head = &fetched.body[..fetched.body.len().min(512)];
        let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
        if head.starts_with(b"%PDF-") {
            Ok(Kind::Pdf)
        } else if lower.trim_start().starts_with("<!doctype html") || lower.contains("<html") {
            Ok(Kind::Html)
        } else if std::str::from_utf8(&fetched.body).is_ok() && !fetched.body.contains(&0) {
            Ok(Kind::Text)
        } else {
            Err(WebError::Unsupported(format!(
                "{url} returned binary data without a content type; WebFetch returns text, HTML, JSON and PDF"
            )))
        }
    };
    let Some(m) = media else { return sniffed() };
    match m.as_str() {
        "text/html" | "application/xhtml+xml" => Ok(Kind::Html),
        "application/json" => Ok(Kind::Json),
        "application/pdf" => Ok(Kind::Pdf),
        m if m.ends_with("+json") => Ok(Kind::Json),
        m if m.starts_with("text/") || m.ends_with("+xml") || m == "application/xml" => {
            Ok(Kind::Text)
        }
        "application/javascript" | "application/x-javascript" | "application/ecmascript" => {
            Ok(Kind::Text)
        }
        m if m.starts_with("image/") => Err(WebError::Unsupported(format!(
            "{url} is an image ({m}); WebFetch returns text only and does not fetch images"
        ))),
        "application/octet-stream" => sniffed(),
        other => Err(WebError::Unsupported(format!(
            "{url} has the content type {other}, which WebFetch cannot return as text (it reads HTML, text, JSON and PDF)"
        ))),
    }
}

/// The body as text for the model, and what it was read as; HTML conversion must end by
/// `deadline`.
pub(crate) async fn to_text(
    fetched: &Fetched,
    max_chars: usize,
    deadline: tokio::time::Instant,
) -> Result<(String, Kind), WebError> {
    let kind = kind_of(fetched)?;
    // Not decoded by charset: UTF-8 (most of the web) is read as is, anything else lossily.
    let text = || String::from_utf8_lossy(&fetched.body).into_owned();
    let out = match kind {
        Kind::Html => html_to_markdown(text(), deadline).await?,
        Kind::Text => text(),
        Kind::Json => match serde_json::from_slice::<serde_json::Value>(&fetched.body) {
            Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_else(|_| text()),
            Err(_) => text(),
        },
        Kind::Pdf => pdf_to_text(fetched, max_chars)?,
    };
    Ok((out, kind))
}

fn pdf_to_text(fetched: &Fetched, max_chars: usize) -> Result<String, WebError> {
    let config = FileToolsConfig {
        // Characters are at most four bytes: enough text to fill the character cap.
        read_max_output_bytes: max_chars.saturating_mul(4),
        ..FileToolsConfig::default()
    };
    let pdf = pdf_text(&fetched.body, PdfPages::FromStart, &config)
        .map_err(|e| WebError::Unsupported(format!("{} {e}", fetched.url)))?;
    let mut text = format!("PDF ({} pages)\n{}", pdf.pages, pdf.text);
    if pdf.truncated {
        text.push_str(&format!(
            "[pages after {} are not shown: the text is longer than the output limit]\n",
            pdf.shown.last().copied().unwrap_or(0)
        ));
    }
    if pdf.no_text {
        text.push_str("[these pages have no extractable text; the PDF may be scanned images]\n");
    }
    Ok(text)
}

/// Converts on a thread of its own with a known stack (the tree is not `Send`, so it is
/// built there too), waiting until `deadline`.
async fn html_to_markdown(
    mut html: String,
    deadline: tokio::time::Instant,
) -> Result<String, WebError> {
    let mut notice = String::new();
    if html.len() > MAX_HTML_BYTES {
        let mut cut = MAX_HTML_BYTES;
        while !html.is_char_boundary(cut) {
            cut -= 1;
        }
        html.truncate(cut);
        notice = format!(
            "\n\n[the HTML is longer than {MAX_HTML_BYTES} bytes; only its start was converted]"
        );
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("toolgate-webfetch-html".into())
        .stack_size(HTML_STACK_BYTES)
        .spawn(move || {
            let _ = tx.send(convert_html(&html));
        })
        .map_err(|e| WebError::Failed(format!("could not start the HTML converter: {e}")))?;
    match tokio::time::timeout_at(deadline, rx).await {
        Ok(Ok(converted)) => converted.map(|md| md + &notice),
        Ok(Err(_)) => Err(WebError::Failed(
            "the HTML converter stopped without an answer".into(),
        )),
        // The caller fills in the limit.
        Err(_) => Err(WebError::Timeout {
            ms: 0,
            what: "converting the page to Markdown did not finish within the fetch's time limit (webFetch.timeoutMs)".into(),
        }),
    }
}

fn convert_html(html: &str) -> Result<String, WebError> {
    if estimated_depth(html) > MAX_HTML_DEPTH {
        return Ok(format!(
            "[the page nests elements more than {MAX_HTML_DEPTH} deep; its text follows without Markdown structure]\n{}",
            stripped_text(html)
        ));
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED_TAGS.to_vec())
        .build();
    let tree = converter
        .html_to_tree(html)
        .map_err(|e| WebError::Failed(format!("the HTML could not be parsed: {e}")))?;
    // The pre-scan is an estimate; the tree is measured before the recursive walk.
    if depth(&tree) > MAX_HTML_DEPTH {
        return Ok(format!(
            "[the page nests elements more than {MAX_HTML_DEPTH} deep; its text follows without Markdown structure]\n{}",
            plain_text(&tree)
        ));
    }
    Ok(converter.tree_to_markdown(&tree))
}

/// Elements without content (never nest).
const VOID_TAGS: [&str; 16] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "keygen", "basefont",
];

/// Elements a later sibling closes implicitly (`<li><li>` is two siblings): never counted
/// as nesting, or every sloppy list would look deep.
const SELF_CLOSING_SIBLINGS: [&str; 12] = [
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "rb", "rt", "rp",
];

/// Tag name at the start of `rest` (after `<` or `</`), lower-cased.
fn tag_name(rest: &[u8]) -> String {
    rest.iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
        .map(|b| char::from(b.to_ascii_lowercase()))
        .collect()
}

/// The deepest nesting of start tags over end tags, by one linear pass (raw-text elements
/// and comments skipped); stops counting once past [`MAX_HTML_DEPTH`].
fn estimated_depth(html: &str) -> usize {
    let b = html.as_bytes();
    let (mut depth, mut deepest, mut i) = (0usize, 0usize, 0usize);
    while let Some(off) = b[i..].iter().position(|c| *c == b'<') {
        i += off + 1;
        if b[i..].starts_with(b"!--") {
            i = find(b, i, b"-->").unwrap_or(b.len());
            continue;
        }
        let closing = b.get(i) == Some(&b'/');
        let name = tag_name(&b[i + usize::from(closing)..]);
        if name.is_empty() {
            continue;
        }
        let end = b[i..]
            .iter()
            .position(|c| *c == b'>')
            .map_or(b.len(), |p| i + p);
        if closing {
            if !SELF_CLOSING_SIBLINGS.contains(&name.as_str()) {
                depth = depth.saturating_sub(1);
            }
        } else if matches!(name.as_str(), "script" | "style" | "textarea" | "title") {
            let close = format!("</{name}");
            i = find_ci(b, end, close.as_bytes()).unwrap_or(b.len());
            continue;
        } else {
            let self_closed = end > 0 && b.get(end - 1) == Some(&b'/');
            let nests = !(VOID_TAGS.contains(&name.as_str())
                || SELF_CLOSING_SIBLINGS.contains(&name.as_str())
                || self_closed);
            if nests {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > MAX_HTML_DEPTH {
                    return deepest;
                }
            }
        }
        i = end.min(b.len());
    }
    deepest
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

fn find_ci(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|p| from + p)
}

/// Text between tags, in one linear pass, for pages too deep to parse into a tree (the
/// content of `script`/`style` dropped, entities left as written).
fn stripped_text(html: &str) -> String {
    let b = html.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 4);
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'<' {
            let next = b[i..]
                .iter()
                .position(|c| *c == b'<')
                .map_or(b.len(), |p| i + p);
            out.extend_from_slice(&b[i..next]);
            i = next;
            continue;
        }
        let name = tag_name(&b[i + 1..]);
        let end = b[i..]
            .iter()
            .position(|c| *c == b'>')
            .map_or(b.len(), |p| i + p + 1);
        i = end;
        if matches!(name.as_str(), "script" | "style") {
            let close = format!("</{name}");
            i = find_ci(b, i, close.as_bytes()).unwrap_or(b.len());
        } else if !out.last().is_some_and(|c: &u8| c.is_ascii_whitespace()) {
            out.push(b' ');
        }
    }
    let text = String::from_utf8_lossy(&out);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn element_name(node: &Node) -> Option<String> {
    match &node.data {
        NodeData::Element { name, .. } => Some(name.local.to_string()),
        _ => None,
    }
}

/// The deepest element nesting, walked with an explicit stack (no recursion).
fn depth(root: &Rc<Node>) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(Rc::clone(root), 0usize)];
    while let Some((node, d)) = stack.pop() {
        deepest = deepest.max(d);
        for child in node.children.borrow().iter() {
            stack.push((Rc::clone(child), d + 1));
        }
    }
    deepest
}

/// The text nodes in document order, skipping [`SKIPPED_TAGS`], without recursion.
fn plain_text(root: &Rc<Node>) -> String {
    let mut out = String::new();
    let mut stack = vec![Rc::clone(root)];
    while let Some(node) = stack.pop() {
        if element_name(&node).is_some_and(|n| SKIPPED_TAGS.contains(&n.as_str())) {
            continue;
        }
        if let NodeData::Text { contents } = &node.data {
            let t = contents.borrow();
            let t = t.trim();
            if !t.is_empty() {
                out.push_str(t);
                out.push('\n');
            }
        }
        for child in node.children.borrow().iter().rev() {
            stack.push(Rc::clone(child));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetched(ct: Option<&str>, body: &[u8]) -> Fetched {
        Fetched {
            url: reqwest::Url::parse("https://e.test/").unwrap_or_else(|e| panic!("{e}")),
            status: 200,
            content_type: ct.map(str::to_owned),
            body: body.to_vec(),
            wire_bytes: body.len(),
        }
    }

    fn later() -> tokio::time::Instant {
        tokio::time::Instant::now() + std::time::Duration::from_secs(60)
    }

    #[test]
    fn depth_estimates() {
        assert_eq!(
            estimated_depth("<ul><li>a<li>b<li>c</ul><p>x<p>y<br><img src=x>"),
            1
        );
        assert_eq!(estimated_depth("<div><div><span>x</span></div></div>"), 3);
        assert_eq!(
            estimated_depth("<script>if (a<b) { x = '<div><div>'; }</script><b>"),
            1
        );
        assert_eq!(estimated_depth("<!-- <div><div> --><div/>"), 0);
        assert!(estimated_depth(&"<b>".repeat(MAX_HTML_DEPTH + 5)) > MAX_HTML_DEPTH);
        assert_eq!(
            stripped_text("<p>a<script>x<y</script>b</p><style>s</style>c"),
            "a b c"
        );
    }

    #[tokio::test]
    async fn kinds() {
        let html = b"<html><head><style>p{}</style><script>alert(1)</script></head><body><h1>Title</h1><p>Some <a href=\"/x\">link</a>.</p></body></html>";
        let (md, kind) = to_text(
            &fetched(Some("text/html; charset=utf-8"), html),
            1000,
            later(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kind, Kind::Html);
        assert!(md.contains("# Title") && md.contains("[link](/x)"), "{md}");
        assert!(!md.contains("alert") && !md.contains("p{}"), "{md}");
        let (json, kind) = to_text(
            &fetched(Some("application/json"), b"{\"a\":[1,2]}"),
            1000,
            later(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kind, Kind::Json);
        assert!(json.contains("\"a\": [\n"), "{json}");
        let image = to_text(&fetched(Some("image/png"), b"\x89PNG"), 1000, later()).await;
        assert!(matches!(image, Err(WebError::Unsupported(m)) if m.contains("image")));
        let binary = to_text(&fetched(None, b"\x00\x01\x02"), 1000, later()).await;
        assert!(matches!(binary, Err(WebError::Unsupported(_))));
        let sniffed = to_text(&fetched(None, b"<!DOCTYPE html><p>hi</p>"), 1000, later()).await;
        assert!(matches!(sniffed, Ok((_, Kind::Html))));
    }

    #[tokio::test]
    async fn deep_html_is_text_not_a_crash() {
        let n = MAX_HTML_DEPTH * 20;
        let html = format!("{}deep text{}", "<div>".repeat(n), "</div>".repeat(n));
        let (text, _) = to_text(&fetched(Some("text/html"), html.as_bytes()), 1000, later())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            text.contains("deep text") && text.contains("without Markdown"),
            "{text}"
        );
    }
}
