//! Read/Edit path specifiers: gitignore-style patterns with Claude Code's anchors.
//!
//! | pattern | anchored at |
//! |---|---|
//! | `//etc/passwd` | the file-system root |
//! | `~/notes/**` | the home directory |
//! | `/src/**` | the settings source (project file → project root, `--settings` file → its directory, user file → its directory, command line → cwd) |
//! | `./src/**`, `src/*.rs` | the starting cwd |
//! | `.env`, `*.key` (one segment, no `/`) | any depth (`**/.env`) |
//!
//! `*` stays inside one path segment, `**` crosses directories. A pattern that names a
//! directory also covers everything beneath it. A single-segment directory pattern
//! (`src/**`) matches only `<cwd>/src` in an allow rule but at any depth in a deny or ask
//! rule (so a deny is never narrower than it reads).

use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobBuilder};

use super::RuleKind;

/// Where relative patterns are anchored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Anchors<'a> {
    /// The settings source's anchor for `/path`.
    pub source: &'a Path,
    /// The starting cwd for `./path` and `path`.
    pub cwd: &'a Path,
    /// The home directory for `~/path`.
    pub home: Option<&'a Path>,
}

/// A compiled path pattern: one or more absolute globs.
#[derive(Debug, Clone)]
pub(crate) struct PathPattern {
    /// The absolute globs; a path matches when it or one of its ancestors matches any.
    pub globs: Vec<Glob>,
}

impl PathPattern {
    /// Compiles `raw` for a rule of `kind`.
    pub fn new(raw: &str, kind: RuleKind, anchors: Anchors<'_>) -> Result<Self, String> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err("an empty path pattern".into());
        }
        let deny_side = kind != RuleKind::Allow;
        let stripped = raw.trim_end_matches('/');
        let stripped = if stripped.is_empty() { "/" } else { stripped };
        let base: String = if let Some(abs) = raw.strip_prefix("//") {
            format!("/{}", abs.trim_end_matches('/'))
        } else if stripped == "~" || stripped.starts_with("~/") {
            match anchors.home {
                Some(h) => join(h, stripped.trim_start_matches('~').trim_start_matches('/')),
                None if deny_side => format!("/**/{}", stripped.trim_start_matches("~/")),
                None => return Err("`~` cannot be resolved: the home directory is unknown".into()),
            }
        } else if let Some(rel) = stripped.strip_prefix('/') {
            join(anchors.source, rel)
        } else if let Some(rel) = stripped.strip_prefix("./") {
            join(anchors.cwd, rel)
        } else if stripped == "*" || stripped == "**" {
            "/**".to_owned()
        } else if !stripped.contains('/') {
            if deny_side {
                format!("/**/{stripped}")
            } else {
                join(anchors.cwd, &format!("**/{stripped}"))
            }
        } else if deny_side
            && let Some(seg) = stripped.strip_suffix("/**")
            && !seg.contains('/')
        {
            format!("/**/{seg}/**")
        } else {
            join(anchors.cwd, stripped)
        };
        let base = normalize_glob(&base);
        let mut globs = Vec::with_capacity(3);
        // The pattern, everything beneath it, and for `dir/**` the directory itself.
        let mut texts = vec![base.clone(), format!("{}/**", base.trim_end_matches('/'))];
        if let Some(dir) = base.strip_suffix("/**")
            && !dir.is_empty()
        {
            texts.push(dir.to_owned());
        }
        for g in texts {
            if globs.iter().any(|x: &Glob| x.glob() == g) {
                continue;
            }
            let glob = GlobBuilder::new(&g)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| format!("invalid glob: {e}"))?;
            globs.push(glob);
        }
        Ok(Self { globs })
    }
}

fn join(base: &Path, rel: &str) -> String {
    let b = base.to_string_lossy();
    let b = b.trim_end_matches('/');
    if rel.is_empty() {
        return if b.is_empty() {
            "/".into()
        } else {
            b.to_owned()
        };
    }
    format!("{b}/{rel}")
}

/// Folds `.` and `..` in a glob string (glob segments are left alone).
fn normalize_glob(g: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in g.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Removes `.` and resolves `..` lexically; `..` at the root stays at the root.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for comp in path.components() {
        match comp {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(c) => out.push(c),
        }
    }
    out
}

/// Makes `raw` absolute against `cwd` (expanding a leading `~`) and normalises it.
pub(crate) fn absolutize(raw: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let p = if raw == "~" || raw.starts_with("~/") {
        match home {
            Some(h) => h.join(raw.trim_start_matches('~').trim_start_matches('/')),
            None => PathBuf::from(raw),
        }
    } else {
        PathBuf::from(raw)
    };
    let joined = if p.is_absolute() { p } else { cwd.join(p) };
    normalize(&joined)
}

#[cfg(test)]
mod tests {
    use super::*;
    use globset::GlobSetBuilder;

    fn m(raw: &str, kind: RuleKind, path: &str) -> bool {
        let a = Anchors {
            source: Path::new("/proj"),
            cwd: Path::new("/proj"),
            home: Some(Path::new("/home/u")),
        };
        let pat = PathPattern::new(raw, kind, a).unwrap();
        let mut b = GlobSetBuilder::new();
        for g in pat.globs {
            b.add(g);
        }
        b.build().unwrap().is_match(path)
    }

    #[test]
    fn anchors() {
        use RuleKind::{Allow, Deny};
        assert!(m("//etc/passwd", Deny, "/etc/passwd"));
        assert!(m("~/.ssh/**", Deny, "/home/u/.ssh/id_rsa"));
        assert!(m("/src/**", Allow, "/proj/src/a/b.rs"));
        assert!(m("./src/*.rs", Allow, "/proj/src/a.rs"));
        assert!(!m("./src/*.rs", Allow, "/proj/src/a/b.rs"));
        assert!(m(".env", Deny, "/proj/a/b/.env"));
        assert!(m(".env", Deny, "/elsewhere/.env"));
        assert!(m(".env", Allow, "/proj/a/.env"));
        assert!(!m(".env", Allow, "/elsewhere/.env"));
        assert!(m("src/**", Deny, "/proj/lib/src/x.rs"));
        assert!(!m("src/**", Allow, "/proj/lib/src/x.rs"));
        assert!(m("src/**", Allow, "/proj/src/x.rs"));
        assert!(m("secrets", Deny, "/proj/secrets/a.txt"));
        assert!(m("build/", Deny, "/proj/x/build/out.o"));
        assert!(m("../shared/**", Allow, "/shared/x"));
        assert!(m("*", Deny, "/any/thing"));
        assert!(m("*.key", Deny, "/proj/k/server.key"));
    }
}
