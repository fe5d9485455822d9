use serde::{Deserialize, Serialize};
use std::fmt;

/// What a deciding stage concluded about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The call may run.
    Allow,
    /// A person (or a prompter standing in for one) must decide.
    Ask,
    /// The call must not run.
    Deny,
}

/// Which layer of the pipeline produced a verdict, so a reader can find where a decision was
/// made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// A PreToolUse hook.
    Hook,
    /// A permission rule (deny, ask or allow list).
    Rule,
    /// The permission mode (plan, dontAsk, …).
    Mode,
    /// The risk floor: catastrophic commands, protected paths.
    Risk,
    /// A prompter answered an ask.
    User,
    /// Nothing matched; the configured default applied.
    Default,
    /// A per-call constraint (rate limit, size cap).
    Constraint,
    /// The sandbox stage.
    Sandbox,
    /// The tool's own safety rule, which no permission lifts (WebFetch refusing an internal
    /// address, a budget of the tool's own used up).
    Tool,
}

/// The pipeline's stages, numbered as in DESIGN.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// 1: find the tool in the session's registry view.
    Resolve,
    /// 2: JSON Schema validation of the input.
    Schema,
    /// 3: the tool's own semantic checks.
    Validate,
    /// 4: tool-aware facts for policy.
    Analyze,
    /// 5: PreToolUse hooks.
    PreHooks,
    /// 6: the permission decision.
    Decide,
    /// 7: per-call constraints.
    Constrain,
    /// 8: choice of sandbox.
    Sandbox,
    /// 9: running the tool.
    Execute,
    /// 10: PostToolUse / PostToolUseFailure hooks.
    PostHooks,
    /// 11: result shaping.
    Shape,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 11] = [
        Stage::Resolve,
        Stage::Schema,
        Stage::Validate,
        Stage::Analyze,
        Stage::PreHooks,
        Stage::Decide,
        Stage::Constrain,
        Stage::Sandbox,
        Stage::Execute,
        Stage::PostHooks,
        Stage::Shape,
    ];

    /// The stage after this one (`Shape`, the last, for itself).
    pub fn next(self) -> Stage {
        // `number` is 1-based, so it is the next stage's index.
        Stage::ALL
            .get(usize::from(self.number()))
            .copied()
            .unwrap_or(Stage::Shape)
    }

    /// The stage's number in DESIGN.md.
    pub fn number(self) -> u8 {
        match self {
            Stage::Resolve => 1,
            Stage::Schema => 2,
            Stage::Validate => 3,
            Stage::Analyze => 4,
            Stage::PreHooks => 5,
            Stage::Decide => 6,
            Stage::Constrain => 7,
            Stage::Sandbox => 8,
            Stage::Execute => 9,
            Stage::PostHooks => 10,
            Stage::Shape => 11,
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        write!(f, "{} {}", self.number(), name)
    }
}

/// A decision together with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Allow, ask or deny.
    pub decision: Decision,
    /// The layer that decided.
    pub layer: Layer,
    /// The rule that matched, as written (`Bash(rm *)`), if a rule decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where that rule came from (a settings file, `--deny`, a hook command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Why, in words the model and a human can act on.
    pub reason: String,
}

impl Verdict {
    /// A verdict with no rule or source.
    pub fn new(decision: Decision, layer: Layer, reason: impl Into<String>) -> Self {
        Self {
            decision,
            layer,
            rule: None,
            source: None,
            reason: reason.into(),
        }
    }

    /// Names the rule that decided.
    pub fn with_rule(mut self, rule: impl Into<String>, source: impl Into<String>) -> Self {
        self.rule = Some(rule.into());
        self.source = Some(source.into());
        self
    }

    /// A prompter's answer to `asked` meaning "not decided yet: the front door took the
    /// question to the user and the call must wait for the answer" — an MCP `input_required`
    /// result on the 2026-07-28 protocol, where the server cannot hold the call open while
    /// the client asks. It is `ask` by the `user` layer (a state the policy never produces:
    /// its asks come from hooks, rules, the mode or the risk floor), keeping the asking
    /// rule's provenance. The gate stops such a call before it runs and reports
    /// [`ErrorCode::InputRequired`](crate::ErrorCode::InputRequired).
    pub fn awaiting_input(asked: &Verdict, reason: impl Into<String>) -> Self {
        Self {
            decision: Decision::Ask,
            layer: Layer::User,
            rule: asked.rule.clone(),
            source: asked.source.clone(),
            reason: reason.into(),
        }
    }

    /// Whether this is a prompter's [`Verdict::awaiting_input`] answer.
    pub fn is_awaiting_input(&self) -> bool {
        self.decision == Decision::Ask && self.layer == Layer::User
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awaiting_input_is_an_undecided_user_answer_with_provenance() {
        let asked = Verdict::new(Decision::Ask, Layer::Rule, "ask rule").with_rule("Bash", "cli");
        let waiting = Verdict::awaiting_input(&asked, "waiting");
        assert!(waiting.is_awaiting_input());
        assert_eq!(
            (waiting.rule.as_deref(), waiting.source.as_deref()),
            (Some("Bash"), Some("cli"))
        );
        // The policy's own asks are not answers.
        assert!(!asked.is_awaiting_input());
        assert!(!Verdict::new(Decision::Deny, Layer::User, "no").is_awaiting_input());
    }

    #[test]
    fn stages_are_listed_in_pipeline_order_and_step_to_the_next() {
        for (i, stage) in Stage::ALL.iter().enumerate() {
            assert_eq!(usize::from(stage.number()), i + 1, "{stage:?}");
        }
        assert_eq!(Stage::Resolve.next(), Stage::Schema);
        assert_eq!(Stage::PreHooks.next(), Stage::Decide);
        assert_eq!(Stage::PostHooks.next(), Stage::Shape);
        assert_eq!(Stage::Shape.next(), Stage::Shape);
    }
}
