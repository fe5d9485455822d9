//! Read: a file's text in `cat -n` form, an image as an image block, a notebook cell by
//! cell, a PDF's text page by page.

use std::io::{BufReader, Read as _};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolgate_core::{Session, ToolContext, ToolError, TypedTool};
use toolgate_protocol::{Access, CallFacts, ToolOutput, ToolSpec};

use crate::FileToolsConfig;
use crate::error::Error;
use crate::ledger::{Fingerprint, ReadLedger, ReadRecord};
use crate::lines::{self, Window};
use crate::paths::{self, Opened, ResolvedPath};
use crate::spec::{Class, path_subject, spec};
use crate::{ipynb, media};

/// Bytes looked at to tell text from binary (git's heuristic looks at the first 8000).
const SNIFF_BYTES: usize = 8000;

/// Buffer size for streaming large files.
const STREAM_BUFFER: usize = 256 * 1024;

/// The Read tool.
pub struct ReadTool {
    spec: ToolSpec,
    config: Arc<FileToolsConfig>,
}

/// Read's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// The file; absolute, or relative to the session's cwd.
    pub file_path: String,
    /// First line to show, 1-based.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most lines to show.
    #[serde(default)]
    pub limit: Option<u64>,
    /// PDF page range (`"3"`, `"1-5"`, `"1,4-6"`).
    #[serde(default)]
    pub pages: Option<String>,
    #[serde(skip)]
    resolved: Option<ResolvedPath>,
}

impl ReadTool {
    /// A Read tool with these limits.
    pub fn new(config: Arc<FileToolsConfig>) -> Self {
        let description = format!(
            "Reads a file from the local filesystem. The file_path must be absolute (a path relative to the current directory is accepted) and inside the session's directories.\n\
             - By default reads up to {lines} lines from the start; use offset (1-based line number) and limit for long files.\n\
             - Lines longer than {chars} characters are cut.\n\
             - Output is in cat -n format: line number, TAB, content.\n\
             - Images (PNG, JPEG, GIF, WebP) are returned as images; Jupyter notebooks (.ipynb) cell by cell with outputs; PDFs as text per page (use pages, e.g. \"1-5\", for PDFs over {pdf} pages; at most {pdf_max} pages per call).\n\
             - Directories cannot be read: use Glob to list files.",
            lines = config.read_default_lines,
            chars = config.read_max_line_chars,
            pdf = config.pdf_pages_without_range,
            pdf_max = config.pdf_max_pages,
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path to the file to read"},
                "offset": {"type": "integer", "minimum": 0, "description": "The line number to start reading from (1-based). Only provide if the file is too large to read at once"},
                "limit": {"type": "integer", "minimum": 1, "description": "The number of lines to read. Only provide if the file is too large to read at once"},
                "pages": {"type": "string", "description": "Page range for PDF files, e.g. \"1-5\" or \"3\" or \"1,4-6\""}
            },
            "required": ["file_path"],
            "additionalProperties": false
        });
        Self {
            spec: spec(
                "Read",
                &description,
                schema,
                Class::Reader,
                (60_000, 120_000),
                path_subject("file_path", false),
            ),
            config,
        }
    }
}

#[async_trait]
impl TypedTool for ReadTool {
    type Input = ReadInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut ReadInput, ctx: &ToolContext) -> Result<(), ToolError> {
        let resolved = paths::resolve(&ctx.session, &input.file_path)?;
        if !resolved.exists {
            return Err(Error::NotFound(resolved.display).into());
        }
        if resolved.is_dir {
            return Err(Error::IsDirectory(resolved.display).into());
        }
        input.file_path = resolved.display.to_string_lossy().into_owned();
        input.resolved = Some(resolved);
        Ok(())
    }

    fn analyze(&self, input: &ReadInput, ctx: &ToolContext) -> CallFacts {
        file_facts(input.resolved.as_ref(), &ctx.session, Access::Read)
    }

    fn normalized(&self, input: &ReadInput) -> Option<Value> {
        let mut v = json!({ "file_path": input.file_path });
        if let Some(o) = input.offset {
            v["offset"] = json!(o);
        }
        if let Some(l) = input.limit {
            v["limit"] = json!(l);
        }
        if let Some(p) = &input.pages {
            v["pages"] = json!(p);
        }
        Some(v)
    }

    async fn run(&self, mut input: ReadInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let resolved = take_resolved(input.resolved.take())?;
        // Opening is the same kind of system call `validate` has already made on this task
        // resolving the path (and cannot hang on a FIFO: O_NONBLOCK).
        let opened = open(&self.config, &resolved)?;
        let config = Arc::clone(&self.config);
        let work: Box<dyn FnOnce() -> Result<ToolOutput, ToolError> + Send> =
            if on_local_file_system(&opened.file) {
                let file = sniff_opened(&resolved, opened, true)?;
                if file.renders_inline() {
                    return render_opened(&config, &ctx, &resolved, file, input);
                }
                Box::new(move || render_opened(&config, &ctx, &resolved, file, input))
            } else {
                // Not even the first bytes are read here: on a network or FUSE file
                // system any read can wait.
                Box::new(move || {
                    let file = sniff_opened(&resolved, opened, false)?;
                    render_opened(&config, &ctx, &resolved, file, input)
                })
            };
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| ToolError::Failed(format!("Read stopped unexpectedly: {e}")))?
    }
}

/// Facts for a single-path tool.
pub(crate) fn file_facts(
    resolved: Option<&ResolvedPath>,
    session: &Session,
    access: Access,
) -> CallFacts {
    match resolved {
        Some(r) => CallFacts {
            subject: Some(r.display.to_string_lossy().into_owned()),
            paths: r.facts(session, access),
            ..CallFacts::default()
        },
        None => CallFacts::default(),
    }
}

/// The resolved path stored by `validate`.
pub(crate) fn take_resolved(resolved: Option<ResolvedPath>) -> Result<ResolvedPath, ToolError> {
    resolved.ok_or_else(|| ToolError::Failed("internal: the path was not validated".into()))
}

/// What the first bytes say the file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sniffed {
    Image(&'static str),
    Pdf,
    Binary,
    Text,
}

fn sniff(head: &[u8]) -> Sniffed {
    if let Some(mime) = media::image_mime(head) {
        return Sniffed::Image(mime);
    }
    if head.starts_with(b"%PDF-") {
        return Sniffed::Pdf;
    }
    if memchr::memchr(0, head).is_some() {
        return Sniffed::Binary;
    }
    Sniffed::Text
}

/// Text files up to this size are rendered on the calling task instead of the blocking
/// pool. Handing a call to a pool thread and back costs two thread wake-ups, which was more
/// than reading and rendering a small file from the page cache; larger files, images, PDFs
/// and notebooks (whose decoding can take long whatever their size) still go to the pool.
const INLINE_TEXT_MAX_BYTES: u64 = 64 * 1024;

/// File systems whose reads are served by this machine (`statfs(2)` magic numbers). On
/// any other — NFS, SMB, FUSE, … — a read can wait on a network or another process, so it
/// goes to the blocking pool whatever its size and never stalls the caller's other calls.
const LOCAL_FILE_SYSTEMS: [u64; 10] = [
    0xEF53,      // ext2/3/4
    0x5846_5342, // xfs
    0x9123_683E, // btrfs
    0x0102_1994, // tmpfs
    0x8584_58F6, // ramfs
    0x794C_7630, // overlayfs
    0xF2F5_2010, // f2fs
    0x2FC1_2FC1, // zfs
    0x7371_7368, // squashfs
    0x4D44,      // vfat
];

/// An opened file with its first bytes looked at.
struct SniffedFile {
    opened: Opened,
    kind: Sniffed,
    is_notebook: bool,
    /// The whole content, when the sniff read reached the end of the file: most files a
    /// model reads are smaller than [`SNIFF_BYTES`], and reading them a second time would
    /// double the system calls of a call.
    whole: Option<Vec<u8>>,
}

impl SniffedFile {
    /// A small text file (on a local file system: the caller checked).
    fn renders_inline(&self) -> bool {
        self.kind == Sniffed::Text
            && !self.is_notebook
            && self.opened.size() <= INLINE_TEXT_MAX_BYTES
    }
}

fn open(config: &FileToolsConfig, resolved: &ResolvedPath) -> Result<Opened, ToolError> {
    let root = resolved.root_dir()?;
    Ok(paths::open_file(
        &root,
        &resolved.rel,
        &resolved.real,
        config.allow_hard_links,
    )?)
}

/// Reads the first bytes of `opened` (`local`: it is on a local file system).
fn sniff_opened(
    resolved: &ResolvedPath,
    opened: Opened,
    local: bool,
) -> Result<SniffedFile, ToolError> {
    let mut head = vec![0u8; SNIFF_BYTES];
    let n = read_at_full(&opened, &mut head, local)
        .map_err(|e| Error::io("reading", &resolved.real, e))?;
    // `read_at_full` stops short of the buffer only at the end of the file.
    let reached_end = n < head.len();
    head.truncate(n);
    let kind = sniff(&head);
    let is_notebook = resolved
        .real
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ipynb"));
    Ok(SniffedFile {
        opened,
        kind,
        is_notebook,
        whole: reached_end.then_some(head),
    })
}

/// Whether the file lies on a file system in [`LOCAL_FILE_SYSTEMS`]; `false` if unknown.
fn on_local_file_system(file: &std::fs::File) -> bool {
    rustix::fs::fstatfs(file).is_ok_and(|st| {
        // The magic is a signed or unsigned word depending on the architecture; the known
        // values are all positive 32-bit numbers.
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        let magic = st.f_type as u64;
        LOCAL_FILE_SYSTEMS.contains(&magic)
    })
}

fn render_opened(
    config: &FileToolsConfig,
    ctx: &ToolContext,
    resolved: &ResolvedPath,
    file: SniffedFile,
    input: ReadInput,
) -> Result<ToolOutput, ToolError> {
    let SniffedFile {
        opened,
        kind,
        is_notebook,
        whole,
    } = file;
    if input.pages.is_some() && kind != Sniffed::Pdf {
        return Err(ToolError::InvalidRequest(format!(
            "`pages` applies to PDF files only and {} is not a PDF; use offset and limit for text",
            resolved.display.display()
        )));
    }
    match kind {
        Sniffed::Image(mime) => media::read_image(config, resolved, opened, mime),
        Sniffed::Pdf => media::read_pdf(config, resolved, opened, input.pages.as_deref()),
        Sniffed::Binary => Err(ToolError::InvalidRequest(format!(
            "{} is a binary file ({} bytes) and Read shows text, images, notebooks and PDFs only",
            resolved.display.display(),
            opened.size()
        ))),
        Sniffed::Text if is_notebook => {
            let (bytes, hash) = read_whole_from(config, resolved, opened, whole)?;
            let out = ipynb::render(&bytes, &resolved.display)?;
            record(ctx, resolved, Fingerprint::Content(hash), false);
            Ok(out)
        }
        Sniffed::Text => read_text(
            config,
            ctx,
            resolved,
            (opened, whole),
            input.offset,
            input.limit,
        ),
    }
}

/// `pread` until the buffer is full or the file ends. On a local file system (`local`) a
/// short read that has reached the size `fstat` reported is taken as the end: asking again
/// would only confirm it (a file growing meanwhile is read as it was at that read, as it
/// would be a moment earlier). Elsewhere sizes can be wrong (FUSE, network file systems
/// report what they like), so only an empty read ends it.
fn read_at_full(opened: &Opened, buf: &mut [u8], local: bool) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match opened.file.read_at(&mut buf[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                if local && filled < buf.len() && filled as u64 >= opened.size() {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// How the size limit of [`read_whole`] is named in errors.
const WHOLE_FILE_WHAT: &str =
    "editing, overwriting and notebooks (larger files can be read with offset and limit only)";

/// [`read_whole`], taking the content from `whole` when the sniff has already read all of
/// it.
fn read_whole_from(
    config: &FileToolsConfig,
    resolved: &ResolvedPath,
    opened: Opened,
    whole: Option<Vec<u8>>,
) -> Result<(Vec<u8>, [u8; 32]), ToolError> {
    match whole {
        Some(bytes) => hashed_within_limit(config, resolved, bytes),
        None => read_whole(config, resolved, opened),
    }
}

/// Reads a whole file of at most `hash_max_bytes`, with its hash.
pub(crate) fn read_whole(
    config: &FileToolsConfig,
    resolved: &ResolvedPath,
    mut opened: Opened,
) -> Result<(Vec<u8>, [u8; 32]), ToolError> {
    let size = opened.size();
    if size > config.hash_max_bytes {
        return Err(Error::TooLarge {
            path: resolved.display.clone(),
            size,
            limit: config.hash_max_bytes,
            what: WHOLE_FILE_WHAT,
        }
        .into());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // A file growing while it is read is cut at the limit rather than read without bound.
    (&mut opened.file)
        .take(config.hash_max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("reading", &resolved.real, e))?;
    hashed_within_limit(config, resolved, bytes)
}

/// `bytes` with their SHA-256, or the size error when they exceed `hash_max_bytes`.
fn hashed_within_limit(
    config: &FileToolsConfig,
    resolved: &ResolvedPath,
    bytes: Vec<u8>,
) -> Result<(Vec<u8>, [u8; 32]), ToolError> {
    if bytes.len() as u64 > config.hash_max_bytes {
        return Err(Error::TooLarge {
            path: resolved.display.clone(),
            size: bytes.len() as u64,
            limit: config.hash_max_bytes,
            what: WHOLE_FILE_WHAT,
        }
        .into());
    }
    let hash: [u8; 32] = Sha256::digest(&bytes).into();
    Ok((bytes, hash))
}

fn record(ctx: &ToolContext, resolved: &ResolvedPath, fingerprint: Fingerprint, partial: bool) {
    ReadLedger::of(&ctx.session).record(
        &resolved.real,
        ReadRecord {
            fingerprint,
            partial,
        },
    );
}

fn read_text(
    config: &FileToolsConfig,
    ctx: &ToolContext,
    resolved: &ResolvedPath,
    (opened, whole): (Opened, Option<Vec<u8>>),
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    let whole_request = offset.is_none() && limit.is_none();
    let window = Window {
        first: offset.unwrap_or(1).max(1),
        limit: limit.unwrap_or(config.read_default_lines as u64),
        max_line_chars: config.read_max_line_chars,
        max_bytes: config.read_max_output_bytes,
    };
    let cancel = ctx.cancel.clone();
    let cancelled = move || cancel.is_cancelled();
    let stat = opened.stat;
    let (rendered, total_lines, fingerprint) = if opened.size() <= config.hash_max_bytes {
        let (bytes, hash) = read_whole_from(config, resolved, opened, whole)?;
        let total = lines::count_lines(&bytes);
        let mut slice = bytes.as_slice();
        let rendered = lines::render(&mut slice, window, &cancelled)
            .map_err(|e| Error::io("reading", &resolved.real, e))?;
        (rendered, Some(total), Fingerprint::Content(hash))
    } else {
        let mut reader = BufReader::with_capacity(STREAM_BUFFER, opened.file);
        let rendered = lines::render(&mut reader, window, &cancelled).map_err(|e| {
            if e.kind() == std::io::ErrorKind::Interrupted {
                ToolError::Cancelled
            } else {
                Error::io("reading", &resolved.real, e).into()
            }
        })?;
        (rendered, None, Fingerprint::of_stat(&stat))
    };
    let path = resolved.display.display();
    let last = window.first + rendered.shown.saturating_sub(1);
    let partial = window.first > 1 || !rendered.at_eof || rendered.capped || rendered.cut_lines;
    let structured = json!({
        "file_path": resolved.display,
        "start_line": window.first,
        "num_lines": rendered.shown,
        "total_lines": total_lines,
        "partial": partial,
    });
    let mut text = rendered.text;
    if rendered.shown == 0 {
        let lines_in_file = total_lines.unwrap_or(rendered.skipped);
        let notice = if lines_in_file == 0 {
            format!("<system-reminder>The file {path} exists but is empty.</system-reminder>")
        } else {
            format!(
                "<system-reminder>The file {path} has only {lines_in_file} lines, so offset {} is past its end. Use a smaller offset.</system-reminder>",
                window.first
            )
        };
        record(ctx, resolved, fingerprint, lines_in_file != 0);
        return Ok(ToolOutput::text(notice).with_structured(structured));
    }
    record(ctx, resolved, fingerprint, partial);
    let of_total = total_lines.map_or_else(String::new, |t| format!(" of {t}"));
    if rendered.capped {
        let why = if whole_request {
            "the file is larger than the output limit"
        } else {
            "the requested lines are larger than the output limit"
        };
        text.push_str(&format!(
            "\n<system-reminder>Partial view: {why} ({} bytes, about {} tokens), so only lines {}–{last}{of_total} are shown. Use offset={} and limit to read the rest.</system-reminder>",
            config.read_max_output_bytes,
            config.read_max_output_bytes / 4,
            window.first,
            last + 1
        ));
    } else if !rendered.at_eof {
        text.push_str(&format!(
            "\n<system-reminder>Showing lines {}–{last}{of_total}. Use offset={} to read more.</system-reminder>",
            window.first,
            last + 1
        ));
    }
    if rendered.cut_lines {
        text.push_str(&format!(
            "\n<system-reminder>Some lines were longer than {} characters and were cut.</system-reminder>",
            config.read_max_line_chars
        ));
    }
    Ok(ToolOutput::text(text).with_structured(structured))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_and_pseudo_file_systems_are_not_read_inline() {
        // procfs stands in for any file system not on the list: its reads run code.
        let proc_file = std::fs::File::open("/proc/self/status").unwrap();
        assert!(!on_local_file_system(&proc_file));
    }
}
