//! Landlock: filesystem allow-lists, TCP deny (no network namespace), signal and abstract
//! socket scopes, and (ABI 9, where the kernel has it) no pathname unix socket reachable.
//!
//! Tier A (mounts do the fine work): read everything, write the writable roots, `/tmp`, `/dev`.
//! Tier B (no mounts): "everything except" expressed as allow-lists by enumerating the siblings
//! along the path to each denied entry, for reads (credentials) and writes (carve-outs).

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use crate::error::SandboxError;

/// The ABI the ruleset is written against (best effort below it).
const PINNED_ABI: ABI = ABI::V6;

/// Most rules an "everything except" expansion may produce.
const MAX_RULES: usize = 4096;

/// What Landlock should allow.
pub(crate) struct LandlockSpec {
    /// Read-only hierarchies (or files).
    pub read: Vec<PathBuf>,
    /// Read-write hierarchies (or files).
    pub write: Vec<PathBuf>,
    /// Deny all TCP bind/connect (network isolation without a network namespace).
    pub deny_tcp: bool,
    /// Refuse `connect(2)`/`sendmsg(2)` to every pathname unix socket (ABI 9,
    /// `LANDLOCK_ACCESS_FS_RESOLVE_UNIX`; dropped on older kernels, best effort): the one
    /// layer that covers a host socket wherever its file lies, however the command got its
    /// socket. Set unless `allowAllUnixSockets`.
    pub deny_unix_paths: bool,
}

/// Builds the allow-lists. `tier_b` switches to the enumerating form for reads. Writable
/// roots are granted whole (Landlock has no read-only holes; write rights include read), so
/// carve-outs and read denies *inside* writable roots need tier A's mounts.
pub(crate) fn spec(
    tier_b: bool,
    writable: &[PathBuf],
    read_denied: &[PathBuf],
    deny_tcp: bool,
    deny_unix_paths: bool,
) -> Result<LandlockSpec, SandboxError> {
    let mut write: Vec<PathBuf> = vec!["/dev".into()];
    write.extend(writable.iter().cloned());
    if !tier_b {
        write.push("/tmp".into());
        return Ok(LandlockSpec {
            read: vec!["/".into()],
            write,
            deny_tcp,
            deny_unix_paths,
        });
    }
    let mut read = Vec::new();
    allow_except(Path::new("/"), read_denied, &mut read)?;
    Ok(LandlockSpec {
        read,
        write,
        deny_tcp,
        deny_unix_paths,
    })
}

/// Pushes paths covering `root` minus every `excluded` subtree.
fn allow_except(
    root: &Path,
    excluded: &[PathBuf],
    out: &mut Vec<PathBuf>,
) -> Result<(), SandboxError> {
    if excluded.iter().any(|e| e == root) {
        return Ok(());
    }
    if !excluded.iter().any(|e| e.starts_with(root)) {
        out.push(root.to_path_buf());
        return check_len(out);
    }
    let entries = std::fs::read_dir(root).map_err(|e| {
        SandboxError::io(
            "landlock",
            format!("read_dir {}", root.display()),
            e,
            "check the path",
        )
    })?;
    for entry in entries.flatten() {
        allow_except(&entry.path(), excluded, out)?;
    }
    check_len(out)
}

fn check_len(out: &[PathBuf]) -> Result<(), SandboxError> {
    if out.len() > MAX_RULES {
        return Err(SandboxError::Landlock(format!(
            "more than {MAX_RULES} rules needed to express the denies; deny fewer, larger paths"
        )));
    }
    Ok(())
}

fn err(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(e.to_string())
}

/// Applies the ruleset to the calling process (no_new_privs must be set).
pub(crate) fn apply(spec: &LandlockSpec) -> Result<(), SandboxError> {
    let abi = PINNED_ABI;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(err)?;
    if spec.deny_tcp {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(err)?;
    }
    if spec.deny_unix_paths {
        // Handled and granted by no rule below (the rules' rights are the pinned ABI's,
        // which predates it): no pathname socket can be reached.
        ruleset = ruleset.handle_access(AccessFs::ResolveUnix).map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    let read: BitFlags<AccessFs> = AccessFs::from_read(abi);
    for (paths, access) in [(&spec.read, read), (&spec.write, AccessFs::from_all(abi))] {
        for path in paths {
            let Ok(fd) = PathFd::new(path) else {
                continue; // vanished or unreadable: nothing to allow
            };
            let access = if is_dir(path) {
                access
            } else {
                access & AccessFs::from_file(abi)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(err)?;
        }
    }
    let status = created.restrict_self().map_err(err)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(SandboxError::Landlock(
            "ruleset not enforced by this kernel although the probe found Landlock".to_owned(),
        ));
    }
    Ok(())
}

fn is_dir(path: &Path) -> bool {
    std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_except_skips_denied_subtree() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        for d in ["a/secret", "a/open", "b"] {
            std::fs::create_dir_all(root.join(d)).unwrap_or_else(|e| panic!("{e}"));
        }
        let mut out = Vec::new();
        allow_except(root, &[root.join("a/secret")], &mut out).unwrap_or_else(|e| panic!("{e}"));
        out.sort();
        assert_eq!(out, vec![root.join("a/open"), root.join("b")]);
    }
}
