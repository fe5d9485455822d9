//! The risk floor: what no allow rule, mode or hook can approve.
//!
//! - **Hard floor** (denied in every mode; only managed settings can turn it into an ask):
//!   a finding of the shell analyzer's catastrophic class, and deletion of a critical path
//!   (`/` and its direct children, the home directory, a root or cwd and every parent of
//!   one, and a glob directly under any of those).
//! - **Soft floor** (never auto-approved outside `bypassPermissions`): writes and deletes of
//!   protected paths (`.git`, shell rc files, `.toolgate`, …; Claude Code's list, compat §6).

use std::path::{Path, PathBuf};

use toolgate_protocol::Risk;

/// One protected-path entry with examples that must and must not match.
#[derive(Debug, Clone, Copy)]
pub struct ProtectedEntry {
    /// `dir:NAME` (a path component, or consecutive components `A/B`) or `file:NAME` (the
    /// final component).
    pub pattern: &'static str,
    /// Paths it matches.
    pub matches: &'static [&'static str],
    /// Look-alikes it must not match.
    pub not_matches: &'static [&'static str],
}

/// Protected paths: Claude Code's list plus toolgate's own settings directory and `.ssh`.
/// The shell analyzer and the file tools set `PathFact::protected` from their copy of this
/// list; the engine checks again with this one, so a tool that forgets cannot open the door.
pub const PROTECTED: &[ProtectedEntry] = &[
    ProtectedEntry {
        pattern: "dir:.git",
        matches: &["/w/.git/config", "/w/sub/.git/hooks/x", "/w/.Git/HEAD"],
        not_matches: &["/w/.github/ci.yml", "/w/.gitignore"],
    },
    ProtectedEntry {
        pattern: "dir:.config/git",
        matches: &["/h/.config/git/config"],
        not_matches: &["/h/.config/gitx"],
    },
    ProtectedEntry {
        pattern: "dir:.vscode",
        matches: &["/w/.vscode/settings.json"],
        not_matches: &["/w/vscode/x"],
    },
    ProtectedEntry {
        pattern: "dir:.idea",
        matches: &["/w/.idea/workspace.xml"],
        not_matches: &["/w/idea.md"],
    },
    ProtectedEntry {
        pattern: "dir:.husky",
        matches: &["/w/.husky/pre-commit"],
        not_matches: &["/w/husky.txt"],
    },
    ProtectedEntry {
        pattern: "dir:.cargo",
        matches: &["/h/.cargo/config.toml"],
        not_matches: &["/w/Cargo.toml"],
    },
    ProtectedEntry {
        pattern: "dir:.devcontainer",
        matches: &["/w/.devcontainer/devcontainer.json"],
        not_matches: &["/w/devcontainer"],
    },
    ProtectedEntry {
        pattern: "dir:.yarn",
        matches: &["/w/.yarn/releases/y.cjs"],
        not_matches: &["/w/yarn.lock"],
    },
    ProtectedEntry {
        pattern: "dir:.mvn",
        matches: &["/w/.mvn/jvm.config"],
        not_matches: &["/w/mvnw"],
    },
    ProtectedEntry {
        pattern: "dir:.claude",
        matches: &["/w/.claude/settings.json"],
        not_matches: &["/w/.claude/worktrees/a/x.rs", "/w/claude.md"],
    },
    ProtectedEntry {
        pattern: "dir:.toolgate",
        matches: &["/w/.toolgate/settings.json"],
        not_matches: &["/w/toolgate.md"],
    },
    ProtectedEntry {
        pattern: "dir:.ssh",
        matches: &["/h/.ssh/authorized_keys"],
        not_matches: &["/w/ssh.md"],
    },
    ProtectedEntry {
        pattern: "file:.gitconfig",
        matches: &["/h/.gitconfig"],
        not_matches: &["/w/gitconfig.md"],
    },
    ProtectedEntry {
        pattern: "file:.gitmodules",
        matches: &["/w/.gitmodules"],
        not_matches: &["/w/.gitignore"],
    },
    ProtectedEntry {
        pattern: "file:.bashrc",
        matches: &["/h/.bashrc"],
        not_matches: &["/w/bashrc.example"],
    },
    ProtectedEntry {
        pattern: "file:.bash_profile",
        matches: &["/h/.bash_profile"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.bash_login",
        matches: &["/h/.bash_login"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.bash_aliases",
        matches: &["/h/.bash_aliases"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.bash_logout",
        matches: &["/h/.bash_logout"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.zshrc",
        matches: &["/h/.zshrc"],
        not_matches: &["/w/zshrc"],
    },
    ProtectedEntry {
        pattern: "file:.zprofile",
        matches: &["/h/.zprofile"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.zshenv",
        matches: &["/h/.zshenv"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.zlogin",
        matches: &["/h/.zlogin"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.zlogout",
        matches: &["/h/.zlogout"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.profile",
        matches: &["/h/.profile"],
        not_matches: &["/w/profile.txt"],
    },
    ProtectedEntry {
        pattern: "file:.envrc",
        matches: &["/w/.envrc"],
        not_matches: &["/w/.env"],
    },
    ProtectedEntry {
        pattern: "file:.npmrc",
        matches: &["/w/.npmrc"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.yarnrc",
        matches: &["/w/.yarnrc"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.yarnrc.yml",
        matches: &["/w/.yarnrc.yml"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.pnp.cjs",
        matches: &["/w/.pnp.cjs"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.pnp.loader.mjs",
        matches: &["/w/.pnp.loader.mjs"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.pnpmfile.cjs",
        matches: &["/w/.pnpmfile.cjs"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:bunfig.toml",
        matches: &["/w/bunfig.toml"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.bunfig.toml",
        matches: &["/w/.bunfig.toml"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.bazelrc",
        matches: &["/w/.bazelrc"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.bazelversion",
        matches: &["/w/.bazelversion"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.bazeliskrc",
        matches: &["/w/.bazeliskrc"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.pre-commit-config.yaml",
        matches: &["/w/.pre-commit-config.yaml"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:lefthook.yml",
        matches: &["/w/lefthook.yml"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:lefthook.yaml",
        matches: &["/w/lefthook.yaml"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.lefthook.yml",
        matches: &["/w/.lefthook.yml"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.lefthook.yaml",
        matches: &["/w/.lefthook.yaml"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:gradle-wrapper.properties",
        matches: &["/w/gradle/wrapper/gradle-wrapper.properties"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:maven-wrapper.properties",
        matches: &["/w/.mvn/wrapper/maven-wrapper.properties"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.devcontainer.json",
        matches: &["/w/.devcontainer.json"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.ripgreprc",
        matches: &["/h/.ripgreprc"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:pyrightconfig.json",
        matches: &["/w/pyrightconfig.json"],
        not_matches: &[],
    },
    ProtectedEntry {
        pattern: "file:.mcp.json",
        matches: &["/w/.mcp.json"],
        not_matches: &["/w/mcp.json"],
    },
    ProtectedEntry {
        pattern: "file:.claude.json",
        matches: &["/h/.claude.json"],
        not_matches: &[],
    },
];

impl ProtectedEntry {
    /// Whether `path` (absolute, normalised) matches this entry.
    pub fn matches(&self, path: &Path) -> bool {
        self.matches_components(&components(path))
    }

    fn matches_components(&self, comps: &[&str]) -> bool {
        // Names compare case-insensitively: on a case-insensitive file system (macOS,
        // Windows) `.GIT/hooks` is `.git/hooks`.
        if let Some(name) = self.pattern.strip_prefix("file:") {
            return comps
                .last()
                .is_some_and(|last| last.eq_ignore_ascii_case(name));
        }
        let Some(dir) = self.pattern.strip_prefix("dir:") else {
            return false;
        };
        let n = dir.split('/').count();
        comps.windows(n).enumerate().any(|(i, w)| {
            w.iter()
                .zip(dir.split('/'))
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
                // `.claude/worktrees` is where agents work; it is not protected.
                && !(dir.eq_ignore_ascii_case(".claude")
                    && comps
                        .get(i + n)
                        .is_some_and(|c| c.eq_ignore_ascii_case("worktrees")))
        })
    }
}

fn components(path: &Path) -> Vec<&str> {
    path.components()
        .filter_map(|c| c.as_os_str().to_str())
        .filter(|c| *c != "/")
        .collect()
}

/// Whether `path` is protected.
pub fn is_protected(path: &Path) -> bool {
    let comps = components(path);
    PROTECTED.iter().any(|e| e.matches_components(&comps))
}

/// Why deleting `path` is catastrophic, if it is: `/` or a direct child, the home directory,
/// a root or cwd or a parent of one, or a glob directly under any of these.
pub fn critical_deletion(
    path: &Path,
    home: Option<&Path>,
    cwd: &Path,
    roots: &[&Path],
) -> Option<String> {
    let text = path.to_string_lossy();
    let (target, globbed) = match path.file_name().and_then(|n| n.to_str()) {
        Some(name) if name.contains(['*', '?', '[']) => (
            path.parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("/")),
            true,
        ),
        _ => (path.to_path_buf(), false),
    };
    let what = if globbed { "everything in " } else { "" };
    if target == Path::new("/") {
        return Some(format!("deleting {what}`/` ({text})"));
    }
    if !globbed && target.parent() == Some(Path::new("/")) {
        return Some(format!("deleting a top-level directory ({text})"));
    }
    if home.is_some_and(|h| target == h) {
        return Some(format!("deleting {what}the home directory ({text})"));
    }
    for anchor in roots.iter().copied().chain(std::iter::once(cwd)) {
        if anchor.starts_with(&target) {
            return Some(format!(
                "deleting {what}{} ({text}), which contains the working directory {}",
                if target == anchor {
                    "the working directory"
                } else {
                    "a parent of the working directory"
                },
                anchor.display()
            ));
        }
    }
    None
}

/// The hard floor for analyzer findings: the first catastrophic one.
pub fn catastrophic(
    findings: &[toolgate_protocol::Finding],
) -> Option<&toolgate_protocol::Finding> {
    findings.iter().find(|f| f.risk == Risk::Catastrophic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_entries_carry_their_examples() {
        for e in PROTECTED {
            for m in e.matches {
                assert!(e.matches(Path::new(m)), "{} should match {m}", e.pattern);
                assert!(is_protected(Path::new(m)));
            }
            for n in e.not_matches {
                assert!(
                    !e.matches(Path::new(n)),
                    "{} should not match {n}",
                    e.pattern
                );
            }
        }
        assert!(!is_protected(Path::new("/w/.claude/worktrees/a/x.rs")));
    }

    #[test]
    fn critical_paths() {
        let cwd = Path::new("/home/u/proj");
        let roots = [cwd];
        let home = Some(Path::new("/home/u"));
        for p in [
            "/",
            "/etc",
            "/usr",
            "/home/u",
            "/home",
            "/home/u/proj",
            "/*",
            "/home/u/*",
            "/home/u/proj/*",
        ] {
            assert!(
                critical_deletion(Path::new(p), home, cwd, &roots).is_some(),
                "{p}"
            );
        }
        for p in [
            "/home/u/proj/build",
            "/home/u/proj/src/*",
            "/tmp/x",
            "/etc/foo/bar",
        ] {
            assert!(
                critical_deletion(Path::new(p), home, cwd, &roots).is_none(),
                "{p}"
            );
        }
    }
}
