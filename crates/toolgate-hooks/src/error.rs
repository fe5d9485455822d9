//! The crate's error type.

use thiserror::Error;

/// Errors from building or running hooks.
#[derive(Debug, Error)]
pub enum HookError {
    /// A malformed `hooks` object in a settings source.
    #[error("{source_label}: `{path}`: {message}")]
    Config {
        /// The settings source.
        source_label: String,
        /// JSON path of the bad value (`hooks.PreToolUse[0].hooks[1].timeout`).
        path: String,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// A handler could not be started or talked to.
    #[error("{0}")]
    Run(String),
    /// An I/O error while running a handler.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl HookError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        HookError::Io {
            context: context.into(),
            source,
        }
    }
}
