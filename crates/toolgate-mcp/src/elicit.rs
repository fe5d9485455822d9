//! "Ask" decisions as MCP elicitation: the connected client's user answers allow once /
//! allow always / deny in the client's own UI.
//!
//! The gate's prompter is shared by every connection of a server, but the client to ask is
//! the one whose call is being decided. So the handler puts the calling connection's peer in
//! a task-local ([`with_client`]) around the gate call, and [`ElicitingPrompter`] asks that
//! peer — only when it declared the elicitation capability on a protocol that allows
//! server-to-client requests (up to 2025-11-25). Otherwise the configured prompter answers.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, ProtocolVersion};
use rmcp::service::{ElicitationMode, Peer, RequestContext, ServiceError};
use serde_json::{Value, json};
use toolgate_policy::prompt::{Answer, Offer, resolve};
use toolgate_policy::{Engine, PolicyPrompter, PolicyRequest};
use toolgate_protocol::{Decision, Layer, Verdict};

/// How long the client's user has to answer an approval request. Long enough for a person
/// who stepped away briefly; a call must not hang forever on an abandoned dialog.
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest call summary put in an approval message; the rest is elided.
const MAX_SUMMARY_CHARS: usize = 2_000;

tokio::task_local! {
    /// The client a call in progress came from, when it can be asked.
    static CLIENT: Option<Peer<RoleServer>>;
}

/// Runs `call` with the request's client reachable by [`ElicitingPrompter`], if that client
/// can answer elicitation requests.
pub(crate) async fn with_client<F: Future>(
    context: &RequestContext<RoleServer>,
    call: F,
) -> F::Output {
    CLIENT.scope(askable(context), call).await
}

/// The request's peer, if it declared form elicitation and the protocol allows the server
/// to send it requests (2026-07-28 forbids them; there the answer would have to travel as
/// an `input_required` result, which toolgate does not implement yet).
fn askable(context: &RequestContext<RoleServer>) -> Option<Peer<RoleServer>> {
    let version = context.protocol_version()?;
    if version >= ProtocolVersion::V_2026_07_28 {
        return None;
    }
    context
        .peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
        .then(|| context.peer.clone())
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
}

impl ElicitingPrompter {
    /// Asks clients through elicitation, saving "allow always" rules in `engine`; clients
    /// that cannot be asked get `fallback`'s answer.
    pub fn new(engine: Arc<Engine>, fallback: Arc<dyn PolicyPrompter>) -> Self {
        Self {
            engine,
            fallback,
            timeout: ELICITATION_TIMEOUT,
        }
    }

    /// How long to wait for the user's answer (default [`ELICITATION_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

#[async_trait]
impl PolicyPrompter for ElicitingPrompter {
    async fn ask(&self, req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict {
        let peer = CLIENT.try_with(Clone::clone).ok().flatten();
        let Some(peer) = peer else {
            return self.fallback.ask(req, verdict).await;
        };
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
        tracing::info!(tool = req.tool, "asking the MCP client to approve a call");
        match peer
            .create_elicitation_with_timeout(params, Some(self.timeout))
            .await
        {
            Ok(result) => match result.action {
                ElicitationAction::Accept => {
                    let answer = answer(result.content.as_ref());
                    resolve(&self.engine, &offer, answer, verdict)
                }
                ElicitationAction::Decline => {
                    resolve(&self.engine, &offer, Answer::Deny(None), verdict)
                }
                _ => denied(
                    verdict,
                    "the user dismissed the approval request without allowing the call; do not retry it unchanged, ask the user what to do".into(),
                ),
            },
            Err(ServiceError::Timeout { timeout }) => denied(
                verdict,
                format!(
                    "nobody answered the approval request within {}s; ask the user to allow it, or do something else",
                    timeout.as_secs()
                ),
            ),
            Err(e) => denied(
                verdict,
                format!("the approval request to the MCP client failed ({e}); nobody allowed the call"),
            ),
        }
    }
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
        let where_ = if offer.persist {
            "saved to .toolgate/settings.local.json"
        } else {
            "for this session"
        };
        choices.push(json!({
            "const": "allow_always",
            "title": format!("Allow always ({}, {where_})", rules.join(", ")),
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
    fn the_form_offers_allow_always_only_with_rules() {
        let with = Offer {
            rules: Ok(vec!["Bash(make)".into()]),
            persist: true,
        };
        let without = Offer {
            rules: Err("no exact rule".into()),
            persist: true,
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
