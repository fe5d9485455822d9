//! Finding and parsing settings files. Every file is strict JSON; a file that exists but
//! does not parse is an error naming file, line and column — never skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::{SourceInfo, SourceKind};
use crate::classifier::ClassifierConfig;
use crate::constraints::ConstraintConfig;
use crate::error::PolicyError;
use crate::profiles::ProfileConfig;

/// Command-line settings (`--settings`, `--mode`, `--allow`, `--deny`, `--ask`, `--add-dir`).
#[derive(Debug, Clone, Default)]
pub struct CliSettings {
    /// `--settings FILE|JSON|URL`, in the order given (later ones win scalars). A URL's
    /// text must be in [`CliSettings::served`]: this crate reads files, it does not fetch.
    pub settings: Vec<String>,
    /// The text each URL in `settings` served, fetched by the caller (toolgate-setup).
    pub served: Vec<Served>,
    /// `--mode`.
    pub mode: Option<String>,
    /// `--allow RULE`.
    pub allow: Vec<String>,
    /// `--ask RULE`.
    pub ask: Vec<String>,
    /// `--deny RULE`.
    pub deny: Vec<String>,
    /// `--add-dir DIR`.
    pub add_dirs: Vec<PathBuf>,
    /// `--no-sandbox`: `sandbox.enabled: false` from the command line.
    pub no_sandbox: bool,
}

/// Settings a URL served: a command-line source like a `--settings` file, labelled with
/// its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The URL, as given on the command line.
    pub url: String,
    /// The body it served.
    pub text: String,
}

/// Whether a `--settings` value names a URL (`https://…`, or `http://…` for loopback)
/// rather than a file or inline JSON.
pub fn is_settings_url(value: &str) -> bool {
    let v = value.trim_start();
    v.starts_with("https://") || v.starts_with("http://")
}

/// Where to look for settings.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The project (workspace) root.
    pub project: PathBuf,
    /// The home directory.
    pub home: Option<PathBuf>,
    /// toolgate's user configuration directory (`$XDG_CONFIG_HOME/toolgate`): the user
    /// settings file and the trust store live here.
    pub config_dir: Option<PathBuf>,
    /// The managed settings directory (`/etc/toolgate`).
    pub managed_dir: PathBuf,
    /// Also read Claude Code's files (`.claude/…`, `~/.claude/settings.json`,
    /// `/etc/claude-code/…`).
    pub claude: bool,
    /// Claude Code's user directory (`$CLAUDE_CONFIG_DIR` or `~/.claude`).
    pub claude_dir: Option<PathBuf>,
    /// Claude Code's managed directory (`/etc/claude-code`).
    pub claude_managed_dir: PathBuf,
    /// The command line.
    pub cli: CliSettings,
    /// Force the trust decision (tests, `--trust-workspace`); `None` consults the store.
    pub trusted: Option<bool>,
}

impl LoadOptions {
    /// Defaults from the environment: `$HOME`, `$XDG_CONFIG_HOME` (else `~/.config`),
    /// `$CLAUDE_CONFIG_DIR` (else `~/.claude`), `/etc/toolgate`, `/etc/claude-code`.
    pub fn from_env(project: impl Into<PathBuf>) -> Self {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let config_dir = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")))
            .map(|d| d.join("toolgate"));
        let claude_dir = std::env::var_os("CLAUDE_CONFIG_DIR")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".claude")));
        Self {
            project: project.into(),
            home,
            config_dir,
            managed_dir: PathBuf::from("/etc/toolgate"),
            claude: false,
            claude_dir,
            claude_managed_dir: PathBuf::from("/etc/claude-code"),
            cli: CliSettings::default(),
            trusted: None,
        }
    }
}

/// `permissions` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawPermissions {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default)]
    pub additional_directories: Vec<String>,
    #[serde(default)]
    pub default_mode: Option<String>,
    #[serde(default)]
    pub disable_bypass_permissions_mode: Option<String>,
    #[serde(default)]
    pub disable_auto_mode: Option<String>,
    #[serde(default)]
    pub allow_managed_permission_rules_only: Option<bool>,
}

/// What managed settings may do to the risk floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FloorAction {
    /// Catastrophic commands and critical-path deletion are refused (the default).
    #[default]
    Deny,
    /// They need approval instead (never auto-approved).
    Ask,
}

/// `toolgate.riskFloor`: honoured only in managed settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RiskFloorConfig {
    #[serde(default)]
    pub catastrophic: FloorAction,
}

/// `toolgate.toolSearch`: when MCP tools are deferred behind ToolSearch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolSearchConfig {
    /// `auto` (the default), `always` or `off`.
    #[serde(default)]
    pub mode: ToolSearchMode,
    /// Under `auto`: the share of the context, in percent (1–100), MCP tool definitions
    /// may take before they are deferred.
    #[serde(default)]
    pub threshold_percent: Option<u8>,
    /// Under `auto`: the model's context budget, in tokens.
    #[serde(default)]
    pub context_tokens: Option<u64>,
}

/// When MCP tools are deferred.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSearchMode {
    /// When their definitions would exceed the threshold.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Off,
}

/// The `toolgate` key: toolgate's extensions to the Claude Code format.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ToolgateSettings {
    #[serde(default)]
    pub profiles: BTreeMap<String, ProfileConfig>,
    #[serde(default)]
    pub constraints: BTreeMap<String, ConstraintConfig>,
    #[serde(default)]
    pub classifier: Option<ClassifierConfig>,
    #[serde(default)]
    pub agent: Option<ClassifierConfig>,
    #[serde(default)]
    pub risk_floor: Option<RiskFloorConfig>,
    #[serde(default)]
    pub mask_salt: Option<String>,
    #[serde(default)]
    pub tool_search: Option<ToolSearchConfig>,
}

/// One settings file as written. Unknown top-level keys (Claude Code has many) are
/// accepted and ignored; known keys must have the right type.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawSettings {
    #[serde(default)]
    pub permissions: RawPermissions,
    #[serde(default)]
    pub hooks: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    pub disable_all_hooks: Option<bool>,
    #[serde(default)]
    pub sandbox: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    pub allow_managed_permission_rules_only: Option<bool>,
    #[serde(default)]
    pub allow_managed_hooks_only: Option<bool>,
    #[serde(default)]
    pub toolgate: Option<ToolgateSettings>,
    /// Claude Code's `env`: variables for the commands toolgate runs.
    #[serde(default)]
    pub env: serde_json::Map<String, Value>,
    /// Top-level keys toolgate does not know (filled after parsing).
    #[serde(skip)]
    pub unknown_keys: Vec<String>,
    /// WebFetch's settings; the web crate reads them.
    #[serde(default)]
    pub web_fetch: Option<serde_json::Map<String, Value>>,
    /// WebSearch's backend; the web crate reads it.
    #[serde(default)]
    pub web_search: Option<serde_json::Map<String, Value>>,
    /// `mcpServers`: upstream MCP servers; the gateway crate reads each entry.
    #[serde(default)]
    pub mcp_servers: serde_json::Map<String, Value>,
}

/// Parses settings text; errors carry the file name, line and column.
pub(crate) fn parse_text(label: &Path, text: &str) -> Result<RawSettings, PolicyError> {
    let mut raw =
        serde_json::from_str::<RawSettings>(text).map_err(|e| PolicyError::json(label, &e))?;
    // The keys alone, to name the ones toolgate does not know (a typo such as
    // `permisions` would otherwise drop every rule in the file without a word).
    if let Ok(keys) = serde_json::from_str::<BTreeMap<String, serde::de::IgnoredAny>>(text) {
        raw.unknown_keys = keys
            .into_keys()
            .filter(|k| !super::keys::is_known_top_level(k))
            .collect();
    }
    Ok(raw)
}

/// Reads a file if it exists. A missing file is `None`; anything else unreadable is an error.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, PolicyError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(PolicyError::Read {
            path: path.to_path_buf(),
            error,
        }),
    }
}

/// A discovered, parsed file.
pub(crate) struct Layer {
    pub info: SourceInfo,
    pub raw: RawSettings,
}

fn file_layer(
    kind: SourceKind,
    path: PathBuf,
    anchor: PathBuf,
    claude: bool,
) -> Result<Option<Layer>, PolicyError> {
    let Some(text) = read_optional(&path)? else {
        return Ok(None);
    };
    let raw = parse_text(&path, &text)?;
    Ok(Some(Layer {
        info: SourceInfo {
            kind,
            label: path.display().to_string(),
            path: Some(path),
            anchor,
            claude,
        },
        raw,
    }))
}

/// `managed-settings.json`, then `managed-settings.d/*.json` in name order (hidden and
/// non-`.json` files ignored).
fn managed_layers(
    dir: &Path,
    project: &Path,
    claude: bool,
    out: &mut Vec<Layer>,
) -> Result<(), PolicyError> {
    if let Some(l) = file_layer(
        SourceKind::Managed,
        dir.join("managed-settings.json"),
        project.to_path_buf(),
        claude,
    )? {
        out.push(l);
    }
    let d = dir.join("managed-settings.d");
    let entries = match std::fs::read_dir(&d) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(PolicyError::Read { path: d, error }),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.') && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    for f in files {
        if let Some(l) = file_layer(SourceKind::Managed, f, project.to_path_buf(), claude)? {
            out.push(l);
        }
    }
    Ok(())
}

/// The files toolgate reads for `opts`, highest precedence first.
pub(crate) fn discover(opts: &LoadOptions) -> Result<Vec<Layer>, PolicyError> {
    let mut out = Vec::new();
    let project = opts.project.as_path();
    managed_layers(&opts.managed_dir, project, false, &mut out)?;
    if opts.claude {
        managed_layers(&opts.claude_managed_dir, project, true, &mut out)?;
    }
    // Command line: later --settings win scalars, so they go first.
    for s in opts.cli.settings.iter().rev() {
        let t = s.trim_start();
        if is_settings_url(t) {
            let served = opts
                .cli
                .served
                .iter()
                .find(|d| d.url == *s)
                .ok_or_else(|| PolicyError::Read {
                    path: PathBuf::from(s),
                    error: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "a settings URL must be fetched before the settings are loaded",
                    ),
                })?;
            out.push(Layer {
                raw: parse_text(Path::new(s), &served.text)?,
                info: SourceInfo {
                    kind: SourceKind::CommandLine,
                    label: s.clone(),
                    path: None,
                    anchor: project.to_path_buf(),
                    claude: false,
                },
            });
        } else if t.starts_with('{') {
            let label = PathBuf::from("--settings <json>");
            out.push(Layer {
                raw: parse_text(&label, s)?,
                info: SourceInfo {
                    kind: SourceKind::CommandLine,
                    label: "--settings <json>".into(),
                    path: None,
                    anchor: project.to_path_buf(),
                    claude: false,
                },
            });
        } else {
            let path = if Path::new(s).is_absolute() {
                PathBuf::from(s)
            } else {
                project.join(s)
            };
            let anchor = path
                .parent()
                .map_or_else(|| project.to_path_buf(), Path::to_path_buf);
            match file_layer(SourceKind::CommandLine, path.clone(), anchor, false)? {
                Some(l) => out.push(l),
                None => {
                    return Err(PolicyError::Read {
                        path,
                        error: std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "--settings names a file that does not exist",
                        ),
                    });
                }
            }
        }
    }
    let tg = project.join(".toolgate");
    let cl = project.join(".claude");
    for (kind, name) in [
        (SourceKind::ProjectLocal, "settings.local.json"),
        (SourceKind::Project, "settings.json"),
    ] {
        if let Some(l) = file_layer(kind, tg.join(name), project.to_path_buf(), false)? {
            out.push(l);
        }
        if opts.claude
            && let Some(l) = file_layer(kind, cl.join(name), project.to_path_buf(), true)?
        {
            out.push(l);
        }
    }
    if let Some(dir) = &opts.config_dir
        && let Some(l) = file_layer(
            SourceKind::User,
            user_project_settings(dir, project),
            project.to_path_buf(),
            false,
        )?
    {
        out.push(l);
    }
    if let Some(dir) = &opts.config_dir
        && let Some(l) = file_layer(
            SourceKind::User,
            dir.join("settings.json"),
            dir.clone(),
            false,
        )?
    {
        out.push(l);
    }
    if opts.claude
        && let Some(dir) = &opts.claude_dir
        && let Some(l) = file_layer(
            SourceKind::User,
            dir.join("settings.json"),
            dir.clone(),
            true,
        )?
    {
        out.push(l);
    }
    Ok(out)
}

/// Most characters of a project's path kept in the name of its user settings file; the
/// hash suffix keeps the name unique, the prefix keeps it recognisable.
const MAX_PROJECT_NAME_CHARS: usize = 96;

/// The user's own settings for one project, `<config_dir>/projects/<path>-<hash>.json`:
/// where "allow always" saves rules while the project is not trusted. They are user
/// settings — written on the user's behalf from a prompt, outside the repository — so they
/// need no trust, and they apply only to this project (`/path` rules are anchored at it).
pub fn user_project_settings(config_dir: &Path, project: &Path) -> PathBuf {
    use sha2::{Digest, Sha256};
    let real = super::trust::real_project(project).unwrap_or_else(|_| project.to_path_buf());
    let text = real.to_string_lossy();
    let readable: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let start = readable.len().saturating_sub(MAX_PROJECT_NAME_CHARS);
    let digest = Sha256::digest(text.as_bytes());
    let short = hex::encode(digest.get(..6).unwrap_or_default());
    config_dir.join("projects").join(format!(
        "{}-{short}.json",
        readable.get(start..).unwrap_or_default()
    ))
}

/// The project files whose contents trust is bound to, in a fixed order.
pub fn project_files(project: &Path) -> Vec<PathBuf> {
    vec![
        project.join(".toolgate/settings.json"),
        project.join(".toolgate/settings.local.json"),
        project.join(".claude/settings.json"),
        project.join(".claude/settings.local.json"),
    ]
}
