//! toolgate's orchestration tools — the ones that change the agent's own state:
//! **AskUserQuestion** (ask the person), **Skill** (load a packaged workflow), **Agent**
//! (delegate to a sub-agent), **EnterWorktree** / **ExitWorktree** (work on a branch in
//! isolation) and **ExitPlanMode** / **EnterPlanMode**. (**Monitor** and the task tools
//! live with the shell tools, whose tasks they watch.)
//!
//! They pass the same gate as every tool, and none of them is a way around it:
//!
//! - questions go to the session's prompter (terminal, JSON-lines prompt channel, MCP
//!   elicitation); with nobody to ask the answer is "no user is available", never a guess;
//! - a sub-agent's calls go through a *child gate* ([`toolgate_core::delegate`]): the
//!   parent's compiled engine over a narrower view and a mode never more permissive than
//!   the parent's, audited under the Agent call, with depth and turn limits;
//! - a skill's `allowed-tools` only narrows ([`SkillScope`]); project skills and agent
//!   definitions wait for workspace trust;
//! - a worktree is made inside the workspace root, and a failed `git worktree add` leaves
//!   nothing behind;
//! - a mode change needs the user's answer and is recorded on the call that made it.
//!
//! An embedder that builds its gate without `toolgate-setup` must wrap its policy stage in
//! [`SkillScope`] (`Gate::builder().policy(Arc::new(SkillScope(policy)))`), or a skill's
//! `allowed-tools` is announced to the model but not enforced; `toolgate-setup` does this
//! for every front door.
//!
//! `docs/tools.md` describes each tool.
#![deny(missing_docs)]

mod agents;
mod ask;
pub mod frontmatter;
mod plan;
mod skills;
mod worktree;

use std::path::PathBuf;
use std::sync::Arc;

use toolgate_core::Tool;
use toolgate_policy::classifier::ClassifierConfig;
use toolgate_protocol::{Concurrency, Subject, TimeoutSpec, ToolAnnotations, ToolSpec};

pub use agents::{
    AGENT_DEFAULT_TIMEOUT_MS, AGENT_MAX_TIMEOUT_MS, AgentDefinition, AgentTool,
    MAX_AGENT_OUTPUT_TOKENS, MAX_AGENT_TURNS, MAX_CALLS_PER_TURN, agent_definitions,
};
pub use ask::AskUserQuestionTool;
pub use plan::{EnterPlanModeTool, ExitPlanModeTool};
pub use skills::{SkillDefinition, SkillScope, SkillTool, discover_skills};
pub use worktree::{EnterWorktreeTool, ExitWorktreeTool, WORKTREE_DIRS};

/// The names of the tools [`tools`] returns, in order.
pub const ORCH_TOOL_NAMES: [&str; 7] = [
    "AskUserQuestion",
    "Skill",
    "Agent",
    "EnterWorktree",
    "ExitWorktree",
    "ExitPlanMode",
    "EnterPlanMode",
];

/// Tools a sub-agent never gets: they act on the parent's session (its mode, its cwd) or
/// would put questions to a user who never saw the sub-agent's conversation.
pub const CHILD_EXCLUDED_TOOLS: [&str; 5] = [
    "AskUserQuestion",
    "EnterWorktree",
    "ExitWorktree",
    "ExitPlanMode",
    "EnterPlanMode",
];

/// What the orchestration tools are built from (settings, resolved by `toolgate-setup`).
#[derive(Debug, Clone, Default)]
pub struct OrchConfig {
    /// The project (workspace root): where project skills, agents and worktrees live.
    pub project: PathBuf,
    /// The user's home (`~/.claude/skills`, `~/.claude/agents`).
    pub home: Option<PathBuf>,
    /// toolgate's configuration directory (the trust store), to check a project skill's
    /// trust again when it is loaded.
    pub config_dir: Option<PathBuf>,
    /// Whether the workspace was trusted when the settings were loaded.
    pub trusted: bool,
    /// `toolgate.agent`: the model endpoint sub-agents run on.
    pub agent_model: Option<ClassifierConfig>,
}

/// The orchestration tools for `config`.
pub fn tools(config: &OrchConfig) -> Vec<Arc<dyn Tool>> {
    let config = Arc::new(config.clone());
    vec![
        Arc::new(AskUserQuestionTool::new()),
        Arc::new(SkillTool::new(Arc::clone(&config))),
        Arc::new(AgentTool::new(Arc::clone(&config))),
        Arc::new(EnterWorktreeTool::new()),
        Arc::new(ExitWorktreeTool::new()),
        Arc::new(ExitPlanModeTool::new()),
        Arc::new(EnterPlanModeTool::new()),
    ]
}

/// The version recorded in registry snapshots for these tools.
const TOOL_VERSION: &str = "1";

/// A spec with the house defaults: exclusive (they change session state), no subject.
fn spec(
    name: &str,
    description: String,
    input_schema: serde_json::Value,
    annotations: ToolAnnotations,
    timeout_ms: (u64, u64),
) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        version: TOOL_VERSION.into(),
        description,
        input_schema,
        output_schema: None,
        annotations,
        concurrency: Concurrency::Exclusive,
        timeout: TimeoutSpec {
            default_ms: timeout_ms.0,
            max_ms: timeout_ms.1,
        },
        subject: Subject::None,
    }
}

/// How long a tool that waits for a person may take: as long as the prompters wait.
const PERSON_TIMEOUT_MS: u64 = 900_000;
