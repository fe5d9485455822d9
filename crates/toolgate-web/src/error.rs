//! The crate's one error type, and how each kind reaches the model as an error code.

use thiserror::Error;
use toolgate_core::ToolError;

/// Why a web tool refused or failed. Each message says what was wrong and, where the model
/// can do something about it, what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WebError {
    /// A settings key is invalid (reported at start-up, before any call).
    #[error("{key}: {why}")]
    Settings {
        /// The key, dotted (`webFetch.allowPrivate`).
        key: String,
        /// What is wrong.
        why: String,
    },
    /// The input is malformed beyond what the schema checks (`invalid_input`).
    #[error("{0}")]
    BadInput(String),
    /// A safety rule refused the destination (`denied`).
    #[error("{0}")]
    Refused(String),
    /// A time limit ran out (`timeout`).
    #[error("{what}")]
    Timeout {
        /// The limit.
        ms: u64,
        /// What was going on.
        what: String,
    },
    /// The content cannot be returned as text (`invalid_request`).
    #[error("{0}")]
    Unsupported(String),
    /// The session's budget is used up (`rate_limited`).
    #[error("{0}")]
    Budget(String),
    /// The fetch or search failed (`execution_failed`).
    #[error("{0}")]
    Failed(String),
}

impl From<WebError> for ToolError {
    fn from(e: WebError) -> ToolError {
        match e {
            WebError::Settings { .. } | WebError::Failed(_) => ToolError::Failed(e.to_string()),
            WebError::BadInput(m) => ToolError::InvalidInput(m),
            WebError::Refused(m) => ToolError::Denied(m),
            WebError::Timeout { ms, what } => ToolError::TimeoutWithOutput { ms, output: what },
            WebError::Unsupported(m) => ToolError::InvalidRequest(m),
            WebError::Budget(m) => ToolError::RateLimited(m),
        }
    }
}

/// reqwest's error with its causes (the TLS or connection reason sits in the chain).
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        let part = s.to_string();
        if !msg.contains(&part) {
            msg.push_str(": ");
            msg.push_str(&part);
        }
        src = s.source();
    }
    msg
}
