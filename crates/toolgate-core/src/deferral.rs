//! Deferred tools: which tools a session's definitions name without their schemas, and
//! which of them the session has loaded since (with `ToolSearch`).
//!
//! As in Claude Code, only MCP tools (`mcp__<server>__<tool>`) are ever deferred, and only
//! when their definitions would take more than a share of the model's context
//! ([`Deferral::Auto`]). A deferred tool's definition goes out with `defer_loading: true`
//! (Anthropic) or not at all (the other formats); calling it before loading it fails
//! `tool_not_loaded`. Loading is per session: [`LoadedTools`] lives in the session's
//! extensions, so another session (an MCP connection, a sub-agent) starts with none loaded.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use toolgate_protocol::wire::{self, Format};

use crate::registry::View;
use crate::session::Session;

/// Names starting with this are MCP tools, the deferrable ones.
pub const MCP_PREFIX: &str = "mcp__";

/// The context budget assumed when none is configured, in tokens.
pub const DEFAULT_CONTEXT_TOKENS: u64 = 200_000;

/// The share of the context budget, in percent, that MCP tool definitions may take before
/// they are deferred (Claude Code's `auto`: 10 %).
pub const DEFAULT_THRESHOLD_PERCENT: u8 = 10;

/// Characters of JSON per token, for estimating what a definition costs.
pub const CHARS_PER_TOKEN: u64 = 4;

/// Whether `name` is an MCP tool's.
pub fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(MCP_PREFIX)
}

/// When MCP tools are deferred.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deferral {
    /// Never: every definition is sent.
    Off,
    /// Always, however few.
    Always,
    /// When the MCP tools' definitions would take more than `threshold_percent` of
    /// `context_tokens`.
    Auto {
        /// The model's context budget, in tokens.
        context_tokens: u64,
        /// The share of it, in percent.
        threshold_percent: u8,
    },
}

impl Default for Deferral {
    fn default() -> Self {
        Deferral::Auto {
            context_tokens: DEFAULT_CONTEXT_TOKENS,
            threshold_percent: DEFAULT_THRESHOLD_PERCENT,
        }
    }
}

impl Deferral {
    /// The MCP tools of `view` to defer, in registry order.
    pub fn deferred(&self, view: &View) -> Vec<String> {
        let mcp = view
            .entries()
            .iter()
            .filter(|e| is_mcp_tool(&e.spec().name));
        let defer = match *self {
            Deferral::Off => false,
            Deferral::Always => true,
            Deferral::Auto {
                context_tokens,
                threshold_percent,
            } => {
                let chars: u64 = mcp.clone().map(|e| definition_chars(e.spec()) as u64).sum();
                let budget = context_tokens.saturating_mul(u64::from(threshold_percent)) / 100;
                chars / CHARS_PER_TOKEN > budget
            }
        };
        if !defer {
            return Vec::new();
        }
        mcp.map(|e| e.spec().name.clone()).collect()
    }
}

/// The length of a tool's Anthropic definition as JSON.
fn definition_chars(spec: &toolgate_protocol::ToolSpec) -> usize {
    wire::tool_definition(spec, Format::Anthropic)
        .to_string()
        .len()
}

/// The deferred tools a session has loaded (with `ToolSearch`). Kept in the session's
/// extensions; see [`LoadedTools::of`].
#[derive(Debug, Default)]
pub struct LoadedTools {
    names: Mutex<BTreeSet<String>>,
}

impl LoadedTools {
    /// The session's set, created empty on first use.
    pub fn of(session: &Session) -> std::sync::Arc<LoadedTools> {
        session.extensions.get_or_init(LoadedTools::default)
    }

    /// Whether the session has loaded `name`; false when it never loaded anything.
    pub fn loaded_in(session: &Session, name: &str) -> bool {
        session
            .extensions
            .get::<LoadedTools>()
            .is_some_and(|l| l.contains(name))
    }

    /// Marks tools loaded.
    pub fn load<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        let mut set = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        for n in names {
            set.insert(n.to_owned());
        }
    }

    /// Whether `name` is loaded.
    pub fn contains(&self, name: &str) -> bool {
        self.names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
    }

    /// The loaded names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}
