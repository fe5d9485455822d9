//! Parsing rule text into [`Rule`]s, with the startup warnings Claude Code gives (unknown
//! tools, `param:value` on primary fields, unanchored allow globs, path rules on tools that
//! never consult them).

use std::collections::HashSet;
use std::sync::Arc;
use toolgate_protocol::MCP_PREFIX;

use regex::Regex;

use super::bash::BashPattern;
use super::domain::DomainPattern;
use super::path::{Anchors, PathPattern};
use super::{PathFamily, Rule, RuleKind, Spec, ToolPat, Wild};

/// Canonical names of the tools rules may name without a warning.
pub const KNOWN_TOOLS: &[&str] = &[
    "Agent",
    "AskUserQuestion",
    "Bash",
    "BashOutput",
    "Cd",
    "CronCreate",
    "CronDelete",
    "CronList",
    "Edit",
    "EnterPlanMode",
    "EnterWorktree",
    "ExitPlanMode",
    "ExitWorktree",
    "Glob",
    "Grep",
    "KillBash",
    "KillShell",
    "LS",
    "LSP",
    "ListMcpResourcesTool",
    "Monitor",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "PowerShell",
    "Read",
    "ReadMcpResourceTool",
    "Skill",
    "Task",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "TaskUpdate",
    "TodoWrite",
    "ToolSearch",
    "WebFetch",
    "WebSearch",
    "Write",
];

/// Tools that `Read(...)` rules cover (plus any tool whose subject is a read path).
pub const READ_TOOLS: &[&str] = &["Read", "Grep", "Glob", "LS", "LSP", "NotebookRead"];

/// Tools that `Edit(...)` rules cover (plus any tool whose subject is a written path).
pub const WRITE_TOOLS: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit"];

/// Input fields per built-in tool: the primary (subject) field first, then the others that
/// `Tool(param:value)` may name.
const FIELDS: &[(&str, &str, &[&str])] = &[
    (
        "Bash",
        "command",
        &[
            "timeout",
            "description",
            "run_in_background",
            "dangerouslyDisableSandbox",
        ],
    ),
    ("Read", "file_path", &["offset", "limit", "pages"]),
    ("Write", "file_path", &["content"]),
    (
        "Edit",
        "file_path",
        &["old_string", "new_string", "replace_all"],
    ),
    ("MultiEdit", "file_path", &["edits"]),
    (
        "NotebookEdit",
        "notebook_path",
        &["cell_id", "new_source", "cell_type", "edit_mode"],
    ),
    ("Glob", "path", &["pattern"]),
    (
        "Grep",
        "path",
        &[
            "pattern",
            "glob",
            "type",
            "output_mode",
            "multiline",
            "head_limit",
        ],
    ),
    ("WebFetch", "url", &["prompt"]),
    (
        "WebSearch",
        "",
        &["query", "allowed_domains", "blocked_domains"],
    ),
    (
        "Agent",
        "",
        &[
            "description",
            "prompt",
            "subagent_type",
            "model",
            "run_in_background",
            "name",
            "isolation",
        ],
    ),
    (
        "Task",
        "",
        &[
            "description",
            "prompt",
            "subagent_type",
            "model",
            "run_in_background",
            "name",
            "isolation",
        ],
    ),
    ("Skill", "", &["skill", "args"]),
    (
        "Monitor",
        "",
        &["command", "ws", "description", "timeout_ms", "persistent"],
    ),
];

/// The names every rule may use as its primary content: `Tool(param:value)` on these is
/// ignored with a warning (match them with the tool's own specifier instead).
const PRIMARY_FIELDS: &[&str] = &["command", "file_path", "path", "notebook_path", "url"];

/// Interpreters and runners: a wildcard allow rule starting with one is dropped in auto mode
/// and never proposed as an "allow always" rule.
pub(crate) const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "ruby",
    "perl",
    "php",
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "deno",
    "bun",
    "bunx",
    "lua",
    "Rscript",
    "osascript",
    "pwsh",
    "powershell",
    "npx",
    "uvx",
    "sudo",
    "doas",
    "su",
    "env",
    "xargs",
    "eval",
    "exec",
    "ssh",
    "docker",
    "kubectl",
    "java",
    "tclsh",
    "awk",
    "gawk",
];

/// Package-manager "run" prefixes: `Bash(npm run *)` is broad in auto mode.
const RUNNERS: &[&str] = &[
    "npm run",
    "npm exec",
    "yarn run",
    "pnpm run",
    "pnpm exec",
    "pnpm dlx",
    "uv run",
    "poetry run",
    "pipx run",
    "cargo run",
    "go run",
    "bun run",
    "yarn",
    "pnpm",
    "make",
];

/// What a rule is compiled against.
pub(crate) struct ParseCtx<'a> {
    /// Anchors for path patterns.
    pub anchors: Anchors<'a>,
    /// Tool names known besides [`KNOWN_TOOLS`] (the registry's).
    pub extra_tools: &'a HashSet<String>,
    /// The source label.
    pub source: Arc<str>,
}

fn known(name: &str, ctx: &ParseCtx<'_>) -> bool {
    KNOWN_TOOLS.contains(&name) || ctx.extra_tools.contains(name)
}

fn fields_of(tool: &str) -> Option<(&'static str, &'static [&'static str])> {
    FIELDS
        .iter()
        .find(|(t, _, _)| *t == tool)
        .map(|(_, p, f)| (*p, *f))
}

/// Parses one rule. `Ok(None)` means "skipped with a warning"; `Err` is a broken rule (an
/// error for deny/ask, a warning for allow — the caller decides).
pub(crate) fn parse_rule(
    text: &str,
    kind: RuleKind,
    ctx: &ParseCtx<'_>,
    warnings: &mut Vec<String>,
) -> Result<Option<Rule>, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("an empty rule".into());
    }
    let (tool, spec_text) = match trimmed.find('(') {
        Some(open) => {
            let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                return Err("a `(` without a closing `)` at the end".into());
            };
            (trimmed[..open].trim(), Some(inner))
        }
        None => {
            if trimmed.contains(')') {
                return Err("a `)` without an opening `(`".into());
            }
            (trimmed, None)
        }
    };
    if tool.is_empty() {
        return Err("no tool name before `(`".into());
    }
    // `Task(…)` in an older settings file is a rule about `Agent`.
    let tool = toolgate_protocol::canonical_tool_name(tool);
    if let Some(bad) = tool
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '.')))
    {
        return Err(format!("`{bad}` cannot appear in a tool name"));
    }
    let warn = |warnings: &mut Vec<String>, msg: String| {
        warnings.push(format!("{}: {kind} rule `{trimmed}`: {msg}", ctx.source));
    };

    // The tool part.
    let tool_pat = if tool.contains('*') {
        if kind == RuleKind::Allow && !anchored_mcp_glob(tool) {
            warn(
                warnings,
                "tool-name globs in allow rules must start with a literal `mcp__<server>__`; skipped".into(),
            );
            return Ok(None);
        }
        match server_of_glob(tool) {
            Some(server) => ToolPat::Server(server),
            None => ToolPat::Glob(glob_regex(tool)?),
        }
    } else if let Some(rest) = tool.strip_prefix(MCP_PREFIX)
        && !rest.is_empty()
        && !rest.contains("__")
    {
        ToolPat::Server(format!("{MCP_PREFIX}{rest}__"))
    } else {
        if !known(tool, ctx) && !tool.contains('_') {
            match KNOWN_TOOLS.iter().find(|k| k.eq_ignore_ascii_case(tool)) {
                Some(canon) if kind == RuleKind::Allow => {
                    warn(
                        warnings,
                        format!(
                            "tool names are case-sensitive; did you mean `{canon}`? This allow rule matches nothing and is skipped"
                        ),
                    );
                    return Ok(None);
                }
                Some(canon) => warn(
                    warnings,
                    format!(
                        "tool names are case-sensitive; did you mean `{canon}`? (deny and ask rules match any case)"
                    ),
                ),
                None => warn(warnings, format!("unknown tool `{tool}`")),
            }
        }
        ToolPat::Name(tool.to_owned())
    };
    // Deny and ask rules written in the wrong case read their specifier as the tool's.
    let tool = KNOWN_TOOLS
        .iter()
        .find(|k| k.eq_ignore_ascii_case(tool))
        .copied()
        .unwrap_or(tool);

    let spec_text = spec_text.map(str::trim);
    let spec = match spec_text {
        None | Some("*") => Spec::Any,
        Some(s) => match parse_spec(tool, s, kind, ctx, warnings, &warn)? {
            Some(spec) => spec,
            None => return Ok(None),
        },
    };
    let mut tool_pat = tool_pat;
    // `Write(path)` and friends become Edit/Read path rules on the deny side.
    if let Spec::Path(family, _) = &spec
        && let ToolPat::Name(n) = &tool_pat
        && n != "Read"
        && n != "Edit"
    {
        tool_pat = ToolPat::Name(
            match family {
                PathFamily::Read => "Read",
                PathFamily::Edit => "Edit",
            }
            .to_owned(),
        );
    }
    let broad_for_auto = kind == RuleKind::Allow && broad_in_auto(&tool_pat, &spec);
    Ok(Some(Rule {
        kind,
        text: trimmed.to_owned(),
        source: ctx.source.clone(),
        tool: tool_pat,
        spec,
        broad_for_auto,
    }))
}

type Warn<'w> = dyn Fn(&mut Vec<String>, String) + 'w;

fn parse_spec(
    tool: &str,
    s: &str,
    kind: RuleKind,
    ctx: &ParseCtx<'_>,
    warnings: &mut Vec<String>,
    warn: &Warn<'_>,
) -> Result<Option<Spec>, String> {
    let fields = fields_of(tool);
    // `param:value`?
    if let Some((name, value)) = s.split_once(':') {
        let name = name.trim();
        let is_ident = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let is_field = match fields {
            Some((primary, others)) => name == primary || others.contains(&name),
            None => true,
        };
        let domain = tool == "WebFetch" && name == "domain";
        if is_ident && !domain && is_field {
            if PRIMARY_FIELDS.contains(&name) {
                warn(
                    warnings,
                    format!(
                        "`{name}` is the tool's primary field and cannot be matched as param:value; write {tool}(<pattern>) instead; ignored"
                    ),
                );
                return Ok(None);
            }
            if kind == RuleKind::Allow {
                warn(
                    warnings,
                    "param:value rules work only in deny and ask lists; ignored".into(),
                );
                return Ok(None);
            }
            return Ok(Some(Spec::Param {
                name: name.to_owned(),
                value: Wild::new(value)?,
            }));
        }
        if domain {
            return Ok(Some(Spec::Domain(
                DomainPattern::parse(value).map_err(|e| e.to_string())?,
            )));
        }
    }
    match tool {
        "Bash" | "PowerShell" | "Monitor" => Ok(Some(Spec::Bash(BashPattern::new(s)?))),
        "Read" | "Edit" => {
            let family = if tool == "Read" {
                PathFamily::Read
            } else {
                PathFamily::Edit
            };
            Ok(Some(Spec::Path(
                family,
                PathPattern::new(s, kind, ctx.anchors)?,
            )))
        }
        "Write" | "MultiEdit" | "NotebookEdit" | "Glob" | "Grep" | "LS" | "NotebookRead" => {
            let family = if WRITE_TOOLS.contains(&tool) {
                PathFamily::Edit
            } else {
                PathFamily::Read
            };
            let family_name = if family == PathFamily::Edit {
                "Edit"
            } else {
                "Read"
            };
            if kind == RuleKind::Allow {
                warn(
                    warnings,
                    format!(
                        "{tool}(...) path rules are never consulted; write {family_name}(...) instead; skipped"
                    ),
                );
                return Ok(None);
            }
            warn(
                warnings,
                format!("{tool}(...) path rules are applied as {family_name}(...)"),
            );
            Ok(Some(Spec::Path(
                family,
                PathPattern::new(s, kind, ctx.anchors)?,
            )))
        }
        "WebFetch" => {
            Err("WebFetch rules take domain:HOST, e.g. WebFetch(domain:*.example.com)".into())
        }
        "Agent" => Ok(Some(Spec::Value {
            field: Some("subagent_type"),
            value: Wild::new(s)?,
        })),
        "Skill" => Ok(Some(Spec::Value {
            field: Some("skill"),
            value: Wild::new(s)?,
        })),
        t if fields_of(t).is_some() || KNOWN_TOOLS.contains(&t) => {
            warn(
                warnings,
                format!("{t} has no specifier; the rule matches nothing"),
            );
            Ok(Some(Spec::Never))
        }
        _ => Ok(Some(Spec::Value {
            field: None,
            value: Wild::new(s)?,
        })),
    }
}

fn anchored_mcp_glob(tool: &str) -> bool {
    tool.strip_prefix(MCP_PREFIX)
        .and_then(|rest| rest.split_once("__"))
        .is_some_and(|(server, _)| !server.is_empty() && !server.contains('*'))
}

/// `mcp__server__*` is a server rule, not a general glob.
fn server_of_glob(tool: &str) -> Option<String> {
    let rest = tool.strip_prefix(MCP_PREFIX)?.strip_suffix("__*")?;
    (!rest.is_empty() && !rest.contains('*') && !rest.contains("__"))
        .then(|| format!("{MCP_PREFIX}{rest}__"))
}

fn glob_regex(tool: &str) -> Result<Regex, String> {
    let body: Vec<String> = tool.split('*').map(regex::escape).collect();
    Regex::new(&format!("^{}$", body.join(".*"))).map_err(|e| format!("invalid tool glob: {e}"))
}

fn broad_in_auto(tool: &ToolPat, spec: &Spec) -> bool {
    match (tool, spec) {
        (ToolPat::Glob(_), _) => true,
        (ToolPat::Name(n), Spec::Any) => {
            matches!(n.as_str(), "Bash" | "PowerShell" | "Agent" | "Monitor")
        }
        (ToolPat::Name(_), Spec::Bash(p)) => {
            p.is_any() || (p.is_wildcard() && interpreter_prefix(&p.text))
        }
        _ => false,
    }
}

/// Whether a wildcard pattern starts with an interpreter or a package-manager runner.
pub(crate) fn interpreter_prefix(pattern: &str) -> bool {
    let literal = pattern.split('*').next().unwrap_or("");
    let words: Vec<&str> = literal.split_whitespace().collect();
    let Some(first) = words.first() else {
        return true;
    };
    let first = super::bash::basename(first);
    let open_word = !literal.ends_with(' ') && words.len() == 1;
    if INTERPRETERS
        .iter()
        .any(|i| *i == first || (open_word && i.starts_with(first)))
    {
        return true;
    }
    let two = words.iter().take(2).copied().collect::<Vec<_>>().join(" ");
    RUNNERS
        .iter()
        .any(|r| two == *r || *r == first || (open_word && r.starts_with(first)))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn parse(text: &str, kind: RuleKind) -> (Result<Option<Rule>, String>, Vec<String>) {
        let extra = HashSet::new();
        let ctx = ParseCtx {
            anchors: Anchors {
                source: Path::new("/p"),
                cwd: Path::new("/p"),
                home: None,
            },
            extra_tools: &extra,
            source: Arc::from("test"),
        };
        let mut w = Vec::new();
        let r = parse_rule(text, kind, &ctx, &mut w);
        (r, w)
    }

    #[test]
    fn forms_and_warnings() {
        let (r, w) = parse("Bash(npm run test:*)", RuleKind::Allow);
        assert!(matches!(r.unwrap().unwrap().spec, Spec::Bash(_)));
        assert!(w.is_empty());
        let (r, _) = parse("Bash(run_in_background:true)", RuleKind::Deny);
        assert!(matches!(r.unwrap().unwrap().spec, Spec::Param { .. }));
        let (r, w) = parse("Bash(command:rm *)", RuleKind::Deny);
        assert!(r.unwrap().is_none() && !w.is_empty());
        let (r, _) = parse("Bash(git:* push)", RuleKind::Deny);
        assert!(matches!(r.unwrap().unwrap().spec, Spec::Bash(_)));
        let (r, w) = parse("Bash(run_in_background:true)", RuleKind::Allow);
        assert!(r.unwrap().is_none() && !w.is_empty());
        let (r, w) = parse("*", RuleKind::Allow);
        assert!(r.unwrap().is_none() && !w.is_empty());
        let (r, w) = parse("mcp__github__get_*", RuleKind::Allow);
        assert!(r.unwrap().is_some() && w.is_empty());
        let (r, _) = parse("mcp__github", RuleKind::Allow);
        assert!(matches!(r.unwrap().unwrap().tool, ToolPat::Server(_)));
        let (r, w) = parse("bash(rm *)", RuleKind::Deny);
        assert!(r.unwrap().is_some() && w[0].contains("did you mean `Bash`"));
        let (r, w) = parse("Frobnicate", RuleKind::Deny);
        assert!(r.unwrap().is_some() && w[0].contains("unknown tool"));
        assert!(parse("Bash(rm", RuleKind::Deny).0.is_err());
        assert!(parse("WebFetch(https://x)", RuleKind::Deny).0.is_err());
        let (r, w) = parse("Write(/etc/**)", RuleKind::Deny);
        assert!(
            matches!(r.unwrap().unwrap().spec, Spec::Path(PathFamily::Edit, _)) && !w.is_empty()
        );
    }

    #[test]
    fn broad_rules_for_auto_mode() {
        for t in [
            "Bash",
            "Bash(*)",
            "Bash(python*)",
            "Bash(python3 *)",
            "Bash(npm run *)",
            "Agent",
            "Bash(sudo *)",
        ] {
            assert!(
                parse(t, RuleKind::Allow).0.unwrap().unwrap().broad_for_auto,
                "{t}"
            );
        }
        for t in ["Bash(npm test)", "Bash(git status *)", "Bash(ls *)", "Read"] {
            assert!(
                !parse(t, RuleKind::Allow).0.unwrap().unwrap().broad_for_auto,
                "{t}"
            );
        }
    }
}
