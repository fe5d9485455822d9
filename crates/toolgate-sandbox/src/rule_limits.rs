//! The room is never wider than the permission engine: every file a deny or ask path rule
//! covers when the room starts is hidden (`Read(…)` rules) or read-only (`Edit(…)`).
//!
//! The sandbox never matches a rule itself. The caller passes its engine behind
//! [`PathRules`] (toolgate-setup's `EnginePathRules`: the same compiled globs, anchors and
//! gitignore-style semantics as every decision), and [`SandboxPolicy::add_rule_limits`]
//! walks the project roots and the directories the rules name, asking it about every
//! entry. A directory a `Read` rule covers is masked whole and not entered; directories no
//! rule can reach beneath are not entered either. The walk is bounded
//! ([`FsPolicy::max_walk_entries`](crate::FsPolicy::max_walk_entries)): past the bound the
//! room is refused with [`SandboxError::WalkTooLarge`], never started without its masks.
//!
//! Limits (docs/sandbox.md, "Masks from permission rules"): what matches only outside the
//! walked directories (`Read(.env)` reaches every directory of the machine) is not masked;
//! files created while the command runs are not; a symlink's target is checked, but a
//! symlinked directory is not entered.

use std::path::{Path, PathBuf};

use crate::error::SandboxError;
use crate::policy::{SandboxPolicy, push_unique};

/// What a permission rule says the room must do with one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathLimit {
    /// A `Read(…)` deny or ask rule covers it: mask it (mode 000; nothing beneath it is
    /// reachable, and it cannot be written either).
    Hide {
        /// The rule as written.
        rule: String,
    },
    /// An `Edit(…)` deny or ask rule covers it: bind it read-only.
    ReadOnly {
        /// The rule as written.
        rule: String,
    },
}

/// The permission engine's deny and ask path rules, as the room asks about them.
pub trait PathRules: Send + Sync {
    /// Whether any rule can limit any path (no walk otherwise).
    fn any(&self) -> bool;
    /// What the rules say about `path` (absolute, as the walk found it).
    fn limit(&self, path: &Path) -> Option<PathLimit>;
    /// Whether a rule could cover a path strictly beneath `dir`.
    fn reach_beneath(&self, dir: &Path) -> bool;
    /// Directories the rules name literally (walked besides the project roots).
    fn named_dirs(&self) -> Vec<PathBuf>;
}

/// Default of `sandbox.filesystem.maxWalkEntries`: how many entries a room's start may look
/// at, per walk, for the permission rules' masks and for repositories below the writable
/// roots. A large monorepo checkout with its build output fits (a walk costs about a
/// microsecond per entry, so this bounds a room's start to a fraction of a second); past it
/// the room is refused and the error says how to raise the bound.
pub const DEFAULT_MAX_WALK_ENTRIES: usize = 200_000;

/// What [`SandboxPolicy::add_rule_limits`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleLimits {
    /// Paths masked.
    pub hidden: Vec<PathBuf>,
    /// Paths made read-only.
    pub read_only: Vec<PathBuf>,
    /// Entries looked at.
    pub entries: usize,
}

struct Walk<'a> {
    rules: &'a dyn PathRules,
    max: usize,
    out: RuleLimits,
    example: Option<String>,
}

impl Walk<'_> {
    fn too_large(&self, root: &Path) -> SandboxError {
        let rule = self.example.as_deref().unwrap_or("Read(…)");
        SandboxError::WalkTooLarge {
            root: root.to_path_buf(),
            max: self.max,
            purpose: "against the deny and ask path rules".to_owned(),
            hint: format!(
                "anchor rules that reach every directory (e.g. `{rule}` → `Read(./.env)` or \
                 `Read(./config/**)`), or raise sandbox.filesystem.maxWalkEntries"
            ),
        }
    }

    /// Looks at `path` (whose type is `is_dir`, not following links) and below it.
    fn visit(&mut self, root: &Path, path: &Path, is_dir: bool) -> Result<(), SandboxError> {
        self.out.entries += 1;
        if self.out.entries > self.max {
            return Err(self.too_large(root));
        }
        let limit = self.rules.limit(path).or_else(|| {
            // A link is read through: what it leads to counts (`ln -s ../secrets/k x`).
            let meta = std::fs::symlink_metadata(path).ok()?;
            if !meta.file_type().is_symlink() {
                return None;
            }
            self.rules.limit(&std::fs::canonicalize(path).ok()?)
        });
        match limit {
            Some(PathLimit::Hide { rule }) => {
                self.example.get_or_insert(rule);
                self.out.hidden.push(path.to_path_buf());
                return Ok(()); // nothing beneath a mask is reachable
            }
            Some(PathLimit::ReadOnly { rule }) => {
                self.example.get_or_insert(rule);
                self.out.read_only.push(path.to_path_buf());
            }
            None => {}
        }
        if !is_dir || !self.rules.reach_beneath(path) {
            return Ok(());
        }
        let Ok(entries) = std::fs::read_dir(path) else {
            return Ok(()); // unreadable here: unreadable in the room too
        };
        for entry in entries.flatten() {
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            self.visit(root, &entry.path(), is_dir)?;
        }
        Ok(())
    }
}

impl SandboxPolicy {
    /// Adds the masks and read-only carve-outs that `rules` call for, found by walking the
    /// project roots and the directories the rules name (see the module docs). On error
    /// the policy is unchanged.
    pub fn add_rule_limits(&mut self, rules: &dyn PathRules) -> Result<RuleLimits, SandboxError> {
        if !rules.any() {
            return Ok(RuleLimits::default());
        }
        let mut roots: Vec<PathBuf> = self.filesystem.project_roots.clone();
        for dir in rules.named_dirs() {
            if !roots.iter().any(|r| dir.starts_with(r)) {
                roots.push(dir);
            }
        }
        // A root beneath another is walked with it.
        let all = roots.clone();
        roots.retain(|r| !all.iter().any(|o| o != r && r.starts_with(o)));
        let mut walk = Walk {
            rules,
            max: self.filesystem.max_walk_entries,
            out: RuleLimits::default(),
            example: None,
        };
        for root in &roots {
            let Ok(meta) = std::fs::symlink_metadata(root) else {
                continue; // nothing there to mask
            };
            walk.visit(root, root, meta.is_dir())?;
        }
        let out = walk.out;
        for p in &out.hidden {
            push_unique(&mut self.filesystem.read_denied, p.clone());
        }
        for p in &out.read_only {
            push_unique(&mut self.filesystem.write_denied, p.clone());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hides `*.key`, keeps `*.lock` read-only, and reaches beneath everything but `vendor`.
    struct Fake;

    impl PathRules for Fake {
        fn any(&self) -> bool {
            true
        }
        fn limit(&self, path: &Path) -> Option<PathLimit> {
            let name = path.file_name()?.to_string_lossy();
            if name.ends_with(".key") {
                Some(PathLimit::Hide {
                    rule: "Read(*.key)".into(),
                })
            } else if name.ends_with(".lock") {
                Some(PathLimit::ReadOnly {
                    rule: "Edit(*.lock)".into(),
                })
            } else {
                None
            }
        }
        fn reach_beneath(&self, dir: &Path) -> bool {
            !dir.ends_with("vendor")
        }
        fn named_dirs(&self) -> Vec<PathBuf> {
            Vec::new()
        }
    }

    #[test]
    fn walk_finds_nested_matches_and_link_targets_and_prunes() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = std::fs::canonicalize(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        for d in ["a/b", "vendor"] {
            std::fs::create_dir_all(ws.join(d)).unwrap_or_else(|e| panic!("{e}"));
        }
        for f in ["a/b/s.key", "a/x.lock", "vendor/v.key", "plain.txt"] {
            std::fs::write(ws.join(f), "x").unwrap_or_else(|e| panic!("{e}"));
        }
        std::os::unix::fs::symlink(ws.join("a/b/s.key"), ws.join("innocent"))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut policy = SandboxPolicy::workspace_write(&ws, None);
        let found = policy
            .add_rule_limits(&Fake)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut hidden = found.hidden.clone();
        hidden.sort();
        assert_eq!(hidden, [ws.join("a/b/s.key"), ws.join("innocent")]);
        assert_eq!(found.read_only, [ws.join("a/x.lock")]);
        assert!(
            policy
                .filesystem
                .read_denied
                .contains(&ws.join("a/b/s.key"))
        );
        assert!(
            policy
                .filesystem
                .write_denied
                .contains(&ws.join("a/x.lock"))
        );

        let mut small = SandboxPolicy::workspace_write(&ws, None);
        small.filesystem.max_walk_entries = 2;
        let before = small.clone();
        let err = small.add_rule_limits(&Fake);
        assert!(
            matches!(err, Err(SandboxError::WalkTooLarge { max: 2, .. })),
            "{err:?}"
        );
        assert_eq!(small, before, "a failed walk changes nothing");
    }
}
