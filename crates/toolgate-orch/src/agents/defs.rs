//! Sub-agent definitions: the built-in `general-purpose` and `Explore`, and Markdown files
//! with front matter (`name`, `description`, optional `tools` and `permissionMode`, the body
//! being the system prompt) in the project's `.claude/agents/` and `.toolgate/agents/` and
//! the user's `~/.claude/agents/`. Project definitions wait for workspace trust, as skills
//! do. A definition can only narrow: its `tools` are intersected with the parent's view and
//! its `permissionMode` is capped at the parent's mode by the child gate.

use std::path::PathBuf;
use std::str::FromStr;

use toolgate_policy::settings::PROJECT_AGENT_DIRS;
use toolgate_protocol::PermissionMode;

use crate::OrchConfig;
use crate::frontmatter::{self, FrontMatterError};

/// Where a user's own agent definitions live, below the home directory.
pub const USER_AGENT_DIR: &str = ".claude/agents";

/// Most definitions read from one directory.
pub const MAX_AGENTS_PER_DIR: usize = 100;

/// The system prompt every sub-agent starts from; a definition's body follows it.
const BASE_PROMPT: &str = "You are a sub-agent working for another agent on one task. Use the tools to do it, then answer with a concise final report: what you found or did, with file paths and the facts the other agent needs. Your tool calls are checked by a permission gate: a call may be refused, and then you must not retry it unchanged. You cannot ask the user anything.";

/// A sub-agent definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    /// The `subagent_type` that selects it.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Its tools (exact names); `None`: all of the parent's.
    pub tools: Option<Vec<String>>,
    /// The mode it asks for (capped at the parent's).
    pub mode: Option<PermissionMode>,
    /// Its system prompt.
    pub prompt: String,
    /// The file it came from (`None`: built in).
    pub file: Option<PathBuf>,
}

/// What was found under a name.
#[derive(Debug, Clone)]
pub enum FoundAgent {
    /// A usable definition.
    Agent(AgentDefinition),
    /// A broken definition file.
    Broken(String, FrontMatterError),
    /// A project definition while the workspace is not trusted.
    Untrusted(String, PathBuf),
}

impl FoundAgent {
    pub(crate) fn name(&self) -> &str {
        match self {
            FoundAgent::Agent(a) => &a.name,
            FoundAgent::Broken(n, _) | FoundAgent::Untrusted(n, _) => n,
        }
    }
}

fn builtin() -> Vec<AgentDefinition> {
    vec![
        AgentDefinition {
            name: "general-purpose".into(),
            description: "General-purpose agent for researching complex questions, searching for code and running multi-step tasks; has the same tools as you".into(),
            tools: None,
            mode: None,
            prompt: BASE_PROMPT.into(),
            file: None,
        },
        AgentDefinition {
            name: "Explore".into(),
            description: "Fast read-only agent for exploring a codebase: finding files, searching code, answering questions about it".into(),
            tools: Some(vec!["Read".into(), "Glob".into(), "Grep".into()]),
            mode: Some(PermissionMode::Plan),
            prompt: format!("{BASE_PROMPT} You only read and search; you change nothing."),
            file: None,
        },
    ]
}

fn load(path: PathBuf) -> FoundAgent {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned();
    let doc = match frontmatter::read(&path) {
        Ok(d) => d,
        Err(e) => return FoundAgent::Broken(stem, e),
    };
    let broken = |message: String| {
        FoundAgent::Broken(
            stem.clone(),
            FrontMatterError {
                path: path.clone(),
                line: 2,
                message,
            },
        )
    };
    let name = doc
        .fields
        .get("name")
        .map(|v| v.text())
        .unwrap_or_else(|| stem.clone());
    let Some(description) = doc.fields.get("description").map(|v| v.text()) else {
        return broken("the front matter has no `description:`: say when to use this agent".into());
    };
    let mode = match doc.fields.get("permissionMode").map(|v| v.text()) {
        None => None,
        Some(m) => match PermissionMode::from_str(&m) {
            Ok(m) => Some(m),
            Err(e) => return broken(format!("permissionMode: {e}")),
        },
    };
    let tools = doc
        .fields
        .get("tools")
        .map(|v| v.items())
        .filter(|t| !t.is_empty() && t.iter().all(|x| x != "*"));
    let prompt = if doc.body.trim().is_empty() {
        BASE_PROMPT.to_owned()
    } else {
        format!("{BASE_PROMPT}\n\n{}", doc.body.trim())
    };
    FoundAgent::Agent(AgentDefinition {
        name,
        description,
        tools,
        mode,
        prompt,
        file: Some(path),
    })
}

/// Every definition for `config`: project definitions first (placeholders when the
/// workspace is untrusted), then the user's, then the built-in ones; a name found twice
/// keeps the first.
pub fn agent_definitions(config: &OrchConfig) -> Vec<FoundAgent> {
    let mut dirs: Vec<(PathBuf, bool)> = PROJECT_AGENT_DIRS
        .iter()
        .map(|d| (config.project.join(d), true))
        .collect();
    if let Some(home) = &config.home {
        dirs.push((home.join(USER_AGENT_DIR), false));
    }
    let mut out: Vec<FoundAgent> = Vec::new();
    for (dir, project) in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            .collect();
        files.sort();
        for file in files.into_iter().take(MAX_AGENTS_PER_DIR) {
            let found = if project && !config.trusted {
                let stem = file
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or_default()
                    .to_owned();
                FoundAgent::Untrusted(stem, file)
            } else {
                load(file)
            };
            if !out.iter().any(|f| f.name() == found.name()) {
                out.push(found);
            }
        }
    }
    for b in builtin() {
        if !out.iter().any(|f| f.name() == b.name) {
            out.push(FoundAgent::Agent(b));
        }
    }
    out
}
