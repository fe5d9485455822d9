//! Glob: files whose path matches a glob pattern, newest first.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use ignore::{WalkBuilder, WalkState};
use rustix::fs::{Mode, OFlags};
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_core::stages::ReadFilter;
use toolgate_core::{ToolContext, ToolError, TypedTool};
use toolgate_protocol::{Access, CallFacts, ToolOutput, ToolSpec};

use crate::FileToolsConfig;
use crate::error::Error;
use crate::paths::{self, ResolvedPath};
use crate::read::file_facts;
use crate::spec::{Class, path_subject, spec};

/// Directories of version-control systems: their contents are never listed or searched
/// (thousands of object files, newest first, would bury every real result).
pub(crate) const VCS_DIRS: [&str; 4] = [".git", ".hg", ".svn", ".jj"];

/// The walkers' entry filter: leaves out version-control directories (when `skip_vcs`) and
/// every entry a deny or ask rule keeps from being read — its name too, as in Claude Code.
/// The permission decision allowed the walk as a whole; this keeps a denied file inside it
/// from being read.
///
/// Only the left-out entries `would_count` accepts are counted in `withheld`: files that
/// would have been results. Counting every denied entry would tell the model that a denied
/// file exists even when the query could never have found it (`**/*.nomatch`).
pub(crate) fn entry_filter(
    skip_vcs: bool,
    read_filter: Option<ReadFilter>,
    withheld: Arc<AtomicU64>,
    would_count: impl Fn(&ignore::DirEntry) -> bool + Send + Sync + 'static,
) -> impl Fn(&ignore::DirEntry) -> bool + Send + Sync + 'static {
    move |e| {
        if skip_vcs
            && e.file_type().is_some_and(|t| t.is_dir())
            && VCS_DIRS.iter().any(|v| e.file_name() == *v)
        {
            return false;
        }
        if read_filter.as_ref().is_some_and(|f| f(e.path()).is_some()) {
            if would_count(e) {
                withheld.fetch_add(1, Ordering::Relaxed);
            }
            return false;
        }
        true
    }
}

/// `n` followed by the singular or plural noun: "1 file", "2 files".
pub(crate) fn count_of(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The note that tells the model how many results the permission rules kept from it,
/// counted as `one`/`many` ("file"/"files").
pub(crate) fn withheld_note(withheld: u64, one: &str, many: &str) -> String {
    format!(
        "\n(Left out because the permission rules deny reading them: {}.)",
        count_of(withheld, one, many)
    )
}

/// The Glob tool.
pub struct GlobTool {
    spec: ToolSpec,
    config: Arc<FileToolsConfig>,
}

/// Glob's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// The pattern (`**/*.rs`, `src/*.ts`, `*.{js,jsx}`).
    pub pattern: String,
    /// The directory to search; the session's cwd when absent.
    #[serde(default)]
    pub path: Option<String>,
    #[serde(skip)]
    compiled: Option<Compiled>,
}

/// The pattern, split into a literal base directory and a matcher for the rest.
#[derive(Debug, Clone)]
struct Compiled {
    base: ResolvedPath,
    matcher: GlobMatcher,
    /// The rest of the pattern has no `/`: match file names at any depth.
    name_only: bool,
}

fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// Moves the pattern's leading literal directories into the base (`src/**/*.rs` searches
/// `src` for `**/*.rs`; an absolute pattern names its own base).
fn split_pattern(pattern: &str) -> (Option<String>, String) {
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts
        .iter()
        .take(parts.len().saturating_sub(1))
        .take_while(|p| !has_meta(p))
        .count();
    if literal == 0 {
        return (None, pattern.to_owned());
    }
    let mut base = parts[..literal].join("/");
    if base.is_empty() {
        base.push('/');
    }
    (Some(base), parts[literal..].join("/"))
}

impl GlobTool {
    /// A Glob tool with these limits.
    pub fn new(config: Arc<FileToolsConfig>) -> Self {
        let description = format!(
            "Fast file pattern matching for any codebase size.\n\
             - Supports glob patterns like \"**/*.js\" or \"src/**/*.ts\"; a pattern without '/' matches file names at any depth.\n\
             - Returns absolute paths sorted by modification time, newest first, at most {max}; hidden files are included{gi}.\n\
             - Use it to find files by name; use Grep to search file contents.",
            max = config.glob_max_results,
            gi = if config.glob_honour_gitignore {
                " and .gitignore is honoured"
            } else {
                " and .gitignore is not honoured"
            },
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The glob pattern to match files against"},
                "path": {"type": "string", "description": "The directory to search in. If not specified, the current working directory will be used. Omit it for the default; do not send \"undefined\" or \"null\""}
            },
            "required": ["pattern"],
            "additionalProperties": false
        });
        Self {
            spec: spec(
                "Glob",
                &description,
                schema,
                Class::Reader,
                (30_000, 60_000),
                path_subject("path", false),
            ),
            config,
        }
    }
}

fn compile(pattern: &str, path: Option<&str>, ctx: &ToolContext) -> Result<Compiled, ToolError> {
    if pattern.trim().is_empty() {
        return Err(ToolError::InvalidRequest(
            "pattern is empty; send a glob such as \"**/*.rs\"".into(),
        ));
    }
    let name_only = !pattern.contains('/');
    let (literal, rest) = split_pattern(pattern);
    let base_raw = match (&literal, path) {
        (Some(lit), _) if Path::new(lit).is_absolute() => lit.clone(),
        (Some(lit), Some(p)) => format!("{}/{lit}", p.trim_end_matches('/')),
        (Some(lit), None) => lit.clone(),
        (None, Some(p)) => p.to_owned(),
        (None, None) => ".".to_owned(),
    };
    let base = paths::resolve(&ctx.session, &base_raw)?;
    if !base.exists {
        return Err(Error::NotFound(base.display).into());
    }
    if !base.is_dir {
        return Err(Error::NotDirectory(base.display).into());
    }
    let matcher = GlobBuilder::new(&rest)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| {
            ToolError::InvalidRequest(format!("invalid glob pattern {pattern:?}: {}", e.kind()))
        })?
        .compile_matcher();
    Ok(Compiled {
        base,
        matcher,
        name_only,
    })
}

#[async_trait]
impl TypedTool for GlobTool {
    type Input = GlobInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut GlobInput, ctx: &ToolContext) -> Result<(), ToolError> {
        let path = input.path.as_deref().filter(|p| !p.is_empty());
        let compiled = compile(&input.pattern, path, ctx)?;
        let base_abs = paths::absolute(&ctx.session, path.unwrap_or("."))?;
        input.path = Some(base_abs.to_string_lossy().into_owned());
        input.compiled = Some(compiled);
        Ok(())
    }

    fn analyze(&self, input: &GlobInput, ctx: &ToolContext) -> CallFacts {
        file_facts(
            input.compiled.as_ref().map(|c| &c.base),
            &ctx.session,
            Access::Read,
        )
    }

    fn normalized(&self, input: &GlobInput) -> Option<Value> {
        Some(json!({ "pattern": input.pattern, "path": input.path }))
    }

    async fn run(&self, input: GlobInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let config = Arc::clone(&self.config);
        tokio::task::spawn_blocking(move || glob_blocking(&config, &ctx, input))
            .await
            .map_err(|e| ToolError::Failed(format!("Glob stopped unexpectedly: {e}")))?
    }
}

type Found = Vec<(PathBuf, SystemTime)>;

fn glob_blocking(
    config: &FileToolsConfig,
    ctx: &ToolContext,
    input: GlobInput,
) -> Result<ToolOutput, ToolError> {
    let started = Instant::now();
    let compiled = input
        .compiled
        .ok_or_else(|| ToolError::Failed("internal: the pattern was not validated".into()))?;
    let base = compiled.base.clone();
    let root = base.root_dir()?;
    // The base directory itself must still be beneath the root.
    paths::open_dir(&root, &base.rel, &base.real)?;
    let limit = config.glob_time_limit.min(ctx.timeout);
    let deadline = started + limit;
    let withheld = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&withheld);
    let read_filter = ctx.read_filter.clone();
    let would_count = {
        let matcher = compiled.matcher.clone();
        let name_only = compiled.name_only;
        let base = base.real.clone();
        move |e: &ignore::DirEntry| {
            e.file_type().is_some_and(|t| !t.is_dir())
                && matches(&matcher, name_only, &base, e.path())
        }
    };
    let mut builder = WalkBuilder::new(&base.real);
    builder
        .standard_filters(config.glob_honour_gitignore)
        .hidden(false)
        .follow_links(false)
        .filter_entry(entry_filter(true, read_filter, counter, would_count));
    let shared = Shared {
        matcher: &compiled.matcher,
        name_only: compiled.name_only,
        base: &base.real,
        deadline,
        cancel: ctx.cancel.clone(),
        found: Mutex::new(Vec::new()),
        timed_out: AtomicBool::new(false),
    };
    builder.build_parallel().visit(&mut &shared);
    let timed_out = shared.timed_out.load(Ordering::Relaxed);
    let mut all = shared
        .found
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let total = all.len();
    let truncated = total > config.glob_max_results;
    // Every path returned is checked once more beneath the root: a directory swapped for a
    // symlink during the walk cannot smuggle in names from outside.
    let names: Vec<String> = all
        .into_iter()
        .filter(|(p, _)| {
            p.strip_prefix(root.path()).is_ok_and(|rel| {
                root.open_beneath(rel, OFlags::PATH | OFlags::NOFOLLOW, Mode::empty())
                    .is_ok()
            })
        })
        .take(config.glob_max_results)
        .map(|(p, _)| p.to_string_lossy().into_owned())
        .collect();
    let mut text = if names.is_empty() {
        "No files found".to_owned()
    } else {
        names.join("\n")
    };
    if truncated {
        text.push_str(&format!(
            "\n(Results are truncated: {} matched and the {} most recently modified are shown. Use a more specific path or pattern.)",
            count_of(total as u64, "file", "files"),
            config.glob_max_results
        ));
    }
    if timed_out {
        text.push_str(&format!(
            "\n(The search stopped after {} s; results are partial. Use a more specific path or pattern.)",
            limit.as_secs()
        ));
    }
    let withheld = withheld.load(Ordering::Relaxed);
    if withheld > 0 {
        text.push_str(&withheld_note(withheld, "file", "files"));
    }
    Ok(ToolOutput::text(text).with_structured(json!({
        "filenames": names,
        "numFiles": names.len(),
        "totalMatches": total,
        "truncated": truncated || timed_out,
        "durationMs": started.elapsed().as_millis() as u64,
    })))
}

/// Whether a file at `path` matches the pattern: its name, or its path below `base`.
fn matches(matcher: &GlobMatcher, name_only: bool, base: &Path, path: &Path) -> bool {
    if name_only {
        path.file_name().is_some_and(|n| matcher.is_match(n))
    } else {
        path.strip_prefix(base)
            .is_ok_and(|rel| matcher.is_match(rel))
    }
}

/// What the walker threads share.
struct Shared<'a> {
    matcher: &'a GlobMatcher,
    name_only: bool,
    base: &'a Path,
    deadline: Instant,
    cancel: tokio_util::sync::CancellationToken,
    found: Mutex<Found>,
    timed_out: AtomicBool,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for &'s Shared<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self,
            local: Vec::new(),
            seen: 0,
        })
    }
}

/// Entries between two checks of the deadline and cancellation.
const CHECK_EVERY: u32 = 256;

/// A per-thread visitor; it hands its results over when the thread finishes.
struct Visitor<'s> {
    shared: &'s Shared<'s>,
    local: Found,
    seen: u32,
}

impl ignore::ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> WalkState {
        let shared = self.shared;
        self.seen = self.seen.wrapping_add(1);
        if self.seen.is_multiple_of(CHECK_EVERY)
            && (Instant::now() > shared.deadline || shared.cancel.is_cancelled())
        {
            shared.timed_out.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        }
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        if entry.file_type().is_none_or(|t| t.is_dir()) {
            return WalkState::Continue;
        }
        if matches(shared.matcher, shared.name_only, shared.base, entry.path()) {
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            self.local.push((entry.into_path(), mtime));
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let mut found = self
            .shared
            .found
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        found.append(&mut self.local);
    }
}

#[cfg(test)]
mod tests {
    use super::split_pattern;

    #[test]
    fn literal_prefixes_move_into_the_base() {
        assert_eq!(split_pattern("**/*.rs"), (None, "**/*.rs".into()));
        assert_eq!(split_pattern("*.rs"), (None, "*.rs".into()));
        assert_eq!(
            split_pattern("src/**/*.rs"),
            (Some("src".into()), "**/*.rs".into())
        );
        assert_eq!(
            split_pattern("/ws/src/*.rs"),
            (Some("/ws/src".into()), "*.rs".into())
        );
        assert_eq!(
            split_pattern("a/b/c.txt"),
            (Some("a/b".into()), "c.txt".into())
        );
    }
}
