//! Command-line definitions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cmd::audit::AuditCmd;
use crate::cmd::check::CheckArgs;
use crate::cmd::config::{ConfigArgs, PolicyArgs};
use crate::cmd::hook::HookArgs;
use crate::cmd::sandbox::SandboxCmd;
use crate::cmd::trust::TrustArgs;

const EXAMPLES: &str = "\
Examples:
  # Run an agent's tool calls (Anthropic tool_use or OpenAI tool calls, one per line)
  toolgate exec --workspace examples/workspace < examples/session.jsonl

  # One call; exit 0 ok, 1 tool error, 2 denied, 64 usage error
  toolgate call --workspace . Read '{\"file_path\": \"README.md\"}'

  # Tool definitions for an API, as that API expects them
  toolgate tools --format openai

  # Check an audit log's hash chain
  toolgate audit verify .toolgate/audit.jsonl

  # Guard Claude Code's tool calls: add `toolgate hook` to .claude/settings.json
  toolgate hook install

  # Run a command in the sandbox (read-only root, writable workspace, no network)
  toolgate sandbox run -- sh -c 'echo hi > out.txt; touch /etc/x'";

/// toolgate: the enforcement layer between an LLM agent and the world.
#[derive(Debug, Parser)]
#[command(name = "toolgate", version, about, after_help = EXAMPLES)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv toolgate's debug, -vvv every library's debug); TOOLGATE_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run JSONL tool calls from stdin; write one JSONL result per call to stdout, in order.
    Exec(ExecArgs),
    /// Run one tool call and print its result.
    Call(CallArgs),
    /// Print the tool definitions of a session's view.
    Tools(ToolsArgs),
    /// The decision for a call, without running it, and why.
    Check(CheckArgs),
    /// The effective settings, each rule with its source.
    Config(ConfigArgs),
    /// Trust a workspace: its allow rules, additional directories and hooks then apply.
    Trust(TrustArgs),
    /// Verify, tail and summarise audit logs.
    #[command(subcommand)]
    Audit(AuditCmd),
    /// A Claude Code compatible hook (hook JSON on stdin); `hook install` adds it to settings.
    Hook(HookArgs),
    /// Show which sandbox layers work here; run a command in the sandbox.
    #[command(subcommand)]
    Sandbox(SandboxCmd),
    /// Serve the tools to MCP clients over stdio or Streamable HTTP (--http ADDR).
    Serve(crate::cmd::serve::ServeArgs),
    /// Upstream MCP servers behind the gate: list, get, add, remove, approve.
    #[command(subcommand)]
    Mcp(crate::cmd::mcp::McpCmd),
}

/// How a session is set up; shared by every subcommand that runs or lists tools.
#[derive(Debug, Args, Clone)]
pub struct SessionArgs {
    /// Workspace root: tools act only inside it (and --add-dir directories).
    #[arg(long, short = 'w', default_value = ".")]
    pub workspace: PathBuf,

    /// An additional directory the session may act in (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dirs: Vec<PathBuf>,

    /// Permission mode: default, acceptEdits, plan, auto, dontAsk, bypassPermissions
    /// (overrides the settings' defaultMode).
    #[arg(long)]
    pub mode: Option<String>,

    /// Only the simple tool set (Bash, Read, Edit).
    #[arg(long)]
    pub simple: bool,

    /// Only these tools (a profile's allow-list; names or `*` globs, repeatable).
    #[arg(long = "only", value_name = "TOOL")]
    pub only: Vec<String>,

    /// Remove a tool from the session (a bare-name deny rule: `Bash`, `mcp__*`; repeatable).
    #[arg(long = "deny-tool", value_name = "TOOL")]
    pub deny_tools: Vec<String>,

    /// Use the tool specs pinned in a registry snapshot file.
    #[arg(long, value_name = "FILE")]
    pub tools_snapshot: Option<PathBuf>,

    /// Session id recorded in the audit log (default: a random UUID).
    #[arg(long)]
    pub session_id: Option<String>,

    /// Ask permission prompts through this command (run with `sh -c`), speaking JSON lines
    /// on its stdin/stdout: one request line out, one answer line in (docs/permissions.md).
    #[arg(long, value_name = "CMD", conflicts_with = "prompt_fds")]
    pub prompt_command: Option<String>,

    /// Ask permission prompts over two inherited file descriptors, `IN,OUT` (answers are
    /// read from IN, requests written to OUT), speaking the same JSON lines.
    #[arg(long, value_name = "IN,OUT", value_parser = parse_fd_pair)]
    pub prompt_fds: Option<(u32, u32)>,

    /// Settings and rules.
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// Where audit records go.
#[derive(Debug, Args, Clone)]
pub struct AuditArgs {
    /// Where audit records go (repeatable): the local log FILE (default:
    /// <workspace>/.toolgate/audit.jsonl), and PostgreSQL URLs
    /// (postgres://USER:PASSWORD@HOST[:PORT]/DB) that get a copy of it.
    #[arg(long = "audit", value_name = "FILE|URL")]
    pub audit: Vec<String>,

    /// Do not write an audit log.
    #[arg(long, conflicts_with_all = ["audit", "otlp"])]
    pub no_audit: bool,

    /// When to fsync the audit log: always, batch, never.
    #[arg(long, default_value = "batch")]
    pub fsync: String,

    /// Under `--fsync batch`: fsync at most this often, and at most this long after a
    /// record is written (milliseconds).
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub fsync_interval: u64,

    /// Also export every call as a span and every record as a log record to this
    /// OpenTelemetry collector (OTLP/HTTP base URL, e.g. http://127.0.0.1:4318).
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,

    /// Shared state (flattened here so every front door that writes an audit log, and so
    /// runs tools, takes it too).
    #[command(flatten)]
    pub state: StateArgs,
}

/// Following the settings while a long-running front door serves calls.
#[derive(Debug, Args, Clone, Default)]
pub struct WatchArgs {
    /// Reload the settings when they change: every settings file is re-read and every
    /// --settings URL asked again (If-None-Match) each interval. Calls in flight finish
    /// under the policy they started with; a bad new version is rejected, logged and
    /// audited, and the one in force kept (docs/deploy.md).
    #[arg(long)]
    pub watch: bool,

    /// With --watch: how often to look for a new version, e.g. 5s, 500ms, 1m.
    #[arg(long, value_name = "DURATION", requires = "watch", default_value = "5s",
          value_parser = parse_duration)]
    pub watch_interval: std::time::Duration,
}

/// `500ms`, `5s`, `1m`: a duration of at least toolgate_setup::live::MIN_WATCH_INTERVAL.
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}`: expected a number with ms, s or m (5s, 500ms, 1m)"))?;
    let d = match unit {
        "ms" => std::time::Duration::from_millis(n),
        "s" | "" => std::time::Duration::from_secs(n),
        "m" => std::time::Duration::from_secs(n.saturating_mul(60)),
        _ => return Err(format!("`{s}`: the unit is ms, s or m (5s, 500ms, 1m)")),
    };
    let min = toolgate_setup::live::MIN_WATCH_INTERVAL;
    if d < min {
        return Err(format!("`{s}`: at least {}ms", min.as_millis()));
    }
    Ok(d)
}

/// State shared with other processes and replicas.
#[derive(Debug, Args, Clone, Default)]
pub struct StateArgs {
    /// Count rate limits in this Redis server, shared by every process and replica using
    /// it (redis://[:PASSWORD@]HOST[:PORT][/DB]); default: in this process.
    #[arg(long = "state", value_name = "URL")]
    pub url: Option<String>,
}

/// Result format for `exec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ResultFormat {
    /// Anthropic `tool_result` blocks.
    Anthropic,
    /// OpenAI: `{"role":"tool"}` messages for Chat Completions tool calls,
    /// `function_call_output` items for Responses `function_call` items.
    Openai,
}

/// Definition format for `tools`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DefinitionFormat {
    /// Anthropic Messages API tools.
    Anthropic,
    /// OpenAI Chat Completions function tools.
    Openai,
    /// MCP `tools/list` result.
    Mcp,
}

/// `toolgate exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Session setup.
    #[command(flatten)]
    pub session: SessionArgs,

    /// Audit log.
    #[command(flatten)]
    pub audit: AuditArgs,

    /// Result format.
    #[arg(long, value_enum, default_value = "anthropic")]
    pub format: ResultFormat,

    /// Reloading the settings.
    #[command(flatten)]
    pub watch: WatchArgs,
}

/// `toolgate call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// Session setup.
    #[command(flatten)]
    pub session: SessionArgs,

    /// Audit log.
    #[command(flatten)]
    pub audit: AuditArgs,

    /// Print JSON even on a terminal.
    #[arg(long)]
    pub json: bool,

    /// The tool name (case-sensitive: `Read`, not `read`).
    pub name: String,

    /// The input object as JSON (`-` reads it from stdin).
    pub input: String,
}

/// `toolgate tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Session setup.
    #[command(flatten)]
    pub session: SessionArgs,

    /// Definition format (JSON output); without it a terminal gets a table.
    #[arg(long, value_enum)]
    pub format: Option<DefinitionFormat>,

    /// Print JSON (Anthropic format unless --format says otherwise) even on a terminal.
    #[arg(long)]
    pub json: bool,

    /// Write the registry (all tools, not only this view) to a snapshot file.
    #[arg(long, value_name = "FILE")]
    pub write_snapshot: Option<PathBuf>,
}

/// `IN,OUT`: two file descriptor numbers.
fn parse_fd_pair(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("`{s}`: expected IN,OUT (two descriptor numbers)"))?;
    let num = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{x}` is not a file descriptor number"))
    };
    Ok((num(a)?, num(b)?))
}
