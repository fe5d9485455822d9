//! Matchers (exactly as Claude Code: `*`/empty = all, plain names = exact list, anything
//! else an unanchored regex) and the `if` rule filter.

use regex::Regex;
use serde_json::Value;

/// Which event values (tool names, session sources…) a matcher group applies to.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// `*`, `""` or omitted.
    All,
    /// Only `[A-Za-z0-9_\- ,|]`: exact names split on `|` or `,`.
    Exact(Vec<String>),
    /// Anything else: an unanchored regular expression (`Edit.*` matches `NotebookEdit`).
    Regex(Regex),
}

impl Matcher {
    /// Compiles a matcher string.
    pub fn parse(s: &str) -> Result<Matcher, regex::Error> {
        if s.is_empty() || s == "*" {
            return Ok(Matcher::All);
        }
        let plain = s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|'));
        if plain {
            let names: Vec<String> = s
                .split(['|', ','])
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect();
            return Ok(Matcher::Exact(names));
        }
        Regex::new(s).map(Matcher::Regex)
    }

    /// Whether the matcher accepts `value`. Events without a matched field (`None`) run
    /// every group, as in Claude Code.
    pub fn matches(&self, value: Option<&str>) -> bool {
        let Some(v) = value else { return true };
        // A matcher written for a tool's old name (`Task`) still matches it under its
        // current one (`Agent`), and the other way round.
        let current = toolgate_protocol::canonical_tool_name(v);
        let mut all: Vec<&str> = vec![v];
        if current != v {
            all.push(current);
        }
        all.extend(toolgate_protocol::tool_name_aliases(current));
        let mut names = all.into_iter();
        match self {
            Matcher::All => true,
            Matcher::Exact(wanted) => names.any(|v| wanted.iter().any(|n| n == v)),
            Matcher::Regex(re) => names.any(|v| re.is_match(v)),
        }
    }
}

/// Decides whether a handler's `if` rule (one permission rule such as `Bash(git push *)`)
/// applies to a tool call. This crate does not interpret permission rules: the permission
/// engine does, and `toolgate-setup` plugs it in with
/// [`crate::HookEngine::with_if_matcher`], so `if` means exactly what the same rule means in
/// `permissions`. Without one, [`RunAlways`] runs the hook.
pub trait IfMatcher: Send + Sync {
    /// `true` runs the hook. Implementations should return `true` when they cannot parse the
    /// rule: running a guard hook is the safe side.
    fn matches(&self, rule: &str, tool_name: &str, input: &Value) -> bool;
}

/// The default `if` matcher when no permission engine is plugged in: every handler whose
/// `matcher` selected the tool runs, whatever its `if` says. Running a guard hook more often
/// than asked is the safe side of not knowing.
#[derive(Debug, Default, Clone, Copy)]
pub struct RunAlways;

impl IfMatcher for RunAlways {
    fn matches(&self, _rule: &str, _tool_name: &str, _input: &Value) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matcher_forms() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "Anything", true),
            ("", "Bash", true),
            ("Bash", "Bash", true),
            ("Bash", "BashOutput", false),
            ("Edit|Write", "Write", true),
            ("Edit, Write", "Write", true),
            ("Edit|Write", "NotebookEdit", false),
            ("Edit.*", "NotebookEdit", true),
            ("mcp__memory", "mcp__memory__create", false),
            ("mcp__memory__.*", "mcp__memory__create", true),
            ("^Read$", "Read", true),
            ("^Read$", "ReadX", false),
            // Claude Code renamed Task to Agent: old matchers keep matching, both ways.
            ("Task", "Agent", true),
            ("^Task$", "Agent", true),
            ("Agent", "Task", true),
            ("Task", "Bash", false),
        ];
        for (m, v, want) in cases {
            assert_eq!(
                Matcher::parse(m).unwrap().matches(Some(v)),
                *want,
                "{m} vs {v}"
            );
        }
        assert!(Matcher::parse("(").is_err());
    }
}
