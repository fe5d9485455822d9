//! The crate's one error type.

use std::path::PathBuf;

use crate::probe::Layer;

/// Everything that can go wrong while building a sandbox policy, planning it against the
/// machine's capabilities, or setting the sandbox up.
///
/// Each variant names the layer, the operation (syscall) and the errno where there is one,
/// and its message ends with what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// A settings value has the wrong shape.
    #[error("invalid sandbox setting `{key}`: {reason}; fix the value in the `sandbox` settings")]
    InvalidSettings {
        /// Settings key (JSON path, e.g. `sandbox.network.mode`).
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A path in the policy is not valid UTF-8, not absolute, or otherwise unusable.
    #[error("invalid sandbox path {path:?}: {reason}")]
    InvalidPath {
        /// The path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The settings require the sandbox (`failIfUnavailable`) or the policy needs a layer
    /// that this machine cannot provide.
    #[error(
        "sandbox unavailable: {}; the command was not run. Enable the missing kernel features, \
         or set sandbox.failIfUnavailable=false to accept a degraded sandbox",
        describe_missing(missing)
    )]
    Unavailable {
        /// The layers that are missing, each with the reason the probe found.
        missing: Vec<(Layer, String)>,
    },
    /// A system call failed while setting up a layer.
    #[error("sandbox layer {layer}: {op} failed: {source}; {hint}")]
    Sys {
        /// The layer being set up (e.g. `mount_ns`).
        layer: &'static str,
        /// The operation or syscall, with its argument where useful.
        op: String,
        /// The OS error (errno).
        #[source]
        source: std::io::Error,
        /// What to do about it.
        hint: &'static str,
    },
    /// The seccomp filter could not be compiled.
    #[error("sandbox layer seccomp: filter compilation failed: {0}; this is a toolgate bug")]
    Seccomp(String),
    /// The Landlock ruleset could not be built or applied.
    #[error("sandbox layer landlock: {0}; disable the landlock layer if the kernel misreports it")]
    Landlock(String),
    /// The policy could not be encoded or decoded for the helper.
    #[error("sandbox policy encoding: {0}; this is a toolgate bug")]
    Encoding(String),
    /// A bounded walk of the roots (for the masks the permission rules call for, or for
    /// the repositories below a writable root) met more entries than it may look at: the
    /// room is not started, rather than started without what the walk was to find.
    #[error(
        "the sandbox was not started: more than {max} entries below {} to check {purpose}; {hint}",
        root.display()
    )]
    WalkTooLarge {
        /// The root being walked.
        root: PathBuf,
        /// The bound (`sandbox.filesystem.maxWalkEntries`).
        max: usize,
        /// What the walk was for.
        purpose: String,
        /// What to do about it.
        hint: String,
    },
    /// The network proxy failed.
    #[error("sandbox network proxy: {op} failed: {source}")]
    Proxy {
        /// What the proxy was doing.
        op: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

fn describe_missing(missing: &[(Layer, String)]) -> String {
    missing
        .iter()
        .map(|(layer, why)| format!("{layer} ({why})"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl SandboxError {
    /// Builds a [`SandboxError::Sys`] from the current `errno`.
    pub(crate) fn last_os(layer: &'static str, op: impl Into<String>, hint: &'static str) -> Self {
        SandboxError::Sys {
            layer,
            op: op.into(),
            source: std::io::Error::last_os_error(),
            hint,
        }
    }

    /// Builds a [`SandboxError::Sys`] from an I/O error.
    pub(crate) fn io(
        layer: &'static str,
        op: impl Into<String>,
        source: std::io::Error,
        hint: &'static str,
    ) -> Self {
        SandboxError::Sys {
            layer,
            op: op.into(),
            source,
            hint,
        }
    }
}
