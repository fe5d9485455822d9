//! `toolgate mcp list|get|add|remove|approve`: the upstream MCP servers of the gateway
//! (`mcpServers` in settings and `.mcp.json`), their status, tools and pins.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};
use toolgate_gateway::pins::PinState;
use toolgate_gateway::{Gateway, Server, ServerConfig, Status, scan};

use crate::cmd::config::PolicyArgs;
use crate::cmd::usage_error;
use crate::output;

/// `toolgate mcp`.
#[derive(Debug, Subcommand)]
pub enum McpCmd {
    /// Every configured server and its status (servers are started to find out).
    List(McpArgs),
    /// One server: its configuration, status, tools with their pin state and any injection
    /// markers, and the tail of its stderr.
    Get(McpNameArgs),
    /// Add a server to a settings file (other keys are kept).
    Add(McpAddArgs),
    /// Remove a server from a settings file.
    Remove(McpRemoveArgs),
    /// Approve a server's current tool definitions (after a change refused its calls).
    Approve(McpNameArgs),
}

/// Where the servers are read from.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Workspace root.
    #[arg(long, short = 'w', default_value = ".")]
    pub workspace: PathBuf,

    /// Settings flags.
    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A server by name.
#[derive(Debug, Args)]
pub struct McpNameArgs {
    /// The server's name in `mcpServers`.
    pub name: String,

    /// Where the servers are read from.
    #[command(flatten)]
    pub common: McpArgs,
}

/// Which settings file `add` and `remove` write.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Scope {
    /// `.toolgate/settings.local.json` (this workspace, not committed).
    Local,
    /// `.mcp.json` (this workspace, shared with the repository; waits for `toolgate trust`).
    Project,
    /// `$XDG_CONFIG_HOME/toolgate/settings.json` (every workspace).
    User,
}

/// `toolgate mcp add`.
#[derive(Debug, Args)]
pub struct McpAddArgs {
    /// The server's name.
    pub name: String,

    /// The command (stdio) or URL (http, sse), then the command's arguments.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub target: Vec<String>,

    /// The transport.
    #[arg(long, short = 't', default_value = "stdio", value_parser = ["stdio", "http", "sse"])]
    pub transport: String,

    /// An environment variable for a stdio server, `KEY=VALUE` (repeatable).
    #[arg(long, short = 'e', value_name = "KEY=VALUE")]
    pub env: Vec<String>,

    /// A request header for an HTTP server, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,

    /// Which settings file to write.
    #[command(flatten)]
    pub place: SettingsFileArgs,
}

/// The settings file `mcp add` and `mcp remove` edit.
#[derive(Debug, Args)]
pub struct SettingsFileArgs {
    /// The file to edit.
    #[arg(long, short = 's', value_enum, default_value = "local")]
    pub scope: Scope,

    /// Edit this settings file instead of the scope's.
    #[arg(long = "settings", value_name = "FILE", conflicts_with = "scope")]
    pub file: Option<PathBuf>,

    /// Workspace root.
    #[arg(long, short = 'w', default_value = ".")]
    pub workspace: PathBuf,
}

impl SettingsFileArgs {
    fn path(&self) -> Result<PathBuf, String> {
        target_file(self.scope, self.file.as_deref(), &self.workspace)
    }
}

/// `toolgate mcp remove`.
#[derive(Debug, Args)]
pub struct McpRemoveArgs {
    /// The server's name.
    pub name: String,

    /// Which settings file to edit.
    #[command(flatten)]
    pub place: SettingsFileArgs,
}

/// Runs `toolgate mcp`.
pub fn run(cmd: McpCmd) -> ExitCode {
    match cmd {
        McpCmd::List(args) => list(&args),
        McpCmd::Get(args) => get(&args),
        McpCmd::Add(args) => add(&args),
        McpCmd::Remove(args) => remove(&args),
        McpCmd::Approve(args) => approve(&args),
    }
}

fn start(cmd: &str, args: &McpArgs) -> Result<Gateway, ExitCode> {
    let mut setup = toolgate_setup::Setup::new(&args.workspace);
    setup.settings = args.policy.choice();
    let loaded = setup.load().map_err(|e| usage_error(cmd, e))?;
    toolgate_setup::gateway::start(&loaded.settings).map_err(|e| usage_error(cmd, e))
}

fn named<'a>(cmd: &str, gateway: &'a Gateway, name: &str) -> Result<&'a Server, ExitCode> {
    gateway.server(name).map(|s| &**s).ok_or_else(|| {
        let known: Vec<&str> = gateway
            .servers()
            .iter()
            .map(|s| s.config().name.as_str())
            .collect();
        usage_error(
            cmd,
            format!(
                "no MCP server is named `{name}` (configured: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        )
    })
}

fn finish(printed: std::io::Result<()>) -> ExitCode {
    match printed {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}

fn status_json(status: &Status) -> Value {
    match status {
        Status::Connected(n) => json!({"state": "connected", "tools": n}),
        Status::Failed(why) => json!({"state": "failed", "reason": why}),
        Status::WaitsForTrust => json!({"state": "waits_for_trust"}),
    }
}

fn list(args: &McpArgs) -> ExitCode {
    let gateway = match start("mcp list", args) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let (_, skipped) = gateway.tools();
    if args.json {
        let servers: Vec<Value> = gateway
            .servers()
            .iter()
            .map(|s| {
                let c = s.config();
                json!({"name": c.name, "transport": c.transport.kind(), "target": c.transport.target(),
                       "origin": c.origin.label, "status": status_json(&s.status())})
            })
            .collect();
        let skipped: Vec<Value> = skipped
            .iter()
            .map(|s| json!({"server": s.server, "tool": s.tool, "reason": s.reason}))
            .collect();
        return finish(output::print_json(
            &json!({"servers": servers, "skipped": skipped}),
        ));
    }
    let mut text = String::new();
    if gateway.servers().is_empty() {
        text.push_str("no MCP servers configured (mcpServers in settings, or .mcp.json)\n");
    }
    for s in gateway.servers() {
        let c = s.config();
        text.push_str(&format!(
            "{}  {} {}  {}\n",
            c.name,
            c.transport.kind(),
            c.transport.target(),
            s.status()
        ));
    }
    for s in &skipped {
        text.push_str(&format!(
            "  {}: tool `{}` left out: {}\n",
            s.server, s.tool, s.reason
        ));
    }
    finish(output::print(&text))
}

fn tool_json(def: &rmcp_tool::Tool, state: &PinState, server: &ServerConfig) -> Value {
    let pin = match state {
        PinState::Approved => json!("approved"),
        PinState::Changed { was: Some(_), now } => json!({"changed": now}),
        PinState::Changed { was: None, now } => json!({"new": now}),
    };
    json!({
        "name": toolgate_gateway::names::tool_name(&server.name, &def.name).unwrap_or_default(),
        "upstream": def.name,
        "description": def.description,
        "pin": pin,
        "flags": scan::scan_tool(def),
        "always_load": toolgate_gateway::always_load(server, def),
    })
}

/// rmcp's tool type, through the gateway's re-export path.
mod rmcp_tool {
    pub use toolgate_gateway::UpstreamDefinition as Tool;
}

fn get(args: &McpNameArgs) -> ExitCode {
    let gateway = match start("mcp get", &args.common) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let server = match named("mcp get", &gateway, &args.name) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let c = server.config();
    let tools: Vec<Value> = server
        .tools()
        .iter()
        .map(|(def, state)| tool_json(def, state, c))
        .collect();
    let doc = json!({
        "name": c.name,
        "transport": c.transport.kind(),
        "target": c.transport.target(),
        "origin": c.origin.label,
        "network": format!("{:?}", c.network).to_lowercase(),
        "write": c.write,
        "trusted": c.trusted,
        "always_load": c.always_load,
        "call_timeout_ms": c.call_timeout.as_millis() as u64,
        "startup_timeout_ms": c.startup_timeout.as_millis() as u64,
        "status": status_json(&server.status()),
        "tools": tools,
        "stderr": server.stderr(),
    });
    if args.common.json {
        return finish(output::print_json(&doc));
    }
    let mut text = format!(
        "{}  {} {}\n  from     {}\n  status   {}\n  annotations {}\n",
        c.name,
        c.transport.kind(),
        c.transport.target(),
        c.origin.label,
        server.status(),
        if c.trusted {
            "trusted (user settings)"
        } else {
            "untrusted (hints can only make decisions stricter)"
        }
    );
    for t in &tools {
        let pin = match &t["pin"] {
            Value::String(s) => s.clone(),
            Value::Object(m) if m.contains_key("changed") => {
                format!(
                    "CHANGED since approval: run `toolgate mcp approve {}`",
                    c.name
                )
            }
            _ => format!("new, not approved: run `toolgate mcp approve {}`", c.name),
        };
        let always = if t["always_load"] == true {
            "  (always loaded)"
        } else {
            ""
        };
        text.push_str(&format!(
            "  tool {}  [{pin}]{always}\n",
            t["name"].as_str().unwrap_or_default()
        ));
        for f in t["flags"].as_array().into_iter().flatten() {
            text.push_str(&format!(
                "    FLAGGED: {}\n",
                f.as_str().unwrap_or_default()
            ));
        }
    }
    let stderr = server.stderr();
    if !stderr.is_empty() {
        text.push_str("  stderr (tail):\n");
        for line in stderr.iter().rev().take(20).rev() {
            text.push_str(&format!("    {line}\n"));
        }
    }
    finish(output::print(&text))
}

fn approve(args: &McpNameArgs) -> ExitCode {
    let gateway = match start("mcp approve", &args.common) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let server = match named("mcp approve", &gateway, &args.name) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match server.approve() {
        Ok(n) => finish(output::print(&format!(
            "approved {n} tool definitions of MCP server `{}`\n",
            args.name
        ))),
        Err(e) => usage_error("mcp approve", e),
    }
}

fn target_file(scope: Scope, file: Option<&Path>, workspace: &Path) -> Result<PathBuf, String> {
    if let Some(f) = file {
        return Ok(f.to_path_buf());
    }
    Ok(match scope {
        Scope::Local => workspace.join(".toolgate").join("settings.local.json"),
        Scope::Project => workspace.join(".mcp.json"),
        Scope::User => {
            let opts = toolgate_policy::settings::LoadOptions::from_env(workspace.to_path_buf());
            opts.config_dir
                .ok_or("cannot find the configuration directory: set XDG_CONFIG_HOME or HOME")?
                .join("settings.json")
        }
    })
}

fn pairs(
    items: &[String],
    sep: char,
    what: &str,
) -> Result<serde_json::Map<String, Value>, String> {
    items
        .iter()
        .map(|i| match i.split_once(sep) {
            Some((k, v)) if !k.trim().is_empty() => Ok((
                k.trim().to_owned(),
                Value::String(v.trim_start().to_owned()),
            )),
            _ => Err(format!("{what} `{i}`: expected NAME{sep}VALUE")),
        })
        .collect()
}

fn add(args: &McpAddArgs) -> ExitCode {
    let entry = (|| -> Result<Value, String> {
        let (first, rest) = args
            .target
            .split_first()
            .ok_or("a command or URL is needed")?;
        if args.transport == "stdio" {
            let mut e = json!({"command": first, "args": rest});
            if !args.env.is_empty() {
                e["env"] = Value::Object(pairs(&args.env, '=', "--env")?);
            }
            Ok(e)
        } else {
            if !rest.is_empty() {
                return Err(format!("an {} server takes one URL", args.transport));
            }
            let mut e = json!({"type": args.transport, "url": first});
            if !args.headers.is_empty() {
                e["headers"] = Value::Object(pairs(&args.headers, ':', "--header")?);
            }
            Ok(e)
        }
    })();
    let entry = match entry {
        Ok(e) => e,
        Err(e) => return usage_error("mcp add", e),
    };
    let path = match args.place.path() {
        Ok(p) => p,
        Err(e) => return usage_error("mcp add", e),
    };
    match toolgate_gateway::edit::add_server(&path, &args.name, entry) {
        Ok(replaced) => {
            let verb = if replaced { "replaced" } else { "added" };
            let mut text = format!("{verb} MCP server `{}` in {}\n", args.name, path.display());
            if matches!(args.place.scope, Scope::Local | Scope::Project)
                && args.place.file.is_none()
            {
                text.push_str("it starts once the workspace is trusted (`toolgate trust`)\n");
            }
            finish(output::print(&text))
        }
        Err(e) => usage_error("mcp add", e),
    }
}

fn remove(args: &McpRemoveArgs) -> ExitCode {
    let path = match args.place.path() {
        Ok(p) => p,
        Err(e) => return usage_error("mcp remove", e),
    };
    match toolgate_gateway::edit::remove_server(&path, &args.name) {
        Ok(true) => finish(output::print(&format!(
            "removed MCP server `{}` from {}\n",
            args.name,
            path.display()
        ))),
        Ok(false) => usage_error(
            "mcp remove",
            format!(
                "no MCP server is named `{}` in {}",
                args.name,
                path.display()
            ),
        ),
        Err(e) => usage_error("mcp remove", e),
    }
}
