//! What a Claude Code tool event is, in the permission engine's terms: the tool, its subject
//! and the facts the gate's own stage 4 would gather — the shell analyzer's for `Bash`, the
//! paths (as given, and where their symlinks lead) for the file tools, the URL for
//! `WebFetch`. The engine then decides exactly as it does for the gate.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate_protocol::{Access, Beneath, CallFacts, PathFact, Subject};
use toolgate_shell::{Analysis, Context};

use super::Place;

/// Tools that only read files: the input field holding the path, whether it is required
/// (Grep's and Glob's `path` is optional and defaults to the cwd), and what below a
/// directory the tool reads (Grep reads the files' contents; Glob and LS list names).
const READERS: &[(&str, &str, bool, Beneath)] = &[
    ("Read", "file_path", true, Beneath::Nothing),
    ("NotebookRead", "notebook_path", true, Beneath::Nothing),
    ("Grep", "path", false, Beneath::Everything),
    ("Glob", "path", false, Beneath::Nothing),
    ("LS", "path", true, Beneath::Nothing),
];

/// Tools that write files, and the input field holding the path.
const WRITERS: &[(&str, &str)] = &[
    ("Edit", "file_path"),
    ("Write", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
];

/// One tool event, ready for the engine.
pub(super) struct Event {
    /// The subject the engine's rules match.
    pub subject: Subject,
    /// Stage 4's facts.
    pub facts: CallFacts,
}

/// The event for `tool` with `input`; an error (the hook then fails closed) when a field the
/// tool needs is missing or of the wrong type.
pub(super) fn event(tool: &str, input: &Value, place: &Place) -> Result<Event, String> {
    if tool == "Bash" {
        let command = input
            .get("command")
            .and_then(Value::as_str)
            .ok_or("toolgate hook: Bash input has no string `command`")?;
        let mut facts = analyze(command, place).facts();
        facts.subject = Some(command.to_owned());
        return Ok(Event {
            subject: Subject::Command {
                field: "command".into(),
            },
            facts,
        });
    }
    if tool == "WebFetch" {
        input
            .get("url")
            .and_then(Value::as_str)
            .ok_or("toolgate hook: WebFetch input has no string `url`")?;
        return Ok(Event {
            subject: Subject::Url {
                field: "url".into(),
            },
            facts: CallFacts::default(),
        });
    }
    let (field, required, access, beneath) =
        if let Some((_, field, required, beneath)) = READERS.iter().find(|r| r.0 == tool) {
            (*field, *required, Access::Read, *beneath)
        } else if let Some((_, field)) = WRITERS.iter().find(|w| w.0 == tool) {
            (*field, true, Access::Write, Beneath::Nothing)
        } else {
            return Ok(Event {
                subject: Subject::None,
                facts: CallFacts::default(),
            });
        };
    let raw = match input.get(field) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        None | Some(Value::Null) if !required => place.cwd.to_string_lossy().into_owned(),
        _ => {
            return Err(format!(
                "toolgate hook: {tool} input has no string `{field}`"
            ));
        }
    };
    let facts = CallFacts {
        paths: with_target(absolute(&raw, place))
            .into_iter()
            .map(|path| PathFact {
                inside_roots: path.starts_with(&place.project),
                protected: false,
                beneath,
                beneath_only: Vec::new(),
                path,
                access,
            })
            .collect(),
        ..CallFacts::default()
    };
    Ok(Event {
        subject: Subject::Path {
            field: field.to_owned(),
            writes: access != Access::Read,
        },
        facts,
    })
}

/// The shell analyzer on `command` where the call happens.
fn analyze(command: &str, place: &Place) -> Analysis {
    let mut ctx = Context::new(place.cwd.clone())
        .with_root(place.project.clone())
        .with_sources(toolgate_tools::shell::read_sourced_file);
    if !place.cwd.starts_with(&place.project) {
        ctx = ctx.with_root(place.cwd.clone());
    }
    if let Some(home) = &place.home {
        ctx = ctx.with_home(home.clone());
    }
    toolgate_shell::analyze(command, &ctx)
}

/// `path` made absolute against `cwd` (`~/` against home) and normalised lexically.
pub(super) fn absolute(path: &str, place: &Place) -> PathBuf {
    let expanded = match (path.strip_prefix("~/"), &place.home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if path == "~" => place.home.clone().unwrap_or_else(|| PathBuf::from(path)),
        _ => PathBuf::from(path),
    };
    toolgate_shell::normalize_path(&expanded, &place.cwd)
}

/// `path` and, if it differs, where its symlinks lead: a rule or check that catches either
/// catches the call.
fn with_target(path: PathBuf) -> Vec<PathBuf> {
    let real = std::fs::canonicalize(&path)
        .ok()
        .filter(|r| r.as_path() != Path::new(&path));
    std::iter::once(path).chain(real).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn place() -> Place {
        Place {
            cwd: PathBuf::from("/w/p"),
            project: PathBuf::from("/w/p"),
            home: Some(PathBuf::from("/home/u")),
        }
    }

    #[test]
    fn paths_are_made_absolute() {
        let p = place();
        assert_eq!(absolute("a/../b.rs", &p), Path::new("/w/p/b.rs"));
        assert_eq!(
            absolute("~/.ssh/id_rsa", &p),
            Path::new("/home/u/.ssh/id_rsa")
        );
        assert_eq!(absolute("/etc/x", &p), Path::new("/etc/x"));
    }

    #[test]
    fn missing_fields_are_errors_where_required() {
        let p = place();
        assert!(event("Read", &json!({}), &p).is_err());
        assert!(event("Write", &json!({"file_path": 3}), &p).is_err());
        assert!(event("Bash", &json!({}), &p).is_err());
        assert!(event("WebFetch", &json!({"prompt": "x"}), &p).is_err());
        let glob = event("Glob", &json!({"pattern": "*"}), &p).unwrap();
        assert_eq!(glob.facts.paths[0].path, Path::new("/w/p"));
        let other = event("mcp__x__y", &json!({}), &p).unwrap();
        assert_eq!(other.subject, Subject::None);
    }
}
