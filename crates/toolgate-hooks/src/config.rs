//! The `hooks` key of the settings: parsing (strict, with the source and JSON path in every
//! error), merging across sources, trust and the managed-only lock.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::Value;

use crate::error::HookError;
use crate::matcher::Matcher;

/// Default time a `command` or `http` handler may run (Claude Code's default since v2.1.3).
/// Long enough for a formatter or a test run; the parent kills the process group after it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Default for `UserPromptSubmit` handlers: the user is waiting for the prompt to be sent.
pub const USER_PROMPT_SUBMIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest `timeout` a handler may ask for (one day); larger values are a config error
/// rather than a silent overflow.
pub const MAX_TIMEOUT_SECS: u64 = 24 * 60 * 60;

/// A hook event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    /// Before a tool call (gate stage 5); can decide.
    PreToolUse,
    /// After a successful tool call (gate stage 10).
    PostToolUse,
    /// After a failed tool call (gate stage 10).
    PostToolUseFailure,
    /// When a permission prompt would be shown.
    PermissionRequest,
    /// When a call was denied by the auto classifier.
    PermissionDenied,
    /// Session start (`source`: startup, resume, clear, compact, fork).
    SessionStart,
    /// Session end (`reason`).
    SessionEnd,
    /// A user prompt is submitted.
    UserPromptSubmit,
    /// The agent is about to stop.
    Stop,
    /// A subagent is about to stop.
    SubagentStop,
    /// Before compaction (`trigger`: manual, auto).
    PreCompact,
    /// A notification for the user.
    Notification,
    /// Any other Claude Code event name: accepted in the settings, fired by name.
    Other(&'static str),
}

/// Event names Claude Code knows that toolgate accepts in settings but does not fire itself;
/// an embedding agent may fire them with [`crate::HookEngine::fire`].
const OTHER_EVENTS: &[&str] = &[
    "Setup",
    "UserPromptExpansion",
    "StopFailure",
    "PostToolBatch",
    "SubagentStart",
    "TaskCreated",
    "TaskCompleted",
    "TeammateIdle",
    "PostCompact",
    "MessageDisplay",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "Elicitation",
    "ElicitationResult",
];

impl HookEvent {
    /// The events toolgate itself or its embedders fire, by name.
    pub const MAIN: [HookEvent; 12] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PermissionRequest,
        HookEvent::PermissionDenied,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::Notification,
    ];

    /// The name as written in settings and in `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PermissionDenied => "PermissionDenied",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
            HookEvent::Other(name) => name,
        }
    }

    /// Parses an event name; `None` for names Claude Code does not define.
    pub fn parse(name: &str) -> Option<HookEvent> {
        if let Some(e) = Self::MAIN.iter().find(|e| e.as_str() == name) {
            return Some(*e);
        }
        OTHER_EVENTS
            .iter()
            .find(|n| **n == name)
            .map(|n| HookEvent::Other(n))
    }

    /// Tool events: the matcher applies to the tool name and `if` may be used.
    pub fn is_tool_event(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
                | HookEvent::PermissionRequest
                | HookEvent::PermissionDenied
        )
    }

    /// The payload field a matcher is compared with, if the event has one.
    pub fn matcher_field(self) -> Option<&'static str> {
        match self {
            e if e.is_tool_event() => Some("tool_name"),
            HookEvent::SessionStart => Some("source"),
            HookEvent::SessionEnd => Some("reason"),
            HookEvent::PreCompact | HookEvent::Other("PostCompact") => Some("trigger"),
            HookEvent::Notification => Some("notification_type"),
            _ => None,
        }
    }

    fn default_timeout(self) -> Duration {
        match self {
            HookEvent::UserPromptSubmit => USER_PROMPT_SUBMIT_TIMEOUT,
            _ => DEFAULT_TIMEOUT,
        }
    }
}

/// What a handler runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandlerKind {
    /// A command: `sh -c command` (shell form) or `command args…` (exec form, no shell).
    Command {
        /// The command line (shell form) or program (exec form).
        command: String,
        /// Exec-form arguments; `None` for the shell form.
        args: Option<Vec<String>>,
    },
    /// An HTTP POST of the event JSON.
    Http {
        /// The URL (`http://` only; see the crate docs).
        url: String,
        /// Extra headers; values may use `$VAR` / `${VAR}` from `allowed_env_vars`.
        headers: Vec<(String, String)>,
        /// Environment variables the header values may expand.
        allowed_env_vars: Vec<String>,
    },
    /// A Claude Code handler type toolgate does not run (`prompt`, `agent`, `mcp_tool`): it
    /// is recorded as an error each time it matches (and denies when fail-closed).
    Unsupported(String),
}

/// One configured handler.
#[derive(Debug, Clone)]
pub struct Handler {
    /// What it runs.
    pub kind: HandlerKind,
    /// Its time limit.
    pub timeout: Duration,
    /// Runs detached; its output is ignored and it cannot decide.
    pub is_async: bool,
    /// The `if` permission rule, if any.
    pub if_rule: Option<String>,
    /// toolgate extension: a failure (timeout, crash, bad output) of this PreToolUse
    /// handler denies the call instead of being ignored.
    pub fail_closed: bool,
    /// The settings source it came from.
    pub source: String,
    /// The handler object as written, for deduplication.
    pub(crate) key: String,
}

impl Handler {
    /// How the handler is named in records: the command line or the URL.
    pub fn label(&self) -> String {
        match &self.kind {
            HandlerKind::Command { command, args } => match args {
                None => command.clone(),
                Some(a) => std::iter::once(command.as_str())
                    .chain(a.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
            },
            HandlerKind::Http { url, .. } => url.clone(),
            HandlerKind::Unsupported(t) => format!("({t} handler)"),
        }
    }
}

/// A matcher group: `{ matcher, hooks: [...] }`.
#[derive(Debug, Clone)]
pub struct MatcherGroup {
    /// Which values (tool names, sources…) the group applies to.
    pub matcher: Matcher,
    /// Its handlers.
    pub handlers: Vec<Handler>,
}

/// Where the hooks of one settings source came from.
#[derive(Debug, Clone)]
pub struct HookSource {
    /// The source's `hooks` object.
    pub hooks: Value,
    /// In force (a project source waits for workspace trust).
    pub active: bool,
    /// How the source is named in errors and records.
    pub label: String,
    /// A managed-settings source.
    pub managed: bool,
}

/// What `disableAllHooks` switches off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DisableHooks {
    /// Nothing.
    #[default]
    None,
    /// Every non-managed hook (`disableAllHooks` from a non-managed source: only managed
    /// settings can disable managed hooks).
    NonManaged,
    /// Every hook (`disableAllHooks` from managed settings).
    All,
}

/// The hooks of every source, merged and compiled.
#[derive(Debug, Clone, Default)]
pub struct HookConfig {
    pub(crate) events: BTreeMap<HookEvent, Vec<MatcherGroup>>,
}

impl HookConfig {
    /// Builds the configuration from the settings sources as `(hooks object, active, label)`.
    /// A source whose label names managed settings (contains `managed`) counts as managed.
    /// `disable_all` switches off every non-managed hook; `managed_only` keeps only managed
    /// hooks. Inactive sources (untrusted projects) are skipped without being parsed.
    pub fn from_settings(
        sources: &[(Value, bool, String)],
        disable_all: bool,
        managed_only: bool,
    ) -> Result<HookConfig, HookError> {
        let sources: Vec<HookSource> = sources
            .iter()
            .map(|(hooks, active, label)| HookSource {
                hooks: hooks.clone(),
                active: *active,
                label: label.clone(),
                managed: label.to_ascii_lowercase().contains("managed"),
            })
            .collect();
        let disable = if disable_all {
            DisableHooks::NonManaged
        } else {
            DisableHooks::None
        };
        Self::from_sources(&sources, disable, managed_only)
    }

    /// Builds the configuration from explicit sources.
    pub fn from_sources(
        sources: &[HookSource],
        disable: DisableHooks,
        managed_only: bool,
    ) -> Result<HookConfig, HookError> {
        let mut config = HookConfig::default();
        for src in sources {
            if !src.active
                || disable == DisableHooks::All
                || (!src.managed && (managed_only || disable == DisableHooks::NonManaged))
            {
                continue;
            }
            config.add_source(&src.hooks, &src.label)?;
        }
        Ok(config)
    }

    /// Parses one `hooks` object and adds its groups.
    pub fn add_source(&mut self, hooks: &Value, label: &str) -> Result<(), HookError> {
        let err = |path: String, message: String| HookError::Config {
            source_label: label.to_owned(),
            path,
            message,
        };
        let Some(obj) = hooks.as_object() else {
            return Err(err(
                "hooks".into(),
                "must be an object keyed by event name".into(),
            ));
        };
        for (name, groups) in obj {
            let path = format!("hooks.{name}");
            let event = HookEvent::parse(name).ok_or_else(|| {
                err(
                    path.clone(),
                    format!(
                        "unknown hook event; use one of {}",
                        HookEvent::MAIN.map(HookEvent::as_str).join(", ")
                    ),
                )
            })?;
            let Some(groups) = groups.as_array() else {
                return Err(err(path, "must be an array of {matcher, hooks}".into()));
            };
            for (gi, group) in groups.iter().enumerate() {
                let gpath = format!("{path}[{gi}]");
                let parsed = parse_group(event, group, label, &gpath).map_err(|m| err(m.0, m.1))?;
                self.events.entry(event).or_default().push(parsed);
            }
        }
        Ok(())
    }

    /// Whether any handler is configured for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.events
            .get(&event)
            .is_some_and(|g| g.iter().any(|g| !g.handlers.is_empty()))
    }

    /// Number of handlers, over every event.
    pub fn len(&self) -> usize {
        self.events
            .values()
            .flatten()
            .map(|g| g.handlers.len())
            .sum()
    }

    /// No handler at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The handlers for `event` whose matcher accepts `value`, deduplicated (identical
    /// handler objects run once), in configuration order.
    pub(crate) fn matching(&self, event: HookEvent, value: Option<&str>) -> Vec<&Handler> {
        let mut seen: HashMap<&str, ()> = HashMap::new();
        let mut out = Vec::new();
        for group in self.events.get(&event).into_iter().flatten() {
            if !group.matcher.matches(value) {
                continue;
            }
            for h in &group.handlers {
                if seen.insert(h.key.as_str(), ()).is_none() {
                    out.push(h);
                }
            }
        }
        out
    }
}

type PathMsg = (String, String);

fn parse_group(
    event: HookEvent,
    group: &Value,
    label: &str,
    path: &str,
) -> Result<MatcherGroup, PathMsg> {
    let Some(obj) = group.as_object() else {
        return Err((path.into(), "must be an object {matcher, hooks}".into()));
    };
    let matcher = match obj.get("matcher") {
        None | Some(Value::Null) => Matcher::All,
        Some(Value::String(s)) => {
            Matcher::parse(s).map_err(|e| (format!("{path}.matcher"), e.to_string()))?
        }
        Some(_) => return Err((format!("{path}.matcher"), "must be a string".into())),
    };
    let Some(list) = obj.get("hooks").and_then(Value::as_array) else {
        return Err((
            format!("{path}.hooks"),
            "required: an array of handlers".into(),
        ));
    };
    let mut handlers = Vec::with_capacity(list.len());
    for (hi, h) in list.iter().enumerate() {
        handlers.push(parse_handler(
            event,
            h,
            label,
            &format!("{path}.hooks[{hi}]"),
        )?);
    }
    Ok(MatcherGroup { matcher, handlers })
}

fn parse_handler(event: HookEvent, h: &Value, label: &str, path: &str) -> Result<Handler, PathMsg> {
    let Some(obj) = h.as_object() else {
        return Err((path.into(), "must be an object with a `type`".into()));
    };
    let at = |field: &str| format!("{path}.{field}");
    let string = |field: &str| -> Result<Option<String>, PathMsg> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err((at(field), "must be a string".into())),
        }
    };
    let boolean = |field: &str| -> Result<bool, PathMsg> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err((at(field), "must be true or false".into())),
        }
    };
    let strings = |field: &str| -> Result<Option<Vec<String>>, PathMsg> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| (at(field), "must be an array of strings".into()))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err((at(field), "must be an array of strings".into())),
        }
    };
    let ty = string("type")?.ok_or_else(|| {
        (
            at("type"),
            "required: `command` or `http` (`prompt`, `agent`, `mcp_tool` are accepted but not run)"
                .to_owned(),
        )
    })?;
    let kind = match ty.as_str() {
        "command" => {
            let command = string("command")?
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| (at("command"), "required: a non-empty command".to_owned()))?;
            HandlerKind::Command {
                command,
                args: strings("args")?,
            }
        }
        "http" => {
            let url =
                string("url")?.ok_or_else(|| (at("url"), "required: an http:// URL".to_owned()))?;
            let headers = match obj.get("headers") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Object(m)) => m
                    .iter()
                    .map(|(k, v)| {
                        v.as_str()
                            .map(|s| (k.clone(), s.to_owned()))
                            .ok_or_else(|| (at(&format!("headers.{k}")), "must be a string".into()))
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err((at("headers"), "must be an object of strings".into())),
            };
            HandlerKind::Http {
                url,
                headers,
                allowed_env_vars: strings("allowedEnvVars")?.unwrap_or_default(),
            }
        }
        "prompt" | "agent" | "mcp_tool" => HandlerKind::Unsupported(ty.clone()),
        other => {
            return Err((
                at("type"),
                format!("unknown handler type `{other}`; use `command` or `http`"),
            ));
        }
    };
    let timeout = match obj.get("timeout") {
        None | Some(Value::Null) => event.default_timeout(),
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s <= MAX_TIMEOUT_SECS as f64 => Duration::from_secs_f64(s),
            _ => {
                return Err((
                    at("timeout"),
                    format!("must be a number of seconds in (0, {MAX_TIMEOUT_SECS}]"),
                ));
            }
        },
    };
    let if_rule = string("if")?;
    Ok(Handler {
        kind,
        timeout,
        is_async: boolean("async")?,
        if_rule,
        fail_closed: boolean("failClosed")?,
        source: label.to_owned(),
        key: h.to_string(),
    })
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
