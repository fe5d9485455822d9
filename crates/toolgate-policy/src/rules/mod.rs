//! Permission rules: the parsed form of `Tool`, `Tool(specifier)` and `Tool(param:value)`,
//! and the three matcher families (shell, gitignore paths, domains).

pub(crate) mod bash;
pub(crate) mod domain;
pub(crate) mod index;
mod parse;
pub(crate) mod path;
pub(crate) mod split;
pub(crate) mod subcommand;

use std::fmt;
use std::sync::Arc;

use regex::Regex;
use serde::{Deserialize, Serialize};

pub(crate) use parse::{INTERPRETERS, ParseCtx, parse_rule};
pub use parse::{KNOWN_TOOLS, READ_TOOLS, WRITE_TOOLS};

use bash::BashPattern;
use domain::DomainPattern;
use path::PathPattern;

/// Which list a rule sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    /// `permissions.deny`: the call is refused.
    Deny,
    /// `permissions.ask`: a person must approve, in every mode.
    Ask,
    /// `permissions.allow`: the call runs without a prompt.
    Allow,
}

impl RuleKind {
    /// `deny`, `ask` or `allow`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Deny => "deny",
            RuleKind::Ask => "ask",
            RuleKind::Allow => "allow",
        }
    }
}

impl fmt::Display for RuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The tool part of a rule.
#[derive(Debug, Clone)]
pub(crate) enum ToolPat {
    /// One tool by name.
    Name(String),
    /// `mcp__server` / `mcp__server__*`: every tool of a server (the `mcp__server__` prefix).
    Server(String),
    /// A glob over the whole tool name.
    Glob(Regex),
}

/// Which file rules a path specifier belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathFamily {
    /// `Read(...)`: Read, Grep, Glob, … and file reads inside Bash.
    Read,
    /// `Edit(...)`: every writing tool, and file writes inside Bash.
    Edit,
}

/// The specifier part of a rule.
#[derive(Debug, Clone)]
pub(crate) enum Spec {
    /// No specifier: every call of the tool.
    Any,
    /// A Bash command pattern.
    Bash(BashPattern),
    /// A Read/Edit path pattern.
    Path(PathFamily, PathPattern),
    /// `WebFetch(domain:…)`.
    Domain(DomainPattern),
    /// `Tool(param:value)`: a top-level scalar input field (deny/ask only).
    Param { name: String, value: Wild },
    /// A specifier on a tool that takes none: matches nothing (warned at load).
    Never,
    /// Another tool's specifier, matched against one input field (`Agent(Explore)` →
    /// `subagent_type`) or the tool's subject.
    Value {
        field: Option<&'static str>,
        value: Wild,
    },
}

/// A value pattern: `*` matches any run of characters, everything else is literal.
#[derive(Debug, Clone)]
pub(crate) struct Wild {
    literal: String,
    re: Option<Regex>,
}

impl Wild {
    pub(crate) fn new(text: &str) -> Result<Self, String> {
        let literal = text.trim().to_owned();
        let re = if literal.contains('*') {
            let body: Vec<String> = literal.split('*').map(regex::escape).collect();
            Some(
                Regex::new(&format!("(?s)^{}$", body.join(".*")))
                    .map_err(|e| format!("cannot compile `{literal}`: {e}"))?,
            )
        } else {
            None
        };
        Ok(Self { literal, re })
    }

    pub(crate) fn matches(&self, s: &str) -> bool {
        match &self.re {
            Some(re) => re.is_match(s),
            None => self.literal == s,
        }
    }
}

/// A compiled rule.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// Which list.
    pub kind: RuleKind,
    /// The rule as written.
    pub text: String,
    /// The settings source it came from (a file path, `--deny`, `session`).
    pub source: Arc<str>,
    /// The tool part.
    pub tool: ToolPat,
    /// The specifier part.
    pub spec: Spec,
    /// An allow rule that auto mode drops on entry (`Bash(*)`, `Bash(python *)`, `Agent`).
    pub broad_for_auto: bool,
}
