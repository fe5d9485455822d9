//! Merging layers: lists merge across every source, scalars take the highest source that
//! sets them, and what an untrusted project file could widen waits for workspace trust while
//! what it only narrows applies at once — key by key, as [`super::keys::KEYS`] says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate_protocol::PermissionMode;

use super::keys::{self, Effect};
use super::load::{CliSettings, FloorAction, Layer, RawSettings, ToolgateSettings};
use super::{RuleEntry, Settings, SourceInfo, SourceKind, Sourced};
use crate::error::PolicyError;
use crate::rules::RuleKind;

/// Why a rule or value from a project file is not in force yet.
pub const UNTRUSTED_NOTE: &str =
    "waits for `toolgate trust` (the workspace is not trusted, or its settings changed since)";

/// The layer being merged: its index in `Settings::sources`, its kind, its label for
/// warnings, and whether what it could widen waits for trust.
struct At {
    idx: usize,
    kind: SourceKind,
    label: String,
    gated: bool,
}

impl At {
    /// The note of a value that waits for trust, when this layer is gated.
    fn untrusted_note(&self) -> Option<String> {
        self.gated.then(|| UNTRUSTED_NOTE.to_owned())
    }
}

/// Merges the layers (highest first) and the command line into one [`Settings`]. Each layer
/// goes through the same steps in the same order, so that a warning list and the first
/// error read the same for every source; untrusted sandbox sections merge last, against
/// everything that applies without them.
pub(crate) fn merge(
    layers: Vec<Layer>,
    cli: &CliSettings,
    project: &Path,
    trusted: bool,
    home: Option<PathBuf>,
) -> Result<Settings, PolicyError> {
    let mut s = Settings {
        project: project.to_path_buf(),
        home,
        trusted,
        ..Settings::default()
    };
    let mut layers = layers;
    // The command line's own rules and directories form one source after managed files.
    if let Some(layer) = command_line_layer(cli, project) {
        let managed_count = layers
            .iter()
            .filter(|l| l.info.kind == SourceKind::Managed)
            .count();
        layers.insert(managed_count, layer);
    }
    let managed_only_rules = managed_only_rules(&layers);
    let mut sandbox = serde_json::Map::new();
    // Untrusted projects' sandbox sections, applied after every trusted source so that
    // "narrower than what applies without it" compares with the whole of the rest.
    let mut gated_sandboxes: Vec<(String, serde_json::Map<String, Value>)> = Vec::new();
    let mut web_fetch = serde_json::Map::new();
    for (idx, layer) in layers.into_iter().enumerate() {
        let Layer { info, raw } = layer;
        let at = At {
            idx,
            kind: info.kind,
            label: info.label.clone(),
            gated: info.needs_trust() && !trusted,
        };
        s.sources.push(info);
        let p = raw.permissions;
        merge_rules(
            &mut s,
            &at,
            [
                (RuleKind::Deny, p.deny),
                (RuleKind::Ask, p.ask),
                (RuleKind::Allow, p.allow),
            ],
            managed_only_rules.as_deref(),
        );
        for d in p.additional_directories {
            let path = expand_dir(&d, &s.sources[idx].anchor, s.home.as_deref());
            let note = at.untrusted_note();
            s.additional_directories.push(Sourced {
                value: path,
                source: idx,
                active: note.is_none(),
                note,
            });
        }
        if let Some(m) = p.default_mode {
            merge_default_mode(&mut s, &at, &m)?;
        }
        merge_mode_switches(
            &mut s,
            &at,
            p.disable_bypass_permissions_mode,
            p.disable_auto_mode,
        )?;
        merge_hooks(
            &mut s,
            &at,
            raw.hooks,
            raw.disable_all_hooks,
            raw.allow_managed_hooks_only,
        );
        if let Some(sb) = raw.sandbox {
            if at.gated {
                gated_sandboxes.push((at.label.clone(), sb));
            } else {
                merge_json(&mut sandbox, sb);
            }
        }
        merge_env(&mut s, &at, raw.env)?;
        merge_mcp_servers(&mut s, &at, raw.mcp_servers);
        for unknown in raw.unknown_keys {
            let hint = keys::nearest_top_level(&unknown)
                .map(|k| format!("; did you mean `{k}`?"))
                .unwrap_or_default();
            s.warnings.push(format!(
                "{}: unknown key `{unknown}` is ignored{hint}",
                at.label
            ));
        }
        merge_web(
            &mut s,
            &mut web_fetch,
            (idx, &at.label, at.gated),
            raw.web_fetch,
            raw.web_search,
        );
        if let Some(tg) = raw.toolgate {
            merge_toolgate(&mut s, &at, tg);
        }
    }
    for (label, sb) in gated_sandboxes {
        merge_narrowing(&mut sandbox, sb, "sandbox", &label, &mut s.warnings);
    }
    s.sandbox = Value::Object(sandbox);
    s.web_fetch = Value::Object(web_fetch);
    if let Some(m) = &cli.mode {
        s.cli_mode =
            Some(
                m.parse()
                    .map_err(|e: toolgate_protocol::UnknownMode| PolicyError::Invalid {
                        origin: "command line".into(),
                        key: "--mode".into(),
                        message: e.to_string(),
                    })?,
            );
    }
    if !trusted && s.sources.iter().any(SourceInfo::needs_trust) {
        s.warnings.push(format!(
            "the workspace {} is not trusted: what its settings could widen (allow rules, additional directories, hooks, env, sandbox exceptions, profiles, …) waits for `toolgate trust`; what they only narrow applies now (see docs/permissions.md)",
            project.display()
        ));
    }
    Ok(s)
}

/// The label of the command line's own rules (`--allow`, `--ask`, `--deny`, `--add-dir`).
/// A broken allow rule here is an error, not a warning: whoever typed it is there to fix it.
pub const FLAGS_LABEL: &str = "command line (--allow/--ask/--deny/--add-dir)";

/// The command line's `--allow`/`--ask`/`--deny`/`--add-dir` as a layer of its own, so that
/// they merge, show and explain like any settings file; `None` when none was given.
fn command_line_layer(cli: &CliSettings, project: &Path) -> Option<Layer> {
    if cli.allow.is_empty()
        && cli.ask.is_empty()
        && cli.deny.is_empty()
        && cli.add_dirs.is_empty()
        && !cli.no_sandbox
    {
        return None;
    }
    let mut raw = RawSettings::default();
    raw.permissions.allow = cli.allow.clone();
    raw.permissions.ask = cli.ask.clone();
    raw.permissions.deny = cli.deny.clone();
    raw.permissions.additional_directories = cli
        .add_dirs
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if cli.no_sandbox {
        let mut sandbox = serde_json::Map::new();
        sandbox.insert("enabled".into(), Value::Bool(false));
        raw.sandbox = Some(sandbox);
    }
    Some(Layer {
        info: SourceInfo {
            kind: SourceKind::CommandLine,
            label: FLAGS_LABEL.into(),
            path: None,
            anchor: project.to_path_buf(),
            claude: false,
        },
        raw,
    })
}

/// The label of the managed file that sets `allowManagedPermissionRulesOnly`, if one does:
/// then allow rules from every other source are listed but ignored.
fn managed_only_rules(layers: &[Layer]) -> Option<String> {
    layers
        .iter()
        .filter(|l| l.info.kind == SourceKind::Managed)
        .find(|l| {
            l.raw
                .allow_managed_permission_rules_only
                .or(l.raw.permissions.allow_managed_permission_rules_only)
                == Some(true)
        })
        .map(|l| l.info.label.clone())
}

/// A layer's deny, ask and allow rules. Every rule is listed, so that `toolgate check` can
/// show it; a gated project's allow rules, and non-managed allow rules under
/// `allowManagedPermissionRulesOnly`, are listed inactive with the reason. Deny and ask rules
/// only narrow, so they apply at once from every source.
fn merge_rules(
    s: &mut Settings,
    at: &At,
    lists: [(RuleKind, Vec<String>); 3],
    managed_only_rules: Option<&str>,
) {
    for (list, rules) in lists {
        for text in rules {
            let mut note = None;
            if list == RuleKind::Allow && at.gated {
                note = Some(UNTRUSTED_NOTE.to_owned());
            } else if list == RuleKind::Allow
                && at.kind != SourceKind::Managed
                && managed_only_rules.is_some()
            {
                note = Some(format!(
                    "ignored: managed settings ({}) allow only managed permission rules",
                    managed_only_rules.unwrap_or_default()
                ));
            }
            s.rules.push(RuleEntry {
                kind: list,
                text,
                source: at.idx,
                active: note.is_none(),
                note,
            });
        }
    }
}

/// `permissions.defaultMode`: the highest source in force wins. A project file can never
/// raise the mode to `auto` or `bypassPermissions` (trusted or not), and a gated project
/// may only set a mode at least as narrow as the default.
fn merge_default_mode(s: &mut Settings, at: &At, m: &str) -> Result<(), PolicyError> {
    let mode: PermissionMode =
        m.parse()
            .map_err(|e: toolgate_protocol::UnknownMode| PolicyError::Invalid {
                origin: at.label.clone(),
                key: "permissions.defaultMode".into(),
                message: e.to_string(),
            })?;
    let raising = matches!(
        mode,
        PermissionMode::Auto | PermissionMode::BypassPermissions
    );
    let narrows = matches!(
        keys::lookup("permissions.defaultMode").map(|k| k.effect),
        Some(Effect::Scale(scale, default)) if keys::at_least_as_narrow(scale, mode.as_str(), default)
    );
    let note = if at.kind.is_project() && raising {
        Some(format!(
            "ignored: a project file cannot set {mode}; pass --mode {mode} yourself"
        ))
    } else if at.gated && !narrows {
        Some(UNTRUSTED_NOTE.to_owned())
    } else {
        None
    };
    if let Some(n) = &note {
        s.warnings
            .push(format!("{}: permissions.defaultMode {m}: {n}", at.label));
    }
    if note.is_none() && s.default_mode.is_none() {
        s.default_mode = Some(Sourced {
            value: mode,
            source: at.idx,
            active: true,
            note: None,
        });
    }
    Ok(())
}

/// `disableBypassPermissionsMode` and `disableAutoMode`: they only take modes away, so any
/// source may set them, untrusted ones included; the first source that does is recorded.
/// Any value other than `"disable"` is an error rather than a silent no-op.
fn merge_mode_switches(
    s: &mut Settings,
    at: &At,
    disable_bypass: Option<String>,
    disable_auto: Option<String>,
) -> Result<(), PolicyError> {
    for (key, value, slot) in [
        (
            "permissions.disableBypassPermissionsMode",
            disable_bypass,
            &mut s.disable_bypass,
        ),
        (
            "permissions.disableAutoMode",
            disable_auto,
            &mut s.disable_auto,
        ),
    ] {
        match value.as_deref() {
            None => {}
            Some("disable") => {
                slot.get_or_insert(at.idx);
            }
            Some(other) => {
                return Err(PolicyError::Invalid {
                    origin: at.label.clone(),
                    key: key.into(),
                    message: format!("`{other}` is not understood; the only value is \"disable\""),
                });
            }
        }
    }
    Ok(())
}

/// `hooks`, `disableAllHooks` and `allowManagedHooksOnly`. A gated project's hooks are listed
/// inactive (hooks run commands), and it cannot switch hooks off either; only managed
/// settings can restrict hooks to their own.
fn merge_hooks(
    s: &mut Settings,
    at: &At,
    hooks: Option<serde_json::Map<String, Value>>,
    disable_all_hooks: Option<bool>,
    managed_hooks_only: Option<bool>,
) {
    if let Some(h) = hooks {
        let note = at.untrusted_note();
        s.hooks.push(Sourced {
            value: Value::Object(h),
            source: at.idx,
            active: note.is_none(),
            note,
        });
    }
    if let Some(b) = disable_all_hooks
        && s.disable_all_hooks.is_none()
        && !at.gated
    {
        s.disable_all_hooks = Some(Sourced {
            value: b,
            source: at.idx,
            active: true,
            note: None,
        });
    }
    if managed_hooks_only == Some(true) && at.kind == SourceKind::Managed {
        s.managed_hooks_only = true;
    }
}

/// `env`: string values only. A gated project's variables wait for trust (they can point
/// tools elsewhere), with a warning each.
fn merge_env(
    s: &mut Settings,
    at: &At,
    env: serde_json::Map<String, Value>,
) -> Result<(), PolicyError> {
    for (name, value) in env {
        let Value::String(value) = value else {
            return Err(PolicyError::Invalid {
                origin: at.label.clone(),
                key: format!("env.{name}"),
                message: "expected a string".into(),
            });
        };
        merge_gated(&mut s.env, &mut s.warnings, at, "env", name, value);
    }
    Ok(())
}

/// One entry of a keyed map (`env.NAME`, `mcpServers.NAME`) from `at`. The highest source
/// in force wins; a gated project's entry waits for trust (with a warning) and only fills a
/// gap, never replacing an entry in force.
fn merge_gated<T>(
    map: &mut BTreeMap<String, Sourced<T>>,
    warnings: &mut Vec<String>,
    at: &At,
    key: &str,
    name: String,
    value: T,
) {
    let note = at.untrusted_note();
    if let Some(n) = &note {
        warnings.push(format!("{}: {key}.{name} {n}", at.label));
    }
    let replace = map
        .get(&name)
        .is_none_or(|held| !held.active && note.is_none());
    if replace {
        map.insert(
            name,
            Sourced {
                value,
                source: at.idx,
                active: note.is_none(),
                note,
            },
        );
    }
}

/// `mcpServers`: each name from the highest source in force that sets it. A gated
/// project's servers wait for trust (they are programs toolgate would start).
fn merge_mcp_servers(s: &mut Settings, at: &At, servers: serde_json::Map<String, Value>) {
    for (name, value) in servers {
        merge_gated(
            &mut s.mcp_servers,
            &mut s.warnings,
            at,
            "mcpServers",
            name,
            value,
        );
    }
}

/// The `toolgate` section. Profiles, the classifier, the sub-agents' model endpoint and the
/// mask salt widen or weaken what is enforced, so a gated project's wait for trust;
/// constraints only narrow and apply from every source; the risk floor can be lifted only by
/// managed settings.
fn merge_toolgate(s: &mut Settings, at: &At, tg: ToolgateSettings) {
    let label = &at.label;
    for (name, config) in tg.profiles {
        if at.gated {
            s.warnings
                .push(format!("{label}: profile `{name}` {UNTRUSTED_NOTE}"));
            continue;
        }
        s.profiles.entry(name).or_insert(Sourced {
            value: config,
            source: at.idx,
            active: true,
            note: None,
        });
    }
    for (pattern, config) in tg.constraints {
        s.constraints.push((pattern, config, at.idx));
    }
    if let Some(c) = tg.classifier {
        if at.gated {
            s.warnings
                .push(format!("{label}: toolgate.classifier {UNTRUSTED_NOTE}"));
        } else if s.classifier.is_none() {
            s.classifier = Some(Sourced {
                value: c,
                source: at.idx,
                active: true,
                note: None,
            });
        }
    }
    if let Some(c) = tg.agent {
        if at.gated {
            s.warnings
                .push(format!("{label}: toolgate.agent {UNTRUSTED_NOTE}"));
        } else if s.agent.is_none() {
            s.agent = Some(Sourced {
                value: c,
                source: at.idx,
                active: true,
                note: None,
            });
        }
    }
    if let Some(f) = tg.risk_floor {
        if at.kind == SourceKind::Managed {
            if f.catastrophic == FloorAction::Ask && s.catastrophic_ask.is_none() {
                s.catastrophic_ask = Some(at.idx);
            }
        } else {
            s.warnings.push(format!(
                "{label}: toolgate.riskFloor is honoured only in managed settings; ignored"
            ));
        }
    }
    // Deferral changes which definitions are sent, never what may run: every source's
    // value applies at once.
    if let Some(ts) = tg.tool_search
        && s.tool_search.is_none()
    {
        s.tool_search = Some(ts);
    }
    if let Some(salt) = tg.mask_salt {
        if at.gated {
            s.warnings
                .push(format!("{label}: toolgate.maskSalt {UNTRUSTED_NOTE}"));
        } else if s.mask_salt.is_none() {
            s.mask_salt = Some(salt);
        }
    }
}

/// Merges an untrusted project's `from` (at `prefix`) into `into`, keeping only what narrows:
/// [`Effect::Narrows`] keys merge as usual, a [`Effect::Scale`] value replaces the current
/// one when it is at least as narrow, and everything else — widening keys, and keys toolgate
/// does not know — waits for trust with a warning.
fn merge_narrowing(
    into: &mut serde_json::Map<String, Value>,
    from: serde_json::Map<String, Value>,
    prefix: &str,
    label: &str,
    warnings: &mut Vec<String>,
) {
    for (k, v) in from {
        let path = format!("{prefix}.{k}");
        let effect = keys::lookup(&path).map(|key| key.effect);
        match (effect, v) {
            (None, Value::Object(inner)) => {
                let slot = into
                    .entry(k)
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(slot) = slot {
                    merge_narrowing(slot, inner, &path, label, warnings);
                }
            }
            (Some(Effect::Narrows), v) => {
                let mut one = serde_json::Map::new();
                one.insert(k, v);
                merge_json(into, one);
            }
            (Some(Effect::Scale(scale, default)), v) => {
                let text = |v: &Value| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let base = into.get(&k).map_or_else(|| default.to_owned(), text);
                if keys::at_least_as_narrow(scale, &text(&v), &base) {
                    into.insert(k, v);
                } else {
                    warnings.push(format!(
                        "{label}: {path} {} would widen {base}: it {UNTRUSTED_NOTE}",
                        text(&v)
                    ));
                }
            }
            (Some(Effect::Ignored), _) => {}
            _ => warnings.push(format!("{label}: {path} {UNTRUSTED_NOTE}")),
        }
    }
}

/// `webFetch` (merged like `sandbox`) and `webSearch` (taken whole from the highest source
/// that sets it). Both widen what the agent can reach — private addresses, plain HTTP, a
/// search backend and the API key sent to it — so a project's wait for trust, like its allow
/// rules; every other source applies at once.
fn merge_web(
    s: &mut Settings,
    web_fetch: &mut serde_json::Map<String, Value>,
    (idx, label, gated): (usize, &str, bool),
    fetch: Option<serde_json::Map<String, Value>>,
    search: Option<serde_json::Map<String, Value>>,
) {
    if let Some(f) = fetch {
        if gated {
            s.warnings
                .push(format!("{label}: webFetch {UNTRUSTED_NOTE}"));
        } else {
            merge_json(web_fetch, f);
        }
    }
    if let Some(w) = search {
        if gated {
            s.warnings
                .push(format!("{label}: webSearch {UNTRUSTED_NOTE}"));
        } else if s.web_search.is_none() {
            s.web_search = Some(Sourced {
                value: Value::Object(w),
                source: idx,
                active: true,
                note: None,
            });
        }
    }
}

/// Sandbox-style merge: arrays concatenate (deduplicated), objects merge key by key, and a
/// scalar keeps the value from the higher source (merged first).
fn merge_json(into: &mut serde_json::Map<String, Value>, from: serde_json::Map<String, Value>) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(Value::Array(a)), Value::Array(b)) => {
                for x in b {
                    if !a.contains(&x) {
                        a.push(x);
                    }
                }
            }
            (Some(Value::Object(a)), Value::Object(b)) => merge_json(a, b),
            (Some(_), _) => {}
            (None, v) => {
                into.insert(k, v);
            }
        }
    }
}

fn expand_dir(d: &str, anchor: &Path, home: Option<&Path>) -> PathBuf {
    if let Some(rest) = d.strip_prefix("~/")
        && let Some(h) = home
    {
        return h.join(rest);
    }
    let p = Path::new(d);
    crate::rules::path::normalize(&if p.is_absolute() {
        p.to_path_buf()
    } else {
        anchor.join(p)
    })
}
