//! The risk floor: what no allow rule, mode or hook can approve.
//!
//! - **Hard floor** (denied in every mode; only managed settings can turn it into an ask):
//!   a finding of the shell analyzer's catastrophic class, and deletion of a critical path
//!   (`/` and its direct children, the home directory, a root or cwd and every parent of
//!   one, and a glob directly under any of those).
//! - **Soft floor** (never auto-approved outside `bypassPermissions`): writes and deletes of
//!   protected paths (`.git`, shell rc files, `.toolgate`, …): the protected class of the
//!   one path-class table, `toolgate_protocol::paths`, which the engine applies itself
//!   (`PathEntry::protected`) so a tool that forgets to report it cannot open the door.

use std::path::{Path, PathBuf};

use toolgate_protocol::Risk;

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

/// Whether a deletion below a directory is bounded to files with certain names
/// (`find . -name '*.o' -delete`), so the directory itself does not go. A glob that names
/// nothing once its `*`, `?` and bracket expressions are set aside (`*`, `[!.]*`) could
/// match every file and bounds nothing.
pub fn names_only(globs: &[String]) -> bool {
    let names_something = |g: &String| {
        let mut in_bracket = false;
        g.chars().any(|c| match c {
            '[' if !in_bracket => {
                in_bracket = true;
                false
            }
            ']' if in_bracket => {
                in_bracket = false;
                false
            }
            _ if in_bracket => false,
            '*' | '?' => false,
            _ => true,
        })
    };
    !globs.is_empty() && globs.iter().all(names_something)
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
    fn only_globs_that_name_something_bound_a_deletion() {
        let g = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(names_only(&g(&["*.o"])));
        assert!(names_only(&g(&["*.o", "core"])));
        for everything in [
            &[][..],
            &["*"],
            &["?*"],
            &["[!.]*"],
            &["[a-z]*"],
            &["*.o", "*"],
        ] {
            assert!(!names_only(&g(everything)), "{everything:?}");
        }
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
