//! Deferred tools: which tools a session's definitions name without their schemas, and
//! which of them the session has loaded since (with `ToolSearch`).
//!
//! As in Claude Code, only MCP tools (`mcp__<server>__<tool>`) are ever deferred, and only
//! when their definitions would take more than a share of the model's context
//! ([`Deferral::Auto`]). An MCP tool that asks to be always loaded
//! ([`Tool::always_load`](crate::Tool::always_load): its server's `alwaysLoad: true` or its
//! own `_meta["anthropic/alwaysLoad"]`) is exempt: it is sent in full like a built-in tool,
//! and since it is sent whatever happens to the others, its definition does not count
//! toward the threshold either. Exemption is about what the model is shown; every call
//! still passes the whole gate. A deferred tool's definition goes out with `defer_loading: true`
//! (Anthropic) or not at all (the other formats); calling it before loading it fails
//! `tool_not_loaded`. Loading is per session: [`LoadedTools`] lives in the session's
//! extensions, so another session (an MCP connection, a sub-agent) starts with none loaded.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use toolgate_protocol::wire::{self, Format};

use crate::registry::View;
use crate::session::Session;

/// The `_meta` key with which an MCP tool asks never to be deferred (Claude Code's): read
/// from upstream definitions, and sent on the definitions `toolgate serve` lists so a client
/// that defers tools keeps these loaded too.
pub const ALWAYS_LOAD_META: &str = "anthropic/alwaysLoad";

/// Names starting with this are MCP tools, the deferrable ones.
pub use toolgate_protocol::MCP_PREFIX;

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
    /// The MCP tools of `view` to defer, in registry order. Tools that are always loaded
    /// are never deferred and do not count toward [`Deferral::Auto`]'s threshold: deferring
    /// the others could not take their definitions out of the prompt.
    pub fn deferred(&self, view: &View) -> Vec<String> {
        let mcp = view
            .entries()
            .iter()
            .filter(|e| is_mcp_tool(&e.spec().name) && !e.tool().always_load());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Registry;
    use crate::registry::ViewOptions;
    use crate::tool::{Prepared, Tool, ToolContext, ToolError};
    use serde_json::{Value, json};
    use toolgate_protocol::{
        CallFacts, Concurrency, Subject, TimeoutSpec, ToolAnnotations, ToolOutput, ToolSpec,
    };

    struct Fake {
        spec: ToolSpec,
        always: bool,
    }

    #[async_trait::async_trait]
    impl Tool for Fake {
        fn spec(&self) -> &ToolSpec {
            &self.spec
        }
        fn prepare(&self, input: &Value, _ctx: &ToolContext) -> Result<Prepared, ToolError> {
            Ok(Prepared::new(input.clone(), CallFacts::default()))
        }
        async fn run(&self, _p: Prepared, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text("ran"))
        }
        fn always_load(&self) -> bool {
            self.always
        }
    }

    /// A tool whose definition is about `chars` characters long.
    fn fake(name: &str, chars: usize, always: bool) -> Fake {
        Fake {
            spec: ToolSpec {
                name: name.into(),
                version: "1".into(),
                description: "d".repeat(chars),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                annotations: ToolAnnotations::default(),
                concurrency: Concurrency::Shared,
                timeout: TimeoutSpec {
                    default_ms: 1000,
                    max_ms: 1000,
                },
                subject: Subject::None,
            },
            always,
        }
    }

    fn deferred(deferral: Deferral, tools: Vec<Fake>) -> Vec<String> {
        let mut b = Registry::builder();
        for t in tools {
            b = b.register(t);
        }
        let registry = b.build().unwrap();
        deferral.deferred(&registry.view(&ViewOptions::default()).unwrap())
    }

    #[test]
    fn always_loaded_tools_are_never_deferred() {
        let tools = || {
            vec![
                fake("Read", 10, false),
                fake("mcp__a__x", 10, false),
                fake("mcp__a__pinned", 10, true),
                fake("mcp__b__y", 10, false),
            ]
        };
        assert_eq!(
            deferred(Deferral::Always, tools()),
            ["mcp__a__x", "mcp__b__y"]
        );
        assert!(deferred(Deferral::Off, tools()).is_empty());
        // Only always-loaded MCP tools: nothing to defer, so ToolSearch is not offered.
        let only = vec![fake("mcp__a__x", 10, true), fake("Read", 10, false)];
        assert!(deferred(Deferral::Always, only).is_empty());
    }

    #[test]
    fn always_loaded_definitions_do_not_count_toward_the_threshold() {
        // A budget of 1 % of 10,000 tokens: 100 tokens, 400 characters.
        let auto = Deferral::Auto {
            context_tokens: 10_000,
            threshold_percent: 1,
        };
        // A large always-loaded definition does not push the small ones over.
        let under = vec![
            fake("mcp__a__big", 4_000, true),
            fake("mcp__a__x", 10, false),
            fake("mcp__a__y", 10, false),
        ];
        assert!(deferred(auto, under).is_empty());
        // Deferrable definitions over the budget are deferred; the exempt one stays.
        let over = vec![
            fake("mcp__a__big", 4_000, true),
            fake("mcp__a__x", 300, false),
            fake("mcp__a__y", 300, false),
        ];
        assert_eq!(deferred(auto, over), ["mcp__a__x", "mcp__a__y"]);
    }
}
