//! The hooks' `if` field with the permission engine's rule semantics.
//!
//! toolgate-hooks knows nothing of toolgate-policy; it asks an [`IfMatcher`]. This one
//! compiles the `if` rule as a **deny** rule of a one-rule engine and asks whether that rule
//! would refuse the call, which gives Claude Code's documented `if` behaviour:
//!
//! - Bash is matched per subcommand of the shell analyzer's output, with wrappers
//!   (`timeout`, `nohup`, …) and env assignments looked past, and inside `$(…)` and
//!   backticks: `if: "Bash(git *)"` runs for `ls && git push`, because *one* subcommand
//!   matching is enough, as for a deny rule;
//! - `Read(…)` and `Edit(…)` are gitignore-style path patterns, `Edit(…)` covering every
//!   writing tool (`Edit(*.ts)` runs for `Write` of `a.ts`), and, as for deny rules,
//!   `Read(…)` also covers writes of the same path;
//! - `WebFetch(domain:…)` compares hosts label-aware; tool-name globs (`mcp__srv__*`) work.
//!
//! Fail-open, as in Claude Code, because running a guard hook is the safe side: a command
//! the analyzer cannot see through runs every hook whose rule names its tool, and a rule the
//! engine cannot compile (or only compiles with a warning, e.g. `Write(…)` path rules that
//! Claude Code ignores) runs the hook. There is no second matcher to fall back to.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use toolgate_hooks::IfMatcher;
use toolgate_policy::{Engine, PolicyRequest};
use toolgate_protocol::{CallFacts, Decision, Layer, PermissionMode, Subject, ToolAnnotations};
use toolgate_shell::Context;

/// Rules compiled once and kept; a settings file has a handful of `if` rules.
const MAX_CACHED_RULES: usize = 1024;

/// The policy-backed `if` matcher; see the module docs.
pub struct PolicyIfMatcher {
    project: PathBuf,
    home: Option<PathBuf>,
    /// `None`: the engine could not compile the rule cleanly; the hook runs.
    cache: Mutex<HashMap<String, Option<Arc<Engine>>>>,
}

impl std::fmt::Debug for PolicyIfMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyIfMatcher")
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

impl PolicyIfMatcher {
    /// A matcher for a session in `project` (the anchor of relative path patterns and the
    /// directory relative paths in tool inputs are resolved against).
    pub fn new(project: PathBuf, home: Option<PathBuf>) -> Self {
        PolicyIfMatcher {
            project,
            home,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn engine(&self, rule: &str) -> Option<Arc<Engine>> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = cache.get(rule) {
            return e.clone();
        }
        let mut builder = Engine::builder().cwd(&self.project).deny(rule);
        if let Some(home) = &self.home {
            builder = builder.home(home);
        }
        let engine = builder
            .build()
            .ok()
            .filter(|e| e.warnings().is_empty())
            .map(Arc::new);
        if cache.len() >= MAX_CACHED_RULES {
            cache.clear();
        }
        cache.insert(rule.to_owned(), engine.clone());
        engine
    }
}

/// The tool part of a rule (`Bash` of `Bash(git *)`).
fn rule_tool(rule: &str) -> &str {
    rule.split('(').next().unwrap_or(rule).trim()
}

impl IfMatcher for PolicyIfMatcher {
    fn matches(&self, rule: &str, tool_name: &str, input: &Value) -> bool {
        let Some(engine) = self.engine(rule) else {
            return true;
        };
        let mut facts = CallFacts::default();
        let mut subject = Subject::None;
        if tool_name == "Bash"
            && let Some(command) = input.get("command").and_then(Value::as_str)
        {
            let mut ctx = Context::new(self.project.clone()).with_root(self.project.clone());
            if let Some(home) = &self.home {
                ctx = ctx.with_home(home.clone());
            }
            let analysis = toolgate_shell::analyze(command, &ctx);
            if !analysis.opaque.is_empty() && rule_tool(rule).eq_ignore_ascii_case("Bash") {
                return true;
            }
            facts = analysis.facts();
            facts.subject = Some(command.to_owned());
            subject = Subject::Command {
                field: "command".into(),
            };
        }
        let roots = [self.project.as_path()];
        let request = PolicyRequest {
            tool: tool_name,
            subject: &subject,
            annotations: ToolAnnotations::default(),
            input,
            facts: &facts,
            mode: PermissionMode::Default,
            hook: None,
            cwd: &self.project,
            roots: &roots,
        };
        let v = engine.decide(&request).verdict;
        // Only the rule itself counts, not the engine's risk floor.
        v.decision == Decision::Deny && v.layer == Layer::Rule && v.rule.as_deref() == Some(rule)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn m() -> PolicyIfMatcher {
        PolicyIfMatcher::new(PathBuf::from("/w/p"), Some(PathBuf::from("/home/u")))
    }

    #[test]
    fn bash_rules_match_any_subcommand() {
        let m = m();
        let bash = |c: &str| json!({"command": c});
        assert!(m.matches("Bash(git *)", "Bash", &bash("git status && ls")));
        assert!(m.matches("Bash(git *)", "Bash", &bash("ls; nohup timeout 5 git push")));
        assert!(m.matches("Bash(git push *)", "Bash", &bash("echo $(git push origin)")));
        assert!(!m.matches("Bash(git *)", "Bash", &bash("ls -la | wc -l")));
        assert!(!m.matches("Bash(git *)", "Bash", &bash("echo 'git push'")));
        assert!(!m.matches("Bash(rm *)", "Bash", &bash("grep -r 'rm -rf' .")));
        assert!(!m.matches("Bash(git *)", "Read", &json!({"file_path": "/w/p/git"})));
        // The analyzer cannot see what `$CMD` is: the hook runs.
        assert!(m.matches("Bash(rm *)", "Bash", &bash("$CMD -rf build")));
    }

    #[test]
    fn path_rules_are_gitignore_style_and_edit_covers_writes() {
        let m = m();
        assert!(m.matches(
            "Edit(*.ts)",
            "Write",
            &json!({"file_path": "/w/p/src/a.ts"})
        ));
        assert!(m.matches("Edit(*.ts)", "Edit", &json!({"file_path": "/w/p/a.ts"})));
        assert!(!m.matches("Edit(*.ts)", "Write", &json!({"file_path": "/w/p/a.rs"})));
        assert!(!m.matches("Edit(*.ts)", "Read", &json!({"file_path": "/w/p/a.ts"})));
        assert!(m.matches(
            "Read(.env)",
            "Read",
            &json!({"file_path": "/w/p/deep/.env"})
        ));
        assert!(m.matches(
            "Read(~/.ssh/**)",
            "Read",
            &json!({"file_path": "/home/u/.ssh/id_rsa"})
        ));
        assert!(!m.matches(
            "Read(~/.ssh/**)",
            "Read",
            &json!({"file_path": "/w/p/.ssh/x"})
        ));
        // As for deny rules, a Read rule also covers the other readers and writes.
        let ssh = |field: &str, path: &str| json!({ field: path, "pattern": "x" });
        assert!(m.matches("Read(~/.ssh/**)", "Grep", &ssh("path", "/home/u/.ssh/a")));
        assert!(m.matches(
            "Read(~/.ssh/**)",
            "Write",
            &ssh("file_path", "/home/u/.ssh/c")
        ));
    }

    #[test]
    fn other_rule_kinds_and_fallbacks() {
        let m = m();
        let fetch = |u: &str| json!({"url": u, "prompt": "p"});
        assert!(m.matches(
            "WebFetch(domain:*.example.com)",
            "WebFetch",
            &fetch("https://a.b.example.com/x")
        ));
        assert!(!m.matches(
            "WebFetch(domain:*.example.com)",
            "WebFetch",
            &fetch("https://example.com.evil.io/")
        ));
        assert!(m.matches("mcp__srv__*", "mcp__srv__get", &json!({})));
        assert!(!m.matches("mcp__srv__*", "mcp__other__get", &json!({})));
        // A rule the engine does not compile cleanly runs the hook.
        assert!(m.matches("Bash(unclosed", "Bash", &json!({"command": "ls"})));
        assert!(m.matches("Write(*.md)", "Bash", &json!({"command": "ls"})));
    }
}
