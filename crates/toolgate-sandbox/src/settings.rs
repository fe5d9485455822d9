//! Building a [`SandboxPolicy`] from Claude Code compatible `sandbox` settings and from
//! permission rules (Read/Edit/WebFetch).
//!
//! Settings keys (CC): `enabled`, `failIfUnavailable`, `excludedCommands`,
//! `filesystem.{allowWrite, denyWrite, denyRead, allowRead, disabled}`,
//! `network.{allowedDomains, deniedDomains, httpProxyPort, allowAllUnixSockets}` (and
//! `network.allowUnixSockets`, type-checked but not enforceable per path on Linux: the
//! listed sockets stay refused unless `allowAllUnixSockets`). toolgate extensions:
//! `filesystem.mode` (`off` / `workspace-write` / `read-only`), `network.mode`
//! (`none` / `allowlist` / `full`), `limits.{wallTimeSec, cpuTimeSec, memoryMb (0: no
//! limit; default: half the RAM), processes, fileSizeMb, openFiles, tmpSizeMb}`,
//! `disableLayers`. Other CC keys are accepted and ignored.
//!
//! Paths in `sandbox.filesystem.*`: `/x` absolute, `~/x` home, `./x` or `x` workspace-relative.
//! As on Linux in CC, write entries containing `*`, `?` or `[` are skipped; read entries may
//! use `*`/`?` in their last component.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::SandboxError;
use crate::policy::{
    FsMode, MemoryLimit, NetworkMode, SandboxPolicy, default_home_read_deny, push_unique,
};
use crate::probe::Layer;

/// Where relative paths in settings and rules resolve.
#[derive(Clone, Debug, Default)]
pub struct PolicyContext {
    /// The workspace (project root and default cwd).
    pub workspace: PathBuf,
    /// `--add-dir` / `permissions.additionalDirectories`.
    pub additional_dirs: Vec<PathBuf>,
    /// `$HOME`, for `~/` paths and the default credential denies.
    pub home: Option<PathBuf>,
}

impl PolicyContext {
    /// A context for `workspace` with `$HOME` from the environment.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        PolicyContext {
            workspace: workspace.into(),
            additional_dirs: Vec::new(),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }

    fn resolve(&self, raw: &str) -> PathBuf {
        let p = if let Some(rest) = raw.strip_prefix("~/") {
            self.home.clone().unwrap_or_default().join(rest)
        } else if raw == "~" {
            self.home.clone().unwrap_or_default()
        } else if raw.starts_with('/') {
            PathBuf::from(raw)
        } else {
            self.workspace.join(raw.strip_prefix("./").unwrap_or(raw))
        };
        normalize(&p)
    }
}

/// Lexically normalizes `.` and `..`, then canonicalizes the longest existing prefix (so
/// symlinked directories resolve to what the kernel will see).
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return out,
        }
    }
    let mut canon = std::fs::canonicalize(&existing).unwrap_or(existing);
    for name in rest.into_iter().rev() {
        canon.push(name);
    }
    canon
}

fn bad(key: &str, reason: impl Into<String>) -> SandboxError {
    SandboxError::InvalidSettings {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

fn get_bool(v: &Value, key: &str, path: &str) -> Result<Option<bool>, SandboxError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(bad(path, "expected true or false")),
    }
}

fn get_strings(v: &Value, key: &str, path: &str) -> Result<Vec<String>, SandboxError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| bad(path, "expected an array of strings"))
            })
            .collect(),
        Some(_) => Err(bad(path, "expected an array of strings")),
    }
}

fn get_u64(v: &Value, key: &str, path: &str) -> Result<Option<u64>, SandboxError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| bad(path, "expected a non-negative integer")),
    }
}

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

const MIB: u64 = 1024 * 1024;

impl SandboxPolicy {
    /// Builds a policy from the `sandbox` settings object (or a whole settings object that
    /// contains one), for the workspace and directories in `ctx`.
    pub fn from_settings(
        settings: &Value,
        ctx: &PolicyContext,
    ) -> Result<SandboxPolicy, SandboxError> {
        let empty = Value::Object(Default::default());
        let s = settings.get("sandbox").unwrap_or(settings);
        if !s.is_object() {
            return Err(bad("sandbox", "expected an object"));
        }
        let ws = normalize(&ctx.workspace);
        let mut policy = SandboxPolicy::workspace_write(&ws, ctx.home.as_deref());
        policy.enabled = get_bool(s, "enabled", "sandbox.enabled")?.unwrap_or(false);
        policy.fail_if_unavailable =
            get_bool(s, "failIfUnavailable", "sandbox.failIfUnavailable")?.unwrap_or(false);
        policy.excluded_commands = get_strings(s, "excludedCommands", "sandbox.excludedCommands")?;
        policy.allow_unsandboxed_commands = get_bool(
            s,
            "allowUnsandboxedCommands",
            "sandbox.allowUnsandboxedCommands",
        )?
        .unwrap_or(true);
        for dir in &ctx.additional_dirs {
            let d = normalize(dir);
            push_unique(&mut policy.filesystem.writable_roots, d.clone());
            push_unique(&mut policy.filesystem.project_roots, d.clone());
            policy.add_root_read_denies(&d);
        }
        let fs = s.get("filesystem").unwrap_or(&empty);
        if get_bool(fs, "disabled", "sandbox.filesystem.disabled")? == Some(true) {
            policy.filesystem.mode = FsMode::Off;
        }
        if let Some(mode) = fs.get("mode") {
            policy.filesystem.mode = serde_json::from_value(mode.clone()).map_err(|_| {
                bad(
                    "sandbox.filesystem.mode",
                    "expected off, workspace-write or read-only",
                )
            })?;
        }
        for raw in get_strings(fs, "allowWrite", "sandbox.filesystem.allowWrite")? {
            if !has_glob(&raw) {
                push_unique(&mut policy.filesystem.writable_roots, ctx.resolve(&raw));
            }
        }
        for raw in get_strings(fs, "denyWrite", "sandbox.filesystem.denyWrite")? {
            if !has_glob(&raw) {
                push_unique(&mut policy.filesystem.write_denied, ctx.resolve(&raw));
            }
        }
        for raw in get_strings(fs, "denyRead", "sandbox.filesystem.denyRead")? {
            push_unique(
                &mut policy.filesystem.read_denied,
                ctx.resolve(raw.trim_end_matches("/**")),
            );
        }
        for raw in get_strings(fs, "allowRead", "sandbox.filesystem.allowRead")? {
            push_unique(
                &mut policy.filesystem.read_allowed,
                ctx.resolve(raw.trim_end_matches("/**")),
            );
        }
        if let Some(n) = get_u64(fs, "maxWalkEntries", "sandbox.filesystem.maxWalkEntries")? {
            policy.filesystem.max_walk_entries = usize::try_from(n).unwrap_or(usize::MAX);
        }
        let net = s.get("network").unwrap_or(&empty);
        policy.network.allowed_domains =
            get_strings(net, "allowedDomains", "sandbox.network.allowedDomains")?;
        policy.network.denied_domains =
            get_strings(net, "deniedDomains", "sandbox.network.deniedDomains")?;
        if !policy.network.allowed_domains.is_empty() {
            policy.network.mode = NetworkMode::Allowlist;
        }
        if let Some(mode) = net.get("mode") {
            policy.network.mode = serde_json::from_value(mode.clone())
                .map_err(|_| bad("sandbox.network.mode", "expected none, allowlist or full"))?;
        }
        policy.network.allow_all_unix_sockets = get_bool(
            net,
            "allowAllUnixSockets",
            "sandbox.network.allowAllUnixSockets",
        )?
        .unwrap_or(false);
        // Per-socket exceptions cannot be enforced on Linux (seccomp does not see the path
        // of a `connect`; Landlock can from ABI 9 only): the listed sockets stay refused,
        // as in Claude Code on Linux. The key is still checked for its type.
        get_strings(net, "allowUnixSockets", "sandbox.network.allowUnixSockets")?;
        if let Some(port) = get_u64(net, "httpProxyPort", "sandbox.network.httpProxyPort")? {
            policy.network.proxy_port = u16::try_from(port)
                .map_err(|_| bad("sandbox.network.httpProxyPort", "expected a port number"))?;
        }
        let lim = s.get("limits").unwrap_or(&empty);
        let l = &mut policy.limits;
        if let Some(v) = get_u64(lim, "wallTimeSec", "sandbox.limits.wallTimeSec")? {
            l.wall_time_ms = Some(v.saturating_mul(1000));
        }
        l.cpu_time_secs =
            get_u64(lim, "cpuTimeSec", "sandbox.limits.cpuTimeSec")?.or(l.cpu_time_secs);
        match get_u64(lim, "memoryMb", "sandbox.limits.memoryMb")? {
            Some(0) => l.memory = MemoryLimit::Unlimited,
            Some(v) => l.memory = MemoryLimit::Bytes(v.saturating_mul(MIB)),
            None => {}
        }
        l.processes = get_u64(lim, "processes", "sandbox.limits.processes")?.or(l.processes);
        if let Some(v) = get_u64(lim, "fileSizeMb", "sandbox.limits.fileSizeMb")? {
            l.file_size_bytes = Some(v.saturating_mul(MIB));
        }
        l.open_files = get_u64(lim, "openFiles", "sandbox.limits.openFiles")?.or(l.open_files);
        if let Some(v) = get_u64(lim, "tmpSizeMb", "sandbox.limits.tmpSizeMb")? {
            l.tmp_size_bytes = v.saturating_mul(MIB);
        }
        for name in get_strings(s, "disableLayers", "sandbox.disableLayers")? {
            let layer = Layer::from_name(&name)
                .ok_or_else(|| bad("sandbox.disableLayers", format!("unknown layer `{name}`")))?;
            policy.disabled_layers.push(layer);
        }
        Ok(policy)
    }

    /// Feeds permission rules into the policy: `Edit(…)`/`Write(…)` allow → writable,
    /// `Edit`/`Write` deny → write carve-out, `Read` deny → unreadable,
    /// `WebFetch(domain:…)` allow/deny → domain lists. Other rules are ignored.
    ///
    /// Rule paths: `//x` absolute, `~/x` home, `/x` project-relative, `./x` or `x`
    /// workspace-relative; a trailing `/**` means the directory.
    pub fn add_rules(&mut self, allow: &[String], deny: &[String], ctx: &PolicyContext) {
        for (rules, allowed) in [(allow, true), (deny, false)] {
            for rule in rules {
                let Some((tool, spec)) = rule.strip_suffix(')').and_then(|r| r.split_once('('))
                else {
                    continue;
                };
                let path = || {
                    let raw = spec.trim_end_matches("/**");
                    let raw = match raw.strip_prefix("//") {
                        Some(abs) => format!("/{abs}"),
                        None => raw
                            .strip_prefix('/')
                            .map(str::to_owned)
                            .unwrap_or_else(|| raw.to_owned()),
                    };
                    ctx.resolve(&raw)
                };
                match (tool, allowed) {
                    ("Edit" | "Write", true) if !has_glob(spec.trim_end_matches("/**")) => {
                        push_unique(&mut self.filesystem.writable_roots, path());
                    }
                    ("Edit" | "Write", false) if !has_glob(spec.trim_end_matches("/**")) => {
                        push_unique(&mut self.filesystem.write_denied, path());
                    }
                    ("Read", false) => push_unique(&mut self.filesystem.read_denied, path()),
                    ("WebFetch", ok) => {
                        if let Some(domain) = spec.strip_prefix("domain:") {
                            let list = if ok {
                                &mut self.network.allowed_domains
                            } else {
                                &mut self.network.denied_domains
                            };
                            if !list.iter().any(|d| d == domain) {
                                list.push(domain.to_owned());
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// The default `$HOME` credential paths this policy hides (for docs and status).
    pub fn default_home_denies() -> Vec<&'static str> {
        default_home_read_deny()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> PolicyContext {
        PolicyContext {
            workspace: "/nonexistent-ws".into(),
            additional_dirs: vec!["/nonexistent-extra".into()],
            home: Some("/nonexistent-home".into()),
        }
    }

    #[test]
    fn builds_from_cc_settings() {
        let s = json!({"sandbox": {
            "enabled": true, "failIfUnavailable": true,
            "filesystem": {"allowWrite": ["~/.cache", "/opt/x", "./gen/*"], "denyRead": ["~/secrets"], "denyWrite": ["./locked"]},
            "network": {"allowedDomains": ["pypi.org"]},
            "excludedCommands": ["docker *"],
            "limits": {"memoryMb": 512, "wallTimeSec": 3},
            "autoAllowBashIfSandboxed": true
        }});
        let p = SandboxPolicy::from_settings(&s, &ctx()).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.enabled && p.fail_if_unavailable);
        let w = &p.filesystem.writable_roots;
        assert_eq!(w[0], PathBuf::from("/nonexistent-ws"));
        assert!(w.contains(&PathBuf::from("/nonexistent-home/.cache")));
        assert!(w.contains(&PathBuf::from("/opt/x")) || w.iter().any(|p| p.ends_with("opt/x")));
        assert!(!w.iter().any(|p| p.to_string_lossy().contains('*')));
        assert!(w.contains(&PathBuf::from("/nonexistent-extra")));
        assert!(
            p.filesystem
                .read_denied
                .contains(&PathBuf::from("/nonexistent-home/secrets"))
        );
        assert!(
            p.filesystem
                .read_denied
                .contains(&PathBuf::from("/nonexistent-home/.ssh"))
        );
        assert!(
            p.filesystem
                .write_denied
                .contains(&PathBuf::from("/nonexistent-ws/locked"))
        );
        assert_eq!(p.network.mode, NetworkMode::Allowlist);
        assert_eq!(p.limits.memory, MemoryLimit::Bytes(512 * MIB));
        assert_eq!(p.limits.wall_time_ms, Some(3000));
    }

    #[test]
    fn rejects_bad_types_with_key() {
        let err = SandboxPolicy::from_settings(&json!({"enabled": "yes"}), &ctx());
        assert!(
            matches!(err, Err(SandboxError::InvalidSettings { ref key, .. }) if key == "sandbox.enabled")
        );
        let err = SandboxPolicy::from_settings(&json!({"network": {"mode": "some"}}), &ctx());
        assert!(err.is_err());
        let err = SandboxPolicy::from_settings(
            &json!({"network": {"allowUnixSockets": "/var/run/docker.sock"}}),
            &ctx(),
        );
        assert!(
            matches!(err, Err(SandboxError::InvalidSettings { ref key, .. }) if key == "sandbox.network.allowUnixSockets")
        );
    }

    /// Unix sockets are refused unless `allowAllUnixSockets`; a per-path list cannot lift
    /// the block on Linux, so it leaves it in place.
    #[test]
    fn unix_sockets_are_refused_unless_all_are_allowed() {
        let build = |net: serde_json::Value| {
            SandboxPolicy::from_settings(&json!({ "network": net }), &ctx())
                .unwrap_or_else(|e| panic!("{e}"))
        };
        assert!(!build(json!({})).network.allow_all_unix_sockets);
        let listed = build(json!({"allowUnixSockets": ["/var/run/docker.sock"]}));
        assert!(!listed.network.allow_all_unix_sockets);
        assert!(
            build(json!({"allowAllUnixSockets": true}))
                .network
                .allow_all_unix_sockets
        );
    }

    #[test]
    fn rules_feed_the_policy() {
        let mut p =
            SandboxPolicy::from_settings(&json!({}), &ctx()).unwrap_or_else(|e| panic!("{e}"));
        p.add_rules(
            &[
                "Edit(//tmp/out/**)".into(),
                "WebFetch(domain:crates.io)".into(),
            ],
            &[
                "Read(./.secret)".into(),
                "Edit(/config)".into(),
                "WebFetch(domain:evil.test)".into(),
            ],
            &ctx(),
        );
        assert!(
            p.filesystem
                .writable_roots
                .iter()
                .any(|w| w.ends_with("tmp/out"))
        );
        assert!(
            p.filesystem
                .read_denied
                .contains(&PathBuf::from("/nonexistent-ws/.secret"))
        );
        assert!(
            p.filesystem
                .write_denied
                .contains(&PathBuf::from("/nonexistent-ws/config"))
        );
        assert_eq!(p.network.allowed_domains, ["crates.io"]);
        assert_eq!(p.network.denied_domains, ["evil.test"]);
    }
}
