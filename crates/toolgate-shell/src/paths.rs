//! Path facts without I/O: lexical normalisation, protected paths, critical paths, secrets.
//!
//! Nothing here touches the file system: paths are made absolute against the tracked working
//! directory and `.`/`..` are folded lexically. Symlinks are the sandbox's business.

use std::path::{Component, Path, PathBuf};

use toolgate_protocol::paths::Classes;

use crate::Context;

/// What the path-class table (`toolgate_protocol::paths`, the one copy every layer reads)
/// says of `path` in the analysed session: judged below the deepest root or home containing it.
pub(crate) fn classes(path: &Path, ctx: &Context) -> Classes {
    let roots: Vec<PathBuf> = ctx.roots.iter().map(|r| normalize(r, &ctx.cwd)).collect();
    toolgate_protocol::paths::classify(path, &roots, ctx.home.as_deref())
}

/// The kind of credentials `path` is, per the path-class table (`ssh key`, `dotenv`).
pub(crate) fn secret_kind(path: &Path, ctx: &Context) -> Option<&'static str> {
    classes(path, ctx).secret.map(|e| e.kind)
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
    let none: [&Path; 0] = [];
    let startup = toolgate_protocol::paths::PATH_CLASSES
        .iter()
        .filter(|p| p.kind == "shell startup")
        .any(|p| p.matches(path, &none, None));
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
    fn the_analyzer_reads_the_path_class_table() {
        // Every example of the one table, classified through the analyzer's context.
        let ctx = Context::new(toolgate_protocol::paths::EXAMPLE_ROOT)
            .with_home(toolgate_protocol::paths::EXAMPLE_HOME);
        for e in toolgate_protocol::paths::PATH_CLASSES {
            for m in e.matches {
                assert!(classes(Path::new(m), &ctx).has(e.class), "{m}");
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
    }
}
