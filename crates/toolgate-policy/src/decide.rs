//! One decision: the evaluation order, the hard and soft risk floor, and the trace.
//!
//! PreToolUse hook verdict (a hook deny wins; a hook allow does not skip deny or ask rules)
//! → deny rules → hard risk floor → ask rules → mode → allow rules → soft risk floor →
//! prompt. In `dontAsk`, what would ask is refused.

use toolgate_protocol::{Decision, Layer, PermissionMode, Verdict};

use crate::engine::{Engine, PolicyRequest};
use crate::floor::{catastrophic, critical_deletion, names_only};
use crate::modes::{ModeStep, mode_step};
use crate::rules::index::{Cover, allow_cover};
use crate::rules::{Rule, RuleKind};
use crate::trace::{Outcome, Trace};
use crate::view::{Family, View};

impl Engine {
    pub(crate) fn evaluate(&self, req: &PolicyRequest<'_>, view: &View, t: &mut Trace) -> Verdict {
        let mode = req.mode;
        let session = self.session_rules();
        // 0. The profile's tool list.
        if let Some(p) = &self.profile {
            if !p.allows_tool(req.tool) {
                let why = format!(
                    "the profile `{}` does not include {}; use one of its tools: {}",
                    p.name,
                    req.tool,
                    p.tools_text()
                );
                t.rule_step(
                    Layer::Rule,
                    "profile tool list",
                    Outcome::Decided,
                    why.clone(),
                    &p.tools_text(),
                    &p.source,
                );
                return Verdict::new(Decision::Deny, Layer::Rule, why)
                    .with_rule(format!("profile {} tools", p.name), p.source.clone());
            }
            t.step(
                Layer::Rule,
                "profile tool list",
                Outcome::NoMatch,
                format!("{} is in profile {}", req.tool, p.name),
            );
        }
        // 1. Hook.
        let hook = req.hook;
        match hook {
            Some(h) if h.decision == Decision::Deny => {
                t.step(
                    Layer::Hook,
                    "PreToolUse hook",
                    Outcome::Decided,
                    h.reason.clone(),
                );
                let mut v = h.clone();
                v.layer = Layer::Hook;
                return v;
            }
            Some(h) => t.step(
                Layer::Hook,
                "PreToolUse hook",
                Outcome::Matched,
                format!(
                    "the hook said {:?}; deny and ask rules still apply",
                    h.decision
                )
                .to_lowercase(),
            ),
            None => t.step(
                Layer::Hook,
                "PreToolUse hook",
                Outcome::NoMatch,
                "no hook decided",
            ),
        }
        // 2. Deny rules.
        let deny = self
            .rules
            .first_match(RuleKind::Deny, req.tool, req.input, view);
        if let Some(hit) = deny {
            let reason = deny_reason(hit.rule, &hit.detail);
            t.rule_step(
                Layer::Rule,
                "deny rules",
                Outcome::Decided,
                hit.detail.clone(),
                &hit.rule.text,
                &hit.rule.source,
            );
            return Verdict::new(Decision::Deny, Layer::Rule, reason)
                .with_rule(hit.rule.text.clone(), hit.rule.source.to_string());
        }
        t.step(Layer::Rule, "deny rules", Outcome::NoMatch, "");
        // 2b. Hard risk floor.
        let mut forced_ask = None;
        if let Some(why) = self.hard_floor(req, view) {
            match &self.catastrophic_ask {
                None => {
                    t.step(
                        Layer::Risk,
                        "risk floor: catastrophic",
                        Outcome::Decided,
                        why.clone(),
                    );
                    return Verdict::new(
                        Decision::Deny,
                        Layer::Risk,
                        format!(
                            "{why}; this is refused in every mode (only managed settings can change that)"
                        ),
                    );
                }
                Some(src) => {
                    t.step(
                        Layer::Risk,
                        "risk floor: catastrophic",
                        Outcome::Matched,
                        format!("{why}; lifted to ask by {src}"),
                    );
                    forced_ask = Some(why);
                }
            }
        } else {
            t.step(
                Layer::Risk,
                "risk floor: catastrophic",
                Outcome::NoMatch,
                "",
            );
        }
        // 3. Ask rules (they ask in every mode, bypass included).
        let ask = self
            .rules
            .first_match(RuleKind::Ask, req.tool, req.input, view);
        if let Some(hit) = ask {
            t.rule_step(
                Layer::Rule,
                "ask rules",
                Outcome::Decided,
                hit.detail.clone(),
                &hit.rule.text,
                &hit.rule.source,
            );
            let v = Verdict::new(
                Decision::Ask,
                Layer::Rule,
                format!(
                    "the ask rule `{}` requires approval{}",
                    hit.rule.text,
                    detail_suffix(&hit.detail)
                ),
            )
            .with_rule(hit.rule.text.clone(), hit.rule.source.to_string());
            return self.final_ask(v, mode, t);
        }
        t.step(Layer::Rule, "ask rules", Outcome::NoMatch, "");
        if let Some(h) = hook.filter(|h| h.decision == Decision::Ask) {
            let mut v = h.clone();
            v.layer = Layer::Hook;
            return self.final_ask(v, mode, t);
        }
        if let Some(why) = forced_ask {
            let v = Verdict::new(
                Decision::Ask,
                Layer::Risk,
                format!("{why}; managed settings allow it only with approval"),
            );
            return self.final_ask(v, mode, t);
        }
        // 4. Mode.
        let mut allowed: Option<Verdict> = None;
        match mode_step(req, view, self.guard) {
            ModeStep::Deny(why) => {
                t.step(
                    Layer::Mode,
                    "permission mode",
                    Outcome::Decided,
                    why.clone(),
                );
                return Verdict::new(Decision::Deny, Layer::Mode, why);
            }
            ModeStep::Ask(why) => {
                t.step(
                    Layer::Mode,
                    "permission mode",
                    Outcome::Decided,
                    why.clone(),
                );
                return self.final_ask(Verdict::new(Decision::Ask, Layer::Mode, why), mode, t);
            }
            ModeStep::Allow(why) if mode == PermissionMode::BypassPermissions => {
                t.step(
                    Layer::Mode,
                    "permission mode",
                    Outcome::Decided,
                    why.clone(),
                );
                return Verdict::new(Decision::Allow, Layer::Mode, why);
            }
            ModeStep::Allow(why) => {
                t.step(
                    Layer::Mode,
                    "permission mode",
                    Outcome::Matched,
                    why.clone(),
                );
                allowed = Some(Verdict::new(Decision::Allow, Layer::Mode, why));
            }
            ModeStep::Continue => t.step(
                Layer::Mode,
                "permission mode",
                Outcome::NoMatch,
                format!("{mode} mode does not decide this call"),
            ),
        }
        if allowed.is_none()
            && let Some(h) = hook.filter(|h| h.decision == Decision::Allow)
        {
            t.step(
                Layer::Hook,
                "hook allow",
                Outcome::Matched,
                h.reason.clone(),
            );
            let mut v = h.clone();
            v.layer = Layer::Hook;
            allowed = Some(v);
        }
        // 5. Allow rules.
        let mut uncovered = String::new();
        if allowed.is_none() {
            let skip_broad = mode == PermissionMode::Auto;
            if skip_broad {
                t.step(Layer::Rule, "allow rules", Outcome::Note, "auto mode ignores broad allow rules (Bash(*), interpreters, package-manager runners, Agent)");
            }
            let cover = allow_cover(
                &[&self.rules, &session],
                req.tool,
                req.input,
                view,
                skip_broad,
            );
            match allow_verdict(view, &cover, t) {
                Ok(v) => allowed = Some(v),
                Err(why) => uncovered = why,
            }
        }
        // 6. Soft risk floor: protected paths are never written without approval.
        if let Some(v) = allowed {
            if let Some(p) = view.writes().find(|p| p.protected) {
                let why = format!(
                    "{} is a protected path; writes to it always need approval (outside bypassPermissions)",
                    p.path.display()
                );
                t.step(
                    Layer::Risk,
                    "risk floor: protected paths",
                    Outcome::Decided,
                    why.clone(),
                );
                return self.final_ask(Verdict::new(Decision::Ask, Layer::Risk, why), mode, t);
            }
            t.step(
                Layer::Risk,
                "risk floor: protected paths",
                Outcome::NoMatch,
                "",
            );
            return v;
        }
        // 7. Nothing approved it: ask. When what toolgate found is the reason a person must
        // look (a high-risk finding, a part it cannot see through, credentials read), the
        // ask is the risk floor's; otherwise it is only the default.
        let why = if uncovered.is_empty() {
            format!("no allow rule covers this {} call", req.tool)
        } else {
            uncovered
        };
        if let Some(risk) = risk_reason(req, view) {
            let why = format!("{risk}; {why}");
            t.step(
                Layer::Risk,
                "risk floor: needs a person",
                Outcome::Decided,
                why.clone(),
            );
            return self.final_ask(Verdict::new(Decision::Ask, Layer::Risk, why), mode, t);
        }
        t.step(Layer::Default, "default", Outcome::Decided, why.clone());
        self.final_ask(Verdict::new(Decision::Ask, Layer::Default, why), mode, t)
    }

    /// In `dontAsk`, what would ask is refused.
    fn final_ask(&self, v: Verdict, mode: PermissionMode, t: &mut Trace) -> Verdict {
        if mode != PermissionMode::DontAsk {
            return v;
        }
        t.step(
            Layer::Mode,
            "dontAsk mode",
            Outcome::Decided,
            "what would ask is refused",
        );
        let mut d = Verdict::new(
            Decision::Deny,
            Layer::Mode,
            format!(
                "dontAsk mode refuses calls that need approval ({})",
                v.reason
            ),
        );
        d.rule = v.rule;
        d.source = v.source;
        d
    }

    fn hard_floor(&self, req: &PolicyRequest<'_>, view: &View) -> Option<String> {
        if let Some(f) = catastrophic(&req.facts.findings) {
            return Some(format!(
                "the shell analyzer classed this as catastrophic ({}: {})",
                f.category, f.reason
            ));
        }
        view.paths
            .iter()
            .filter(|p| {
                p.access == toolgate_protocol::Access::Delete && !names_only(&p.beneath_only)
            })
            .find_map(|p| critical_deletion(&p.path, self.home.as_deref(), req.cwd, req.roots))
    }
}

/// Why what toolgate found needs a person, if it does: the analyzer's high-risk findings,
/// a part of the call it could not see through, a protected path written, or credentials
/// read.
fn risk_reason(req: &PolicyRequest<'_>, view: &View) -> Option<String> {
    let high: Vec<&str> = req
        .facts
        .findings
        .iter()
        .filter(|f| f.risk >= toolgate_protocol::Risk::High)
        .map(|f| f.reason.as_str())
        .collect();
    if !high.is_empty() {
        return Some(high.join("; "));
    }
    if !view.opaque.is_empty() || req.facts.opaque {
        let what = if view.opaque.is_empty() {
            "a part of the call".to_owned()
        } else {
            view.opaque.join("; ")
        };
        return Some(format!(
            "toolgate could not see what this call does ({what})"
        ));
    }
    if let Some(p) = view.writes().find(|p| p.protected) {
        return Some(format!(
            "{} is a protected path; writes to it always need approval",
            p.path.display()
        ));
    }
    view.secret_read()
        .map(|(p, kind)| format!("it reads {} ({kind})", p.path.display()))
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    }
}

fn deny_reason(rule: &Rule, detail: &str) -> String {
    format!(
        "denied by the rule `{}` from {}{}; do not retry this call in another form: ask the user, or do something else",
        rule.text,
        rule.source,
        detail_suffix(detail)
    )
}

fn allow_verdict(view: &View, cover: &Cover<'_>, t: &mut Trace) -> Result<Verdict, String> {
    let names = || {
        cover
            .used
            .iter()
            .map(|r| r.text.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let approve = |t: &mut Trace, r: &Rule, why: String| {
        t.rule_step(
            Layer::Rule,
            "allow rules",
            Outcome::Matched,
            why.clone(),
            &r.text,
            &r.source,
        );
        Verdict::new(Decision::Allow, Layer::Rule, why)
            .with_rule(r.text.clone(), r.source.to_string())
    };
    if cover.whole
        && let Some(r) = cover.used.first()
    {
        return Ok(approve(t, r, format!("allowed by the rule `{}`", r.text)));
    }
    let why = if let Some(&i) = cover.uncovered_subs.first() {
        let s = &view.subs[i];
        match &s.allow_blocked {
            Some(b) => b.clone(),
            None => format!("no allow rule covers the subcommand `{}`", s.allow_text),
        }
    } else if let Some(&i) = cover.uncovered_paths.first() {
        let p = &view.paths[i];
        let verb = if p.access == toolgate_protocol::Access::Read {
            "reading"
        } else {
            "writing"
        };
        let hint = if view.family == Family::Bash {
            " outside the workspace"
        } else {
            ""
        };
        format!("no allow rule covers {verb} {}{hint}", p.path.display())
    } else if let Some(b) = view
        .allow_blocked
        .as_ref()
        .filter(|_| view.family == Family::Bash)
    {
        b.clone()
    } else if view.family == Family::Bash && !view.opaque.is_empty() {
        format!(
            "part of the command is not understood ({}), so allow rules cannot approve it",
            view.opaque.join("; ")
        )
    } else if let Some(r) = cover.used.first()
        && matches!(view.family, Family::Bash | Family::Read | Family::Write)
        && (view.family != Family::Bash || !view.subs.is_empty())
    {
        let why = if view.family == Family::Bash {
            format!("every subcommand is allowed ({})", names())
        } else {
            format!("allowed by the rule `{}`", r.text)
        };
        return Ok(approve(t, r, why));
    } else {
        String::new()
    };
    t.step(Layer::Rule, "allow rules", Outcome::NoMatch, why.clone());
    Err(why)
}

pub(crate) fn summarize(view: &View, req: &PolicyRequest<'_>, t: &mut Trace) {
    let f = &mut t.facts;
    f.shell_facts = view.shell_facts;
    f.commands = view.subs.iter().map(|s| s.allow_text.clone()).collect();
    f.paths = view
        .paths
        .iter()
        .map(|p| {
            let mut s = format!(
                "{} {}",
                match p.access {
                    toolgate_protocol::Access::Read => "read",
                    toolgate_protocol::Access::Write => "write",
                    toolgate_protocol::Access::Delete => "delete",
                },
                p.path.display()
            );
            if p.protected {
                s.push_str(" [protected]");
            }
            if !p.inside {
                s.push_str(" [outside the workspace]");
            }
            s
        })
        .collect();
    f.hosts = view.hosts.clone();
    f.findings = req
        .facts
        .findings
        .iter()
        .map(|x| format!("{:?} {}: {}", x.risk, x.category, x.reason).to_lowercase())
        .collect();
    f.opaque = view.opaque.clone();
}
