//! Masking secrets in records before they are written.
//!
//! Two rules, both data in [`rules`](crate::rules):
//!
//! 1. **Keys.** A JSON key is sensitive when one of its words is in
//!    [`SENSITIVE_KEY_WORDS`] (words are split at `_`, `-`, `.`, spaces, camelCase humps and
//!    letter/digit changes, then lowercased; the whole key run together also counts, so
//!    `apikey` matches), or it contains one of [`SENSITIVE_KEY_SUBSTRINGS`], and none of its
//!    words is in [`EXEMPT_KEY_WORDS`]. A sensitive key's string or number value becomes
//!    `"[REDACTED]"`; in an array under it every string and number is masked; an object
//!    under it is walked with the same rules; booleans and null stay (they hold no secret).
//! 2. **Strings.** Every string anywhere (keys' values, array items, nested) is searched for
//!    the [`BUILTIN_PATTERNS`] (AWS, GitHub, Slack, Anthropic and OpenAI keys, JWTs, PEM
//!    private keys, `Authorization` headers, bearer tokens, URL passwords, `password=…`
//!    assignments) and the command-line patterns of [`redact_rules`] (`aws configure set`,
//!    `mysql -p…`, `sshpass -p`, Azure `AccountKey=`); each hit is replaced in place by
//!    `[REDACTED:<pattern name>]`.
//! 3. **Published rules.** Then gitleaks' rule set ([`redact_gitleaks`]: ≈220 provider
//!    formats, each with keywords, an entropy floor and allowlists), masked as
//!    `[REDACTED:<gitleaks rule id>]`.
//! 4. **Entropy.** Last, any long token that looks random ([`redact_entropy`]) becomes
//!    `[REDACTED:high_entropy]`.
//!
//! Masked text is never masked again, so redaction is idempotent.
//!
//! The same [`Redactor`] serves every consumer: the audit writer (whole records), hook
//! output the hooks crate records, and — the function for traffic that leaves or enters
//! through an MCP gateway — [`Redactor::redact_message`] for a JSON-RPC message and
//! [`Redactor::redact_str`] for text. [`Redactor::shared`] is a process-wide default one.

use regex::{Captures, Regex, RegexSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

use crate::AuditError;
use crate::rules::{
    BUILTIN_PATTERNS, EXEMPT_KEY_WORDS, PatternSpec, SENSITIVE_KEY_SUBSTRINGS, SENSITIVE_KEY_WORDS,
};

#[path = "redact_entropy.rs"]
mod redact_entropy;
#[path = "redact_gitleaks.rs"]
mod redact_gitleaks;
#[path = "redact_rules.rs"]
mod redact_rules;

/// Every built-in pattern: the base table, then the command-line additions.
fn builtin_patterns() -> impl Iterator<Item = &'static PatternSpec> {
    BUILTIN_PATTERNS
        .iter()
        .chain(redact_rules::COMMAND_LINE_PATTERNS)
}

/// Whether `word` is a built-in sensitive key word.
fn is_key_word(word: &str) -> bool {
    SENSITIVE_KEY_WORDS.contains(&word) || redact_rules::KEY_WORDS.contains(&word)
}

/// What a sensitive key's value becomes.
pub const REDACTED: &str = "[REDACTED]";

/// Prefix of every mask; text starting with it is not masked again.
const MASK_PREFIX: &str = "[REDACTED";

/// Redaction as it appears in settings: `{"enabled": true, "keys": [...], "patterns":
/// [{"name": ..., "regex": ...}]}`. Extra keys and patterns add to the built-in ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedactionConfig {
    /// `false` writes inputs as they are.
    pub enabled: bool,
    /// Extra key names (matched like the built-in words, case-insensitively).
    pub keys: Vec<String>,
    /// Extra patterns for credentials inside strings.
    pub patterns: Vec<ExtraPattern>,
}

impl Default for RedactionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            keys: Vec::new(),
            patterns: Vec::new(),
        }
    }
}

/// A user-supplied pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraPattern {
    /// Shown in the mask: `[REDACTED:<name>]`.
    pub name: String,
    /// Rust `regex` syntax; groups named `secret…` limit the mask to them.
    pub regex: String,
}

impl RedactionConfig {
    /// Compiles the configuration.
    pub fn build(&self) -> Result<Redactor, AuditError> {
        if !self.enabled {
            return Ok(Redactor::disabled());
        }
        let mut b = Redactor::builder();
        for k in &self.keys {
            b = b.key(k);
        }
        for p in &self.patterns {
            b = b.pattern(&p.name, &p.regex);
        }
        b.build()
    }
}

#[derive(Debug, Clone)]
struct Compiled {
    label: String,
    regex: Regex,
    needs_digit: bool,
    /// Indices of groups whose names start with `secret`.
    secret_groups: Vec<usize>,
}

impl Compiled {
    fn new(name: &str, regex: &str, needs_digit: bool) -> Result<Self, AuditError> {
        let regex = Regex::new(regex).map_err(|e| AuditError::Pattern {
            name: name.to_owned(),
            source: Box::new(e),
        })?;
        let secret_groups = regex
            .capture_names()
            .enumerate()
            .filter(|(_, n)| n.is_some_and(|n| n.starts_with("secret")))
            .map(|(i, _)| i)
            .collect();
        Ok(Self {
            label: format!("[REDACTED:{name}]"),
            regex,
            needs_digit,
            secret_groups,
        })
    }

    fn maskable(&self, text: &str) -> bool {
        !text.starts_with(MASK_PREFIX)
            && (!self.needs_digit || text.bytes().any(|b| b.is_ascii_digit()))
    }

    fn replace(&self, caps: &Captures<'_>) -> String {
        let Some(whole) = caps.get(0) else {
            return String::new();
        };
        let mut spans: Vec<_> = self
            .secret_groups
            .iter()
            .filter_map(|&i| caps.get(i))
            .collect();
        if spans.is_empty() && self.secret_groups.is_empty() {
            spans.push(whole);
        }
        spans.sort_by_key(|m| m.start());
        let (text, base) = (whole.as_str(), whole.start());
        // Masks already in the match (`-u [REDACTED:x]:` looks like `user:password`) are
        // never part of a new one: that keeps redaction idempotent.
        let masks: Vec<(usize, usize)> = existing_masks(text)
            .into_iter()
            .map(|(a, b)| (a + base, b + base))
            .collect();
        let mut out = String::with_capacity(text.len());
        let mut at = base;
        for m in spans {
            let in_mask = masks.iter().any(|(a, b)| m.start() < *b && *a < m.end());
            if m.start() < at || in_mask || !self.maskable(m.as_str()) {
                continue;
            }
            out.push_str(text.get(at - base..m.start() - base).unwrap_or_default());
            out.push_str(&self.label);
            at = m.end();
        }
        out.push_str(text.get(at - base..).unwrap_or_default());
        out
    }
}

/// Masks secrets in JSON values. Build once, use for every record; cloning is cheap.
///
/// ```
/// use toolgate_audit::Redactor;
/// let r = Redactor::default();
/// let mut v = serde_json::json!({
///     "command": "curl -H 'Authorization: Bearer abc123def456' https://x",
///     "api_key": "hunter2", "keyword": "kept"
/// });
/// r.redact(&mut v);
/// assert_eq!(v["api_key"], "[REDACTED]");
/// assert_eq!(v["keyword"], "kept");
/// assert!(!v["command"].as_str().unwrap().contains("abc123"));
/// ```
#[derive(Debug, Clone)]
pub struct Redactor {
    enabled: bool,
    builtin_keys: bool,
    extra_keys: Vec<String>,
    patterns: Vec<Compiled>,
    /// All patterns in one automaton: one pass tells which (if any) to run.
    prefilter: Option<RegexSet>,
    /// Any built-in key word, case-insensitively, anywhere in the key.
    key_prefilter: Option<Regex>,
    /// Apply gitleaks' rules and the entropy check after the patterns.
    published: bool,
}

impl Default for Redactor {
    /// The built-in key words and patterns.
    fn default() -> Self {
        // The built-in patterns compile (a unit test checks each); should one ever not, it is
        // skipped rather than disabling all redaction.
        let patterns: Vec<Compiled> = builtin_patterns()
            .filter_map(|p| Compiled::new(p.name, p.regex, p.needs_digit).ok())
            .collect();
        Self {
            enabled: true,
            builtin_keys: true,
            extra_keys: Vec::new(),
            prefilter: prefilter(&patterns),
            key_prefilter: key_prefilter(),
            patterns,
            published: true,
        }
    }
}

/// Strings up to this size are first checked against all patterns at once; longer ones go
/// pattern by pattern, since a combined automaton can exhaust its cache on large inputs and
/// fall back to a slower engine.
const PREFILTER_MAX_BYTES: usize = 64 * 1024;

fn prefilter(patterns: &[Compiled]) -> Option<RegexSet> {
    RegexSet::new(patterns.iter().map(|p| p.regex.as_str())).ok()
}

fn key_prefilter() -> Option<Regex> {
    let words: Vec<String> = SENSITIVE_KEY_WORDS
        .iter()
        .chain(redact_rules::KEY_WORDS)
        .map(|w| regex::escape(w))
        .collect();
    Regex::new(&format!("(?i){}", words.join("|"))).ok()
}

impl Redactor {
    /// Starts from the built-in rules; add keys and patterns, or switch the built-ins off.
    pub fn builder() -> RedactorBuilder {
        RedactorBuilder {
            builtin_keys: true,
            builtin_patterns: true,
            keys: Vec::new(),
            patterns: Vec::new(),
        }
    }

    /// A redactor that changes nothing.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            builtin_keys: false,
            extra_keys: Vec::new(),
            patterns: Vec::new(),
            prefilter: None,
            key_prefilter: None,
            published: false,
        }
    }

    /// The default redactor, built once per process: for callers without settings of their
    /// own (hook output, an MCP gateway's traffic). Compiling the patterns costs
    /// milliseconds; this pays it once.
    pub fn shared() -> &'static Redactor {
        static SHARED: std::sync::OnceLock<Redactor> = std::sync::OnceLock::new();
        SHARED.get_or_init(Redactor::default)
    }

    /// Masks secrets in a JSON-RPC message (an MCP request, response or notification)
    /// before it is logged, recorded or passed on: every string in `params`, `result` and
    /// `error` by the string rules, values under sensitive keys (`arguments.api_key`,
    /// `headers.Authorization`) by the key rules. The envelope (`jsonrpc`, `id`, `method`)
    /// holds no secret and is left alone, so the message still routes. Idempotent.
    pub fn redact_message(&self, message: &mut Value) {
        match message {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    if !matches!(key.as_str(), "jsonrpc" | "id" | "method") {
                        self.redact(value);
                    }
                }
            }
            // A batch, or something that is not a message: every string is fair game.
            other => self.redact(other),
        }
    }

    /// Whether this redactor masks anything.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Masks secrets in `value` in place (see the module rules). Walks iteratively, so deep
    /// values cannot overflow the stack.
    pub fn redact(&self, value: &mut Value) {
        if !self.enabled {
            return;
        }
        let mut stack: Vec<(&mut Value, bool)> = vec![(value, false)];
        while let Some((v, under_key)) = stack.pop() {
            match v {
                Value::String(s) if under_key => REDACTED.clone_into(s),
                Value::String(s) => {
                    if let Cow::Owned(masked) = self.redact_str(s) {
                        *s = masked;
                    }
                }
                Value::Number(_) if under_key => *v = Value::String(REDACTED.to_owned()),
                Value::Array(items) => stack.extend(items.iter_mut().map(|i| (i, under_key))),
                Value::Object(map) => {
                    for (k, item) in map.iter_mut() {
                        let sensitive = self.is_sensitive_key(k);
                        stack.push((item, sensitive));
                    }
                }
                Value::Number(_) | Value::Bool(_) | Value::Null => {}
            }
        }
    }

    /// Masks credentials found inside `text`. Linear in the text's length per pattern.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.enabled {
            return Cow::Borrowed(text);
        }
        let out = self.redact_patterns(text);
        if !self.published {
            return out;
        }
        match mask_published(&out) {
            Some(masked) => Cow::Owned(masked),
            None => out,
        }
    }

    fn redact_patterns<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        let hits = match &self.prefilter {
            Some(set) if text.len() <= PREFILTER_MAX_BYTES => {
                let hits = set.matches(text);
                if !hits.matched_any() {
                    return out;
                }
                Some(hits)
            }
            _ => None,
        };
        for (i, p) in self.patterns.iter().enumerate() {
            if hits.as_ref().is_some_and(|h| !h.matched(i)) {
                continue;
            }
            let replaced = match p.regex.replace_all(&out, |c: &Captures<'_>| p.replace(c)) {
                Cow::Owned(s) => Some(s),
                Cow::Borrowed(_) => None,
            };
            if let Some(s) = replaced {
                out = Cow::Owned(s);
            }
        }
        out
    }

    /// Whether a value under this key name is masked.
    pub fn is_sensitive_key(&self, key: &str) -> bool {
        if !self.enabled {
            return false;
        }
        // Fast path: every built-in word is a substring of the lowercased key it matches.
        if self.extra_keys.is_empty()
            && self
                .key_prefilter
                .as_ref()
                .is_some_and(|r| !r.is_match(key))
        {
            return false;
        }
        let words = key_words(key);
        let joined = words.concat();
        if self
            .extra_keys
            .iter()
            .any(|e| *e == joined || words.contains(e))
        {
            return true;
        }
        if !self.builtin_keys || words.iter().any(|w| EXEMPT_KEY_WORDS.contains(&w.as_str())) {
            return false;
        }
        words.iter().any(|w| is_key_word(w))
            || is_key_word(&joined)
            || SENSITIVE_KEY_SUBSTRINGS.iter().any(|s| joined.contains(s))
    }
}

/// Builds a [`Redactor`].
#[derive(Debug, Clone)]
pub struct RedactorBuilder {
    builtin_keys: bool,
    builtin_patterns: bool,
    keys: Vec<String>,
    patterns: Vec<(String, String)>,
}

impl RedactorBuilder {
    /// Use the built-in key words (default on).
    pub fn builtin_keys(mut self, yes: bool) -> Self {
        self.builtin_keys = yes;
        self
    }

    /// Use the built-in patterns (default on).
    pub fn builtin_patterns(mut self, yes: bool) -> Self {
        self.builtin_patterns = yes;
        self
    }

    /// Also mask values under keys with this word (or this whole name), case-insensitively.
    pub fn key(mut self, name: impl AsRef<str>) -> Self {
        self.keys.push(key_words(name.as_ref()).concat());
        self
    }

    /// Also mask matches of this regex inside strings, shown as `[REDACTED:<name>]`.
    pub fn pattern(mut self, name: impl Into<String>, regex: impl Into<String>) -> Self {
        self.patterns.push((name.into(), regex.into()));
        self
    }

    /// Compiles the patterns; fails on an invalid regex, naming it.
    pub fn build(self) -> Result<Redactor, AuditError> {
        let mut patterns = Vec::new();
        if self.builtin_patterns {
            for p in builtin_patterns() {
                patterns.push(Compiled::new(p.name, p.regex, p.needs_digit)?);
            }
        }
        for (name, regex) in &self.patterns {
            patterns.push(Compiled::new(name, regex, false)?);
        }
        Ok(Redactor {
            enabled: true,
            builtin_keys: self.builtin_keys,
            extra_keys: self.keys.into_iter().filter(|k| !k.is_empty()).collect(),
            prefilter: prefilter(&patterns),
            key_prefilter: key_prefilter(),
            patterns,
            published: self.builtin_patterns,
        })
    }
}

/// Strings shorter than this skip the published rules and the entropy check: the shortest
/// secret they can find is longer (gitleaks' generic rule needs a keyword, an operator and
/// 10+ characters above its entropy floor, ≥16 bytes in all; provider formats and the
/// entropy check need 20–32+), and most strings of a record are short (`"pass"`,
/// `"Bash"`). Measured: halves the cost of a typical call record.
const MIN_PUBLISHED_BYTES: usize = 16;

/// Masks what gitleaks' rules and the entropy check find in `text` (outside masks already
/// there); `None` when they find nothing.
fn mask_published(text: &str) -> Option<String> {
    if text.len() < MIN_PUBLISHED_BYTES {
        return None;
    }
    let mut spans: Vec<(usize, usize, &str)> = Vec::new();
    if let Some(rules) = redact_gitleaks::Gitleaks::shared() {
        let mut found = Vec::new();
        rules.find(text, &mut found);
        spans.extend(found.into_iter().map(|s| (s.start, s.end, s.rule)));
    }
    let mut tokens = Vec::new();
    redact_entropy::find(text, &mut tokens);
    spans.extend(
        tokens
            .into_iter()
            .map(|(a, b)| (a, b, redact_entropy::HIGH_ENTROPY)),
    );
    if spans.is_empty() {
        return None;
    }
    let masks = existing_masks(text);
    spans.retain(|(a, b, _)| !masks.iter().any(|(m0, m1)| a < m1 && m0 < b));
    if spans.is_empty() {
        return None;
    }
    // Earliest first, the longest of those that start together; overlaps join the first.
    spans.sort_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, label) in spans {
        if start < at {
            at = at.max(end);
            continue;
        }
        out.push_str(text.get(at..start)?);
        out.push_str("[REDACTED:");
        out.push_str(label);
        out.push(']');
        at = end;
    }
    out.push_str(text.get(at..)?);
    Some(out)
}

/// The byte ranges of masks already in `text` (`[REDACTED…]`).
fn existing_masks(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text.get(from..).and_then(|t| t.find(MASK_PREFIX)) {
        let start = from + i;
        let end = text
            .get(start..)
            .and_then(|t| t.find(']'))
            .map_or(text.len(), |j| start + j + 1);
        out.push((start, end));
        from = end;
    }
    out
}

/// Splits a key into lowercase words at non-alphanumerics, camelCase humps (`apiKey`,
/// `APIKey`) and letter/digit changes.
fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in key.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = part.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (a, b) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let hump = (a.is_lowercase() || a.is_numeric()) && b.is_uppercase();
            let acronym_end = a.is_uppercase() && b.is_uppercase() && next_lower;
            let digit_change = a.is_numeric() != b.is_numeric();
            if hump || acronym_end || digit_change {
                words.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        if start < chars.len() {
            words.push(chars[start..].iter().collect::<String>().to_lowercase());
        }
    }
    words
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
