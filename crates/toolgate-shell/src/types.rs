//! The public result types of [`crate::analyze`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use toolgate_protocol::{CallFacts, CommandFact, Finding, PathFact, Risk};

use crate::limits::Limits;

/// Where and for whom a command is analysed.
#[derive(Debug, Clone)]
pub struct Context {
    /// Working directory the command starts in (absolute).
    pub cwd: PathBuf,
    /// The session's roots (workspace and additional directories).
    pub roots: Vec<PathBuf>,
    /// The user's home directory, for `~` and `$HOME`.
    pub home: Option<PathBuf>,
    /// Budgets.
    pub limits: Limits,
    /// Reads a file inside the roots that the command sources (`. ./env/dev.sh`), so the
    /// analysis can walk it; `None`: sourced files are not read (the crate does no I/O
    /// itself). The reader should return `None` for anything it will not read.
    pub sources: Option<SourceReader>,
}

/// A caller-supplied reader of the workspace files a command sources.
pub type SourceReader = fn(&std::path::Path) -> Option<String>;

impl PartialEq for Context {
    fn eq(&self, other: &Self) -> bool {
        let same_reader = match (self.sources, other.sources) {
            (Some(a), Some(b)) => std::ptr::fn_addr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        self.cwd == other.cwd
            && self.roots == other.roots
            && self.home == other.home
            && self.limits == other.limits
            && same_reader
    }
}

impl Eq for Context {}

impl Default for Context {
    fn default() -> Self {
        Self {
            cwd: PathBuf::from("/"),
            roots: Vec::new(),
            home: None,
            limits: Limits::default(),
            sources: None,
        }
    }
}

impl Context {
    /// A context whose only root is `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let cwd = cwd.into();
        Self {
            roots: vec![cwd.clone()],
            cwd,
            ..Self::default()
        }
    }

    /// Sets the home directory.
    #[must_use]
    pub fn with_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }

    /// Lets the analysis read the files inside the roots that a command sources.
    #[must_use]
    pub fn with_sources(mut self, reader: SourceReader) -> Self {
        self.sources = Some(reader);
        self
    }

    /// Adds a root.
    #[must_use]
    pub fn with_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.roots.push(root.into());
        self
    }
}

/// How a leaf command was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Written at the top level of the command.
    Top,
    /// Inside `$(…)` or backticks.
    Substitution,
    /// Inside `<(…)` or `>(…)`.
    ProcessSubstitution,
    /// The body of `bash -c`, `sh -c`, `su -c`, `flock -c`, `watch`, `ssh host …`.
    ShellC,
    /// The argument of `eval`.
    Eval,
    /// Text piped or fed (here-doc, here-string) into a shell.
    PipeToShell,
    /// Here-document body run by a shell.
    Heredoc,
    /// The command run by `xargs` or `parallel`.
    Xargs,
    /// The command run by `find -exec/-execdir/-ok/-okdir`.
    FindExec,
    /// A shell function body, at its definition or at a call.
    Function,
    /// Inside `coproc`.
    Coproc,
    /// An equivalent shell command for a call found in an interpreter one-liner
    /// (`shutil.rmtree(p)` → `rm -rf p`).
    Interpreter,
    /// The inner command of a runner that is not stripped for rule matching
    /// (`docker exec`, `kubectl exec`, `uv run`, `npx` …).
    Runner,
    /// A command given as an option's value or trailing arguments of another program
    /// (`tar --to-command`, `ssh -o ProxyCommand`, `git rebase --exec`, `man -P`,
    /// `git bisect run`, a `sed` script's `e`).
    Option,
    /// Code the command stores to run later: text written to a shell startup file or a git
    /// hook, a crontab line.
    Persisted,
    /// A command run on another host (`ssh host CMD`): its paths are that host's, not
    /// this machine's, and anything it changes is remote state.
    Remote,
}

/// A redirection of one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redirect {
    /// The file descriptor, if written (`2>` → 2).
    pub fd: Option<u32>,
    /// The operator: `<`, `>`, `>>`, `>|`, `<>`, `&>`, `&>>`, `<&`, `>&`, `<<`, `<<<`.
    pub op: String,
    /// The target after expansion (a file name, an fd number, or the here-doc delimiter).
    pub target: String,
    /// The target could not be fully resolved.
    pub dynamic: bool,
}

/// One leaf command, normalised as the shell would run it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimpleCommand {
    /// Words after expansion and wrapper stripping; `argv[0]` is the program as written.
    pub argv: Vec<String>,
    /// Basename of `argv[0]` (`/bin/rm` → `rm`).
    pub program: String,
    /// `argv` joined by single spaces: what Bash permission rules match.
    pub text: String,
    /// Wrappers stripped in front of the program (`sudo`, `timeout`, `env`, …).
    pub wrappers: Vec<String>,
    /// Leading `NAME=value` assignments.
    pub env: Vec<(String, String)>,
    /// Redirections, including those of enclosing compound commands.
    pub redirects: Vec<Redirect>,
    /// How the command was reached.
    pub origin: Origin,
    /// Paths it reads, writes or deletes (absolute, lexically normalised).
    pub paths: Vec<PathFact>,
    /// URLs and hosts it reaches.
    pub network: Vec<String>,
    /// Its risk (the highest of its findings, else its baseline).
    pub risk: Risk,
    /// The program only reads: one of the read-only table without an option that writes or
    /// runs code, nothing it opens is written, and no finding. What its redirections write
    /// (`echo hi > out.txt`) is left out here: those files are [`SimpleCommand::paths`] of
    /// their own. Whether the whole call is read-only also needs [`Analysis::opaque`] to be
    /// empty ([`Analysis::is_read_only`]).
    pub read_only: bool,
    /// `argv` with the options that only choose where or how the program runs removed and
    /// inline aliases expanded (`git -C . push` → `git push`), when that differs from `argv`.
    pub normalized: Option<Vec<String>>,
}

/// A recognised long-running server or watcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerMatch {
    /// Identifier of the server rule (`npm_dev`, `vite`, `uvicorn`, …).
    pub rule: String,
    /// The command text that matched.
    pub command: String,
    /// The command is sent to the background with `&`.
    pub background: bool,
}

/// The target of a `cd`, `pushd` or `popd` in the command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CdTarget {
    /// The resolved target, if static.
    pub path: Option<PathBuf>,
    /// Whether the target is inside the roots (false when unknown).
    pub inside_roots: bool,
}

/// Everything learned about one shell command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Analysis {
    /// Every leaf command, nested ones included.
    pub commands: Vec<SimpleCommand>,
    /// Risk findings, each naming the subcommand and the rule.
    pub findings: Vec<Finding>,
    /// The highest risk found (`ReadOnly` when there is nothing).
    pub risk: Risk,
    /// Why parts of the command could not be resolved; non-empty means never safe.
    pub opaque: Vec<String>,
    /// A long-running server or watcher, if one was recognised.
    pub server: Option<ServerMatch>,
    /// The last directory change, if any.
    pub cd: Option<CdTarget>,
}

impl Analysis {
    /// Whether nothing in the command changes anything and nothing is opaque.
    pub fn is_read_only(&self) -> bool {
        self.opaque.is_empty() && self.risk == Risk::ReadOnly
    }

    /// The facts for the policy stage: commands, merged paths, URLs, findings, opacity.
    pub fn facts(&self) -> CallFacts {
        let mut paths: Vec<PathFact> = Vec::new();
        let mut urls: Vec<String> = Vec::new();
        for c in &self.commands {
            for p in &c.paths {
                if !paths.contains(p) {
                    paths.push(p.clone());
                }
            }
            for u in &c.network {
                if !urls.contains(u) {
                    urls.push(u.clone());
                }
            }
        }
        CallFacts {
            subject: None,
            paths,
            commands: self
                .commands
                .iter()
                .map(|c| CommandFact {
                    argv: c.argv.clone(),
                    text: c.text.clone(),
                    wrappers: c.wrappers.clone(),
                    env: c.env.iter().map(|(name, _)| name.clone()).collect(),
                    risk: Some(c.risk),
                    read_only: c.read_only,
                    normalized: c.normalized.clone(),
                })
                .collect(),
            urls,
            findings: self.findings.clone(),
            opaque: !self.opaque.is_empty(),
        }
    }
}
