//! Parameter expansion (`$x`, `${x:-d}`, `${!p}`, `${a[@]}`, `${x,,}`, `${x%s}`, `${x/a/b}`,
//! `${x:1:2}`) from tracked assignments; anything unknown stays unknown.

use brush_parser::word::{Parameter, ParameterExpr, SpecialParameter};

use crate::expand::PVal;
use crate::walk::Walker;
use crate::words::{DEFAULT_IFS, Val, change_case, decode_ansi_c, has_glob};

/// The values of a parameter, one per element.
fn scalar(v: Val) -> Vec<String> {
    match v {
        Val::Scalar(s) => vec![s],
        Val::Array(a) => a,
        Val::Unknown => Vec::new(),
    }
}

impl Walker<'_> {
    pub(crate) fn lookup(&mut self, p: &Parameter) -> Option<Val> {
        match p {
            Parameter::Positional(0) => self.vars.arg0.clone().map(Val::Scalar),
            Parameter::Positional(n) => {
                let pos = self.vars.positional.as_ref()?;
                Some(Val::Scalar(
                    pos.get(*n as usize - 1).cloned().unwrap_or_default(),
                ))
            }
            Parameter::Special(SpecialParameter::AllPositionalParameters { .. }) => {
                self.vars.positional.clone().map(Val::Array)
            }
            // The pid of the job this command sent to the background: kept as a name, so a
            // `kill "$!"` is known to signal the command's own process.
            Parameter::Special(SpecialParameter::LastBackgroundProcessId) => {
                Some(Val::Scalar("$!".to_owned()))
            }
            Parameter::Special(_) => None,
            Parameter::Named(name) if name == "IFS" => Some(
                self.vars
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| Val::Scalar(DEFAULT_IFS.to_owned())),
            ),
            Parameter::Named(name) => {
                if self.vars.secret.contains(name) {
                    self.secret_read = true;
                }
                if let Some(why) = self.vars.untrusted.clone() {
                    self.opaque(format!("{why}, so `${name}` may have any value"));
                }
                self.vars.get(name).cloned()
            }
            Parameter::NamedWithIndex { name, index } => {
                match (self.vars.get(name), index.parse::<usize>()) {
                    (Some(Val::Array(a)), Ok(i)) => {
                        Some(Val::Scalar(a.get(i).cloned().unwrap_or_default()))
                    }
                    (Some(Val::Scalar(s)), Ok(0)) => Some(Val::Scalar(s.clone())),
                    _ => None,
                }
            }
            Parameter::NamedWithAllIndices { name, .. } => match self.vars.get(name) {
                Some(Val::Array(a)) => Some(Val::Array(a.clone())),
                Some(Val::Scalar(s)) => Some(Val::Array(vec![s.clone()])),
                _ => None,
            },
        }
    }

    pub(crate) fn resolve(&mut self, p: &Parameter, indirect: bool) -> Option<Val> {
        let v = self.lookup(p)?;
        if !indirect {
            return match v {
                Val::Unknown => None,
                v => Some(v),
            };
        }
        match v {
            Val::Scalar(name) => self
                .lookup(&Parameter::Named(name))
                .filter(|v| *v != Val::Unknown),
            _ => None,
        }
    }

    pub(crate) fn expand_text(&mut self, raw: &str) -> Option<String> {
        let fields = self.expand_word(raw);
        if fields.iter().any(|f| f.dynamic) {
            return None;
        }
        Some(
            fields
                .into_iter()
                .map(|f| f.text)
                .collect::<Vec<_>>()
                .join(" "),
        )
    }

    pub(crate) fn param(&mut self, expr: &ParameterExpr, _in_dq: bool) -> PVal {
        match expr {
            ParameterExpr::Parameter {
                parameter,
                indirect,
            } => match self.resolve(parameter, *indirect) {
                Some(v) => PVal::Known(scalar(v)),
                None => PVal::Unknown,
            },
            ParameterExpr::UseDefaultValues { .. } | ParameterExpr::AssignDefaultValues { .. } => {
                self.param_default(expr)
            }
            ParameterExpr::UseAlternativeValue {
                parameter,
                indirect,
                alternative_value,
                ..
            } => {
                let v = self.resolve(parameter, *indirect);
                let alt = self.expand_text(alternative_value.as_deref().unwrap_or(""));
                match v {
                    Some(Val::Scalar(s)) if s.is_empty() => PVal::Known(vec![String::new()]),
                    Some(_) => alt.map_or(PVal::Unknown, |a| PVal::Known(vec![a])),
                    None => PVal::Unknown,
                }
            }
            ParameterExpr::IndicateErrorIfNullOrUnset {
                parameter,
                indirect,
                ..
            } => match self.resolve(parameter, *indirect) {
                Some(v) => PVal::Known(scalar(v)),
                None => env_spelling(parameter, *indirect),
            },
            ParameterExpr::UppercaseFirstChar { .. }
            | ParameterExpr::UppercasePattern { .. }
            | ParameterExpr::LowercaseFirstChar { .. }
            | ParameterExpr::LowercasePattern { .. } => self.param_case(expr),
            ParameterExpr::Transform { .. } => self.param_transform(expr),
            ParameterExpr::RemoveSmallestSuffixPattern { .. }
            | ParameterExpr::RemoveLargestSuffixPattern { .. }
            | ParameterExpr::RemoveSmallestPrefixPattern { .. }
            | ParameterExpr::RemoveLargestPrefixPattern { .. } => self.param_trim(expr),
            ParameterExpr::Substring { .. } => self.param_substring(expr),
            ParameterExpr::ReplaceSubstring { .. } => self.param_replace(expr),
            ParameterExpr::ParameterLength { .. }
            | ParameterExpr::VariableNames { .. }
            | ParameterExpr::MemberKeys { .. } => PVal::Unknown,
        }
    }

    /// One family of `ParameterExpr`s (see [`Walker::param`]).
    fn param_default(&mut self, expr: &ParameterExpr) -> PVal {
        match expr {
            ParameterExpr::UseDefaultValues {
                parameter,
                indirect,
                default_value,
                ..
            }
            | ParameterExpr::AssignDefaultValues {
                parameter,
                indirect,
                default_value,
                ..
            } => {
                let v = self.resolve(parameter, *indirect);
                let empty = v
                    .as_ref()
                    .is_none_or(|v| matches!(v, Val::Scalar(s) if s.is_empty()));
                let default = default_value.as_deref().unwrap_or("");
                if let (Some(v), false) = (v.clone(), empty) {
                    return PVal::Known(scalar(v));
                }
                let d = self.expand_text(default);
                // `${x:=d}` assigns when it substitutes; an unknown `x` may or may not be set.
                if matches!(expr, ParameterExpr::AssignDefaultValues { .. })
                    && let (Parameter::Named(name), false) = (parameter, *indirect)
                {
                    let val = match (&v, &d) {
                        (Some(_), Some(d)) => Val::Scalar(d.clone()),
                        _ => Val::Unknown,
                    };
                    let cond = self.cond > 0;
                    self.vars.assign(name, val, cond);
                }
                match (v, d) {
                    (Some(_), Some(d)) => PVal::Known(vec![d]),
                    (None, _) => env_spelling(parameter, *indirect),
                    _ => PVal::Unknown,
                }
            }
            _ => PVal::Unknown,
        }
    }

    /// One family of `ParameterExpr`s (see [`Walker::param`]).
    fn param_case(&mut self, expr: &ParameterExpr) -> PVal {
        match expr {
            ParameterExpr::UppercaseFirstChar {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::UppercasePattern {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::LowercaseFirstChar {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::LowercasePattern {
                parameter,
                indirect,
                ..
            } => {
                let (upper, first) = match expr {
                    ParameterExpr::UppercaseFirstChar { .. } => (true, true),
                    ParameterExpr::UppercasePattern { .. } => (true, false),
                    ParameterExpr::LowercaseFirstChar { .. } => (false, true),
                    _ => (false, false),
                };
                match self.resolve(parameter, *indirect) {
                    Some(v) => PVal::Known(
                        scalar(v)
                            .iter()
                            .map(|s| change_case(s, upper, first))
                            .collect(),
                    ),
                    None => PVal::Unknown,
                }
            }
            _ => PVal::Unknown,
        }
    }

    /// One family of `ParameterExpr`s (see [`Walker::param`]).
    fn param_transform(&mut self, expr: &ParameterExpr) -> PVal {
        match expr {
            ParameterExpr::Transform {
                parameter,
                indirect,
                op,
            } => {
                use brush_parser::word::ParameterTransformOp as Op;
                let value = self.resolve(parameter, *indirect);
                if let (Op::PromptExpand, Some(v)) = (op, &value) {
                    // `${x@P}` expands the value as a prompt: its `$(…)` run.
                    for s in scalar(v.clone()) {
                        if s.contains("$(") || s.contains('`') {
                            let _ = self.expand_word(&s);
                        }
                    }
                    return PVal::Unknown;
                }
                match (value, op) {
                    (Some(v), Op::ToLowerCase) => {
                        PVal::Known(scalar(v).iter().map(|s| s.to_lowercase()).collect())
                    }
                    (Some(v), Op::ToUpperCase) => {
                        PVal::Known(scalar(v).iter().map(|s| s.to_uppercase()).collect())
                    }
                    (Some(v), Op::ExpandEscapeSequences) => {
                        PVal::Known(scalar(v).iter().map(|s| decode_ansi_c(s)).collect())
                    }
                    (Some(v), Op::Quoted | Op::PossiblyQuoteWithArraysExpanded { .. }) => {
                        PVal::Known(scalar(v))
                    }
                    _ => PVal::Unknown,
                }
            }
            _ => PVal::Unknown,
        }
    }

    /// One family of `ParameterExpr`s (see [`Walker::param`]).
    fn param_trim(&mut self, expr: &ParameterExpr) -> PVal {
        match expr {
            ParameterExpr::RemoveSmallestSuffixPattern {
                parameter,
                indirect,
                pattern,
            }
            | ParameterExpr::RemoveLargestSuffixPattern {
                parameter,
                indirect,
                pattern,
            }
            | ParameterExpr::RemoveSmallestPrefixPattern {
                parameter,
                indirect,
                pattern,
            }
            | ParameterExpr::RemoveLargestPrefixPattern {
                parameter,
                indirect,
                pattern,
            } => {
                let suffix = matches!(
                    expr,
                    ParameterExpr::RemoveSmallestSuffixPattern { .. }
                        | ParameterExpr::RemoveLargestSuffixPattern { .. }
                );
                let v = self.resolve(parameter, *indirect);
                let pat = self.expand_text(pattern.as_deref().unwrap_or(""));
                match (v, pat) {
                    (Some(v), Some(pat)) if !has_glob(&pat) => PVal::Known(
                        scalar(v)
                            .into_iter()
                            .map(|s| {
                                let r = if suffix {
                                    s.strip_suffix(pat.as_str())
                                } else {
                                    s.strip_prefix(pat.as_str())
                                };
                                r.map_or(s.clone(), str::to_owned)
                            })
                            .collect(),
                    ),
                    _ => PVal::Unknown,
                }
            }
            _ => PVal::Unknown,
        }
    }

    /// One family of `ParameterExpr`s (see [`Walker::param`]).
    fn param_substring(&mut self, expr: &ParameterExpr) -> PVal {
        match expr {
            ParameterExpr::Substring {
                parameter,
                indirect,
                offset,
                length,
            } => {
                let v = self.resolve(parameter, *indirect);
                let off = offset.value.trim().parse::<i64>().ok();
                let len = match length {
                    Some(l) => l.value.trim().parse::<i64>().ok().map(Some),
                    None => Some(None),
                };
                match (v, off, len) {
                    (Some(Val::Scalar(s)), Some(off), Some(len)) => {
                        let chars: Vec<char> = s.chars().collect();
                        let n = chars.len() as i64;
                        let start = if off < 0 {
                            (n + off).max(0)
                        } else {
                            off.min(n)
                        };
                        let end = match len {
                            Some(l) if l < 0 => (n + l).max(start),
                            Some(l) => (start + l).min(n),
                            None => n,
                        };
                        let (start, end) = (
                            usize::try_from(start).unwrap_or(0),
                            usize::try_from(end).unwrap_or(0),
                        );
                        PVal::Known(vec![
                            chars
                                .get(start..end)
                                .map(|c| c.iter().collect())
                                .unwrap_or_default(),
                        ])
                    }
                    _ => PVal::Unknown,
                }
            }
            _ => PVal::Unknown,
        }
    }

    /// One family of `ParameterExpr`s (see [`Walker::param`]).
    fn param_replace(&mut self, expr: &ParameterExpr) -> PVal {
        match expr {
            ParameterExpr::ReplaceSubstring {
                parameter,
                indirect,
                pattern,
                replacement,
                match_kind,
            } => {
                use brush_parser::word::SubstringMatchKind as K;
                let v = self.resolve(parameter, *indirect);
                let pat = self.expand_text(pattern);
                let rep = self.expand_text(replacement.as_deref().unwrap_or(""));
                match (v, pat, rep) {
                    (Some(v), Some(pat), Some(rep)) if !has_glob(&pat) && !pat.is_empty() => {
                        PVal::Known(
                            scalar(v)
                                .into_iter()
                                .map(|s| match match_kind {
                                    K::Anywhere => s.replace(&pat, &rep),
                                    K::FirstOccurrence => s.replacen(&pat, &rep, 1),
                                    K::Prefix => s
                                        .strip_prefix(pat.as_str())
                                        .map_or(s.clone(), |r| format!("{rep}{r}")),
                                    K::Suffix => s
                                        .strip_suffix(pat.as_str())
                                        .map_or(s.clone(), |r| format!("{r}{rep}")),
                                })
                                .collect(),
                        )
                    }
                    _ => PVal::Unknown,
                }
            }
            _ => PVal::Unknown,
        }
    }
}

/// For an unknown `$HOME` or `$PWD` with a default (`${HOME:-/}`, `${PWD:?}`): the
/// variable's own spelling, which path resolution reads as the home or working directory.
/// Both are set in any shell an agent runs, so the default never applies. Other variables
/// (`$TMPDIR` is often unset) stay unknown.
fn env_spelling(parameter: &Parameter, indirect: bool) -> PVal {
    match parameter {
        Parameter::Named(name) if !indirect && matches!(name.as_str(), "HOME" | "PWD") => {
            PVal::UnknownAs(format!("${{{name}}}"))
        }
        _ => PVal::Unknown,
    }
}
