//! The crate's one error type. Every message names the file (and line and column where there
//! is one) and says what to do.

use std::path::PathBuf;

use thiserror::Error;

/// Why settings could not be loaded, a rule could not be compiled, or a file could not be
/// written.
#[derive(Debug, Error)]
pub enum PolicyError {
    /// A settings file is not valid JSON, or a key has the wrong type.
    #[error(
        "{path}:{line}:{column}: {message}\n  settings files are strict JSON (no comments, no trailing commas); fix the file or move it away. toolgate refuses to start with a broken settings file because it may hold deny rules"
    )]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser found.
        message: String,
    },
    /// A settings file exists but cannot be read.
    #[error(
        "{path}: cannot read: {error}\n  fix its permissions or move it away; toolgate does not start while a settings file it should read is unreadable"
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A deny or ask rule cannot be parsed. (A broken allow rule is only a warning: dropping
    /// it cannot make toolgate more permissive.)
    #[error(
        "{origin}: invalid {list} rule `{rule}`: {message}\n  write it as Tool, Tool(specifier) or Tool(param:value), e.g. Bash(rm -rf *) or Read(./.env)"
    )]
    Rule {
        /// The settings source that holds the rule.
        origin: String,
        /// `deny` or `ask`.
        list: &'static str,
        /// The rule as written.
        rule: String,
        /// What is wrong with it.
        message: String,
    },
    /// A value in the settings is not acceptable (an unknown mode name, a bad duration).
    #[error("{origin}: {key}: {message}")]
    Invalid {
        /// The settings source.
        origin: String,
        /// The key (`permissions.defaultMode`).
        key: String,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// A mode was requested that the settings disable.
    #[error(
        "permission mode {mode} is disabled by {origin} ({key}: \"disable\"); choose another mode"
    )]
    ModeDisabled {
        /// The mode.
        mode: String,
        /// The settings source that disabled it.
        origin: String,
        /// The key that disabled it.
        key: &'static str,
    },
    /// The requested profile is not defined.
    #[error("unknown profile `{name}`; defined profiles: {known}")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The names that exist, comma-separated (or `none`).
        known: String,
    },
    /// The trust store could not be read or written.
    #[error("trust store {path}: {message}")]
    Trust {
        /// The store file.
        path: PathBuf,
        /// What went wrong and what to do.
        message: String,
    },
    /// A settings file could not be written (an "allow always" approval).
    #[error("cannot write {path}: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A `toolgate check` target could not be understood.
    #[error("check target `{target}`: {message}")]
    CheckTarget {
        /// The target as given.
        target: String,
        /// What is wrong and what to write instead.
        message: String,
    },
}

impl PolicyError {
    /// Builds a [`PolicyError::Syntax`] from a serde_json error on `path`.
    pub(crate) fn json(path: impl Into<PathBuf>, e: &serde_json::Error) -> Self {
        let text = e.to_string();
        // serde_json appends " at line L column C"; we print the position in front instead.
        let message = match text.rfind(" at line ") {
            Some(i) => text[..i].to_owned(),
            None => text,
        };
        PolicyError::Syntax {
            path: path.into(),
            line: e.line(),
            column: e.column().max(1),
            message,
        }
    }
}
