//! The logic behind `toolgate sandbox status` and `toolgate sandbox run`, shared by the
//! `toolgate` binary (`cmd/sandbox.rs`) and the small stand-alone `toolgate-sandbox-helper
//! run`, which starts ≈1 ms faster than the large `toolgate` binary.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use crate::error::SandboxError;
use crate::policy::{NetworkMode, SandboxPolicy};
use crate::probe::{Layer, Probe, disabled_from_env};
use crate::proxy::{DomainRules, Proxy};
use crate::settings::PolicyContext;

/// Network mode flag values.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum NetworkArg {
    /// Empty network namespace, loopback up.
    None,
    /// Only the listed domains, through toolgate's proxy.
    Allowlist,
    /// The host network.
    Full,
}

/// Command-line arguments of `toolgate sandbox run` (and `toolgate-sandbox-helper run`).
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Settings file or inline JSON (repeatable; Claude Code `sandbox` keys).
    #[arg(long = "settings", value_name = "FILE|JSON")]
    settings: Vec<String>,
    /// Workspace (writable root); default: the current directory.
    #[arg(short = 'w', long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Additional writable directory (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    add_dir: Vec<PathBuf>,
    /// Network mode (default from settings: none, or allowlist when domains are listed).
    #[arg(long, value_enum)]
    network: Option<NetworkArg>,
    /// Allow a domain through the proxy (repeatable; implies --network allowlist).
    #[arg(long = "allow-domain", value_name = "DOMAIN")]
    allow_domain: Vec<String>,
    /// Wall-clock limit in seconds; the whole sandbox is killed after it (exit 124).
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Treat a layer as unavailable (testing; see `sandbox status`).
    #[arg(long = "disable-layer", value_name = "LAYER")]
    disable_layer: Vec<String>,
    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    command: Vec<OsString>,
}

// `run` parsed on its own, for `parse_run` (its doc comment is the `--help` text).
/// Run a command in toolgate's sandbox.
#[derive(Debug, clap::Parser)]
#[command(name = "toolgate sandbox run")]
struct RunOnly {
    #[command(flatten)]
    args: RunArgs,
    /// `toolgate`'s global `-v` (the sandbox does not log).
    #[arg(short, long, action = clap::ArgAction::Count, hide = true)]
    verbose: u8,
}

/// Parses `[EXE, ARGS…]` as `run`'s arguments only (no other subcommand is built).
pub fn parse_run(argv: impl IntoIterator<Item = OsString>) -> Result<RunArgs, clap::Error> {
    <RunOnly as clap::Parser>::try_parse_from(argv).map(|r| r.args)
}

/// Runs `sandbox run` with parsed arguments; `main_exe` locates the helper for the paths
/// that need one (allow-list proxy, or a multi-threaded caller). Prints errors as
/// `toolgate sandbox: …` and returns the command's exit code (128+signal when killed,
/// [`crate::EXIT_SETUP_FAILED`] when the sandbox could not be set up).
pub fn run_main(args: RunArgs, main_exe: std::io::Result<PathBuf>) -> ExitCode {
    let RunArgs {
        settings,
        workspace,
        add_dir,
        network,
        allow_domain,
        timeout,
        disable_layer,
        command,
    } = args;
    let opts = RunOptions {
        settings,
        workspace,
        add_dirs: add_dir,
        network: network.map(|n| match n {
            NetworkArg::None => NetworkMode::None,
            NetworkArg::Allowlist => NetworkMode::Allowlist,
            NetworkArg::Full => NetworkMode::Full,
        }),
        allow_domains: allow_domain,
        timeout_secs: timeout,
        disable_layers: disable_layer,
    };
    let helper = match main_exe {
        Ok(p) => crate::plan::helper_exe(&p),
        Err(e) => {
            eprintln!("toolgate sandbox: cannot locate the toolgate binary: {e}");
            return ExitCode::from(crate::EXIT_SETUP_FAILED);
        }
    };
    match run(&opts, &helper, &command) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(255)),
        Err(e) => {
            eprintln!("toolgate sandbox: {e}");
            ExitCode::from(crate::EXIT_SETUP_FAILED)
        }
    }
}

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
    if let Some(dir) = &opts.workspace
        && !dir.is_dir()
    {
        // Name the workspace: left alone, the failure surfaces later as a mount of the
        // caller's directory, which blames the wrong path.
        let reason = if dir.exists() {
            "--workspace is not a directory"
        } else {
            "--workspace does not exist; check the path"
        };
        return Err(SandboxError::InvalidPath {
            path: dir.clone(),
            reason: reason.to_owned(),
        });
    }
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

/// `toolgate sandbox run`: runs `argv` in the sandbox. Without a proxy to serve, the calling
/// process plays the helper's part itself when it is single-threaded (the normal case for
/// the CLI), else it *becomes* `helper` (exec) and never returns on success: the command's
/// exit status is the process's. With the allow-list proxy (network
/// `allowlist`), it waits, reports each proxy decision on stderr, and returns the exit code
/// (128+signal when killed).
pub fn run(opts: &RunOptions, helper: &Path, argv: &[OsString]) -> Result<i32, SandboxError> {
    crate::timing::mark("cli-run");
    let cwd = std::env::current_dir()
        .map_err(|e| SandboxError::io("cli", "getcwd", e, "run from an existing directory"))?;
    let cwd = crate::settings::normalize(&cwd);
    let mut policy = run_policy(opts, &cwd)?;
    crate::timing::mark("cli-policy");
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
            let verdict = d.verdict();
            eprintln!(
                "toolgate-sandbox: proxy {verdict} {} {}:{} ({})",
                d.method, d.host, d.port, d.reason
            );
            true
        })?;
        policy.network.proxy_socket = Some(sock);
        _proxy_guard = Some((proxy, DirGuard(dir)));
    }
    if _proxy_guard.is_none() && crate::sys::single_threaded() {
        // Nothing to serve while the command runs (no proxy) and no thread that a fork could
        // catch holding a lock: this process plays the helper's part itself, which saves
        // the helper's `execve` and start-up (≈1 ms of a run).
        let probe = crate::probe::probe();
        crate::timing::mark("cli-probed");
        let spec = crate::plan::HelperSpec::new(&policy, probe, &cwd)?;
        crate::timing::mark("cli-planned");
        let env = policy
            .filtered_env(std::env::vars_os())
            .into_iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect();
        crate::timing::mark("cli-in-process");
        return crate::helper::run_in_process(spec, cwd, argv.to_vec(), env).map(i32::from);
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
