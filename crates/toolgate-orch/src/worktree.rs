//! EnterWorktree and ExitWorktree: work on a new branch in a `git worktree` under the
//! workspace root, and come back.
//!
//! The worktree goes to `<workspace>/.claude/worktrees/<name>` — inside the roots, so every
//! file tool and the sandbox treat it as workspace, and the one `.claude` directory the
//! protected-path table exempts, so edits there are ordinary edits. A name is one path
//! component (letters, digits, `.`, `_`, `-`; never `..` or `/`), so it cannot point
//! anywhere else. `git worktree add` runs with hooks off; when it fails, whatever it made —
//! the directory, the branch, git's administrative entry, the folders made for it — is
//! removed before the error is returned. ExitWorktree asks before removing a worktree with
//! uncommitted changes, and keeps it when nobody can be asked.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use toolgate_core::asking::{Question, QuestionForm, QuestionOption, Unanswered};
use toolgate_core::{Session, ToolContext, ToolError, TypedTool};
use toolgate_protocol::{ToolAnnotations, ToolOutput, ToolSpec};

use crate::ask::unanswered;
use crate::{PERSON_TIMEOUT_MS, spec};

/// Where worktrees are made, relative to the workspace root. `.toolgate/` is not used: the
/// whole of it is a protected path, so every edit in a worktree there would need approval.
pub const WORKTREE_DIRS: [&str; 1] = [".claude/worktrees"];

/// Longest worktree name.
pub const MAX_NAME_CHARS: usize = 64;

/// How long one git command may take (a checkout of a large tree); past it the command is
/// killed and the tool fails (cleaning up after `worktree add`).
pub const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// Most bytes of `git status` listed in the removal question.
const MAX_STATUS_SHOWN: usize = 2_000;

/// The session's worktree, while it works in one.
#[derive(Debug, Clone)]
struct Active {
    name: String,
    path: PathBuf,
    branch: String,
    repo: PathBuf,
    previous_cwd: PathBuf,
}

#[derive(Default)]
struct WorktreeState {
    active: Mutex<Option<Active>>,
}

fn state(session: &Session) -> Arc<WorktreeState> {
    session.extensions.get_or_init(WorktreeState::default)
}

fn active(session: &Session) -> Option<Active> {
    state(session)
        .active
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

fn set_active(session: &Session, value: Option<Active>) {
    *state(session)
        .active
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = value;
}

/// Why a name cannot be a worktree's, or `Ok`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "a worktree name has 1 to {MAX_NAME_CHARS} characters"
        ));
    }
    if name.contains('/') || name.contains('\\') {
        return Err(format!(
            "`{name}` contains a path separator; a worktree name is one folder name (e.g. fix-login)"
        ));
    }
    if name.contains("..") {
        return Err(format!(
            "`{name}` contains `..`; use letters, digits, `.`, `_` and `-`"
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        || name.ends_with(".lock")
    {
        return Err(format!(
            "`{name}` is not a valid worktree name: start with a letter or digit, then letters, digits, `.`, `_` and `-`"
        ));
    }
    Ok(())
}

/// Runs git; `Ok(stdout)` or `Err(what failed)`.
async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new("git");
    // Hooks off: a post-checkout hook would run a program no permission decision saw.
    cmd.arg("-c")
        .arg("core.hooksPath=/dev/null")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    toolgate_core::child::only_standard_descriptors(cmd.as_std_mut());
    let out = tokio::time::timeout(GIT_TIMEOUT, cmd.output())
        .await
        .map_err(|_| {
            format!(
                "git {} did not finish within {} s",
                args.join(" "),
                GIT_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("git could not be run: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!("git {} failed: {}", args.join(" "), err.trim()))
    }
}

/// EnterWorktree's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnterInput {
    /// The worktree's name (default: a fresh one).
    #[serde(default)]
    pub name: Option<String>,
}

/// The EnterWorktree tool.
pub struct EnterWorktreeTool {
    spec: ToolSpec,
}

impl Default for EnterWorktreeTool {
    fn default() -> Self {
        Self::new()
    }
}

impl EnterWorktreeTool {
    /// The tool.
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS,
                    "description": "Name of the worktree (a folder name: letters, digits, `.`, `_`, `-`); default: a fresh name"}
            },
            "additionalProperties": false
        });
        let description = format!(
            "Creates a git worktree on a new branch under {}/<name> in the workspace and moves the session there, to work in isolation from the main checkout. \
             Refused outside a git repository and when the name is taken. Leave with ExitWorktree.",
            WORKTREE_DIRS[0]
        );
        Self {
            spec: spec(
                "EnterWorktree",
                description,
                schema,
                ToolAnnotations {
                    read_only: false,
                    destructive: false,
                    idempotent: false,
                    open_world: false,
                },
                (
                    GIT_TIMEOUT.as_millis() as u64 * 2,
                    GIT_TIMEOUT.as_millis() as u64 * 2,
                ),
            ),
        }
    }
}

#[async_trait]
impl TypedTool for EnterWorktreeTool {
    type Input = EnterInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut EnterInput, ctx: &ToolContext) -> Result<(), ToolError> {
        if let Some(name) = &input.name {
            check_name(name).map_err(ToolError::InvalidRequest)?;
        }
        if let Some(a) = active(&ctx.session) {
            return Err(ToolError::InvalidRequest(format!(
                "the session already works in the worktree `{}` ({}); leave it with ExitWorktree first",
                a.name,
                a.path.display()
            )));
        }
        Ok(())
    }

    async fn run(&self, input: EnterInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let session = &ctx.session;
        let root = session.workspace().root().to_path_buf();
        let cwd = session.cwd();
        let repo = git(&cwd, &["rev-parse", "--show-toplevel"])
            .await
            .map_err(|_| {
                ToolError::InvalidRequest(format!(
                    "{} is not inside a git repository, so there is nothing to make a worktree of",
                    cwd.display()
                ))
            })?;
        let repo = PathBuf::from(repo.trim());
        // `git worktree add` writes the branch and its administrative entry into the
        // repository's git directory: both must be inside the roots too.
        let common = git(
            &repo,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )
        .await
        .map_err(ToolError::Failed)?;
        for dir in [repo.clone(), PathBuf::from(common.trim())] {
            let real = dir.canonicalize().unwrap_or(dir);
            if !session.workspace().contains(&real) {
                return Err(ToolError::InvalidRequest(format!(
                    "the repository's {} is outside the workspace roots, and a worktree writes there; open the repository itself as the workspace (or add it with --add-dir)",
                    real.display()
                )));
            }
        }
        let name = match input.name {
            Some(n) => n,
            None => fresh_name(),
        };
        let base = root.join(WORKTREE_DIRS[0]);
        let path = base.join(&name);
        if !session.workspace().contains(&path) {
            return Err(ToolError::InvalidRequest(format!(
                "{} would be outside the workspace roots",
                path.display()
            )));
        }
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(ToolError::InvalidRequest(format!(
                "a worktree named `{name}` exists already ({}); pick another name",
                path.display()
            )));
        }
        let branch = format!("worktree-{name}");
        let ref_name = format!("refs/heads/{branch}");
        if git(&repo, &["rev-parse", "--verify", "--quiet", &ref_name])
            .await
            .is_ok()
        {
            return Err(ToolError::InvalidRequest(format!(
                "the branch `{branch}` exists already; pick another worktree name"
            )));
        }
        // The deepest folder that exists must resolve inside the roots before anything is
        // made below it (a `.claude` that is a symlink would carry the new folders out).
        let mut existing = base.clone();
        while std::fs::symlink_metadata(&existing).is_err() && existing.pop() {}
        let real_existing = existing.canonicalize().map_err(|e| {
            ToolError::Failed(format!("could not resolve {}: {e}", existing.display()))
        })?;
        if !session.workspace().contains(&real_existing) {
            return Err(ToolError::InvalidRequest(format!(
                "{} resolves to {}, outside the workspace roots",
                existing.display(),
                real_existing.display()
            )));
        }
        let made = make_dirs(&base)
            .map_err(|e| ToolError::Failed(format!("could not create {}: {e}", base.display())))?;
        // Resolved after creating it: a symlinked `.claude` must not carry the worktree out.
        let real_base = base
            .canonicalize()
            .map_err(|e| ToolError::Failed(format!("could not resolve {}: {e}", base.display())))?;
        if !session.workspace().contains(&real_base) {
            remove_made(&made);
            return Err(ToolError::InvalidRequest(format!(
                "{} resolves to {}, outside the workspace roots",
                base.display(),
                real_base.display()
            )));
        }
        let path = real_base.join(&name);
        let path_text = path.to_string_lossy().into_owned();
        let added = git(
            &repo,
            &["worktree", "add", "-b", &branch, &path_text, "HEAD"],
        )
        .await;
        if let Err(why) = added {
            undo_add(&repo, &path, &branch, &made).await;
            return Err(ToolError::Failed(format!(
                "the worktree could not be created, and nothing was left behind: {why}"
            )));
        }
        if !toolgate_tools::shell::set_cwd(session, &path) {
            undo_add(&repo, &path, &branch, &made).await;
            return Err(ToolError::Failed(format!(
                "the session could not move into {}; the worktree was removed again",
                path.display()
            )));
        }
        set_active(
            session,
            Some(Active {
                name: name.clone(),
                path: path.clone(),
                branch: branch.clone(),
                repo,
                previous_cwd: cwd,
            }),
        );
        Ok(ToolOutput::text(format!(
            "Created the worktree `{name}` at {} on the new branch `{branch}`; the session now works there. Leave it with ExitWorktree.",
            path.display()
        ))
        .with_structured(json!({"name": name, "path": path, "branch": branch})))
    }
}

/// A name nobody picked: `wt-` and six hex digits from the clock and the process.
fn fresh_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    format!("wt-{:06x}", h.finish() & 0xff_ffff)
}

/// Creates `dir` and its missing parents; returns the ones it created, deepest last.
fn make_dirs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut at = dir.to_path_buf();
    while std::fs::symlink_metadata(&at).is_err() {
        missing.push(at.clone());
        if !at.pop() {
            break;
        }
    }
    missing.reverse();
    for d in &missing {
        std::fs::create_dir(d)?;
    }
    Ok(missing)
}

/// Removes the (empty) folders [`make_dirs`] created, deepest first.
fn remove_made(made: &[PathBuf]) {
    for d in made.iter().rev() {
        // Best effort, and only empty folders: never anything someone else put there.
        let _ = std::fs::remove_dir(d);
    }
}

/// Undoes a `git worktree add` that failed or was abandoned: the directory, git's entry for
/// it, the branch, and the folders made for it.
async fn undo_add(repo: &Path, path: &Path, branch: &str, made: &[PathBuf]) {
    let path_text = path.to_string_lossy().into_owned();
    if git(repo, &["worktree", "remove", "--force", &path_text])
        .await
        .is_err()
        && path.exists()
    {
        let _ = std::fs::remove_dir_all(path);
    }
    let _ = git(repo, &["worktree", "prune"]).await;
    let _ = git(repo, &["branch", "-D", branch]).await;
    remove_made(made);
}

/// ExitWorktree's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitInput {
    /// Keep the worktree and its branch on disk (default: remove them).
    #[serde(default)]
    pub keep: bool,
}

/// The ExitWorktree tool.
pub struct ExitWorktreeTool {
    spec: ToolSpec,
}

impl Default for ExitWorktreeTool {
    fn default() -> Self {
        Self::new()
    }
}

impl ExitWorktreeTool {
    /// The tool.
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "keep": {"type": "boolean", "default": false,
                    "description": "Keep the worktree and its branch (default: remove the worktree; the branch is kept when it has commits)"}
            },
            "additionalProperties": false
        });
        let description = "Leaves the worktree EnterWorktree made and moves the session back to where it was. \
            By default removes the worktree (asking the user first when it has uncommitted changes); its branch is kept when it has commits not merged elsewhere. keep: true leaves both in place."
            .to_owned();
        Self {
            spec: spec(
                "ExitWorktree",
                description,
                schema,
                ToolAnnotations {
                    read_only: false,
                    destructive: true,
                    idempotent: false,
                    open_world: false,
                },
                (PERSON_TIMEOUT_MS, PERSON_TIMEOUT_MS),
            ),
        }
    }
}

#[async_trait]
impl TypedTool for ExitWorktreeTool {
    type Input = ExitInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, _input: &mut ExitInput, ctx: &ToolContext) -> Result<(), ToolError> {
        if active(&ctx.session).is_none() {
            return Err(ToolError::InvalidRequest(
                "the session is not in a worktree made by EnterWorktree; there is nothing to leave"
                    .into(),
            ));
        }
        Ok(())
    }

    async fn run(&self, input: ExitInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let session = &ctx.session;
        let a = active(session)
            .ok_or_else(|| ToolError::InvalidRequest("the session is not in a worktree".into()))?;
        let back = |session: &Session| {
            let to = if a.previous_cwd.is_dir() {
                a.previous_cwd.clone()
            } else {
                session.workspace().root().to_path_buf()
            };
            if !toolgate_tools::shell::set_cwd(session, &to) {
                session.set_cwd(session.workspace().root());
            }
            set_active(session, None);
            session.cwd()
        };
        if input.keep {
            let cwd = back(session);
            return Ok(ToolOutput::text(format!(
                "Left the worktree `{}`; it stays at {} on branch `{}`. The session is back in {}.",
                a.name,
                a.path.display(),
                a.branch,
                cwd.display()
            ))
            .with_structured(json!({"removed": false, "path": a.path, "branch": a.branch})));
        }
        let status = git(&a.path, &["status", "--porcelain"])
            .await
            .map_err(ToolError::Failed)?;
        if !status.trim().is_empty() {
            confirm_discard(&ctx, &a, &status).await?;
        }
        let path_text = a.path.to_string_lossy().into_owned();
        // Out of the directory first: it is about to disappear.
        let cwd = back(session);
        if let Err(why) = git(&a.repo, &["worktree", "remove", "--force", &path_text]).await {
            set_active(session, Some(a.clone()));
            return Err(ToolError::Failed(format!(
                "the worktree could not be removed ({why}); the session is back in {}",
                cwd.display()
            )));
        }
        let branch_note = match git(&a.repo, &["branch", "-d", &a.branch]).await {
            Ok(_) => format!("its branch `{}` had nothing new and was deleted", a.branch),
            Err(_) => format!(
                "its branch `{}` has commits not merged elsewhere and was kept",
                a.branch
            ),
        };
        Ok(ToolOutput::text(format!(
            "Removed the worktree `{}` ({branch_note}). The session is back in {}.",
            a.name,
            cwd.display()
        ))
        .with_structured(json!({"removed": true, "path": a.path, "branch": a.branch})))
    }
}

/// Asks before removing a worktree with uncommitted changes; `Ok` to go ahead.
async fn confirm_discard(ctx: &ToolContext, a: &Active, status: &str) -> Result<(), ToolError> {
    let mut shown: String = status.chars().take(MAX_STATUS_SHOWN).collect();
    if shown.len() < status.len() {
        shown.push_str("\n…");
    }
    let remove = "Remove and discard them";
    let form = QuestionForm {
        title: "The agent wants to remove a worktree with uncommitted changes".into(),
        questions: vec![Question {
            question: format!(
                "The worktree `{}` ({}) has uncommitted changes:\n{}\nRemove it and discard them?",
                a.name,
                a.path.display(),
                shown.trim_end()
            ),
            header: "Worktree".into(),
            options: vec![
                QuestionOption {
                    label: remove.into(),
                    description: "the changes are lost".into(),
                },
                QuestionOption {
                    label: "Keep the worktree".into(),
                    description: "nothing is removed".into(),
                },
            ],
            multi_select: false,
        }],
    };
    match ctx.gate.ask_user(&form).await {
        Ok(answers)
            if answers
                .first()
                .is_some_and(|x| x.selected.iter().any(|l| l == remove)) =>
        {
            Ok(())
        }
        Ok(_) => Err(ToolError::Denied(format!(
            "The user chose to keep the worktree `{}` with its changes; nothing was removed. Commit the changes, or leave with keep: true.",
            a.name
        ))),
        Err(Unanswered::NoUser(why)) => Err(ToolError::Failed(format!(
            "The worktree `{}` has uncommitted changes and no user is available to approve discarding them ({why}); nothing was removed. Commit them, or leave with keep: true.",
            a.name
        ))),
        Err(other) => Err(unanswered(other, "approve discarding the changes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_folder() {
        for ok in ["fix-login", "a", "v1.2_rc", "X9"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "../x",
            "..",
            "a/b",
            "/abs",
            "a\\b",
            ".hidden",
            "-x",
            "a..b",
            "x.lock",
            "sp ace",
            "nul\0",
            &"n".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
