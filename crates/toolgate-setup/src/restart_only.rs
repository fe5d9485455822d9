//! The settings a reload may not change, each with the reason: what a gate binds when it
//! is built and cannot rebind under sessions that are already running.
//!
//! Everything else — permission rules (including profiles' rules), the risk floor, the
//! classifier, hooks, `disableAllHooks`, the sandbox, constraints — is rebuilt by a
//! reload and applies to every call that starts after it. A new version that changes a
//! key of this table is rejected as a whole, with the keys named: a gate never runs half
//! of a version, so every call is decided by one version exactly as it was written.
//! Restart the process (a rolling restart, in a fleet) to apply it.
//!
//! The table is data the reload walks and docs/deploy.md prints; a test walks each row.

use serde_json::{Value, json};
use toolgate_policy::settings::Settings;

/// A settings key that needs a restart to change.
pub struct RestartOnly {
    /// The key, as written in settings files.
    pub key: &'static str,
    /// Why a running gate cannot take a new value.
    pub why: &'static str,
    /// The part of the effective settings the key decides, to compare two versions.
    value: fn(&Settings) -> Value,
}

/// Every restart-only key.
pub const RESTART_ONLY: &[RestartOnly] = &[
    RestartOnly {
        key: "env",
        why: "the commands' environment is given to the shell tools when the tool registry is \
              built, and sessions keep their tools",
        value: |s| {
            json!(
                s.env
                    .iter()
                    .map(|(k, v)| (k, &v.value, v.active))
                    .collect::<Vec<_>>()
            )
        },
    },
    RestartOnly {
        key: "permissions.additionalDirectories",
        why: "the directories a session may act in are its roots, opened when the gate is \
              built",
        value: |s| {
            json!(
                s.additional_directories
                    .iter()
                    .map(|d| (&d.value, d.active))
                    .collect::<Vec<_>>()
            )
        },
    },
    RestartOnly {
        key: "permissions.defaultMode",
        why: "a session's mode is fixed for its life, and the mode new sessions start in is \
              chosen when the gate is built",
        value: |s| json!(s.default_mode.as_ref().map(|m| (&m.value, m.active))),
    },
    RestartOnly {
        key: "webFetch",
        why: "WebFetch is configured when the tool registry is built",
        value: |s| s.web_fetch.clone(),
    },
    RestartOnly {
        key: "webSearch",
        why: "WebSearch's backend is chosen when the tool registry is built",
        value: |s| json!(s.web_search.as_ref().map(|w| (&w.value, w.active))),
    },
    RestartOnly {
        key: "toolgate.profiles (names, mode, tools)",
        why: "`serve --token-file` is checked against the profile names at start, and a \
              profile's mode and tool list are what its sessions were opened with; its \
              rules and constraints do reload",
        value: |s| {
            json!(
                s.profiles
                    .iter()
                    .map(|(name, p)| (name, &p.value.mode, &p.value.tools, p.active))
                    .collect::<Vec<_>>()
            )
        },
    },
];

/// The restart-only keys whose effective value differs between `old` and `new`.
pub fn changed(old: &Settings, new: &Settings) -> Vec<&'static RestartOnly> {
    RESTART_ONLY
        .iter()
        .filter(|r| (r.value)(old) != (r.value)(new))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_policy::settings::{LoadOptions, load};

    fn settings(json: &str) -> Settings {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = LoadOptions::from_env(dir.path());
        opts.managed_dir = dir.path().join("no-managed");
        opts.config_dir = None;
        opts.cli.settings = vec![json.to_owned()];
        load(&opts).unwrap()
    }

    /// Each row, with a change it must see and one (a rule) it must not.
    #[test]
    fn each_key_sees_its_own_change_and_not_a_rule() {
        let base = r#"{"permissions": {"allow": ["Read"]}}"#;
        let rows: &[(&str, &str)] = &[
            ("env", r#"{"env": {"A": "1"}}"#),
            (
                "permissions.additionalDirectories",
                r#"{"permissions": {"additionalDirectories": ["/tmp"]}}"#,
            ),
            (
                "permissions.defaultMode",
                r#"{"permissions": {"defaultMode": "acceptEdits"}}"#,
            ),
            ("webFetch", r#"{"webFetch": {"maxBytes": 1000}}"#),
            (
                "webSearch",
                r#"{"webSearch": {"backend": "brave", "apiKeyEnv": "K"}}"#,
            ),
            (
                "toolgate.profiles (names, mode, tools)",
                r#"{"toolgate": {"profiles": {"ci": {"tools": ["Read"]}}}}"#,
            ),
        ];
        assert_eq!(rows.len(), RESTART_ONLY.len(), "a row without an example");
        let old = settings(base);
        for (key, json) in rows {
            let new = settings(json);
            let keys: Vec<&str> = changed(&old, &new).iter().map(|r| r.key).collect();
            assert!(keys.contains(key), "{key}: {keys:?}");
        }
        let more_rules = settings(
            r#"{"permissions": {"allow": ["Read", "Grep"], "deny": ["Bash"]},
            "hooks": {}, "sandbox": {"enabled": false},
            "toolgate": {"constraints": {"Read": {"rate": {"calls": 1, "perSeconds": 60}}}}}"#,
        );
        assert!(changed(&old, &more_rules).is_empty());
    }
}
