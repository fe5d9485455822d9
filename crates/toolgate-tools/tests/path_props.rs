//! Property tests of root confinement: for generated trees of directories, files and
//! symlinks (relative, absolute, chained, looping, pointing in and out of the workspace)
//! and generated paths (`..` chains, `.`, absolute paths into and out of the workspace), no
//! path a file tool accepts resolves outside the roots.
//!
//! Checked twice: on [`toolgate_tools::paths::resolve`] (the real path it returns lies below
//! a root and is what the kernel resolves), and through the Gate's Read, Grep and Write
//! with a policy that allows everything, so that only the tools' own confinement stands
//! between the call and the directory next to the workspace, which holds a secret and must
//! come out of every case unread and unchanged.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;
use toolgate_core::session::normalize_lexically;
use toolgate_core::{Gate, Registry, Session, SessionOptions, Workspace};
use toolgate_protocol::ToolCall;
use toolgate_tools::{FileToolsConfig, paths, register_file_tools};

/// What the files outside the workspace hold; no tool output may contain it.
const SECRET: &str = "OUTSIDE-SECRET-7f3a";

/// What the Write calls write; no file outside the workspace may end up holding it.
const WRITTEN: &str = "WRITTEN-BY-PROPTEST";

/// Names of the generated entries (few, so that paths often hit them).
const NAMES: &[&str] = &["a", "b", "l", "m", "secret.txt"];

#[derive(Debug, Clone)]
enum Part {
    Name(&'static str),
    Cur,
    Parent,
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        5 => prop::sample::select(NAMES).prop_map(Part::Name),
        1 => Just(Part::Cur),
        3 => Just(Part::Parent),
    ]
}

fn parts(max: usize) -> impl Strategy<Value = Vec<Part>> {
    prop::collection::vec(part(), 0..max)
}

fn text(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Name(n) => *n,
            Part::Cur => ".",
            Part::Parent => "..",
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Where a path or a link target starts.
#[derive(Debug, Clone, Copy)]
enum Start {
    /// Relative (to the cwd, or to the link's directory).
    Here,
    /// The workspace root, absolute.
    Workspace,
    /// The directory beside the workspace, absolute.
    Outside,
    /// `/etc`.
    Etc,
    /// `/`.
    Root,
}

fn start() -> impl Strategy<Value = Start> {
    prop_oneof![
        4 => Just(Start::Here),
        2 => Just(Start::Workspace),
        2 => Just(Start::Outside),
        1 => Just(Start::Etc),
        1 => Just(Start::Root),
    ]
}

#[derive(Debug, Clone)]
enum Node {
    Dir,
    File,
    /// A symlink to `start` + the parts (a link to itself when they name it: a loop).
    Link(Start, Vec<Part>),
}

fn node() -> impl Strategy<Value = Node> {
    prop_oneof![
        2 => Just(Node::Dir),
        1 => Just(Node::File),
        4 => (start(), parts(5)).prop_map(|(s, p)| Node::Link(s, p)),
    ]
}

/// One entry: in the workspace or beside it, at a path of generated names.
#[derive(Debug, Clone)]
struct Entry {
    outside: bool,
    at: Vec<&'static str>,
    node: Node,
}

fn entry() -> impl Strategy<Value = Entry> {
    (
        prop::bool::weighted(0.25),
        prop::collection::vec(prop::sample::select(NAMES), 1..4),
        node(),
    )
        .prop_map(|(outside, at, node)| Entry { outside, at, node })
}

/// A workspace and the directory beside it, in one temporary directory.
struct Tree {
    _base: tempfile::TempDir,
    ws: PathBuf,
    out: PathBuf,
}

impl Tree {
    fn prefix(&self, start: Start) -> String {
        match start {
            Start::Here => String::new(),
            Start::Workspace => format!("{}/", self.ws.display()),
            Start::Outside => format!("{}/", self.out.display()),
            Start::Etc => "/etc/".into(),
            Start::Root => "/".into(),
        }
    }

    fn build(entries: &[Entry]) -> Self {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().canonicalize().unwrap();
        let (ws, out) = (root.join("ws"), root.join("out"));
        std::fs::create_dir_all(out.join("a")).unwrap();
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(out.join("secret.txt"), format!("{SECRET}\n")).unwrap();
        std::fs::write(out.join("a/secret.txt"), format!("{SECRET}\n")).unwrap();
        let tree = Tree {
            _base: base,
            ws,
            out,
        };
        for e in entries {
            let dir = if e.outside { &tree.out } else { &tree.ws };
            let at = e.at.iter().fold(dir.clone(), |p, n| p.join(n));
            // An earlier entry may be a link out (to `/`, `/etc`, the temp dir): creating
            // through it would write outside this test's own directory (stray links left
            // in /tmp change what other tests see there). Only build where the parent
            // really is inside.
            let inside = at
                .parent()
                .and_then(|p| p.canonicalize().ok())
                .is_some_and(|p| p.starts_with(&root));
            if !inside {
                continue;
            }
            // Entries whose parent is missing, or that already exist, are skipped: the
            // generated list is a wish list, not a script.
            let _ = match &e.node {
                Node::Dir => std::fs::create_dir(&at),
                // create_new: never through an existing entry (a link out of the tree).
                Node::File => std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&at)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, b"inside\n")),
                Node::Link(start, parts) => {
                    symlink(format!("{}{}", tree.prefix(*start), text(parts)), &at)
                }
            };
        }
        tree
    }

    /// Every entry beside the workspace: its path and what it is or holds.
    fn outside_snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.out.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                let meta = std::fs::symlink_metadata(&p).unwrap();
                let what = if meta.file_type().is_symlink() {
                    format!("-> {}", std::fs::read_link(&p).unwrap().display())
                } else if meta.is_dir() {
                    stack.push(p.clone());
                    "dir".into()
                } else {
                    std::fs::read_to_string(&p).unwrap_or_default()
                };
                out.insert(p, what);
            }
        }
        // Where links to `/` and `/etc` lead: the generated names there.
        for dir in ["/", "/etc"] {
            for name in NAMES {
                let p = Path::new(dir).join(name);
                if let Ok(text) = std::fs::read_to_string(&p) {
                    out.insert(p, text);
                }
            }
        }
        // The parent of both: nothing may appear next to them either.
        if let Some(parent) = self.ws.parent() {
            for e in std::fs::read_dir(parent).unwrap().flatten() {
                out.insert(e.path(), "top".into());
            }
        }
        out
    }
}

fn gate(ws: &Path) -> Gate {
    let registry = register_file_tools(Registry::builder(), &FileToolsConfig::default())
        .build()
        .unwrap();
    Gate::builder()
        .policy(Arc::new(toolgate_core::stages::AllowAll))
        .workspace(ws)
        .registry(registry)
        .build()
        .unwrap()
}

/// The deepest existing ancestor of `path` (itself when it exists), without following a
/// final symlink.
fn deepest_existing(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    while std::fs::symlink_metadata(&p).is_err() {
        match p.parent() {
            Some(parent) => p = parent.to_path_buf(),
            None => break,
        }
    }
    p
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_accepted_path_resolves_outside_the_roots(
        entries in prop::collection::vec(entry(), 0..14),
        queries in prop::collection::vec((start(), parts(7)), 1..8),
    ) {
        let tree = Tree::build(&entries);
        let before = tree.outside_snapshot();
        let session = Session::new(Workspace::new(&tree.ws).unwrap(), SessionOptions::default());
        let gate = gate(&tree.ws);
        let rt = runtime();
        for (i, (start, parts)) in queries.iter().enumerate() {
            let raw = format!("{}{}", tree.prefix(*start), text(parts));
            if raw.is_empty() {
                continue;
            }
            if let Ok(r) = paths::resolve(&session, &raw) {
                prop_assert!(r.real.starts_with(&tree.ws), "{raw} resolved to {}", r.real.display());
                prop_assert_eq!(&r.root, &tree.ws);
                prop_assert_eq!(r.root.join(&r.rel), r.real.clone());
                // What the kernel resolves agrees: the real path has no symlink left in
                // its existing part, and that part lies below the root.
                let existing = deepest_existing(&r.real);
                prop_assert!(existing.starts_with(&tree.ws), "{raw}: {}", existing.display());
                let canonical = std::fs::canonicalize(&existing).unwrap();
                prop_assert_eq!(&canonical, &existing, "{} holds a symlink", r.real.display());
                prop_assert_eq!(normalize_lexically(&r.display), r.display.clone());
            }
            let read = rt.block_on(gate.execute(ToolCall::new("r", "Read", json!({"file_path": raw}))));
            let text_out = read.model_text();
            prop_assert!(!text_out.contains(SECRET), "Read {raw} leaked: {text_out}");
            prop_assert!(!text_out.contains("root:x:0:0"), "Read {raw} read /etc/passwd");
            let grep = rt.block_on(gate.execute(ToolCall::new(
                "g",
                "Grep",
                json!({"pattern": "OUTSIDE|root:x", "path": raw, "output_mode": "content"}),
            )));
            let grep_out = grep.model_text();
            prop_assert!(!grep_out.contains(SECRET), "Grep {raw} leaked: {grep_out}");
            prop_assert!(!grep_out.contains("root:x:0:0"), "Grep {raw} read /etc/passwd");
            let content = format!("{WRITTEN} {i}\n");
            let _ = rt.block_on(gate.execute(ToolCall::new(
                "w",
                "Write",
                json!({"file_path": raw, "content": content}),
            )));
        }
        // The control: a plain file inside is read, so the properties above are not met by
        // a gate that refuses everything.
        std::fs::write(tree.ws.join("control.txt"), "inside control\n").unwrap();
        let control = rt.block_on(gate.execute(ToolCall::new(
            "c",
            "Read",
            json!({"file_path": "control.txt"}),
        )));
        prop_assert!(control.model_text().contains("inside control"), "{}", control.model_text());
        let after = tree.outside_snapshot();
        prop_assert_eq!(before, after, "something beside the workspace changed");
    }
}
