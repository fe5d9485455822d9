//! `toolgate config`: the effective settings, each rule with its source. Also holds
//! [`PolicyArgs`], the settings flags shared by `check`, `config`, `trust`, `exec` and `call`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use toolgate_policy::settings::{self, LoadOptions, Settings};
use toolgate_policy::{Engine, PolicyError, Profile};
use toolgate_protocol::PermissionMode;

use crate::cmd::usage_error;
use crate::output;

/// Settings flags (`--settings`, `--allow`, `--ask`, `--deny`, `--claude`, `--profile`,
/// `--allow-root`). `--mode` and `--add-dir` live with the session arguments.
#[derive(Debug, Args, Clone, Default)]
pub struct PolicyArgs {
    /// A settings file or inline JSON, merged above project and user settings (repeatable).
    #[arg(long = "settings", value_name = "FILE|JSON")]
    pub settings: Vec<String>,

    /// An allow rule, e.g. 'Bash(npm test)' (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,

    /// An ask rule (repeatable).
    #[arg(long = "ask", value_name = "RULE")]
    pub ask: Vec<String>,

    /// A deny rule, e.g. 'Bash(git push *)' (repeatable).
    #[arg(long = "deny", value_name = "RULE")]
    pub deny: Vec<String>,

    /// Also read Claude Code's settings (.claude/, ~/.claude/settings.json).
    #[arg(long)]
    pub claude: bool,

    /// The profile to run as (toolgate.profiles.NAME).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    /// Allow bypassPermissions while running as root outside a sandbox.
    #[arg(long)]
    pub allow_root: bool,
}

/// Everything the policy needs for a session, loaded and compiled.
pub struct Loaded {
    /// The effective settings.
    pub settings: Settings,
    /// The selected profile.
    pub profile: Option<Profile>,
    /// The session's mode.
    pub mode: PermissionMode,
    /// The compiled engine.
    pub engine: Engine,
}

impl PolicyArgs {
    /// Where to look for settings, from these flags and the session's.
    pub fn load_options(
        &self,
        workspace: &Path,
        add_dirs: &[PathBuf],
        mode: Option<&str>,
    ) -> LoadOptions {
        let project = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf());
        let mut o = LoadOptions::from_env(project);
        o.claude = self.claude;
        o.cli.settings = self.settings.clone();
        o.cli.allow = self.allow.clone();
        o.cli.ask = self.ask.clone();
        o.cli.deny = self.deny.clone();
        o.cli.add_dirs = add_dirs.to_vec();
        o.cli.mode = mode.map(str::to_owned);
        o
    }

    /// Loads settings, selects the profile and mode, and compiles the engine. The root
    /// guard counts the session as sandboxed when the settings enable the sandbox.
    pub fn load(&self, opts: &LoadOptions) -> Result<Loaded, PolicyError> {
        let settings = settings::load(opts)?;
        let profile = match &self.profile {
            Some(name) => Some(settings.profile(name)?),
            None => None,
        };
        let mode = settings.resolve_mode(profile.as_ref())?;
        let sandboxed = settings
            .sandbox
            .get("enabled")
            .and_then(serde_json::Value::as_bool)
            == Some(true);
        let engine = settings
            .engine_builder(profile.as_ref())
            .root(
                toolgate_policy::modes::running_as_root(),
                sandboxed,
                self.allow_root,
            )
            .build()?;
        Ok(Loaded {
            settings,
            profile,
            mode,
            engine,
        })
    }
}

/// `toolgate config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Workspace root.
    #[arg(long, short = 'w', default_value = ".")]
    pub workspace: PathBuf,

    /// An additional directory (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dirs: Vec<PathBuf>,

    /// Permission mode (overrides defaultMode).
    #[arg(long)]
    pub mode: Option<String>,

    /// Settings flags.
    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `toolgate config`.
pub fn run(args: ConfigArgs) -> ExitCode {
    let opts = args
        .policy
        .load_options(&args.workspace, &args.add_dirs, args.mode.as_deref());
    let loaded = match args.policy.load(&opts) {
        Ok(l) => l,
        Err(e) => return usage_error("config", e),
    };
    let printed = if args.json {
        let mut v = loaded.settings.to_json();
        v["engineWarnings"] = serde_json::json!(loaded.engine.warnings());
        v["effectiveMode"] = serde_json::json!(loaded.mode.as_str());
        v["webTools"] = serde_json::json!(
            crate::web::status(&loaded.settings)
                .lines()
                .collect::<Vec<_>>()
        );
        output::print_json(&v)
    } else {
        let mut text = loaded.settings.render(loaded.engine.warnings());
        text.push_str(&crate::web::status(&loaded.settings));
        if let Some(p) = &loaded.profile {
            text.push_str(&format!(
                "profile  {} selected (mode {})\n",
                p.name, loaded.mode
            ));
        }
        output::print(&text)
    };
    match printed {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}
