//! The decision trace: every layer the engine consulted, what it found, and the facts it
//! decided on. `toolgate check` prints it; `--explain` renders it in words.

use serde::Serialize;
use toolgate_protocol::{Decision, Layer, PermissionMode, Verdict};

/// What one step of the evaluation found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The step decided the call.
    Decided,
    /// The step matched but did not decide alone (one subcommand of several allowed).
    Matched,
    /// Nothing in this step applied.
    NoMatch,
    /// The step was not consulted (mode, missing facts).
    Skipped,
    /// A note: a gap in the facts, a rule ignored in this mode.
    Note,
}

/// One step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The layer.
    pub layer: Layer,
    /// The check, in a few words (`deny rules`, `risk floor: protected paths`).
    pub check: &'static str,
    /// What it found.
    pub outcome: Outcome,
    /// Details: the subcommand, the path, why.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// The rule, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where the rule came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The facts the engine decided on, in short form.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FactsSummary {
    /// Where the shell facts came from: `analyzer`, `fallback splitter` or `none`.
    pub shell_facts: &'static str,
    /// Subcommands as allow rules see them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// Paths with access (`write /w/.git/config [protected]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Hosts reached.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Analyzer findings (`high remote_code_execution: …`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// Why parts of the call could not be understood.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub opaque: Vec<String>,
}

/// The whole trace of one decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Trace {
    /// The tool.
    pub tool: String,
    /// The mode the decision was made in.
    pub mode: PermissionMode,
    /// The facts.
    pub facts: FactsSummary,
    /// The steps, in evaluation order.
    pub steps: Vec<Step>,
}

impl Trace {
    pub(crate) fn new(tool: &str, mode: PermissionMode) -> Self {
        Self {
            tool: tool.to_owned(),
            mode,
            facts: FactsSummary::default(),
            steps: Vec::with_capacity(8),
        }
    }

    pub(crate) fn step(
        &mut self,
        layer: Layer,
        check: &'static str,
        outcome: Outcome,
        detail: impl Into<String>,
    ) {
        self.steps.push(Step {
            layer,
            check,
            outcome,
            detail: detail.into(),
            rule: None,
            source: None,
        });
    }

    pub(crate) fn rule_step(
        &mut self,
        layer: Layer,
        check: &'static str,
        outcome: Outcome,
        detail: impl Into<String>,
        rule: &str,
        source: &str,
    ) {
        self.steps.push(Step {
            layer,
            check,
            outcome,
            detail: detail.into(),
            rule: Some(rule.to_owned()),
            source: Some(source.to_owned()),
        });
    }
}

/// A verdict and how it was reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decided {
    /// The decision, its layer, rule and source.
    pub verdict: Verdict,
    /// How the engine got there.
    pub trace: Trace,
}

fn decision_word(d: Decision) -> &'static str {
    match d {
        Decision::Allow => "ALLOW",
        Decision::Ask => "ASK",
        Decision::Deny => "DENY",
    }
}

/// The layer's wire name (`rule`, `default`, …).
pub(crate) fn layer_name(l: Layer) -> &'static str {
    match l {
        Layer::Hook => "hook",
        Layer::Rule => "rule",
        Layer::Mode => "mode",
        Layer::Risk => "risk",
        Layer::User => "user",
        Layer::Default => "default",
        Layer::Constraint => "constraint",
        Layer::Sandbox => "sandbox",
        Layer::Tool => "tool",
    }
}

fn layer_word(l: Layer) -> &'static str {
    match l {
        Layer::Hook => "a PreToolUse hook",
        Layer::Rule => "a permission rule",
        Layer::Mode => "the permission mode",
        Layer::Risk => "the risk floor",
        Layer::User => "the user",
        Layer::Default => "the default (no rule matched)",
        Layer::Constraint => "a constraint",
        Layer::Sandbox => "the sandbox",
        Layer::Tool => "the tool's own safety rule",
    }
}

impl Decided {
    /// The trace as JSON (for `toolgate check --json`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// A compact listing: verdict line, then one line per step.
    pub fn render(&self) -> String {
        let v = &self.verdict;
        let mut out = format!(
            "{} {} ({} layer, mode {})\n",
            decision_word(v.decision),
            self.trace.tool,
            layer_name(v.layer),
            self.trace.mode
        );
        if let (Some(rule), Some(source)) = (&v.rule, &v.source) {
            out.push_str(&format!("  rule   {rule}  [{source}]\n"));
        }
        out.push_str(&format!("  reason {}\n", v.reason));
        let f = &self.trace.facts;
        // Only a shell command has shell facts; a Read's facts are its paths.
        let mut facts = Vec::new();
        if f.shell_facts != "none" {
            facts.push(format!("shell facts from {}", f.shell_facts));
        }
        let kinds: [(&str, &Vec<String>); 5] = [
            ("command", &f.commands),
            ("path", &f.paths),
            ("host", &f.hosts),
            ("finding", &f.findings),
            ("opaque", &f.opaque),
        ];
        for (kind, items) in kinds {
            facts.extend(items.iter().map(|x| format!("{kind:<8} {x}")));
        }
        if facts.is_empty() {
            facts.push("none".to_owned());
        }
        for (i, line) in facts.iter().enumerate() {
            let head = if i == 0 { "  facts  " } else { "         " };
            out.push_str(&format!("{head}{line}\n"));
        }
        out.push_str("  trace\n");
        for (i, s) in self.trace.steps.iter().enumerate() {
            out.push_str(&format!(
                "   {:>2}. {:<8} {:<34} {:?}",
                i + 1,
                layer_name(s.layer),
                s.check,
                s.outcome
            ));
            if !s.detail.is_empty() {
                out.push_str(&format!(": {}", s.detail));
            }
            if let (Some(r), Some(src)) = (&s.rule, &s.source) {
                out.push_str(&format!("  [{r} from {src}]"));
            }
            out.push('\n');
        }
        out
    }

    /// The decision in sentences, for `toolgate check --explain`.
    pub fn explain(&self) -> String {
        let v = &self.verdict;
        let verb = match v.decision {
            Decision::Allow => "would run without asking",
            Decision::Ask => "would need someone's approval",
            Decision::Deny => "would be refused",
        };
        let mut out = format!(
            "This {} call {verb}. The decision was made by {} in stage 6 (decide), in {} mode.\n",
            self.trace.tool,
            layer_word(v.layer),
            self.trace.mode
        );
        if let (Some(rule), Some(source)) = (&v.rule, &v.source) {
            out.push_str(&format!("The rule `{rule}` from {source} decided it.\n"));
        }
        out.push_str(&format!("Why: {}.\n", v.reason.trim_end_matches('.')));
        let f = &self.trace.facts;
        if f.shell_facts == "fallback splitter" {
            out.push_str("Note: the shell analyzer's facts were missing, so the command was split by toolgate's conservative fallback splitter; allow rules are applied only when it understood everything.\n");
        }
        if !f.commands.is_empty() {
            out.push_str(&format!(
                "The command was checked as {} subcommand(s): {}.\n",
                f.commands.len(),
                f.commands
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !f.paths.is_empty() {
            out.push_str(&format!("Paths touched: {}.\n", f.paths.join("; ")));
        }
        if !f.findings.is_empty() {
            out.push_str(&format!(
                "The analyzer reported: {}.\n",
                f.findings.join("; ")
            ));
        }
        if !f.opaque.is_empty() {
            out.push_str(&format!("Not understood: {}.\n", f.opaque.join("; ")));
        }
        out.push_str("Steps, in order:\n");
        for s in &self.trace.steps {
            let what = match s.outcome {
                Outcome::Decided => "decided",
                Outcome::Matched => "matched",
                Outcome::NoMatch => "nothing applied",
                Outcome::Skipped => "skipped",
                Outcome::Note => "note",
            };
            out.push_str(&format!(
                "  - {} ({}): {what}",
                s.check,
                layer_word(s.layer)
            ));
            if let (Some(r), Some(src)) = (&s.rule, &s.source) {
                out.push_str(&format!(", rule `{r}` from {src}"));
            }
            if !s.detail.is_empty() {
                out.push_str(&format!(" — {}", s.detail));
            }
            out.push('\n');
        }
        out
    }
}
