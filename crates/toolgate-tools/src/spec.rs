//! Helpers for the tools' self-descriptions.

use serde_json::Value;
use toolgate_protocol::{Concurrency, Subject, TimeoutSpec, ToolAnnotations, ToolSpec};

/// The version recorded in registry snapshots for every built-in file tool.
pub(crate) const TOOL_VERSION: &str = "1";

/// Kinds of built-in tools, for annotations and concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// Reads only; runs in parallel with other reads.
    Reader,
    /// Changes files or session state; runs alone.
    Writer,
}

/// Builds a spec.
pub(crate) fn spec(
    name: &str,
    description: &str,
    input_schema: Value,
    class: Class,
    timeout_ms: (u64, u64),
    subject: Subject,
) -> ToolSpec {
    let read_only = class == Class::Reader;
    ToolSpec {
        name: name.to_owned(),
        version: TOOL_VERSION.to_owned(),
        description: description.to_owned(),
        input_schema,
        output_schema: None,
        annotations: ToolAnnotations {
            read_only,
            destructive: !read_only,
            idempotent: read_only,
            open_world: false,
        },
        concurrency: if read_only {
            Concurrency::Shared
        } else {
            Concurrency::Exclusive
        },
        timeout: TimeoutSpec {
            default_ms: timeout_ms.0,
            max_ms: timeout_ms.1,
        },
        subject,
    }
}

/// The subject of a tool that names a path in `field`.
pub(crate) fn path_subject(field: &str, writes: bool) -> Subject {
    Subject::Path {
        field: field.to_owned(),
        writes,
    }
}
