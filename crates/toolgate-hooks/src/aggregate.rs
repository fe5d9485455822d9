//! Combining the results of the handlers of one event (they ran in parallel) into one
//! [`EventOutcome`]: decisions by precedence deny > defer > ask > allow, `continue: false`
//! beats everything, fail-closed errors deny, conflicting `updatedInput`s deny.

use serde_json::Value;
use toolgate_protocol::HookRecord;

use crate::config::HookEvent;
use crate::protocol::{
    HookDecision, HookResult, HookStatus, PermissionBehavior, PermissionRequestDecision,
};

/// What the hooks of one event said, together.
#[derive(Debug, Clone)]
pub struct EventOutcome {
    /// The event.
    pub event: HookEvent,
    /// The strongest permission decision (PreToolUse; also set by exit 2, `continue:
    /// false` and fail-closed errors there).
    pub decision: Option<HookDecision>,
    /// Why, from the hook that made `decision`.
    pub reason: Option<String>,
    /// `(handler, source)` of the hook that made `decision`.
    pub decided_by: Option<(String, String)>,
    /// The event's blocking effect (exit 2, `decision: "block"`, fail-closed error): reject
    /// the prompt (UserPromptSubmit), keep going (Stop), refuse (PreToolUse, PreCompact…).
    /// Never set for PermissionRequest, PermissionDenied and Notification, where Claude Code
    /// ignores exit 2.
    pub blocked: Option<String>,
    /// `continue: false`: stop the agent, with this reason for the user.
    pub stop: Option<String>,
    /// Messages for the user: `systemMessage`s, non-blocking errors, SessionStart/End exit-2
    /// stderr.
    pub system_messages: Vec<String>,
    /// Context for the model.
    pub additional_context: Vec<String>,
    /// The replacement input, if exactly one distinct one was given and the call is not
    /// denied.
    pub updated_input: Option<Value>,
    /// PostToolUse replacement output (the first valid one).
    pub updated_output: Option<Value>,
    /// PermissionRequest decision (a deny from any hook wins over an allow).
    pub permission_request: Option<PermissionRequestDecision>,
    /// PermissionDenied: some hook asked to retry.
    pub retry: bool,
    /// Whether any handler ran (synchronously or detached).
    pub ran: bool,
    /// Every handler's result, in configuration order (async handlers not included).
    pub results: Vec<HookResult>,
    /// One audit record per handler (async ones included, with outcome `none`).
    pub records: Vec<HookRecord>,
}

impl EventOutcome {
    pub(crate) fn empty(event: HookEvent) -> Self {
        EventOutcome {
            event,
            decision: None,
            reason: None,
            decided_by: None,
            blocked: None,
            stop: None,
            system_messages: Vec::new(),
            additional_context: Vec::new(),
            updated_input: None,
            updated_output: None,
            permission_request: None,
            retry: false,
            ran: false,
            results: Vec::new(),
            records: Vec::new(),
        }
    }

    fn decide(&mut self, d: HookDecision, reason: String, r: &HookResult) {
        if self.decision.is_none_or(|cur| d > cur) {
            self.decision = Some(d);
            self.reason = Some(reason);
            self.decided_by = Some((r.handler.clone(), r.source.clone()));
        }
    }
}

fn ignores_block(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::PermissionRequest | HookEvent::PermissionDenied | HookEvent::Notification
    )
}

/// Combines `results` (configuration order) for `event`.
pub(crate) fn aggregate(
    event: HookEvent,
    results: Vec<HookResult>,
    mut out: EventOutcome,
) -> EventOutcome {
    let pre = event == HookEvent::PreToolUse;
    let post = matches!(
        event,
        HookEvent::PostToolUse | HookEvent::PostToolUseFailure
    );
    let mut inputs: Vec<&Value> = Vec::new();
    for r in &results {
        // What a hook printed (its reason, its error) and its configured command line are
        // recorded masked, whatever sink the record goes to (docs/audit.md).
        let redactor = toolgate_audit::Redactor::shared();
        out.records.push(HookRecord {
            event: event.as_str().to_owned(),
            handler: redactor.redact_str(&r.handler).into_owned(),
            outcome: r.outcome().to_owned(),
            detail: r.detail().map(|d| redactor.redact_str(&d).into_owned()),
            duration_ms: r.duration_ms,
        });
        if r.status != HookStatus::Ok {
            let err = r.error.clone().unwrap_or_default();
            if r.fail_closed && !ignores_block(event) {
                let why = format!("hook `{}` failed and is fail-closed: {err}", r.handler);
                if pre {
                    out.decide(HookDecision::Deny, why.clone(), r);
                }
                if post {
                    out.additional_context.push(why.clone());
                }
                out.blocked.get_or_insert(why);
            } else {
                out.system_messages
                    .push(format!("hook `{}`: {err}", r.handler));
            }
            continue;
        }
        if let Some(stop) = &r.stop {
            out.stop.get_or_insert_with(|| stop.clone());
            if pre {
                out.decide(HookDecision::Deny, stop.clone(), r);
            }
        }
        if let Some(block) = &r.block {
            match event {
                e if ignores_block(e) => {}
                HookEvent::SessionStart | HookEvent::SessionEnd => {
                    out.system_messages.push(block.clone());
                }
                _ if post => out
                    .additional_context
                    .push(format!("{} hook feedback: {block}", event.as_str())),
                _ => {
                    out.blocked.get_or_insert_with(|| block.clone());
                }
            }
        }
        if let Some(d) = r.decision {
            let reason = r
                .reason
                .clone()
                .unwrap_or_else(|| format!("a PreToolUse hook answered `{}`", d.as_str()));
            out.decide(d, reason, r);
        }
        out.system_messages.extend(r.system_message.clone());
        out.additional_context.extend(r.additional_context.clone());
        if let Some(i) = &r.updated_input
            && !inputs.contains(&i)
        {
            inputs.push(i);
        }
        if out.updated_output.is_none() {
            out.updated_output = r.updated_output.clone();
        }
        if let Some(p) = &r.permission_request
            && out
                .permission_request
                .as_ref()
                .is_none_or(|cur| cur.behavior == PermissionBehavior::Allow)
            && (out.permission_request.is_none() || p.behavior == PermissionBehavior::Deny)
        {
            out.permission_request = Some(p.clone());
        }
        out.retry |= r.retry == Some(true);
    }
    match inputs.as_slice() {
        [] => {}
        [one] => out.updated_input = Some((*one).clone()),
        [first, ..] => {
            if let Some(r) = results
                .iter()
                .find(|r| r.updated_input.as_ref() == Some(*first))
            {
                out.decide(
                    HookDecision::Deny,
                    format!(
                        "{} PreToolUse hooks replaced the input with different values; refusing to pick one",
                        inputs.len()
                    ),
                    r,
                );
            }
        }
    }
    if out.decision == Some(HookDecision::Deny) {
        out.updated_input = None;
    }
    out.ran = true;
    out.results = results;
    out
}
