//! The logic behind `toolgate sandbox status` and `toolgate sandbox run` (the binary's
//! `cmd/sandbox.rs` only maps its arguments onto these).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::SandboxError;
use crate::policy::{NetworkMode, SandboxPolicy};
use crate::probe::{Layer, Probe, disabled_from_env};
use crate::proxy::{DomainRules, Proxy};
use crate::settings::PolicyContext;

/// Options of `toolgate sandbox run`.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// `--settings FILE|JSON`, in order (later ones win for scalars, arrays concatenate).
    pub settings: Vec<String>,
    /// `--workspace DIR` (default: the current directory).
    pub workspace: Option<PathBuf>,
    /// `--add-dir DIR`.
    pub add_dirs: Vec<PathBuf>,
    /// `--network`.
    pub network: Option<NetworkMode>,
    /// `--allow-domain` (implies `--network allowlist`).
    pub allow_domains: Vec<String>,
    /// `--timeout SECS`.
    pub timeout_secs: Option<u64>,
    /// `--disable-layer NAME`.
    pub disable_layers: Vec<String>,
}

/// `toolgate sandbox status` output. Always probes afresh (and refreshes the per-boot
/// cache), so it shows the machine as it is now.
pub fn status(json: bool) -> String {
    let fresh = Probe::detect(&disabled_from_env());
    if json {
        serde_json::to_string_pretty(&fresh).unwrap_or_default()
    } else {
        fresh.render()
    }
}

/// Reads one `--settings` value: inline JSON when it starts with `{`, else a file path.
pub fn load_settings_arg(arg: &str) -> Result<Value, SandboxError> {
    let text = if arg.trim_start().starts_with('{') {
        arg.to_owned()
    } else {
        std::fs::read_to_string(arg).map_err(|e| SandboxError::InvalidSettings {
            key: "--settings".to_owned(),
            reason: format!("cannot read {arg}: {e}"),
        })?
    };
    serde_json::from_str(&text).map_err(|e| SandboxError::InvalidSettings {
        key: "--settings".to_owned(),
        reason: format!("{arg}: {e}"),
    })
}

/// Merges settings objects: objects key by key, arrays concatenated, scalars: last wins.
pub fn merge_settings(values: &[Value]) -> Value {
    fn merge(into: &mut Value, from: &Value) {
        match (into, from) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    match a.get_mut(k) {
                        Some(slot) => merge(slot, v),
                        None => {
                            a.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            (Value::Array(a), Value::Array(b)) => a.extend(b.iter().cloned()),
            (slot, v) => *slot = v.clone(),
        }
    }
    let mut out = Value::Object(Default::default());
    for v in values {
        merge(&mut out, v);
    }
    out
}

/// Builds the policy for `sandbox run` (always enabled: the user asked for the sandbox).
pub fn run_policy(opts: &RunOptions, cwd: &Path) -> Result<SandboxPolicy, SandboxError> {
    let values = opts
        .settings
        .iter()
        .map(|s| load_settings_arg(s))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = merge_settings(&values);
    let mut ctx = PolicyContext::new(opts.workspace.clone().unwrap_or_else(|| cwd.to_path_buf()));
    ctx.additional_dirs = opts.add_dirs.clone();
    let mut policy = SandboxPolicy::from_settings(&merged, &ctx)?;
    policy.enabled = true;
    policy
        .network
        .allowed_domains
        .extend(opts.allow_domains.iter().cloned());
    if !opts.allow_domains.is_empty() {
        policy.network.mode = NetworkMode::Allowlist;
    }
    if let Some(mode) = opts.network {
        policy.network.mode = mode;
    }
    if let Some(secs) = opts.timeout_secs {
        policy.limits.wall_time_ms = Some(secs.saturating_mul(1000));
    }
    for name in &opts.disable_layers {
        let layer = Layer::from_name(name).ok_or_else(|| SandboxError::InvalidSettings {
            key: "--disable-layer".to_owned(),
            reason: format!("unknown layer `{name}`"),
        })?;
        policy.disabled_layers.push(layer);
    }
    Ok(policy)
}

/// `toolgate sandbox run`: runs `argv` with `helper` (normally the current executable).
/// Without a proxy to serve, the process *becomes* the helper (exec) and never returns on
/// success: the command's exit status is the process's. With the allow-list proxy (network
/// `allowlist`), it waits, reports each proxy decision on stderr, and returns the exit code
/// (128+signal when killed).
pub fn run(opts: &RunOptions, helper: &Path, argv: &[OsString]) -> Result<i32, SandboxError> {
    crate::timing::mark("cli-run");
    let cwd = std::env::current_dir()
        .map_err(|e| SandboxError::io("cli", "getcwd", e, "run from an existing directory"))?;
    let cwd = crate::settings::normalize(&cwd);
    let mut policy = run_policy(opts, &cwd)?;
    let mut _proxy_guard = None;
    if policy.network.mode == NetworkMode::Allowlist && policy.network.proxy_socket.is_none() {
        let dir = std::env::temp_dir().join(format!("toolgate-proxy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| {
            SandboxError::io(
                "proxy",
                format!("mkdir {}", dir.display()),
                e,
                "check TMPDIR",
            )
        })?;
        let sock = dir.join("proxy.sock");
        let _ = std::fs::remove_file(&sock);
        let rules = DomainRules::new(
            &policy.network.allowed_domains,
            &policy.network.denied_domains,
        );
        let proxy = Proxy::start(&sock, rules, |d| {
            let verdict = if d.allowed { "allowed" } else { "denied" };
            eprintln!(
                "toolgate-sandbox: proxy {verdict} {} {}:{} ({})",
                d.method, d.host, d.port, d.reason
            );
            true
        })?;
        policy.network.proxy_socket = Some(sock);
        _proxy_guard = Some((proxy, DirGuard(dir)));
    }
    let mut cmd = crate::plan::command(&policy, helper, argv, &cwd)?;
    crate::timing::mark("cli-spawn");
    if _proxy_guard.is_none() {
        // Nothing to keep alive here (no proxy): become the helper instead of waiting for
        // it, which saves a fork and a process exit per run. The helper's exit status (or
        // its death by a signal) is then ours.
        use std::os::unix::process::CommandExt;
        let e = cmd.exec();
        return Err(SandboxError::io(
            "helper",
            format!("exec {}", helper.display()),
            e,
            "check the toolgate binary",
        ));
    }
    let status = cmd.status().map_err(|e| {
        SandboxError::io(
            "helper",
            format!("spawn {}", helper.display()),
            e,
            "check the toolgate binary",
        )
    })?;
    crate::timing::mark("cli-helper-exited");
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

struct DirGuard(PathBuf);

impl Drop for DirGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merges_like_settings_levels() {
        let m = merge_settings(&[
            json!({"sandbox": {"enabled": false, "filesystem": {"denyRead": ["a"]}}}),
            json!({"sandbox": {"enabled": true, "filesystem": {"denyRead": ["b"]}}}),
        ]);
        assert_eq!(
            m,
            json!({"sandbox": {"enabled": true, "filesystem": {"denyRead": ["a", "b"]}}})
        );
    }

    #[test]
    fn run_policy_applies_flags() {
        let opts = RunOptions {
            settings: vec![r#"{"sandbox": {"network": {"mode": "full"}}}"#.into()],
            allow_domains: vec!["pypi.org".into()],
            timeout_secs: Some(2),
            disable_layers: vec!["landlock".into()],
            ..RunOptions::default()
        };
        let p = run_policy(&opts, Path::new("/nonexistent-ws")).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.enabled);
        assert_eq!(p.network.mode, NetworkMode::Allowlist);
        assert_eq!(p.limits.wall_time_ms, Some(2000));
        assert_eq!(p.disabled_layers, vec![Layer::Landlock]);
        let bad = RunOptions {
            disable_layers: vec!["nope".into()],
            ..RunOptions::default()
        };
        assert!(run_policy(&bad, Path::new("/x")).is_err());
        assert!(load_settings_arg("{not json").is_err());
    }
}
