//! The decision engine: settings compiled once into indexed rules. A decision builds a view
//! of the call — which looks at the file system, within bounds, to expand globs, follow
//! symlinks and walk the directories a recursive command reaches where a deny or ask rule
//! could apply — and then looks up only the rules that can apply to it.
//!
//! The order of precedence (compat §4, plus toolgate's profiles and risk floor) is kept in
//! one place: the `decide` module.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;
use toolgate_protocol::{CallFacts, PermissionMode, Subject, ToolAnnotations, Verdict};

use crate::error::PolicyError;
use crate::modes::{ROOT_GUARD_REASON, RootGuard};
use crate::profiles::Profile;
use crate::rules::index::{RuleSet, allow_cover};
use crate::rules::path::Anchors;
use crate::rules::{ParseCtx, Rule, RuleKind, Spec, ToolPat, parse_rule};
use crate::settings::TrustStore;
use crate::trace::{Decided, Trace};
use crate::view::View;

/// Everything the engine needs to decide one call. Maps one-to-one onto core's
/// `DecisionRequest` (spec, input, facts, session, hook).
#[derive(Debug, Clone, Copy)]
pub struct PolicyRequest<'a> {
    /// Canonical tool name.
    pub tool: &'a str,
    /// The tool's subject (which input field rules match).
    pub subject: &'a Subject,
    /// The tool's annotations (trusted for built-in tools only; MCP annotations are never
    /// used to approve anything).
    pub annotations: ToolAnnotations,
    /// The (possibly hook-updated) input.
    pub input: &'a Value,
    /// Stage 4's facts.
    pub facts: &'a CallFacts,
    /// The session's permission mode.
    pub mode: PermissionMode,
    /// The aggregated PreToolUse hook verdict, if a hook decided.
    pub hook: Option<&'a Verdict>,
    /// The session's current directory (relative input paths are resolved against it).
    pub cwd: &'a Path,
    /// The session's roots (workspace and additional directories), canonical.
    pub roots: &'a [&'a Path],
}

impl<'a> PolicyRequest<'a> {
    /// The same request under the tool's current name (`Task` → `Agent`): rules are
    /// compiled under current names, so an embedder or a hook passing an old one is judged
    /// by the same rules.
    pub fn canonical(&self) -> PolicyRequest<'a> {
        PolicyRequest {
            tool: toolgate_protocol::canonical_tool_name(self.tool),
            ..*self
        }
    }
}

/// What a sandbox room must do with one path: [`Engine::room_path_limit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomPathLimit {
    /// A `Read(…)` rule covers it: hide it (which also keeps it from being written);
    /// otherwise an `Edit(…)` rule does: keep it read-only.
    pub hide: bool,
    /// Deny or ask (a room cannot ask: both keep the file out of the command's reach).
    pub kind: RuleKind,
    /// The rule as written.
    pub rule: String,
}

/// One rule to compile, with its provenance.
#[derive(Debug, Clone)]
pub struct RuleInput {
    /// Which list.
    pub kind: RuleKind,
    /// The rule as written.
    pub text: String,
    /// Where it came from (a file path, `--deny`, `session`).
    pub source: Arc<str>,
    /// What `/path` in a Read/Edit rule is relative to.
    pub anchor: PathBuf,
    /// Whether it came from managed settings.
    pub managed: bool,
}

/// Builds an [`Engine`].
#[derive(Debug, Default)]
pub struct EngineBuilder {
    cwd: Option<PathBuf>,
    home: Option<PathBuf>,
    rules: Vec<RuleInput>,
    extra_tools: HashSet<String>,
    guard: RootGuard,
    catastrophic_ask: Option<String>,
    profile: Option<Profile>,
    approvals_file: Option<PathBuf>,
    approvals_wait_for_trust: bool,
    trust: Option<(TrustStore, PathBuf)>,
    warnings: Vec<String>,
    strict_sources: Vec<String>,
}

impl EngineBuilder {
    /// Makes a broken allow rule from `source` an error rather than a skipped rule with a
    /// warning: for rules typed on the command line, whose author is there to fix them.
    pub fn strict_source(mut self, source: &str) -> Self {
        self.strict_sources.push(source.to_owned());
        self
    }

    /// The starting cwd (project root): the anchor of `./path` and bare path patterns.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The home directory (for `~/` patterns and critical paths).
    pub fn home(mut self, dir: impl Into<PathBuf>) -> Self {
        self.home = Some(dir.into());
        self
    }

    /// Adds a rule from `source`.
    pub fn rule(mut self, kind: RuleKind, text: &str, source: &str) -> Self {
        let anchor = self.cwd.clone().unwrap_or_else(|| PathBuf::from("/"));
        self.rules.push(RuleInput {
            kind,
            text: text.to_owned(),
            source: Arc::from(source),
            anchor,
            managed: false,
        });
        self
    }

    /// Adds an allow rule (source `builder`).
    pub fn allow(self, text: &str) -> Self {
        self.rule(RuleKind::Allow, text, "builder")
    }

    /// Adds an ask rule (source `builder`).
    pub fn ask(self, text: &str) -> Self {
        self.rule(RuleKind::Ask, text, "builder")
    }

    /// Adds a deny rule (source `builder`).
    pub fn deny(self, text: &str) -> Self {
        self.rule(RuleKind::Deny, text, "builder")
    }

    /// Adds compiled-from-settings rules (see [`crate::Settings::rule_inputs`]).
    pub fn rules(mut self, rules: impl IntoIterator<Item = RuleInput>) -> Self {
        self.rules.extend(rules);
        self
    }

    /// Tool names rules may use without an "unknown tool" warning (the registry's).
    pub fn known_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extra_tools.extend(names.into_iter().map(Into::into));
        self
    }

    /// Whether toolgate runs as root, inside a sandbox, and whether `--allow-root` was given.
    /// A sandbox counts as containing the filesystem unless
    /// [`root_containment`](Self::root_containment) says otherwise.
    pub fn root(mut self, is_root: bool, sandboxed: bool, allow_root: bool) -> Self {
        self.guard = RootGuard {
            is_root,
            sandboxed,
            contained: true,
            allow_root,
        };
        self
    }

    /// Whether the sandbox isolates the filesystem (tiers A and B; not the seccomp-only
    /// tier C). Only a containing sandbox lifts the root guard on bypass mode.
    pub fn root_containment(mut self, contained: bool) -> Self {
        self.guard.contained = contained;
        self
    }

    /// Managed settings lifted the catastrophic floor to an ask (never an allow).
    pub fn catastrophic_ask(mut self, source: Option<String>) -> Self {
        self.catastrophic_ask = source;
        self
    }

    /// The session's profile (tool allow-list).
    pub fn profile(mut self, profile: Option<Profile>) -> Self {
        self.profile = profile;
        self
    }

    /// Where "allow always" approvals are written (`.toolgate/settings.local.json`).
    pub fn approvals_file(mut self, path: Option<PathBuf>) -> Self {
        self.approvals_file = path;
        self
    }

    /// Whether rules saved to the approvals file wait for `toolgate trust` before a later
    /// session applies them (the project is not trusted): prompts say so.
    pub fn approvals_wait_for_trust(mut self, waits: bool) -> Self {
        self.approvals_wait_for_trust = waits;
        self
    }

    /// The trust store and project: an "allow always" write keeps a trusted project trusted.
    pub fn trust_store(mut self, store: Option<TrustStore>, project: PathBuf) -> Self {
        self.trust = store.map(|s| (s, project));
        self
    }

    /// Warnings gathered while loading settings, reported with the engine's own.
    pub fn warnings(mut self, warnings: impl IntoIterator<Item = String>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// Parses and indexes every rule. A broken deny or ask rule is an error (dropping it
    /// would make toolgate more permissive than its settings); a broken allow rule is a
    /// warning.
    pub fn build(self) -> Result<Engine, PolicyError> {
        let cwd = self.cwd.unwrap_or_else(|| PathBuf::from("/"));
        let mut warnings = self.warnings;
        let rules = compile(
            &self.rules,
            &cwd,
            self.home.as_deref(),
            &self.extra_tools,
            &self.strict_sources,
            &mut warnings,
        )?;
        let set = RuleSet::new(rules).map_err(|message| PolicyError::Rule {
            origin: "settings".into(),
            list: "path",
            rule: String::new(),
            message,
        })?;
        Ok(Engine {
            rules: set,
            session: RwLock::new(Arc::new(RuleSet::default())),
            session_inputs: RwLock::new(Vec::new()),
            cwd,
            home: self.home,
            extra_tools: self.extra_tools,
            guard: self.guard,
            catastrophic_ask: self.catastrophic_ask,
            profile: self.profile,
            approvals_file: self.approvals_file,
            approvals_wait_for_trust: self.approvals_wait_for_trust,
            trust: self.trust,
            warnings,
        })
    }
}

fn compile(
    inputs: &[RuleInput],
    cwd: &Path,
    home: Option<&Path>,
    extra: &HashSet<String>,
    strict: &[String],
    warnings: &mut Vec<String>,
) -> Result<Vec<Rule>, PolicyError> {
    let mut rules = Vec::with_capacity(inputs.len());
    for input in inputs {
        let ctx = ParseCtx {
            anchors: Anchors {
                source: &input.anchor,
                cwd,
                home,
            },
            extra_tools: extra,
            source: input.source.clone(),
        };
        match parse_rule(&input.text, input.kind, &ctx, warnings) {
            Ok(Some(rule)) => rules.push(rule),
            Ok(None) => {}
            Err(message)
                if input.kind == RuleKind::Allow
                    && !strict.iter().any(|s| **s == *input.source) =>
            {
                warnings.push(format!(
                    "{}: allow rule `{}` skipped: {message}",
                    input.source, input.text
                ))
            }
            Err(message) => {
                return Err(PolicyError::Rule {
                    origin: input.source.to_string(),
                    list: input.kind.as_str(),
                    rule: input.text.clone(),
                    message,
                });
            }
        }
    }
    Ok(rules)
}

/// The compiled permission policy. Immutable except for the rules approved during the
/// session ("allow always"), which sit behind a lock read once per decision.
#[derive(Debug)]
pub struct Engine {
    pub(crate) rules: RuleSet,
    session: RwLock<Arc<RuleSet>>,
    session_inputs: RwLock<Vec<RuleInput>>,
    cwd: PathBuf,
    pub(crate) home: Option<PathBuf>,
    extra_tools: HashSet<String>,
    pub(crate) guard: RootGuard,
    pub(crate) catastrophic_ask: Option<String>,
    pub(crate) profile: Option<Profile>,
    approvals_file: Option<PathBuf>,
    approvals_wait_for_trust: bool,
    trust: Option<(TrustStore, PathBuf)>,
    warnings: Vec<String>,
}

impl Engine {
    /// A builder.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// Warnings from loading settings and compiling rules (unknown tools, ignored rules).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The home directory the engine was built with.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The profile, if one was selected.
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_ref()
    }

    /// The bare-name deny rule that removes `tool` from the model's tool list (`Bash`,
    /// `Bash(*)`, `mcp__*`, `*`), or the profile that leaves it out: `(rule, source)`.
    pub fn removes_tool(&self, tool: &str) -> Option<(String, String)> {
        let tool = toolgate_protocol::canonical_tool_name(tool);
        if let Some(p) = &self.profile
            && !p.allows_tool(tool)
        {
            return Some((format!("profile {} tools", p.name), p.source.clone()));
        }
        self.rules
            .rules
            .iter()
            .filter(|r| r.kind == RuleKind::Deny && matches!(r.spec, Spec::Any))
            .find(|r| match &r.tool {
                ToolPat::Name(n) => n.eq_ignore_ascii_case(tool),
                ToolPat::Server(s) => tool.starts_with(s.as_str()),
                ToolPat::Glob(re) => re.is_match(tool),
            })
            .map(|r| (r.text.clone(), r.source.to_string()))
    }

    /// Decides one call.
    pub fn decide(&self, req: &PolicyRequest<'_>) -> Decided {
        let req = &req.canonical();
        let mut view = View::build(req, self.home.as_deref());
        self.rules.expand_beneath(&mut view);
        let mut trace = Trace::new(req.tool, req.mode);
        crate::decide::summarize(&view, req, &mut trace);
        let verdict = self.evaluate(req, &view, &mut trace);
        Decided { verdict, trace }
    }

    pub(crate) fn session_rules(&self) -> Arc<RuleSet> {
        self.session
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Approves rules for the rest of the session, and with `persist` also writes them to
    /// the local settings file. Rules are compiled first; a rule that does not parse is
    /// refused.
    pub fn remember(&self, rules: &[String], persist: bool) -> Result<(), PolicyError> {
        let inputs: Vec<RuleInput> = rules
            .iter()
            .map(|r| RuleInput {
                kind: RuleKind::Allow,
                text: r.clone(),
                source: Arc::from(if persist {
                    "approved (allow always)"
                } else {
                    "approved (this session)"
                }),
                anchor: self.cwd.clone(),
                managed: false,
            })
            .collect();
        let mut warnings = Vec::new();
        let compiled = compile(
            &inputs,
            &self.cwd,
            self.home.as_deref(),
            &self.extra_tools,
            &[],
            &mut warnings,
        )?;
        if compiled.len() != inputs.len() {
            return Err(PolicyError::Rule {
                origin: "approval".into(),
                list: "allow",
                rule: rules.join(", "),
                message: warnings.join("; "),
            });
        }
        if persist && let Some(path) = &self.approvals_file {
            match &self.trust {
                Some((store, project)) => {
                    store.keep_trust_across(project, || crate::approvals::persist(path, rules))?
                }
                None => crate::approvals::persist(path, rules)?,
            }
        }
        let mut all = self
            .session_inputs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        all.extend(inputs);
        let compiled_all = compile(
            &all,
            &self.cwd,
            self.home.as_deref(),
            &self.extra_tools,
            &[],
            &mut Vec::new(),
        )?;
        let set = RuleSet::new(compiled_all).map_err(|message| PolicyError::Rule {
            origin: "approval".into(),
            list: "allow",
            rule: rules.join(", "),
            message,
        })?;
        *self.session.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(set);
        Ok(())
    }

    /// The rules approved while this engine ran ("allow for this session" and "allow
    /// always"), in order: what an engine compiled from a reloaded version of the settings
    /// takes over with [`Engine::remember`], so a reload does not forget the user's answers.
    pub fn approved(&self) -> Vec<String> {
        self.session_inputs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|r| r.text.clone())
            .collect()
    }

    /// Where approvals are persisted, if anywhere.
    pub fn approvals_file(&self) -> Option<&Path> {
        self.approvals_file.as_deref()
    }

    /// Whether rules saved to [`Engine::approvals_file`] wait for `toolgate trust` before
    /// a later session applies them.
    pub fn approvals_wait_for_trust(&self) -> bool {
        self.approvals_wait_for_trust
    }

    /// The rules an "allow always" answer would save for this call: one exact rule per
    /// subcommand not yet allowed, never a wildcard, never an interpreter; `Err` says why
    /// nothing can be saved (the call can still be allowed once).
    pub fn suggest(&self, req: &PolicyRequest<'_>) -> Result<Vec<String>, String> {
        let req = &req.canonical();
        let view = View::build(req, self.home.as_deref());
        let session = self.session_rules();
        let cover = allow_cover(&[&self.rules, &session], req.tool, req.input, &view, false);
        crate::approvals::suggest(req, &view, &cover)
    }

    /// The allow rules that match every subcommand of a Bash call the analyzer fully
    /// understood, when each one is matched: `None` when a subcommand is unmatched, carries
    /// a wrapper (`sudo`, `xargs`, …) or a leading `NAME=value`, or the call is opaque. The
    /// one Bash matcher behind `sandbox.excludedCommands` (see [`crate::CommandPatterns`]).
    pub fn covering_allow_rules(&self, req: &PolicyRequest<'_>) -> Option<Vec<String>> {
        let req = &req.canonical();
        let facts = req.facts;
        if facts.opaque
            || facts.commands.is_empty()
            || facts
                .commands
                .iter()
                .any(|c| !c.wrappers.is_empty() || !c.env.is_empty() || c.argv.is_empty())
        {
            return None;
        }
        let view = View::build(req, self.home.as_deref());
        if view.shell_facts != "analyzer" || !view.opaque.is_empty() {
            return None;
        }
        crate::rules::index::bash_cover(&self.rules, &view)
            .map(|rules| rules.iter().map(|r| r.text.clone()).collect())
    }

    /// Whether this engine's allow rules alone cover the call — every subcommand (read-only
    /// ones aside), path and host, with the same matcher the permission decision uses —
    /// naming the rules that do; `Err` says what is left uncovered. Modes, the session's
    /// approvals and the deny side play no part: this lets a rule list act as a *scope*
    /// (a skill's `allowed-tools`), which can then only narrow what the real decision
    /// allows.
    pub fn allow_rules_cover(&self, req: &PolicyRequest<'_>) -> Result<Vec<String>, Uncovered> {
        let req = &req.canonical();
        let mut view = View::build(req, self.home.as_deref());
        self.rules.expand_beneath(&mut view);
        let cover = allow_cover(&[&self.rules], req.tool, req.input, &view, false);
        let mut trace = Trace::new(req.tool, req.mode);
        match crate::decide::allow_verdict(&view, &cover, &mut trace) {
            Ok(_) => Ok(cover.used.iter().map(|r| r.text.clone()).collect()),
            Err(why) if why.is_empty() => {
                Err(Uncovered(format!("no rule covers this {} call", req.tool)))
            }
            Err(why) => Err(Uncovered(why)),
        }
    }

    /// The guard message when bypass mode meets root outside a sandbox.
    pub fn root_guard(&self) -> Option<&'static str> {
        self.guard.blocks().then_some(ROOT_GUARD_REASON)
    }

    /// Whether [`path_rule`](Self::path_rule) can name a rule for reading any file: when
    /// not, a directory walker need not ask it about every entry.
    pub fn limits_reads_by_path(&self) -> bool {
        self.rules.has_read_path_limits()
    }

    /// What a sandbox room must do with `path` so that it is never wider than this engine:
    /// the deny or ask `Read(…)` path rule that covers it (the room hides it), else the
    /// `Edit(…)` one (the room makes it read-only). Same compiled globs, anchors and
    /// gitignore-style semantics as every decision; bare `Read`/`Edit` rules, which take a
    /// tool away, are not about files and do not count.
    pub fn room_path_limit(&self, path: &Path) -> Option<RoomPathLimit> {
        let (rule, family) = self.rules.limiting_path_rule(path)?;
        Some(RoomPathLimit {
            hide: family == crate::rules::PathFamily::Read,
            kind: rule.kind,
            rule: rule.text.clone(),
        })
    }

    /// Whether [`room_path_limit`](Self::room_path_limit) can be `Some` for anything.
    pub fn has_room_path_limits(&self) -> bool {
        self.rules.has_limiting_path_rules()
    }

    /// Whether [`room_path_limit`](Self::room_path_limit) could be `Some` for a path
    /// strictly beneath `dir` (a walk need not descend otherwise).
    pub fn room_path_limits_reach_beneath(&self, dir: &Path) -> bool {
        self.rules.limiting_path_rules_reach_beneath(dir)
    }

    /// The directories the deny and ask path rules name literally: the only places outside
    /// the workspace a rule can cover without reaching every directory (`Read(.env)`).
    pub fn room_path_rule_dirs(&self) -> Vec<PathBuf> {
        self.rules.limiting_path_rule_dirs()
    }

    /// The deny (else ask) rule that covers touching `path` this way, as
    /// `(list, rule, source)`. For tools that walk directories (Grep, Glob, a sandbox's
    /// mount plan): a denied file inside an allowed directory must be skipped, not read.
    pub fn path_rule(
        &self,
        path: &Path,
        access: toolgate_protocol::Access,
    ) -> Option<(RuleKind, String, String)> {
        let view = View::for_path(path, access);
        let tool = if access == toolgate_protocol::Access::Read {
            "Read"
        } else {
            "Edit"
        };
        let null = Value::Null;
        for kind in [RuleKind::Deny, RuleKind::Ask] {
            if let Some(hit) = self.rules.first_match(kind, tool, &null, &view) {
                return Some((kind, hit.rule.text.clone(), hit.rule.source.to_string()));
            }
        }
        None
    }
}

/// What [`Engine::allow_rules_cover`] found no allow rule for, in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Uncovered(pub String);
