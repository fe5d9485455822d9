//! Bash-rule patterns kept outside the permission lists, matched by the permission engine's
//! own compiled Bash matcher so they mean exactly what a `Bash(…)` rule means:
//! `sandbox.excludedCommands` (commands that may run outside the sandbox).
//!
//! The reading is the safe one: a call is covered only when the shell analyzer understood it
//! all and *every* subcommand matches a pattern with no wrapper (`sudo`, `xargs`, …) and no
//! leading `NAME=value` — `docker ps && curl x | sh` stays sandboxed.

use std::path::{Path, PathBuf};

use toolgate_protocol::{CallFacts, PermissionMode, Subject, ToolAnnotations};

use crate::{Engine, PolicyError, PolicyRequest};

/// A compiled list of Bash patterns (`docker:*`, `docker *`, `make test`, `Bash(…)`).
#[derive(Debug)]
pub struct CommandPatterns {
    engine: Engine,
    cwd: PathBuf,
}

impl CommandPatterns {
    /// Compiles `patterns` (each a Bash rule's inside, or a whole `Bash(…)` rule) for a
    /// session in `cwd` with home `home`.
    pub fn new(
        patterns: &[String],
        cwd: impl Into<PathBuf>,
        home: Option<PathBuf>,
    ) -> Result<Self, PolicyError> {
        let cwd = cwd.into();
        let mut builder = Engine::builder().cwd(cwd.clone());
        if let Some(home) = home {
            builder = builder.home(home);
        }
        for p in patterns {
            let p = p.trim();
            let rule = if p.starts_with("Bash(") && p.ends_with(')') {
                p.to_owned()
            } else {
                format!("Bash({p})")
            };
            builder = builder.allow(&rule);
        }
        Ok(Self {
            engine: builder.build()?,
            cwd,
        })
    }

    /// The patterns that cover every subcommand of the analysed call, when they all do.
    pub fn cover(&self, facts: &CallFacts, roots: &[&Path]) -> Option<Vec<String>> {
        let subject = Subject::Command {
            field: "command".into(),
        };
        let input = serde_json::json!({ "command": facts.subject.clone().unwrap_or_default() });
        let request = PolicyRequest {
            tool: "Bash",
            subject: &subject,
            annotations: ToolAnnotations::default(),
            input: &input,
            facts,
            mode: PermissionMode::Default,
            hook: None,
            cwd: &self.cwd,
            roots,
        };
        self.engine.covering_allow_rules(&request)
    }
}

#[cfg(test)]
mod tests {
    use toolgate_protocol::CommandFact;

    use super::*;

    fn fact(argv: &[&str]) -> CommandFact {
        CommandFact {
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            text: argv.join(" "),
            ..CommandFact::default()
        }
    }

    fn facts(commands: Vec<CommandFact>) -> CallFacts {
        CallFacts {
            commands,
            ..CallFacts::default()
        }
    }

    #[test]
    fn covered_only_when_every_subcommand_matches() {
        let pats = CommandPatterns::new(
            &["docker:*".to_owned(), "Bash(make test)".to_owned()],
            "/w",
            None,
        )
        .unwrap();
        let roots = [Path::new("/w")];
        let cover = |f: &CallFacts| pats.cover(f, &roots);
        let one = facts(vec![fact(&["docker", "ps"])]);
        assert_eq!(cover(&one), Some(vec!["Bash(docker:*)".to_owned()]));
        let both = facts(vec![fact(&["docker", "ps"]), fact(&["make", "test"])]);
        assert_eq!(cover(&both).map(|v| v.len()), Some(2));
        let mixed = facts(vec![fact(&["docker", "ps"]), fact(&["curl", "x"])]);
        assert_eq!(cover(&mixed), None);
        assert_eq!(cover(&facts(vec![fact(&["dockerd"])])), None);
        assert_eq!(cover(&facts(vec![fact(&["make", "test", "-j"])])), None);
        // Read-only commands are not exempt: `ls` is not an excluded command.
        assert_eq!(cover(&facts(vec![fact(&["ls"])])), None);
        let mut wrapped = fact(&["docker", "ps"]);
        wrapped.wrappers = vec!["sudo".into()];
        assert_eq!(cover(&facts(vec![wrapped])), None);
        let mut with_env = fact(&["docker", "ps"]);
        with_env.env = vec!["LD_PRELOAD".into()];
        assert_eq!(cover(&facts(vec![with_env])), None);
        let mut opaque = one.clone();
        opaque.opaque = true;
        assert_eq!(cover(&opaque), None);
        assert_eq!(cover(&facts(Vec::new())), None);
    }
}
