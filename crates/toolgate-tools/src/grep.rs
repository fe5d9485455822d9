//! Grep: ripgrep's search, as a tool. Results equal `rg`'s for the same query; files come in
//! path order (as `rg --sort path`).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_core::{ToolContext, ToolError, TypedTool};
use toolgate_protocol::{Access, CallFacts, ToolOutput, ToolSpec};

use crate::FileToolsConfig;
use crate::error::Error;
use crate::glob::{count_of, withheld_note};
use crate::paths::{self, ResolvedPath};
use crate::read::file_facts;
use crate::search::{self, Found, OutputMode, Query};
use crate::spec::{Class, path_subject, spec};

/// The Grep tool.
pub struct GrepTool {
    spec: ToolSpec,
    config: Arc<FileToolsConfig>,
}

/// Grep's input (Claude Code's field names, flags included).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    /// The regular expression (Rust regex syntax).
    pub pattern: String,
    /// File or directory to search; the session's cwd when absent.
    #[serde(default)]
    pub path: Option<String>,
    /// Only files matching this glob (`*.rs`, `*.{ts,tsx}`), as `rg --glob`.
    #[serde(default)]
    pub glob: Option<String>,
    /// Only files of this ripgrep type (`rust`, `py`, `js`), as `rg --type`.
    #[serde(default, rename = "type")]
    pub file_type: Option<String>,
    /// `content`, `files_with_matches` (default) or `count`.
    #[serde(default)]
    pub output_mode: Option<OutputMode>,
    /// Case-insensitive.
    #[serde(default, rename = "-i")]
    pub case_insensitive: Option<bool>,
    /// Line numbers in `content` mode (default true).
    #[serde(default, rename = "-n")]
    pub line_numbers: Option<bool>,
    /// Lines after each match.
    #[serde(default, rename = "-A")]
    pub after: Option<u64>,
    /// Lines before each match.
    #[serde(default, rename = "-B")]
    pub before: Option<u64>,
    /// Lines before and after each match.
    #[serde(default, rename = "-C")]
    pub context_c: Option<u64>,
    /// Same as `-C`.
    #[serde(default)]
    pub context: Option<u64>,
    /// Only the matched parts of lines.
    #[serde(default, rename = "-o")]
    pub only_matching: Option<bool>,
    /// Patterns may span lines and `.` matches newlines (`rg -U --multiline-dotall`).
    #[serde(default)]
    pub multiline: Option<bool>,
    /// Most entries (lines, files or counts) returned; 0 means no limit.
    #[serde(default)]
    pub head_limit: Option<u64>,
    /// Entries skipped before `head_limit` applies.
    #[serde(default)]
    pub offset: Option<u64>,
    #[serde(skip)]
    prepared: Option<(ResolvedPath, Query)>,
}

impl GrepTool {
    /// A Grep tool with these limits.
    pub fn new(config: Arc<FileToolsConfig>) -> Self {
        let description = format!(
            "A powerful search tool built on ripgrep.\n\
             - Supports full regex syntax (e.g. \"log.*Error\", \"function\\\\s+\\\\w+\"); literal braces need escaping (\"interface\\\\{{\\\\}}\").\n\
             - Filter files with glob (e.g. \"*.js\", \"**/*.tsx\") or type (e.g. \"js\", \"py\", \"rust\").\n\
             - output_mode: \"files_with_matches\" (default) lists file paths, \"content\" shows matching lines (-n, -A, -B, -C apply), \"count\" shows match counts per file.\n\
             - Respects .gitignore and skips hidden files, as rg does. Patterns match within single lines unless multiline is true.\n\
             - head_limit (default {limit}, 0 for no limit) and offset page through results.",
            limit = config.grep_default_head_limit
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression pattern to search for in file contents"},
                "path": {"type": "string", "description": "File or directory to search in (rg PATH). Defaults to the current working directory"},
                "glob": {"type": "string", "description": "Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\") - maps to rg --glob"},
                "type": {"type": "string", "description": "File type to search (rg --type), e.g. js, py, rust, go, java. More efficient than glob for standard file types"},
                "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "Output mode: \"content\" shows matching lines, \"files_with_matches\" shows file paths (default), \"count\" shows match counts"},
                "-i": {"type": "boolean", "description": "Case insensitive search (rg -i)"},
                "-n": {"type": "boolean", "description": "Show line numbers in output (rg -n). Requires output_mode \"content\"; defaults to true"},
                "-A": {"type": "integer", "minimum": 0, "description": "Number of lines to show after each match (rg -A). Requires output_mode \"content\""},
                "-B": {"type": "integer", "minimum": 0, "description": "Number of lines to show before each match (rg -B). Requires output_mode \"content\""},
                "-C": {"type": "integer", "minimum": 0, "description": "Number of lines to show before and after each match (rg -C). Requires output_mode \"content\""},
                "context": {"type": "integer", "minimum": 0, "description": "Alias of -C"},
                "-o": {"type": "boolean", "description": "Print only the matched parts of lines (rg -o)"},
                "multiline": {"type": "boolean", "description": "Enable multiline mode where . matches newlines and patterns can span lines (rg -U --multiline-dotall). Default: false"},
                "head_limit": {"type": "integer", "minimum": 0, "description": "Limit output to the first N lines/entries, like \"| head -N\". Defaults to 250; 0 means no limit"},
                "offset": {"type": "integer", "minimum": 0, "description": "Skip the first N lines/entries before applying head_limit, like \"| tail -n +N | head -N\". Defaults to 0"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        });
        Self {
            spec: spec(
                "Grep",
                &description,
                schema,
                Class::Reader,
                (60_000, 600_000),
                path_subject("path", false),
            ),
            config,
        }
    }

    fn compile(&self, input: &GrepInput, base: &ResolvedPath) -> Result<Query, ToolError> {
        let multiline = input.multiline.unwrap_or(false);
        let mut mb = RegexMatcherBuilder::new();
        // As rg configures it: `^`/`$` at line boundaries; without multiline, a pattern may
        // not match a line terminator.
        mb.case_insensitive(input.case_insensitive.unwrap_or(false))
            .multi_line(true)
            .octal(false)
            .unicode(true);
        if multiline {
            mb.dot_matches_new_line(true);
        } else {
            mb.line_terminator(Some(b'\n')).dot_matches_new_line(false);
        }
        let matcher = mb.build(&input.pattern).map_err(|e| {
            let mut msg = format!("regex parse error: {e}");
            if !multiline && e.to_string().contains("\\n") {
                msg.push_str("\nSet multiline to true to match across lines.");
            }
            ToolError::InvalidRequest(msg)
        })?;
        let types = match &input.file_type {
            Some(t) => {
                let mut tb = TypesBuilder::new();
                tb.add_defaults();
                tb.select(t);
                Some(tb.build().map_err(|e| {
                    ToolError::InvalidRequest(format!(
                        "{e}; use a ripgrep type name such as rust, py, js, ts, go, java, c, cpp, or use glob"
                    ))
                })?)
            }
            None => None,
        };
        let overrides = match &input.glob {
            Some(g) if !g.is_empty() => {
                let mut ob = OverrideBuilder::new(&base.real);
                ob.add(g)
                    .map_err(|e| ToolError::InvalidRequest(format!("invalid glob {g:?}: {e}")))?;
                Some(
                    ob.build().map_err(|e| {
                        ToolError::InvalidRequest(format!("invalid glob {g:?}: {e}"))
                    })?,
                )
            }
            _ => None,
        };
        let c = input.context_c.or(input.context);
        let to_usize = |v: Option<u64>| v.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let head_limit = input
            .head_limit
            .unwrap_or(self.config.grep_default_head_limit as u64);
        Ok(Query {
            matcher,
            mode: input.output_mode.unwrap_or(OutputMode::FilesWithMatches),
            line_numbers: input.line_numbers.unwrap_or(true),
            before: to_usize(input.before.or(c)),
            after: to_usize(input.after.or(c)),
            only_matching: input.only_matching.unwrap_or(false),
            multiline,
            max_columns: self.config.grep_max_columns,
            hidden: self.config.grep_hidden,
            types,
            overrides,
            allow_hard_links: self.config.allow_hard_links,
            need: (head_limit > 0).then(|| head_limit.saturating_add(input.offset.unwrap_or(0))),
        })
    }
}

#[async_trait]
impl TypedTool for GrepTool {
    type Input = GrepInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut GrepInput, ctx: &ToolContext) -> Result<(), ToolError> {
        let raw = input.path.clone().filter(|p| !p.is_empty());
        let base = paths::resolve(&ctx.session, raw.as_deref().unwrap_or("."))?;
        if !base.exists {
            return Err(Error::NotFound(base.display).into());
        }
        let query = self.compile(input, &base)?;
        input.path = Some(base.display.to_string_lossy().into_owned());
        input.prepared = Some((base, query));
        Ok(())
    }

    fn analyze(&self, input: &GrepInput, ctx: &ToolContext) -> CallFacts {
        file_facts(
            input.prepared.as_ref().map(|(b, _)| b),
            &ctx.session,
            Access::Read,
        )
    }

    fn normalized(&self, input: &GrepInput) -> Option<Value> {
        let mut v = json!({ "pattern": input.pattern, "path": input.path });
        let mut put = |k: &str, val: Value| {
            if !val.is_null() {
                v[k] = val;
            }
        };
        put("glob", json!(input.glob));
        put("type", json!(input.file_type));
        put("output_mode", json!(input.output_mode.map(mode_name)));
        put("-i", json!(input.case_insensitive));
        put("-n", json!(input.line_numbers));
        put("-A", json!(input.after));
        put("-B", json!(input.before));
        put("-C", json!(input.context_c));
        put("context", json!(input.context));
        put("-o", json!(input.only_matching));
        put("multiline", json!(input.multiline));
        put("head_limit", json!(input.head_limit));
        put("offset", json!(input.offset));
        Some(v)
    }

    async fn run(&self, input: GrepInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let (base, query) = input
            .prepared
            .ok_or_else(|| ToolError::Failed("internal: the query was not validated".into()))?;
        let head_limit = input
            .head_limit
            .unwrap_or(self.config.grep_default_head_limit as u64);
        let offset = input.offset.unwrap_or(0);
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let root = base.root_dir()?;
            let deadline = started + ctx.timeout;
            let found = search::search(
                &query,
                &root,
                &base.real,
                base.is_dir,
                deadline,
                &ctx.cancel,
                ctx.read_filter.clone(),
            );
            if found.stopped {
                if ctx.cancel.is_cancelled() {
                    return Err(ToolError::Cancelled);
                }
                return Err(ToolError::Timeout(ctx.timeout.as_millis() as u64));
            }
            Ok(render(&query, found, head_limit, offset, started))
        })
        .await
        .map_err(|e| ToolError::Failed(format!("Grep stopped unexpectedly: {e}")))?
    }
}

fn mode_name(mode: OutputMode) -> &'static str {
    match mode {
        OutputMode::Content => "content",
        OutputMode::FilesWithMatches => "files_with_matches",
        OutputMode::Count => "count",
    }
}

fn render(
    query: &Query,
    found: Found,
    head_limit: u64,
    offset: u64,
    started: Instant,
) -> ToolOutput {
    let context = query.mode == OutputMode::Content && (query.before > 0 || query.after > 0);
    let mut lines: Vec<String> = Vec::new();
    for (i, bytes) in found.files.values().enumerate() {
        if context && i > 0 {
            lines.push("--".to_owned());
        }
        // Split on `\n` only: a `\r` before it is part of the line, as rg prints it.
        let text = String::from_utf8_lossy(bytes);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        lines.extend(text.split('\n').map(str::to_owned));
    }
    let total_entries = found.entries.saturating_sub(u64::from(context));
    let skip = usize::try_from(offset).unwrap_or(usize::MAX);
    let take = if head_limit == 0 {
        usize::MAX
    } else {
        usize::try_from(head_limit).unwrap_or(usize::MAX)
    };
    let shown: Vec<String> = lines.into_iter().skip(skip).take(take).collect();
    let shown_len = shown.len() as u64;
    let more = total_entries.saturating_sub(offset.saturating_add(shown_len));
    let mut text = match query.mode {
        OutputMode::FilesWithMatches if found.matched_files == 0 => "No files found".to_owned(),
        OutputMode::FilesWithMatches => {
            let noun = if found.matched_files == 1 {
                "file"
            } else {
                "files"
            };
            format!("Found {} {noun}\n{}", found.matched_files, shown.join("\n"))
        }
        _ if found.matched_files == 0 => "No matches found".to_owned(),
        _ => shown.join("\n"),
    };
    if query.mode == OutputMode::Count && found.matched_files > 0 {
        let (one, many) = if query.only_matching {
            ("occurrence", "occurrences")
        } else {
            ("matching line", "matching lines")
        };
        text.push_str(&format!(
            "\n\nFound {} across {}.",
            count_of(found.total_count, one, many),
            count_of(found.matched_files, "file", "files")
        ));
    }
    if more > 0 && head_limit > 0 {
        text.push_str(&format!(
            "\n\n(Showing {shown_len} of {total_entries} entries after offset {offset}; use offset={} to see more.)",
            offset.saturating_add(shown_len)
        ));
    }
    if found.hard_linked > 0 {
        text.push_str(&format!(
            "\n({} with several hard links {} left out: their other names may be outside the workspace.)",
            count_of(found.hard_linked, "file", "files"),
            if found.hard_linked == 1 { "was" } else { "were" }
        ));
    }
    if found.withheld > 0 {
        text.push_str(&withheld_note(
            found.withheld,
            "file or directory",
            "files or directories",
        ));
    }
    ToolOutput::text(text).with_structured(json!({
        "mode": mode_name(query.mode),
        "numFiles": found.matched_files,
        "numEntries": total_entries,
        "shown": shown_len,
        "offset": offset,
        "truncated": more > 0 && head_limit > 0,
        "unreadable": found.unreadable,
        "withheld": found.withheld,
        "durationMs": started.elapsed().as_millis() as u64,
    }))
}
