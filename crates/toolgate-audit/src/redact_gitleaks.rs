//! gitleaks' published rule set, read as data: ≈220 provider-specific credential formats
//! (Stripe, Google, GitLab, npm, Hugging Face, Slack webhooks, …) maintained upstream with
//! their keywords, entropy floors and allowlists. The file is vendored unchanged in
//! `data/gitleaks/` (see its PROVENANCE.md); this module applies it the way gitleaks'
//! detector does, minus what needs a file path or commit.
//!
//! Cost: a rule runs only when one of its keywords occurs in the text (one Aho-Corasick
//! pass over all keywords, case-insensitively), and its regex is compiled on first use, so
//! a process pays for the few rules its inputs ever trigger, not for 220 regexes at start.
//!
//! The regexes are Go RE2 syntax, where `\w`, `\b`, `\s` and `(?i)` are ASCII-only; they
//! are compiled the same way here (bytes, Unicode off), which keeps their meaning and their
//! automata small. A match is widened to whole characters before it is masked.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;

/// The vendored rule file.
const GITLEAKS_TOML: &str = include_str!("../data/gitleaks/gitleaks.toml");

/// A finding: the byte range of a secret in the text and the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
    pub rule: &'static str,
}

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    allowlist: Option<AllowlistToml>,
    #[serde(default)]
    rules: Vec<RuleToml>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleToml {
    id: String,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    secret_group: Option<usize>,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    allowlists: Vec<AllowlistToml>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AllowlistToml {
    #[serde(default)]
    condition: Option<String>,
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    commits: Vec<String>,
}

/// What an allowlist's regexes are matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

#[derive(Debug)]
struct Allowlist {
    target: Target,
    regexes: Vec<Regex>,
    /// Any stopword, case-insensitively (gitleaks lowercases the secret; some rules list
    /// over a thousand stopwords, so one automaton, not a loop).
    stopwords: Option<AhoCorasick>,
    /// An `AND` allowlist with path or commit conditions: those are never met here.
    unreachable: bool,
    and: bool,
}

impl Allowlist {
    fn new(a: &AllowlistToml) -> Self {
        let and = a.condition.as_deref() == Some("AND");
        Self {
            target: match a.regex_target.as_deref() {
                Some("match") => Target::Match,
                Some("line") => Target::Line,
                _ => Target::Secret,
            },
            // An allowlist regex that does not compile allows nothing (masks more).
            regexes: a.regexes.iter().filter_map(|r| compile(r)).collect(),
            // A stopword list that does not build allows nothing (masks more).
            stopwords: (!a.stopwords.is_empty())
                .then(|| {
                    AhoCorasickBuilder::new()
                        .ascii_case_insensitive(true)
                        .build(&a.stopwords)
                        .ok()
                })
                .flatten(),
            unreachable: and && (!a.paths.is_empty() || !a.commits.is_empty()),
            and,
        }
    }

    /// gitleaks' `checkFindingAllowed` for one allowlist, without paths and commits.
    fn allows(&self, secret: &str, matched: &str, line: &str) -> bool {
        if self.unreachable {
            return false;
        }
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => matched,
            Target::Line => line,
        };
        let by_regex =
            !target.is_empty() && self.regexes.iter().any(|r| r.is_match(target.as_bytes()));
        let by_stopword =
            !secret.is_empty() && self.stopwords.as_ref().is_some_and(|s| s.is_match(secret));
        if self.and {
            let mut checks = Vec::new();
            if !self.regexes.is_empty() {
                checks.push(by_regex);
            }
            if self.stopwords.is_some() {
                checks.push(by_stopword);
            }
            !checks.is_empty() && checks.iter().all(|c| *c)
        } else {
            by_regex || by_stopword
        }
    }
}

/// One rule, its regex compiled on first use.
#[derive(Debug)]
pub(crate) struct Rule {
    pub id: &'static str,
    source: String,
    regex: OnceLock<Option<Regex>>,
    secret_group: usize,
    entropy: f64,
    allowlists: Vec<Allowlist>,
}

impl Rule {
    /// The compiled regex; `None` when Rust's engine cannot compile it.
    pub(crate) fn regex(&self) -> Option<&Regex> {
        self.regex.get_or_init(|| compile(&self.source)).as_ref()
    }

    #[cfg(test)]
    pub(crate) fn source(&self) -> &str {
        &self.source
    }
}

/// The loaded rule set.
#[derive(Debug)]
pub(crate) struct Gitleaks {
    pub rules: Vec<Rule>,
    keywords: AhoCorasick,
    /// For each keyword pattern of `keywords`, the rules it selects.
    keyword_rules: Vec<Vec<usize>>,
    /// Rules without keywords: run on every text.
    always: Vec<usize>,
    global: Option<Allowlist>,
}

/// Why the vendored file could not be used (a test makes sure it can).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    #[error("the vendored gitleaks rules do not parse: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("the gitleaks keywords do not build an automaton: {0}")]
    Keywords(#[from] aho_corasick::BuildError),
}

impl Gitleaks {
    /// The process-wide rule set, parsed on first use; `None` (with a warning on stderr
    /// once) if the vendored file were ever unusable — the built-in patterns still apply.
    pub(crate) fn shared() -> Option<&'static Gitleaks> {
        static RULES: OnceLock<Option<Gitleaks>> = OnceLock::new();
        RULES
            .get_or_init(|| match Self::parse(GITLEAKS_TOML) {
                Ok(g) => Some(g),
                Err(e) => {
                    eprintln!("toolgate: redaction runs without the gitleaks rules: {e}");
                    None
                }
            })
            .as_ref()
    }

    fn parse(text: &str) -> Result<Self, LoadError> {
        let file: File = toml::from_str(text)?;
        let mut rules = Vec::new();
        let mut words: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        for r in file.rules {
            // Path-only rules find files, not secrets in text.
            let Some(source) = r.regex else { continue };
            let index = rules.len();
            if r.keywords.is_empty() {
                always.push(index);
            }
            for k in &r.keywords {
                let k = k.to_lowercase();
                match words.iter().position(|w| *w == k) {
                    Some(i) => keyword_rules[i].push(index),
                    None => {
                        words.push(k);
                        keyword_rules.push(vec![index]);
                    }
                }
            }
            rules.push(Rule {
                // Rule ids live as long as the process (the set is loaded once).
                id: Box::leak(r.id.into_boxed_str()),
                source,
                regex: OnceLock::new(),
                secret_group: r.secret_group.unwrap_or(0),
                entropy: r.entropy.unwrap_or(0.0),
                allowlists: r.allowlists.iter().map(Allowlist::new).collect(),
            });
        }
        // A DFA: the keyword pass runs on every string of every record.
        let keywords = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&words)?;
        Ok(Self {
            rules,
            keywords,
            keyword_rules,
            always,
            global: file.allowlist.as_ref().map(Allowlist::new),
        })
    }

    /// The secrets in `text`, in no particular order (they may overlap).
    pub(crate) fn find(&self, text: &str, out: &mut Vec<Span>) {
        let mut selected: Vec<usize> = Vec::new();
        for m in self.keywords.find_overlapping_iter(text) {
            if let Some(rules) = self.keyword_rules.get(m.pattern().as_usize()) {
                selected.extend_from_slice(rules);
            }
        }
        if selected.is_empty() && self.always.is_empty() {
            return;
        }
        selected.extend_from_slice(&self.always);
        selected.sort_unstable();
        selected.dedup();
        for index in selected {
            if let Some(rule) = self.rules.get(index) {
                self.apply(rule, text, out);
            }
        }
    }

    fn apply(&self, rule: &Rule, text: &str, out: &mut Vec<Span>) {
        let Some(regex) = rule.regex() else { return };
        for caps in regex.captures_iter(text.as_bytes()) {
            let Some(whole) = caps.get(0) else { continue };
            // gitleaks: the secret group if set, else the first non-empty group, else all.
            let secret = if rule.secret_group > 0 {
                caps.get(rule.secret_group)
            } else {
                caps.iter().skip(1).flatten().find(|m| !m.is_empty())
            }
            .unwrap_or(whole);
            let (start, end) = char_bounds(text, secret.start(), secret.end());
            let (w_start, w_end) = char_bounds(text, whole.start(), whole.end());
            let (Some(secret_text), Some(matched)) =
                (text.get(start..end), text.get(w_start..w_end))
            else {
                continue;
            };
            let secret_text = secret_text.trim_matches('\n');
            if secret_text.is_empty() {
                continue;
            }
            if rule.entropy > 0.0 && shannon_entropy(secret_text) <= rule.entropy {
                continue;
            }
            let line = line_around(text, w_start, w_end);
            let allowed = self
                .global
                .iter()
                .chain(&rule.allowlists)
                .any(|a| a.allows(secret_text, matched, line));
            if allowed {
                continue;
            }
            out.push(Span {
                start,
                end,
                rule: rule.id,
            });
        }
    }
}

/// A gitleaks regex, compiled as Go reads it: ASCII classes and case folding, on bytes.
/// `None` when Rust's engine cannot compile it (a test lists such rules).
fn compile(source: &str) -> Option<Regex> {
    RegexBuilder::new(source).unicode(false).build().ok()
}

/// `start..end` widened to the nearest character boundaries of `text`.
fn char_bounds(text: &str, mut start: usize, mut end: usize) -> (usize, usize) {
    while start > 0 && !text.is_char_boundary(start) {
        start -= 1;
    }
    while end < text.len() && !text.is_char_boundary(end) {
        end += 1;
    }
    (start, end.min(text.len()))
}

/// The line of `text` holding `start..end`.
fn line_around(text: &str, start: usize, end: usize) -> &str {
    let from = text
        .get(..start)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1);
    let to = text
        .get(end..)
        .and_then(|t| t.find('\n'))
        .map_or(text.len(), |i| end + i);
    text.get(from..to).unwrap_or_default()
}

/// Shannon entropy in bits per character, as gitleaks computes it (over bytes).
pub(crate) fn shannon_entropy(s: &str) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum()
}
