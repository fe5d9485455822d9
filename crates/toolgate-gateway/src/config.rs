//! Upstream server configuration: `mcpServers` entries from toolgate settings and the
//! workspace's `.mcp.json`, in Claude Code's format, with `${VAR}` / `${VAR:-default}`
//! expansion.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};
use toolgate_policy::settings::{PROJECT_MCP_FILE, Settings, SourceKind};

use crate::GatewayError;

/// How long a server may take to start and answer `initialize` and `tools/list`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The default time limit of one upstream call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest time limit a server's `timeout` may set for its calls.
pub const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(3600);

/// Set in the environment of every stdio upstream: a toolgate started as an upstream of
/// toolgate starts no upstreams of its own, so a `.mcp.json` that names toolgate cannot
/// make it start itself without end.
pub const UPSTREAM_MARKER_ENV: &str = "TOOLGATE_MCP_UPSTREAM";

/// Why `server` must not start because it would loop back into toolgate, if it would:
/// this process is itself an upstream of a toolgate, or the server's command is this
/// very executable.
pub fn refuse_loop(server: &ServerConfig) -> Option<String> {
    if std::env::var_os(UPSTREAM_MARKER_ENV).is_some() {
        return Some(
            "this toolgate runs as an MCP upstream of another toolgate and starts no upstreams of its own".into(),
        );
    }
    let Transport::Stdio { command, .. } = &server.transport else {
        return None;
    };
    let me = std::env::current_exe().ok()?.canonicalize().ok()?;
    let found = if command.contains('/') {
        Path::new(command).canonicalize().ok()
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(command))
                .find(|p| p.is_file())
                .and_then(|p| p.canonicalize().ok())
        })
    };
    (found.as_deref() == Some(me.as_path())).then(|| {
        "its command is this toolgate itself; it is not started (that would loop)".to_owned()
    })
}

/// The variables a stdio server inherits from toolgate's environment besides its `env`.
pub const INHERITED_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];

/// How an upstream server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A program speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment beyond [`INHERITED_ENV`].
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP (`type: "http"`).
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers (credentials).
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport (`type: "sse"`).
    Sse {
        /// The SSE endpoint.
        url: String,
        /// Extra request headers.
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
            Transport::Sse { .. } => "sse",
        }
    }

    /// The command line or URL, for listings.
    pub fn target(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => {
                let mut s = command.clone();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            Transport::Http { url, .. } | Transport::Sse { url, .. } => url.clone(),
        }
    }
}

/// The network a stdio server's sandbox room gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    /// No network.
    #[default]
    None,
    /// Through the sandbox proxy and its domain allow list.
    Proxy,
    /// Unrestricted.
    Full,
}

/// Where a server's entry was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// A settings file's label or the `.mcp.json` path.
    pub label: String,
    /// The settings level, or `None` for `.mcp.json`.
    pub kind: Option<SourceKind>,
}

/// One upstream server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The name in `mcpServers` (the `<server>` of `mcp__<server>__<tool>`).
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// Its room's network (stdio servers): `none` unless the entry says otherwise.
    pub network: Network,
    /// Under `network: "proxy"`: the domains the proxy lets through (the entry's
    /// `allowedDomains`, else the settings' `sandbox.network.allowedDomains`).
    pub allowed_domains: Vec<String>,
    /// Under `network: "proxy"`: the domains it refuses (`sandbox.network.deniedDomains`).
    pub denied_domains: Vec<String>,
    /// Whether its room may write the workspace (stdio servers).
    pub write: bool,
    /// Its annotations are believed (only from user or managed settings).
    pub trusted: bool,
    /// Its tools are never deferred (Claude Code's `alwaysLoad`): their definitions are sent
    /// in full whatever `toolgate.toolSearch` says. Deferral only; calls are decided as
    /// any other.
    pub always_load: bool,
    /// Whether a stdio server runs in a sandbox room: the server's `sandbox`, else the
    /// settings' `sandbox.enabled` (filled in by [`servers`]).
    pub sandbox: Option<bool>,
    /// The time limit of each call.
    pub call_timeout: Duration,
    /// The time limit of start-up.
    pub startup_timeout: Duration,
    /// Where it was configured.
    pub origin: Origin,
    /// Why it does not start, when it waits for `toolgate trust`.
    pub waits: Option<String>,
    /// Why its entry cannot be used (an unset variable, a field of the wrong type): it is
    /// reported as failed, and the other servers start.
    pub invalid: Option<String>,
}

impl ServerConfig {
    /// An entry that could not be parsed, kept so that it is reported by name.
    fn invalid(name: &str, origin: Origin, why: String) -> Self {
        Self {
            name: name.to_owned(),
            transport: Transport::Stdio {
                command: String::new(),
                args: Vec::new(),
                env: BTreeMap::new(),
            },
            network: Network::None,
            allowed_domains: Vec::new(),
            denied_domains: Vec::new(),
            write: false,
            trusted: false,
            always_load: false,
            sandbox: None,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            origin,
            waits: None,
            invalid: Some(why),
        }
    }
}

/// Expands `${VAR}` and `${VAR:-default}` in `text` with `lookup`; an unset variable without
/// a default is an error naming it. `$` not followed by `{` is kept as written.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`${{` without a closing `}}` in `{text}`"));
        };
        let body = &after[..end];
        let (name, default) = match body.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (body, None),
        };
        let valid =
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            return Err(format!("`${{{body}}}` is not a variable reference"));
        }
        match (lookup(name).filter(|v| !v.is_empty()), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(format!("environment variable `{name}` is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Every server configured for the session: `mcpServers` from the settings, then the
/// workspace's `.mcp.json` for names the settings do not use. Project servers (project
/// settings, `.mcp.json`) wait for `toolgate trust`.
///
/// `sandbox_default` is whether a stdio server without a `sandbox` key of its own runs in
/// a room: toolgate-setup's sandbox state (on by default wherever the kernel supports a
/// sandbox), the same decision Bash gets.
pub fn servers(
    settings: &Settings,
    sandbox_default: bool,
) -> Result<Vec<ServerConfig>, GatewayError> {
    servers_with(settings, sandbox_default, &process_env)
}

/// [`servers`] with a given environment.
pub fn servers_with(
    settings: &Settings,
    sandbox_default: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, GatewayError> {
    let mut out = Vec::new();
    for (name, entry) in &settings.mcp_servers {
        let source = settings.sources.get(entry.source);
        let origin = Origin {
            label: source.map_or_else(|| "settings".to_owned(), |s| s.label.clone()),
            kind: source.map(|s| s.kind),
        };
        let mut server = parse_entry(name, &entry.value, origin.clone(), lookup)
            .unwrap_or_else(|e| ServerConfig::invalid(name, origin, e.to_string()));
        server.waits = entry.note.clone();
        out.push(server);
    }
    let path = settings.project.join(PROJECT_MCP_FILE);
    for server in load_mcp_json(&path, lookup)? {
        if settings.mcp_servers.contains_key(&server.name) {
            continue;
        }
        let mut server = server;
        if !settings.trusted {
            server.waits = Some(toolgate_policy::settings::UNTRUSTED_NOTE.to_owned());
        }
        out.push(server);
    }
    let domains = |key: &str| -> Vec<String> {
        settings
            .sandbox
            .pointer(&format!("/network/{key}"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|d| d.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    for server in &mut out {
        server.sandbox = Some(server.sandbox.unwrap_or(sandbox_default));
        if server.allowed_domains.is_empty() {
            server.allowed_domains = domains("allowedDomains");
        }
        server.denied_domains = domains("deniedDomains");
    }
    Ok(out)
}

/// Reads a `.mcp.json` (`{"mcpServers": {…}}`); a missing file lists no servers, a
/// malformed one is an error at its line and column.
pub fn load_mcp_json(
    path: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, GatewayError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(GatewayError::Config(format!("{}: {e}", path.display())));
        }
    };
    // An empty file lists nothing (the sandbox leaves an empty placeholder while a room
    // runs where the project has none).
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        GatewayError::Config(format!(
            "{}:{}:{}: {}",
            path.display(),
            e.line(),
            e.column(),
            e
        ))
    })?;
    let servers = match doc.get("mcpServers") {
        None => return Ok(Vec::new()),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(GatewayError::Config(format!(
                "{}: `mcpServers` must be an object",
                path.display()
            )));
        }
    };
    let origin = Origin {
        label: path.display().to_string(),
        kind: None,
    };
    Ok(servers
        .iter()
        .map(|(name, v)| {
            parse_entry(name, v, origin.clone(), lookup)
                .unwrap_or_else(|e| ServerConfig::invalid(name, origin.clone(), e.to_string()))
        })
        .collect())
}

/// Parses one `mcpServers` entry.
pub fn parse_entry(
    name: &str,
    value: &Value,
    origin: Origin,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, GatewayError> {
    let err = |m: String| GatewayError::Config(format!("{}: mcpServers.{name}: {m}", origin.label));
    if name.is_empty() || name.contains("__") {
        return Err(err(
            "a server name must be non-empty and free of `__`".into()
        ));
    }
    let Value::Object(obj) = value else {
        return Err(err("expected an object".into()));
    };
    let ex = |s: &str| expand(s, lookup).map_err(&err);
    let transport = match (str_field(obj, "type").map_err(&err)?, obj.get("url")) {
        (Some("stdio"), _) | (None, None) => {
            let command = str_field(obj, "command")
                .map_err(&err)?
                .ok_or_else(|| err("a stdio server needs `command`".into()))?;
            Transport::Stdio {
                command: ex(command)?,
                args: string_list(obj, "args")
                    .map_err(&err)?
                    .iter()
                    .map(|a| ex(a))
                    .collect::<Result<_, _>>()?,
                env: string_map(obj, "env", &ex)?,
            }
        }
        (kind @ (Some("http" | "streamable-http" | "sse") | None), _) => {
            let url = str_field(obj, "url")
                .map_err(&err)?
                .ok_or_else(|| err("an HTTP server needs `url`".into()))?;
            let url = ex(url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(err(format!("`{url}` is not an http(s) URL")));
            }
            let headers = string_map(obj, "headers", &ex)?;
            if kind == Some("sse") {
                Transport::Sse { url, headers }
            } else {
                Transport::Http { url, headers }
            }
        }
        (Some(other), _) => {
            return Err(err(format!(
                "unknown type `{other}` (expected stdio, http or sse)"
            )));
        }
    };
    let network = match str_field(obj, "network").map_err(&err)? {
        None | Some("none") => Network::None,
        Some("proxy") => Network::Proxy,
        Some("full") => Network::Full,
        Some(o) => return Err(err(format!("network `{o}`: expected none, proxy or full"))),
    };
    let trusted_level = matches!(origin.kind, Some(SourceKind::User | SourceKind::Managed));
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        network,
        allowed_domains: string_list(obj, "allowedDomains").map_err(&err)?,
        denied_domains: Vec::new(),
        write: bool_field(obj, "write").map_err(&err)?,
        sandbox: match obj.get("sandbox") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err(err("`sandbox` must be true or false".into())),
        },
        trusted: bool_field(obj, "trusted").map_err(&err)? && trusted_level,
        always_load: bool_field(obj, "alwaysLoad").map_err(&err)?,
        call_timeout: ms_field(obj, "timeout", DEFAULT_CALL_TIMEOUT)
            .map_err(&err)?
            .min(MAX_CALL_TIMEOUT),
        startup_timeout: ms_field(obj, "startupTimeout", DEFAULT_STARTUP_TIMEOUT).map_err(&err)?,
        origin,
        waits: None,
        invalid: None,
    })
}

fn str_field<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn bool_field(obj: &Map<String, Value>, key: &str) -> Result<bool, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("`{key}` must be true or false")),
    }
}

/// Milliseconds; values below one second are ignored as in Claude Code.
fn ms_field(obj: &Map<String, Value>, key: &str, default: Duration) -> Result<Duration, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => match v.as_u64() {
            Some(ms) if ms >= 1000 => Ok(Duration::from_millis(ms)),
            Some(_) => Ok(default),
            None => Err(format!("`{key}` must be a number of milliseconds")),
        },
    }
}

fn string_list(obj: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("`{key}` must hold strings only"))
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be an array of strings")),
    }
}

fn string_map(
    obj: &Map<String, Value>,
    key: &str,
    ex: &dyn Fn(&str) -> Result<String, GatewayError>,
) -> Result<BTreeMap<String, String>, GatewayError> {
    let mut out = BTreeMap::new();
    match obj.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let Value::String(v) = v else {
                    return Err(GatewayError::Config(format!(
                        "`{key}.{k}` must be a string"
                    )));
                };
                out.insert(k.clone(), ex(v)?);
            }
        }
        Some(_) => {
            return Err(GatewayError::Config(format!(
                "`{key}` must be an object of strings"
            )));
        }
    }
    Ok(out)
}

/// The directory of the per-user state toolgate keeps for servers (pins, stderr logs).
pub fn state_dir(settings: &Settings) -> Option<PathBuf> {
    settings.config_dir.as_ref().map(|d| d.join("mcp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_variables_and_defaults() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cret");
        assert_eq!(expand("${NOPE:-x}/${EMPTY:-y}", &env).unwrap(), "x/y");
        assert_eq!(expand("$HOME and $", &env).unwrap(), "$HOME and $");
        assert!(expand("${NOPE}", &env).unwrap_err().contains("`NOPE`"));
        assert!(expand("${TOKEN", &env).is_err());
        assert!(expand("${A B}", &env).is_err());
    }

    fn origin() -> Origin {
        Origin {
            label: "test".into(),
            kind: Some(SourceKind::Project),
        }
    }

    #[test]
    fn parses_claude_code_shapes() {
        let v = serde_json::json!({"command": "npx", "args": ["-y", "${TOKEN}"], "env": {"K": "${TOKEN}"}});
        let s = parse_entry("fs", &v, origin(), &env).unwrap();
        assert_eq!(
            s.transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "s3cret".into()],
                env: [("K".to_owned(), "s3cret".to_owned())].into()
            }
        );
        let v = serde_json::json!({"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}});
        let s = parse_entry("gh", &v, origin(), &env).unwrap();
        assert!(
            matches!(s.transport, Transport::Http { ref headers, .. } if headers["Authorization"] == "Bearer s3cret")
        );
        let v = serde_json::json!({"type": "sse", "url": "http://x/sse"});
        assert_eq!(
            parse_entry("old", &v, origin(), &env)
                .unwrap()
                .transport
                .kind(),
            "sse"
        );
    }

    #[test]
    fn refuses_bad_entries_and_project_trust_marks() {
        let bad = [
            serde_json::json!({"type": "ws", "url": "ws://x"}),
            serde_json::json!({"args": ["x"]}),
            serde_json::json!({"type": "http", "url": "file:///etc/passwd"}),
            serde_json::json!({"command": "x", "args": "y"}),
            serde_json::json!({"command": "x", "network": "some"}),
            serde_json::json!("npx"),
        ];
        for v in bad {
            assert!(parse_entry("s", &v, origin(), &env).is_err(), "{v}");
        }
        assert!(parse_entry("a__b", &serde_json::json!({"command": "x"}), origin(), &env).is_err());
        let v = serde_json::json!({"command": "x", "alwaysLoad": "yes"});
        assert!(
            parse_entry("s", &v, origin(), &env)
                .unwrap_err()
                .to_string()
                .contains("`alwaysLoad` must be true or false")
        );
        let v = serde_json::json!({"type": "http", "url": "https://x/mcp", "alwaysLoad": true});
        assert!(parse_entry("s", &v, origin(), &env).unwrap().always_load);
        let v = serde_json::json!({"command": "x"});
        assert!(!parse_entry("s", &v, origin(), &env).unwrap().always_load);
        let v = serde_json::json!({"command": "x", "trusted": true});
        assert!(!parse_entry("s", &v, origin(), &env).unwrap().trusted);
        let user = Origin {
            label: "user".into(),
            kind: Some(SourceKind::User),
        };
        assert!(parse_entry("s", &v, user, &env).unwrap().trusted);
    }

    fn settings_with(dir: &Path, trusted: bool) -> Settings {
        let mut s = Settings {
            project: dir.to_path_buf(),
            trusted,
            ..Settings::default()
        };
        s.sources.push(toolgate_policy::settings::SourceInfo {
            kind: SourceKind::User,
            label: "user settings".into(),
            path: None,
            anchor: dir.to_path_buf(),
            claude: false,
        });
        s.mcp_servers.insert(
            "both".into(),
            toolgate_policy::settings::Sourced {
                value: serde_json::json!({"command": "from-settings"}),
                source: 0,
                active: true,
                note: None,
            },
        );
        s
    }

    #[test]
    fn settings_hide_mcp_json_servers_and_mcp_json_waits_for_trust() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"both": {"command": "from-file"}, "only": {"command": "x"}}}"#,
        )
        .unwrap();
        let got = servers_with(&settings_with(dir.path(), false), false, &env).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].transport.target(), "from-settings");
        assert!(got[0].waits.is_none());
        assert_eq!(got[1].name, "only");
        assert!(got[1].waits.is_some());
        assert_eq!(got[1].sandbox, Some(false));
        let got = servers_with(&settings_with(dir.path(), true), false, &env).unwrap();
        assert!(got[1].waits.is_none());
    }
}
