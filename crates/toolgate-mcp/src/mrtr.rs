//! "Ask" decisions on the sessionless 2026-07-28 protocol, which forbids server-to-client
//! requests: the question travels as an `input_required` result (MRTR, SEP-2322) and the
//! answer comes back on a retry of the same `tools/call`.
//!
//! The retry is a new, independent request, so the server must recognise the answer as the
//! one its own question asked for. The `requestState` of the first reply is sealed with
//! rmcp's HMAC codec ([`RequestStateCodec`]) under a random key made when the server starts
//! (never written anywhere: a state outlives neither the process nor a restart), and names:
//!
//! | claim | the retry must match |
//! |---|---|
//! | `tool` | the tool name |
//! | `input` | SHA-256 of the arguments, canonical (object keys sorted) |
//! | `client`, `session` | the gate session's client name and id: another client cannot use it |
//! | `question` | SHA-256 of what the user was shown: the message, the form, the input the policy decided on |
//! | `id`, `exp` | 128 random bits and the expiry; the codec rejects an expired state |
//!
//! A state is redeemed at most once: its `id` goes into a small in-memory set until it
//! expires, so a captured state and answer cannot approve the same call again. Whatever
//! fails — tampering, expiry, another tool, input or client, a second use — is a JSON-RPC
//! "invalid params" error (`-32602`) whose `data` says which (`toolgate/reason`), and
//! nothing runs; the client starts over with a fresh call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::ErrorData as McpError;
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// The key of toolgate's approval question in `inputRequests` and `inputResponses`.
pub const APPROVAL_INPUT: &str = "approval";

/// How long a 2026-07-28 client has to come back with the user's answer. Nothing is held
/// open meanwhile (unlike the legacy elicitation wait), so the bound is about how stale an
/// approval may be and how long a captured state is worth anything, not about resources.
pub const APPROVAL_STATE_TTL: Duration = Duration::from_secs(10 * 60);

/// Most redeemed states remembered at once. Each entry is a used approval younger than its
/// expiry; beyond this many, retries are refused (and say so) rather than memory growing.
const MAX_REDEEMED: usize = 100_000;

/// Bytes of the signing key (rmcp requires at least 32).
const KEY_BYTES: usize = 32;

/// Version of the claims format, so a future change cannot be confused with this one.
const CLAIMS_VERSION: u8 = 1;

/// Why a `requestState` was refused. The variants a client can cause map to one JSON-RPC
/// "invalid params" error each, with a machine-readable `toolgate/reason`.
#[derive(Debug, Error)]
pub enum StateError {
    /// Not a state this server sealed, or altered since (or from before a restart).
    #[error(
        "the requestState failed verification: it was altered, or it was issued by another server process"
    )]
    Invalid,
    /// Older than its time to live.
    #[error("the requestState has expired; call the tool again without it to be asked afresh")]
    Expired,
    /// Issued for a call of another tool.
    #[error("the requestState was issued for a call of `{0}`, not this tool")]
    OtherTool(String),
    /// Issued for other arguments.
    #[error("the requestState was issued for a call with other arguments")]
    OtherInput,
    /// Issued to another client or session.
    #[error("the requestState was issued to another client or session")]
    OtherClient,
    /// Already used once.
    #[error("the requestState was already used; an approval answers one call only")]
    Replayed,
    /// Too many recent approvals to remember which were used.
    #[error("too many recent approvals to check this one; try again later")]
    Busy,
    /// `inputResponses` without the `requestState` they answer.
    #[error("inputResponses were sent without the requestState of the question they answer")]
    ResponsesWithoutState,
    /// The approval answer is not an elicitation result.
    #[error("inputResponses.{APPROVAL_INPUT} is not an elicitation result: {0}")]
    MalformedAnswer(String),
    /// This server cannot verify states (no signing key could be made).
    #[error("this server cannot verify requestState values")]
    Unavailable,
    /// A state could not be sealed (a bug; the claims are plain data).
    #[error("the requestState could not be sealed: {0}")]
    Seal(String),
}

impl StateError {
    /// The machine-readable reason sent to the client.
    pub fn reason(&self) -> &'static str {
        match self {
            StateError::Invalid => "invalid",
            StateError::Expired => "expired",
            StateError::OtherTool(_) => "other_tool",
            StateError::OtherInput => "other_input",
            StateError::OtherClient => "other_client",
            StateError::Replayed => "replayed",
            StateError::Busy => "busy",
            StateError::ResponsesWithoutState => "responses_without_state",
            StateError::MalformedAnswer(_) => "malformed_answer",
            StateError::Unavailable => "unavailable",
            StateError::Seal(_) => "seal_failed",
        }
    }

    /// The JSON-RPC error for the client: invalid params for what the client sent, an
    /// internal error for what the server could not do.
    pub fn to_mcp(&self) -> McpError {
        let data = json!({
            "toolgate/code": "invalid_request_state",
            "toolgate/reason": self.reason(),
        });
        match self {
            StateError::Seal(_) | StateError::Unavailable => {
                McpError::internal_error(self.to_string(), Some(data))
            }
            _ => McpError::invalid_params(self.to_string(), Some(data)),
        }
    }
}

/// What a state is bound to: the call and who made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Binding {
    /// The tool name.
    pub tool: String,
    /// [`digest`] of the arguments (an empty object when absent).
    pub input: String,
    /// The gate session's client name.
    pub client: Option<String>,
    /// The gate session's id.
    pub session: String,
}

/// What a sealed state says (readable by the client: signed, not encrypted; nothing in it
/// is secret).
#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    v: u8,
    id: String,
    tool: String,
    input: String,
    client: Option<String>,
    session: String,
    question: String,
    /// Unix milliseconds. The codec enforces the expiry it seals itself; this copy tells the
    /// redeemed set when an entry may be forgotten.
    exp: u64,
}

/// Seals and redeems approval states for one server (every connection of it).
pub(crate) struct Approvals {
    codec: RequestStateCodec,
    /// Ids of redeemed states, with their expiry (unix ms).
    redeemed: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals").finish_non_exhaustive()
    }
}

impl Approvals {
    /// A keeper with a fresh random signing key.
    pub(crate) fn new() -> Result<Self, StateError> {
        let mut key = [0u8; KEY_BYTES];
        getrandom::fill(&mut key).map_err(|e| {
            tracing::warn!(error = %e, "no randomness for the requestState key");
            StateError::Unavailable
        })?;
        let codec = RequestStateCodec::try_new(key.to_vec()).map_err(|e| {
            tracing::warn!(error = %e, "requestState codec");
            StateError::Unavailable
        })?;
        Ok(Self {
            codec,
            redeemed: Mutex::default(),
        })
    }

    /// A keeper to share between handlers, or `None` (logged) when no key could be made:
    /// such a server gives 2026-07-28 clients the configured prompter.
    pub(crate) fn shared() -> Option<Arc<Self>> {
        Self::new().ok().map(Arc::new)
    }

    /// A sealed state for the question `question` (a [`digest`]) about the call `binding`,
    /// valid for `ttl`.
    pub(crate) fn issue(
        &self,
        binding: &Binding,
        question: &str,
        ttl: Duration,
    ) -> Result<String, StateError> {
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).map_err(|e| StateError::Seal(e.to_string()))?;
        let claims = Claims {
            v: CLAIMS_VERSION,
            id: hex::encode(id),
            tool: binding.tool.clone(),
            input: binding.input.clone(),
            client: binding.client.clone(),
            session: binding.session.clone(),
            question: question.to_owned(),
            exp: now_ms().saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
        };
        self.codec
            .seal_json_with(&claims, &SealOptions::new().ttl(ttl))
            .map_err(|e| StateError::Seal(e.to_string()))
    }

    /// Verifies `state` against the retried call and marks it used; returns the question it
    /// was issued for.
    pub(crate) fn redeem(&self, state: &str, binding: &Binding) -> Result<String, StateError> {
        let claims: Claims = self.codec.open_json(state).map_err(|e| match e {
            // Reported after the tag is verified, so it tells a forger nothing.
            RequestStateError::Expired => StateError::Expired,
            // rmcp: map every other opening failure to one client-facing error.
            other => {
                tracing::info!(error = %other, "requestState rejected");
                StateError::Invalid
            }
        })?;
        if claims.v != CLAIMS_VERSION {
            return Err(StateError::Invalid);
        }
        if claims.tool != binding.tool {
            return Err(StateError::OtherTool(claims.tool));
        }
        if claims.input != binding.input {
            return Err(StateError::OtherInput);
        }
        if claims.client != binding.client || claims.session != binding.session {
            return Err(StateError::OtherClient);
        }
        let now = now_ms();
        let mut redeemed = self.redeemed.lock().unwrap_or_else(PoisonError::into_inner);
        redeemed.retain(|_, exp| *exp >= now);
        if redeemed.contains_key(&claims.id) {
            return Err(StateError::Replayed);
        }
        if redeemed.len() >= MAX_REDEEMED {
            return Err(StateError::Busy);
        }
        redeemed.insert(claims.id, claims.exp);
        Ok(claims.question)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// SHA-256 (hex) of JSON values in canonical form — object keys sorted, no whitespace —
/// so that the same arguments always give the same digest whatever order a client writes
/// keys in. Several values are hashed as one sequence.
pub(crate) fn digest<'a>(values: impl IntoIterator<Item = &'a Value>) -> String {
    let mut bytes = Vec::new();
    for value in values {
        canonical(value, &mut bytes);
        // A separator no canonical value contains at top level, so sequences cannot run
        // into each other.
        bytes.push(b'\n');
    }
    hex::encode(Sha256::digest(&bytes))
}

fn canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                scalar(&Value::String(key.clone()), out);
                out.push(b':');
                canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(v, out);
            }
            out.push(b']');
        }
        other => scalar(other, out),
    }
}

fn scalar(value: &Value, out: &mut Vec<u8>) {
    // Writing JSON scalars into a Vec cannot fail; an error would only drop bytes from the
    // digest input, which makes the digest stricter, never looser.
    if let Err(e) = serde_json::to_writer(&mut *out, value) {
        tracing::error!(error = %e, "canonical JSON");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding() -> Binding {
        Binding {
            tool: "Bash".into(),
            input: digest([&json!({"command": "touch x"})]),
            client: Some("c".into()),
            session: "s1".into(),
        }
    }

    #[test]
    fn digests_ignore_key_order_but_not_values() {
        let a = json!({"a": 1, "b": {"y": [1, {"q": 1, "p": 2}], "x": "s"}});
        let b = json!({"b": {"x": "s", "y": [1, {"p": 2, "q": 1}]}, "a": 1});
        assert_eq!(digest([&a]), digest([&b]));
        assert_ne!(digest([&a]), digest([&json!({"a": 2})]));
        assert_ne!(digest([&json!("a"), &json!("b")]), digest([&json!("ab")]));
        assert_ne!(digest([&json!([1, 2])]), digest([&json!([2, 1])]));
    }

    #[test]
    fn a_state_opens_once_for_its_own_call_only() {
        let keeper = Approvals::new().unwrap();
        let b = binding();
        let state = keeper.issue(&b, "q", APPROVAL_STATE_TTL).unwrap();
        let mut other_tool = b.clone();
        other_tool.tool = "Write".into();
        assert!(matches!(
            keeper.redeem(&state, &other_tool),
            Err(StateError::OtherTool(t)) if t == "Bash"
        ));
        let mut other_input = b.clone();
        other_input.input = digest([&json!({"command": "rm -rf x"})]);
        assert!(matches!(
            keeper.redeem(&state, &other_input),
            Err(StateError::OtherInput)
        ));
        let mut other_session = b.clone();
        other_session.session = "s2".into();
        assert!(matches!(
            keeper.redeem(&state, &other_session),
            Err(StateError::OtherClient)
        ));
        // Refusals do not use the state up.
        assert_eq!(keeper.redeem(&state, &b).unwrap(), "q");
        assert!(matches!(
            keeper.redeem(&state, &b),
            Err(StateError::Replayed)
        ));
    }

    #[test]
    fn tampered_foreign_and_expired_states_are_refused() {
        let keeper = Approvals::new().unwrap();
        let b = binding();
        let state = keeper.issue(&b, "q", APPROVAL_STATE_TTL).unwrap();
        // Flip one character of the signed body.
        let mut parts: Vec<String> = state.split('.').map(str::to_owned).collect();
        let body = &mut parts[1];
        let flipped = if body.ends_with('A') { 'B' } else { 'A' };
        body.pop();
        body.push(flipped);
        let tampered = parts.join(".");
        assert!(matches!(
            keeper.redeem(&tampered, &b),
            Err(StateError::Invalid)
        ));
        assert!(matches!(
            keeper.redeem("garbage", &b),
            Err(StateError::Invalid)
        ));
        let other_process = Approvals::new().unwrap();
        assert!(matches!(
            other_process.redeem(&state, &b),
            Err(StateError::Invalid)
        ));
        let short = keeper.issue(&b, "q", Duration::from_millis(1)).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(matches!(
            keeper.redeem(&short, &b),
            Err(StateError::Expired)
        ));
    }

    #[test]
    fn errors_are_invalid_params_with_a_reason() {
        let e = StateError::Expired.to_mcp();
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert_eq!(e.data.unwrap()["toolgate/reason"], "expired");
        assert_eq!(
            StateError::Unavailable.to_mcp().code,
            rmcp::model::ErrorCode::INTERNAL_ERROR
        );
    }
}
