//! Prompters: who answers an `ask`. A terminal ([`TerminalPrompter`]), nobody
//! ([`DenyAllPrompter`], for CI and `dontAsk`), an embedding UI over JSON lines
//! ([`JsonLinesPrompter`]), or auto mode's classifier ([`crate::AutoReviewer`]).
//!
//! Every answer is a [`Verdict`] with layer `user`. "Allow always" saves the rules
//! [`crate::Engine::suggest`] proposes — exact, one per subcommand, never broader than what
//! was approved — to `.toolgate/settings.local.json` (file edits: this session only).

mod channel;
mod jsonl;
pub mod questions;
mod terminal;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use toolgate_core::asking::{QuestionAnswer, QuestionForm, SampleError, SampleRequest, Unanswered};
use toolgate_protocol::{Decision, Layer, Verdict};

pub use jsonl::{
    DEFAULT_PROMPT_TIMEOUT, JsonLinesPrompter, JsonLinesSource, LazyJsonLinesPrompter,
};
pub use terminal::TerminalPrompter;

use crate::engine::{Engine, PolicyRequest};
use crate::view::{Family, family};

/// Answers an ask verdict. Core's `Prompter` adapts onto this one-to-one.
#[async_trait]
pub trait PolicyPrompter: Send + Sync {
    /// The user's (or a stand-in's) verdict: allow or deny. A prompter whose front door
    /// collects the answer out of band (MCP `input_required`: the call ends, and is retried
    /// with the answer) returns [`Verdict::awaiting_input`], which the gate records as
    /// waiting and does not run. Wrappers ([`crate::AutoReviewer`]) pass it through as they
    /// pass any answer.
    async fn ask(&self, req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict;

    /// Puts questions to the user (AskUserQuestion, plan approval): one answer per question.
    /// Default: nobody can be asked. Never answered by a stand-in (auto mode's classifier
    /// passes questions on to the prompter it wraps).
    async fn ask_user(&self, _form: &QuestionForm) -> Result<Vec<QuestionAnswer>, Unanswered> {
        Err(Unanswered::NoUser(NOBODY.into()))
    }

    /// One model turn from the front door's client (MCP sampling). Default: not offered.
    async fn sample(&self, _request: &SampleRequest) -> Result<serde_json::Value, SampleError> {
        Err(SampleError::Unsupported)
    }
}

/// Why nobody answers: no terminal, prompt UI or MCP client that can be asked.
pub const NOBODY: &str =
    "no terminal, prompt UI (--prompt-command, --prompt-fds) or MCP client that can be asked";

#[async_trait]
impl<P: PolicyPrompter + ?Sized> PolicyPrompter for Arc<P> {
    async fn ask(&self, req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict {
        (**self).ask(req, verdict).await
    }

    async fn ask_user(&self, form: &QuestionForm) -> Result<Vec<QuestionAnswer>, Unanswered> {
        (**self).ask_user(form).await
    }

    async fn sample(&self, request: &SampleRequest) -> Result<serde_json::Value, SampleError> {
        (**self).sample(request).await
    }
}

/// Denies every ask: the right answer with nobody to ask (CI, pipes, `dontAsk`).
#[derive(Debug, Default, Clone, Copy)]
pub struct DenyAllPrompter;

#[async_trait]
impl PolicyPrompter for DenyAllPrompter {
    async fn ask(&self, _req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict {
        let mut v = Verdict::new(
            Decision::Deny,
            Layer::User,
            format!(
                "this call needs approval ({}) and nobody can be asked in this session; ask the user to allow it in the settings, or do something else",
                verdict.reason
            ),
        );
        v.rule = verdict.rule.clone();
        v.source = verdict.source.clone();
        v
    }
}

/// What a person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run it this once.
    AllowOnce,
    /// Run it and save the proposed rules.
    AllowAlways,
    /// Do not run it; the optional message goes to the model.
    Deny(Option<String>),
}

/// What a prompter shows: the proposed "allow always" rules, or why there are none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The rules "allow always" would save, or why it is not offered.
    pub rules: Result<Vec<String>, String>,
    /// Whether they are written to `.toolgate/settings.local.json` (false: this session
    /// only, as for file edits).
    pub persist: bool,
    /// Whether the workspace is not trusted, so that a saved rule applies in this session
    /// but in later ones only after `toolgate trust`.
    pub waits_for_trust: bool,
    /// The file the rules are saved to (`None`: nowhere, this session only).
    pub file: Option<PathBuf>,
}

impl Offer {
    /// The offer for this call.
    pub fn for_call(engine: &Engine, req: &PolicyRequest<'_>) -> Self {
        let persist = !matches!(family(req.tool, req.subject), Family::Read | Family::Write);
        Offer {
            rules: engine.suggest(req),
            persist,
            waits_for_trust: persist && engine.approvals_wait_for_trust(),
            file: engine.approvals_file().map(Path::to_path_buf),
        }
    }

    /// Where "allow always" puts the rules, in words for a prompt ("saves RULES …"): the
    /// file, and whether they wait for trust.
    pub fn where_saved(&self) -> String {
        let file = match (&self.file, self.persist) {
            (Some(file), true) => file,
            _ => return "for this session".into(),
        };
        if self.waits_for_trust {
            format!(
                "to {}; this workspace is not trusted, so later sessions apply it only after \
                 `toolgate trust`",
                file.display()
            )
        } else if file.ends_with(PROJECT_APPROVALS) {
            format!("to {PROJECT_APPROVALS}")
        } else {
            format!(
                "to your own settings for this project ({}), which need no trust",
                file.display()
            )
        }
    }
}

/// The project file "allow always" writes in a trusted project.
const PROJECT_APPROVALS: &str = ".toolgate/settings.local.json";

/// Turns an answer into a verdict, saving rules for "allow always".
pub fn resolve(engine: &Arc<Engine>, offer: &Offer, answer: Answer, verdict: &Verdict) -> Verdict {
    match answer {
        Answer::AllowOnce => {
            Verdict::new(Decision::Allow, Layer::User, "approved once by the user")
        }
        Answer::AllowAlways => match &offer.rules {
            Ok(rules) => match engine.remember(rules, offer.persist) {
                Ok(()) => {
                    let where_ = offer.where_saved();
                    let mut v = Verdict::new(
                        Decision::Allow,
                        Layer::User,
                        format!("approved by the user; {} saved {where_}", rules.join(", ")),
                    );
                    v.rule = rules.first().cloned();
                    v.source = Some("user approval".into());
                    v
                }
                Err(e) => Verdict::new(
                    Decision::Allow,
                    Layer::User,
                    format!("approved once by the user (the rule could not be saved: {e})"),
                ),
            },
            Err(why) => Verdict::new(
                Decision::Allow,
                Layer::User,
                format!("approved once by the user ({why})"),
            ),
        },
        Answer::Deny(msg) => {
            let mut v = Verdict::new(
                Decision::Deny,
                Layer::User,
                match msg {
                    Some(m) if !m.trim().is_empty() => format!("the user declined: {m}"),
                    _ => "the user declined this call; do not retry it in another form, ask what to do instead".into(),
                },
            );
            v.rule = verdict.rule.clone();
            v.source = verdict.source.clone();
            v
        }
    }
}

/// A one-line summary of the call for a prompt: the command, path or URL.
pub(crate) fn summary(req: &PolicyRequest<'_>) -> String {
    let s = req
        .subject
        .extract(req.input)
        .map(str::to_owned)
        .unwrap_or_else(|| serde_json::to_string(req.input).unwrap_or_default());
    const MAX: usize = 2_000;
    if s.len() > MAX {
        let mut end = MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… ({} bytes)", &s[..end], s.len())
    } else {
        s
    }
}
