//! The crate's one error type. Every variant says what was wrong and what to send instead,
//! because the reader is a model that must correct itself.

use std::io;
use std::path::PathBuf;

use thiserror::Error;
use toolgate_core::ToolError;

/// Why a file tool refused or failed a call.
#[derive(Debug, Error)]
pub enum Error {
    /// The path is not inside any root of the session.
    #[error(
        "{path} is outside the directories this session may use ({roots}); use a path inside them, or ask the user to add the directory (--add-dir)"
    )]
    OutsideRoots {
        /// The path as resolved.
        path: PathBuf,
        /// The roots, joined for display.
        roots: String,
    },
    /// The path is under `/proc` (magic links that can point anywhere).
    #[error("{0} is under /proc; file tools never open /proc paths")]
    Proc(PathBuf),
    /// The path could not be understood.
    #[error("{path:?} is not a usable path: {reason}")]
    BadPath {
        /// The path as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// The file does not exist.
    #[error("{0} does not exist; check the path (Glob finds files by pattern)")]
    NotFound(PathBuf),
    /// A symlink whose target does not exist.
    #[error("{0} is a symlink whose target does not exist")]
    Dangling(PathBuf),
    /// A directory where a file was expected.
    #[error("{0} is a directory, not a file; use Glob to list files in it")]
    IsDirectory(PathBuf),
    /// A file where a directory was expected.
    #[error(
        "{0} is not a directory; pass a directory as `path`, or omit it to use the current directory"
    )]
    NotDirectory(PathBuf),
    /// A device, FIFO or socket.
    #[error("{path} is a {kind}, not a regular file; file tools read and write regular files only")]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// A regular file with more than one hard link: the other links may be outside the roots.
    #[error(
        "{path} has {links} hard links; toolgate cannot prove the other links are inside the workspace, so it will not open it (the setting `allow_hard_links` lifts this)"
    )]
    HardLinked {
        /// The path.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// The path changed between the check and the use so that it would leave the root.
    #[error(
        "{0} changed while it was being opened (a symlink or directory was swapped in) and would lead outside the workspace; the call was stopped"
    )]
    Escaped(PathBuf),
    /// An existing file was not read in this session before a write.
    #[error("{0} has not been read in this session; Read it first, then write or edit it")]
    NotRead(PathBuf),
    /// The file changed on disk since this session last read it.
    #[error(
        "{0} was modified on disk since you last read it (by the user, a formatter or another process); Read it again before editing it"
    )]
    Stale(PathBuf),
    /// The file is too large for this operation.
    #[error("{path} is {size} bytes, over the {limit}-byte limit for {what}")]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
        /// Which operation.
        what: &'static str,
    },
    /// An I/O error.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// On which path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// Wraps an I/O error with the operation and path.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

impl From<Error> for ToolError {
    fn from(e: Error) -> Self {
        match e {
            Error::Io { .. } => ToolError::Failed(e.to_string()),
            other => ToolError::InvalidRequest(other.to_string()),
        }
    }
}

/// Shorthand for the crate's results.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;
