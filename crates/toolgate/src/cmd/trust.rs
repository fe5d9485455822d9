//! `toolgate trust [DIR]`: trust a project's settings (its allow rules, additional
//! directories, hooks, mode and profiles), as its settings files are now. `--status` shows
//! the state, `--revoke` removes the record. Deny and ask rules never wait for trust.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use toolgate_policy::settings::{self, LoadOptions, TrustStatus, TrustStore};

use crate::cmd::usage_error;
use crate::output;

/// `toolgate trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The project directory (default: the current directory).
    pub dir: Option<PathBuf>,

    /// Also list Claude Code's project files (.claude/settings*.json).
    #[arg(long)]
    pub claude: bool,

    /// Only print whether the project is trusted.
    #[arg(long, conflicts_with = "revoke")]
    pub status: bool,

    /// Remove the project's trust record.
    #[arg(long)]
    pub revoke: bool,
}

/// Runs `toolgate trust`.
pub fn run(args: TrustArgs) -> ExitCode {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    // The path is at fault, not the trust store: say which path and why.
    let project = match dir.canonicalize() {
        Ok(p) if p.is_dir() => p,
        Ok(_) => return usage_error("trust", format!("{}: not a directory", dir.display())),
        Err(e) => return usage_error("trust", format!("{}: {e}", dir.display())),
    };
    let mut opts = LoadOptions::from_env(project.clone());
    opts.claude = args.claude;
    let Some(config_dir) = opts.config_dir.clone() else {
        return usage_error(
            "trust",
            "cannot find the configuration directory: set XDG_CONFIG_HOME or HOME",
        );
    };
    let store = TrustStore::new(&config_dir);
    let status = match store.status(&project) {
        Ok(s) => s,
        Err(e) => return usage_error("trust", e),
    };
    let state = match status {
        TrustStatus::Trusted => "trusted",
        TrustStatus::Untrusted => "not trusted",
        TrustStatus::Changed => "not trusted (its settings changed since it was trusted)",
    };
    if args.status {
        let _ = output::print(&format!("{}: {state}\n", project.display()));
        return if status == TrustStatus::Trusted {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        };
    }
    if args.revoke {
        return match store.untrust(&project) {
            Ok(true) => {
                let _ = output::print(&format!("{}: trust revoked\n", project.display()));
                ExitCode::SUCCESS
            }
            Ok(false) => {
                let _ = output::print(&format!("{}: was not trusted\n", project.display()));
                ExitCode::SUCCESS
            }
            Err(e) => usage_error("trust", e),
        };
    }
    // Show what trust turns on before recording it.
    opts.trusted = Some(true);
    let loaded = match settings::load(&opts) {
        Ok(s) => s,
        Err(e) => return usage_error("trust", e),
    };
    let mut text = format!(
        "{}: {state}\nTrusting it turns on, from its settings files:\n",
        project.display()
    );
    let mut any = false;
    for r in loaded
        .rules
        .iter()
        .filter(|r| r.kind == toolgate_policy::RuleKind::Allow)
    {
        if loaded.sources[r.source].needs_trust() {
            text.push_str(&format!(
                "  allow  {}  ({})\n",
                r.text, loaded.sources[r.source].label
            ));
            any = true;
        }
    }
    for d in loaded
        .additional_directories
        .iter()
        .filter(|d| loaded.sources[d.source].needs_trust())
    {
        text.push_str(&format!(
            "  directory  {}  ({})\n",
            d.value.display(),
            loaded.sources[d.source].label
        ));
        any = true;
    }
    for h in loaded
        .hooks
        .iter()
        .filter(|h| loaded.sources[h.source].needs_trust())
    {
        text.push_str(&format!(
            "  hooks  {}  ({})\n",
            h.value, loaded.sources[h.source].label
        ));
        any = true;
    }
    // Skills and agent definitions steer the agent too; trust covers them as they are now.
    for f in settings::steering_files(&project) {
        let kind = if f.ends_with("SKILL.md") {
            "skill"
        } else if f.ends_with(settings::PROJECT_MCP_FILE) {
            "MCP servers"
        } else {
            "agent"
        };
        text.push_str(&format!("  {kind}  {}\n", f.display()));
        any = true;
    }
    if !any {
        text.push_str("  (no allow rules, directories, hooks, skills or agents)\n");
    }
    match store.trust(&project) {
        Ok(record) => {
            text.push_str(&format!(
                "recorded in {} (hash {}); a change to the project's settings, skill or agent files needs `toolgate trust` again\n",
                store.path().display(),
                &record.hash[..12.min(record.hash.len())]
            ));
            let _ = output::print(&text);
            ExitCode::SUCCESS
        }
        Err(e) => usage_error("trust", e),
    }
}
