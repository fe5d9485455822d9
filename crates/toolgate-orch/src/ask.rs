//! AskUserQuestion: multiple-choice questions for the user, through the session's prompter.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolgate_core::asking::{Question, QuestionAnswer, QuestionForm, Unanswered};
use toolgate_core::{ToolContext, ToolError, TypedTool};
use toolgate_protocol::{ToolAnnotations, ToolOutput, ToolSpec};

use crate::{PERSON_TIMEOUT_MS, spec};

/// Most questions in one call (Claude Code's limit): more is a questionnaire, not a
/// question.
pub const MAX_QUESTIONS: usize = 4;
/// Fewest and most options per question (Claude Code's limits).
pub const OPTIONS_RANGE: (usize, usize) = (2, 4);
/// Longest header (a chip's worth of text).
pub const MAX_HEADER_CHARS: usize = 12;

/// AskUserQuestion's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskInput {
    /// The questions.
    pub questions: Vec<Question>,
}

/// The AskUserQuestion tool.
pub struct AskUserQuestionTool {
    spec: ToolSpec,
}

impl Default for AskUserQuestionTool {
    fn default() -> Self {
        Self::new()
    }
}

impl AskUserQuestionTool {
    /// The tool.
    pub fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_QUESTIONS,
                    "description": "Questions to ask the user (1-4 questions)",
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string", "minLength": 1, "description": "The complete question, ending with a question mark"},
                            "header": {"type": "string", "maxLength": MAX_HEADER_CHARS, "description": "Very short label shown as a chip (max 12 chars)"},
                            "options": {
                                "type": "array",
                                "minItems": OPTIONS_RANGE.0,
                                "maxItems": OPTIONS_RANGE.1,
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {"type": "string", "minLength": 1, "description": "The choice (1-5 words)"},
                                        "description": {"type": "string", "description": "What this choice means"}
                                    },
                                    "required": ["label", "description"],
                                    "additionalProperties": false
                                }
                            },
                            "multiSelect": {"type": "boolean", "default": false, "description": "Allow several choices"}
                        },
                        "required": ["question", "header", "options", "multiSelect"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["questions"],
            "additionalProperties": false
        });
        let description = "Asks the user multiple-choice questions and waits for the answers: to clarify what they want, to choose between approaches, to settle a preference. The user may also write their own answer. \
            The question goes to the session's user (terminal, prompt UI or MCP client); when nobody can be asked the result says so — then decide with what you know and say which assumption you made. Sub-agents cannot ask."
            .to_owned();
        Self {
            spec: spec(
                "AskUserQuestion",
                description,
                schema,
                ToolAnnotations {
                    read_only: true,
                    destructive: false,
                    idempotent: false,
                    open_world: false,
                },
                (PERSON_TIMEOUT_MS, PERSON_TIMEOUT_MS),
            ),
        }
    }
}

#[async_trait]
impl TypedTool for AskUserQuestionTool {
    type Input = AskInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, input: &mut AskInput, _ctx: &ToolContext) -> Result<(), ToolError> {
        for (i, q) in input.questions.iter().enumerate() {
            if input.questions[..i]
                .iter()
                .any(|p| p.question == q.question)
            {
                return Err(ToolError::InvalidRequest(format!(
                    "the question \"{}\" is asked twice; ask each question once",
                    q.question
                )));
            }
            for (j, o) in q.options.iter().enumerate() {
                if q.options[..j].iter().any(|p| p.label == o.label) {
                    return Err(ToolError::InvalidRequest(format!(
                        "\"{}\" offers the option `{}` twice; give each option a distinct label",
                        q.question, o.label
                    )));
                }
            }
        }
        Ok(())
    }

    async fn run(&self, input: AskInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let form = QuestionForm {
            title: "The agent asks".into(),
            questions: input.questions,
        };
        let answers = ctx
            .gate
            .ask_user(&form)
            .await
            .map_err(|e| unanswered(e, "answer the questions"))?;
        let mut text = String::from("The user answered your questions: ");
        let mut by_question = Map::new();
        for (i, a) in answers.iter().enumerate() {
            if i > 0 {
                text.push_str(", ");
            }
            let shown = shown(a);
            text.push_str(&format!("\"{}\"=\"{shown}\"", a.question));
            by_question.insert(a.question.clone(), json!(shown));
        }
        text.push_str(". Continue with these answers in mind.");
        Ok(ToolOutput::text(text).with_structured(json!({
            "answers": Value::Object(by_question),
            "details": answers,
        })))
    }
}

/// An answer as one string: the labels picked, or the user's own words.
pub(crate) fn shown(a: &QuestionAnswer) -> String {
    match &a.other {
        Some(o) if a.selected.is_empty() => o.clone(),
        Some(o) => format!("{} ({o})", a.selected.join(", ")),
        None => a.selected.join(", "),
    }
}

/// The tool error for questions left unanswered; `what` is what the user was to do.
pub(crate) fn unanswered(e: Unanswered, what: &str) -> ToolError {
    match e {
        Unanswered::NoUser(why) => ToolError::Failed(format!(
            "No user is available to {what} in this session ({why}). Nobody answered: do not assume an answer was given. Decide with what you know and state the assumption you made, or stop and report what you needed to ask."
        )),
        Unanswered::Declined => ToolError::Declined(format!(
            "The user declined to {what}. Do not ask the same again; continue without it or ask what they want instead."
        )),
        Unanswered::Dismissed => ToolError::Declined(format!(
            "The user dismissed the question without choosing (they did not {what}). Do not assume an answer."
        )),
        Unanswered::Awaiting => ToolError::InputRequired(
            "waiting for the user's answer, asked through the client".into(),
        ),
        Unanswered::Failed(why) => ToolError::Failed(format!(
            "The question could not be put to the user ({why}); nobody answered."
        )),
    }
}
