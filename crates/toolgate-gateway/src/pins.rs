//! Pinning: each upstream tool definition is fingerprinted when first approved; a
//! definition that changes afterwards (a "rug pull") is refused until the user approves it
//! with `toolgate mcp approve <server>`.
//!
//! The store lives in the user's configuration directory, never in the workspace, so a
//! repository cannot ship its own approvals.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::GatewayError;

/// The store's file name in the gateway's state directory.
pub const PIN_FILE: &str = "pins.json";

/// The fingerprint of a tool definition: SHA-256 over its name, description, schemas and
/// annotations as canonical JSON (object keys sorted).
pub fn fingerprint(tool: &rmcp::model::Tool) -> String {
    let def = json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": Value::Object((*tool.input_schema).clone()),
        "outputSchema": tool.output_schema.as_ref().map(|s| Value::Object((**s).clone())),
        "annotations": tool.annotations,
    });
    let mut text = String::new();
    canonical(&def, &mut text);
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            out.push('{');
            for (i, (k, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// What the pins say about one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinState {
    /// Approved as it is.
    Approved,
    /// Not approved yet (the server's pins do not name it) or changed since approval.
    Changed {
        /// The approved fingerprint, if the tool had one.
        was: Option<String>,
        /// The current fingerprint.
        now: String,
    },
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PinFile {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, BTreeMap<String, String>>,
}

/// The pin store (`<config dir>/mcp/pins.json`).
#[derive(Debug, Clone)]
pub struct PinStore {
    path: PathBuf,
}

impl PinStore {
    /// The store in `dir`.
    pub fn new(dir: &Path) -> Self {
        Self {
            path: dir.join(PIN_FILE),
        }
    }

    /// The key of a server's record: the project and the server name, so approving a
    /// server in one project does not approve a same-named one elsewhere.
    pub fn key(project: &Path, server: &str) -> String {
        format!("{}#{server}", project.display())
    }

    fn load(&self) -> Result<PinFile, GatewayError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| GatewayError::Pins(format!("{}: {e}", self.path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(PinFile {
                version: 1,
                ..PinFile::default()
            }),
            Err(e) => Err(GatewayError::Pins(format!("{}: {e}", self.path.display()))),
        }
    }

    fn save(&self, file: &PinFile) -> Result<(), GatewayError> {
        let err = |e: std::io::Error| GatewayError::Pins(format!("{}: {e}", self.path.display()));
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(err)?;
        let text = serde_json::to_string_pretty(file).map_err(|e| err(std::io::Error::other(e)))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
        tmp.write_all(text.as_bytes()).map_err(err)?;
        tmp.write_all(b"\n").map_err(err)?;
        tmp.as_file().sync_all().map_err(err)?;
        tmp.persist(&self.path).map_err(|e| err(e.error))?;
        Ok(())
    }

    /// Checks `tools` (name, fingerprint) against the server's record. A server seen for the
    /// first time is pinned as it is (approving a server approves what it offers then);
    /// afterwards a new or changed tool waits for [`PinStore::approve`].
    pub fn check(
        &self,
        key: &str,
        tools: &[(String, String)],
    ) -> Result<BTreeMap<String, PinState>, GatewayError> {
        let mut file = self.load()?;
        let Some(record) = file.servers.get(key) else {
            let record = tools.iter().cloned().collect();
            file.servers.insert(key.to_owned(), record);
            self.save(&file)?;
            return Ok(tools
                .iter()
                .map(|(n, _)| (n.clone(), PinState::Approved))
                .collect());
        };
        Ok(tools
            .iter()
            .map(|(name, fp)| {
                let state = match record.get(name) {
                    Some(pinned) if pinned == fp => PinState::Approved,
                    was => PinState::Changed {
                        was: was.cloned(),
                        now: fp.clone(),
                    },
                };
                (name.clone(), state)
            })
            .collect())
    }

    /// Records `tools` as the approved definitions of the server, replacing its record.
    pub fn approve(&self, key: &str, tools: &[(String, String)]) -> Result<(), GatewayError> {
        let mut file = self.load()?;
        file.servers
            .insert(key.to_owned(), tools.iter().cloned().collect());
        self.save(&file)
    }

    /// Forgets a server's record.
    pub fn forget(&self, key: &str) -> Result<(), GatewayError> {
        let mut file = self.load()?;
        if file.servers.remove(key).is_some() {
            self.save(&file)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_use_pins_then_changes_wait() {
        let dir = tempfile::tempdir().unwrap();
        let store = PinStore::new(&dir.path().join("mcp"));
        let v1 = vec![("t".to_owned(), "a".to_owned())];
        assert_eq!(store.check("k", &v1).unwrap()["t"], PinState::Approved);
        let v2 = vec![
            ("t".to_owned(), "b".to_owned()),
            ("n".to_owned(), "c".to_owned()),
        ];
        let states = store.check("k", &v2).unwrap();
        assert!(matches!(&states["t"], PinState::Changed { was: Some(w), .. } if w == "a"));
        assert!(matches!(&states["n"], PinState::Changed { was: None, .. }));
        store.approve("k", &v2).unwrap();
        assert!(
            store
                .check("k", &v2)
                .unwrap()
                .values()
                .all(|s| *s == PinState::Approved)
        );
    }

    #[test]
    fn fingerprint_ignores_key_order_but_not_content() {
        let mk = |schema: Value, desc: &str| {
            let Value::Object(m) = schema else {
                unreachable!()
            };
            rmcp::model::Tool::new("t", desc.to_owned(), std::sync::Arc::new(m))
        };
        let a = mk(json!({"type": "object", "properties": {}}), "d");
        let b = mk(json!({"properties": {}, "type": "object"}), "d");
        let c = mk(json!({"type": "object", "properties": {}}), "d2");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }
}
