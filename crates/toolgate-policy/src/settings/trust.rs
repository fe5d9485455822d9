//! Workspace trust: `toolgate trust [DIR]` records the project's real path and a hash of its
//! settings files and of the files that steer the agent (skills, agent definitions: see
//! [`steering_files`]) in `$XDG_CONFIG_HOME/toolgate/trusted.json`. What a project's settings
//! could widen (allow rules, additional directories, hooks, env, sandbox exceptions, a wider
//! mode, profiles, …; [`super::keys::KEYS`] says which, key by key) and its steering files
//! apply only while the record matches; a changed file needs trust again. What only narrows
//! (deny and ask rules among it) never waits.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::load::{project_files, read_optional};
use crate::error::PolicyError;

/// The trust store file name inside toolgate's configuration directory.
pub const TRUST_FILE: &str = "trusted.json";

/// One trusted project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustRecord {
    /// SHA-256 over the project's settings files (see [`project_hash`]).
    pub hash: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    version: u32,
    #[serde(default)]
    projects: BTreeMap<String, TrustRecord>,
}

/// Whether a project is trusted, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustStatus {
    /// Trusted; the settings files match the record.
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, but a settings file changed since.
    Changed,
}

/// The trust store.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

/// The project's real path, the key of its trust record.
pub fn real_project(project: &Path) -> Result<PathBuf, PolicyError> {
    project.canonicalize().map_err(|e| PolicyError::Trust {
        path: project.to_path_buf(),
        message: format!("cannot resolve the project directory: {e}"),
    })
}

/// Where a project keeps skills (folders with a `SKILL.md`): files that steer the agent,
/// so they wait for trust like its settings.
pub const PROJECT_SKILL_DIRS: [&str; 2] = [".claude/skills", ".toolgate/skills"];

/// Where a project keeps sub-agent definitions (`NAME.md`): they steer the agent too.
pub const PROJECT_AGENT_DIRS: [&str; 2] = [".claude/agents", ".toolgate/agents"];

/// The project's MCP server list (Claude Code's format): its servers are programs toolgate
/// would start, so it waits for trust like the settings.
pub const PROJECT_MCP_FILE: &str = ".mcp.json";

/// At most this many steering files of a project are looked at (and trusted); a project
/// with more is a mistake or an attack on start-up time, and the rest are ignored.
pub const MAX_STEERING_FILES: usize = 256;

/// The project's files that steer the agent besides its settings, sorted: each skill's
/// `SKILL.md`, each agent definition, and `.mcp.json`. A skill or agent added after `toolgate trust`
/// changes the hash, so it waits for trust again.
pub fn steering_files(project: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut list = |dir: PathBuf, pick: &dyn Fn(&Path) -> Option<PathBuf>| {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| pick(&e.path()))
            .collect();
        found.sort();
        out.extend(found);
    };
    for dir in PROJECT_SKILL_DIRS {
        list(project.join(dir), &|p: &Path| {
            let f = p.join("SKILL.md");
            f.is_file().then_some(f)
        });
    }
    for dir in PROJECT_AGENT_DIRS {
        list(project.join(dir), &|p: &Path| {
            (p.extension().is_some_and(|e| e == "md") && p.is_file()).then(|| p.to_path_buf())
        });
    }
    let mcp = project.join(PROJECT_MCP_FILE);
    if mcp.is_file() {
        out.push(mcp);
    }
    out.truncate(MAX_STEERING_FILES);
    out
}

/// SHA-256 over each project settings file's path and contents (or an absence marker), in a
/// fixed order, then over each steering file ([`steering_files`]) that exists, so that
/// creating, changing or deleting any of them changes the hash.
pub fn project_hash(project: &Path) -> Result<String, PolicyError> {
    let mut h = Sha256::new();
    for f in steering_files(project) {
        h.update(b"steering\0");
        h.update(f.to_string_lossy().as_bytes());
        h.update([0]);
        h.update(&std::fs::read(&f).map_err(|e| PolicyError::Trust {
            path: f.clone(),
            message: format!("cannot read: {e}"),
        })?);
        h.update([0]);
    }
    for f in project_files(project) {
        h.update(f.to_string_lossy().as_bytes());
        h.update([0]);
        match read_optional(&f)? {
            Some(text) => {
                h.update(b"present\0");
                h.update(text.as_bytes());
            }
            None => h.update(b"absent\0"),
        }
        h.update([0]);
    }
    Ok(hex::encode(h.finalize()))
}

impl TrustStore {
    /// The store in toolgate's configuration directory.
    pub fn new(config_dir: &Path) -> Self {
        Self {
            path: config_dir.join(TRUST_FILE),
        }
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn load(&self) -> Result<StoreFile, PolicyError> {
        match read_optional(&self.path)? {
            None => Ok(StoreFile {
                version: 1,
                projects: BTreeMap::new(),
            }),
            Some(text) => {
                serde_json::from_str(&text).map_err(|e| PolicyError::json(&self.path, &e))
            }
        }
    }

    fn save(&self, store: &StoreFile) -> Result<(), PolicyError> {
        let werr = |message: String| PolicyError::Trust {
            path: self.path.clone(),
            message,
        };
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        std::fs::create_dir_all(dir)
            .map_err(|e| werr(format!("cannot create {}: {e}", dir.display())))?;
        let mut text = serde_json::to_string_pretty(store).map_err(|e| werr(e.to_string()))?;
        text.push('\n');
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| werr(e.to_string()))?;
        tmp.write_all(text.as_bytes())
            .map_err(|e| werr(e.to_string()))?;
        tmp.as_file().sync_all().map_err(|e| werr(e.to_string()))?;
        tmp.persist(&self.path)
            .map_err(|e| werr(e.error.to_string()))?;
        Ok(())
    }

    /// The project's status.
    pub fn status(&self, project: &Path) -> Result<TrustStatus, PolicyError> {
        let key = real_project(project)?;
        let store = self.load()?;
        Ok(
            match store.projects.get(&key.to_string_lossy().into_owned()) {
                None => TrustStatus::Untrusted,
                Some(r) if r.hash == project_hash(&key)? => TrustStatus::Trusted,
                Some(_) => TrustStatus::Changed,
            },
        )
    }

    /// Trusts the project as its settings files are now.
    pub fn trust(&self, project: &Path) -> Result<TrustRecord, PolicyError> {
        let key = real_project(project)?;
        let record = TrustRecord {
            hash: project_hash(&key)?,
        };
        let mut store = self.load()?;
        store.version = 1;
        store
            .projects
            .insert(key.to_string_lossy().into_owned(), record.clone());
        self.save(&store)?;
        Ok(record)
    }

    /// Removes the project's record. Returns whether there was one.
    pub fn untrust(&self, project: &Path) -> Result<bool, PolicyError> {
        let key = real_project(project)?;
        let mut store = self.load()?;
        let had = store
            .projects
            .remove(&key.to_string_lossy().into_owned())
            .is_some();
        if had {
            self.save(&store)?;
        }
        Ok(had)
    }

    /// Runs `change` (which edits a project settings file on the user's behalf, e.g. an
    /// "allow always" approval) and keeps the project trusted if it was trusted before.
    pub fn keep_trust_across<T>(
        &self,
        project: &Path,
        change: impl FnOnce() -> Result<T, PolicyError>,
    ) -> Result<T, PolicyError> {
        let was = self.status(project)? == TrustStatus::Trusted;
        let out = change()?;
        if was {
            self.trust(project)?;
        }
        Ok(out)
    }
}
