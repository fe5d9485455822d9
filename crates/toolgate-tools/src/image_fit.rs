//! Downscaling images that are too large to send as they are.

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{ImageReader, Limits};
use toolgate_core::ToolError;

use crate::FileToolsConfig;
use crate::paths::ResolvedPath;

/// Largest width or height decoded at all: beyond it an image is refused, not decoded
/// (a tiny file can claim enormous dimensions).
const MAX_DECODE_EDGE: u32 = 20_000;

/// Memory the decoder may allocate.
const MAX_DECODE_ALLOC: u64 = 512 * 1024 * 1024;

/// JPEG qualities tried in turn, then the edge is halved and they are tried again.
const QUALITIES: [u8; 3] = [85, 70, 50];

/// How often the edge is halved before giving up.
const HALVINGS: u32 = 3;

/// Downscales to `config.image_max_edge` and re-encodes as JPEG until the result fits
/// `config.image_max_bytes`; returns the bytes and a note for the model.
pub(crate) fn downscale(
    config: &FileToolsConfig,
    bytes: &[u8],
    resolved: &ResolvedPath,
) -> Result<(Vec<u8>, String), ToolError> {
    let path = resolved.display.display();
    let refuse = |why: String| {
        ToolError::InvalidRequest(format!(
            "{path} is an image of {} bytes, over the {}-byte limit, and {why}",
            bytes.len(),
            config.image_max_bytes
        ))
    };
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| refuse(format!("could not be inspected: {e}")))?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_DECODE_EDGE);
    limits.max_image_height = Some(MAX_DECODE_EDGE);
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    reader.limits(limits);
    let img = reader
        .decode()
        .map_err(|e| refuse(format!("could not be decoded to shrink it: {e}")))?;
    let (w, h) = (img.width(), img.height());
    let mut edge = config.image_max_edge.min(w.max(h)).max(1);
    for _ in 0..=HALVINGS {
        let scaled = if w.max(h) > edge {
            img.resize(edge, edge, FilterType::Triangle)
        } else {
            img.clone()
        };
        let rgb = scaled.to_rgb8();
        for quality in QUALITIES {
            let mut out = Vec::new();
            JpegEncoder::new_with_quality(&mut out, quality)
                .encode_image(&rgb)
                .map_err(|e| refuse(format!("could not be re-encoded: {e}")))?;
            if out.len() <= config.image_max_bytes {
                let note = format!(
                    "[The image {path} ({w}×{h}, {} bytes) was downscaled to {}×{} and re-encoded as JPEG ({} bytes) to fit the {}-byte limit.]",
                    bytes.len(),
                    rgb.width(),
                    rgb.height(),
                    out.len(),
                    config.image_max_bytes
                );
                return Ok((out, note));
            }
        }
        edge /= 2;
        if edge == 0 {
            break;
        }
    }
    Err(refuse("even a small JPEG version does not fit".into()))
}
