//! Skills: folders with a `SKILL.md` (front matter `name`, `description`, optional
//! `allowed-tools`, then the instructions), found in the project's `.claude/skills/` and
//! `.toolgate/skills/` and the user's `~/.claude/skills/`.
//!
//! The Skill tool's description lists them; a call returns the instructions and names the
//! folder's other files. Project skills steer the agent as much as project settings do, so
//! they are offered only while the workspace is trusted (their `SKILL.md` is part of the
//! trust hash, and trust is checked again when one is loaded). A skill's `allowed-tools`
//! narrows what the session may call while it is active ([`SkillScope`]); nothing in a
//! skill can widen what the gate allows.

mod scope;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use toolgate_core::{ToolContext, ToolError, TypedTool};
use toolgate_policy::settings::{PROJECT_SKILL_DIRS, TrustStatus, TrustStore};
use toolgate_protocol::{ToolAnnotations, ToolOutput, ToolSpec};

pub use scope::{ActiveSkill, SkillScope};

use crate::frontmatter::{self, FrontMatterError};
use crate::{OrchConfig, spec};

/// Where a user's own skills live, below the home directory.
pub const USER_SKILL_DIR: &str = ".claude/skills";

/// Most skills listed from one directory: the tool description carries each.
pub const MAX_SKILLS_PER_DIR: usize = 100;

/// Most of a skill folder's other files named in the result.
pub const MAX_SKILL_FILES: usize = 50;

/// Longest skill `args` string.
pub const MAX_ARGS_CHARS: usize = 10_000;

/// Whose a skill is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillSource {
    /// The workspace's (waits for trust).
    Project,
    /// The user's (`~/.claude/skills`).
    User,
}

/// A skill as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDefinition {
    /// The name the Skill tool takes.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// `allowed-tools`: the only tools the session may call while it is active.
    pub allowed_tools: Option<Vec<String>>,
    /// Its `SKILL.md`.
    pub file: PathBuf,
    /// Whose it is.
    pub source: SkillSource,
}

/// What discovery found under a name.
#[derive(Debug, Clone)]
pub enum Found {
    /// A usable skill.
    Skill(SkillDefinition),
    /// A `SKILL.md` whose front matter is broken.
    Broken(String, FrontMatterError),
    /// A project skill while the workspace is not trusted.
    Untrusted(String, PathBuf),
}

impl Found {
    fn name(&self) -> &str {
        match self {
            Found::Skill(s) => &s.name,
            Found::Broken(n, _) | Found::Untrusted(n, _) => n,
        }
    }
}

/// Whether a skill name is usable: lower-case letters, digits and `-`, up to 64.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_' || c == ':'
        })
}

/// Reads one skill folder's `SKILL.md`.
fn load(file: &Path, dir_name: &str, source: SkillSource) -> Found {
    let doc = match frontmatter::read(file) {
        Ok(d) => d,
        Err(e) => return Found::Broken(dir_name.to_owned(), e),
    };
    let broken = |line: usize, message: String| {
        Found::Broken(
            dir_name.to_owned(),
            FrontMatterError {
                path: file.to_path_buf(),
                line,
                message,
            },
        )
    };
    let name = doc
        .fields
        .get("name")
        .map(|v| v.text())
        .unwrap_or_else(|| dir_name.to_owned());
    if !valid_name(&name) {
        return broken(
            2,
            format!("`name: {name}` is not a skill name: use lower-case letters, digits and `-`"),
        );
    }
    let Some(description) = doc.fields.get("description").map(|v| v.text()) else {
        return broken(
            2,
            "the front matter has no `description:`: say what the skill is for and when to use it"
                .into(),
        );
    };
    let allowed_tools = doc.fields.get("allowed-tools").map(|v| v.items());
    Found::Skill(SkillDefinition {
        name,
        description,
        allowed_tools,
        file: file.to_path_buf(),
        source,
    })
}

/// Every skill for `config`: project skills first (or, untrusted, placeholders that say
/// why they are not offered), then the user's; a name found twice keeps the first.
pub fn discover_skills(config: &OrchConfig) -> Vec<Found> {
    let mut dirs: Vec<(PathBuf, SkillSource)> = PROJECT_SKILL_DIRS
        .iter()
        .map(|d| (config.project.join(d), SkillSource::Project))
        .collect();
    if let Some(home) = &config.home {
        dirs.push((home.join(USER_SKILL_DIR), SkillSource::User));
    }
    let mut out: Vec<Found> = Vec::new();
    for (dir, source) in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        folders.sort();
        for folder in folders.into_iter().take(MAX_SKILLS_PER_DIR) {
            let file = folder.join("SKILL.md");
            let Some(dir_name) = folder.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !file.is_file() {
                continue;
            }
            let found = if source == SkillSource::Project && !config.trusted {
                Found::Untrusted(dir_name.to_owned(), file)
            } else {
                load(&file, dir_name, source)
            };
            if !out.iter().any(|f| f.name() == found.name()) {
                out.push(found);
            }
        }
    }
    out
}

/// Skill's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillInput {
    /// The skill's name.
    pub skill: String,
    /// Arguments for it.
    #[serde(default)]
    pub args: Option<String>,
}

/// The Skill tool.
pub struct SkillTool {
    spec: ToolSpec,
    config: Arc<OrchConfig>,
}

impl SkillTool {
    /// The tool, listing the skills found now.
    pub fn new(config: Arc<OrchConfig>) -> Self {
        let found = discover_skills(&config);
        let mut listing = String::new();
        for f in &found {
            if let Found::Skill(s) = f {
                listing.push_str(&format!("\n- {}: {}", s.name, s.description));
            }
        }
        if listing.is_empty() {
            listing.push_str("\n(no skills are installed)");
        }
        let description = format!(
            "Loads a skill: a packaged workflow with instructions (and sometimes scripts or references) for a kind of task. \
             Call it when a task matches a skill's description, then follow the instructions it returns. \
             A skill with allowed-tools limits the tools you may call until another skill is loaded.\n\nAvailable skills:{listing}"
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "skill": {"type": "string", "minLength": 1, "description": "The skill name, e.g. \"pdf\""},
                "args": {"type": "string", "maxLength": MAX_ARGS_CHARS, "description": "Optional arguments for the skill"}
            },
            "required": ["skill"],
            "additionalProperties": false
        });
        Self {
            spec: spec(
                "Skill",
                description,
                schema,
                ToolAnnotations {
                    read_only: true,
                    destructive: false,
                    idempotent: true,
                    open_world: false,
                },
                (10_000, 10_000),
            ),
            config,
        }
    }

    /// The skill named `name`, or why it cannot be loaded.
    fn find(&self, name: &str) -> Result<SkillDefinition, ToolError> {
        let found = discover_skills(&self.config);
        match found.iter().find(|f| f.name() == name) {
            Some(Found::Skill(s)) => {
                if s.source == SkillSource::Project {
                    self.still_trusted(name)?;
                }
                Ok(s.clone())
            }
            Some(Found::Broken(_, e)) => Err(ToolError::InvalidRequest(format!(
                "the skill `{name}` cannot be loaded: its SKILL.md is broken at {e}"
            ))),
            Some(Found::Untrusted(_, file)) => Err(ToolError::Denied(format!(
                "the skill `{name}` ({}) belongs to the workspace, which is not trusted: project skills steer the agent, so they wait until the user runs `toolgate trust`",
                file.display()
            ))),
            None => {
                let names: Vec<&str> = found
                    .iter()
                    .filter_map(|f| match f {
                        Found::Skill(s) => Some(s.name.as_str()),
                        _ => None,
                    })
                    .collect();
                let hint = if names.is_empty() {
                    "no skills are installed".to_owned()
                } else {
                    format!("the skills are: {}", names.join(", "))
                };
                Err(ToolError::InvalidRequest(format!(
                    "there is no skill named `{name}`; {hint}"
                )))
            }
        }
    }

    /// A project skill's file may have changed since the settings were loaded: trust is
    /// checked again against the trust store.
    fn still_trusted(&self, name: &str) -> Result<(), ToolError> {
        let Some(dir) = &self.config.config_dir else {
            return Ok(());
        };
        match TrustStore::new(dir).status(&self.config.project) {
            Ok(TrustStatus::Trusted) => Ok(()),
            Ok(_) => Err(ToolError::Denied(format!(
                "the project skill `{name}` changed since the workspace was trusted (or trust was withdrawn); it waits until the user runs `toolgate trust` again"
            ))),
            Err(e) => Err(ToolError::Denied(format!(
                "the workspace's trust could not be checked ({e}); the project skill `{name}` is not loaded"
            ))),
        }
    }
}

#[async_trait]
impl TypedTool for SkillTool {
    type Input = SkillInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut SkillInput, _ctx: &ToolContext) -> Result<(), ToolError> {
        // A leading slash is how people type skills (`/pdf`).
        if let Some(stripped) = input.skill.strip_prefix('/') {
            input.skill = stripped.to_owned();
        }
        self.find(&input.skill).map(|_| ())
    }

    async fn run(&self, input: SkillInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let skill = self.find(&input.skill)?;
        // Read again: the call returns what the file says now.
        let doc = frontmatter::read(&skill.file).map_err(|e| {
            ToolError::InvalidRequest(format!(
                "the skill `{}` cannot be loaded: its SKILL.md is broken at {e}",
                skill.name
            ))
        })?;
        let dir = skill.file.parent().unwrap_or(Path::new("/"));
        let files = other_files(dir);
        let scope = match &skill.allowed_tools {
            Some(tools) => Some(
                ActiveSkill::new(&skill.name, &skill.file, tools, &ctx.session).map_err(|e| {
                    ToolError::InvalidRequest(format!(
                        "the skill `{}` has an allowed-tools entry that is not a rule: {e}",
                        skill.name
                    ))
                })?,
            ),
            None => None,
        };
        let mut text = format!(
            "<skill name=\"{}\" path=\"{}\">\n{}\n</skill>",
            skill.name,
            dir.display(),
            doc.body.trim_end()
        );
        if let Some(args) = input.args.as_deref().filter(|a| !a.trim().is_empty()) {
            text.push_str(&format!("\n\nARGUMENTS: {args}"));
        }
        if !files.is_empty() {
            text.push_str(&format!(
                "\n\nOther files of this skill (in {}): {}",
                dir.display(),
                files.join(", ")
            ));
            if !ctx.session.workspace().contains(dir) {
                text.push_str(
                    "\n(They lie outside the workspace, so the file tools cannot read them unless the folder is an additional directory.)",
                );
            }
        }
        if let Some(s) = &scope {
            text.push_str(&format!(
                "\n\nWhile this skill is active you may call only: {} (and Skill, to load another).",
                s.entries().join(", ")
            ));
        }
        let allowed = scope.as_ref().map(|s| s.entries().to_vec());
        ActiveSkill::set(&ctx.session, scope);
        Ok(ToolOutput::text(text).with_structured(json!({
            "skill": skill.name,
            "path": skill.file,
            "files": files,
            "allowed_tools": allowed,
        })))
    }
}

/// The skill folder's files other than `SKILL.md`, relative, sorted, at most
/// [`MAX_SKILL_FILES`] (two levels deep).
fn other_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0u8)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let p = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() && depth < 1 {
                stack.push((p, depth + 1));
            } else if kind.is_file()
                && p.file_name().is_some_and(|n| n != "SKILL.md")
                && let Ok(rel) = p.strip_prefix(dir)
            {
                out.push(rel.to_string_lossy().into_owned());
            }
            if out.len() >= MAX_SKILL_FILES {
                break;
            }
        }
    }
    out.sort();
    out.truncate(MAX_SKILL_FILES);
    out
}
