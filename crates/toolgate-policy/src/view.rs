//! The call as the rules see it: the tool family, the subcommands in their allow and deny
//! forms, the paths with their access, the hosts. Built once per decision from the request
//! and its facts.

use std::path::{Path, PathBuf};

use toolgate_protocol::{Access, Beneath, Subject};

use crate::engine::PolicyRequest;
use crate::rules::domain::url_host;
use crate::rules::path::{absolutize, normalize};
use crate::rules::split::split_command;
use crate::rules::subcommand::Subcommand;
use crate::rules::{READ_TOOLS, WRITE_TOOLS};

/// Which matcher family a tool belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// A shell command (`Bash`, or any tool whose subject is a command).
    Bash,
    /// A file-reading tool (Read, Grep, Glob, …).
    Read,
    /// A file-writing tool (Edit, Write, MultiEdit, NotebookEdit, …).
    Write,
    /// A URL-fetching tool (WebFetch).
    Fetch,
    /// Anything else (MCP tools, Agent, …).
    Other,
}

/// A path the call touches.
#[derive(Debug, Clone)]
pub(crate) struct PathEntry {
    /// Absolute, normalised.
    pub path: PathBuf,
    /// How it is touched.
    pub access: Access,
    /// Inside the session's roots (facts and a lexical check must agree).
    pub inside: bool,
    /// A protected path (facts or toolgate's own list).
    pub protected: bool,
    /// What beneath it (an existing directory) the call touches the same way.
    pub beneath: Beneath,
    /// With `beneath`: the file-name globs the files touched are limited to (none: all).
    pub beneath_only: Vec<String>,
    /// For a path found by looking beneath a directory the call names: that directory.
    pub below: Option<PathBuf>,
}

/// The call, prepared for matching.
#[derive(Debug)]
pub(crate) struct View {
    pub family: Family,
    /// Lower-cased tool name, for deny/ask matching.
    pub tool_lower: String,
    /// The subject string (command, path, URL), if any.
    pub subject: Option<String>,
    /// Subcommands (analyzer's, or the fallback's when the analyzer's are missing).
    pub subs: Vec<Subcommand>,
    /// The fallback split of the raw text, matched by deny and ask rules as a cross-check.
    pub cross: Vec<Subcommand>,
    /// Paths with access.
    pub paths: Vec<PathEntry>,
    /// Hosts reached.
    pub hosts: Vec<String>,
    /// Why parts of the call could not be understood.
    pub opaque: Vec<String>,
    /// `analyzer`, `fallback splitter` or `none`.
    pub shell_facts: &'static str,
    /// The session's roots and home: what the path-class table judges paths below.
    pub anchors: Anchors,
    /// The raw text shows an unsafe assignment or a privilege wrapper that the analyzer
    /// normalised away: no allow rule and no read-only shortcut applies.
    pub allow_blocked: Option<String>,
}

/// The roots and home directory a path's class is judged below (see
/// `toolgate_protocol::paths`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Anchors {
    pub roots: Vec<PathBuf>,
    pub home: Option<PathBuf>,
}

impl Anchors {
    /// Whether `path` is protected in this session.
    pub fn protected(&self, path: &Path) -> bool {
        toolgate_protocol::paths::is_protected(path, &self.roots, self.home.as_deref())
    }

    /// The kind of credentials reading `entry` reaches: a path below a secret entry, or the
    /// secret directory itself read with what lies beneath it (`grep -r KEY ~/.ssh`). Naming
    /// the directory alone lists names (`ls ~/.aws`).
    pub fn secret(&self, entry: &PathEntry) -> Option<&'static str> {
        if entry.access != Access::Read {
            return None;
        }
        let secret =
            toolgate_protocol::paths::classify(&entry.path, &self.roots, self.home.as_deref())
                .secret?;
        let whole_dir = entry.beneath != Beneath::Nothing;
        (whole_dir || !secret.is_the_directory(&entry.path, self.home.as_deref()))
            .then_some(secret.kind)
    }
}

/// Paths that are writable by everyone and hold nothing: redirects to them are not writes.
const NULL_SINKS: &[&str] = &[
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/fd/1",
    "/dev/fd/2",
];

pub(crate) fn family(tool: &str, subject: &Subject) -> Family {
    match subject {
        Subject::Command { .. } => return Family::Bash,
        Subject::Path { writes: true, .. } => return Family::Write,
        Subject::Path { writes: false, .. } => return Family::Read,
        Subject::Url { .. } => return Family::Fetch,
        Subject::None => {}
    }
    if tool == "Bash" {
        Family::Bash
    } else if WRITE_TOOLS.contains(&tool) {
        Family::Write
    } else if READ_TOOLS.contains(&tool) {
        Family::Read
    } else if tool == "WebFetch" {
        Family::Fetch
    } else {
        Family::Other
    }
}

/// The input field holding a file tool's path when the spec does not say.
fn default_path_field(tool: &str) -> &'static str {
    match tool {
        "NotebookEdit" | "NotebookRead" => "notebook_path",
        "Glob" | "Grep" | "LS" => "path",
        _ => "file_path",
    }
}

/// At most this many files of one glob enter a view; beyond it the call is opaque.
const MAX_GLOB_MATCHES: usize = 1024;
/// At most this many directory entries are looked at to expand one glob.
const MAX_GLOB_ENTRIES: usize = 20_000;

fn has_glob_meta(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// The existing files the shell would expand an absolute `pattern` to (`*`, `?`, `[…]` in
/// any component; hidden names only for a component that starts with `.`), and whether
/// that is all of them (`false` when a bound was hit or a component is not a valid glob).
fn glob_matches(pattern: &Path) -> (Vec<PathBuf>, bool) {
    let mut found = vec![PathBuf::from("/")];
    let mut seen = 0usize;
    for comp in pattern.components() {
        let std::path::Component::Normal(name) = comp else {
            continue;
        };
        let name = name.to_string_lossy();
        if !has_glob_meta(&name) {
            found.iter_mut().for_each(|p| p.push(&*name));
            continue;
        }
        let Ok(glob) = globset::GlobBuilder::new(&name)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
        else {
            return (Vec::new(), false);
        };
        let matcher = glob.compile_matcher();
        let mut next = Vec::new();
        for dir in &found {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_GLOB_ENTRIES || next.len() >= MAX_GLOB_MATCHES {
                    return (next, false);
                }
                let file = entry.file_name();
                let hidden = file.as_encoded_bytes().first() == Some(&b'.');
                if (!hidden || name.starts_with('.')) && matcher.is_match(&file) {
                    next.push(dir.join(file));
                }
            }
        }
        found = next;
    }
    found.retain(|p| p.symlink_metadata().is_ok());
    (found, true)
}

/// Where `path` leads when a symlink is on the way (`None` when nothing differs or nothing
/// resolves). A path that does not exist yet — a file a command creates — resolves through
/// its parent directory.
fn symlink_target(path: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(path).ok().or_else(|| {
        let parent = std::fs::canonicalize(path.parent()?).ok()?;
        Some(parent.join(path.file_name()?))
    })?;
    (real != path).then_some(real)
}

/// The subject string the rules match: what the tool's spec extracts, else the family's
/// usual input field, else the subject the facts carry.
fn subject_of(req: &PolicyRequest<'_>, family: Family) -> Option<String> {
    req.subject
        .extract(req.input)
        .or_else(|| match family {
            Family::Bash => req.input.get("command").and_then(|v| v.as_str()),
            Family::Read | Family::Write => req
                .input
                .get(default_path_field(req.tool))
                .and_then(|v| v.as_str()),
            Family::Fetch => req.input.get("url").and_then(|v| v.as_str()),
            Family::Other => None,
        })
        .map(str::to_owned)
        .or_else(|| req.facts.subject.clone())
}

impl View {
    /// Builds the view in the order the rules rely on: the tool's own path facts first, then
    /// what the family adds (a shell command's subcommands, paths, hosts, glob expansions and
    /// symlink targets; a file tool's path and its target; a URL's host).
    pub(crate) fn build(req: &PolicyRequest<'_>, home: Option<&Path>) -> Self {
        let family = family(req.tool, req.subject);
        let mut view = View {
            family,
            tool_lower: req.tool.to_ascii_lowercase(),
            subject: subject_of(req, family),
            subs: Vec::new(),
            cross: Vec::new(),
            paths: Vec::new(),
            hosts: Vec::new(),
            opaque: Vec::new(),
            shell_facts: "none",
            anchors: Anchors {
                roots: req.roots.iter().map(|r| r.to_path_buf()).collect(),
                home: home.map(Path::to_path_buf),
            },
            allow_blocked: None,
        };
        for f in &req.facts.paths {
            let p = if f.path.is_absolute() {
                normalize(&f.path)
            } else {
                absolutize(&f.path.to_string_lossy(), req.cwd, home)
            };
            view.add_path(
                p,
                f.access,
                Some(f.inside_roots),
                f.protected,
                (f.beneath, &f.beneath_only),
            );
        }
        match family {
            Family::Bash => view.add_shell(req, home),
            Family::Read | Family::Write => view.add_file_subject(req, home),
            Family::Fetch => {
                if let Some(h) = view.subject.as_deref().and_then(url_host) {
                    view.hosts.push(h);
                } else {
                    view.opaque.push("the URL has no host".into());
                }
            }
            Family::Other => {}
        }
        view
    }

    /// Adds one path the call touches, once per path and access: the place where a fact's
    /// inside/protected verdict meets toolgate's own lexical check (both must say inside;
    /// either may say protected), and where two reaches beneath one directory are united.
    fn add_path(
        &mut self,
        path: PathBuf,
        access: Access,
        fact_inside: Option<bool>,
        fact_protected: bool,
        (beneath, beneath_only): (Beneath, &[String]),
    ) {
        if NULL_SINKS.iter().any(|s| Path::new(s) == path) {
            return;
        }
        // Only a directory has anything beneath it (`cp -r file dst` copies one file); a
        // path that does not exist yet may still be one when the call runs.
        let beneath = if beneath != Beneath::Nothing && (path.is_dir() || !path.exists()) {
            beneath
        } else {
            Beneath::Nothing
        };
        let beneath_only = if beneath == Beneath::Nothing {
            Vec::new()
        } else {
            beneath_only.to_vec()
        };
        if let Some(seen) = self
            .paths
            .iter_mut()
            .find(|p| p.path == path && p.access == access)
        {
            // Two uses of one directory: the union of what they reach (a limit that
            // differs is dropped, which can only widen it).
            if beneath != Beneath::Nothing {
                if seen.beneath == Beneath::Nothing {
                    seen.beneath_only = beneath_only;
                } else if seen.beneath_only != beneath_only {
                    seen.beneath_only.clear();
                }
            }
            seen.beneath = seen.beneath.max(beneath);
            return;
        }
        let lexical_inside = self.anchors.roots.iter().any(|r| path.starts_with(r));
        let entry = PathEntry {
            inside: lexical_inside && fact_inside.unwrap_or(true),
            protected: fact_protected || self.anchors.protected(&path),
            path,
            access,
            beneath,
            beneath_only,
            below: None,
        };
        self.paths.push(entry);
    }

    /// A shell command: its subcommands, the paths and hosts it names, what its globs expand
    /// to and where its symlinks lead — in that order, since the last two look at the paths
    /// the earlier steps found.
    fn add_shell(&mut self, req: &PolicyRequest<'_>, home: Option<&Path>) {
        let raw = self.subject.clone().unwrap_or_default();
        let split = split_command(&raw);
        if req.facts.commands.is_empty() {
            self.shell_facts = "fallback splitter";
            self.subs = split
                .commands
                .into_iter()
                .map(Subcommand::from_argv)
                .collect();
            self.opaque = split.opaque;
            if self.subs.is_empty() && !raw.trim().is_empty() {
                self.opaque.push("no command could be extracted".into());
            }
        } else {
            self.shell_facts = "analyzer";
            self.subs = req
                .facts
                .commands
                .iter()
                .map(Subcommand::from_fact)
                .collect();
            self.cross = split
                .commands
                .into_iter()
                .map(Subcommand::from_argv)
                .collect();
            self.allow_blocked = self.cross.iter().find_map(|c| c.allow_blocked.clone());
            if req.facts.opaque {
                self.opaque
                    .push("the shell analyzer could not resolve parts of the command".into());
            }
        }
        for (p, access) in split.paths {
            if p.contains('$') || p.contains('`') {
                continue;
            }
            let abs = absolutize(&p, req.cwd, home);
            self.add_path(abs, access, None, false, (Beneath::Nothing, &[]));
        }
        for u in &req.facts.urls {
            if let Some(h) = url_host(u) {
                self.hosts.push(h);
            }
        }
        self.expand_globs();
        self.follow_symlinks();
    }

    /// What the shell will expand a glob to: `cat */key` reads `secrets/key`. A glob that
    /// matches more than the bound makes the call opaque rather than half-seen.
    fn expand_globs(&mut self) {
        let globs: Vec<(PathBuf, Access)> = self
            .paths
            .iter()
            .filter(|p| has_glob_meta(&p.path.to_string_lossy()))
            .map(|p| (p.path.clone(), p.access))
            .collect();
        for (pattern, access) in globs {
            let (matches, complete) = glob_matches(&pattern);
            for m in matches {
                self.add_path(m, access, None, false, (Beneath::Nothing, &[]));
            }
            if !complete {
                self.opaque.push(format!(
                    "`{}` matches more than {MAX_GLOB_MATCHES} files",
                    pattern.display()
                ));
            }
        }
    }

    /// Where symlinks lead, as for a file tool: `ln -s . l` in one call and
    /// `cat l/secrets/key` in the next must meet `Read(./secrets/**)`, and a link
    /// out of the workspace needs the rule its target needs.
    fn follow_symlinks(&mut self) {
        let lexical = self.paths.clone();
        for p in lexical {
            if let Some(real) = symlink_target(&p.path) {
                let reach = (p.beneath, p.beneath_only.as_slice());
                self.add_path(real, p.access, None, false, reach);
            }
        }
    }

    /// A file tool's own path (the working directory when it names none), and, when the tool
    /// sent no path facts, the path's symlink target too.
    fn add_file_subject(&mut self, req: &PolicyRequest<'_>, home: Option<&Path>) {
        let access = if self.family == Family::Write {
            Access::Write
        } else {
            Access::Read
        };
        let raw = self
            .subject
            .clone()
            .unwrap_or_else(|| req.cwd.to_string_lossy().into_owned());
        let lexical = absolutize(&raw, req.cwd, home);
        let had_facts = !self.paths.is_empty();
        self.add_path(
            lexical.clone(),
            access,
            None,
            false,
            (Beneath::Nothing, &[]),
        );
        if !had_facts {
            // No facts from the tool: resolve symlinks ourselves so that an allow rule
            // needs both the link and its target, and a deny catches either.
            self.shell_facts = "none";
            if let Ok(real) = std::fs::canonicalize(&lexical)
                && real != lexical
            {
                self.add_path(real, access, None, false, (Beneath::Nothing, &[]));
            }
        }
    }

    /// A bare Read (or Edit) of one path, for [`crate::Engine::path_rule`].
    pub(crate) fn for_path(path: &Path, access: Access) -> Self {
        View {
            family: if access == Access::Read {
                Family::Read
            } else {
                Family::Write
            },
            tool_lower: if access == Access::Read {
                "read".into()
            } else {
                "edit".into()
            },
            subject: Some(path.to_string_lossy().into_owned()),
            subs: Vec::new(),
            cross: Vec::new(),
            paths: vec![PathEntry {
                path: normalize(path),
                access,
                inside: true,
                // Only the rules read this view (`Engine::path_rule`); with no session at
                // hand the table matches anywhere, the conservative reading.
                protected: Anchors::default().protected(path),
                beneath: Beneath::Nothing,
                beneath_only: Vec::new(),
                below: None,
            }],
            hosts: Vec::new(),
            opaque: Vec::new(),
            shell_facts: "none",
            anchors: Anchors::default(),
            allow_blocked: None,
        }
    }

    /// The first path whose reading reaches credentials, with their kind.
    pub(crate) fn secret_read(&self) -> Option<(&PathEntry, &'static str)> {
        self.paths
            .iter()
            .find_map(|p| self.anchors.secret(p).map(|kind| (p, kind)))
    }

    /// Paths written or deleted.
    pub(crate) fn writes(&self) -> impl Iterator<Item = &PathEntry> {
        self.paths.iter().filter(|p| p.access != Access::Read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_expand_like_the_shell_within_bounds() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        for rel in ["a/key", "b/key", "b/other", ".h/key"] {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap_or(root))
                .unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(&path, "x").unwrap_or_else(|e| panic!("{e}"));
        }
        let (mut found, complete) = glob_matches(&root.join("*/key"));
        found.sort();
        assert!(complete);
        assert_eq!(found, vec![root.join("a/key"), root.join("b/key")]);
        let (found, _) = glob_matches(&root.join(".*/key"));
        assert_eq!(found, vec![root.join(".h/key")]);
        let (found, complete) = glob_matches(&root.join("[/key"));
        assert!(
            found.is_empty() && !complete,
            "an invalid glob is not a complete answer"
        );

        let many = root.join("many");
        std::fs::create_dir(&many).unwrap_or_else(|e| panic!("{e}"));
        for i in 0..=MAX_GLOB_MATCHES {
            std::fs::write(many.join(format!("f{i}")), "").unwrap_or_else(|e| panic!("{e}"));
        }
        let (found, complete) = glob_matches(&many.join("f*"));
        assert!(!complete && found.len() <= MAX_GLOB_MATCHES);
    }
}
