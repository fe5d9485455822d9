//! Tool search: the query language of `ToolSearch` (and of `toolgate serve --tools=search`)
//! and the BM25 index it ranks with.
//!
//! A query is either `select:Name1,Name2` (exact names) or keywords, where `+word` requires
//! a word. Keywords are ranked by BM25 over each tool's name, description and parameter
//! names and descriptions; a name counts more than a parameter, a parameter more than prose.
//! The index is built once per [`View`](crate::View) (on its first search) and only ever
//! holds that view's visible tools, so a search can never reveal a tool policy hid.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use thiserror::Error;

use crate::registry::Entry;

/// The name of the built-in tool that loads deferred tools.
pub const TOOL_SEARCH: &str = "ToolSearch";

/// Results returned when a query does not say how many (Claude Code's default).
pub const DEFAULT_MAX_RESULTS: usize = 5;

/// The most results one query may ask for.
pub const MAX_RESULTS: usize = 50;

/// The longest query accepted, in characters (Anthropic's BM25 tool search takes 500).
pub const MAX_QUERY_CHARS: usize = 500;

/// The most names one `select:` may list.
pub const MAX_SELECT_NAMES: usize = MAX_RESULTS;

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalisation.
const B: f32 = 0.75;
/// How much a word in the tool's name counts, against one in its description.
const NAME_WEIGHT: u32 = 3;
/// How much a word in a parameter's name counts.
const PARAM_NAME_WEIGHT: u32 = 2;
/// How much a word of prose (descriptions) counts.
const TEXT_WEIGHT: u32 = 1;
/// Parameters deeper than this in an input schema are not indexed (schemas are data from
/// upstream servers; a hostile one must not make indexing slow).
const MAX_SCHEMA_DEPTH: usize = 6;

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// `select:a,b`: these exact names, in this order.
    Select(Vec<String>),
    /// Ranked keywords.
    Keywords {
        /// Words every result must contain (`+word`).
        required: Vec<String>,
        /// Words that rank results.
        terms: Vec<String>,
    },
}

/// Why a query was refused. Nothing was searched or loaded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QueryError {
    /// Nothing but whitespace.
    #[error(
        "the query is empty: send keywords (\"github issues\"), `+word` to require a word, or `select:Name1,Name2` for exact tool names"
    )]
    Empty,
    /// Over [`MAX_QUERY_CHARS`].
    #[error(
        "the query has {0} characters; at most {MAX_QUERY_CHARS} are accepted: send a few keywords"
    )]
    TooLong(usize),
    /// `select:` with no names.
    #[error(
        "`select:` names no tools: list exact names separated by commas, e.g. `select:mcp__github__create_issue,mcp__github__list_issues`"
    )]
    EmptySelect,
    /// More names than [`MAX_SELECT_NAMES`].
    #[error("`select:` names {0} tools; at most {MAX_SELECT_NAMES} at once")]
    TooManyNames(usize),
    /// A `select:` entry that cannot be a tool name.
    #[error(
        "`{0}` in `select:` is not a tool name: names are 1–64 characters from A–Z, a–z, 0–9, `_` and `-`"
    )]
    BadName(String),
    /// A `+` with no word after it.
    #[error("`+` must be followed by a word, as in `+github`")]
    EmptyRequired,
    /// Only punctuation.
    #[error(
        "the query has no words to search for (letters or digits); send keywords, or `select:Name` for an exact name"
    )]
    NoTerms,
    /// `max_results` out of range.
    #[error("max_results must be between 1 and {MAX_RESULTS}, not {0}")]
    BadMaxResults(u64),
}

impl Query {
    /// Parses a query (see the module docs).
    pub fn parse(text: &str) -> Result<Query, QueryError> {
        let chars = text.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(QueryError::TooLong(chars));
        }
        let text = text.trim();
        if text.is_empty() {
            return Err(QueryError::Empty);
        }
        if let Some(list) = strip_prefix_ignore_case(text, "select:") {
            return parse_select(list);
        }
        let mut required = Vec::new();
        let mut terms = Vec::new();
        for word in text.split_whitespace() {
            match word.strip_prefix('+') {
                Some(rest) => {
                    let words = tokenize(rest);
                    if words.is_empty() {
                        return Err(QueryError::EmptyRequired);
                    }
                    push_unique(&mut required, words);
                }
                None => push_unique(&mut terms, tokenize(word)),
            }
        }
        terms.retain(|t| !required.contains(t));
        if required.is_empty() && terms.is_empty() {
            return Err(QueryError::NoTerms);
        }
        Ok(Query::Keywords { required, terms })
    }
}

/// `max_results` as sent (`None`: the default), checked.
pub fn max_results(requested: Option<u64>) -> Result<usize, QueryError> {
    match requested {
        None => Ok(DEFAULT_MAX_RESULTS),
        Some(n) if (1..=MAX_RESULTS as u64).contains(&n) => Ok(n as usize),
        Some(n) => Err(QueryError::BadMaxResults(n)),
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

fn parse_select(list: &str) -> Result<Query, QueryError> {
    let mut names: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !crate::registry::valid_name(name) {
            let shown: String = name.chars().take(64).collect();
            return Err(QueryError::BadName(shown));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    if names.is_empty() {
        return Err(QueryError::EmptySelect);
    }
    if names.len() > MAX_SELECT_NAMES {
        return Err(QueryError::TooManyNames(names.len()));
    }
    Ok(Query::Select(names))
}

fn push_unique(into: &mut Vec<String>, words: Vec<String>) {
    for w in words {
        if !into.contains(&w) {
            into.push(w);
        }
    }
}

/// Lower-case words of `text`: runs of letters and digits, with `snake_case`, `kebab-case`
/// and `camelCase` split apart (`createIssue` → `create`, `issue`).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_lowercase() || c.is_numeric();
            word.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Which tools a keyword search ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only the view's deferred tools (ToolSearch: the others are loaded already).
    Deferred,
    /// Every tool of the view (`serve --tools=search`, which lists none up front).
    All,
}

/// One indexed tool.
#[derive(Debug)]
struct Doc {
    entry: Arc<Entry>,
    /// Weighted number of words.
    len: f32,
    deferred: bool,
}

/// A BM25 index over a view's visible tools.
#[derive(Debug, Default)]
pub struct SearchIndex {
    docs: Vec<Doc>,
    /// Word → (document, weighted frequency).
    postings: HashMap<String, Vec<(u32, u32)>>,
    avg_len: f32,
}

impl SearchIndex {
    /// Indexes `entries`; `deferred` tells which are deferred.
    pub fn build<'a>(
        entries: impl IntoIterator<Item = &'a Arc<Entry>>,
        deferred: impl Fn(&str) -> bool,
    ) -> Self {
        let mut index = SearchIndex::default();
        let mut total = 0.0f32;
        for entry in entries {
            let doc_id = index.docs.len() as u32;
            let mut counts: HashMap<String, u32> = HashMap::new();
            let spec = entry.spec();
            let mut add = |text: &str, weight: u32| {
                for w in tokenize(text) {
                    *counts.entry(w).or_default() += weight;
                }
            };
            add(&spec.name, NAME_WEIGHT);
            add(&spec.description, TEXT_WEIGHT);
            index_schema(&spec.input_schema, 0, &mut add);
            let len: u32 = counts.values().sum();
            total += len as f32;
            for (word, tf) in counts {
                index.postings.entry(word).or_default().push((doc_id, tf));
            }
            index.docs.push(Doc {
                entry: Arc::clone(entry),
                len: len as f32,
                deferred: deferred(&spec.name),
            });
        }
        index.avg_len = if index.docs.is_empty() {
            1.0
        } else {
            (total / index.docs.len() as f32).max(1.0)
        };
        index
    }

    /// The best `max` tools in `scope` for `required` and `terms`, best first (ties in
    /// registry order). Every result contains each required word.
    pub fn rank(
        &self,
        required: &[String],
        terms: &[String],
        scope: Scope,
        max: usize,
    ) -> Vec<Arc<Entry>> {
        let n = self.docs.len();
        let mut scores = vec![0.0f32; n];
        let mut hits = vec![0u16; n];
        for (i, word) in required.iter().chain(terms).enumerate() {
            let Some(postings) = self.postings.get(word) else {
                continue;
            };
            let df = postings.len() as f32;
            let idf = (1.0 + (n as f32 - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in postings {
                let d = doc as usize;
                let tf = tf as f32;
                let norm = K1 * (1.0 - B + B * self.docs[d].len / self.avg_len);
                scores[d] += idf * tf * (K1 + 1.0) / (tf + norm);
                if i < required.len() {
                    hits[d] = hits[d].saturating_add(1);
                }
            }
        }
        let need = required.len();
        let mut found: Vec<usize> = (0..n)
            .filter(|&d| scope == Scope::All || self.docs[d].deferred)
            .filter(|&d| {
                if need > 0 {
                    usize::from(hits[d]) == need
                } else {
                    scores[d] > 0.0
                }
            })
            .collect();
        found.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        found
            .into_iter()
            .take(max)
            .map(|d| Arc::clone(&self.docs[d].entry))
            .collect()
    }
}

/// Feeds the parameter names and descriptions of an input schema to `add`.
fn index_schema(schema: &Value, depth: usize, add: &mut impl FnMut(&str, u32)) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let Some(obj) = schema.as_object() else {
        return;
    };
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            add(name, PARAM_NAME_WEIGHT);
            if let Some(d) = sub.get("description").and_then(Value::as_str) {
                add(d, TEXT_WEIGHT);
            }
            index_schema(sub, depth + 1, add);
        }
    }
    if let Some(items) = obj.get("items") {
        index_schema(items, depth + 1, add);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_on_case_and_punctuation() {
        assert_eq!(
            tokenize("mcp__github__createIssue repo-owner"),
            ["mcp", "github", "create", "issue", "repo", "owner"]
        );
        assert_eq!(tokenize("tool_17 HTTPServer"), ["tool", "17", "httpserver"]);
        assert!(tokenize("--- !!").is_empty());
    }

    #[test]
    fn queries_parse() {
        assert_eq!(
            Query::parse(" select:a, b ,a,").unwrap(),
            Query::Select(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            Query::parse("+slack send slack").unwrap(),
            Query::Keywords {
                required: vec!["slack".into()],
                terms: vec!["send".into()]
            }
        );
        assert_eq!(Query::parse("   "), Err(QueryError::Empty));
        assert_eq!(Query::parse("select: ,"), Err(QueryError::EmptySelect));
        assert_eq!(Query::parse("+ x"), Err(QueryError::EmptyRequired));
        assert_eq!(Query::parse("?? !!"), Err(QueryError::NoTerms));
        assert!(matches!(
            Query::parse("select:a b"),
            Err(QueryError::BadName(_))
        ));
        assert_eq!(
            Query::parse(&"x".repeat(501)),
            Err(QueryError::TooLong(501))
        );
        assert_eq!(max_results(Some(0)), Err(QueryError::BadMaxResults(0)));
        assert_eq!(max_results(None), Ok(DEFAULT_MAX_RESULTS));
        assert_eq!(Query::parse("🎉 ✓"), Err(QueryError::NoTerms));
        assert!(matches!(
            Query::parse("SELECT:Read"),
            Ok(Query::Select(n)) if n == ["Read"]
        ));
        // `select:` cut inside a multi-byte character is just a keyword query.
        assert!(matches!(
            Query::parse("select\u{e9}x"),
            Ok(Query::Keywords { .. })
        ));
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_panicking(text in "\\PC{0,600}") {
            match Query::parse(&text) {
                Ok(Query::Select(names)) => {
                    proptest::prop_assert!(!names.is_empty() && names.len() <= MAX_SELECT_NAMES);
                }
                Ok(Query::Keywords { required, terms }) => {
                    proptest::prop_assert!(!(required.is_empty() && terms.is_empty()));
                }
                Err(e) => proptest::prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}
