//! toolgate's web tools: **WebFetch** and **WebSearch**, with Claude Code's schemas. Their
//! one job is reaching the web for a model without letting it reach anything else.
//!
//! The tools report facts (WebFetch's URL is its [`toolgate_protocol::Subject::Url`], which
//! `WebFetch(domain:…)` rules match) and never decide permissions. What they enforce
//! themselves is what no rule may lift: WebFetch connects only to addresses that passed
//! the shared address check ([`toolgate_protocol::net`]), at connect time and for every
//! redirect, and both tools bound bytes, time and text, and return what they found wrapped
//! as untrusted content ([`wrap_untrusted`]).
//!
//! ```
//! use toolgate_core::{Gate, Registry};
//! use toolgate_protocol::{ErrorCode, ToolCall};
//! use toolgate_web::{WebFetchConfig, web_tools};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let tools = web_tools(WebFetchConfig::default(), None, None);
//! let registry = tools.into_iter().fold(Registry::builder(), |b, t| b.register_arc(t)).build().unwrap();
//! let dir = tempfile::tempdir().unwrap();
//! // Every call allowed, for the example: the refusal below is WebFetch's own.
//! let gate = Gate::builder()
//!     .workspace(dir.path())
//!     .registry(registry)
//!     .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
//!     .build()
//!     .unwrap();
//! // The cloud metadata service, spelled in hex: refused before anything is sent.
//! let r = gate.execute(ToolCall::new("1", "WebFetch",
//!     json!({"url": "http://0xa9fea9fe/latest/meta-data/", "prompt": "keys"}))).await;
//! assert_eq!(r.error().unwrap().code, ErrorCode::Denied);
//! # });
//! ```
#![deny(missing_docs)]

mod config;
mod error;
mod fetch;
mod http;
mod search;
mod summarize;
#[cfg(feature = "testing")]
pub mod testing;
mod wrap;

use std::sync::Arc;

use toolgate_core::Tool;

pub use config::*;
pub use error::WebError;
pub use fetch::{WebFetchInput, WebFetchTool};
pub use search::{WebSearchInput, WebSearchTool};
pub use summarize::{SUMMARY_INSTRUCTIONS, Summarizer, SummaryError};
pub use wrap::{UNTRUSTED_NOTE, UNTRUSTED_TAG, wrap_untrusted};

/// WebFetch, and WebSearch when a backend is configured (without one it is not offered).
pub fn web_tools(
    fetch: WebFetchConfig,
    search: Option<WebSearchConfig>,
    summarizer: Option<Arc<dyn Summarizer>>,
) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(WebFetchTool::new(fetch, summarizer))];
    if let Some(s) = search {
        tools.push(Arc::new(WebSearchTool::new(s)));
    }
    tools
}
