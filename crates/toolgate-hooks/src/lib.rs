//! toolgate-hooks: Claude Code compatible lifecycle hooks.
//!
//! The `hooks` key of every settings source is merged into one [`HookConfig`] (identical
//! handlers run once; `disableAllHooks` and the managed-only lock respected; project hooks
//! only once the workspace is trusted). A [`HookEngine`] runs the handlers of an event in
//! parallel — `command` handlers in their own process group with the event JSON on stdin,
//! `http` handlers as one POST — and aggregates what they said. It implements the gate's
//! [`HookStage`](toolgate_core::stages::HookStage) for `PreToolUse` (stage 5) and
//! `PostToolUse` / `PostToolUseFailure` (stage 10); the other events are library calls,
//! [`HookEngine::fire`].
//!
//! Where Claude Code fails open, toolgate is stricter (reference §11):
//!
//! - the parent enforces every timeout and kills the hook's whole process group, and the
//!   group is also cleaned up when the hook exits;
//! - stdout and stderr are drained concurrently and capped ([`MAX_STREAM_BYTES`]), stdin is
//!   written concurrently, payloads never go through the environment;
//! - output that starts with `{` but is not valid JSON, or JSON with a field of the wrong
//!   type, is a recorded error with the reason, not silently ignored;
//! - a handler with `"failClosed": true` (toolgate extension) turns its own failure
//!   (timeout, crash, bad output) into a deny for PreToolUse;
//! - two PreToolUse hooks that replace the input with different values deny the call.
//!
//! # Example
//!
//! ```
//! use serde_json::json;
//! use toolgate_hooks::{HookConfig, HookEngine, HookEnv, HookEvent, HookDecision};
//!
//! let hooks = json!({
//!     "UserPromptSubmit": [{
//!         "hooks": [{
//!             "type": "command",
//!             "command": "grep -q password && { echo 'no secrets in prompts' >&2; exit 2; } || true"
//!         }]
//!     }]
//! });
//! let config = HookConfig::from_settings(&[(hooks, true, "user".into())], false, false).unwrap();
//! let dir = std::env::temp_dir();
//! let engine = HookEngine::new(config, HookEnv { project_dir: dir, transcript_path: None });
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let out = engine
//!     .fire(HookEvent::UserPromptSubmit, json!({"session_id": "s", "prompt": "my password is x"}))
//!     .await;
//! assert_eq!(out.blocked.as_deref(), Some("no secrets in prompts"));
//! let out = engine
//!     .fire(HookEvent::UserPromptSubmit, json!({"session_id": "s", "prompt": "hello"}))
//!     .await;
//! assert!(out.blocked.is_none());
//! # });
//! ```
//!
//! See `docs/hooks.md` for the settings format and worked examples.
#![deny(missing_docs)]

mod aggregate;
mod config;
mod engine;
mod error;
mod matcher;
mod protocol;
mod run_command;
mod run_http;

pub use aggregate::EventOutcome;
pub use config::{
    DEFAULT_TIMEOUT, DisableHooks, Handler, HandlerKind, HookConfig, HookEvent, HookSource,
    MAX_TIMEOUT_SECS, MatcherGroup, USER_PROMPT_SUBMIT_TIMEOUT,
};
pub use engine::{HookEngine, HookEnv};
pub use error::HookError;
pub use matcher::{IfMatcher, Matcher, RunAlways};
pub use protocol::{
    HookDecision, HookResult, HookStatus, MAX_STRING_CHARS, PermissionBehavior,
    PermissionRequestDecision,
};
pub use run_command::MAX_STREAM_BYTES;

/// Entry points of the `hook_output` fuzz target (`fuzz/`), compiled only under cargo-fuzz's
/// `--cfg fuzzing`: not API.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    use crate::aggregate::{EventOutcome, aggregate};
    use crate::config::HookEvent;
    use crate::protocol::{HookResult, interpret};

    /// What one command handler left behind.
    #[derive(Debug, Clone, Copy)]
    pub struct Printed<'a> {
        /// Its exit code.
        pub code: i32,
        /// Its standard output (at most [`crate::MAX_STREAM_BYTES`] kept).
        pub stdout: &'a [u8],
        /// Whether standard output was cut at the cap.
        pub stdout_truncated: bool,
        /// Its standard error.
        pub stderr: &'a [u8],
        /// The handler's `failClosed`.
        pub fail_closed: bool,
    }

    /// The outcome of `event` whose handlers printed `printed`, in configuration order:
    /// each output interpreted and the results aggregated exactly as the engine does after
    /// running them.
    pub fn outcome(event: HookEvent, printed: &[Printed<'_>]) -> EventOutcome {
        let results = printed
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let r = HookResult::new(format!("hook-{i}"), "fuzz".into(), p.fail_closed);
                interpret(event, r, p.code, p.stdout, p.stdout_truncated, p.stderr)
            })
            .collect();
        let mut out = EventOutcome::empty(event);
        out.ran = !printed.is_empty();
        aggregate(event, results, out)
    }
}
