//! A skill's `allowed-tools` as a scope: while the skill is active, a call must fall inside
//! one of its entries *and* pass the real permission decision. [`SkillScope`] wraps the
//! gate's policy stage; it can refuse what the policy would allow, never the reverse.
//!
//! An entry is a permission rule: a bare tool name (`Read`, `mcp__github__*`) admits every
//! call of that tool; an entry with a specifier (`Bash(git status:*)`, `Edit(src/**)`,
//! `WebFetch(domain:docs.rs)`) admits the calls the same rule would allow, judged by the
//! permission engine's own matcher ([`Engine::allow_rules_cover`]). `Skill` itself always
//! passes, so another skill can be loaded. A sub-agent started while a skill is active
//! inherits its scope.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use toolgate_core::Session;
use toolgate_core::stages::{DecisionRequest, PolicyStage, ReadFilter};
use toolgate_policy::{Engine, PolicyError, PolicyRequest};
use toolgate_protocol::{Decision, Layer, Verdict};

/// The active skill's scope.
#[derive(Debug)]
pub struct ActiveSkill {
    name: String,
    file: PathBuf,
    entries: Vec<String>,
    /// Tool names (or `*` globs) an entry admits whole.
    whole: Vec<String>,
    /// The entries with a specifier, compiled as allow rules.
    specified: Engine,
    /// The tool names those entries are about.
    specified_tools: Vec<String>,
}

/// The session's active skill, if any.
#[derive(Default)]
struct Slot(Mutex<Option<Arc<ActiveSkill>>>);

fn tool_of(entry: &str) -> (&str, bool) {
    match entry.split_once('(') {
        Some((tool, rest)) if rest.ends_with(')') && rest != "*)" => (tool.trim(), true),
        Some((tool, _)) => (tool.trim(), false),
        None => (entry.trim(), false),
    }
}

fn name_matches(pattern: &str, tool: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == tool,
        Some((head, tail)) => {
            tool.len() >= head.len() + tail.len() && tool.starts_with(head) && tool.ends_with(tail)
        }
    }
}

impl ActiveSkill {
    /// Compiles a skill's `allowed-tools` for `session` (its cwd anchors path entries).
    pub fn new(
        name: &str,
        file: &Path,
        entries: &[String],
        session: &Session,
    ) -> Result<Arc<Self>, PolicyError> {
        let mut builder = Engine::builder().cwd(session.cwd());
        if let Some(home) = session.workspace().home() {
            builder = builder.home(home);
        }
        let mut whole = Vec::new();
        let mut specified_tools = Vec::new();
        for entry in entries {
            let (tool, has_spec) = tool_of(entry);
            if has_spec {
                builder = builder.rule(
                    toolgate_policy::RuleKind::Allow,
                    entry,
                    &format!("skill {name} allowed-tools"),
                );
                specified_tools.push(tool.to_owned());
            } else {
                whole.push(tool.to_owned());
            }
        }
        Ok(Arc::new(Self {
            name: name.to_owned(),
            file: file.to_path_buf(),
            entries: entries.to_vec(),
            whole,
            specified: builder.build()?,
            specified_tools,
        }))
    }

    /// The entries as written.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Makes `skill` the session's active scope (`None`: no scope).
    pub fn set(session: &Session, skill: Option<Arc<ActiveSkill>>) {
        *session
            .extensions
            .get_or_init(Slot::default)
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = skill;
    }

    /// The session's active scope.
    pub fn of(session: &Session) -> Option<Arc<ActiveSkill>> {
        session
            .extensions
            .get::<Slot>()
            .and_then(|s| s.0.lock().unwrap_or_else(PoisonError::into_inner).clone())
    }

    /// Gives `child` the scope of `parent`, if it has one (sub-agents).
    pub fn inherit(parent: &Session, child: &Session) {
        if let Some(s) = Self::of(parent) {
            Self::set(child, Some(s));
        }
    }

    /// `Ok` when the call falls inside the scope, else why not.
    fn admits(&self, request: &DecisionRequest<'_>) -> Result<(), String> {
        let tool = request.spec.name.as_str();
        if tool == "Skill" || self.whole.iter().any(|p| name_matches(p, tool)) {
            return Ok(());
        }
        let outside = || {
            format!(
                "the active skill `{}` allows only {}; `{tool}` is not among them (load another skill, or finish this one first)",
                self.name,
                self.entries.join(", ")
            )
        };
        if !self.specified_tools.iter().any(|t| name_matches(t, tool)) {
            return Err(outside());
        }
        let cwd = request.session.cwd();
        let roots: Vec<&Path> = request.session.workspace().roots().collect();
        let req = PolicyRequest {
            tool,
            subject: &request.spec.subject,
            annotations: request.spec.annotations,
            input: request.input,
            facts: request.facts,
            mode: request.session.mode(),
            hook: None,
            cwd: &cwd,
            roots: &roots,
        };
        self.specified
            .allow_rules_cover(&req)
            .map(|_| ())
            .map_err(|why| {
                format!(
                    "the active skill `{}` allows only {}; this call is outside them ({why})",
                    self.name,
                    self.entries.join(", ")
                )
            })
    }
}

/// The gate's policy stage with the active skill's scope in front (module docs).
pub struct SkillScope(pub Arc<dyn PolicyStage>);

impl PolicyStage for SkillScope {
    fn decide(&self, request: &DecisionRequest<'_>) -> Verdict {
        if let Some(skill) = ActiveSkill::of(request.session)
            && let Err(why) = skill.admits(request)
        {
            return Verdict::new(Decision::Deny, Layer::Rule, why).with_rule(
                format!("skill {} allowed-tools", skill.name),
                skill.file.display().to_string(),
            );
        }
        self.0.decide(request)
    }

    fn read_filter(&self) -> Option<ReadFilter> {
        self.0.read_filter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_split_into_tool_and_specifier() {
        assert_eq!(tool_of("Read"), ("Read", false));
        assert_eq!(tool_of("Bash(*)"), ("Bash", false));
        assert_eq!(tool_of("Bash(git status:*)"), ("Bash", true));
        assert!(name_matches("mcp__gh__*", "mcp__gh__get"));
        assert!(!name_matches("mcp__gh__*", "mcp__ghx"));
        assert!(!name_matches("Read", "ReadX"));
    }
}
