//! `toolgate mcp add` / `remove`: one `mcpServers` entry written into a settings file (or a
//! `.mcp.json`), every other key kept as it was, the file replaced atomically.

use std::io::Write as _;
use std::path::Path;

use serde_json::{Map, Value};

use crate::GatewayError;

fn err(path: &Path, m: impl std::fmt::Display) -> GatewayError {
    GatewayError::Config(format!("{}: {m}", path.display()))
}

fn read_object(path: &Path) -> Result<Map<String, Value>, GatewayError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => return Err(err(path, e)),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(err(path, "expected a JSON object")),
        Err(e) => Err(GatewayError::Config(format!(
            "{}:{}:{}: {e}",
            path.display(),
            e.line(),
            e.column()
        ))),
    }
}

fn write_object(path: &Path, doc: &Map<String, Value>) -> Result<(), GatewayError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
    let mut text = serde_json::to_string_pretty(doc).map_err(|e| err(path, e))?;
    text.push('\n');
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| err(path, e))?;
    tmp.write_all(text.as_bytes()).map_err(|e| err(path, e))?;
    tmp.as_file().sync_all().map_err(|e| err(path, e))?;
    tmp.persist(path).map_err(|e| err(path, e.error))?;
    Ok(())
}

/// Adds (or replaces) server `name` in `path`'s `mcpServers`. The entry is checked first:
/// a malformed one changes nothing.
pub fn add_server(path: &Path, name: &str, entry: Value) -> Result<bool, GatewayError> {
    let origin = crate::Origin {
        label: path.display().to_string(),
        kind: None,
    };
    // Checked with every variable set, so a `${VAR}` is kept for run time.
    crate::config::parse_entry(name, &entry, origin, &|_| Some("x".into()))?;
    let mut doc = read_object(path)?;
    let servers = doc
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(err(path, "`mcpServers` is not an object"));
    };
    let replaced = servers.insert(name.to_owned(), entry).is_some();
    write_object(path, &doc)?;
    Ok(replaced)
}

/// Removes server `name` from `path`'s `mcpServers`; `false` when it was not there.
pub fn remove_server(path: &Path, name: &str) -> Result<bool, GatewayError> {
    let mut doc = read_object(path)?;
    let removed = match doc.get_mut("mcpServers") {
        Some(Value::Object(servers)) => servers.remove(name).is_some(),
        _ => false,
    };
    if removed {
        write_object(path, &doc)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_keeps_other_keys_and_refuses_bad_entries() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(&p, r#"{"permissions": {"allow": ["Read"]}, "zz": 1}"#).unwrap();
        add_server(&p, "fs", serde_json::json!({"command": "npx"})).unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v["permissions"]["allow"][0], "Read");
        assert_eq!(v["zz"], 1);
        assert_eq!(v["mcpServers"]["fs"]["command"], "npx");
        let before = std::fs::read_to_string(&p).unwrap();
        assert!(add_server(&p, "bad", serde_json::json!({"type": "ws"})).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), before);
        assert!(remove_server(&p, "fs").unwrap());
        assert!(!remove_server(&p, "fs").unwrap());
    }
}
