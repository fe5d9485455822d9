//! Protected paths (reference §6, plus toolgate's own `.toolgate/`): writing them is never
//! auto-approved, so the file tools report them to the policy stage as `PathFact.protected`.
//!
//! The list is data. Every entry carries paths it must match and near misses it must not;
//! one test walks them all. (`toolgate-shell` keeps a list for shell redirects as well; the
//! two should move into one shared place — until then this one is the file tools' own.)

use std::path::{Component, Path};

/// How an entry matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtectedKind {
    /// A directory: the path is it or lies under it, at any depth. The pattern may span
    /// several components (`.config/git`).
    Dir,
    /// A file name, at any depth.
    File,
}

/// One protected path, with examples.
#[derive(Debug, Clone, Copy)]
pub struct ProtectedPath {
    /// The name (or `/`-separated names) to look for.
    pub pattern: &'static str,
    /// Directory or file name.
    pub kind: ProtectedKind,
    /// A sub-directory of a protected directory that is not protected.
    pub except: Option<&'static str>,
    /// Relative paths this entry must match.
    pub matches: &'static [&'static str],
    /// Relative paths it must not match (near misses).
    pub near_misses: &'static [&'static str],
}

const fn dir(
    pattern: &'static str,
    matches: &'static [&'static str],
    near_misses: &'static [&'static str],
) -> ProtectedPath {
    ProtectedPath {
        pattern,
        kind: ProtectedKind::Dir,
        except: None,
        matches,
        near_misses,
    }
}

const fn file(
    pattern: &'static str,
    matches: &'static [&'static str],
    near_misses: &'static [&'static str],
) -> ProtectedPath {
    ProtectedPath {
        pattern,
        kind: ProtectedKind::File,
        except: None,
        matches,
        near_misses,
    }
}

/// The protected paths.
pub const PROTECTED_PATHS: &[ProtectedPath] = &[
    dir(
        ".git",
        &[
            ".git",
            ".git/config",
            "sub/.git/hooks/pre-commit",
            ".GIT/HEAD",
        ],
        &[
            ".github/workflows/ci.yml",
            ".gitignore",
            "my.git/config",
            "git/config",
        ],
    ),
    dir(
        ".config/git",
        &[".config/git/config", "home/.config/git/ignore"],
        &[".config/gitx/config", ".config/nvim/init.lua", "git/config"],
    ),
    dir(
        ".vscode",
        &[".vscode/settings.json"],
        &["vscode/settings.json"],
    ),
    dir(".idea", &[".idea/workspace.xml"], &[".ideas/notes.md"]),
    dir(".husky", &[".husky/pre-commit"], &["husky/pre-commit"]),
    dir(
        ".cargo",
        &[".cargo/config.toml"],
        &["Cargo.toml", "cargo/config.toml"],
    ),
    dir(
        ".devcontainer",
        &[".devcontainer/devcontainer.json"],
        &["devcontainer/x.json"],
    ),
    dir(".yarn", &[".yarn/releases/yarn.cjs"], &["yarn.lock"]),
    dir(".mvn", &[".mvn/wrapper/maven-wrapper.jar"], &["mvnw"]),
    dir(
        ".ssh",
        &[".ssh/authorized_keys", "home/u/.ssh/config"],
        &["ssh.md", "docs/ssh/setup.md"],
    ),
    ProtectedPath {
        pattern: ".claude",
        kind: ProtectedKind::Dir,
        except: Some("worktrees"),
        matches: &[".claude/settings.json", ".claude/agents/x.md", ".claude"],
        near_misses: &[
            ".claude/worktrees/feature/src/main.rs",
            "claude/settings.json",
        ],
    },
    dir(
        ".toolgate",
        &[".toolgate/settings.json", ".toolgate/settings.local.json"],
        &["toolgate/settings.json", ".toolgates/x"],
    ),
    file(
        ".gitconfig",
        &[".gitconfig", "home/.gitconfig"],
        &["gitconfig.md"],
    ),
    file(".gitmodules", &[".gitmodules"], &[".gitmodules.bak"]),
    file(
        ".bashrc",
        &[".bashrc", "home/u/.bashrc"],
        &["bashrc", ".bashrc.d/x"],
    ),
    file(".bash_profile", &[".bash_profile"], &["bash_profile"]),
    file(".bash_login", &[".bash_login"], &["bash_login"]),
    file(".bash_aliases", &[".bash_aliases"], &[".bash_aliases.txt"]),
    file(".bash_logout", &[".bash_logout"], &["bash_logout"]),
    file(".zshrc", &[".zshrc"], &["zshrc"]),
    file(".zprofile", &[".zprofile"], &["zprofile"]),
    file(".zshenv", &[".zshenv"], &["zshenv"]),
    file(".zlogin", &[".zlogin"], &["zlogin"]),
    file(".zlogout", &[".zlogout"], &["zlogout"]),
    file(".profile", &[".profile"], &["profile", "src/profile.rs"]),
    file(".envrc", &[".envrc"], &["envrc", ".env"]),
    file(".npmrc", &[".npmrc", "packages/a/.npmrc"], &["npmrc"]),
    file(".yarnrc", &[".yarnrc"], &["yarnrc"]),
    file(".yarnrc.yml", &[".yarnrc.yml"], &["yarnrc.yml"]),
    file(".pnp.cjs", &[".pnp.cjs"], &["pnp.cjs"]),
    file(".pnp.loader.mjs", &[".pnp.loader.mjs"], &["pnp.loader.mjs"]),
    file(".pnpmfile.cjs", &[".pnpmfile.cjs"], &["pnpmfile.cjs"]),
    file("bunfig.toml", &["bunfig.toml"], &["bunfig.toml.txt"]),
    file(".bunfig.toml", &[".bunfig.toml"], &["x.bunfig.toml"]),
    file(".bazelrc", &[".bazelrc"], &["bazelrc"]),
    file(".bazelversion", &[".bazelversion"], &["bazelversion"]),
    file(".bazeliskrc", &[".bazeliskrc"], &["bazeliskrc"]),
    file(
        ".pre-commit-config.yaml",
        &[".pre-commit-config.yaml"],
        &["pre-commit-config.yaml"],
    ),
    file("lefthook.yml", &["lefthook.yml"], &["lefthook.yml.example"]),
    file("lefthook.yaml", &["lefthook.yaml"], &["lefthooks.yaml"]),
    file(".lefthook.yml", &[".lefthook.yml"], &["a.lefthook.yml"]),
    file(".lefthook.yaml", &[".lefthook.yaml"], &["a.lefthook.yaml"]),
    file(
        "gradle-wrapper.properties",
        &["gradle/wrapper/gradle-wrapper.properties"],
        &["gradle.properties"],
    ),
    file(
        "maven-wrapper.properties",
        &[
            ".mvn/wrapper/maven-wrapper.properties",
            "maven-wrapper.properties",
        ],
        &["maven.properties"],
    ),
    file(
        ".devcontainer.json",
        &[".devcontainer.json"],
        &["devcontainer.json"],
    ),
    file(".ripgreprc", &[".ripgreprc"], &["ripgreprc"]),
    file(
        "pyrightconfig.json",
        &["pyrightconfig.json"],
        &["pyproject.toml"],
    ),
    file(
        ".mcp.json",
        &[".mcp.json", "sub/.mcp.json"],
        &["mcp.json", ".mcp.json5"],
    ),
    file(".claude.json", &[".claude.json"], &["claude.json"]),
];

fn names(path: &Path) -> Vec<&str> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect()
}

impl ProtectedPath {
    /// Whether this entry matches `path` (relative to its root, or absolute). Names compare
    /// ASCII-case-insensitively, because case-insensitive file systems exist.
    pub fn is_match(&self, path: &Path) -> bool {
        let comps = names(path);
        match self.kind {
            ProtectedKind::File => comps
                .last()
                .is_some_and(|n| n.eq_ignore_ascii_case(self.pattern)),
            ProtectedKind::Dir => {
                let pat: Vec<&str> = self.pattern.split('/').collect();
                (0..comps.len()).any(|start| {
                    let window = &comps[start..];
                    window.len() >= pat.len()
                        && window
                            .iter()
                            .zip(&pat)
                            .all(|(a, b)| a.eq_ignore_ascii_case(b))
                        && !self.except.is_some_and(|ex| {
                            window
                                .get(pat.len())
                                .is_some_and(|n| n.eq_ignore_ascii_case(ex))
                        })
                })
            }
        }
    }
}

/// Whether `path` (relative to a root, or absolute) is a protected path.
///
/// ```
/// use std::path::Path;
/// use toolgate_tools::paths::is_protected_path;
/// assert!(is_protected_path(Path::new(".git/config")));
/// assert!(is_protected_path(Path::new("web/.npmrc")));
/// assert!(!is_protected_path(Path::new(".github/workflows/ci.yml")));
/// ```
pub fn is_protected_path(path: &Path) -> bool {
    PROTECTED_PATHS.iter().any(|p| p.is_match(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_matches_its_examples_and_not_its_near_misses() {
        for entry in PROTECTED_PATHS {
            assert!(
                !entry.matches.is_empty(),
                "{} has no examples",
                entry.pattern
            );
            for m in entry.matches {
                assert!(
                    entry.is_match(Path::new(m)),
                    "{} should match {m}",
                    entry.pattern
                );
            }
            for n in entry.near_misses {
                assert!(
                    !entry.is_match(Path::new(n)),
                    "{} should not match {n}",
                    entry.pattern
                );
            }
        }
    }

    #[test]
    fn near_misses_are_unprotected_overall() {
        for entry in PROTECTED_PATHS {
            for n in entry.near_misses {
                // A near miss for one entry may legitimately match another (e.g. a path under
                // `.mvn` for the maven wrapper file); only check those that match nothing.
                let others = PROTECTED_PATHS.iter().any(|p| p.is_match(Path::new(n)));
                if !others {
                    assert!(!is_protected_path(Path::new(n)));
                }
            }
        }
        assert!(is_protected_path(Path::new("/ws/.git/config")));
        assert!(!is_protected_path(Path::new("src/main.rs")));
    }
}
