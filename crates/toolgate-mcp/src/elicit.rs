//! "Ask" decisions as MCP elicitation: the connected client's user answers allow once /
//! allow always / deny in the client's own UI.
//!
//! The gate's prompter is shared by every connection of a server, but the client to ask is
//! the one whose call is being decided. So the handler puts what the calling request allows
//! in a task-local ([`with_asker`]) around the gate call, and [`ElicitingPrompter`] acts on
//! it:
//!
//! - up to 2025-11-25, a client that declared form elicitation is sent an
//!   `elicitation/create` request and the call waits for the answer;
//! - on 2026-07-28, which forbids server-to-client requests, the same question is handed
//!   back to the handler and the call ends unrun ([`Verdict::awaiting_input`]); the handler
//!   returns it as an `input_required` result (see [`crate::mrtr`]), and the client's retry
//!   brings the answer, which the prompter then applies exactly as a legacy answer;
//! - otherwise the configured prompter answers.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, ProtocolVersion,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext, ServiceError};
use serde_json::{Value, json};
use toolgate_core::asking::{QuestionAnswer, QuestionForm, SampleError, SampleRequest, Unanswered};
use toolgate_policy::prompt::{Answer, Offer, resolve};
use toolgate_policy::{Engine, PolicyPrompter, PolicyRequest};
use toolgate_protocol::{Decision, Layer, Verdict};

use crate::mrtr::{APPROVAL_STATE_TTL, digest};

/// How long the client's user has to answer an approval request. Long enough for a person
/// who stepped away briefly; a call must not hang forever on an abandoned dialog.
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest call summary put in an approval message; the rest is elided.
const MAX_SUMMARY_CHARS: usize = 2_000;

tokio::task_local! {
    /// How the call in progress may ask its client.
    static ASKER: Asker;
    /// The calling client on a legacy-era request, which may be sent server-to-client
    /// requests (sampling for sub-agents) whether or not it can be asked questions.
    static CLIENT: Option<Peer<RoleServer>>;
}

/// How a request's client can be asked.
#[derive(Clone)]
pub(crate) enum Asker {
    /// It cannot: the configured prompter answers.
    Nobody,
    /// A legacy-era client that declared form elicitation: send it `elicitation/create`.
    Request(Peer<RoleServer>),
    /// A 2026-07-28 request: hand the question back as `input_required`, or apply the
    /// answer its retry brought.
    Mrtr(Arc<Round>),
}

/// One 2026-07-28 request's exchange with the prompter.
#[derive(Debug, Default)]
pub(crate) struct Round {
    /// Whether the client declared form elicitation, so a question may be sent.
    can_ask: bool,
    /// The verified answer the retry carries, taken by the first ask.
    answer: Mutex<Option<Answered>>,
    /// The question handed back, for the handler to send.
    question: Mutex<Option<Question>>,
}

/// An answer from a retry whose `requestState` verified.
#[derive(Debug)]
pub(crate) struct Answered {
    /// The digest of the question the state was issued for.
    pub question: String,
    /// What the client's user answered.
    pub result: ElicitResult,
}

/// A question for the client's user.
#[derive(Debug)]
pub(crate) struct Question {
    /// What the user is shown.
    pub params: ElicitRequestParams,
    /// [`digest`] of the question and the input it is about; sealed into the state.
    pub digest: String,
    /// How long the answer may take.
    pub ttl: Duration,
}

impl Round {
    pub(crate) fn new(can_ask: bool, answer: Option<Answered>) -> Self {
        Self {
            can_ask,
            answer: Mutex::new(answer),
            question: Mutex::default(),
        }
    }

    /// Whether a question may be sent to this request's client.
    pub(crate) fn can_ask(&self) -> bool {
        self.can_ask
    }

    /// The question the prompter handed back, if it did.
    pub(crate) fn take_question(&self) -> Option<Question> {
        self.question
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn take_answer(&self) -> Option<Answered> {
        self.answer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn put_question(&self, question: Question) {
        *self.question.lock().unwrap_or_else(PoisonError::into_inner) = Some(question);
    }
}

/// Runs `call` with `asker` reachable by [`ElicitingPrompter`].
/// `client` is the calling client when server-to-client requests to it are allowed
/// (legacy eras), for sampling.
pub(crate) async fn with_asker<F: Future>(
    asker: Asker,
    client: Option<Peer<RoleServer>>,
    call: F,
) -> F::Output {
    CLIENT.scope(client, ASKER.scope(asker, call)).await
}

/// Whether the request's client declared form elicitation: in its `initialize` (legacy) or
/// in the request's `_meta` client capabilities (2026-07-28). An empty `elicitation`
/// object means form mode, as the spec says.
pub(crate) fn declares_form_elicitation(context: &RequestContext<RoleServer>) -> bool {
    if is_modern(context) {
        return context
            .client_capabilities()
            .and_then(|caps| caps.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
    }
    context
        .peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
}

/// Whether the request is on the 2026-07-28 protocol (or later), where the server may not
/// send requests to the client.
pub(crate) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// Answers asks by MCP elicitation when the calling client supports it, else by `fallback`
/// (the configured prompter: a JSON-lines UI, or deny-with-reason).
///
/// "Allow always" saves the same rules the terminal prompter would (see
/// [`toolgate_policy::approvals`]).
pub struct ElicitingPrompter {
    engine: Arc<Engine>,
    fallback: Arc<dyn PolicyPrompter>,
    timeout: Duration,
    state_ttl: Duration,
}

impl ElicitingPrompter {
    /// Asks clients through elicitation, saving "allow always" rules in `engine`; clients
    /// that cannot be asked get `fallback`'s answer.
    pub fn new(engine: Arc<Engine>, fallback: Arc<dyn PolicyPrompter>) -> Self {
        Self {
            engine,
            fallback,
            timeout: ELICITATION_TIMEOUT,
            state_ttl: APPROVAL_STATE_TTL,
        }
    }

    /// How long to wait for the user's answer to an `elicitation/create` request (legacy
    /// protocol; default [`ELICITATION_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long a 2026-07-28 client has to retry with the answer to an `input_required`
    /// question before its `requestState` expires (default
    /// [`APPROVAL_STATE_TTL`](crate::APPROVAL_STATE_TTL)).
    pub fn with_state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// The verdict for the user's answer: the form's choice when accepted; a refusal when
    /// declined or dismissed.
    fn verdict_for(&self, result: &ElicitResult, offer: &Offer, verdict: &Verdict) -> Verdict {
        match result.action {
            ElicitationAction::Accept => {
                resolve(&self.engine, offer, answer(result.content.as_ref()), verdict)
            }
            ElicitationAction::Decline => resolve(&self.engine, offer, Answer::Deny(None), verdict),
            _ => denied(
                verdict,
                "the user dismissed the approval request without allowing the call; do not retry it unchanged, ask the user what to do".into(),
            ),
        }
    }

    /// The legacy path: ask with `elicitation/create` and wait.
    async fn ask_by_request(
        &self,
        peer: &Peer<RoleServer>,
        params: ElicitRequestParams,
        offer: &Offer,
        verdict: &Verdict,
        tool: &str,
    ) -> Verdict {
        tracing::info!(tool, "asking the MCP client to approve a call");
        match peer
            .create_elicitation_with_timeout(params, Some(self.timeout))
            .await
        {
            Ok(result) => self.verdict_for(&result, offer, verdict),
            Err(ServiceError::Timeout { timeout }) => denied(
                verdict,
                format!(
                    "nobody answered the approval request within {}s; ask the user to allow it, or do something else",
                    timeout.as_secs()
                ),
            ),
            Err(e) => denied(
                verdict,
                format!(
                    "the approval request to the MCP client failed ({e}); nobody allowed the call"
                ),
            ),
        }
    }

    /// The 2026-07-28 path: apply the answer the retry brought if it answers this very
    /// question, else hand the question back for an `input_required` result.
    async fn ask_by_round(
        &self,
        round: &Round,
        req: &PolicyRequest<'_>,
        params: ElicitRequestParams,
        offer: &Offer,
        verdict: &Verdict,
    ) -> Verdict {
        let question = question_digest(req, &params);
        if let Some(answered) = round.take_answer() {
            if answered.question == question {
                tracing::info!(
                    tool = req.tool,
                    "the MCP client answered the approval question"
                );
                return self.verdict_for(&answered.result, offer, verdict);
            }
            // The policy, the settings or a hook changed what would be asked since: the
            // answer was given to another question, so it is asked again.
            tracing::info!(
                tool = req.tool,
                "the approval question changed; asking again"
            );
        }
        if !round.can_ask {
            return self.fallback.ask(req, verdict).await;
        }
        tracing::info!(
            tool = req.tool,
            "returning the approval question as input_required"
        );
        round.put_question(Question {
            params,
            digest: question,
            ttl: self.state_ttl,
        });
        Verdict::awaiting_input(
            verdict,
            format!(
                "waiting for the user's answer, asked through the MCP client: {}",
                verdict.reason
            ),
        )
    }
}

#[async_trait]
impl PolicyPrompter for ElicitingPrompter {
    async fn ask(&self, req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict {
        let asker = ASKER.try_with(Clone::clone).unwrap_or(Asker::Nobody);
        if matches!(asker, Asker::Nobody) {
            return self.fallback.ask(req, verdict).await;
        }
        let offer = Offer::for_call(&self.engine, req);
        let schema = match ElicitationSchema::from_json_schema(schema(&offer)) {
            Ok(s) => s,
            // The schema is built here from constants; failing to convert it is a bug, and
            // the safe answer to a question that cannot be asked is no.
            Err(e) => return denied(verdict, format!("the approval form is invalid ({e})")),
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message(req, verdict, &offer),
            requested_schema: schema,
        };
        match asker {
            Asker::Request(peer) => {
                self.ask_by_request(&peer, params, &offer, verdict, req.tool)
                    .await
            }
            Asker::Mrtr(round) => {
                self.ask_by_round(&round, req, params, &offer, verdict)
                    .await
            }
            Asker::Nobody => self.fallback.ask(req, verdict).await,
        }
    }

    async fn ask_user(&self, form: &QuestionForm) -> Result<Vec<QuestionAnswer>, Unanswered> {
        let asker = ASKER.try_with(Clone::clone).unwrap_or(Asker::Nobody);
        match asker {
            Asker::Nobody => self.fallback.ask_user(form).await,
            Asker::Request(peer) => {
                let params = Self::question_params(form)?;
                tracing::info!("asking the MCP client's user a question");
                match peer
                    .create_elicitation_with_timeout(params, Some(self.timeout))
                    .await
                {
                    Ok(result) => Self::question_answers(form, &result),
                    Err(ServiceError::Timeout { timeout }) => Err(Unanswered::Failed(format!(
                        "nobody answered within {}s",
                        timeout.as_secs()
                    ))),
                    Err(e) => Err(Unanswered::Failed(format!(
                        "the question to the MCP client failed ({e})"
                    ))),
                }
            }
            Asker::Mrtr(round) => {
                let params = Self::question_params(form)?;
                let shown = serde_json::to_value(&params).unwrap_or(Value::Null);
                let question = digest([&json!("questions"), &shown]);
                if let Some(answered) = round.take_answer()
                    && answered.question == question
                {
                    return Self::question_answers(form, &answered.result);
                }
                if !round.can_ask {
                    return self.fallback.ask_user(form).await;
                }
                round.put_question(Question {
                    params,
                    digest: question,
                    ttl: self.state_ttl,
                });
                Err(Unanswered::Awaiting)
            }
        }
    }

    async fn sample(&self, request: &SampleRequest) -> Result<Value, SampleError> {
        let Some(peer) = CLIENT.try_with(Clone::clone).ok().flatten() else {
            // 2026-07-28 forbids server-to-client requests, and one sub-agent turn per
            // input_required round trip is not offered: the configured prompter decides.
            return self.fallback.sample(request).await;
        };
        let offers = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.sampling.is_some());
        if !offers {
            return self.fallback.sample(request).await;
        }
        create_message(&peer, request).await
    }
}

/// One `sampling/createMessage` request to a legacy-era client.
// Sampling is deprecated for 2026-07-28 (SEP-2577); the clients this serves still define it.
#[allow(deprecated)]
async fn create_message(peer: &Peer<RoleServer>, request: &Value) -> Result<Value, SampleError> {
    let params: rmcp::model::CreateMessageRequestParams =
        serde_json::from_value(request.clone())
            .map_err(|e| SampleError::Failed(format!("the sampling request is malformed: {e}")))?;
    let sent = tokio::time::timeout(SAMPLING_TIMEOUT, peer.create_message(params)).await;
    match sent {
        Err(_) => Err(SampleError::Failed(format!(
            "the client did not answer within {}s",
            SAMPLING_TIMEOUT.as_secs()
        ))),
        Ok(Err(e)) => Err(SampleError::Failed(e.to_string())),
        Ok(Ok(result)) => serde_json::to_value(&result)
            .map_err(|e| SampleError::Failed(format!("the client's answer: {e}"))),
    }
}

/// How long one sampling request (one sub-agent turn) may take the client.
pub const SAMPLING_TIMEOUT: Duration = Duration::from_secs(300);

impl ElicitingPrompter {
    /// Questions for the user as one elicitation form (`answer_N` per question, an enum of
    /// its labels — several for a multi-select one — and `other_N` for the user's own
    /// words).
    fn question_params(form: &QuestionForm) -> Result<ElicitRequestParams, Unanswered> {
        let mut properties = serde_json::Map::new();
        let mut message = form.title.clone();
        for (i, q) in form.questions.iter().enumerate() {
            let n = i + 1;
            message.push_str(&format!("\n\n{n}. {}", q.question));
            let choices: Vec<Value> = q
                .options
                .iter()
                .map(|o| {
                    let title = if o.description.is_empty() {
                        o.label.clone()
                    } else {
                        format!("{} — {}", o.label, o.description)
                    };
                    json!({"const": o.label, "title": title})
                })
                .collect();
            let title = if q.header.is_empty() {
                format!("Question {n}")
            } else {
                q.header.clone()
            };
            let answer = if q.multi_select {
                json!({"type": "array", "title": title, "description": q.question,
                       "items": {"anyOf": choices}})
            } else {
                json!({"type": "string", "title": title, "description": q.question,
                       "oneOf": choices})
            };
            properties.insert(format!("answer_{n}"), answer);
            properties.insert(
                format!("other_{n}"),
                json!({"type": "string", "title": format!("{title}: your own answer"),
                       "description": "instead of (or besides) the choices"}),
            );
        }
        let schema = json!({"type": "object", "properties": properties});
        let Value::Object(schema) = schema else {
            return Err(Unanswered::Failed(
                "the question form could not be built".into(),
            ));
        };
        let requested_schema = ElicitationSchema::from_json_schema(schema)
            .map_err(|e| Unanswered::Failed(format!("the question form is invalid ({e})")))?;
        Ok(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        })
    }

    /// The answers in an elicitation result, checked against the form.
    fn question_answers(
        form: &QuestionForm,
        result: &ElicitResult,
    ) -> Result<Vec<QuestionAnswer>, Unanswered> {
        match result.action {
            ElicitationAction::Accept => {}
            ElicitationAction::Decline => return Err(Unanswered::Declined),
            _ => return Err(Unanswered::Dismissed),
        }
        let content = result.content.as_ref();
        form.questions
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let n = i + 1;
                let field = |k: String| content.and_then(|c| c.get(&k)).cloned();
                let selected = match field(format!("answer_{n}")) {
                    Some(Value::String(s)) => vec![s],
                    Some(Value::Array(a)) => a
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                    _ => Vec::new(),
                };
                let other = field(format!("other_{n}")).and_then(|v| v.as_str().map(str::to_owned));
                toolgate_policy::prompt::questions::check(q, selected, other)
            })
            .collect()
    }
}

/// What the user is asked about, as one digest: the tool, the input the policy decided on
/// (after hooks), and the message and form shown. An answer applies only to the question
/// it was given to.
fn question_digest(req: &PolicyRequest<'_>, params: &ElicitRequestParams) -> String {
    let shown = serde_json::to_value(params).unwrap_or(Value::Null);
    digest([&json!(req.tool), req.input, &shown])
}

/// A denial by the user layer that keeps the asking rule's provenance.
fn denied(asked: &Verdict, reason: String) -> Verdict {
    let mut v = Verdict::new(Decision::Deny, Layer::User, reason);
    v.rule = asked.rule.clone();
    v.source = asked.source.clone();
    v
}

/// The form: one required choice, and an optional note for the agent when denying.
fn schema(offer: &Offer) -> serde_json::Map<String, Value> {
    let mut choices = vec![json!({"const": "allow_once", "title": "Allow once"})];
    if let Ok(rules) = &offer.rules {
        let where_ = offer.where_saved();
        choices.push(json!({
            "const": "allow_always",
            "title": format!("Allow always ({}, saved {where_})", rules.join(", ")),
        }));
    }
    choices.push(json!({"const": "deny", "title": "Deny"}));
    let schema = json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Run this call?",
                "oneOf": choices,
                "default": "deny",
            },
            "message": {
                "type": "string",
                "title": "Note for the agent (when denying)",
                "description": "e.g. \"use the test script instead\"",
            },
        },
        "required": ["decision"],
    });
    match schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// What the user chose in the form. Anything unrecognisable is a refusal.
fn answer(content: Option<&Value>) -> Answer {
    let decision = content
        .and_then(|c| c.get("decision"))
        .and_then(Value::as_str);
    let note = content
        .and_then(|c| c.get("message"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    match decision {
        Some("allow_once") => Answer::AllowOnce,
        Some("allow_always") => Answer::AllowAlways,
        Some("deny") => Answer::Deny(note),
        Some(other) => Answer::Deny(Some(format!(
            "the approval answer `{other}` was not one of the choices; nothing was allowed"
        ))),
        None => Answer::Deny(Some(
            "the approval answer had no decision; nothing was allowed".into(),
        )),
    }
}

/// The question: which tool, what it would do, why toolgate asks, what "allow always" saves.
fn message(req: &PolicyRequest<'_>, verdict: &Verdict, offer: &Offer) -> String {
    let layer = serde_json::to_value(verdict.layer)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut text = format!(
        "toolgate: the agent wants to run {}\n  {}\nWhy it asks: {} [{layer}",
        req.tool,
        summary(req),
        verdict.reason,
    );
    if let (Some(rule), Some(src)) = (&verdict.rule, &verdict.source) {
        text.push_str(&format!(", rule {rule} from {src}"));
    }
    text.push(']');
    if let Err(why) = &offer.rules {
        text.push_str(&format!("\n(Allow always is not offered: {why})"));
    }
    text
}

/// The call in one line: the command, path or URL, else the input as JSON; elided when long.
fn summary(req: &PolicyRequest<'_>) -> String {
    let s = req
        .subject
        .extract(req.input)
        .map(str::to_owned)
        .unwrap_or_else(|| serde_json::to_string(req.input).unwrap_or_default());
    if s.chars().count() > MAX_SUMMARY_CHARS {
        let head: String = s.chars().take(MAX_SUMMARY_CHARS).collect();
        format!("{head}… ({} bytes)", s.len())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_choices_and_anything_else_is_no() {
        assert_eq!(
            answer(Some(&json!({"decision": "allow_once"}))),
            Answer::AllowOnce
        );
        assert_eq!(
            answer(Some(&json!({"decision": "allow_always"}))),
            Answer::AllowAlways
        );
        assert_eq!(
            answer(Some(&json!({"decision": "deny", "message": " use make "}))),
            Answer::Deny(Some("use make".into()))
        );
        assert_eq!(
            answer(Some(&json!({"decision": "deny", "message": ""}))),
            Answer::Deny(None)
        );
        assert!(matches!(
            answer(Some(&json!({"decision": "yes please"}))),
            Answer::Deny(Some(_))
        ));
        assert!(matches!(answer(None), Answer::Deny(Some(_))));
    }

    #[test]
    fn questions_become_one_form_and_its_answers_are_checked() {
        use toolgate_core::asking::{Question, QuestionOption};
        let opts = || {
            vec![
                QuestionOption {
                    label: "Postgres".into(),
                    description: "server".into(),
                },
                QuestionOption {
                    label: "SQLite".into(),
                    description: String::new(),
                },
            ]
        };
        let form = QuestionForm {
            title: "The agent asks".into(),
            questions: vec![
                Question {
                    question: "Which DB?".into(),
                    header: "DB".into(),
                    options: opts(),
                    multi_select: false,
                },
                Question {
                    question: "Which caches?".into(),
                    header: String::new(),
                    options: opts(),
                    multi_select: true,
                },
            ],
        };
        let params = ElicitingPrompter::question_params(&form).unwrap();
        let shown = serde_json::to_value(&params).unwrap();
        assert!(
            shown["message"]
                .as_str()
                .unwrap()
                .contains("2. Which caches?")
        );
        let props = &shown["requestedSchema"]["properties"];
        assert_eq!(props["answer_1"]["oneOf"][0]["const"], "Postgres");
        assert_eq!(props["answer_2"]["type"], "array");
        let accept =
            |content: Value| ElicitResult::new(ElicitationAction::Accept).with_content(content);
        let got = ElicitingPrompter::question_answers(
            &form,
            &accept(json!({"answer_1": "SQLite", "answer_2": ["Postgres", "SQLite"]})),
        )
        .unwrap();
        assert_eq!(got[1].selected.len(), 2);
        for bad in [
            json!({"answer_1": "Oracle", "answer_2": ["SQLite"]}),
            json!({"answer_1": "SQLite"}),
        ] {
            assert!(ElicitingPrompter::question_answers(&form, &accept(bad)).is_err());
        }
    }

    #[test]
    fn the_form_offers_allow_always_only_with_rules() {
        let with = Offer {
            rules: Ok(vec!["Bash(make)".into()]),
            persist: true,
            waits_for_trust: false,
            file: None,
        };
        let without = Offer {
            rules: Err("no exact rule".into()),
            persist: true,
            waits_for_trust: false,
            file: None,
        };
        for (offer, n) in [(&with, 3), (&without, 2)] {
            let s = schema(offer);
            let choices = s["properties"]["decision"]["oneOf"].as_array().unwrap();
            assert_eq!(choices.len(), n);
            assert!(ElicitationSchema::from_json_schema(s.clone()).is_ok());
        }
        let s = schema(&with);
        assert!(
            s["properties"]["decision"]["oneOf"][1]["title"]
                .as_str()
                .unwrap()
                .contains("Bash(make)")
        );
    }
}
