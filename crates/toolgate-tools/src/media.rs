//! Images and PDFs for Read.

use std::io::Read as _;

use base64::Engine as _;
use serde_json::json;
use toolgate_core::ToolError;
use toolgate_protocol::{Content, ToolOutput};

use crate::FileToolsConfig;
use crate::error::Error;
use crate::paths::{Opened, ResolvedPath};

/// The MIME type of a PNG, JPEG, GIF or WebP image, from its magic bytes.
pub(crate) fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Returns an image block: as it is when small enough, else downscaled and re-encoded as
/// JPEG, else refused.
pub(crate) fn read_image(
    config: &FileToolsConfig,
    resolved: &ResolvedPath,
    mut opened: Opened,
    mime: &'static str,
) -> Result<ToolOutput, ToolError> {
    let size = opened.size();
    if size > config.image_max_file_bytes {
        return Err(Error::TooLarge {
            path: resolved.display.clone(),
            size,
            limit: config.image_max_file_bytes,
            what: "images",
        }
        .into());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    (&mut opened.file)
        .take(config.image_max_file_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("reading", &resolved.real, e))?;
    let (data, media_type, note) = if bytes.len() <= config.image_max_bytes {
        (bytes, mime, None)
    } else {
        let (small, note) = crate::image_fit::downscale(config, &bytes, resolved)?;
        (small, "image/jpeg", Some(note))
    };
    let encoded = base64::engine::general_purpose::STANDARD.encode(&data);
    let mut content = vec![Content::Image {
        media_type: media_type.to_owned(),
        data: encoded,
    }];
    if let Some(note) = note {
        content.push(Content::Text { text: note });
    }
    Ok(ToolOutput {
        content,
        structured: Some(json!({
            "file_path": resolved.display,
            "media_type": media_type,
            "original_bytes": size,
            "bytes": data.len(),
        })),
        meta: None,
    })
}

/// Parses a `pages` value: `"3"`, `"1-5"`, `"1,4-6"`, 1-based, into sorted unique pages.
pub(crate) fn parse_pages(spec: &str, max: usize) -> Result<Vec<u32>, String> {
    let mut pages = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let parse = |s: &str| {
            s.parse::<u32>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("`{part}` is not a page or range of pages (pages count from 1, e.g. \"3\" or \"1-5\")"))
        };
        let (a, b) = (parse(a)?, parse(b)?);
        if a > b {
            return Err(format!("`{part}`: the range runs backwards"));
        }
        if (b - a) as usize >= max || pages.len() + (b - a) as usize >= max {
            return Err(format!(
                "`{spec}` asks for more than {max} pages; read at most {max} pages per call"
            ));
        }
        pages.extend(a..=b);
    }
    if pages.is_empty() {
        return Err("`pages` is empty; give a page or range such as \"1-5\"".into());
    }
    pages.sort_unstable();
    pages.dedup();
    Ok(pages)
}

/// Returns a PDF's text, page by page.
pub(crate) fn read_pdf(
    config: &FileToolsConfig,
    resolved: &ResolvedPath,
    opened: Opened,
    pages: Option<&str>,
) -> Result<ToolOutput, ToolError> {
    crate::pdf::read_pdf(config, resolved, opened, pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages() {
        assert_eq!(parse_pages("3", 20), Ok(vec![3]));
        assert_eq!(parse_pages("1-3, 2,7", 20), Ok(vec![1, 2, 3, 7]));
        assert!(parse_pages("0", 20).is_err());
        assert!(parse_pages("5-2", 20).is_err());
        assert!(parse_pages("1-21", 20).is_err());
        assert!(parse_pages("1-20", 20).is_ok());
        assert!(parse_pages("x", 20).is_err());
    }

    #[test]
    fn sniffs_images() {
        assert_eq!(image_mime(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(image_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_mime(b"hello"), None);
    }
}
