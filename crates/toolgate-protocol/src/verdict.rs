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
}
