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
        match self {
            Matcher::All => true,
            Matcher::Exact(names) => names.iter().any(|n| n == v),
            Matcher::Regex(re) => re.is_match(v),
        }
    }
}

/// Decides whether a handler's `if` rule (one permission rule such as `Bash(git push *)`)
/// applies to a tool call. The policy crate's full rule matcher can be plugged in with
/// [`crate::HookEngine::with_if_matcher`]; [`SimpleIfMatcher`] is the default.
pub trait IfMatcher: Send + Sync {
    /// `true` runs the hook. Implementations should return `true` when they cannot parse the
    /// rule: running a guard hook is the safe side.
    fn matches(&self, rule: &str, tool_name: &str, input: &Value) -> bool;
}

/// The built-in `if` matcher: the rule's tool name must equal the tool name (a trailing `*`
/// in it is a prefix wildcard, for `mcp__server__*`); the specifier in parentheses is a glob
/// (`*` any run of characters) on Bash's `command`, checked against the whole command and
/// against each `&&`/`||`/`;`/`|`/newline-separated part, and a legacy `prefix:*` is a
/// prefix; for other tools it is a glob on `file_path`, `path`, `notebook_path`, `url` or
/// `pattern`. Unparseable rules run the hook.
#[derive(Debug, Default, Clone, Copy)]
pub struct SimpleIfMatcher;

impl IfMatcher for SimpleIfMatcher {
    fn matches(&self, rule: &str, tool_name: &str, input: &Value) -> bool {
        let rule = rule.trim();
        let (tool, spec) = match rule.find('(') {
            Some(i) if rule.ends_with(')') => (&rule[..i], Some(&rule[i + 1..rule.len() - 1])),
            Some(_) => return true,
            None => (rule, None),
        };
        if !glob(tool, tool_name) {
            return false;
        }
        let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty() && *s != "*") else {
            return true;
        };
        let spec = match spec.strip_suffix(":*") {
            Some(prefix) => format!("{prefix}*"),
            None => spec.to_owned(),
        };
        if tool_name == "Bash" {
            let Some(cmd) = input.get("command").and_then(Value::as_str) else {
                return true;
            };
            return glob(&spec, cmd.trim()) || split_commands(cmd).any(|part| glob(&spec, part));
        }
        ["file_path", "path", "notebook_path", "url", "pattern"]
            .iter()
            .find_map(|f| input.get(*f).and_then(Value::as_str))
            .is_none_or(|subject| glob(&spec, subject))
    }
}

fn split_commands(cmd: &str) -> impl Iterator<Item = &str> {
    cmd.split(['\n', ';', '|', '&'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// `*` matches any run of characters (including `/`); everything else is literal.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn if_rules() {
        let m = SimpleIfMatcher;
        let bash = |c: &str| json!({"command": c});
        assert!(m.matches("Bash", "Bash", &bash("ls")));
        assert!(!m.matches("Bash", "Read", &json!({})));
        assert!(m.matches("Bash(rm *)", "Bash", &bash("rm -rf /")));
        assert!(m.matches("Bash(rm *)", "Bash", &bash("cd x && rm -rf y")));
        assert!(!m.matches("Bash(rm *)", "Bash", &bash("ls rm")));
        assert!(m.matches("Bash(git push:*)", "Bash", &bash("git push origin")));
        assert!(!m.matches("Bash(git push:*)", "Bash", &bash("git status")));
        assert!(m.matches("Edit(*.rs)", "Edit", &json!({"file_path": "/a/b.rs"})));
        assert!(!m.matches("Edit(*.rs)", "Edit", &json!({"file_path": "/a/b.md"})));
        assert!(m.matches("mcp__srv__*", "mcp__srv__x", &json!({})));
        assert!(m.matches("Bash(unclosed", "Bash", &json!({})));
    }
}
