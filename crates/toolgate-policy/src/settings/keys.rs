//! Every settings key toolgate reads, and what an untrusted project file may do with it.
//!
//! A project's `.toolgate/settings.json` (or `.claude/settings.json` with `--claude`) comes
//! with the repository, so whoever wrote the repository wrote it. What it can only *narrow*
//! (deny rules, a sandbox turned on, a read mask) applies at once; what could *widen* what
//! the agent may do (allow rules, hooks that run programs, a sandbox turned off, a writable
//! path, a domain, an environment variable) waits until the user runs `toolgate trust`.
//! Keys whose direction depends on the value apply at once only when the value is at least
//! as narrow as what would apply without the project file.
//!
//! [`KEYS`] is the one list: the merge reads it, `docs/permissions.md` prints it (a test
//! checks every key is there), and an unknown key in a file gets a warning that names the
//! nearest known one.

/// What an untrusted project file's value for a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Only narrows what the agent may do: applies at once.
    Narrows,
    /// Could widen it: waits for `toolgate trust`.
    Widens,
    /// A scale from widest to narrowest, and the value that applies when no source sets
    /// the key: a project's value applies at once when it sits at or past the value that
    /// would apply without it; otherwise it waits for trust.
    Scale(&'static [&'static str], &'static str),
    /// Honoured only in managed settings.
    ManagedOnly,
    /// Accepted for Claude Code compatibility; toolgate does not use it.
    Ignored,
}

/// One settings key.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The dotted path (`sandbox.filesystem.allowWrite`).
    pub path: &'static str,
    /// What an untrusted project's value does.
    pub effect: Effect,
    /// What it is, for the docs.
    pub about: &'static str,
}

const fn key(path: &'static str, effect: Effect, about: &'static str) -> Key {
    Key {
        path,
        effect,
        about,
    }
}

use Effect::{Ignored, ManagedOnly, Narrows, Scale, Widens};

/// Every key toolgate reads (and the Claude Code keys it accepts and ignores).
#[rustfmt::skip]
pub const KEYS: &[Key] = &[
    key("permissions.allow", Widens, "allow rules"),
    key("permissions.ask", Narrows, "ask rules"),
    key("permissions.deny", Narrows, "deny rules"),
    key("permissions.additionalDirectories", Widens, "more directories the tools may act in"),
    key("permissions.defaultMode", Scale(&["bypassPermissions", "auto", "acceptEdits", "default", "plan", "dontAsk"], "default"), "the session's mode; a project file can never set auto or bypassPermissions"),
    key("permissions.disableBypassPermissionsMode", Narrows, "refuse bypassPermissions"),
    key("permissions.disableAutoMode", Narrows, "refuse auto mode"),
    key("permissions.allowManagedPermissionRulesOnly", ManagedOnly, "drop every rule not from managed settings"),
    key("allowManagedPermissionRulesOnly", ManagedOnly, "the same, at the top level"),
    key("hooks", Widens, "lifecycle hooks: programs toolgate runs"),
    key("disableAllHooks", Widens, "turn hooks off (guard hooks included)"),
    key("allowManagedHooksOnly", ManagedOnly, "run only managed hooks"),
    key("env", Widens, "environment variables for the commands toolgate runs"),
    key("sandbox.enabled", Scale(&["false", "true"], "true"), "run commands in the sandbox (on by default where the kernel supports it; `--no-sandbox` turns it off)"),
    key("sandbox.failIfUnavailable", Scale(&["false", "true"], "false"), "refuse to run when a needed sandbox layer is missing"),
    key("sandbox.allowUnsandboxedCommands", Scale(&["true", "false"], "true"), "honour a call's dangerouslyDisableSandbox (after approval)"),
    key("sandbox.excludedCommands", Widens, "commands that run outside the sandbox"),
    key("sandbox.disableLayers", Widens, "turn sandbox layers off"),
    key("sandbox.filesystem.mode", Scale(&["off", "workspace-write", "read-only"], "workspace-write"), "filesystem isolation"),
    key("sandbox.filesystem.disabled", Scale(&["true", "false"], "false"), "no filesystem isolation"),
    key("sandbox.filesystem.allowWrite", Widens, "more writable paths"),
    key("sandbox.filesystem.allowRead", Widens, "paths unmasked for reading"),
    key("sandbox.filesystem.denyWrite", Narrows, "read-only paths"),
    key("sandbox.filesystem.denyRead", Narrows, "unreadable paths"),
    key("sandbox.network.mode", Scale(&["full", "allowlist", "none"], "none"), "network access"),
    key("sandbox.network.allowedDomains", Widens, "domains the proxy lets through"),
    key("sandbox.network.deniedDomains", Narrows, "domains the proxy refuses"),
    key("sandbox.network.allowAllUnixSockets", Scale(&["true", "false"], "false"), "unix sockets in the room"),
    key("sandbox.network.allowUnixSockets", Ignored, "per-socket exceptions (not enforceable on Linux)"),
    key("sandbox.network.httpProxyPort", Widens, "the proxy bridge's port in the room"),
    key("sandbox.limits", Widens, "wall time, CPU, memory, processes, file size, open files, /tmp size"),
    key("toolgate.profiles", Widens, "named profiles (modes, tool lists, rules)"),
    key("toolgate.constraints", Narrows, "rate limits, output caps, masking"),
    key("toolgate.classifier", Widens, "who reviews asks in auto mode"),
    key("toolgate.agent", Widens, "the model endpoint sub-agents run on (the Agent tool)"),
    key("toolgate.riskFloor", ManagedOnly, "let catastrophic commands ask instead of being denied"),
    key("toolgate.maskSalt", Widens, "the key of masking hashes"),
    key("toolgate.toolSearch", Narrows, "when MCP tools are deferred behind ToolSearch (mode auto/always/off, thresholdPercent, contextTokens)"),
    key("mcpServers", Widens, "MCP servers: programs toolgate starts (the MCP gateway)"),
    key("webFetch", Widens, "WebFetch settings (private hosts it may reach)"),
    key("webSearch", Widens, "WebSearch backend"),
    key("$schema", Ignored, "JSON schema reference"),
    key("apiKeyHelper", Ignored, "Claude Code"),
    key("awsAuthRefresh", Ignored, "Claude Code"),
    key("awsCredentialExport", Ignored, "Claude Code"),
    key("cleanupPeriodDays", Ignored, "Claude Code"),
    key("companyAnnouncements", Ignored, "Claude Code"),
    key("disabledMcpjsonServers", Ignored, "Claude Code"),
    key("enableAllProjectMcpServers", Ignored, "Claude Code"),
    key("enabledMcpjsonServers", Ignored, "Claude Code"),
    key("forceLoginMethod", Ignored, "Claude Code"),
    key("forceLoginOrgUUID", Ignored, "Claude Code"),
    key("includeCoAuthoredBy", Ignored, "Claude Code"),
    key("model", Ignored, "Claude Code"),
    key("outputStyle", Ignored, "Claude Code"),
    key("statusLine", Ignored, "Claude Code"),
    key("spinnerTipsEnabled", Ignored, "Claude Code"),
    key("alwaysThinkingEnabled", Ignored, "Claude Code"),
    key("theme", Ignored, "Claude Code"),
    key("otelHeadersHelper", Ignored, "Claude Code"),
    key("enabledPlugins", Ignored, "Claude Code"),
    key("extraKnownMarketplaces", Ignored, "Claude Code"),
    key("feedbackSurveyState", Ignored, "Claude Code"),
    key("useAutoModeDuringPlan", Ignored, "Claude Code"),
];

/// The key at `path`, or the key of a section that covers it (`sandbox.limits` covers
/// `sandbox.limits.memoryMb`).
pub fn lookup(path: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.path == path).or_else(|| {
        KEYS.iter().find(|k| {
            path.strip_prefix(k.path)
                .is_some_and(|rest| rest.starts_with('.'))
        })
    })
}

/// The known top-level name nearest to `name` (at most two edits away), for "did you mean".
pub fn nearest_top_level(name: &str) -> Option<&'static str> {
    let mut tops: Vec<&'static str> = KEYS
        .iter()
        .map(|k| k.path.split('.').next().unwrap_or(k.path))
        .collect();
    tops.dedup();
    tops.into_iter()
        .map(|k| {
            (
                edit_distance(&name.to_ascii_lowercase(), &k.to_ascii_lowercase()),
                k,
            )
        })
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Whether `name` is a known top-level key.
pub fn is_known_top_level(name: &str) -> bool {
    KEYS.iter().any(|k| k.path.split('.').next() == Some(name))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// [`KEYS`] as the Markdown table in `docs/permissions.md` (a test keeps the two equal).
pub fn markdown_table() -> String {
    let mut out =
        String::from("| key | an untrusted project's value | what it is |\n|---|---|---|\n");
    for k in KEYS {
        let effect = match k.effect {
            Narrows => "narrows: applies at once".to_owned(),
            Widens => "widens: waits for `toolgate trust`".to_owned(),
            Scale(scale, default) => format!(
                "applies at once when at least as narrow as what applies without it (default `{default}`; widest to narrowest: {}), else waits for trust",
                scale
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(" → ")
            ),
            ManagedOnly => "honoured only in managed settings".to_owned(),
            Ignored => "accepted, not used by toolgate".to_owned(),
        };
        out.push_str(&format!("| `{}` | {effect} | {} |\n", k.path, k.about));
    }
    out
}

/// Whether `value` sits at or past `base` on `scale` (narrower or the same). A value not on
/// the scale is not narrower.
pub fn at_least_as_narrow(scale: &[&str], value: &str, base: &str) -> bool {
    let at = |v: &str| scale.iter().position(|s| *s == v);
    match (at(value), at(base)) {
        (Some(v), Some(b)) => v >= b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_by_path_and_section() {
        assert_eq!(
            lookup("sandbox.filesystem.allowWrite").map(|k| k.effect),
            Some(Widens)
        );
        assert_eq!(
            lookup("sandbox.limits.memoryMb").map(|k| k.path),
            Some("sandbox.limits")
        );
        assert!(lookup("sandbox.bogus").is_none());
    }

    #[test]
    fn near_names_are_suggested() {
        assert_eq!(nearest_top_level("permisions"), Some("permissions"));
        assert_eq!(nearest_top_level("sandbx"), Some("sandbox"));
        assert_eq!(nearest_top_level("zzzzzzzzzz"), None);
        assert!(is_known_top_level("statusLine"));
        assert!(!is_known_top_level("permisions"));
    }

    #[test]
    fn the_docs_carry_the_table() {
        let docs = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/permissions.md"),
        )
        .unwrap_or_default();
        assert!(
            docs.contains(&markdown_table()),
            "docs/permissions.md must contain the settings-key table as keys::markdown_table() renders it:\n{}",
            markdown_table()
        );
    }

    #[test]
    fn scales_order_from_widest_to_narrowest() {
        let fs = ["off", "workspace-write", "read-only"];
        assert!(at_least_as_narrow(&fs, "read-only", "workspace-write"));
        assert!(at_least_as_narrow(
            &fs,
            "workspace-write",
            "workspace-write"
        ));
        assert!(!at_least_as_narrow(&fs, "off", "workspace-write"));
        assert!(!at_least_as_narrow(&fs, "bogus", "off"));
    }
}
