//! Limits of the file tools, as named constants with the reason for each value, gathered in
//! [`FileToolsConfig`].

use std::time::Duration;

/// Read: lines returned when the call gives no `limit` (Claude Code's value).
pub const DEFAULT_READ_LINES: usize = 2000;

/// Read: characters kept of one line; the rest is cut with a marker (Claude Code's value).
/// Minified files would otherwise spend the whole output budget on one line.
pub const DEFAULT_MAX_LINE_CHARS: usize = 2000;

/// Read: cap on the text of one result, in bytes. About 25,000 tokens at ~4 bytes per token,
/// Claude Code's default; a whole-file read over it returns the first part and a notice.
pub const DEFAULT_READ_MAX_OUTPUT_BYTES: usize = 100_000;

/// Files up to this size are hashed whole when read (for stale-read detection) and may be
/// edited; larger files can still be read with offset/limit, streamed with bounded memory.
/// 32 MiB hashes in well under 100 ms and is far beyond any hand-edited source file.
pub const DEFAULT_HASH_MAX_BYTES: u64 = 32 * 1024 * 1024;

/// Read: largest image passed to the model as it is. The Anthropic API refuses images over
/// 5 MB; base64 adds a third, so 3.75 MB of raw image stays under it.
pub const DEFAULT_IMAGE_MAX_BYTES: usize = 3_750_000;

/// Read: longest edge of a downscaled image, in pixels. Vision models downscale beyond about
/// 1568 px anyway, so larger images only cost tokens.
pub const DEFAULT_IMAGE_MAX_EDGE: u32 = 1568;

/// Read: image files larger than this are refused without decoding (decompression bombs,
/// huge scans): nothing that size is worth sending to a model.
pub const DEFAULT_IMAGE_MAX_FILE_BYTES: u64 = 50 * 1024 * 1024;

/// Read: PDFs with more pages than this need `pages` (Claude Code's value).
pub const DEFAULT_PDF_PAGES_WITHOUT_RANGE: usize = 10;

/// Read: PDFs larger than this are refused (Claude Code refuses files over 100 MB).
pub const DEFAULT_PDF_MAX_FILE_BYTES: u64 = 100 * 1024 * 1024;

/// Read: most PDF pages per call (Claude Code's value).
pub const DEFAULT_PDF_MAX_PAGES: usize = 20;

/// Glob: most paths returned; the result says when more matched (Claude Code's value).
pub const DEFAULT_GLOB_MAX_RESULTS: usize = 100;

/// Glob: time limit of one search; partial results are returned with a notice after it
/// (Claude Code's value).
pub const DEFAULT_GLOB_TIME_LIMIT: Duration = Duration::from_secs(20);

/// Grep: entries (lines, files or counts) returned when the call gives no `head_limit`
/// (Claude Code's value); `head_limit: 0` means no limit.
pub const DEFAULT_GREP_HEAD_LIMIT: usize = 250;

/// Grep: longest line printed in `content` mode; longer lines are replaced by
/// `[Omitted long line with N matches]` as `rg --max-columns` does (minified files).
pub const DEFAULT_GREP_MAX_COLUMNS: u64 = 2000;

/// Settings of the built-in file tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileToolsConfig {
    /// See [`DEFAULT_READ_LINES`].
    pub read_default_lines: usize,
    /// See [`DEFAULT_MAX_LINE_CHARS`].
    pub read_max_line_chars: usize,
    /// See [`DEFAULT_READ_MAX_OUTPUT_BYTES`].
    pub read_max_output_bytes: usize,
    /// See [`DEFAULT_HASH_MAX_BYTES`].
    pub hash_max_bytes: u64,
    /// See [`DEFAULT_IMAGE_MAX_BYTES`].
    pub image_max_bytes: usize,
    /// See [`DEFAULT_IMAGE_MAX_EDGE`].
    pub image_max_edge: u32,
    /// See [`DEFAULT_IMAGE_MAX_FILE_BYTES`].
    pub image_max_file_bytes: u64,
    /// See [`DEFAULT_PDF_PAGES_WITHOUT_RANGE`].
    pub pdf_pages_without_range: usize,
    /// See [`DEFAULT_PDF_MAX_PAGES`].
    pub pdf_max_pages: usize,
    /// See [`DEFAULT_PDF_MAX_FILE_BYTES`].
    pub pdf_max_file_bytes: u64,
    /// See [`DEFAULT_GLOB_MAX_RESULTS`].
    pub glob_max_results: usize,
    /// See [`DEFAULT_GLOB_TIME_LIMIT`].
    pub glob_time_limit: Duration,
    /// Whether Glob honours `.gitignore` and `.ignore` files. Off by default, as in Claude
    /// Code: a model looking for a file by name usually wants generated files too.
    pub glob_honour_gitignore: bool,
    /// See [`DEFAULT_GREP_HEAD_LIMIT`].
    pub grep_default_head_limit: usize,
    /// See [`DEFAULT_GREP_MAX_COLUMNS`]; `None` prints lines whole.
    pub grep_max_columns: Option<u64>,
    /// Whether Grep searches hidden files and directories. Off by default, as `rg` does, so
    /// that results equal `rg`'s; VCS directories (`.git`, …) stay skipped either way.
    pub grep_hidden: bool,
    /// Whether files with more than one hard link may be read and edited. Off by default:
    /// the other names of such a file may be outside the roots (a hard link planted in the
    /// workspace to `~/.ssh/id_rsa`), and nothing can prove otherwise. Turn it on for
    /// workspaces that rely on hard links (pnpm stores).
    pub allow_hard_links: bool,
}

impl Default for FileToolsConfig {
    fn default() -> Self {
        Self {
            read_default_lines: DEFAULT_READ_LINES,
            read_max_line_chars: DEFAULT_MAX_LINE_CHARS,
            read_max_output_bytes: DEFAULT_READ_MAX_OUTPUT_BYTES,
            hash_max_bytes: DEFAULT_HASH_MAX_BYTES,
            image_max_bytes: DEFAULT_IMAGE_MAX_BYTES,
            image_max_edge: DEFAULT_IMAGE_MAX_EDGE,
            image_max_file_bytes: DEFAULT_IMAGE_MAX_FILE_BYTES,
            pdf_pages_without_range: DEFAULT_PDF_PAGES_WITHOUT_RANGE,
            pdf_max_pages: DEFAULT_PDF_MAX_PAGES,
            pdf_max_file_bytes: DEFAULT_PDF_MAX_FILE_BYTES,
            glob_max_results: DEFAULT_GLOB_MAX_RESULTS,
            glob_time_limit: DEFAULT_GLOB_TIME_LIMIT,
            glob_honour_gitignore: false,
            grep_default_head_limit: DEFAULT_GREP_HEAD_LIMIT,
            grep_max_columns: Some(DEFAULT_GREP_MAX_COLUMNS),
            grep_hidden: false,
            allow_hard_links: false,
        }
    }
}
