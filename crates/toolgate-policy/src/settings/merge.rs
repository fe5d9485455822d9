//! Merging layers: lists merge across every source, scalars take the highest source that
//! sets them, and what an untrusted project file could widen waits for workspace trust while
//! what it only narrows applies at once — key by key, as [`super::keys::KEYS`] says.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate_protocol::PermissionMode;

use super::keys::{self, Effect};
use super::load::{CliSettings, FloorAction, Layer};
use super::{RuleEntry, Settings, SourceInfo, SourceKind, Sourced};
use crate::error::PolicyError;
use crate::rules::RuleKind;

/// Why a rule or value from a project file is not in force yet.
pub const UNTRUSTED_NOTE: &str =
    "waits for `toolgate trust` (the workspace is not trusted, or its settings changed since)";

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
    // The command line's own rules and directories form one source after managed files.
    let managed_count = layers
        .iter()
        .filter(|l| l.info.kind == SourceKind::Managed)
        .count();
    let mut layers = layers;
    let cli_layer_needed = !(cli.allow.is_empty()
        && cli.ask.is_empty()
        && cli.deny.is_empty()
        && cli.add_dirs.is_empty());
    if cli_layer_needed {
        let mut raw = super::load::RawSettings::default();
        raw.permissions.allow = cli.allow.clone();
        raw.permissions.ask = cli.ask.clone();
        raw.permissions.deny = cli.deny.clone();
        raw.permissions.additional_directories = cli
            .add_dirs
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        layers.insert(
            managed_count,
            Layer {
                info: SourceInfo {
                    kind: SourceKind::CommandLine,
                    label: "command line (--allow/--ask/--deny/--add-dir)".into(),
                    path: None,
                    anchor: project.to_path_buf(),
                    claude: false,
                },
                raw,
            },
        );
    }
    let managed_only_rules = layers
        .iter()
        .filter(|l| l.info.kind == SourceKind::Managed)
        .find(|l| {
            l.raw
                .allow_managed_permission_rules_only
                .or(l.raw.permissions.allow_managed_permission_rules_only)
                == Some(true)
        })
        .map(|l| l.info.label.clone());
    let mut sandbox = serde_json::Map::new();
    // Untrusted projects' sandbox sections, applied after every trusted source so that
    // "narrower than what applies without it" compares with the whole of the rest.
    let mut gated_sandboxes: Vec<(String, serde_json::Map<String, Value>)> = Vec::new();
    let mut web_fetch = serde_json::Map::new();
    for (idx, layer) in layers.into_iter().enumerate() {
        let Layer { info, raw } = layer;
        let kind = info.kind;
        let gated = info.needs_trust() && !trusted;
        let label = info.label.clone();
        s.sources.push(info);
        let p = raw.permissions;
        for (list, rules) in [
            (RuleKind::Deny, p.deny),
            (RuleKind::Ask, p.ask),
            (RuleKind::Allow, p.allow),
        ] {
            for text in rules {
                let mut note = None;
                if list == RuleKind::Allow && gated {
                    note = Some(UNTRUSTED_NOTE.to_owned());
                } else if list == RuleKind::Allow
                    && kind != SourceKind::Managed
                    && managed_only_rules.is_some()
                {
                    note = Some(format!(
                        "ignored: managed settings ({}) allow only managed permission rules",
                        managed_only_rules.as_deref().unwrap_or_default()
                    ));
                }
                s.rules.push(RuleEntry {
                    kind: list,
                    text,
                    source: idx,
                    active: note.is_none(),
                    note,
                });
            }
        }
        for d in p.additional_directories {
            let path = expand_dir(&d, &s.sources[idx].anchor, s.home.as_deref());
            let note = gated.then(|| UNTRUSTED_NOTE.to_owned());
            s.additional_directories.push(Sourced {
                value: path,
                source: idx,
                active: note.is_none(),
                note,
            });
        }
        if let Some(m) = p.default_mode {
            let mode: PermissionMode =
                m.parse()
                    .map_err(|e: toolgate_protocol::UnknownMode| PolicyError::Invalid {
                        origin: label.clone(),
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
            let note = if kind.is_project() && raising {
                Some(format!(
                    "ignored: a project file cannot set {mode}; pass --mode {mode} yourself"
                ))
            } else if gated && !narrows {
                Some(UNTRUSTED_NOTE.to_owned())
            } else {
                None
            };
            if let Some(n) = &note {
                s.warnings
                    .push(format!("{label}: permissions.defaultMode {m}: {n}"));
            }
            if note.is_none() && s.default_mode.is_none() {
                s.default_mode = Some(Sourced {
                    value: mode,
                    source: idx,
                    active: true,
                    note: None,
                });
            }
        }
        for (key, value, slot) in [
            (
                "permissions.disableBypassPermissionsMode",
                p.disable_bypass_permissions_mode,
                &mut s.disable_bypass,
            ),
            (
                "permissions.disableAutoMode",
                p.disable_auto_mode,
                &mut s.disable_auto,
            ),
        ] {
            match value.as_deref() {
                None => {}
                Some("disable") => {
                    slot.get_or_insert(idx);
                }
                Some(other) => {
                    return Err(PolicyError::Invalid {
                        origin: label.clone(),
                        key: key.into(),
                        message: format!(
                            "`{other}` is not understood; the only value is \"disable\""
                        ),
                    });
                }
            }
        }
        if let Some(h) = raw.hooks {
            let note = gated.then(|| UNTRUSTED_NOTE.to_owned());
            s.hooks.push(Sourced {
                value: Value::Object(h),
                source: idx,
                active: note.is_none(),
                note,
            });
        }
        if let Some(b) = raw.disable_all_hooks
            && s.disable_all_hooks.is_none()
            && !gated
        {
            s.disable_all_hooks = Some(Sourced {
                value: b,
                source: idx,
                active: true,
                note: None,
            });
        }
        if raw.allow_managed_hooks_only == Some(true) && kind == SourceKind::Managed {
            s.managed_hooks_only = true;
        }
        if let Some(sb) = raw.sandbox {
            if gated {
                gated_sandboxes.push((label.clone(), sb));
            } else {
                merge_json(&mut sandbox, sb);
            }
        }
        for (name, value) in raw.env {
            let Value::String(value) = value else {
                return Err(PolicyError::Invalid {
                    origin: label.clone(),
                    key: format!("env.{name}"),
                    message: "expected a string".into(),
                });
            };
            let note = gated.then(|| UNTRUSTED_NOTE.to_owned());
            if let Some(n) = &note {
                s.warnings.push(format!("{label}: env.{name} {n}"));
            }
            // The highest source in force wins; an inactive value only fills a gap.
            let replace = s
                .env
                .get(&name)
                .is_none_or(|held| !held.active && note.is_none());
            if replace {
                s.env.insert(
                    name,
                    Sourced {
                        value,
                        source: idx,
                        active: note.is_none(),
                        note,
                    },
                );
            }
        }
        for unknown in raw.unknown_keys {
            let hint = keys::nearest_top_level(&unknown)
                .map(|k| format!("; did you mean `{k}`?"))
                .unwrap_or_default();
            s.warnings
                .push(format!("{label}: unknown key `{unknown}` is ignored{hint}"));
        }
        merge_web(
            &mut s,
            &mut web_fetch,
            (idx, &label, gated),
            raw.web_fetch,
            raw.web_search,
        );
        if let Some(tg) = raw.toolgate {
            for (name, config) in tg.profiles {
                if gated {
                    s.warnings
                        .push(format!("{label}: profile `{name}` {UNTRUSTED_NOTE}"));
                    continue;
                }
                s.profiles.entry(name).or_insert(Sourced {
                    value: config,
                    source: idx,
                    active: true,
                    note: None,
                });
            }
            for (pattern, config) in tg.constraints {
                s.constraints.push((pattern, config, idx));
            }
            if let Some(c) = tg.classifier {
                if gated {
                    s.warnings
                        .push(format!("{label}: toolgate.classifier {UNTRUSTED_NOTE}"));
                } else if s.classifier.is_none() {
                    s.classifier = Some(Sourced {
                        value: c,
                        source: idx,
                        active: true,
                        note: None,
                    });
                }
            }
            if let Some(f) = tg.risk_floor {
                if kind == SourceKind::Managed {
                    if f.catastrophic == FloorAction::Ask && s.catastrophic_ask.is_none() {
                        s.catastrophic_ask = Some(idx);
                    }
                } else {
                    s.warnings.push(format!(
                        "{label}: toolgate.riskFloor is honoured only in managed settings; ignored"
                    ));
                }
            }
            if let Some(salt) = tg.mask_salt {
                if gated {
                    s.warnings
                        .push(format!("{label}: toolgate.maskSalt {UNTRUSTED_NOTE}"));
                } else if s.mask_salt.is_none() {
                    s.mask_salt = Some(salt);
                }
            }
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
