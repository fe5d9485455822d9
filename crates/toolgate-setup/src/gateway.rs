//! Upstream MCP servers in the registry: every front door that builds a registry here gets
//! the tools of the servers in `mcpServers` and `.mcp.json` (see toolgate-gateway), started
//! once per process.

use std::sync::Arc;

use toolgate_core::Tool;
use toolgate_gateway::{Gateway, Status};
use toolgate_policy::Settings;

use crate::SetupError;

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
/// the settings' `sandbox.filesystem` and the permission rules' path denies reach it too.
pub fn start(settings: &Settings) -> Result<Gateway, SetupError> {
    let base = crate::sandbox::room_policy(settings, &[])?;
    Ok(Gateway::start(
        settings,
        crate::sandbox_state(settings).on,
        Some(base),
    )?)
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
