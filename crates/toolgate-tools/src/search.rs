//! Grep's engine: ripgrep's own crates, configured as `rg` configures them, walking in
//! parallel and opening every file beneath the root handle.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use grep_printer::{Standard, StandardBuilder, Summary, SummaryBuilder, SummaryKind};
use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, MmapChoice, Searcher, SearcherBuilder};
use ignore::overrides::Override;
use ignore::types::Types;
use ignore::{WalkBuilder, WalkState};
use rustix::fs::{Mode, OFlags};
use termcolor::NoColor;
use tokio_util::sync::CancellationToken;
use toolgate_core::stages::ReadFilter;

use crate::glob::entry_filter;
use crate::paths::RootDir;

/// Entries between two checks of the deadline and cancellation.
const CHECK_EVERY: u32 = 64;

/// The three output modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines (`rg`).
    Content,
    /// Paths of matching files (`rg -l`).
    FilesWithMatches,
    /// Matching lines per file (`rg -c`).
    Count,
}

/// A compiled search.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    pub matcher: RegexMatcher,
    pub mode: OutputMode,
    pub line_numbers: bool,
    pub before: usize,
    pub after: usize,
    pub only_matching: bool,
    pub multiline: bool,
    pub max_columns: Option<u64>,
    pub hidden: bool,
    pub types: Option<Types>,
    pub overrides: Option<Override>,
    pub allow_hard_links: bool,
    /// Output entries needed (offset + head_limit); `None` keeps everything.
    pub need: Option<u64>,
}

impl Query {
    fn context(&self) -> bool {
        self.mode == OutputMode::Content && (self.before > 0 || self.after > 0)
    }

    fn searcher(&self, explicit: bool) -> Searcher {
        let mut b = SearcherBuilder::new();
        b.line_number(self.mode == OutputMode::Content && self.line_numbers)
            .multi_line(self.multiline)
            .memory_map(MmapChoice::never())
            .binary_detection(if explicit {
                BinaryDetection::convert(0)
            } else {
                BinaryDetection::quit(0)
            });
        if self.mode == OutputMode::Content {
            b.before_context(self.before).after_context(self.after);
        }
        b.build()
    }

    fn printer(&self, explicit: bool) -> Printer {
        match self.mode {
            OutputMode::Content => Printer::Standard(
                StandardBuilder::new()
                    .path(!explicit)
                    .only_matching(self.only_matching)
                    .max_columns(self.max_columns)
                    .build_no_color(Vec::new()),
            ),
            OutputMode::FilesWithMatches => Printer::Summary(
                SummaryBuilder::new()
                    .kind(SummaryKind::PathWithMatch)
                    .build_no_color(Vec::new()),
            ),
            OutputMode::Count => Printer::Summary(
                SummaryBuilder::new()
                    .kind(if self.only_matching {
                        SummaryKind::CountMatches
                    } else {
                        SummaryKind::Count
                    })
                    .path(!explicit)
                    .build_no_color(Vec::new()),
            ),
        }
    }
}

enum Printer {
    Standard(Standard<NoColor<Vec<u8>>>),
    Summary(Summary<NoColor<Vec<u8>>>),
}

/// What a search found.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Output per file, in path order (only as many as `need` requires).
    pub files: BTreeMap<PathBuf, Vec<u8>>,
    /// Output entries over all files (lines, paths or counts).
    pub entries: u64,
    /// Files with output.
    pub matched_files: u64,
    /// Sum of the counts in `count` mode.
    pub total_count: u64,
    /// Files skipped because they have several hard links.
    pub hard_linked: u64,
    /// Files that could not be opened or read.
    pub unreadable: u64,
    /// Files and directories left out because a deny or ask rule covers reading them.
    pub withheld: u64,
    /// The deadline or cancellation stopped the search.
    pub stopped: bool,
}

struct Shared<'a> {
    query: &'a Query,
    root: &'a RootDir,
    deadline: Instant,
    cancel: &'a CancellationToken,
    found: Mutex<(Found, u64)>,
    stopped: AtomicBool,
    hard_linked: AtomicU64,
    unreadable: AtomicU64,
}

impl Shared<'_> {
    fn entries_of(&self, bytes: &[u8]) -> u64 {
        let lines = memchr::memchr_iter(b'\n', bytes).count() as u64;
        lines + u64::from(self.query.context())
    }

    fn add(&self, path: PathBuf, bytes: Vec<u8>) {
        let entries = self.entries_of(&bytes);
        let count = if self.query.mode == OutputMode::Count {
            trailing_number(&bytes)
        } else {
            0
        };
        let mut guard = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        let (found, stored) = &mut *guard;
        found.entries += entries;
        found.matched_files += 1;
        found.total_count += count;
        found.files.insert(path, bytes);
        *stored += entries;
        if let Some(need) = self.query.need {
            // Keep only the first files (in path order) that the output can show.
            while let Some(last) = found.files.last_key_value() {
                let last_entries = self.entries_of(last.1);
                if *stored - last_entries < need {
                    break;
                }
                *stored -= last_entries;
                found.files.pop_last();
            }
        }
    }

    /// Whether an opened file may be searched: a regular file, with one link unless hard
    /// links are allowed (their other names may be outside the roots).
    fn admissible(&self, fd: &rustix::fd::OwnedFd) -> bool {
        let Ok(stat) = rustix::fs::fstat(fd) else {
            self.unreadable.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        if crate::paths::describe_kind(stat.st_mode) != crate::paths::FileKind::File {
            return false;
        }
        if stat.st_nlink != 1 && !self.query.allow_hard_links {
            self.hard_linked.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Searches one file. `walked` files were regular files when listed; their status is
    /// checked only when they produced output (one `fstat` per matching file instead of
    /// per file), and output from an inadmissible file is dropped unseen.
    fn search_one(
        &self,
        searcher: &mut Searcher,
        printer: &mut Printer,
        path: &Path,
        walked: bool,
    ) {
        let Ok(rel) = path.strip_prefix(self.root.path()) else {
            self.unreadable.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let fd = match self.root.open_beneath(
            rel,
            OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(_) => {
                self.unreadable.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        if !walked && !self.admissible(&fd) {
            return;
        }
        let file = File::from(fd);
        let matcher = &self.query.matcher;
        let result = match printer {
            Printer::Standard(p) => {
                searcher.search_file(matcher, &file, p.sink_with_path(matcher, path))
            }
            Printer::Summary(p) => {
                searcher.search_file(matcher, &file, p.sink_with_path(matcher, path))
            }
        };
        let buf = match printer {
            Printer::Standard(p) => p.get_mut().get_mut(),
            Printer::Summary(p) => p.get_mut().get_mut(),
        };
        if result.is_err() {
            self.unreadable.fetch_add(1, Ordering::Relaxed);
        }
        if buf.is_empty() {
            return;
        }
        let bytes = std::mem::take(buf);
        let fd = rustix::fd::OwnedFd::from(file);
        if walked && !self.admissible(&fd) {
            return;
        }
        self.add(path.to_path_buf(), bytes);
    }
}

fn trailing_number(bytes: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(bytes);
    let line = text.trim_end();
    let digits = line.rsplit(':').next().unwrap_or(line);
    digits.trim().parse().unwrap_or(0)
}

/// Searches `base` (a file or a directory beneath `root`).
pub(crate) fn search(
    query: &Query,
    root: &RootDir,
    base: &Path,
    base_is_dir: bool,
    deadline: Instant,
    cancel: &CancellationToken,
    read_filter: Option<ReadFilter>,
) -> Found {
    let withheld = Arc::new(AtomicU64::new(0));
    let shared = Shared {
        query,
        root,
        deadline,
        cancel,
        found: Mutex::new((Found::default(), 0)),
        stopped: AtomicBool::new(false),
        hard_linked: AtomicU64::new(0),
        unreadable: AtomicU64::new(0),
    };
    if base_is_dir {
        let mut builder = WalkBuilder::new(base);
        builder
            .hidden(!query.hidden)
            .follow_links(false)
            .add_custom_ignore_filename(".rgignore");
        if let Some(types) = &query.types {
            builder.types(types.clone());
        }
        if let Some(overrides) = &query.overrides {
            builder.overrides(overrides.clone());
        }
        // Without `hidden`, the walker already skips dot directories, VCS ones included.
        // The walker has already applied the glob and type filters when the entry filter
        // runs, so a denied file is counted only if it would have been searched. A denied
        // directory is counted too: the search would have gone through it.
        builder.filter_entry(entry_filter(
            query.hidden,
            read_filter,
            Arc::clone(&withheld),
            |_: &ignore::DirEntry| true,
        ));
        builder.build_parallel().visit(&mut &shared);
    } else {
        let mut searcher = query.searcher(true);
        let mut printer = query.printer(true);
        shared.search_one(&mut searcher, &mut printer, base, false);
    }
    let (mut found, _) = shared
        .found
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    found.stopped = shared.stopped.load(Ordering::Relaxed);
    found.hard_linked = shared.hard_linked.load(Ordering::Relaxed);
    found.unreadable = shared.unreadable.load(Ordering::Relaxed);
    found.withheld = withheld.load(Ordering::Relaxed);
    found
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for &'s Shared<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Worker {
            shared: self,
            searcher: self.query.searcher(false),
            printer: self.query.printer(false),
            seen: 0,
        })
    }
}

struct Worker<'s> {
    shared: &'s Shared<'s>,
    searcher: Searcher,
    printer: Printer,
    seen: u32,
}

impl ignore::ParallelVisitor for Worker<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> WalkState {
        self.seen = self.seen.wrapping_add(1);
        if self.seen.is_multiple_of(CHECK_EVERY)
            && (Instant::now() > self.shared.deadline || self.shared.cancel.is_cancelled())
        {
            self.shared.stopped.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        }
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        if entry.file_type().is_some_and(|t| t.is_file()) {
            let shared = self.shared;
            shared.search_one(&mut self.searcher, &mut self.printer, entry.path(), true);
        }
        WalkState::Continue
    }
}
