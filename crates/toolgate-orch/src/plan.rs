//! ExitPlanMode and EnterPlanMode: the model proposes a change of the session's mode, the
//! user decides through the prompter, and the gate records the change on the call.
//!
//! Leaving plan mode never widens past where the session stood: a session that entered
//! plan mode from another mode (EnterPlanMode) may go back at most to that mode; one that
//! started in plan mode may go to `default` or `acceptEdits`, as the user picks. A refusal,
//! a dismissed question or nobody to ask keeps plan mode. Entering plan mode only narrows,
//! so with nobody to ask it happens anyway (and the result says so).

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use toolgate_core::asking::{Question, QuestionForm, QuestionOption, Unanswered};
use toolgate_core::{Session, ToolContext, ToolError, TypedTool};
use toolgate_protocol::{PermissionMode, ToolAnnotations, ToolOutput, ToolSpec};

use crate::ask::unanswered;
use crate::{PERSON_TIMEOUT_MS, spec};

/// Longest plan accepted: it is shown to a person in one question.
pub const MAX_PLAN_CHARS: usize = 20_000;

/// The mode a session was in before EnterPlanMode moved it to plan mode.
#[derive(Default)]
struct PlanState {
    before: Mutex<Option<PermissionMode>>,
}

fn state(session: &Session) -> std::sync::Arc<PlanState> {
    session.extensions.get_or_init(PlanState::default)
}

const NO_CHANGES: ToolAnnotations = ToolAnnotations {
    read_only: true,
    destructive: false,
    idempotent: false,
    open_world: false,
};

/// ExitPlanMode's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitPlanInput {
    /// The plan, in Markdown.
    pub plan: String,
}

/// The ExitPlanMode tool.
pub struct ExitPlanModeTool {
    spec: ToolSpec,
}

impl Default for ExitPlanModeTool {
    fn default() -> Self {
        Self::new()
    }
}

impl ExitPlanModeTool {
    /// The tool.
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "plan": {"type": "string", "minLength": 1, "maxLength": MAX_PLAN_CHARS,
                    "description": "The plan you came up with, that you want to run by the user for approval (Markdown, concise)"}
            },
            "required": ["plan"],
            "additionalProperties": false
        });
        let description = "Use in plan mode when you have finished planning and are ready to implement: presents the plan to the user for approval. \
            If they approve, the session leaves plan mode (into the mode they pick) and you may start; if not, you stay in plan mode and get their feedback. \
            Only for plans of work that changes things, not for research."
            .to_owned();
        Self {
            spec: spec(
                "ExitPlanMode",
                description,
                schema,
                NO_CHANGES,
                (PERSON_TIMEOUT_MS, PERSON_TIMEOUT_MS),
            ),
        }
    }
}

/// The modes a plan's approval may switch to, widest first: never past `ceiling`.
fn exit_modes(ceiling: Option<PermissionMode>) -> Vec<(PermissionMode, &'static str)> {
    let ceiling = ceiling.unwrap_or(PermissionMode::AcceptEdits);
    let mut out: Vec<(PermissionMode, &'static str)> = Vec::new();
    for (mode, label) in [
        (PermissionMode::AcceptEdits, "Yes, auto-accept edits"),
        (PermissionMode::Default, "Yes, approve each edit"),
    ] {
        let m = mode.at_most(ceiling);
        if m != PermissionMode::Plan && !out.iter().any(|(o, _)| *o == m) {
            let label = if m == mode {
                label
            } else {
                "Yes, back to the previous mode"
            };
            out.push((m, label));
        }
    }
    out
}

const KEEP_PLANNING: &str = "No, keep planning";

#[async_trait]
impl TypedTool for ExitPlanModeTool {
    type Input = ExitPlanInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, _input: &mut ExitPlanInput, ctx: &ToolContext) -> Result<(), ToolError> {
        let mode = ctx.session.mode();
        if mode != PermissionMode::Plan {
            return Err(ToolError::InvalidRequest(format!(
                "the session is in {mode} mode, not plan mode: there is no plan mode to leave; go ahead with the work"
            )));
        }
        Ok(())
    }

    async fn run(&self, input: ExitPlanInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let before = *state(&ctx.session)
            .before
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let modes = exit_modes(before);
        let mut options: Vec<QuestionOption> = modes
            .iter()
            .map(|(m, label)| QuestionOption {
                label: (*label).to_owned(),
                description: format!("leave plan mode for {m} mode and start"),
            })
            .collect();
        options.push(QuestionOption {
            label: KEEP_PLANNING.into(),
            description: "stay in plan mode; write what to change as your own answer".into(),
        });
        let form = QuestionForm {
            title: "The agent's plan needs your approval".into(),
            questions: vec![Question {
                question: format!("{}\n\nApprove this plan?", input.plan.trim()),
                header: "Plan".into(),
                options,
                multi_select: false,
            }],
        };
        let answer = ctx
            .gate
            .ask_user(&form)
            .await
            .map_err(|e| match e {
                Unanswered::NoUser(why) => ToolError::Failed(format!(
                    "No user is available to approve the plan ({why}); the session stays in plan mode. Do not start the work: report the plan instead."
                )),
                other => unanswered(other, "approve the plan"),
            })?
            .into_iter()
            .next()
            .ok_or_else(|| ToolError::Failed("the approval came back without an answer".into()))?;
        let picked = answer
            .selected
            .first()
            .and_then(|l| modes.iter().find(|(_, label)| label == l));
        let Some((mode, _)) = picked else {
            let feedback = answer
                .other
                .map(|o| format!(" Their feedback: {o}"))
                .unwrap_or_default();
            return Err(ToolError::Declined(format!(
                "The user did not approve the plan; the session stays in plan mode.{feedback} Revise the plan and present it again."
            )));
        };
        ctx.session.set_mode(*mode);
        *state(&ctx.session)
            .before
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        let note = answer
            .other
            .map(|o| format!(" Their note: {o}"))
            .unwrap_or_default();
        Ok(ToolOutput::text(format!(
            "The user approved your plan; the session is now in {mode} mode. You can start.{note}"
        ))
        .with_structured(json!({"approved": true, "mode": mode})))
    }
}

/// EnterPlanMode's input (none).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnterPlanInput {}

/// The EnterPlanMode tool.
pub struct EnterPlanModeTool {
    spec: ToolSpec,
}

impl Default for EnterPlanModeTool {
    fn default() -> Self {
        Self::new()
    }
}

impl EnterPlanModeTool {
    /// The tool.
    pub fn new() -> Self {
        let schema = json!({"type": "object", "properties": {}, "additionalProperties": false});
        let description = "Asks to switch the session to plan mode before a non-trivial change: in plan mode you explore read-only and then present a plan with ExitPlanMode. \
            The user is asked; with nobody to ask the session enters plan mode anyway (it only narrows what you may do)."
            .to_owned();
        Self {
            spec: spec(
                "EnterPlanMode",
                description,
                schema,
                NO_CHANGES,
                (PERSON_TIMEOUT_MS, PERSON_TIMEOUT_MS),
            ),
        }
    }
}

#[async_trait]
impl TypedTool for EnterPlanModeTool {
    type Input = EnterPlanInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, _input: &mut EnterPlanInput, ctx: &ToolContext) -> Result<(), ToolError> {
        if ctx.session.mode() == PermissionMode::Plan {
            return Err(ToolError::InvalidRequest(
                "the session is already in plan mode; present your plan with ExitPlanMode when it is ready".into(),
            ));
        }
        Ok(())
    }

    async fn run(&self, _input: EnterPlanInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let form = QuestionForm {
            title: "The agent asks to enter plan mode".into(),
            questions: vec![Question {
                question: "Switch to plan mode? The agent will explore read-only and present a plan before changing anything.".into(),
                header: "Plan mode".into(),
                options: vec![
                    QuestionOption {
                        label: "Yes, plan first".into(),
                        description: "enter plan mode".into(),
                    },
                    QuestionOption {
                        label: "No".into(),
                        description: "stay in the current mode".into(),
                    },
                ],
                multi_select: false,
            }],
        };
        let note = match ctx.gate.ask_user(&form).await {
            Ok(answers) => {
                let yes = answers
                    .first()
                    .is_some_and(|a| a.selected.iter().any(|l| l == "Yes, plan first"));
                if !yes {
                    return Err(ToolError::Declined(
                        "The user declined plan mode; continue in the current mode.".into(),
                    ));
                }
                "The user agreed"
            }
            Err(Unanswered::NoUser(_)) => {
                "No user is available to ask; plan mode only narrows what you may do, so it was entered"
            }
            Err(other) => return Err(unanswered(other, "decide on plan mode")),
        };
        let previous = ctx.session.set_mode(PermissionMode::Plan);
        *state(&ctx.session)
            .before
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(previous);
        Ok(ToolOutput::text(format!(
            "{note}: the session is now in plan mode (it was in {previous} mode). Explore read-only, then present your plan with ExitPlanMode."
        ))
        .with_structured(json!({"mode": "plan", "previous": previous})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaving_plan_mode_never_passes_where_the_session_stood() {
        let all = |c| {
            exit_modes(c)
                .into_iter()
                .map(|(m, _)| m)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            all(None),
            vec![PermissionMode::AcceptEdits, PermissionMode::Default]
        );
        assert_eq!(
            all(Some(PermissionMode::Default)),
            vec![PermissionMode::Default]
        );
        assert_eq!(
            all(Some(PermissionMode::DontAsk)),
            vec![PermissionMode::DontAsk]
        );
        assert_eq!(
            all(Some(PermissionMode::BypassPermissions)),
            vec![PermissionMode::AcceptEdits, PermissionMode::Default]
        );
    }
}
