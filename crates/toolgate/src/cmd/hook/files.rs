//! The file tools in `toolgate hook`: which path a call touches and how, and toolgate's
//! built-in checks on it.
//!
//! The classes come from the one path-class table ([`toolgate_protocol::paths`]) that the
//! shell analyzer reads too, so `Write .bashrc` and `echo x >> .bashrc`, or
//! `Read ~/.ssh/id_rsa` and `cat ~/.ssh/id_rsa`, get the same answer:
//!
//! - a write to a protected path asks (Claude Code's own rule, reference §6), except in
//!   `bypassPermissions`, which the user chose to skip exactly these prompts;
//! - a read of a credentials file asks in every mode, like the analyzer's `secret.read`
//!   finding (high risk) does for Bash. Reading it is not catastrophic, so it is not denied.
//!
//! Critical-path deletion is Bash's business: the file tools cannot delete.

use std::path::PathBuf;

use serde_json::Value;
use toolgate_protocol::paths::{Class, PathClassEntry, classify};
use toolgate_protocol::{Decision, PermissionMode, Subject};

use super::{Answer, Place, absolute, with_target};

/// Tools that only read files: the input field holding the path, and whether it is required
/// (Grep's and Glob's `path` is optional and defaults to the cwd).
const READERS: &[(&str, &str, bool)] = &[
    ("Read", "file_path", true),
    ("NotebookRead", "notebook_path", true),
    ("Grep", "path", false),
    ("Glob", "path", false),
    ("LS", "path", true),
];

/// Tools that write files, and the input field holding the path.
const WRITERS: &[(&str, &str)] = &[
    ("Edit", "file_path"),
    ("Write", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
];

/// One file-tool call.
#[derive(Debug)]
pub(super) struct FileCall {
    field: &'static str,
    writes: bool,
    /// The path, absolute, and where its symlinks lead.
    paths: Vec<PathBuf>,
    /// The project root and home the path classes are judged below.
    anchors: (PathBuf, Option<PathBuf>),
    /// Whether the tool reads what the files below its path hold (Grep does; Glob and LS
    /// only list names).
    reads_below: bool,
}

impl FileCall {
    /// The call if `tool` is a file tool; an error when its path field is missing or not a
    /// string (the hook then fails closed).
    pub(super) fn from_input(
        tool: &str,
        input: &Value,
        place: &Place,
    ) -> Result<Option<FileCall>, String> {
        let (field, required, writes) =
            if let Some((_, field, required)) = READERS.iter().find(|(t, _, _)| *t == tool) {
                (*field, *required, false)
            } else if let Some((_, field)) = WRITERS.iter().find(|(t, _)| *t == tool) {
                (*field, true, true)
            } else {
                return Ok(None);
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
        Ok(Some(FileCall {
            field,
            writes,
            paths: with_target(absolute(&raw, place)),
            anchors: (place.project.clone(), place.home.clone()),
            reads_below: tool == "Grep",
        }))
    }

    /// The subject for the permission engine: which field, and Read or Edit rules.
    pub(super) fn subject(&self) -> Subject {
        Subject::Path {
            field: self.field.to_owned(),
            writes: self.writes,
        }
    }

    /// toolgate's built-in answer.
    pub(super) fn verdict(&self, mode: PermissionMode) -> Answer {
        if self.writes {
            if mode == PermissionMode::BypassPermissions {
                return None;
            }
            let (path, hit) = self.first_match(Class::Protected)?;
            return Some((
                Decision::Ask,
                format!(
                    "toolgate: {} is a protected path ({}); writes to it always need approval",
                    path.display(),
                    hit.kind
                ),
            ));
        }
        let (path, hit) = self.first_match(Class::Secret).filter(|(p, e)| {
            !e.is_the_directory(p, self.anchors.1.as_deref()) || self.reads_below
        })?;
        Some((
            Decision::Ask,
            format!(
                "toolgate: {} holds credentials ({}); reading them needs approval",
                path.display(),
                hit.kind
            ),
        ))
    }

    fn first_match(&self, class: Class) -> Option<(&PathBuf, &'static PathClassEntry)> {
        let (root, home) = &self.anchors;
        self.paths.iter().find_map(|p| {
            classify(p, std::slice::from_ref(root), home.as_deref())
                .get(class)
                .map(|e| (p, e))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::place;
    use super::*;

    fn verdict(tool: &str, input: Value, mode: PermissionMode) -> Option<Decision> {
        let p = place("/w/p", Some("/home/u"));
        FileCall::from_input(tool, &input, &p)
            .unwrap()
            .unwrap()
            .verdict(mode)
            .map(|(d, _)| d)
    }

    #[test]
    fn protected_writes_and_secret_reads_ask() {
        let d = PermissionMode::Default;
        let ask = Some(Decision::Ask);
        assert_eq!(
            verdict("Write", json!({"file_path": ".git/hooks/pre-commit"}), d),
            ask
        );
        assert_eq!(
            verdict("Edit", json!({"file_path": "/home/u/.bashrc"}), d),
            ask
        );
        assert_eq!(
            verdict(
                "NotebookEdit",
                json!({"notebook_path": ".claude/x.ipynb"}),
                d
            ),
            ask
        );
        assert_eq!(
            verdict("Write", json!({"file_path": "src/main.rs"}), d),
            None
        );
        assert_eq!(
            verdict(
                "Write",
                json!({"file_path": ".git/config"}),
                PermissionMode::BypassPermissions
            ),
            None
        );
        assert_eq!(
            verdict("Read", json!({"file_path": "~/.ssh/id_ed25519"}), d),
            ask
        );
        assert_eq!(
            verdict("Read", json!({"file_path": ".env.production"}), d),
            ask
        );
        assert_eq!(
            verdict("Read", json!({"file_path": ".env.example"}), d),
            None
        );
        assert_eq!(
            verdict("Read", json!({"file_path": "/home/u/.ssh/id_rsa.pub"}), d),
            None
        );
        assert_eq!(
            verdict("Grep", json!({"pattern": "x", "path": "/home/u/.aws"}), d),
            ask
        );
        assert_eq!(verdict("Grep", json!({"pattern": "x"}), d), None);
        // Reading a protected file is fine; writing a secret file is not this check's job.
        assert_eq!(
            verdict("Read", json!({"file_path": ".git/config"}), d),
            None
        );
    }

    #[test]
    fn missing_paths_are_errors_where_required() {
        let p = place("/w", None);
        assert!(FileCall::from_input("Read", &json!({}), &p).is_err());
        assert!(FileCall::from_input("Write", &json!({"file_path": 3}), &p).is_err());
        assert!(FileCall::from_input("Glob", &json!({"pattern": "*"}), &p).is_ok());
        assert!(
            FileCall::from_input("Bash", &json!({}), &p)
                .unwrap()
                .is_none()
        );
    }
}
