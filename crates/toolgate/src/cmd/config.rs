//! `toolgate config`: the effective settings, each rule with its source. Also holds
//! [`PolicyArgs`], the settings flags shared by `check`, `config`, `trust`, `exec` and `call`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::cmd::usage_error;
use crate::output;

/// Settings flags (`--settings`, `--allow`, `--ask`, `--deny`, `--claude`, `--profile`,
/// `--allow-root`). `--mode` and `--add-dir` live with the session arguments.
#[derive(Debug, Args, Clone, Default)]
pub struct PolicyArgs {
    /// A settings file, inline JSON, or an https:// URL (plain http only to loopback),
    /// merged above project and user settings (repeatable). A URL's bearer token comes from
    /// TOOLGATE_SETTINGS_TOKEN.
    #[arg(long = "settings", value_name = "FILE|JSON|URL")]
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

    /// Run commands without the sandbox, which is on by default wherever the kernel
    /// supports it (sets sandbox.enabled to false; managed settings can still turn it on).
    #[arg(long)]
    pub no_sandbox: bool,
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
    if let Err(e) = crate::setup::check_workspace(&args.workspace) {
        return usage_error("config", e);
    }
    let mut setup = toolgate_setup::Setup::new(&args.workspace);
    setup.add_dirs = args.add_dirs.clone();
    setup.mode = args.mode.clone();
    setup.settings = args.policy.choice();
    let loaded = match setup.load() {
        Ok(l) => l,
        Err(e) => return usage_error("config", e),
    };
    let printed = if args.json {
        let mut v = loaded.settings.to_json();
        v["engineWarnings"] = serde_json::json!(loaded.engine.warnings());
        v["effectiveMode"] = serde_json::json!(loaded.mode.as_str());
        let sandbox = toolgate_setup::sandbox_state(&loaded.settings);
        v["sandboxState"] = serde_json::json!({
            "on": sandbox.on,
            "tier": sandbox.tier,
            "why": sandbox.why,
        });
        v["webTools"] = serde_json::json!(
            toolgate_setup::web_status(&loaded.settings)
                .lines()
                .collect::<Vec<_>>()
        );
        v["mcpServerStatus"] = serde_json::json!(
            toolgate_setup::gateway::config_status(&loaded.settings)
                .lines()
                .collect::<Vec<_>>()
        );
        output::print_json(&v)
    } else {
        let mut text = loaded.settings.render(loaded.engine.warnings());
        text.push_str(&toolgate_setup::sandbox_state(&loaded.settings).render());
        text.push_str(&toolgate_setup::web_status(&loaded.settings));
        text.push_str(&toolgate_setup::gateway::config_status(&loaded.settings));
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
