//! "Allow always": which rules an approval saves, and writing them atomically to
//! `.toolgate/settings.local.json`.
//!
//! A saved rule is never broader than what was approved: one **exact** rule per subcommand
//! that no rule allowed yet (`Bash(npm run build)`, never `Bash(npm *)`), at most
//! [`MAX_RULES_PER_APPROVAL`] of them; no rule for an interpreter, shell or privilege
//! wrapper (`python`, `bash`, `sudo`, …), for a command containing `*` (a rule would read
//! it as a wildcard), or for anything the analyzer could not fully understand. Those can be
//! allowed once.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value};
use toolgate_protocol::Access;

use crate::engine::PolicyRequest;
use crate::error::PolicyError;
use crate::rules::INTERPRETERS;
use crate::rules::bash::basename;
use crate::rules::index::Cover;
use crate::view::{Family, View};

/// Claude Code saves at most five rules for one compound command; so do we. A longer
/// compound is allowed once instead.
pub const MAX_RULES_PER_APPROVAL: usize = 5;

/// Programs never saved as a rule besides the interpreters and runners
/// ([`INTERPRETERS`]): wrappers and launchers that run whatever follows them. Approving
/// `python x.py` or `sudo make` once says nothing about what runs next time.
const NEVER_SAVED_LAUNCHERS: &[&str] = &[
    "pkexec", "run0", "source", ".", "watch", "setsid", "flock", "nohup", "time", "timeout",
    "nice", "command", "builtin",
];

/// Whether a rule for `program` must never be saved.
fn never_saved(program: &str) -> bool {
    INTERPRETERS.contains(&program) || NEVER_SAVED_LAUNCHERS.contains(&program)
}

fn has_glob_chars(s: &str) -> bool {
    s.contains(['*', '?', '[', ']', '{', '}'])
}

/// The rules an "allow always" answer saves for this call, or why none can be saved.
pub(crate) fn suggest(
    req: &PolicyRequest<'_>,
    view: &View,
    cover: &Cover<'_>,
) -> Result<Vec<String>, String> {
    let mut rules = Vec::new();
    match view.family {
        Family::Bash => {
            if let Some(o) = view.opaque.first() {
                return Err(format!(
                    "part of the command is not understood ({o}); it can only be allowed once"
                ));
            }
            for &i in &cover.uncovered_subs {
                let s = &view.subs[i];
                if let Some(why) = &s.allow_blocked {
                    return Err(format!("{why}; it can only be allowed once"));
                }
                let prog = basename(s.program());
                if never_saved(prog) {
                    return Err(format!(
                        "`{}` runs `{prog}`, which could do anything next time; toolgate never saves a rule for it; allow it once instead",
                        s.allow_text
                    ));
                }
                if s.allow_text.contains('*') {
                    return Err(format!(
                        "`{}` contains `*`, which a rule would read as a wildcard; allow it once instead",
                        s.allow_text
                    ));
                }
                if s.allow_text.chars().any(char::is_control) {
                    return Err(format!(
                        "`{}` contains control characters; allow it once instead",
                        s.allow_text.escape_debug()
                    ));
                }
                let rule = format!("Bash({})", s.allow_text);
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            path_rules(view, cover, &mut rules)?;
        }
        Family::Read | Family::Write => path_rules(view, cover, &mut rules)?,
        Family::Fetch => {
            for h in &view.hosts {
                if has_glob_chars(h) {
                    return Err(format!("the host `{h}` contains wildcard characters"));
                }
                rules.push(format!("WebFetch(domain:{h})"));
            }
        }
        Family::Other => {
            let tool = req.tool;
            if tool.starts_with(toolgate_protocol::MCP_PREFIX) && !tool.contains('*') {
                rules.push(tool.to_owned());
            } else if toolgate_protocol::canonical_tool_name(tool) == "Agent" {
                match req.input.get("subagent_type").and_then(Value::as_str) {
                    Some(t) if !has_glob_chars(t) && !t.contains(')') => {
                        rules.push(format!("{tool}({t})"))
                    }
                    _ => {
                        return Err(format!(
                            "a rule for every {tool} call would be broader than this approval; allow it once instead"
                        ));
                    }
                }
            } else if matches!(req.subject, toolgate_protocol::Subject::None)
                && !matches!(tool, "Monitor" | "PowerShell")
            {
                rules.push(tool.to_owned());
            } else {
                return Err(format!(
                    "{tool} has no exact rule form; allow it once instead"
                ));
            }
        }
    }
    if rules.is_empty() {
        return Err("nothing left to save: the rules already allow every part of this call".into());
    }
    if rules.len() > MAX_RULES_PER_APPROVAL {
        return Err(format!(
            "saving this would take {} rules (at most {MAX_RULES_PER_APPROVAL}); allow it once instead",
            rules.len()
        ));
    }
    Ok(rules)
}

fn path_rules(view: &View, cover: &Cover<'_>, rules: &mut Vec<String>) -> Result<(), String> {
    for &i in &cover.uncovered_paths {
        let p = &view.paths[i];
        let text = p.path.to_string_lossy();
        if has_glob_chars(&text) || text.contains(')') {
            return Err(format!(
                "the path {text} contains characters a rule would read as a pattern; allow it once instead"
            ));
        }
        let family = if p.access == Access::Read && view.family != Family::Write {
            "Read"
        } else {
            "Edit"
        };
        let rule = format!("{family}(/{text})");
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    Ok(())
}

/// Adds `rules` to `permissions.allow` of the settings file at `path`, creating it if
/// needed. The file is read strictly (a broken file is an error and is left alone) and
/// replaced atomically (temporary file in the same directory, fsync, rename).
pub fn persist(path: &Path, rules: &[String]) -> Result<(), PolicyError> {
    let werr = |message: String| PolicyError::Write {
        path: path.to_path_buf(),
        message,
    };
    let mut root: Value = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| PolicyError::json(path, &e))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(error) => {
            return Err(PolicyError::Read {
                path: path.to_path_buf(),
                error,
            });
        }
    };
    let obj = root
        .as_object_mut()
        .ok_or_else(|| werr("the file does not hold a JSON object".into()))?;
    let perms = obj
        .entry("permissions")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| werr("`permissions` is not an object".into()))?;
    let allow = perms
        .entry("allow")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| werr("`permissions.allow` is not an array".into()))?;
    for r in rules {
        if !allow.iter().any(|v| v.as_str() == Some(r)) {
            allow.push(Value::String(r.clone()));
        }
    }
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| werr(format!("cannot create {}: {e}", dir.display())))?;
    let mut text = serde_json::to_string_pretty(&root).map_err(|e| werr(e.to_string()))?;
    text.push('\n');
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| werr(format!("cannot create a temporary file: {e}")))?;
    tmp.write_all(text.as_bytes())
        .map_err(|e| werr(e.to_string()))?;
    tmp.as_file().sync_all().map_err(|e| werr(e.to_string()))?;
    tmp.persist(path).map_err(|e| werr(e.error.to_string()))?;
    Ok(())
}
