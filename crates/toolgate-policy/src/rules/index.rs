//! A compiled rule list with lookup tables, so that a decision touches only the rules that
//! can apply: by tool name, by a Bash pattern's program, by MCP server, and one glob-set pass
//! per path for Read/Edit rules.

use std::collections::HashMap;
use std::path::Path;
use toolgate_protocol::MCP_PREFIX;

use globset::{Candidate, Glob, GlobMatcher, GlobSet, GlobSetBuilder};
use regex::RegexSet;
use serde_json::Value;
use toolgate_protocol::{Access, Beneath};

use super::subcommand::{FIND_ACTIONS, NEVER_PREFIX_ALLOWED, Subcommand};
use super::{PathFamily, Rule, RuleKind, Spec, ToolPat};
use crate::view::{Family, PathEntry, View};

mod room;

/// Path globs of one list and family. Globs with a literal directory prefix
/// (`/work/src/**/*.rs`) sit under that prefix and are tried only for paths beneath it;
/// the others (`/**/.env`) go through one glob set.
#[derive(Debug, Default)]
struct PathIndex {
    by_prefix: HashMap<String, Vec<(GlobMatcher, u32)>>,
    rest: GlobSet,
    rest_owners: Vec<u32>,
}

fn literal_prefix(glob: &str) -> &str {
    let mut end = 0;
    for seg in glob.split('/').skip(1) {
        if seg.is_empty() || seg.contains(['*', '?', '[', '{', '\\']) {
            break;
        }
        end += 1 + seg.len();
    }
    &glob[..end]
}

impl PathIndex {
    fn build(globs: Vec<(Glob, u32)>) -> Result<Self, String> {
        let mut ix = PathIndex::default();
        let mut rest = GlobSetBuilder::new();
        for (g, owner) in globs {
            let prefix = literal_prefix(g.glob());
            if prefix.is_empty() {
                rest.add(g);
                ix.rest_owners.push(owner);
            } else {
                ix.by_prefix
                    .entry(prefix.to_owned())
                    .or_default()
                    .push((g.compile_matcher(), owner));
            }
        }
        ix.rest = rest.build().map_err(|e| format!("path rules: {e}"))?;
        Ok(ix)
    }

    fn is_empty(&self) -> bool {
        self.rest_owners.is_empty() && self.by_prefix.is_empty()
    }

    /// The literal directory prefixes of the globs that have one.
    fn prefixes(&self) -> impl Iterator<Item = &str> {
        self.by_prefix.keys().map(String::as_str)
    }

    /// Whether some glob could match a path strictly beneath `dir`: one without a literal
    /// prefix (`/**/.env`), or one whose prefix lies beneath `dir` or above it.
    fn may_reach_beneath(&self, dir: &Path) -> bool {
        !self.rest_owners.is_empty()
            || self
                .by_prefix
                .keys()
                .any(|k| Path::new(k).starts_with(dir) || dir.starts_with(k))
    }

    fn matching(&self, cand: &Candidate<'_>, path: &str, out: &mut Vec<u32>) {
        if !self.rest_owners.is_empty() {
            for i in self.rest.matches_candidate(cand) {
                out.push(self.rest_owners[i]);
            }
        }
        if self.by_prefix.is_empty() {
            return;
        }
        let mut end = path.len();
        while end > 0 {
            if let Some(v) = self.by_prefix.get(&path[..end]) {
                out.extend(
                    v.iter()
                        .filter(|(m, _)| m.is_match_candidate(cand))
                        .map(|(_, r)| *r),
                );
            }
            end = path[..end].rfind('/').unwrap_or(0);
        }
    }
}

#[derive(Debug, Default)]
struct KindIndex {
    by_tool: HashMap<String, Vec<u32>>,
    bash_first: HashMap<String, Vec<u32>>,
    bash_other: Vec<u32>,
    /// Deny/ask Bash wildcard patterns without a literal program (`Bash(* --force)`), as
    /// one regex set: one pass per subcommand text instead of one regex per rule.
    bash_set: Option<(RegexSet, Vec<u32>)>,
    servers: HashMap<String, Vec<u32>>,
    globs: Vec<u32>,
    read_paths: PathIndex,
    edit_paths: PathIndex,
}

/// A compiled, indexed rule list.
#[derive(Debug, Default)]
pub(crate) struct RuleSet {
    pub rules: Vec<Rule>,
    idx: [KindIndex; 3],
}

/// How many entries below the directories of one call are looked at for
/// [`RuleSet::expand_beneath`] before the call is declared opaque instead. One budget for
/// the whole call: `grep -r x d1 d2 … d100` must not cost a hundred walks of this size.
pub const MAX_BENEATH_ENTRIES: usize = 50_000;

/// The file-name globs of a limited walk as one set; `None` when there are none or one
/// does not compile (then nothing is left out).
fn name_set(globs: &[String]) -> Option<GlobSet> {
    if globs.is_empty() {
        return None;
    }
    let mut set = GlobSetBuilder::new();
    for g in globs {
        set.add(Glob::new(g).ok()?);
    }
    set.build().ok()
}

/// How many paths found below directories are added to a view: one is enough for a
/// decision, a few make the reason readable.
const MAX_BENEATH_FOUND: usize = 8;

impl RuleSet {
    /// Whether any deny or ask rule can cover reading a file: a `Read(…)` path rule
    /// (`Edit(…)` path rules cover writing only).
    pub(crate) fn has_read_path_limits(&self) -> bool {
        [RuleKind::Deny, RuleKind::Ask]
            .into_iter()
            .any(|k| !self.idx[slot(k)].read_paths.is_empty())
    }

    /// The deny- and ask-side path indexes a path touched with `access` beneath a directory
    /// answers to: `Read(…)` rules for reading (`grep -r KEY .` reads `.env`), `Edit(…)`
    /// rules for writing and deleting (`rm -r build` deletes `build/keep`). A `Read` deny
    /// also blocks writing a path the call names, but not every file below a directory it
    /// deletes: `rm -r node_modules` is not a read of anything.
    fn beneath_indexes(&self, access: Access) -> impl Iterator<Item = &PathIndex> {
        [RuleKind::Deny, RuleKind::Ask].into_iter().map(move |k| {
            let ix = &self.idx[slot(k)];
            if access == Access::Read {
                &ix.read_paths
            } else {
                &ix.edit_paths
            }
        })
    }

    /// Adds to `view` the paths below each directory the call touches recursively
    /// (`grep -r`, `tar c`, `cp -r`, `rm -r`, …) that a deny or ask path rule covers, so
    /// that those rules see them as if the command had named them. The directory is walked
    /// as the command would walk it (`Visible`: hidden and ignored files skipped, as `rg`
    /// does; symlinks not followed) only when some rule could reach beneath it; more than
    /// [`MAX_BENEATH_ENTRIES`] entries in all make the call opaque.
    pub(crate) fn expand_beneath(&self, view: &mut View) {
        // Copies: the covered entries are pushed onto `view.paths` while walking.
        let dirs: Vec<PathEntry> = view
            .paths
            .iter()
            .filter(|p| p.beneath != Beneath::Nothing)
            .cloned()
            .collect();
        let mut found = 0;
        let mut seen = 0usize;
        for PathEntry {
            path: dir,
            access,
            inside,
            beneath,
            beneath_only: only,
            ..
        } in dirs
        {
            if !self
                .beneath_indexes(access)
                .any(|ix| ix.may_reach_beneath(&dir))
            {
                continue;
            }
            // Only files whose names match (`grep --include`): directories are crossed, not
            // read. A glob that does not compile limits nothing.
            let only = name_set(&only);
            let mut walk = ignore::WalkBuilder::new(&dir);
            walk.standard_filters(beneath == Beneath::Visible)
                .follow_links(false);
            let mut hits = Vec::new();
            for entry in walk.build() {
                seen += 1;
                if seen > MAX_BENEATH_ENTRIES {
                    view.opaque.push(format!(
                        "more than {MAX_BENEATH_ENTRIES} entries below {} to check against the path rules",
                        dir.display()
                    ));
                    return;
                }
                // An entry the walker cannot read is one the command cannot read either.
                let Ok(entry) = entry else { continue };
                if entry.depth() == 0 {
                    continue;
                }
                let path = entry.path();
                if let Some(only) = &only
                    && (entry.file_type().is_none_or(|t| t.is_dir())
                        || !entry.path().file_name().is_some_and(|n| only.is_match(n)))
                {
                    continue;
                }
                // A symlink in the tree is not followed by the walk; `grep -R`, `cp -L` and
                // others do follow it, so where it leads is checked too.
                let target = entry
                    .path_is_symlink()
                    .then(|| std::fs::canonicalize(path).ok())
                    .flatten();
                let covered = std::iter::once(path).chain(target.as_deref()).find(|p| {
                    let cand = Candidate::new(p);
                    let text = p.to_string_lossy();
                    hits.clear();
                    for ix in self.beneath_indexes(access) {
                        ix.matching(&cand, &text, &mut hits);
                    }
                    !hits.is_empty()
                });
                if let Some(covered) = covered {
                    view.paths.push(PathEntry {
                        path: covered.to_path_buf(),
                        access,
                        // A link's target outside the directory is not known to be inside
                        // the roots.
                        inside: inside && covered.starts_with(&dir),
                        protected: view.anchors.protected(covered),
                        beneath: Beneath::Nothing,
                        beneath_only: Vec::new(),
                        below: Some(dir.clone()),
                    });
                    found += 1;
                    if found >= MAX_BENEATH_FOUND {
                        return;
                    }
                }
            }
        }
    }
}

fn slot(kind: RuleKind) -> usize {
    match kind {
        RuleKind::Deny => 0,
        RuleKind::Ask => 1,
        RuleKind::Allow => 2,
    }
}

fn key(kind: RuleKind, name: &str) -> String {
    if kind == RuleKind::Allow {
        name.to_owned()
    } else {
        name.to_ascii_lowercase()
    }
}

/// One match: the rule and what it matched.
pub(crate) struct Hit<'r> {
    pub rule: &'r Rule,
    pub detail: String,
}

/// How far allow rules cover a call.
#[derive(Debug, Default)]
pub(crate) struct Cover<'r> {
    /// Rules that approved a part of the call.
    pub used: Vec<&'r Rule>,
    /// Subcommands approved as read-only commands.
    pub read_only: Vec<usize>,
    /// Subcommands no allow rule approved (indices into `view.subs`).
    pub uncovered_subs: Vec<usize>,
    /// Paths no allow rule approved (indices into `view.paths`).
    pub uncovered_paths: Vec<usize>,
    /// The whole call is approved by a rule.
    pub whole: bool,
}

impl RuleSet {
    pub(crate) fn new(rules: Vec<Rule>) -> Result<Self, String> {
        let mut set = RuleSet {
            rules,
            idx: Default::default(),
        };
        let mut path_globs: [[Vec<(Glob, u32)>; 2]; 3] = Default::default();
        let mut set_patterns: [Vec<(String, u32)>; 3] = Default::default();
        for (i, rule) in set.rules.iter().enumerate() {
            let i = i as u32;
            let ix = &mut set.idx[slot(rule.kind)];
            match (&rule.tool, &rule.spec) {
                (_, Spec::Path(family, pat)) => {
                    let list = &mut path_globs[slot(rule.kind)][*family as usize];
                    list.extend(pat.globs.iter().map(|g| (g.clone(), i)));
                }
                (ToolPat::Name(n), Spec::Bash(p)) if n.eq_ignore_ascii_case("bash") => {
                    match &p.first {
                        Some(first) => ix.bash_first.entry(first.clone()).or_default().push(i),
                        None => match p.regex_str() {
                            Some(re) if rule.kind != RuleKind::Allow => {
                                set_patterns[slot(rule.kind)].push((re.to_owned(), i))
                            }
                            _ => ix.bash_other.push(i),
                        },
                    }
                }
                (ToolPat::Name(n), _) => ix.by_tool.entry(key(rule.kind, n)).or_default().push(i),
                (ToolPat::Server(s), _) => ix.servers.entry(key(rule.kind, s)).or_default().push(i),
                (ToolPat::Glob(re), _) => match glob_server(re.as_str()) {
                    Some(server) => ix
                        .servers
                        .entry(key(rule.kind, &server))
                        .or_default()
                        .push(i),
                    None => ix.globs.push(i),
                },
            }
        }
        for (k, pats) in set_patterns.into_iter().enumerate() {
            if !pats.is_empty() {
                let re = RegexSet::new(pats.iter().map(|(p, _)| p))
                    .map_err(|e| format!("bash rules: {e}"))?;
                set.idx[k].bash_set = Some((re, pats.into_iter().map(|(_, i)| i).collect()));
            }
        }
        for (k, pair) in path_globs.into_iter().enumerate() {
            for (fam, globs) in pair.into_iter().enumerate() {
                let pi = PathIndex::build(globs)?;
                if fam == PathFamily::Read as usize {
                    set.idx[k].read_paths = pi;
                } else {
                    set.idx[k].edit_paths = pi;
                }
            }
        }
        Ok(set)
    }

    /// Candidate rules for the call (excluding path rules), sorted, deduplicated.
    fn candidates(&self, kind: RuleKind, tool: &str, view: &View, out: &mut Vec<u32>) {
        let ix = &self.idx[slot(kind)];
        let name_key = if kind == RuleKind::Allow {
            tool
        } else {
            view.tool_lower.as_str()
        };
        let mut push_tool = |k: &str| {
            if let Some(v) = ix.by_tool.get(k) {
                out.extend_from_slice(v);
            }
        };
        push_tool(name_key);
        if kind != RuleKind::Allow && !view.hosts.is_empty() && name_key != "webfetch" {
            // WebFetch domain denies also cover hosts a shell command reaches.
            push_tool("webfetch");
        }
        for k in family_keys(kind, view.family) {
            if *k != name_key {
                push_tool(k);
            }
        }
        if view.family == Family::Bash && (kind != RuleKind::Allow || tool == "Bash") {
            out.extend_from_slice(&ix.bash_other);
            let subs = view.subs.iter().chain(if kind == RuleKind::Allow {
                [].iter()
            } else {
                view.cross.iter()
            });
            for sub in subs {
                if kind == RuleKind::Allow {
                    if let Some(v) = sub.allow_argv.first().and_then(|w| ix.bash_first.get(w)) {
                        out.extend_from_slice(v);
                    }
                } else {
                    for (_, form) in &sub.deny_forms {
                        if let Some(v) = form.first().and_then(|w| ix.bash_first.get(w)) {
                            out.extend_from_slice(v);
                        }
                    }
                }
            }
        }
        if let Some(server) = server_key(tool) {
            let k = key(kind, server);
            if let Some(v) = ix.servers.get(&k) {
                out.extend_from_slice(v);
            }
        }
        out.extend_from_slice(&ix.globs);
        out.sort_unstable();
        out.dedup();
    }

    /// The first deny (or ask) rule that matches any part of the call.
    pub(crate) fn first_match(
        &self,
        kind: RuleKind,
        tool: &str,
        input: &Value,
        view: &View,
    ) -> Option<Hit<'_>> {
        let mut cands = Vec::new();
        self.candidates(kind, tool, view, &mut cands);
        let ix = &self.idx[slot(kind)];
        // Path rules: Read rules see every path (a Read deny also blocks writing it); Edit
        // rules see writes and deletes.
        let mut path_hits: Vec<(u32, usize)> = Vec::new();
        if matches!(view.family, Family::Read | Family::Write | Family::Bash) {
            let mut tmp = Vec::new();
            for (pi, p) in view.paths.iter().enumerate() {
                let cand = Candidate::new(&p.path);
                let text = p.path.to_string_lossy();
                tmp.clear();
                ix.read_paths.matching(&cand, &text, &mut tmp);
                if p.access != Access::Read {
                    ix.edit_paths.matching(&cand, &text, &mut tmp);
                }
                path_hits.extend(tmp.iter().map(|r| (*r, pi)));
            }
        }
        let mut best: Option<(u32, String)> =
            path_hits.iter().min_by_key(|(r, _)| *r).map(|&(r, pi)| {
                let p = &view.paths[pi];
                let below = p.below.as_ref().map_or_else(String::new, |d| {
                    format!(" (beneath {}, which the command covers)", d.display())
                });
                (
                    r,
                    format!("{} {}{below}", access_word(p.access), p.path.display()),
                )
            });
        // Each distinct subcommand text once.
        let mut texts: Vec<(&str, &[String])> = Vec::new();
        if view.family == Family::Bash {
            for s in view.subs.iter().chain(&view.cross) {
                for (t, w) in &s.deny_forms {
                    if !texts.iter().any(|(x, _)| *x == t.as_str()) {
                        texts.push((t.as_str(), w.as_slice()));
                    }
                }
            }
            if let Some((re, owners)) = &ix.bash_set {
                for (t, _) in &texts {
                    if let Some(i) = re.matches(t).iter().map(|i| owners[i]).min()
                        && best.as_ref().is_none_or(|(b, _)| i < *b)
                    {
                        best = Some((i, format!("subcommand `{t}`")));
                    }
                }
            }
        }
        for &i in &cands {
            if best.as_ref().is_some_and(|(b, _)| *b < i) {
                break;
            }
            let rule = &self.rules[i as usize];
            if let Some(detail) = deny_side_match(rule, tool, input, view, &texts) {
                return Some(Hit { rule, detail });
            }
        }
        best.map(|(r, detail)| Hit {
            rule: &self.rules[r as usize],
            detail,
        })
    }
}

/// How far the allow rules of `sets` (the settings' rules, then the session's approvals)
/// cover the call. `skip_broad` drops the rules auto mode does not use.
pub(crate) fn allow_cover<'r>(
    sets: &[&'r RuleSet],
    tool: &str,
    input: &Value,
    view: &View,
    skip_broad: bool,
) -> Cover<'r> {
    let mut cover = Cover::default();
    let usable = |r: &Rule| !(skip_broad && r.broad_for_auto);
    let cands: Vec<Vec<u32>> = sets
        .iter()
        .map(|set| {
            let mut c = Vec::new();
            set.candidates(RuleKind::Allow, tool, view, &mut c);
            c
        })
        .collect();
    let rules_of = |k: usize| cands[k].iter().map(move |&i| &sets[k].rules[i as usize]);
    // Whole-call rules: a bare tool name, a server, a glob, a domain, a value specifier.
    for k in 0..sets.len() {
        for rule in rules_of(k) {
            if !usable(rule) {
                continue;
            }
            let whole = match &rule.spec {
                Spec::Any => true,
                Spec::Domain(d) => {
                    view.family == Family::Fetch
                        && !view.hosts.is_empty()
                        && view.hosts.iter().all(|h| d.matches(h))
                }
                Spec::Value { field, value } => value_match(*field, value, input, view),
                Spec::Bash(_) | Spec::Path(..) | Spec::Param { .. } | Spec::Never => false,
            };
            if whole && tool_matches(rule, tool, RuleKind::Allow, view.family) {
                cover.whole = true;
                cover.used.push(rule);
                return cover;
            }
        }
    }
    if view.family == Family::Bash {
        for (si, sub) in view.subs.iter().enumerate() {
            if sub.allow_blocked.is_none() && sub.read_only {
                cover.read_only.push(si);
                continue;
            }
            let hit = (0..sets.len()).find_map(|k| {
                rules_of(k).find(|r| {
                    usable(r)
                        && tool == "Bash"
                        && matches!(r.tool, ToolPat::Name(ref n) if n == "Bash")
                        && bash_allow(r, sub)
                })
            });
            match hit {
                Some(r) => push_used(&mut cover.used, r),
                None => cover.uncovered_subs.push(si),
            }
        }
    }
    // Paths: each needs a path rule (Edit rules also grant reads). A Bash call's paths
    // inside the workspace are approved with its subcommands.
    let mut tmp = Vec::new();
    for (pi, p) in view.paths.iter().enumerate() {
        if view.family == Family::Bash && p.inside {
            continue;
        }
        let cand = Candidate::new(&p.path);
        let text = p.path.to_string_lossy();
        let mut hit = None;
        for set in sets {
            let ix = &set.idx[slot(RuleKind::Allow)];
            tmp.clear();
            ix.edit_paths.matching(&cand, &text, &mut tmp);
            if p.access == Access::Read {
                ix.read_paths.matching(&cand, &text, &mut tmp);
            }
            if let Some(r) = tmp
                .iter()
                .map(|&i| &set.rules[i as usize])
                .find(|r| usable(r))
            {
                hit = Some(r);
                break;
            }
        }
        match hit {
            Some(r) => push_used(&mut cover.used, r),
            None => cover.uncovered_paths.push(pi),
        }
    }
    cover
}

/// The Bash allow rules of `set` that match each subcommand of `view`, when every one is
/// matched (read-only commands are not exempt, and a subcommand no allow rule may apply to
/// fails the whole): what `sandbox.excludedCommands` patterns need, with the allow rules'
/// own semantics.
pub(crate) fn bash_cover<'r>(set: &'r RuleSet, view: &View) -> Option<Vec<&'r Rule>> {
    if view.family != Family::Bash || view.subs.is_empty() {
        return None;
    }
    let mut used = Vec::new();
    for sub in &view.subs {
        if sub.allow_blocked.is_some() {
            return None;
        }
        let rule = set.rules.iter().find(|r| {
            r.kind == RuleKind::Allow
                && matches!(r.tool, ToolPat::Name(ref n) if n == "Bash")
                && bash_allow(r, sub)
        })?;
        push_used(&mut used, rule);
    }
    Some(used)
}

fn push_used<'r>(used: &mut Vec<&'r Rule>, r: &'r Rule) {
    if !used.iter().any(|u| std::ptr::eq(*u, r)) {
        used.push(r);
    }
}

fn access_word(a: Access) -> &'static str {
    match a {
        Access::Read => "reads",
        Access::Write => "writes",
        Access::Delete => "deletes",
    }
}

/// The literal `mcp__server__` prefix of a tool-glob regex (`^mcp__gh__get_.*$`), if any.
fn glob_server(re: &str) -> Option<String> {
    let body = re.strip_prefix('^')?;
    let rest = body.strip_prefix(MCP_PREFIX)?;
    let end = rest.find("__")?;
    let server = &rest[..end];
    (!server.is_empty()
        && server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    .then(|| format!("{MCP_PREFIX}{server}__"))
}

/// `mcp__server__tool` → `mcp__server__`.
pub(crate) fn server_key(tool: &str) -> Option<&str> {
    let rest = tool.strip_prefix(MCP_PREFIX)?;
    let end = rest.find("__")?;
    Some(&tool[..MCP_PREFIX.len() + end + 2])
}

/// The rule names that cover a tool family beyond its own name: `Read` covers Grep and
/// Glob; `Edit` covers every writing tool and (allow side) reads; a `Read` deny also blocks
/// writes; deny-side `Bash` rules cover every shell tool.
fn family_keys(kind: RuleKind, family: Family) -> &'static [&'static str] {
    match (kind, family) {
        (RuleKind::Allow, Family::Read) => &["Read", "Edit"],
        (RuleKind::Allow, Family::Write) => &["Edit"],
        (RuleKind::Allow, _) => &[],
        (_, Family::Read) => &["read"],
        (_, Family::Write) => &["edit", "read"],
        (_, Family::Bash) => &["bash"],
        _ => &[],
    }
}

fn tool_matches(rule: &Rule, tool: &str, kind: RuleKind, family: Family) -> bool {
    match &rule.tool {
        ToolPat::Name(n) => {
            if kind == RuleKind::Allow {
                n == tool || family_keys(kind, family).contains(&n.as_str())
            } else {
                n.eq_ignore_ascii_case(tool)
                    || family_keys(kind, family)
                        .iter()
                        .any(|k| n.eq_ignore_ascii_case(k))
            }
        }
        ToolPat::Server(s) => {
            if kind == RuleKind::Allow {
                tool.starts_with(s.as_str())
            } else {
                tool.to_ascii_lowercase()
                    .starts_with(&s.to_ascii_lowercase())
            }
        }
        ToolPat::Glob(re) => re.is_match(tool),
    }
}

/// Whether a deny/ask rule (not a path rule) matches; returns what it matched.
fn deny_side_match(
    rule: &Rule,
    tool: &str,
    input: &Value,
    view: &View,
    texts: &[(&str, &[String])],
) -> Option<String> {
    let host_rule = matches!(rule.spec, Spec::Domain(_)) && !view.hosts.is_empty();
    if !host_rule && !tool_matches(rule, tool, RuleKind::Deny, view.family) {
        return None;
    }
    match &rule.spec {
        Spec::Any => Some(String::new()),
        Spec::Never | Spec::Path(..) => None,
        Spec::Bash(p) => {
            if view.family != Family::Bash {
                return None;
            }
            texts
                .iter()
                .find(|(text, words)| p.matches_deny(text, words))
                .map(|(text, _)| format!("subcommand `{text}`"))
        }
        Spec::Domain(d) => view
            .hosts
            .iter()
            .find(|h| d.matches(h))
            .map(|h| format!("host {h}")),
        Spec::Param { name, value } => {
            let v = input.get(name)?;
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Bool(_) | Value::Number(_) => v.to_string(),
                _ => return None,
            };
            value.matches(&s).then(|| format!("{name} = {s}"))
        }
        Spec::Value { field, value } => value_match(*field, value, input, view).then(String::new),
    }
}

fn value_match(
    field: Option<&'static str>,
    value: &super::Wild,
    input: &Value,
    view: &View,
) -> bool {
    let s = match field {
        Some(f) => input.get(f).and_then(Value::as_str),
        None => view.subject.as_deref(),
    };
    s.is_some_and(|s| value.matches(s))
}

fn bash_allow(rule: &Rule, sub: &Subcommand) -> bool {
    let Spec::Bash(p) = &rule.spec else {
        return matches!(rule.spec, Spec::Any);
    };
    if p.is_any() {
        return true;
    }
    if sub.allow_blocked.is_some() {
        return false;
    }
    if p.is_wildcard() {
        let prog = sub.program();
        if NEVER_PREFIX_ALLOWED.contains(&prog) {
            return false;
        }
        if prog == "find"
            && sub
                .allow_argv
                .iter()
                .any(|a| FIND_ACTIONS.contains(&a.as_str()))
        {
            return false;
        }
    }
    p.matches(&sub.allow_text)
}
