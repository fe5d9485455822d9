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
//! must pass every matching rate limit, and the smallest cap wins. Rate limits are counted
//! in this process unless a shared store is set ([`Constraints::with_store`]; see
//! [`crate::rate`] for scopes and what happens when the store is down).

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolgate_protocol::{CallError, Content, ErrorCode, Layer, Stage, ToolOutput};

use crate::profiles::name_glob;
pub use crate::rate::RateConfig;
use crate::rate::{
    MemoryRateStore, RateFallback, RateHit, RateScopes, RateStore, RateStoreError, RateVerdict,
};

/// How often a shared store that cannot be reached is logged: every call notes it in its
/// audit record, the log says it once per interval.
const STORE_WARN_INTERVAL: Duration = Duration::from_secs(30);

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
    /// Where limits are counted when set; else (and as the `local` fallback) `local`.
    store: Option<Arc<dyn RateStore>>,
    local: MemoryRateStore,
    warned: Mutex<Option<Instant>>,
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
            store: None,
            local: MemoryRateStore::default(),
            warned: Mutex::new(None),
        }
    }

    /// Counts rate limits in `store` (shared by several processes) instead of this process.
    pub fn with_store(mut self, store: Arc<dyn RateStore>) -> Self {
        self.store = Some(store);
        self
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

    /// Stage 7: refuses a call over a rate limit. `Ok` carries a note for the audit record
    /// when the shared store could not be reached and a `local` fallback admitted the call.
    pub async fn admit(
        &self,
        tool: &str,
        scopes: &RateScopes<'_>,
    ) -> Result<Option<String>, CallError> {
        let limits = self.limits(tool, scopes);
        if limits.is_empty() {
            return Ok(None);
        }
        let hits: Vec<RateHit> = limits.iter().map(|(_, _, h)| h.clone()).collect();
        let Some(store) = &self.store else {
            return self.judge(tool, &limits, self.local.hit_at(&hits, Instant::now()));
        };
        match store.hit(&hits).await {
            Ok(verdict) => self.judge(tool, &limits, verdict),
            Err(e) => self.store_down(tool, store.as_ref(), &e, &limits),
        }
    }

    /// [`Constraints::admit`] counted in this process at a given instant (for tests).
    pub fn admit_at(
        &self,
        tool: &str,
        scopes: &RateScopes<'_>,
        now: Instant,
    ) -> Result<(), CallError> {
        let limits = self.limits(tool, scopes);
        let hits: Vec<RateHit> = limits.iter().map(|(_, _, h)| h.clone()).collect();
        self.judge(tool, &limits, self.local.hit_at(&hits, now))
            .map(|_| ())
    }

    fn limits<'a>(
        &'a self,
        tool: &'a str,
        scopes: &RateScopes<'_>,
    ) -> Vec<(&'a Entry, RateConfig, RateHit)> {
        self.matching(tool)
            .filter_map(|(_, e)| {
                let rate = e.config.rate?;
                Some((e, rate, RateHit::new(&e.pattern, &rate, scopes)))
            })
            .collect()
    }

    fn judge(
        &self,
        tool: &str,
        limits: &[(&Entry, RateConfig, RateHit)],
        verdict: RateVerdict,
    ) -> Result<Option<String>, CallError> {
        let RateVerdict::Refused { hit, retry_after } = verdict else {
            return Ok(None);
        };
        let Some((e, rate, _)) = limits.get(hit) else {
            return Err(rate_error(format!(
                "rate limit: the rate-limit store refused `{tool}` naming a limit that does not exist; retry later"
            )));
        };
        Err(rate_error(format!(
            "rate limit: at most {} call(s) of {} per {} s{} (set by {} for `{}`); retry in {} s or do something else meanwhile",
            rate.calls,
            tool,
            rate.per_seconds,
            scope_words(rate),
            e.source,
            e.pattern,
            retry_after.as_secs().max(1)
        )))
    }

    /// The shared store could not answer: each limit's fallback decides, `deny` first.
    fn store_down(
        &self,
        tool: &str,
        store: &dyn RateStore,
        error: &RateStoreError,
        limits: &[(&Entry, RateConfig, RateHit)],
    ) -> Result<Option<String>, CallError> {
        let where_ = store.describe();
        self.warn_store_down(&where_, error);
        if let Some((e, _, _)) = limits
            .iter()
            .find(|(_, r, _)| r.fallback == RateFallback::Deny)
        {
            return Err(rate_error(format!(
                "rate limit: the shared rate-limit store {where_} cannot be reached ({error}), so \
                 `{tool}` calls under the limit set by {} for `{}` are refused until it is back \
                 (fallback deny); retry later",
                e.source, e.pattern
            )));
        }
        let hits: Vec<RateHit> = limits.iter().map(|(_, _, h)| h.clone()).collect();
        self.judge(tool, limits, self.local.hit_at(&hits, Instant::now()))?;
        Ok(Some(format!(
            "the shared rate-limit store {where_} cannot be reached ({error}); counted in this \
             process only (fallback local)"
        )))
    }

    fn warn_store_down(&self, where_: &str, error: &RateStoreError) {
        let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
        if warned.is_none_or(|t| t.elapsed() >= STORE_WARN_INTERVAL) {
            *warned = Some(Instant::now());
            tracing::warn!(store = where_, %error, "shared rate-limit store unavailable; applying each limit's fallback");
        }
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

fn rate_error(message: String) -> CallError {
    CallError::new(ErrorCode::RateLimited, Stage::Constrain, message).with_layer(Layer::Constraint)
}

/// How a message names a limit's scope (nothing for the default, per session).
fn scope_words(rate: &RateConfig) -> &'static str {
    match rate.scope {
        crate::rate::RateScope::Session => "",
        crate::rate::RateScope::Client => " for this client",
        crate::rate::RateScope::Global => " across all sessions",
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
