//! One decision: the evaluation order, the hard and soft risk floor, and the trace.
//!
//! The profile's tool list → PreToolUse hook verdict (a hook deny wins; a hook allow does
//! not skip deny or ask rules) → deny rules → hard risk floor → ask rules (then a hook's ask,
//! then a catastrophic call that managed settings lift to ask) → mode → a hook's allow →
//! allow rules → soft risk floor → prompt. In `dontAsk`, what would ask is refused. Each step
//! is one method, called in that order by `Engine::steps`.

use std::ops::ControlFlow;

use toolgate_protocol::{Decision, Layer, PermissionMode, Verdict};

use crate::engine::{Engine, PolicyRequest};
use crate::floor::{catastrophic, critical_deletion, names_only};
use crate::modes::{ModeStep, mode_step};
use crate::rules::index::{Cover, RuleSet, allow_cover};
use crate::rules::{Rule, RuleKind};
use crate::trace::{Outcome, Trace};
use crate::view::{Family, View};

impl Engine {
    /// Decides one call on its prepared `view`, recording every step consulted in `t`.
    pub(crate) fn evaluate(&self, req: &PolicyRequest<'_>, view: &View, t: &mut Trace) -> Verdict {
        match self.steps(req, view, t) {
            ControlFlow::Break(v) | ControlFlow::Continue(v) => v,
        }
    }

    /// The steps in their order of precedence (see the module doc); each returns `Break`
    /// with the verdict when it decides, so that no later step can override an earlier one.
    fn steps(
        &self,
        req: &PolicyRequest<'_>,
        view: &View,
        t: &mut Trace,
    ) -> ControlFlow<Verdict, Verdict> {
        // The session's rules as they stand when the decision starts.
        let session = self.session_rules();
        // 0. The profile's tool list.
        self.profile_step(req, t)?;
        // 1. Hook.
        hook_deny_step(req.hook, t)?;
        // 2. Deny rules.
        self.deny_step(req, view, t)?;
        // 2b. Hard risk floor.
        let forced_ask = self.hard_floor_step(req, view, t)?;
        // 3. Ask rules (they ask in every mode, bypass included), then a hook's ask, then
        // the catastrophic floor lifted to ask.
        self.ask_step(req, view, forced_ask, t)?;
        // 4. Mode, then a hook's allow.
        let allowed = match self.mode_decides(req, view, t)? {
            Some(v) => Some(v),
            None => hook_allow(req.hook, t),
        };
        // 5. Allow rules.
        let allowed = match allowed {
            Some(v) => Ok(v),
            None => self.allow_rules_step(req, view, &session, t),
        };
        ControlFlow::Continue(match allowed {
            // 6. Soft risk floor.
            Ok(v) => self.soft_floor_step(v, req.mode, view, t),
            // 7. Nothing approved it.
            Err(uncovered) => self.unapproved(req, view, uncovered, t),
        })
    }

    /// A profile limits the session to its tools: any other tool is refused before anything
    /// else is looked at.
    fn profile_step(&self, req: &PolicyRequest<'_>, t: &mut Trace) -> ControlFlow<Verdict> {
        let Some(p) = &self.profile else {
            return ControlFlow::Continue(());
        };
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
            return ControlFlow::Break(
                Verdict::new(Decision::Deny, Layer::Rule, why)
                    .with_rule(format!("profile {} tools", p.name), p.source.clone()),
            );
        }
        t.step(
            Layer::Rule,
            "profile tool list",
            Outcome::NoMatch,
            format!("{} is in profile {}", req.tool, p.name),
        );
        ControlFlow::Continue(())
    }

    /// Deny rules: the first that matches refuses the call, in every mode.
    fn deny_step(
        &self,
        req: &PolicyRequest<'_>,
        view: &View,
        t: &mut Trace,
    ) -> ControlFlow<Verdict> {
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
            return ControlFlow::Break(
                Verdict::new(Decision::Deny, Layer::Rule, reason)
                    .with_rule(hit.rule.text.clone(), hit.rule.source.to_string()),
            );
        }
        t.step(Layer::Rule, "deny rules", Outcome::NoMatch, "");
        ControlFlow::Continue(())
    }

    /// The hard risk floor: a catastrophic call is refused in every mode, unless managed
    /// settings lift it to ask — then the reason is returned, to ask after the ask rules.
    fn hard_floor_step(
        &self,
        req: &PolicyRequest<'_>,
        view: &View,
        t: &mut Trace,
    ) -> ControlFlow<Verdict, Option<String>> {
        let Some(why) = self.hard_floor(req, view) else {
            t.step(
                Layer::Risk,
                "risk floor: catastrophic",
                Outcome::NoMatch,
                "",
            );
            return ControlFlow::Continue(None);
        };
        match &self.catastrophic_ask {
            None => {
                t.step(
                    Layer::Risk,
                    "risk floor: catastrophic",
                    Outcome::Decided,
                    why.clone(),
                );
                ControlFlow::Break(Verdict::new(
                    Decision::Deny,
                    Layer::Risk,
                    format!(
                        "{why}; this is refused in every mode (only managed settings can change that)"
                    ),
                ))
            }
            Some(src) => {
                t.step(
                    Layer::Risk,
                    "risk floor: catastrophic",
                    Outcome::Matched,
                    format!("{why}; lifted to ask by {src}"),
                );
                ControlFlow::Continue(Some(why))
            }
        }
    }

    /// What asks whatever the mode: an ask rule, then a hook's ask, then a catastrophic call
    /// that managed settings allow only with approval.
    fn ask_step(
        &self,
        req: &PolicyRequest<'_>,
        view: &View,
        forced_ask: Option<String>,
        t: &mut Trace,
    ) -> ControlFlow<Verdict> {
        let mode = req.mode;
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
            return ControlFlow::Break(self.final_ask(v, mode, t));
        }
        t.step(Layer::Rule, "ask rules", Outcome::NoMatch, "");
        if let Some(h) = req.hook.filter(|h| h.decision == Decision::Ask) {
            let mut v = h.clone();
            v.layer = Layer::Hook;
            return ControlFlow::Break(self.final_ask(v, mode, t));
        }
        if let Some(why) = forced_ask {
            let v = Verdict::new(
                Decision::Ask,
                Layer::Risk,
                format!("{why}; managed settings allow it only with approval"),
            );
            return ControlFlow::Break(self.final_ask(v, mode, t));
        }
        ControlFlow::Continue(())
    }

    /// The permission mode: it may deny, ask, allow outright (bypassPermissions), or allow
    /// subject to the soft risk floor (returned); `None` when the mode does not decide.
    fn mode_decides(
        &self,
        req: &PolicyRequest<'_>,
        view: &View,
        t: &mut Trace,
    ) -> ControlFlow<Verdict, Option<Verdict>> {
        let mode = req.mode;
        match mode_step(req, view, self.guard) {
            ModeStep::Deny(why) => {
                t.step(
                    Layer::Mode,
                    "permission mode",
                    Outcome::Decided,
                    why.clone(),
                );
                ControlFlow::Break(Verdict::new(Decision::Deny, Layer::Mode, why))
            }
            ModeStep::Ask(why) => {
                t.step(
                    Layer::Mode,
                    "permission mode",
                    Outcome::Decided,
                    why.clone(),
                );
                ControlFlow::Break(self.final_ask(
                    Verdict::new(Decision::Ask, Layer::Mode, why),
                    mode,
                    t,
                ))
            }
            ModeStep::Allow(why) if mode == PermissionMode::BypassPermissions => {
                t.step(
                    Layer::Mode,
                    "permission mode",
                    Outcome::Decided,
                    why.clone(),
                );
                ControlFlow::Break(Verdict::new(Decision::Allow, Layer::Mode, why))
            }
            ModeStep::Allow(why) => {
                t.step(
                    Layer::Mode,
                    "permission mode",
                    Outcome::Matched,
                    why.clone(),
                );
                ControlFlow::Continue(Some(Verdict::new(Decision::Allow, Layer::Mode, why)))
            }
            ModeStep::Continue => {
                t.step(
                    Layer::Mode,
                    "permission mode",
                    Outcome::NoMatch,
                    format!("{mode} mode does not decide this call"),
                );
                ControlFlow::Continue(None)
            }
        }
    }

    /// The allow rules, the session's included: `Ok` with the allowing verdict, or `Err` with
    /// why they do not cover the call (empty when there is nothing specific to say).
    fn allow_rules_step(
        &self,
        req: &PolicyRequest<'_>,
        view: &View,
        session: &RuleSet,
        t: &mut Trace,
    ) -> Result<Verdict, String> {
        let skip_broad = req.mode == PermissionMode::Auto;
        if skip_broad {
            t.step(Layer::Rule, "allow rules", Outcome::Note, "auto mode ignores broad allow rules (Bash(*), interpreters, package-manager runners, Agent)");
        }
        let cover = allow_cover(
            &[&self.rules, session],
            req.tool,
            req.input,
            view,
            skip_broad,
        );
        allow_verdict(view, &cover, t)
    }

    /// Soft risk floor: protected paths are never written without approval.
    fn soft_floor_step(
        &self,
        allowed: Verdict,
        mode: PermissionMode,
        view: &View,
        t: &mut Trace,
    ) -> Verdict {
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
        allowed
    }

    /// Nothing approved it: ask. When what toolgate found is the reason a person must
    /// look (a high-risk finding, a part it cannot see through, credentials read), the
    /// ask is the risk floor's; otherwise it is only the default.
    fn unapproved(
        &self,
        req: &PolicyRequest<'_>,
        view: &View,
        uncovered: String,
        t: &mut Trace,
    ) -> Verdict {
        let mode = req.mode;
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

/// A PreToolUse hook's verdict, first of all: a hook deny wins; any other answer is noted
/// and the deny and ask rules still apply.
fn hook_deny_step(hook: Option<&Verdict>, t: &mut Trace) -> ControlFlow<Verdict> {
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
            return ControlFlow::Break(v);
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
    ControlFlow::Continue(())
}

/// A hook's allow, when the mode did not allow: it stands in for an allow rule, so it still
/// meets the soft risk floor.
fn hook_allow(hook: Option<&Verdict>, t: &mut Trace) -> Option<Verdict> {
    let h = hook.filter(|h| h.decision == Decision::Allow)?;
    t.step(
        Layer::Hook,
        "hook allow",
        Outcome::Matched,
        h.reason.clone(),
    );
    let mut v = h.clone();
    v.layer = Layer::Hook;
    Some(v)
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

pub(crate) fn allow_verdict(
    view: &View,
    cover: &Cover<'_>,
    t: &mut Trace,
) -> Result<Verdict, String> {
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
