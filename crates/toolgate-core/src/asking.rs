//! What a tool can ask of whoever is behind the session, through the session's
//! [`Prompter`](crate::stages::Prompter): questions for the user (AskUserQuestion, plan
//! approval, removing a worktree with changes) and, where the front door's client offers it,
//! a model turn (MCP sampling, for sub-agents).
//!
//! The prompter that answers permission asks answers these too, so a question goes where
//! approvals go — the terminal, the JSON-lines prompt channel, the MCP client's elicitation —
//! and with nobody there the answer is [`Unanswered::NoUser`], never an invented choice.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

/// One choice of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// What the user picks (1–5 words).
    pub label: String,
    /// What the choice means.
    #[serde(default)]
    pub description: String,
}

/// One multiple-choice question (Claude Code's AskUserQuestion shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The question, ending with `?`.
    pub question: String,
    /// A short tag shown with it (`Auth method`).
    #[serde(default)]
    pub header: String,
    /// The choices.
    pub options: Vec<QuestionOption>,
    /// Whether several choices may be picked.
    #[serde(default)]
    pub multi_select: bool,
}

/// Questions shown together, with a title saying who asks and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionForm {
    /// One line saying who asks (`The agent asks`, `The agent's plan needs approval`).
    pub title: String,
    /// The questions, in order.
    pub questions: Vec<Question>,
}

/// The user's answer to one question: the labels picked, and free text when they chose
/// none of the options and wrote their own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionAnswer {
    /// The question answered.
    pub question: String,
    /// The labels picked (exactly the options' labels).
    pub selected: Vec<String>,
    /// The user's own answer, when they wrote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<String>,
}

/// Why questions got no answer. Each says so to the model; none is an answer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Unanswered {
    /// Nobody can be asked in this session (no terminal, no prompt UI, an MCP client
    /// without elicitation, a sub-agent).
    #[error("no user is available to answer in this session ({0})")]
    NoUser(String),
    /// The user declined to answer.
    #[error("the user declined to answer")]
    Declined,
    /// The user closed the question without answering.
    #[error("the user dismissed the question without answering")]
    Dismissed,
    /// The front door handed the question to the client and the call ends now; the
    /// client's retry brings the answer (MCP `input_required`).
    #[error("waiting for the user's answer")]
    Awaiting,
    /// Asking failed (a broken channel, a timeout, an answer that was not one of the
    /// choices).
    #[error("the question could not be asked: {0}")]
    Failed(String),
}

/// Why a model turn could not be had from the front door's client.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SampleError {
    /// The client offers no sampling (or this front door has no client).
    #[error("the client offers no model sampling")]
    Unsupported,
    /// The client refused or failed the request.
    #[error("the client's model sampling failed: {0}")]
    Failed(String),
}

/// A model turn asked of the client: MCP `sampling/createMessage` params as JSON
/// (`messages`, `systemPrompt`, `maxTokens`, `tools`), answered with its result as JSON
/// (`role`, `content`, `model`, `stopReason`). JSON keeps this crate free of any MCP
/// library; the MCP front door converts.
pub type SampleRequest = Value;
