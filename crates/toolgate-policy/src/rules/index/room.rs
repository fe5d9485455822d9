//! The room's view of the deny and ask path rules: which rule covers a file, whether any
//! can cover something below a directory, and which directories they name — the same
//! compiled globs a decision uses, for a sandbox that must never be wider than the engine.

use std::path::{Path, PathBuf};

use globset::Candidate;

use super::{RuleSet, slot};
use crate::rules::{PathFamily, Rule, RuleKind};

/// The room's view of the deny and ask path rules (`Read(…)`, `Edit(…)`): which rule
/// covers a file, whether any can cover something below a directory, and which
/// directories they name. Only path rules: a bare `Read` or `Edit` rule takes a tool away
/// rather than describing files.
impl RuleSet {
    /// Whether any deny or ask rule names paths.
    pub(crate) fn has_limiting_path_rules(&self) -> bool {
        [RuleKind::Deny, RuleKind::Ask].into_iter().any(|k| {
            let ix = &self.idx[slot(k)];
            !ix.read_paths.is_empty() || !ix.edit_paths.is_empty()
        })
    }

    /// The first deny (then ask) rule covering `path`, reading rules before editing ones,
    /// with the family it came from.
    pub(crate) fn limiting_path_rule(&self, path: &Path) -> Option<(&Rule, PathFamily)> {
        let cand = Candidate::new(path);
        let text = path.to_string_lossy();
        let mut hits = Vec::new();
        for family in [PathFamily::Read, PathFamily::Edit] {
            for kind in [RuleKind::Deny, RuleKind::Ask] {
                let ix = &self.idx[slot(kind)];
                let paths = match family {
                    PathFamily::Read => &ix.read_paths,
                    PathFamily::Edit => &ix.edit_paths,
                };
                hits.clear();
                paths.matching(&cand, &text, &mut hits);
                if let Some(i) = hits.iter().min() {
                    return Some((&self.rules[*i as usize], family));
                }
            }
        }
        None
    }

    /// Whether a deny or ask path rule could cover something strictly beneath `dir`.
    pub(crate) fn limiting_path_rules_reach_beneath(&self, dir: &Path) -> bool {
        [RuleKind::Deny, RuleKind::Ask].into_iter().any(|k| {
            let ix = &self.idx[slot(k)];
            ix.read_paths.may_reach_beneath(dir) || ix.edit_paths.may_reach_beneath(dir)
        })
    }

    /// The directories deny and ask path rules name literally (`/home/u/.ssh` of
    /// `Read(~/.ssh/**)`, `/work/proj` of `Read(**/*.pem)`): what they cover lies beneath
    /// one of them. Rules without a literal prefix (`Read(.env)`) name none.
    pub(crate) fn limiting_path_rule_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for k in [RuleKind::Deny, RuleKind::Ask] {
            let ix = &self.idx[slot(k)];
            for prefix in ix.read_paths.prefixes().chain(ix.edit_paths.prefixes()) {
                let dir = PathBuf::from(prefix);
                if !dirs.contains(&dir) {
                    dirs.push(dir);
                }
            }
        }
        dirs
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::Engine;

    fn engine(deny: &[&str], ask: &[&str]) -> Engine {
        let mut b = Engine::builder().cwd("/proj").home("/home/u");
        for r in deny {
            b = b.deny(r);
        }
        for r in ask {
            b = b.ask(r);
        }
        b.build().unwrap()
    }

    #[test]
    fn nested_and_double_star_rules_cover_what_the_engine_denies() {
        let e = engine(
            &["Read(.env)", "Read(**/*.pem)", "Edit(/locked/**)", "Read"],
            &["Read(./notes/*.txt)"],
        );
        let hidden = |p: &str| e.room_path_limit(Path::new(p)).map(|l| (l.hide, l.rule));
        assert_eq!(hidden("/proj/app/.env"), Some((true, "Read(.env)".into())));
        assert_eq!(hidden("/elsewhere/.env"), Some((true, "Read(.env)".into())));
        assert_eq!(
            hidden("/proj/certs/deep/s.pem"),
            Some((true, "Read(**/*.pem)".into()))
        );
        assert_eq!(
            hidden("/proj/notes/a.txt"),
            Some((true, "Read(./notes/*.txt)".into()))
        );
        assert_eq!(
            hidden("/proj/locked/x"),
            Some((false, "Edit(/locked/**)".into()))
        );
        // The bare `Read` deny takes the tool away; it does not make every file a secret.
        assert_eq!(hidden("/proj/src/main.rs"), None);
        assert!(e.has_room_path_limits());
        assert!(!engine(&["Read", "Bash(rm *)"], &[]).has_room_path_limits());
    }

    #[test]
    fn reach_and_named_dirs_prune_a_walk() {
        let anchored = engine(&["Read(./secrets/**)", "Read(~/.ssh/**)"], &[]);
        assert!(anchored.room_path_limits_reach_beneath(Path::new("/proj")));
        assert!(!anchored.room_path_limits_reach_beneath(Path::new("/proj/target")));
        let mut dirs = anchored.room_path_rule_dirs();
        dirs.sort();
        assert!(dirs.contains(&"/home/u/.ssh".into()), "{dirs:?}");
        assert!(dirs.contains(&"/proj/secrets".into()), "{dirs:?}");
        let anywhere = engine(&["Read(.env)"], &[]);
        assert!(anywhere.room_path_limits_reach_beneath(Path::new("/proj/target")));
        assert!(anywhere.room_path_rule_dirs().is_empty());
    }
}
