//! toolgate-policy: the permission engine. It decides whether a tool call may run (allow),
//! needs a person (ask) or must not run (deny), says which layer, rule and settings source
//! decided, and answers asks through prompters that can save "allow always" rules.
//!
//! Settings are Claude Code compatible (`permissions.allow/ask/deny`, `defaultMode`,
//! `additionalDirectories`, hooks, sandbox) with toolgate extensions under `toolgate`
//! (profiles, constraints, the auto-mode classifier, the managed risk floor). Everything is
//! parsed and compiled once into an [`Engine`]; a decision looks up only the rules that can
//! apply, after a bounded look at the file system (globs, symlinks, what a recursive command
//! reaches).
//!
//! # Deciding a call
//!
//! ```
//! use std::path::Path;
//! use serde_json::json;
//! use toolgate_policy::{Engine, PolicyRequest};
//! use toolgate_protocol::{CallFacts, CommandFact, Decision, Layer, PermissionMode, Subject};
//!
//! let engine = Engine::builder()
//!     .cwd("/work")
//!     .allow("Bash(npm test)")
//!     .deny("Bash(rm -rf *)")
//!     .build()
//!     .unwrap();
//!
//! // The shell analyzer fills `commands` with every leaf subcommand.
//! let facts = CallFacts {
//!     commands: vec![
//!         CommandFact { argv: vec!["npm".into(), "test".into()], text: "npm test".into(), ..Default::default() },
//!         CommandFact { argv: vec!["rm".into(), "-fr".into(), "dist".into()], text: "rm -fr dist".into(), ..Default::default() },
//!     ],
//!     ..CallFacts::default()
//! };
//! let input = json!({"command": "npm test && rm -fr dist"});
//! let subject = Subject::Command { field: "command".into() };
//! let roots = [Path::new("/work")];
//! let req = PolicyRequest {
//!     tool: "Bash",
//!     subject: &subject,
//!     annotations: Default::default(),
//!     input: &input,
//!     facts: &facts,
//!     mode: PermissionMode::Default,
//!     hook: None,
//!     cwd: Path::new("/work"),
//!     roots: &roots,
//! };
//! let decided = engine.decide(&req);
//! // Any subcommand matching a deny rule denies the whole; flags are normalised.
//! assert_eq!(decided.verdict.decision, Decision::Deny);
//! assert_eq!(decided.verdict.layer, Layer::Rule);
//! assert_eq!(decided.verdict.rule.as_deref(), Some("Bash(rm -rf *)"));
//! println!("{}", decided.explain());
//! ```
//!
//! # Loading settings
//!
//! ```no_run
//! use toolgate_policy::settings::{self, LoadOptions};
//!
//! let mut opts = LoadOptions::from_env("/work");
//! opts.cli.deny.push("Bash(git push *)".into());
//! let settings = settings::load(&opts)?; // a broken file is an error with line and column
//! let profile = None;
//! let mode = settings.resolve_mode(profile)?;
//! let engine = settings.engine_builder(profile).build()?;
//! print!("{}", settings.render(engine.warnings()));
//! # let _ = mode;
//! # Ok::<(), toolgate_policy::PolicyError>(())
//! ```
//!
//! # Rule syntax (Claude Code's, compat §3)
//!
//! | rule | matches |
//! |---|---|
//! | `Bash`, `Bash(*)` | every command |
//! | `Bash(npm run build)` | exactly that command |
//! | `Bash(npm *)`, `Bash(git * main)` | `*` = anything; a trailing ` *` keeps a word boundary (`ls *` ≠ `lsof`) |
//! | `Bash(npm run test:*)` | legacy prefix form of `npm run test *` |
//! | `Read(./.env)`, `Edit(src/**)`, `Read(//etc/**)`, `Read(~/.ssh/**)`, `Edit(/docs/**)` | gitignore-style paths: cwd, any depth (bare names), absolute, home, settings source |
//! | `WebFetch(domain:*.example.com)` | hosts, label-aware wildcards |
//! | `mcp__github`, `mcp__github__*`, `mcp__github__get_issue` | MCP servers and tools |
//! | `Agent(model:opus)`, `Bash(run_in_background:true)` | a top-level input field (deny/ask only) |
//! | `mcp__*`, `*` | tool-name globs (deny/ask; allow only after `mcp__server__`) |
//!
//! Bash rules are matched per subcommand of the shell analyzer's output: an allow needs every
//! subcommand allowed; one denied subcommand denies the whole. See `docs/permissions.md`.
#![deny(missing_docs)]

pub mod approvals;
mod check;
pub mod classifier;
pub mod classifier_model;
pub mod constraints;
mod decide;
mod engine;
mod error;
pub mod floor;
pub mod modes;
mod patterns;
pub mod profiles;
pub mod prompt;
pub mod rate;
mod rules;
pub mod settings;
mod stage;
mod trace;
mod view;

pub use check::parse_check_target;
pub use classifier::{
    AutoReviewer, BuiltinClassifier, Classifier, ClassifierConfig, ClassifierInput,
    ClassifierVerdict, classifier_from,
};
pub use classifier_model::{HttpTransport, ModelClassifier, ModelClient, ModelError, Transport};
pub use constraints::Constraints;
pub use engine::{Engine, EngineBuilder, PolicyRequest, RoomPathLimit, RuleInput, Uncovered};
pub use error::PolicyError;
pub use patterns::CommandPatterns;
pub use profiles::{Profile, ProfileConfig};
pub use prompt::{
    DenyAllPrompter, JsonLinesPrompter, JsonLinesSource, LazyJsonLinesPrompter, PolicyPrompter,
    TerminalPrompter,
};
pub use rules::domain::url_host;
pub use rules::index::MAX_BENEATH_ENTRIES;
pub use rules::split::{Split, split_command};
pub use rules::{KNOWN_TOOLS, READ_TOOLS, RuleKind, WRITE_TOOLS};
pub use settings::Settings;
pub use stage::{EngineConstraints, EnginePolicy, EnginePrompter};
pub use trace::{Decided, FactsSummary, Outcome, Step, Trace};
