//! Path facts without I/O: lexical normalisation, protected paths, critical paths, secrets.
//!
//! Nothing here touches the file system: paths are made absolute against the tracked working
//! directory and `.`/`..` are folded lexically. Symlinks are the sandbox's business.

use std::path::{Component, Path, PathBuf};

use crate::Context;

/// One entry of a path list: what it matches, and examples that must and must not match.
#[derive(Debug, Clone, Copy)]
pub struct PathPattern {
    /// What kind of entry (`dir`, `file`, …), for explanations.
    pub kind: &'static str,
    /// The pattern; see [`PathPattern::matches`].
    pub pattern: &'static str,
    /// Absolute paths this entry matches (home is `/home/u`).
    pub matches: &'static [&'static str],
    /// Look-alikes it must not match.
    pub not_matches: &'static [&'static str],
}

/// Claude Code's protected paths (compat §6) plus toolgate's own configuration directory.
///
/// `dir:NAME` matches a path with a component `NAME` (so `.git` matches `repo/.git/config`);
/// `dir:A/B` matches consecutive components; `file:NAME` matches a final component.
/// Writes to any of these are never auto-approved.
#[rustfmt::skip]
pub const PROTECTED_PATHS: &[PathPattern] = &[
    PathPattern { kind: "directory", pattern: "dir:.git", matches: &["/w/.git/config", "/w/.git", "/w/sub/.git/hooks/pre-commit", "/w/.GIT/hooks/pre-commit"], not_matches: &["/w/.github/ci.yml", "/w/.gitignore"]},
    PathPattern { kind: "directory", pattern: "dir:.config/git", matches: &["/home/u/.config/git/config"], not_matches: &["/home/u/.config/gitx"]},
    PathPattern { kind: "directory", pattern: "dir:.vscode", matches: &["/w/.vscode/settings.json"], not_matches: &["/w/vscode/x"]},
    PathPattern { kind: "directory", pattern: "dir:.idea", matches: &["/w/.idea/workspace.xml"], not_matches: &["/w/idea.md"]},
    PathPattern { kind: "directory", pattern: "dir:.husky", matches: &["/w/.husky/pre-commit"], not_matches: &["/w/husky.txt"]},
    PathPattern { kind: "directory", pattern: "dir:.cargo", matches: &["/home/u/.cargo/config.toml"], not_matches: &["/w/cargo.toml"]},
    PathPattern { kind: "directory", pattern: "dir:.devcontainer", matches: &["/w/.devcontainer/devcontainer.json"], not_matches: &["/w/devcontainer"]},
    PathPattern { kind: "directory", pattern: "dir:.yarn", matches: &["/w/.yarn/releases/yarn.cjs"], not_matches: &["/w/yarn.lock"]},
    PathPattern { kind: "directory", pattern: "dir:.mvn", matches: &["/w/.mvn/jvm.config"], not_matches: &["/w/mvnw"]},
    PathPattern { kind: "directory", pattern: "dir:.claude", matches: &["/w/.claude/settings.json"], not_matches: &["/w/.claude/worktrees/a/x.rs", "/w/claude.md"]},
    PathPattern { kind: "directory", pattern: "dir:.toolgate", matches: &["/w/.toolgate/settings.json"], not_matches: &["/w/toolgate.md"]},
    PathPattern { kind: "directory", pattern: "dir:.ssh", matches: &["/home/u/.ssh/authorized_keys"], not_matches: &["/w/ssh.md"]},
    PathPattern { kind: "git file", pattern: "file:.gitconfig", matches: &["/home/u/.gitconfig"], not_matches: &["/w/gitconfig.md"]},
    PathPattern { kind: "git file", pattern: "file:.gitmodules", matches: &["/w/.gitmodules"], not_matches: &["/w/.gitignore"]},
    PathPattern { kind: "shell startup", pattern: "file:.bashrc", matches: &["/home/u/.bashrc"], not_matches: &["/w/bashrc.example"]},
    PathPattern { kind: "shell startup", pattern: "file:.bash_profile", matches: &["/home/u/.bash_profile"], not_matches: &[]},
    PathPattern { kind: "shell startup", pattern: "file:.bash_login", matches: &["/home/u/.bash_login"], not_matches: &[]},
    PathPattern { kind: "shell startup", pattern: "file:.bash_aliases", matches: &["/home/u/.bash_aliases"], not_matches: &[]},
    PathPattern { kind: "shell startup", pattern: "file:.bash_logout", matches: &["/home/u/.bash_logout"], not_matches: &[]},
    PathPattern { kind: "shell startup", pattern: "file:.zshrc", matches: &["/home/u/.zshrc"], not_matches: &["/w/zshrc"]},
    PathPattern { kind: "shell startup", pattern: "file:.zprofile", matches: &["/home/u/.zprofile"], not_matches: &[]},
    PathPattern { kind: "shell startup", pattern: "file:.zshenv", matches: &["/home/u/.zshenv"], not_matches: &[]},
    PathPattern { kind: "shell startup", pattern: "file:.zlogin", matches: &["/home/u/.zlogin"], not_matches: &[]},
    PathPattern { kind: "shell startup", pattern: "file:.zlogout", matches: &["/home/u/.zlogout"], not_matches: &[]},
    PathPattern { kind: "shell startup", pattern: "file:.profile", matches: &["/home/u/.profile"], not_matches: &["/w/profile.txt"]},
    PathPattern { kind: "shell startup", pattern: "file:.envrc", matches: &["/w/.envrc"], not_matches: &["/w/.env"]},
    PathPattern { kind: "JS package manager", pattern: "file:.npmrc", matches: &["/w/.npmrc"], not_matches: &[]},
    PathPattern { kind: "JS package manager", pattern: "file:.yarnrc", matches: &["/w/.yarnrc"], not_matches: &[]},
    PathPattern { kind: "JS package manager", pattern: "file:.yarnrc.yml", matches: &["/w/.yarnrc.yml"], not_matches: &[]},
    PathPattern { kind: "JS package manager", pattern: "file:.pnp.cjs", matches: &["/w/.pnp.cjs"], not_matches: &[]},
    PathPattern { kind: "JS package manager", pattern: "file:.pnp.loader.mjs", matches: &["/w/.pnp.loader.mjs"], not_matches: &[]},
    PathPattern { kind: "JS package manager", pattern: "file:.pnpmfile.cjs", matches: &["/w/.pnpmfile.cjs"], not_matches: &[]},
    PathPattern { kind: "JS package manager", pattern: "file:bunfig.toml", matches: &["/w/bunfig.toml"], not_matches: &[]},
    PathPattern { kind: "JS package manager", pattern: "file:.bunfig.toml", matches: &["/w/.bunfig.toml"], not_matches: &[]},
    PathPattern { kind: "Bazel", pattern: "file:.bazelrc", matches: &["/w/.bazelrc"], not_matches: &[]},
    PathPattern { kind: "Bazel", pattern: "file:.bazelversion", matches: &["/w/.bazelversion"], not_matches: &[]},
    PathPattern { kind: "Bazel", pattern: "file:.bazeliskrc", matches: &["/w/.bazeliskrc"], not_matches: &[]},
    PathPattern { kind: "commit hooks", pattern: "file:.pre-commit-config.yaml", matches: &["/w/.pre-commit-config.yaml"], not_matches: &[]},
    PathPattern { kind: "commit hooks", pattern: "file:lefthook.yml", matches: &["/w/lefthook.yml"], not_matches: &[]},
    PathPattern { kind: "commit hooks", pattern: "file:lefthook.yaml", matches: &["/w/lefthook.yaml"], not_matches: &[]},
    PathPattern { kind: "commit hooks", pattern: "file:.lefthook.yml", matches: &["/w/.lefthook.yml"], not_matches: &[]},
    PathPattern { kind: "commit hooks", pattern: "file:.lefthook.yaml", matches: &["/w/.lefthook.yaml"], not_matches: &[]},
    PathPattern { kind: "build wrapper", pattern: "file:gradle-wrapper.properties", matches: &["/w/gradle/wrapper/gradle-wrapper.properties"], not_matches: &[]},
    PathPattern { kind: "build wrapper", pattern: "file:maven-wrapper.properties", matches: &["/w/.mvn/wrapper/maven-wrapper.properties"], not_matches: &[]},
    PathPattern { kind: "other", pattern: "file:.devcontainer.json", matches: &["/w/.devcontainer.json"], not_matches: &[]},
    PathPattern { kind: "other", pattern: "file:.ripgreprc", matches: &["/home/u/.ripgreprc"], not_matches: &[]},
    PathPattern { kind: "other", pattern: "file:pyrightconfig.json", matches: &["/w/pyrightconfig.json"], not_matches: &[]},
    PathPattern { kind: "other", pattern: "file:.mcp.json", matches: &["/w/.mcp.json"], not_matches: &["/w/mcp.json"]},
    PathPattern { kind: "other", pattern: "file:.claude.json", matches: &["/home/u/.claude.json"], not_matches: &[]},
];

/// Files whose contents are credentials: reading them is a finding, sending them out is
/// exfiltration. Same pattern syntax as [`PROTECTED_PATHS`], plus `glob:` on the file name
/// (`*` matches any run of characters).
#[rustfmt::skip]
pub const SECRET_PATHS: &[PathPattern] = &[
    PathPattern { kind: "ssh key", pattern: "glob:id_*", matches: &["/home/u/.ssh/id_rsa", "/w/id_ed25519"], not_matches: &["/home/u/.ssh/id_rsa.pub", "/w/idx"]},
    PathPattern { kind: "private key", pattern: "glob:*.pem", matches: &["/w/server.pem"], not_matches: &["/w/pem.txt"]},
    PathPattern { kind: "private key", pattern: "glob:*.key", matches: &["/w/tls.key"], not_matches: &["/w/keys.txt"]},
    PathPattern { kind: "cloud credentials", pattern: "dir:.aws", matches: &["/home/u/.aws/credentials"], not_matches: &["/w/aws/main.tf"]},
    PathPattern { kind: "cloud credentials", pattern: "dir:.config/gcloud", matches: &["/home/u/.config/gcloud/application_default_credentials.json"], not_matches: &[]},
    PathPattern { kind: "cloud credentials", pattern: "dir:.azure", matches: &["/home/u/.azure/accessTokens.json"], not_matches: &[]},
    PathPattern { kind: "cluster credentials", pattern: "dir:.kube", matches: &["/home/u/.kube/config"], not_matches: &["/w/kube/deploy.yaml"]},
    PathPattern { kind: "registry credentials", pattern: "dir:.docker", matches: &["/home/u/.docker/config.json"], not_matches: &["/w/docker/Dockerfile"]},
    PathPattern { kind: "netrc", pattern: "file:.netrc", matches: &["/home/u/.netrc"], not_matches: &[]},
    PathPattern { kind: "git credentials", pattern: "file:.git-credentials", matches: &["/home/u/.git-credentials"], not_matches: &[]},
    PathPattern { kind: "token file", pattern: "file:.pypirc", matches: &["/home/u/.pypirc"], not_matches: &[]},
    PathPattern { kind: "token file", pattern: "file:.vault-token", matches: &["/home/u/.vault-token"], not_matches: &[]},
    PathPattern { kind: "token file", pattern: "dir:.config/gh", matches: &["/home/u/.config/gh/hosts.yml"], not_matches: &[]},
    PathPattern { kind: "token file", pattern: "file:credentials.toml", matches: &["/home/u/.cargo/credentials.toml"], not_matches: &[]},
    PathPattern { kind: "keyring", pattern: "dir:.gnupg", matches: &["/home/u/.gnupg/private-keys-v1.d/x.key"], not_matches: &[]},
    PathPattern { kind: "keyring", pattern: "dir:.password-store", matches: &["/home/u/.password-store/a.gpg"], not_matches: &[]},
    PathPattern { kind: "dotenv", pattern: "glob:.env", matches: &["/w/.env"], not_matches: &["/w/.envrc", "/w/env"]},
    PathPattern { kind: "dotenv", pattern: "glob:.env.*", matches: &["/w/.env.production"], not_matches: &["/w/.env.example", "/w/.env.sample", "/w/.env.template"]},
    PathPattern { kind: "system auth", pattern: "abs:/etc/shadow", matches: &["/etc/shadow"], not_matches: &["/etc/passwd"]},
    PathPattern { kind: "system auth", pattern: "abs:/etc/gshadow", matches: &["/etc/gshadow"], not_matches: &[]},
    PathPattern { kind: "system auth", pattern: "abs:/etc/sudoers", matches: &["/etc/sudoers"], not_matches: &[]},
];

/// Personal data in the home directory (macOS and XDG names): reading it is a privacy finding.
/// Patterns are relative to home (`rel:` prefix).
#[rustfmt::skip]
pub const PERSONAL_PATHS: &[PathPattern] = &[
    PathPattern { kind: "documents", pattern: "rel:Documents", matches: &["/home/u/Documents/tax.pdf"], not_matches: &["/home/u/proj/Documents/x"]},
    PathPattern { kind: "desktop", pattern: "rel:Desktop", matches: &["/home/u/Desktop/a.txt"], not_matches: &[]},
    PathPattern { kind: "downloads", pattern: "rel:Downloads", matches: &["/home/u/Downloads/a.txt"], not_matches: &[]},
    PathPattern { kind: "pictures", pattern: "rel:Pictures", matches: &["/home/u/Pictures/a.jpg"], not_matches: &[]},
    PathPattern { kind: "music", pattern: "rel:Music", matches: &["/home/u/Music/a.mp3"], not_matches: &[]},
    PathPattern { kind: "videos", pattern: "rel:Videos", matches: &["/home/u/Videos/a.mp4"], not_matches: &[]},
    PathPattern { kind: "movies", pattern: "rel:Movies", matches: &["/home/u/Movies/a.mp4"], not_matches: &[]},
    PathPattern { kind: "application data", pattern: "rel:Library", matches: &["/home/u/Library/Messages/chat.db", "/home/u/Library/Safari/History.db"], not_matches: &["/home/u/proj/Library/x"]},
    PathPattern { kind: "mail", pattern: "rel:.thunderbird", matches: &["/home/u/.thunderbird/x"], not_matches: &[]},
    PathPattern { kind: "browser profile", pattern: "rel:.mozilla", matches: &["/home/u/.mozilla/firefox/x"], not_matches: &[]},
    PathPattern { kind: "browser profile", pattern: "rel:.config/google-chrome", matches: &["/home/u/.config/google-chrome/Default/Cookies"], not_matches: &[]},
];

/// The kind of personal data, if `path` is under one of [`PERSONAL_PATHS`] in `home`.
pub(crate) fn personal_kind(path: &Path, home: Option<&Path>) -> Option<&'static str> {
    let rel = path.strip_prefix(home?).ok()?;
    PERSONAL_PATHS
        .iter()
        .find(|p| {
            p.pattern
                .strip_prefix("rel:")
                .is_some_and(|r| rel.starts_with(r))
        })
        .map(|p| p.kind)
}

/// System locations where writes or permission changes affect the whole machine.
const SYSTEM_PREFIXES: &[&str] = &[
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/sys",
    "/proc",
    "/var",
    "/opt",
    "/root",
    "/srv",
    "/snap",
    "/System",
    "/Library",
    "/Applications",
    "/private/etc",
    "/private/var",
];

/// Device files that are harmless to write to.
const HARMLESS_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/stdin",
    "/dev/tty",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/full",
];

impl PathPattern {
    /// Whether this pattern matches an absolute, normalised path.
    pub fn matches(&self, path: &Path) -> bool {
        self.matches_comps(&components(path), path)
    }

    fn matches_comps(&self, comps: &[&str], path: &Path) -> bool {
        let Some((kind, pat)) = self.pattern.split_once(':') else {
            return false;
        };
        match kind {
            "dir" => {
                let mut parts = pat.split('/');
                let first = parts.next().unwrap_or("");
                let second = parts.next();
                // Names compare case-insensitively: on a case-insensitive file system
                // (macOS, Windows) `.GIT/hooks` is `.git/hooks`.
                let same = |a: Option<&&str>, b: &str| a.is_some_and(|a| a.eq_ignore_ascii_case(b));
                let hit = comps.iter().enumerate().position(|(i, c)| {
                    c.eq_ignore_ascii_case(first)
                        && second.is_none_or(|s| same(comps.get(i + 1), s))
                });
                match hit {
                    // `.claude/worktrees` is the agent's own scratch space.
                    Some(i) if pat == ".claude" => !same(comps.get(i + 1), "worktrees"),
                    Some(_) => true,
                    None => false,
                }
            }
            "file" => comps.last().is_some_and(|n| n.eq_ignore_ascii_case(pat)),
            "glob" => comps.last().is_some_and(|name| {
                glob_match(pat, name)
                    && !(pat.starts_with("id_") && name.ends_with(".pub"))
                    && !(pat == ".env.*" && is_env_template(name))
            }),
            "abs" => path == Path::new(pat) || path.starts_with(pat),
            _ => false,
        }
    }
}

/// The normal components of a path, as strings.
fn components(path: &Path) -> Vec<&str> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect()
}

fn is_env_template(name: &str) -> bool {
    ["example", "sample", "template", "dist", "defaults"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// Minimal glob: `*` matches any run of characters, everything else literally.
pub(crate) fn glob_match(pat: &str, s: &str) -> bool {
    let pb = pat.as_bytes();
    let sb = s.as_bytes();
    let (mut p, mut i, mut star, mut mark) = (0usize, 0usize, None::<usize>, 0usize);
    while i < sb.len() {
        if p < pb.len() && pb[p] != b'*' && pb[p] == sb[i] {
            p += 1;
            i += 1;
        } else if p < pb.len() && pb[p] == b'*' {
            star = Some(p);
            mark = i;
            p += 1;
        } else if let Some(sp) = star {
            p = sp + 1;
            mark += 1;
            i = mark;
        } else {
            return false;
        }
    }
    while p < pb.len() && pb[p] == b'*' {
        p += 1;
    }
    p == pb.len()
}

/// Whether writing `path` needs a person's confirmation because it is configuration that runs
/// code or holds trust (Claude Code's protected list, compat §6, plus `.toolgate` and `.ssh`).
///
/// Matching is by path component, wherever the component sits: `.git` protects every
/// repository's `.git` directory, `.bashrc` every shell rc file. `roots` and `home` are accepted
/// so callers need not care whether a future entry is anchored; today every entry matches
/// anywhere, which is the conservative reading.
///
/// ```
/// use std::path::{Path, PathBuf};
/// use toolgate_shell::is_protected_path;
/// let roots = [PathBuf::from("/w")];
/// assert!(is_protected_path(Path::new("/w/.git/hooks/pre-commit"), &roots, None));
/// assert!(is_protected_path(Path::new("/home/u/.bashrc"), &roots, Some(Path::new("/home/u"))));
/// assert!(!is_protected_path(Path::new("/w/src/main.rs"), &roots, None));
/// assert!(!is_protected_path(Path::new("/w/.claude/worktrees/x/a.rs"), &roots, None));
/// ```
pub fn is_protected_path(path: &Path, roots: &[PathBuf], home: Option<&Path>) -> bool {
    let _ = (roots, home);
    protected_kind(path).is_some()
}

/// The kind of protected path, if `path` is one.
pub(crate) fn protected_kind(path: &Path) -> Option<&'static str> {
    let comps = components(path);
    PROTECTED_PATHS
        .iter()
        .find(|p| p.matches_comps(&comps, path))
        .map(|p| p.kind)
}

/// The kind of secret, if `path` holds credentials.
pub(crate) fn secret_kind(path: &Path) -> Option<&'static str> {
    let comps = components(path);
    SECRET_PATHS
        .iter()
        .find(|p| p.matches_comps(&comps, path))
        .map(|p| p.kind)
}

/// Whether deleting `path` would be catastrophic: `/` and its direct children, `$HOME`, the
/// working directory and its parents, and the parents of the session's roots.
///
/// ```
/// use std::path::{Path, PathBuf};
/// use toolgate_shell::{Context, is_critical_path};
/// let ctx = Context::new("/home/u/proj").with_home("/home/u");
/// assert!(is_critical_path(Path::new("/"), &ctx));
/// assert!(is_critical_path(Path::new("/etc"), &ctx));
/// assert!(is_critical_path(Path::new("/home/u"), &ctx));
/// assert!(is_critical_path(Path::new("/home/u/proj"), &ctx));
/// assert!(!is_critical_path(Path::new("/home/u/proj/target"), &ctx));
/// assert!(!is_critical_path(Path::new("/etc/nginx"), &ctx));
/// ```
pub fn is_critical_path(path: &Path, ctx: &Context) -> bool {
    let p = normalize(path, &ctx.cwd);
    if p.parent().is_none_or(|parent| parent == Path::new("/")) {
        return true;
    }
    if ctx
        .home
        .as_deref()
        .is_some_and(|h| normalize(h, &ctx.cwd) == p)
    {
        return true;
    }
    if normalize(&ctx.cwd, Path::new("/")).starts_with(&p) {
        return true;
    }
    ctx.roots.iter().any(|r| {
        let r = normalize(r, &ctx.cwd);
        r != p && r.starts_with(&p)
    })
}

/// Whether `path` lies inside one of `roots` (lexically).
pub(crate) fn inside_roots(path: &Path, roots: &[PathBuf], cwd: &Path) -> bool {
    roots.iter().any(|r| path.starts_with(normalize(r, cwd)))
}

/// Whether `path` is a machine-wide system location (`/etc`, `/usr`, …, `/dev/sd*`).
pub(crate) fn is_system_path(path: &Path) -> bool {
    if path.starts_with("/var/tmp") || path.starts_with("/private/var/folders") {
        return false;
    }
    if path.starts_with("/dev") {
        return !HARMLESS_DEVICES.iter().any(|d| path == Path::new(d))
            && !path.starts_with("/dev/fd")
            && !path.starts_with("/dev/shm");
    }
    SYSTEM_PREFIXES.iter().any(|p| path.starts_with(p))
}

/// Whether `path` is a harmless device such as `/dev/null`.
pub(crate) fn is_harmless_device(path: &Path) -> bool {
    HARMLESS_DEVICES.iter().any(|d| path == Path::new(d)) || path.starts_with("/dev/fd")
}

/// Whether `path` is a block or disk device whose overwrite destroys a file system.
pub(crate) fn is_disk_device(path: &Path) -> bool {
    let Ok(rest) = path.strip_prefix("/dev") else {
        return false;
    };
    let name = rest.to_string_lossy();
    const DISKS: &[&str] = &[
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "mapper/", "md", "dm-", "loop",
        "sr", "nbd", "zd", "ram",
    ];
    DISKS.iter().any(|d| name.starts_with(d))
}

/// Whether `path` is strictly inside a temporary directory (`/tmp/x`, `/var/tmp/x`, `$TMPDIR/x`).
pub(crate) fn is_temp_path(path: &Path, tmpdir: Option<&Path>) -> bool {
    let strictly = |base: &Path| path != base && path.starts_with(base);
    strictly(Path::new("/tmp"))
        || strictly(Path::new("/var/tmp"))
        || strictly(Path::new("/private/tmp"))
        || tmpdir.is_some_and(|t| t != Path::new("/") && strictly(t))
}

/// Lexically absolute and normalised: relative to `cwd`, `.` dropped, `..` folded (never above
/// `/`), trailing slashes gone.
pub fn normalize(path: &Path, cwd: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Whether the shell runs this file's text later: a shell startup file (`.bashrc`,
/// `.profile`, `.envrc`, …) or a git hook (`.git/hooks/NAME`, `.husky/NAME`).
pub(crate) fn runs_later_as_shell(path: &Path) -> bool {
    let startup = PROTECTED_PATHS
        .iter()
        .filter(|p| p.kind == "shell startup")
        .any(|p| p.matches(path));
    let parent = path.parent().map(|p| p.to_string_lossy().into_owned());
    startup || parent.is_some_and(|p| p.ends_with("/.git/hooks") || p.ends_with("/.husky"))
}

/// Resolves a shell word to a path: `~`, `~/x`, `$HOME/x` against `home`; relative paths
/// against `cwd`. `None` when the word depends on something unknown.
pub(crate) fn resolve_word(word: &str, cwd: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    if word.is_empty() {
        return None;
    }
    let home_rest = if word == "~" || word == "$HOME" || word == "${HOME}" {
        Some("")
    } else {
        word.strip_prefix("~/")
            .or_else(|| word.strip_prefix("$HOME/"))
            .or_else(|| word.strip_prefix("${HOME}/"))
    };
    if let Some(rest) = home_rest {
        let h = home?;
        return Some(normalize(&h.join(rest), h));
    }
    if word.starts_with('~') || word.contains('$') {
        return None;
    }
    let p = Path::new(word);
    if p.is_absolute() {
        return Some(normalize(p, Path::new("/")));
    }
    cwd.map(|c| normalize(p, c))
}

/// Resolves a word whose only unknown is `$HOME`, `$PWD` or `$TMPDIR` at its start
/// (`$HOME/x`, `${PWD}`); `$TMPDIR` stands for `/tmp`.
pub(crate) fn resolve_env_word(
    word: &str,
    cwd: Option<&Path>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    for (var, base) in [
        ("HOME", home.map(Path::to_path_buf)),
        ("PWD", cwd.map(Path::to_path_buf)),
        ("TMPDIR", Some(PathBuf::from("/tmp"))),
    ] {
        for pre in [format!("${var}"), format!("${{{var}}}")] {
            if let Some(rest) = word.strip_prefix(&pre) {
                if !(rest.is_empty() || rest.starts_with('/')) || rest.contains(['$', '`']) {
                    return None;
                }
                let base = base?;
                return Some(normalize(&base.join(rest.trim_start_matches('/')), &base));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_lists_walk_their_examples() {
        for list in [PROTECTED_PATHS, SECRET_PATHS] {
            for p in list {
                for m in p.matches {
                    assert!(p.matches(Path::new(m)), "{} should match {m}", p.pattern);
                }
                for m in p.not_matches {
                    assert!(
                        !p.matches(Path::new(m)),
                        "{} should not match {m}",
                        p.pattern
                    );
                }
            }
        }
    }

    #[test]
    fn personal_paths_walk_their_examples() {
        let home = Path::new("/home/u");
        for p in PERSONAL_PATHS {
            for m in p.matches {
                assert!(
                    personal_kind(Path::new(m), Some(home)).is_some(),
                    "{} should match {m}",
                    p.pattern
                );
            }
            for m in p.not_matches {
                assert!(
                    personal_kind(Path::new(m), Some(home)).is_none(),
                    "{} should not match {m}",
                    p.pattern
                );
            }
        }
    }

    #[test]
    fn normalises_lexically() {
        let cwd = Path::new("/w/a");
        assert_eq!(
            normalize(Path::new("../b/./c/"), cwd),
            PathBuf::from("/w/b/c")
        );
        assert_eq!(normalize(Path::new("/../../x"), cwd), PathBuf::from("/x"));
        assert_eq!(normalize(Path::new("."), cwd), PathBuf::from("/w/a"));
    }

    #[test]
    fn devices_and_temp() {
        assert!(is_disk_device(Path::new("/dev/sda1")));
        assert!(is_disk_device(Path::new("/dev/nvme0n1")));
        assert!(!is_disk_device(Path::new("/dev/null")));
        assert!(is_temp_path(Path::new("/tmp/x"), None));
        assert!(!is_temp_path(Path::new("/tmp"), None));
        assert!(is_system_path(Path::new("/etc/passwd")));
        assert!(!is_system_path(Path::new("/dev/null")));
        assert!(glob_match("*.pem", "a.pem"));
        assert!(!glob_match("*.pem", "a.pemx"));
    }
}
