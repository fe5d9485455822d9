//! Upstream MCP servers in the registry: every front door that builds a registry here gets
//! the tools of the servers in `mcpServers` and `.mcp.json` (see toolgate-gateway), started
//! once per process.

use std::sync::Arc;

use toolgate_core::Tool;
use toolgate_gateway::{Gateway, RoomBase, ServerConfig, Status, Transport};
use toolgate_policy::Settings;
use toolgate_sandbox::PathRules;

use crate::SetupError;
use crate::sandbox::EnginePathRules;

/// The upstream tools for `settings`. A server that fails to start, and a tool left out
/// (bad schema, name collision), is logged; it stops nothing.
pub fn upstream_tools(settings: &Settings) -> Result<Vec<Arc<dyn Tool>>, SetupError> {
    let gateway = start(settings)?;
    for server in gateway.servers() {
        match server.status() {
            Status::Failed(why) => {
                tracing::warn!("MCP server `{}` failed: {why}", server.config().name);
            }
            Status::WaitsForTrust => {
                tracing::warn!(
                    "MCP server `{}` waits for `toolgate trust`",
                    server.config().name
                );
            }
            Status::Connected(_) => {}
        }
    }
    let (tools, skipped) = gateway.tools();
    for s in skipped {
        tracing::warn!(
            "MCP server `{}`: tool `{}` left out: {}",
            s.server,
            s.tool,
            s.reason
        );
    }
    Ok(tools)
}

/// Starts (or finds running) the upstream servers of `settings`. A stdio server runs in a
/// sandbox room when its own `sandbox` key says so, else when the sandbox is on for
/// Bash ([`crate::sandbox_state`]): on by default wherever the kernel supports it.
///
/// A server's room starts from the same policy as Bash's ([`crate::sandbox::room_policy`]):
/// the settings' `sandbox.filesystem` and the permission rules' path denies reach it too,
/// and the engine's deny and ask path rules are walked for masks at each start, as for each
/// Bash command ([`EnginePathRules`]).
pub fn start(settings: &Settings) -> Result<Gateway, SetupError> {
    let on = crate::sandbox_state(settings).on;
    let configs = toolgate_gateway::config::servers(settings, on)?;
    let base = room_base(settings, &configs)?;
    Ok(Gateway::start_configs(settings, configs, Some(base))?)
}

/// The room the sandboxed servers among `configs` start from. The engine is compiled from
/// the settings' rules without a profile — the rules `room_policy` reads, since the servers
/// are shared by every profile of the process — and only when some server has a room.
fn room_base(settings: &Settings, configs: &[ServerConfig]) -> Result<RoomBase, SetupError> {
    let policy = crate::sandbox::room_policy(settings, &[])?;
    let roomed = configs
        .iter()
        .any(|c| c.sandbox == Some(true) && matches!(c.transport, Transport::Stdio { .. }));
    let path_rules: Option<Arc<dyn PathRules>> = if roomed {
        let engine = settings.engine_builder(None).build()?;
        Some(Arc::new(EnginePathRules(Arc::new(engine))))
    } else {
        None
    };
    Ok(RoomBase { policy, path_rules })
}

/// What `toolgate config` says about the MCP servers, without starting them: one line per
/// server, naming those that wait for `toolgate trust`.
pub fn config_status(settings: &Settings) -> String {
    let servers =
        match toolgate_gateway::config::servers(settings, crate::sandbox_state(settings).on) {
            Ok(s) => s,
            Err(e) => return format!("mcp      error: {e}\n"),
        };
    let mut text = String::new();
    for s in servers {
        let state = match (&s.invalid, &s.waits) {
            (Some(why), _) => format!("invalid: {why}"),
            (None, Some(_)) => "waits for `toolgate trust`".to_owned(),
            (None, None) => "starts with each session".to_owned(),
        };
        text.push_str(&format!(
            "mcp      {} ({} {}) from {}: {state}\n",
            s.name,
            s.transport.kind(),
            s.transport.target(),
            s.origin.label
        ));
    }
    text
}
