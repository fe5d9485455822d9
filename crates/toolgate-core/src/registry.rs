//! The registry: an immutable snapshot of tools with compiled input schemas, and the
//! per-session *views* of it.
//!
//! A view is a new value computed from the registry and the session's context (permission
//! mode, the "simple" set, a profile's allow-list, bare-name deny rules, deferred tools); it
//! never mutates the registry.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use thiserror::Error;
use toolgate_protocol::wire::{self, Format};
use toolgate_protocol::{Layer, PermissionMode, ToolSpec};

use crate::deferral::LoadedTools;
use crate::session::Session;
use crate::tool::Tool;
use crate::tool_search::{Query, Scope, SearchIndex, TOOL_SEARCH};

/// The tools of the "simple" set.
pub const SIMPLE_TOOLS: [&str; 3] = ["Bash", "Read", "Edit"];

/// The format tag written into registry snapshot files.
pub const SNAPSHOT_FORMAT: &str = "toolgate-registry-snapshot/1";

/// Why a registry could not be built.
#[derive(Debug, Error)]
pub enum RegistryError {
    /// Two tools share a name.
    #[error("two tools are named `{0}`; tool names must be unique")]
    Duplicate(String),
    /// A name is not usable by the model APIs.
    #[error("tool name `{0}` is invalid: use 1–64 characters from A–Z, a–z, 0–9, `_` and `-`")]
    BadName(String),
    /// An input schema is not a valid Draft 2020-12 schema.
    #[error("the input schema of `{tool}` is invalid: {message}")]
    BadSchema {
        /// The tool.
        tool: String,
        /// The schema compiler's message.
        message: String,
    },
    /// A snapshot names a tool this build does not have.
    #[error("the snapshot names `{0}`, which this build of toolgate does not provide")]
    SnapshotUnknownTool(String),
    /// A snapshot file could not be read or parsed.
    #[error("registry snapshot {path}: {message}")]
    Snapshot {
        /// The file.
        path: String,
        /// What was wrong.
        message: String,
    },
    /// A deny or allow pattern is not a valid name glob.
    #[error("tool name pattern `{pattern}` is invalid: {message}")]
    BadPattern {
        /// The pattern.
        pattern: String,
        /// Why.
        message: String,
    },
}

/// One registered tool: the implementation, its effective spec, and its compiled schema.
pub struct Entry {
    tool: Arc<dyn Tool>,
    spec: ToolSpec,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("spec", &self.spec.name)
            .finish()
    }
}

impl Entry {
    /// The effective spec (a snapshot may override descriptions and schemas).
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The implementation.
    pub fn tool(&self) -> &Arc<dyn Tool> {
        &self.tool
    }

    /// Validates an input against the compiled schema, returning every violation with its
    /// JSON pointer.
    pub fn schema_violations(&self, input: &Value) -> Vec<Violation> {
        if self.validator.is_valid(input) {
            return Vec::new();
        }
        self.validator
            .iter_errors(input)
            .take(MAX_REPORTED_VIOLATIONS)
            .map(|e| Violation {
                pointer: e.instance_path().to_string(),
                message: cap_message(e.masked().to_string()),
            })
            .collect()
    }
}

/// At most this many schema violations are reported, so a huge bad input yields a short,
/// readable error.
pub const MAX_REPORTED_VIOLATIONS: usize = 20;

/// A violation message longer than this is cut, so inputs are never echoed back in full.
const MAX_VIOLATION_MESSAGE: usize = 300;

fn cap_message(mut s: String) -> String {
    if s.len() > MAX_VIOLATION_MESSAGE {
        let mut cut = MAX_VIOLATION_MESSAGE;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// One schema violation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// JSON pointer into the input (`""` is the whole input).
    pub pointer: String,
    /// What is wrong there.
    pub message: String,
}

/// An immutable set of tools. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct Registry {
    entries: Arc<Vec<Arc<Entry>>>,
}

/// Builds a [`Registry`].
#[derive(Default)]
pub struct RegistryBuilder {
    tools: Vec<Arc<dyn Tool>>,
    snapshot: Option<Snapshot>,
}

/// A registry snapshot: the tool specs as a JSON document, to pin the tool surface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Always [`SNAPSHOT_FORMAT`].
    pub format: String,
    /// The specs, in registry order.
    pub tools: Vec<ToolSpec>,
}

impl Snapshot {
    /// Reads a snapshot file.
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        let err = |message: String| RegistryError::Snapshot {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let snap: Snapshot = serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
        if snap.format != SNAPSHOT_FORMAT {
            return Err(err(format!(
                "format is `{}`, expected `{SNAPSHOT_FORMAT}`",
                snap.format
            )));
        }
        Ok(snap)
    }

    /// Writes the snapshot atomically (temp file in the same directory, then rename).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, text.as_bytes())?;
        std::io::Write::write_all(&mut tmp, b"\n")?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

pub(crate) fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl RegistryBuilder {
    /// Adds a tool.
    pub fn register(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool.
    pub fn register_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Uses the specs of a snapshot: only the tools it names are registered, in its order,
    /// with its descriptions and schemas.
    pub fn snapshot(mut self, snapshot: Snapshot) -> Self {
        self.snapshot = Some(snapshot);
        self
    }

    /// Validates names and compiles every schema.
    pub fn build(self) -> Result<Registry, RegistryError> {
        let mut by_name: HashMap<String, Arc<dyn Tool>> = HashMap::new();
        let mut order = Vec::new();
        for tool in self.tools {
            let name = tool.spec().name.clone();
            if !valid_name(&name) {
                return Err(RegistryError::BadName(name));
            }
            if by_name.insert(name.clone(), tool).is_some() {
                return Err(RegistryError::Duplicate(name));
            }
            order.push(name);
        }
        let pairs: Vec<(Arc<dyn Tool>, ToolSpec)> = match self.snapshot {
            None => order
                .iter()
                .filter_map(|n| by_name.get(n))
                .map(|t| (Arc::clone(t), t.spec().clone()))
                .collect(),
            Some(snap) => {
                let mut seen = std::collections::HashSet::new();
                let mut pairs = Vec::new();
                for spec in snap.tools {
                    let tool = by_name
                        .get(&spec.name)
                        .ok_or_else(|| RegistryError::SnapshotUnknownTool(spec.name.clone()))?;
                    if !seen.insert(spec.name.clone()) {
                        return Err(RegistryError::Duplicate(spec.name));
                    }
                    pairs.push((Arc::clone(tool), spec));
                }
                pairs
            }
        };
        let mut entries = Vec::with_capacity(pairs.len());
        for (tool, spec) in pairs {
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(&spec.input_schema)
                .map_err(|e| RegistryError::BadSchema {
                    tool: spec.name.clone(),
                    message: e.to_string(),
                })?;
            entries.push(Arc::new(Entry {
                tool,
                spec,
                validator,
            }));
        }
        Ok(Registry {
            entries: Arc::new(entries),
        })
    }
}

impl Registry {
    /// A builder.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// Every tool, in registration order.
    pub fn entries(&self) -> &[Arc<Entry>] {
        &self.entries
    }

    /// The registry as a snapshot document.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            format: SNAPSHOT_FORMAT.to_owned(),
            tools: self.entries.iter().map(|e| e.spec.clone()).collect(),
        }
    }

    /// The view for a session context.
    pub fn view(&self, options: &ViewOptions) -> Result<View, RegistryError> {
        let deny = compile_patterns(&options.deny)?;
        let allow = match &options.allow_only {
            Some(list) => Some(compile_patterns(list)?),
            None => None,
        };
        let mut visible = Vec::new();
        let mut hidden = BTreeMap::new();
        for entry in self.entries.iter() {
            let name = entry.spec.name.as_str();
            let reason = if let Some((pattern, _)) = deny.iter().find(|(_, m)| m.is_match(name)) {
                Some(Hidden {
                    layer: Layer::Rule,
                    reason: format!("`{name}` is denied by the rule `{pattern}`"),
                })
            } else if allow
                .as_ref()
                .is_some_and(|a| !a.iter().any(|(_, m)| m.is_match(name)))
            {
                Some(Hidden {
                    layer: Layer::Rule,
                    reason: format!("`{name}` is not in this profile's tool allow-list"),
                })
            } else if options.simple && !SIMPLE_TOOLS.contains(&name) {
                Some(Hidden {
                    layer: Layer::Default,
                    reason: format!("`{name}` is not in the simple tool set (Bash, Read, Edit)"),
                })
            } else {
                None
            };
            match reason {
                Some(h) => {
                    hidden.insert(name.to_owned(), h);
                }
                None => visible.push(Arc::clone(entry)),
            }
        }
        Ok(View::assemble(
            visible,
            hidden,
            options.deferred.iter().cloned().collect(),
        ))
    }
}

fn compile_patterns(patterns: &[String]) -> Result<Vec<(String, GlobMatcher)>, RegistryError> {
    patterns
        .iter()
        .map(|p| {
            // `Bash(*)` is the same bare-name rule as `Bash`.
            let name = p.strip_suffix("(*)").unwrap_or(p);
            Glob::new(name)
                .map(|g| (p.clone(), g.compile_matcher()))
                .map_err(|e| RegistryError::BadPattern {
                    pattern: p.clone(),
                    message: e.kind().to_string(),
                })
        })
        .collect()
}

/// What shapes a view.
#[derive(Debug, Clone, Default)]
pub struct ViewOptions {
    /// The permission mode. It hides nothing: what a mode allows is the permission engine's
    /// decision, made per call (plan mode still runs read-only Bash commands).
    pub mode: PermissionMode,
    /// Only Bash, Read and Edit.
    pub simple: bool,
    /// A profile's allow-list of names or name globs; `None` allows every tool.
    pub allow_only: Option<Vec<String>>,
    /// Bare-name deny rules (`Bash`, `Bash(*)`, `mcp__*`, `*`): these tools disappear.
    pub deny: Vec<String>,
    /// Tools whose definitions are not sent until loaded with ToolSearch.
    pub deferred: Vec<String>,
}

/// Why a registered tool is not in a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    /// The policy layer that hid it.
    pub layer: Layer,
    /// Why, for the model.
    pub reason: String,
}

/// The tools one session sees. Cloning is cheap; a view never changes.
#[derive(Debug, Clone)]
pub struct View {
    visible: Arc<Vec<Arc<Entry>>>,
    hidden: Arc<BTreeMap<String, Hidden>>,
    /// Visible tools whose definitions are not sent until loaded.
    deferred: Arc<BTreeSet<String>>,
    /// The search index over `visible`, built on the first search.
    index: Arc<OnceLock<SearchIndex>>,
}

/// The result of looking a name up in a view.
#[derive(Debug)]
pub enum Lookup<'a> {
    /// The tool is available.
    Found(&'a Arc<Entry>),
    /// The tool is available but deferred: callable only once the session loaded it.
    Deferred(&'a Arc<Entry>),
    /// The tool exists but policy hid it from this session.
    Hidden(&'a Hidden),
    /// No such tool; names that are close, best first.
    Unknown(Vec<String>),
}

impl View {
    /// The visible tools, in registry order.
    pub fn entries(&self) -> &[Arc<Entry>] {
        &self.visible
    }

    /// Names of the hidden tools and why.
    pub fn hidden(&self) -> &BTreeMap<String, Hidden> {
        &self.hidden
    }

    /// This view with fewer tools: those `keep` refuses are hidden, with `reason(name)` as
    /// what a call to one is told. Built from this view's own entries, so the result can
    /// never hold a tool this view lacks (a sub-agent's tools, a skill's).
    pub fn narrowed(&self, keep: impl Fn(&str) -> bool, reason: impl Fn(&str) -> String) -> View {
        let mut hidden = (*self.hidden).clone();
        let mut visible = Vec::new();
        for entry in self.visible.iter() {
            let name = entry.spec.name.as_str();
            if keep(name) {
                visible.push(Arc::clone(entry));
            } else {
                hidden.insert(
                    name.to_owned(),
                    Hidden {
                        layer: Layer::Rule,
                        reason: reason(name),
                    },
                );
            }
        }
        // A narrower view without ToolSearch (a sub-agent's tool list) could never load
        // what is deferred: its tools are sent in full instead.
        let searchable = |v: &[Arc<Entry>]| v.iter().any(|e| e.spec.name == TOOL_SEARCH);
        let deferred = if searchable(&self.visible) && !searchable(&visible) {
            BTreeSet::new()
        } else {
            (*self.deferred).clone()
        };
        View::assemble(visible, hidden, deferred)
    }

    /// Looks a tool up by its exact (case-sensitive) name or an old alias of it
    /// ([`toolgate_protocol::TOOL_ALIASES`]).
    pub fn lookup(&self, name: &str) -> Lookup<'_> {
        // An old name (`Task`) finds the tool under its current one (`Agent`).
        let name = toolgate_protocol::canonical_tool_name(name);
        if let Some(entry) = self.visible.iter().find(|e| e.spec.name == name) {
            if self.deferred.contains(name) {
                return Lookup::Deferred(entry);
            }
            return Lookup::Found(entry);
        }
        if let Some(h) = self.hidden.get(name) {
            return Lookup::Hidden(h);
        }
        Lookup::Unknown(self.near_names(name))
    }

    fn near_names(&self, name: &str) -> Vec<String> {
        let lower = name.to_ascii_lowercase();
        let mut scored: Vec<(usize, &str)> = self
            .visible
            .iter()
            .map(|e| e.spec.name.as_str())
            .filter_map(|candidate| {
                let c = candidate.to_ascii_lowercase();
                let d = edit_distance(&lower, &c);
                let close =
                    d <= 2 || (lower.len() >= 3 && (c.contains(&lower) || lower.contains(&c)));
                close.then_some((d, candidate))
            })
            .collect();
        scored.sort();
        scored
            .into_iter()
            .take(3)
            .map(|(_, n)| n.to_owned())
            .collect()
    }

    /// Tool definitions in an API's format, as a session that loaded no deferred tool sees
    /// them (see [`View::definitions_for`]).
    pub fn definitions(&self, format: Format) -> Vec<Value> {
        self.definitions_with(format, |_| false)
    }

    /// Tool definitions for `session`: the tools it loaded with ToolSearch are sent in
    /// full, the other deferred ones as the format allows — with `defer_loading: true`
    /// (Anthropic: the API keeps them out of the prompt) or not at all (OpenAI, MCP).
    /// ToolSearch's description names the deferred tools, so the model knows to load them.
    pub fn definitions_for(&self, format: Format, session: &Session) -> Vec<Value> {
        match session.extensions.get::<LoadedTools>() {
            Some(loaded) => self.definitions_with(format, |n| loaded.contains(n)),
            None => self.definitions(format),
        }
    }

    fn definitions_with(&self, format: Format, loaded: impl Fn(&str) -> bool) -> Vec<Value> {
        let is_pending = |n: &str| self.deferred.contains(n) && !loaded(n);
        let pending: Vec<&str> = self
            .visible
            .iter()
            .map(|e| e.spec.name.as_str())
            .filter(|n| is_pending(n))
            .collect();
        let mut defs = Vec::with_capacity(self.visible.len());
        for e in self.visible.iter() {
            let name = e.spec.name.as_str();
            if name == TOOL_SEARCH && !pending.is_empty() {
                let mut spec = e.spec.clone();
                spec.description.push_str(&deferred_note(&pending));
                defs.push(wire::tool_definition(&spec, format));
            } else if !is_pending(name) {
                defs.push(wire::tool_definition(&e.spec, format));
            } else if format == Format::Anthropic {
                let mut def = wire::tool_definition(&e.spec, format);
                if let Some(obj) = def.as_object_mut() {
                    obj.insert("defer_loading".into(), Value::Bool(true));
                }
                defs.push(def);
            }
        }
        defs
    }

    /// Whether `name` is visible and deferred (whether or not a session loaded it).
    pub fn is_deferred(&self, name: &str) -> bool {
        self.deferred.contains(name)
    }

    /// The deferred tools, in registry order.
    pub fn deferred_names(&self) -> Vec<&str> {
        self.visible
            .iter()
            .map(|e| e.spec.name.as_str())
            .filter(|n| self.deferred.contains(*n))
            .collect()
    }

    /// Runs a tool search over this view. Only visible tools can be found; `select:` of a
    /// tool policy hid reports it in [`Found::hidden`] with the reason, never its
    /// definition. Keyword searches rank the tools of `scope`.
    pub fn search(&self, query: &Query, scope: Scope, max: usize) -> Found {
        match query {
            Query::Select(names) => {
                let mut found = Found::default();
                for name in names {
                    match self.lookup(name) {
                        Lookup::Found(e) | Lookup::Deferred(e) => found.tools.push(Arc::clone(e)),
                        Lookup::Hidden(h) => found.hidden.push((name.clone(), h.reason.clone())),
                        Lookup::Unknown(_) => found.unknown.push(name.clone()),
                    }
                }
                found
            }
            Query::Keywords { required, terms } => {
                let index = self.index.get_or_init(|| {
                    SearchIndex::build(self.visible.iter(), |n| self.deferred.contains(n))
                });
                Found {
                    tools: index.rank(required, terms, scope, max),
                    ..Found::default()
                }
            }
        }
    }

    /// A view from its parts: deferred names not visible are dropped, and ToolSearch is
    /// hidden when nothing is deferred (it would have nothing to load).
    fn assemble(
        mut visible: Vec<Arc<Entry>>,
        mut hidden: BTreeMap<String, Hidden>,
        mut deferred: BTreeSet<String>,
    ) -> View {
        let names: std::collections::HashSet<&str> =
            visible.iter().map(|e| e.spec.name.as_str()).collect();
        deferred.retain(|n| names.contains(n.as_str()));
        drop(names);
        if deferred.is_empty()
            && let Some(at) = visible.iter().position(|e| e.spec.name == TOOL_SEARCH)
        {
            visible.remove(at);
            hidden.insert(
                TOOL_SEARCH.to_owned(),
                Hidden {
                    layer: Layer::Default,
                    reason: format!(
                        "{TOOL_SEARCH} is offered only when tool definitions are deferred, and \
                         no tool is deferred in this session: call the tools directly"
                    ),
                },
            );
        }
        View {
            visible: Arc::new(visible),
            hidden: Arc::new(hidden),
            deferred: Arc::new(deferred),
            index: Arc::default(),
        }
    }

    /// Definitions wrapped as each API's listing expects: an array for Anthropic and OpenAI,
    /// `{"tools": [...]}` for MCP's `tools/list` result.
    pub fn listing(&self, format: Format) -> Value {
        let defs = self.definitions(format);
        match format {
            Format::Mcp => json!({ "tools": defs }),
            _ => Value::Array(defs),
        }
    }
}

/// What a tool search found.
#[derive(Debug, Default)]
pub struct Found {
    /// The tools, best first (`select:` order for exact names).
    pub tools: Vec<Arc<Entry>>,
    /// `select:` names that policy hid from this session, with the reason.
    pub hidden: Vec<(String, String)>,
    /// `select:` names no tool of this session has.
    pub unknown: Vec<String>,
}

/// Most deferred names listed in ToolSearch's description; the rest are counted.
pub const MAX_LISTED_DEFERRED: usize = 1000;

fn deferred_note(names: &[&str]) -> String {
    let mut note = String::from(
        "\n\nDeferred tools (only their names are loaded; load a definition with this tool \
         before calling the tool): ",
    );
    note.push_str(&names[..names.len().min(MAX_LISTED_DEFERRED)].join(", "));
    if names.len() > MAX_LISTED_DEFERRED {
        note.push_str(&format!(", and {} more", names.len() - MAX_LISTED_DEFERRED));
    }
    note
}

/// Levenshtein distance over bytes; names are short ASCII.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("read", "read"), 0);
        assert_eq!(edit_distance("raed", "read"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
