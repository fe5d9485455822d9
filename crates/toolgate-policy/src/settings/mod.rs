//! Settings: the Claude Code compatible files, their sources and merge, workspace trust,
//! and the effective settings `toolgate config` prints.
//!
//! Sources, highest first: managed (`/etc/toolgate/managed-settings.json`, then
//! `managed-settings.d/*.json`), the command line (`--settings`, `--mode`, `--allow`,
//! `--ask`, `--deny`, `--add-dir`), project local (`.toolgate/settings.local.json`),
//! project (`.toolgate/settings.json`), user (`$XDG_CONFIG_HOME/toolgate/settings.json`);
//! with `claude` the matching `.claude/` files, `~/.claude/settings.json` and
//! `/etc/claude-code/` are read too, each right after toolgate's file of the same level.

pub mod keys;
mod load;
mod merge;
mod trust;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use toolgate_protocol::PermissionMode;

pub use load::{
    CliSettings, FloorAction, LoadOptions, Served, ToolSearchConfig, ToolSearchMode,
    is_settings_url, project_files, user_project_settings,
};
pub use merge::UNTRUSTED_NOTE;
pub use trust::{
    MAX_STEERING_FILES, PROJECT_AGENT_DIRS, PROJECT_MCP_FILE, PROJECT_SKILL_DIRS, TRUST_FILE,
    TrustRecord, TrustStatus, TrustStore, project_hash, real_project, steering_files,
};

use crate::classifier::ClassifierConfig;
use crate::constraints::{ConstraintConfig, Constraints};
use crate::engine::{EngineBuilder, RuleInput};
use crate::error::PolicyError;
use crate::profiles::{Profile, ProfileConfig};
use crate::rules::RuleKind;

/// The level a settings source sits at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// `/etc/toolgate/managed-settings.json` and `managed-settings.d/`.
    Managed,
    /// `--settings`, `--allow`, `--deny`, `--add-dir`.
    CommandLine,
    /// `.toolgate/settings.local.json`.
    ProjectLocal,
    /// `.toolgate/settings.json`.
    Project,
    /// `$XDG_CONFIG_HOME/toolgate/settings.json`.
    User,
}

impl SourceKind {
    /// `managed`, `command line`, …
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Managed => "managed",
            SourceKind::CommandLine => "command line",
            SourceKind::ProjectLocal => "project local",
            SourceKind::Project => "project",
            SourceKind::User => "user",
        }
    }

    /// Project and project-local files: they come with the repository, so their permissive
    /// parts wait for trust.
    pub fn is_project(self) -> bool {
        matches!(self, SourceKind::Project | SourceKind::ProjectLocal)
    }
}

/// One settings source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceInfo {
    /// Its level.
    pub kind: SourceKind,
    /// How it is named in traces (a file path, `--settings <json>`).
    pub label: String,
    /// The file, if it is one.
    pub path: Option<PathBuf>,
    /// What `/path` in its Read/Edit rules is relative to.
    pub anchor: PathBuf,
    /// A Claude Code file (read with `--claude`).
    pub claude: bool,
}

impl SourceInfo {
    /// Whether its permissive parts wait for workspace trust.
    pub fn needs_trust(&self) -> bool {
        self.kind.is_project()
    }
}

/// A value with the index of its source in [`Settings::sources`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// Index into [`Settings::sources`].
    pub source: usize,
    /// Whether it is in force.
    pub active: bool,
    /// Why not, if not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One permission rule with its provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleEntry {
    /// Which list.
    pub kind: RuleKind,
    /// As written.
    pub text: String,
    /// Index into [`Settings::sources`].
    pub source: usize,
    /// In force (an untrusted project's allow rule is not).
    pub active: bool,
    /// Why not, if not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The effective settings.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Settings {
    /// The project root.
    pub project: PathBuf,
    /// The home directory.
    pub home: Option<PathBuf>,
    /// toolgate's configuration directory.
    pub config_dir: Option<PathBuf>,
    /// Whether the workspace is trusted.
    pub trusted: bool,
    /// Every source read, highest first.
    pub sources: Vec<SourceInfo>,
    /// Every rule, in source order.
    pub rules: Vec<RuleEntry>,
    /// Additional directories.
    pub additional_directories: Vec<Sourced<PathBuf>>,
    /// `--mode`.
    pub cli_mode: Option<PermissionMode>,
    /// `permissions.defaultMode` from the highest source that sets it (and may).
    pub default_mode: Option<Sourced<PermissionMode>>,
    /// The source that set `disableBypassPermissionsMode: "disable"`.
    pub disable_bypass: Option<usize>,
    /// The source that set `disableAutoMode: "disable"`.
    pub disable_auto: Option<usize>,
    /// `hooks` objects per source, for the hooks crate.
    pub hooks: Vec<Sourced<Value>>,
    /// `disableAllHooks`.
    pub disable_all_hooks: Option<Sourced<bool>>,
    /// Managed settings set `allowManagedHooksOnly`.
    pub managed_hooks_only: bool,
    /// `sandbox`, merged (arrays concatenated, scalars from the highest source).
    pub sandbox: Value,
    /// `toolgate.profiles`.
    pub profiles: BTreeMap<String, Sourced<ProfileConfig>>,
    /// `toolgate.constraints`: (tool pattern, config, source).
    pub constraints: Vec<(String, ConstraintConfig, usize)>,
    /// `toolgate.classifier`.
    pub classifier: Option<Sourced<ClassifierConfig>>,
    /// `toolgate.agent`: the model endpoint sub-agents (the Agent tool) run on, in the
    /// classifier's shape.
    pub agent: Option<Sourced<ClassifierConfig>>,
    /// The managed source that lifted the catastrophic floor to ask.
    pub catastrophic_ask: Option<usize>,
    /// `toolgate.maskSalt`.
    pub mask_salt: Option<String>,
    /// `toolgate.toolSearch` from the highest source that sets it.
    pub tool_search: Option<ToolSearchConfig>,
    /// `env`: variables for the commands toolgate runs, each from the highest source that
    /// sets it (an untrusted project's wait for trust).
    pub env: BTreeMap<String, Sourced<String>>,
    /// `webFetch`, merged from the sources in force (arrays concatenated, scalars from the
    /// highest); an untrusted project's waits for trust.
    pub web_fetch: Value,
    /// `webSearch` from the highest source in force that sets it, taken whole.
    pub web_search: Option<Sourced<Value>>,
    /// `mcpServers`: each upstream MCP server from the highest source that names it (an
    /// untrusted project's wait for trust); the gateway crate parses the entries.
    pub mcp_servers: BTreeMap<String, Sourced<Value>>,
    /// Warnings for `toolgate config`.
    pub warnings: Vec<String>,
}

/// Loads and merges every settings source for `opts`. A broken file is an error; a project
/// is trusted when `opts.trusted` says so or the trust store has a matching record.
pub fn load(opts: &LoadOptions) -> Result<Settings, PolicyError> {
    let layers = load::discover(opts)?;
    let has_project_files = layers.iter().any(|l| l.info.needs_trust())
        || !trust::steering_files(&opts.project).is_empty();
    let trusted = match opts.trusted {
        Some(t) => t,
        None if !has_project_files => false,
        None => match &opts.config_dir {
            Some(dir) => TrustStore::new(dir).status(&opts.project)? == TrustStatus::Trusted,
            None => false,
        },
    };
    let mut s = merge::merge(layers, &opts.cli, &opts.project, trusted, opts.home.clone())?;
    s.config_dir = opts.config_dir.clone();
    Ok(s)
}

impl Settings {
    fn label(&self, i: usize) -> &str {
        self.sources.get(i).map_or("?", |s| s.label.as_str())
    }

    /// The named profile, compiled.
    pub fn profile(&self, name: &str) -> Result<Profile, PolicyError> {
        match self.profiles.get(name) {
            Some(p) => Profile::new(name, self.label(p.source), &p.value).map_err(|message| {
                PolicyError::Invalid {
                    origin: self.label(p.source).to_owned(),
                    key: format!("toolgate.profiles.{name}"),
                    message,
                }
            }),
            None => Err(PolicyError::UnknownProfile {
                name: name.to_owned(),
                known: if self.profiles.is_empty() {
                    "none".into()
                } else {
                    self.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
                },
            }),
        }
    }

    /// The rules in force, plus the profile's, ready for the engine.
    pub fn rule_inputs(&self, profile: Option<&Profile>) -> Vec<RuleInput> {
        let mut out: Vec<RuleInput> = self
            .rules
            .iter()
            .filter(|r| r.active)
            .map(|r| {
                let src = &self.sources[r.source];
                RuleInput {
                    kind: r.kind,
                    text: r.text.clone(),
                    source: Arc::from(src.label.as_str()),
                    anchor: src.anchor.clone(),
                    managed: src.kind == SourceKind::Managed,
                }
            })
            .collect();
        if let Some(p) = profile {
            let label: Arc<str> = Arc::from(format!("profile {} ({})", p.name, p.source).as_str());
            out.extend(p.rules.iter().map(|(kind, text)| RuleInput {
                kind: *kind,
                text: text.clone(),
                source: label.clone(),
                anchor: self.project.clone(),
                managed: false,
            }));
        }
        out
    }

    /// The session's mode: `--mode`, else the profile's, else `defaultMode`, else
    /// `default`; refused when the settings disable it.
    pub fn resolve_mode(&self, profile: Option<&Profile>) -> Result<PermissionMode, PolicyError> {
        let mode = self
            .cli_mode
            .or_else(|| profile.and_then(|p| p.mode))
            .or_else(|| self.default_mode.as_ref().map(|m| m.value))
            .unwrap_or_default();
        let disabled = match mode {
            PermissionMode::BypassPermissions => self
                .disable_bypass
                .map(|s| (s, "disableBypassPermissionsMode")),
            PermissionMode::Auto => self.disable_auto.map(|s| (s, "disableAutoMode")),
            _ => None,
        };
        if let Some((src, key)) = disabled {
            return Err(PolicyError::ModeDisabled {
                mode: mode.to_string(),
                origin: self.label(src).to_owned(),
                key,
            });
        }
        Ok(mode)
    }

    /// The `env` variables in force.
    pub fn env_vars(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .filter(|(_, v)| v.active)
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect()
    }

    /// Additional directories in force.
    pub fn additional_dirs(&self) -> Vec<PathBuf> {
        self.additional_directories
            .iter()
            .filter(|d| d.active)
            .map(|d| d.value.clone())
            .collect()
    }

    /// An engine builder with these settings' rules, floor, approvals file and trust store;
    /// the caller adds `known_tools` and `root` and builds.
    pub fn engine_builder(&self, profile: Option<&Profile>) -> EngineBuilder {
        // "Allow always" in a project that is not trusted goes to the user's settings for
        // this project, which need no trust; a rule in the project's local file would wait.
        let approvals = match &self.config_dir {
            Some(dir) if !self.trusted => user_project_settings(dir, &self.project),
            _ => self.project.join(".toolgate/settings.local.json"),
        };
        let mut b = crate::Engine::builder()
            .cwd(self.project.clone())
            .rules(self.rule_inputs(profile))
            .catastrophic_ask(self.catastrophic_ask.map(|i| self.label(i).to_owned()))
            .profile(profile.cloned())
            .approvals_file(Some(approvals.clone()))
            .approvals_wait_for_trust(!self.trusted && self.config_dir.is_none())
            .trust_store(
                self.config_dir.as_deref().map(TrustStore::new),
                self.project.clone(),
            )
            .warnings(self.warnings.iter().cloned())
            .strict_source(merge::FLAGS_LABEL);
        if let Some(h) = &self.home {
            b = b.home(h.clone());
        }
        b
    }

    /// The constraints in force (every source, plus the profile's).
    pub fn constraints(&self, profile: Option<&Profile>) -> Constraints {
        let mut entries: Vec<(String, ConstraintConfig, String)> = self
            .constraints
            .iter()
            .map(|(p, c, s)| (p.clone(), c.clone(), self.label(*s).to_owned()))
            .collect();
        if let Some(p) = profile {
            entries.extend(
                p.constraints
                    .iter()
                    .map(|(pat, c)| (pat.clone(), c.clone(), format!("profile {}", p.name))),
            );
        }
        Constraints::new(entries, self.mask_salt.as_deref())
    }

    /// The effective settings as JSON, each rule with its source.
    pub fn to_json(&self) -> Value {
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|r| json!({"list": r.kind, "rule": r.text, "source": self.label(r.source), "active": r.active, "note": r.note}))
            .collect();
        json!({
            "project": self.project,
            "trusted": self.trusted,
            "sources": self.sources,
            "mode": self.resolve_mode(None).map(|m| m.to_string()).unwrap_or_else(|e| e.to_string()),
            "defaultMode": self.default_mode.as_ref().map(|m| json!({"mode": m.value, "source": self.label(m.source)})),
            "rules": rules,
            "additionalDirectories": self.additional_directories.iter().map(|d| json!({"path": d.value, "source": self.label(d.source), "active": d.active})).collect::<Vec<_>>(),
            "hooks": self.hooks.iter().map(|h| json!({"source": self.label(h.source), "active": h.active, "hooks": h.value})).collect::<Vec<_>>(),
            "sandbox": self.sandbox,
            "profiles": self.profiles.iter().map(|(n, p)| (n.clone(), json!({"source": self.label(p.source), "profile": p.value}))).collect::<serde_json::Map<_, _>>(),
            "constraints": self.constraints.iter().map(|(p, c, s)| json!({"tools": p, "source": self.label(*s), "constraint": c})).collect::<Vec<_>>(),
            "webFetch": self.web_fetch,
            "webSearch": self.web_search.as_ref().map(|w| json!({"source": self.label(w.source), "webSearch": w.value})),
            // Names and sources only: values may be credentials.
            "env": self.env.iter().map(|(k, v)| (k.clone(), json!({"source": self.label(v.source), "active": v.active}))).collect::<serde_json::Map<_, _>>(),
            "disableAllHooks": self.disable_all_hooks.as_ref().map(|d| json!({"value": d.value, "source": self.label(d.source)})),
            "classifier": self.classifier.as_ref().map(|c| json!({"source": self.label(c.source)})),
            "agent": self.agent.as_ref().map(|a| json!({"source": self.label(a.source), "endpoint": a.value.endpoint})),
            "toolSearch": self.tool_search,
            "warnings": self.warnings,
        })
    }

    /// The effective settings for people: sources, mode, every rule with its source.
    pub fn render(&self, extra_warnings: &[String]) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "project  {}  ({})",
            self.project.display(),
            if self.trusted {
                "trusted"
            } else {
                "not trusted"
            }
        );
        let _ = writeln!(o, "sources (highest first):");
        for (i, s) in self.sources.iter().enumerate() {
            let _ = writeln!(o, "  {:>2}. {:<14} {}", i + 1, s.kind.as_str(), s.label);
        }
        let mode = match self.resolve_mode(None) {
            Ok(m) => m.to_string(),
            Err(e) => format!("(error) {e}"),
        };
        let from = if self.cli_mode.is_some() {
            "--mode".to_owned()
        } else {
            self.default_mode
                .as_ref()
                .map_or("built-in default".into(), |m| {
                    self.label(m.source).to_owned()
                })
        };
        let _ = writeln!(o, "mode     {mode}  (from {from})");
        for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
            let rules: Vec<&RuleEntry> = self.rules.iter().filter(|r| r.kind == kind).collect();
            let _ = writeln!(o, "{kind} rules ({}):", rules.len());
            for r in rules {
                let _ = write!(o, "  {:<40} {}", r.text, self.label(r.source));
                if let Some(n) = &r.note {
                    let _ = write!(o, "  [inactive: {n}]");
                }
                o.push('\n');
            }
        }
        if !self.additional_directories.is_empty() {
            let _ = writeln!(o, "additional directories:");
            for d in &self.additional_directories {
                let _ = writeln!(
                    o,
                    "  {:<40} {}{}",
                    d.value.display(),
                    self.label(d.source),
                    if d.active {
                        ""
                    } else {
                        "  [inactive: waits for trust]"
                    }
                );
            }
        }
        for h in &self.hooks {
            let events: Vec<&String> = h
                .value
                .as_object()
                .map(|m| m.keys().collect())
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "hooks    {} from {}{}",
                events
                    .iter()
                    .map(|e| e.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                self.label(h.source),
                if h.active {
                    ""
                } else {
                    "  [inactive: waits for trust]"
                }
            );
        }
        for (name, p) in &self.profiles {
            let _ = writeln!(
                o,
                "profile  {name}: mode {}, tools {}  ({})",
                p.value.mode.as_deref().unwrap_or("-"),
                p.value
                    .tools
                    .as_ref()
                    .map_or("all".into(), |t| t.join(", ")),
                self.label(p.source)
            );
        }
        for (pat, c, s) in &self.constraints {
            let _ = writeln!(
                o,
                "constraint {pat}: {}  ({})",
                serde_json::to_string(c).unwrap_or_default(),
                self.label(*s)
            );
        }
        if let Some(c) = &self.classifier {
            let _ = writeln!(
                o,
                "classifier {}  ({})",
                c.value.kind_name(),
                self.label(c.source)
            );
        }
        if let Some(a) = &self.agent {
            let _ = writeln!(
                o,
                "sub-agents {}  ({})",
                a.value.kind_name(),
                self.label(a.source)
            );
        }
        if self.web_fetch.as_object().is_some_and(|o| !o.is_empty()) {
            let _ = writeln!(o, "webFetch {}", self.web_fetch);
        }
        if let Some(w) = &self.web_search {
            let _ = writeln!(o, "webSearch {}  ({})", w.value, self.label(w.source));
        }
        if let Some(i) = self.catastrophic_ask {
            let _ = writeln!(
                o,
                "risk floor: catastrophic commands ask instead of being denied  ({})",
                self.label(i)
            );
        }
        let mut warnings: Vec<&String> = self.warnings.iter().collect();
        warnings.extend(extra_warnings.iter().filter(|w| !self.warnings.contains(w)));
        if !warnings.is_empty() {
            let _ = writeln!(o, "warnings:");
            for w in warnings {
                let _ = writeln!(o, "  - {w}");
            }
        }
        o
    }
}

/// Where "allow always" writes: `<project>/.toolgate/settings.local.json`.
pub fn local_settings_path(project: &Path) -> PathBuf {
    project.join(".toolgate/settings.local.json")
}
