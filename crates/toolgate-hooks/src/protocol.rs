//! What a handler's exit code, stdout and stderr mean (Claude Code's contract, §7.6–7.7),
//! turned into one [`HookResult`]. Output is validated strictly: a JSON object with a
//! field of the wrong type or value is a loud handler error, not silently ignored.

use serde::Deserialize;
use serde_json::Value;

use crate::config::HookEvent;

/// Longest string (reason, context, message) kept from a hook, in characters, as in Claude
/// Code; longer strings are cut with a marker.
pub const MAX_STRING_CHARS: usize = 10_000;

/// A hook's permission decision; the order is the precedence across hooks
/// (deny > defer > ask > allow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookDecision {
    /// Skip the permission prompt (deny and ask rules still apply).
    Allow,
    /// Ask the user.
    Ask,
    /// Defer the call to the embedding agent (Claude Code: `-p` stops with
    /// `tool_deferred`). The gate treats it as an ask.
    Defer,
    /// Refuse the call.
    Deny,
}

impl HookDecision {
    /// `allow`, `ask`, `defer`, `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookDecision::Allow => "allow",
            HookDecision::Ask => "ask",
            HookDecision::Defer => "defer",
            HookDecision::Deny => "deny",
        }
    }
}

/// How a handler ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookStatus {
    /// It ran and answered (possibly nothing).
    Ok,
    /// A non-blocking error: crash, signal, bad output, unreachable URL.
    Error,
    /// It ran out of time; its process group was killed.
    TimedOut,
}

/// A PermissionRequest hook's `decision` (parsed and exposed; the embedder applies it).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequestDecision {
    /// `allow` or `deny`.
    pub behavior: PermissionBehavior,
    /// A replacement input.
    #[serde(default)]
    pub updated_input: Option<Value>,
    /// Permission updates (`addRules`, `setMode`, …) as written.
    #[serde(default)]
    pub updated_permissions: Vec<Value>,
    /// A message for the model (deny).
    #[serde(default)]
    pub message: Option<String>,
    /// Stop the agent (deny).
    #[serde(default)]
    pub interrupt: bool,
}

/// PermissionRequest `decision.behavior`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionBehavior {
    /// Approve.
    Allow,
    /// Refuse.
    Deny,
}

/// Everything one handler said.
#[derive(Debug, Clone)]
pub struct HookResult {
    /// The handler (command line or URL).
    pub handler: String,
    /// Its settings source.
    pub source: String,
    /// How it ended.
    pub status: HookStatus,
    /// A permission decision (PreToolUse `permissionDecision`, legacy `approve`/`block`,
    /// exit 2, `continue: false`).
    pub decision: Option<HookDecision>,
    /// The reason for the decision or block.
    pub reason: Option<String>,
    /// Exit 2 or `decision: "block"`: the event's blocking effect (deny the call, reject
    /// the prompt, keep the agent going, add the reason next to a tool result).
    pub block: Option<String>,
    /// `continue: false`: stop the agent, with `stopReason`.
    pub stop: Option<String>,
    /// `systemMessage`, for the user.
    pub system_message: Option<String>,
    /// `additionalContext` (or, for UserPromptSubmit and SessionStart, plain stdout).
    pub additional_context: Option<String>,
    /// PreToolUse `updatedInput`.
    pub updated_input: Option<Value>,
    /// PostToolUse `updatedToolOutput` (only a string or `{content: [{type: "text", text}]}`).
    pub updated_output: Option<Value>,
    /// PermissionRequest `decision`.
    pub permission_request: Option<PermissionRequestDecision>,
    /// PermissionDenied `retry`.
    pub retry: Option<bool>,
    /// The error, for `Error` and `TimedOut`.
    pub error: Option<String>,
    /// Notes about ignored output.
    pub warnings: Vec<String>,
    /// The handler's `failClosed`.
    pub fail_closed: bool,
    /// Wall time.
    pub duration_ms: u64,
}

impl HookResult {
    pub(crate) fn new(handler: String, source: String, fail_closed: bool) -> Self {
        HookResult {
            handler,
            source,
            status: HookStatus::Ok,
            decision: None,
            reason: None,
            block: None,
            stop: None,
            system_message: None,
            additional_context: None,
            updated_input: None,
            updated_output: None,
            permission_request: None,
            retry: None,
            error: None,
            warnings: Vec::new(),
            fail_closed,
            duration_ms: 0,
        }
    }

    pub(crate) fn fail(mut self, status: HookStatus, error: impl Into<String>) -> Self {
        self.status = status;
        self.error = Some(cap(error.into()));
        self
    }

    /// The audit outcome: `allow`, `deny`, `ask`, `defer`, `none`, `error`, `timeout`.
    pub fn outcome(&self) -> &'static str {
        match self.status {
            HookStatus::TimedOut => "timeout",
            HookStatus::Error => "error",
            HookStatus::Ok if self.block.is_some() || self.stop.is_some() => "deny",
            HookStatus::Ok => self.decision.map_or("none", HookDecision::as_str),
        }
    }

    /// The reason, error or notes, for the audit record.
    pub fn detail(&self) -> Option<String> {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(self.error.clone());
        parts.extend(self.stop.clone());
        parts.extend(
            self.block
                .clone()
                .filter(|b| Some(b) != self.reason.as_ref()),
        );
        parts.extend(self.reason.clone());
        parts.extend(self.warnings.iter().cloned());
        (!parts.is_empty()).then(|| cap(parts.join("; ")))
    }
}

/// Cuts `s` to [`MAX_STRING_CHARS`] characters.
pub(crate) fn cap(s: String) -> String {
    match s.char_indices().nth(MAX_STRING_CHARS) {
        Some((i, _)) => format!("{}… [truncated at {MAX_STRING_CHARS} characters]", &s[..i]),
        None => s,
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawJson {
    #[serde(rename = "continue")]
    continue_: Option<bool>,
    stop_reason: Option<String>,
    #[allow(dead_code)]
    suppress_output: Option<bool>,
    system_message: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    hook_specific_output: Option<RawSpecific>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpecific {
    hook_event_name: Option<String>,
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
    updated_tool_output: Option<Value>,
    decision: Option<PermissionRequestDecision>,
    retry: Option<bool>,
}

/// Interprets a finished handler: `code` is its exit code (HTTP 2xx counts as 0).
pub(crate) fn interpret(
    event: HookEvent,
    mut r: HookResult,
    code: i32,
    stdout: &[u8],
    stdout_truncated: bool,
    stderr: &[u8],
) -> HookResult {
    let text = String::from_utf8_lossy(stdout);
    let body = text.trim();
    let stderr = String::from_utf8_lossy(stderr).trim().to_owned();
    let json = if body.starts_with('{') {
        Some(if stdout_truncated {
            Err("its JSON output is larger than 1 MiB".to_owned())
        } else {
            parse_json(body)
        })
    } else {
        None
    };
    let mut top_reason = None;
    match json {
        Some(Ok(j)) => {
            top_reason = j.reason.clone().map(cap);
            if let Err(e) = apply(event, &mut r, j) {
                if code != 2 {
                    return r.fail(HookStatus::Error, e);
                }
                r.warnings.push(e);
            }
        }
        Some(Err(e)) if code != 2 => return r.fail(HookStatus::Error, e),
        Some(Err(e)) => r.warnings.push(e),
        None if code == 0 => {
            if !body.is_empty()
                && matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            {
                r.additional_context = Some(cap(body.to_owned()));
            }
        }
        None if code == 2 => {}
        None => {
            let first = stderr.lines().next().unwrap_or("").trim();
            let msg = if first.is_empty() {
                format!("exited with code {code}")
            } else {
                format!("exited with code {code}: {first}")
            };
            return r.fail(HookStatus::Error, msg);
        }
    }
    if code == 2 {
        // The JSON's own block or deny reason, else its `reason`, else stderr; never the
        // reason of an `allow` the exit code overrides.
        let json_reason = r
            .block
            .clone()
            .or_else(|| {
                r.reason
                    .clone()
                    .filter(|_| r.decision == Some(HookDecision::Deny))
            })
            .or(top_reason);
        let reason = json_reason
            .or_else(|| (!stderr.is_empty()).then(|| cap(stderr.clone())))
            .unwrap_or_else(|| "a hook blocked this (exit code 2) without giving a reason".into());
        r.block = Some(reason.clone());
        r.reason = Some(reason);
        if event == HookEvent::PreToolUse || r.decision.is_some() {
            r.decision = Some(HookDecision::Deny);
        }
    }
    r
}

fn parse_json(body: &str) -> Result<RawJson, String> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| format!("its output starts with `{{` but is not valid JSON: {e}"))?;
    serde_json::from_value(v)
        .map_err(|e| format!("its JSON output has a field of the wrong type: {e}"))
}

fn apply(event: HookEvent, r: &mut HookResult, j: RawJson) -> Result<(), String> {
    if j.continue_ == Some(false) {
        r.stop = Some(cap(j.stop_reason.unwrap_or_else(|| {
            "a hook stopped the agent (`continue: false`)".into()
        })));
    }
    r.system_message = j.system_message.map(cap);
    let reason = j.reason.map(cap);
    match j.decision.as_deref() {
        None => {}
        Some("block") => {
            let why = reason
                .clone()
                .unwrap_or_else(|| "a hook blocked this (`decision: block`)".into());
            r.block = Some(why.clone());
            r.reason = Some(why);
            if event == HookEvent::PreToolUse {
                r.decision = Some(HookDecision::Deny);
            }
        }
        Some("approve") if event == HookEvent::PreToolUse => {
            r.decision = Some(HookDecision::Allow);
            r.reason = reason.clone();
        }
        Some("approve") => {}
        Some(other) => {
            return Err(format!(
                "`decision` must be \"block\" (or legacy \"approve\"), not {other:?}"
            ));
        }
    }
    if r.reason.is_none() {
        r.reason = reason;
    }
    let Some(s) = j.hook_specific_output else {
        return Ok(());
    };
    if let Some(name) = &s.hook_event_name
        && name != event.as_str()
    {
        return Err(format!(
            "`hookSpecificOutput.hookEventName` is {name:?} but the event is {:?}",
            event.as_str()
        ));
    }
    if let Some(d) = s.permission_decision.as_deref() {
        if event != HookEvent::PreToolUse {
            r.warnings.push(format!(
                "`permissionDecision` ignored for {}",
                event.as_str()
            ));
        } else {
            r.decision = Some(match d {
                "allow" => HookDecision::Allow,
                "ask" => HookDecision::Ask,
                "defer" => HookDecision::Defer,
                "deny" => HookDecision::Deny,
                other => {
                    return Err(format!(
                        "`permissionDecision` must be allow, deny, ask or defer, not {other:?}"
                    ));
                }
            });
            if let Some(reason) = s.permission_decision_reason {
                r.reason = Some(cap(reason));
            }
        }
    }
    if let Some(input) = s.updated_input {
        if !input.is_object() {
            return Err("`updatedInput` must be an object (it replaces the whole input)".into());
        }
        r.updated_input = Some(input);
    }
    r.additional_context = s.additional_context.map(cap);
    if let Some(out) = s.updated_tool_output {
        if event != HookEvent::PostToolUse {
            r.warnings
                .push("`updatedToolOutput` ignored outside PostToolUse".into());
        } else if text_output(&out).is_some() {
            r.updated_output = Some(out);
        } else {
            r.warnings.push(
                "`updatedToolOutput` ignored: toolgate outputs are text, so give a string or {\"content\": [{\"type\": \"text\", \"text\": …}]}".into(),
            );
        }
    }
    r.permission_request = s.decision;
    r.retry = s.retry;
    Ok(())
}

/// The text of an `updatedToolOutput` in one of the accepted forms.
pub(crate) fn text_output(v: &Value) -> Option<String> {
    if let Some(s) = v.as_str() {
        return Some(s.to_owned());
    }
    let blocks = v.get("content")?.as_array()?;
    let mut out = Vec::new();
    for b in blocks {
        if b.get("type")?.as_str()? != "text" {
            return None;
        }
        out.push(b.get("text")?.as_str()?.to_owned());
    }
    Some(out.join("\n"))
}
