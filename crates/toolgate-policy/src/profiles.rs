//! Profiles: a named bundle of mode, tool allow-list, extra rules and constraints, chosen by
//! the front door (a CLI flag, an MCP client's identity) for one kind of agent.
//!
//! ```json
//! { "toolgate": { "profiles": {
//!     "external": {
//!       "mode": "dontAsk",
//!       "tools": ["Read", "Grep", "Glob", "mcp__github__get_*"],
//!       "deny": ["Read(./.env)"],
//!       "constraints": { "*": { "rate": { "calls": 60, "perSeconds": 60 } } }
//!     } } } }
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toolgate_protocol::PermissionMode;

use crate::constraints::ConstraintConfig;
use crate::rules::RuleKind;

/// A profile as written in settings (`toolgate.profiles.NAME`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProfileConfig {
    /// The mode sessions of this profile run in (a `--mode` flag still wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The only tools this profile may use: names or `*` globs. Absent = every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Extra allow rules for this profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Extra ask rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    /// Extra deny rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// Constraints per tool name or glob (`*` = every tool).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub constraints: BTreeMap<String, ConstraintConfig>,
}

/// A selected, compiled profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Its name.
    pub name: String,
    /// The settings source that defined it.
    pub source: String,
    /// Its mode.
    pub mode: Option<PermissionMode>,
    /// Its tool allow-list.
    pub tools: Option<Vec<String>>,
    /// Its rules.
    pub rules: Vec<(RuleKind, String)>,
    /// Its constraints.
    pub constraints: BTreeMap<String, ConstraintConfig>,
}

impl Profile {
    /// Compiles a profile definition.
    pub fn new(name: &str, source: &str, config: &ProfileConfig) -> Result<Self, String> {
        let mode = match &config.mode {
            Some(m) => Some(m.parse::<PermissionMode>().map_err(|e| e.to_string())?),
            None => None,
        };
        let mut rules = Vec::new();
        for (kind, list) in [
            (RuleKind::Deny, &config.deny),
            (RuleKind::Ask, &config.ask),
            (RuleKind::Allow, &config.allow),
        ] {
            rules.extend(list.iter().map(|r| (kind, r.clone())));
        }
        Ok(Self {
            name: name.to_owned(),
            source: source.to_owned(),
            mode,
            tools: config.tools.clone(),
            rules,
            constraints: config.constraints.clone(),
        })
    }

    /// Whether the profile lets the session use `tool`.
    pub fn allows_tool(&self, tool: &str) -> bool {
        match &self.tools {
            None => true,
            Some(list) => list.iter().any(|p| name_glob(p, tool)),
        }
    }

    /// The tool list as text.
    pub fn tools_text(&self) -> String {
        match &self.tools {
            None => "every tool".into(),
            Some(l) => l.join(", "),
        }
    }
}

/// Whole-name match with `*` wildcards (case-sensitive: canonical names).
pub(crate) fn name_glob(pattern: &str, name: &str) -> bool {
    if !pattern.contains('*') {
        return pattern == name;
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = name;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(at) = rest.find(part) else {
                return false;
            };
            rest = &rest[at + part.len()..];
        }
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lists() {
        let p = Profile::new(
            "external",
            "test",
            &ProfileConfig {
                mode: Some("read-only".into()),
                tools: Some(vec!["Read".into(), "mcp__github__get_*".into()]),
                ..ProfileConfig::default()
            },
        )
        .unwrap();
        assert_eq!(p.mode, Some(PermissionMode::Plan));
        assert!(p.allows_tool("Read"));
        assert!(p.allows_tool("mcp__github__get_issue"));
        assert!(!p.allows_tool("mcp__github__create_issue"));
        assert!(!p.allows_tool("read"));
        assert!(!p.allows_tool("Bash"));
        assert!(
            Profile::new(
                "x",
                "t",
                &ProfileConfig {
                    mode: Some("yolo".into()),
                    ..Default::default()
                }
            )
            .is_err()
        );
    }
}
