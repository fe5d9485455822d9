//! Per-tool and per-profile constraints, applied after the decision (stage 7) and to the
//! result (stage 11): rate limits, output caps, and field masking.
//!
//! ```json
//! { "toolgate": { "constraints": {
//!     "Bash": { "rate": { "calls": 30, "perSeconds": 60 } },
//!     "mcp__crm__*": {
//!       "output": { "maxBytes": 65536, "maxLines": 500, "maxRecords": 50 },
//!       "mask": { "keys": ["email", "phone"], "pointers": ["/customers/*/ssn"], "action": "hash" }
//!     } } } }
//! ```
//!
//! Constraints from every settings source apply together (they only ever restrict): a call
//! must pass every matching rate limit, and the smallest cap wins.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolgate_protocol::{CallError, Content, ErrorCode, Layer, Stage, ToolOutput};

use crate::profiles::name_glob;

/// A rate limit: at most `calls` calls per `perSeconds` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateConfig {
    /// Calls allowed in the window.
    pub calls: u32,
    /// The window, in seconds.
    pub per_seconds: u64,
}

/// Output caps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OutputConfig {
    /// Bytes of text per content block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<usize>,
    /// Lines of text per content block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lines: Option<usize>,
    /// Elements of a JSON array result (structured content, or a text block holding one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_records: Option<usize>,
}

/// What masking does to a field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MaskAction {
    /// Replace the value by `[masked:<salted sha-256, 16 hex>]`: equal values stay equal
    /// within a salt, so results can still be joined.
    #[default]
    Hash,
    /// Remove the field.
    Remove,
}

/// Field masking of JSON results.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MaskConfig {
    /// JSON pointers; a `*` segment matches every array element or object member.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pointers: Vec<String>,
    /// Object keys masked at any depth (case-insensitive).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// Hash (default) or remove.
    #[serde(default)]
    pub action: MaskAction,
}

/// The constraints for one tool name or glob.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConstraintConfig {
    /// Rate limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateConfig>,
    /// Output caps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputConfig>,
    /// Masking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<MaskConfig>,
}

#[derive(Debug)]
struct Entry {
    pattern: String,
    source: String,
    config: ConstraintConfig,
}

/// Compiled constraints with the rate-limit state of a gate.
#[derive(Debug, Default)]
pub struct Constraints {
    entries: Vec<Entry>,
    salt: Vec<u8>,
    windows: Mutex<HashMap<(String, usize), VecDeque<Instant>>>,
}

impl Constraints {
    /// Builds from `(tool pattern, config, source)` triples. `salt` keys the masking hash;
    /// `None` picks a random one for this process.
    pub fn new(
        entries: impl IntoIterator<Item = (String, ConstraintConfig, String)>,
        salt: Option<&str>,
    ) -> Self {
        let salt = match salt {
            Some(s) => s.as_bytes().to_vec(),
            None => {
                let state = std::collections::hash_map::RandomState::new();
                let mut out = Vec::with_capacity(16);
                for i in 0u64..2 {
                    let mut h = state.build_hasher();
                    h.write_u64(i);
                    out.extend_from_slice(&h.finish().to_le_bytes());
                }
                out
            }
        };
        Self {
            entries: entries
                .into_iter()
                .map(|(pattern, config, source)| Entry {
                    pattern,
                    source,
                    config,
                })
                .collect(),
            salt,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Whether any constraint is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn matching<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = (usize, &'a Entry)> + 'a {
        self.entries
            .iter()
            .enumerate()
            .filter(move |(_, e)| name_glob(&e.pattern, tool))
    }

    /// Stage 7: refuses a call over a rate limit. `scope` separates sessions or profiles.
    pub fn admit(&self, tool: &str, scope: &str) -> Result<(), CallError> {
        self.admit_at(tool, scope, Instant::now())
    }

    /// [`Constraints::admit`] at a given instant (for tests).
    pub fn admit_at(&self, tool: &str, scope: &str, now: Instant) -> Result<(), CallError> {
        let mut windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        let mut admitted = Vec::new();
        for (i, e) in self.matching(tool) {
            let Some(rate) = e.config.rate else { continue };
            let window = Duration::from_secs(rate.per_seconds);
            let q = windows.entry((scope.to_owned(), i)).or_default();
            while q.front().is_some_and(|t| now.duration_since(*t) >= window) {
                q.pop_front();
            }
            if q.len() >= rate.calls as usize {
                let wait = q
                    .front()
                    .map_or(window, |t| window.saturating_sub(now.duration_since(*t)));
                return Err(CallError::new(
                    ErrorCode::RateLimited,
                    Stage::Constrain,
                    format!(
                        "rate limit: at most {} call(s) of {} per {} s (set by {} for `{}`); retry in {} s or do something else meanwhile",
                        rate.calls, tool, rate.per_seconds, e.source, e.pattern, wait.as_secs().max(1)
                    ),
                )
                .with_layer(Layer::Constraint));
            }
            admitted.push(i);
        }
        for i in admitted {
            windows
                .entry((scope.to_owned(), i))
                .or_default()
                .push_back(now);
        }
        Ok(())
    }

    /// Stage 11: masks fields, then caps records, lines and bytes.
    pub fn shape(&self, tool: &str, mut output: ToolOutput) -> ToolOutput {
        let mut max_bytes = None::<usize>;
        let mut max_lines = None::<usize>;
        let mut max_records = None::<usize>;
        let mut masks = Vec::new();
        for (_, e) in self.matching(tool) {
            if let Some(o) = e.config.output {
                max_bytes = min_opt(max_bytes, o.max_bytes);
                max_lines = min_opt(max_lines, o.max_lines);
                max_records = min_opt(max_records, o.max_records);
            }
            if let Some(m) = &e.config.mask {
                masks.push(m);
            }
        }
        if let Some(v) = output.structured.as_mut() {
            for m in &masks {
                self.mask(v, m);
            }
            if let Some(n) = max_records {
                cap_records(v, n);
            }
        }
        for block in &mut output.content {
            let Content::Text { text } = block else {
                continue;
            };
            if (!masks.is_empty() || max_records.is_some())
                && let Ok(mut v) = serde_json::from_str::<Value>(text)
                && (v.is_object() || v.is_array())
            {
                for m in &masks {
                    self.mask(&mut v, m);
                }
                if let Some(n) = max_records {
                    cap_records(&mut v, n);
                }
                *text = serde_json::to_string(&v).unwrap_or_default();
            }
            if let Some(n) = max_lines {
                cap_lines(text, n);
            }
            if let Some(n) = max_bytes {
                cap_bytes(text, n);
            }
        }
        output
    }

    fn hash(&self, v: &Value) -> Value {
        let mut h = Sha256::new();
        h.update(&self.salt);
        h.update(v.to_string().as_bytes());
        let digest = hex::encode(h.finalize());
        Value::String(format!("[masked:{}]", &digest[..16]))
    }

    fn mask(&self, v: &mut Value, m: &MaskConfig) {
        for p in &m.pointers {
            let segs: Vec<String> = p
                .split('/')
                .skip(1)
                .map(|s| s.replace("~1", "/").replace("~0", "~"))
                .collect();
            self.mask_pointer(v, &segs, m.action);
        }
        if !m.keys.is_empty() {
            self.mask_keys(v, &m.keys, m.action);
        }
    }

    fn mask_pointer(&self, v: &mut Value, segs: &[String], action: MaskAction) {
        let Some((first, rest)) = segs.split_first() else {
            return;
        };
        let last = rest.is_empty();
        match v {
            Value::Object(map) => {
                let keys: Vec<String> = if first == "*" {
                    map.keys().cloned().collect()
                } else {
                    vec![first.clone()]
                };
                for k in keys {
                    if last {
                        match action {
                            MaskAction::Remove => {
                                map.shift_remove(&k);
                            }
                            MaskAction::Hash => {
                                if let Some(x) = map.get(&k).map(|x| self.hash(x)) {
                                    map.insert(k, x);
                                }
                            }
                        }
                    } else if let Some(child) = map.get_mut(&k) {
                        self.mask_pointer(child, rest, action);
                    }
                }
            }
            Value::Array(items) => {
                let idx: Vec<usize> = if first == "*" {
                    (0..items.len()).collect()
                } else {
                    first.parse().ok().into_iter().collect()
                };
                if last && action == MaskAction::Remove {
                    for i in idx.into_iter().rev() {
                        if i < items.len() {
                            items.remove(i);
                        }
                    }
                    return;
                }
                for i in idx {
                    if let Some(child) = items.get_mut(i) {
                        if last {
                            *child = self.hash(child);
                        } else {
                            self.mask_pointer(child, rest, action);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn mask_keys(&self, v: &mut Value, keys: &[String], action: MaskAction) {
        match v {
            Value::Object(map) => {
                let hits: Vec<String> = map
                    .keys()
                    .filter(|k| keys.iter().any(|x| x.eq_ignore_ascii_case(k)))
                    .cloned()
                    .collect();
                for k in hits {
                    match action {
                        MaskAction::Remove => {
                            map.shift_remove(&k);
                        }
                        MaskAction::Hash => {
                            if let Some(x) = map.get(&k).map(|x| self.hash(x)) {
                                map.insert(k, x);
                            }
                        }
                    }
                }
                for child in map.values_mut() {
                    self.mask_keys(child, keys, action);
                }
            }
            Value::Array(items) => {
                for child in items {
                    self.mask_keys(child, keys, action);
                }
            }
            _ => {}
        }
    }

    /// The configured entries, for `toolgate config`: `(pattern, source, config)`.
    pub fn entries(&self) -> BTreeMap<String, Vec<(String, ConstraintConfig)>> {
        let mut out: BTreeMap<String, Vec<(String, ConstraintConfig)>> = BTreeMap::new();
        for e in &self.entries {
            out.entry(e.pattern.clone())
                .or_default()
                .push((e.source.clone(), e.config.clone()));
        }
        out
    }
}

fn min_opt(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn cap_records(v: &mut Value, n: usize) {
    if let Value::Array(items) = v
        && items.len() > n
    {
        let total = items.len();
        items.truncate(n);
        items.push(Value::String(format!(
            "[toolgate: {} of {total} records omitted by an output constraint]",
            total - n
        )));
    }
}

fn cap_lines(text: &mut String, n: usize) {
    let total = text.lines().count();
    if total <= n {
        return;
    }
    let kept: Vec<&str> = text.lines().take(n).collect();
    *text = format!(
        "{}\n[toolgate: {} of {total} lines omitted by an output constraint]",
        kept.join("\n"),
        total - n
    );
}

fn cap_bytes(text: &mut String, n: usize) {
    if text.len() <= n {
        return;
    }
    let total = text.len();
    let mut end = n;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!(
        "\n[toolgate: output cut at {n} of {total} bytes by an output constraint]"
    ));
}
