use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Risk classes, ordered from harmless to catastrophic so that `max` aggregates
/// strictest-wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads only.
    ReadOnly,
    /// Changes things inside the workspace in ordinary ways.
    Moderate,
    /// Could do real damage; a person should confirm.
    High,
    /// Denied in every mode (only managed settings can lift it).
    Catastrophic,
}

/// How a call touches a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Reads it.
    Read,
    /// Creates or changes it.
    Write,
    /// Removes it.
    Delete,
}

/// A path a call touches, resolved as far as the analysis could.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathFact {
    /// Absolute, normalised path (symlinks resolved where the path exists).
    pub path: PathBuf,
    /// How the call touches it.
    pub access: Access,
    /// Whether the path is inside the session's roots.
    pub inside_roots: bool,
    /// Whether the path is a protected path (`.git/`, shell rc files, …).
    pub protected: bool,
    /// What of the tree beneath `path` (a directory) the call touches the same way:
    /// `grep -r KEY .` reads every file below `.`, `rm -r d` deletes them.
    #[serde(default, skip_serializing_if = "Beneath::is_nothing")]
    pub beneath: Beneath,
    /// With `beneath`: only files whose name matches one of these globs are touched
    /// (`grep -r --include='*.py'`, `rg -g '*.py'`); empty: every file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beneath_only: Vec<String>,
}

/// How much of the tree below a directory a call touches along with it, ordered by reach
/// (`max` of two uses of one directory is what they touch together).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Beneath {
    /// Only the path itself.
    #[default]
    Nothing,
    /// Everything below it except hidden (dot-named) files and directories and what
    /// `.gitignore`/`.ignore` files exclude, as `rg` and `ag` search by default.
    Visible,
    /// Every file and directory below it.
    Everything,
}

impl Beneath {
    /// Whether only the path itself is touched.
    pub fn is_nothing(&self) -> bool {
        *self == Beneath::Nothing
    }
}

/// One subcommand of a shell command, normalised as the shell would see it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CommandFact {
    /// The words after quote removal and wrapper stripping; `argv[0]` is the program.
    pub argv: Vec<String>,
    /// The words joined with single spaces, which Bash rules match against.
    pub text: String,
    /// The wrappers stripped in front of the program (`sudo`, `timeout`, `xargs`, …). Deny
    /// rules look past all of them; an allow rule only past the ones Claude Code strips.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wrappers: Vec<String>,
    /// Names of the leading `NAME=value` assignments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// The analyzer's risk for this subcommand (`None`: no analyzer looked at it, as for a
    /// fallback split).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    /// The analyzer found that this subcommand's program only reads: one of its read-only
    /// table, without an option that writes or runs code, and no risk found. The files its
    /// redirections write (`echo hi > out.txt`) are not counted here: they are path facts of
    /// their own, which the policy checks. `false` when unknown, so a missing verdict never
    /// approves anything.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// The same command with the options that only choose *where* or *how* it runs removed
    /// and inline aliases expanded (`git -C . push origin main` → `git push origin main`,
    /// `git -c alias.p='push --force' p` → `git push --force`, `docker --context x rm c` →
    /// `docker rm c`), when that differs from `argv`. Deny and ask rules match either form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalized: Option<Vec<String>>,
}

/// A risk finding with a reason a human can read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// How risky.
    pub risk: Risk,
    /// The category (`catastrophic_deletion`, `remote_code_execution`, …).
    pub category: String,
    /// Names the subcommand and the rule.
    pub reason: String,
}

/// Everything stage 4 learned about a call, for the policy stage to read.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CallFacts {
    /// The subject string rules match against (command, path, URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Paths the call reads, writes or deletes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathFact>,
    /// Shell subcommands, for per-subcommand rule matching.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandFact>,
    /// URLs or hosts the call reaches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
    /// Risk findings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Something could not be resolved statically; never treat as safe.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub opaque: bool,
}

impl CallFacts {
    /// The highest risk among the findings, if any.
    pub fn max_risk(&self) -> Option<Risk> {
        self.findings.iter().map(|f| f.risk).max()
    }
}
