//! The path-class table: which paths are **protected** (configuration that runs code or holds
//! trust: writing it is never auto-approved), **secret** (credentials: reading them asks,
//! the sandbox hides them) or **personal** (private data in the home directory).
//!
//! This is the one copy of that knowledge. The file tools, the shell analyzer, the permission
//! engine, `toolgate hook` and the sandbox all read [`PATH_CLASSES`] through [`classify`] (or,
//! for the sandbox's room, through each entry's [`InRoom`]), so a path cannot be protected in
//! one layer and writable in the next.
//!
//! # Matching
//!
//! Name patterns ([`Pattern::Dir`], [`Pattern::File`], [`Pattern::Glob`]) match the
//! components of the path *below its anchor*: the deepest root of the session, or the home
//! directory, that contains the path (all components when neither does). So `.git` protects
//! every repository's `.git` below the workspace, while a workspace that itself lives under
//! `~/.cargo/proj` is not protected as a whole — only `~/.cargo/config.toml` and its siblings
//! are. [`Pattern::Home`] and [`Pattern::Abs`] are anchored at home and `/`. Names compare
//! ASCII case-insensitively (globs and the names of home entries below the home directory
//! too): on a case-insensitive file system `.GIT/hooks` is `.git/hooks`.
//!
//! Every entry carries paths it must match and look-alikes it must not (home is `/home/u`,
//! the workspace root `/w`); one test walks them all, and the consumers' own tests walk the
//! same examples through their front doors.
//!
//! ```
//! use std::path::Path;
//! use toolgate_protocol::paths::{Class, classify};
//!
//! let roots = [Path::new("/home/u/.cargo/proj")];
//! let home = Some(Path::new("/home/u"));
//! let c = classify(Path::new("/home/u/.cargo/proj/src/lib.rs"), &roots, home);
//! assert!(c.protected.is_none());
//! let c = classify(Path::new("/home/u/.cargo/config.toml"), &roots, home);
//! assert_eq!(c.protected.map(|e| e.kind), Some("build tool configuration"));
//! let c = classify(Path::new("/home/u/.ssh/id_ed25519"), &roots, home);
//! assert!(c.secret.is_some() && c.has(Class::Protected));
//! ```

use std::path::{Component, Path};

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Configuration that runs code or holds trust: writes and deletes need a person.
    Protected,
    /// Credentials: reads need a person; sending them out is exfiltration.
    Secret,
    /// Private data in the home directory.
    Personal,
}

/// How an entry matches a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// A directory component, or consecutive components `A/B`, anywhere below the anchor;
    /// the directory itself and everything in it.
    Dir(&'static str),
    /// A final component, anywhere below the anchor.
    File(&'static str),
    /// A final component matching a glob where `*` is any run of characters.
    Glob(&'static str),
    /// A path relative to the home directory, and everything below it.
    Home(&'static str),
    /// An absolute path, and everything below it.
    Abs(&'static str),
}

/// What the sandbox does with an entry when it builds a room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InRoom {
    /// Nothing beyond the room's read-only root.
    Nothing,
    /// Read-only at the top of every writable project root; when missing, see
    /// [`WhenMissing`].
    ReadOnly(WhenMissing),
    /// Only these parts (relative to the entry's directory) are read-only at the top of every
    /// writable project root: `.git/objects` must stay writable for commits, `.git/hooks`
    /// must not.
    ReadOnlyParts(&'static [(&'static str, WhenMissing)]),
    /// Unreadable in the home directory: the pattern's path or name joined onto home
    /// (`~/.aws`, `~/.netrc`).
    HiddenInHome,
    /// Unreadable at the top of every writable root: the names the glob matches there
    /// (`.env`, `.env.*`). Deeper matches are the permission rules' to mask.
    HiddenAtRootTop,
}

/// How the room protects a read-only entry that does not exist yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenMissing {
    /// An empty placeholder directory, mounted read-only, so it cannot be created inside.
    PlaceholderDir,
    /// An empty placeholder file, mounted read-only.
    PlaceholderFile,
    /// A `.git/commondir` placeholder holding `.` (an empty file would break git; `.` points
    /// the common directory at the repository itself, which is what no file means).
    PlaceholderCommonDir,
    /// Protected only when it exists.
    Skip,
    /// Protected when it exists; when the command creates it (directly in a writable project
    /// root), moved aside after the run (`NAME.toolgate-blocked`) and reported. For names an
    /// empty placeholder would upset a tool outside meanwhile (an empty
    /// `.pre-commit-config.yaml`) or clutter every workspace with (shell startup files).
    MoveAside,
}

/// One entry of the table.
#[derive(Debug, Clone, Copy)]
pub struct PathClassEntry {
    /// What the path is.
    pub class: Class,
    /// A short description for reasons and explanations (`shell startup`, `ssh key`).
    pub kind: &'static str,
    /// What it matches.
    pub pattern: Pattern,
    /// A directory right below a [`Pattern::Dir`] match that is not covered
    /// (`.claude/worktrees`, where agents work).
    pub except_child: Option<&'static str>,
    /// Final-component globs that are not covered (`*.pub` for ssh keys, `.env.example`).
    pub except_leaf: &'static [&'static str],
    /// What the sandbox does with it.
    pub room: InRoom,
    /// Absolute paths it matches (home `/home/u`, workspace root `/w`).
    pub matches: &'static [&'static str],
    /// Look-alikes it must not match.
    pub not_matches: &'static [&'static str],
}

const fn entry(
    class: Class,
    kind: &'static str,
    pattern: Pattern,
    room: InRoom,
    matches: &'static [&'static str],
    not_matches: &'static [&'static str],
) -> PathClassEntry {
    PathClassEntry {
        class,
        kind,
        pattern,
        except_child: None,
        except_leaf: &[],
        room,
        matches,
        not_matches,
    }
}

const fn protected(
    kind: &'static str,
    pattern: Pattern,
    room: InRoom,
    matches: &'static [&'static str],
    not_matches: &'static [&'static str],
) -> PathClassEntry {
    entry(Class::Protected, kind, pattern, room, matches, not_matches)
}

const fn secret(
    kind: &'static str,
    pattern: Pattern,
    room: InRoom,
    matches: &'static [&'static str],
    not_matches: &'static [&'static str],
) -> PathClassEntry {
    entry(Class::Secret, kind, pattern, room, matches, not_matches)
}

const fn personal(
    kind: &'static str,
    home_rel: &'static str,
    example: &'static [&'static str],
) -> PathClassEntry {
    entry(
        Class::Personal,
        kind,
        Pattern::Home(home_rel),
        InRoom::Nothing,
        example,
        &[],
    )
}

use InRoom::{HiddenAtRootTop, HiddenInHome, ReadOnly};
use Pattern::{Abs, Dir, File, Glob, Home};
use WhenMissing::{MoveAside, PlaceholderDir, PlaceholderFile, Skip};

/// Templates of dotenv files: committed examples, not secrets.
const ENV_TEMPLATES: &[&str] = &["*example", "*sample", "*template", "*dist", "*defaults"];

/// The parts of `.git` the room keeps read-only: what git runs or trusts (`hooks`, `config`,
/// `config.worktree` with `extensions.worktreeConfig`, `commondir` which moves the other two,
/// `info`), never the object store a commit writes.
const GIT_ROOM_PARTS: &[(&str, WhenMissing)] = &[
    ("hooks", PlaceholderDir),
    ("config", PlaceholderFile),
    ("config.worktree", PlaceholderFile),
    ("commondir", WhenMissing::PlaceholderCommonDir),
    ("info", Skip),
];

/// The table. Protected entries are Claude Code's list (compat §6) plus toolgate's own
/// settings directory, other agents' configuration (`.codex`, `.agents`, `.cursor`,
/// `.gemini`) and `.ssh`; secret entries are credential stores; personal entries are the
/// home directory's private folders (macOS and XDG names).
#[rustfmt::skip]
pub const PATH_CLASSES: &[PathClassEntry] = &[
    // --- version control
    protected("git directory", Dir(".git"), InRoom::ReadOnlyParts(GIT_ROOM_PARTS),
        &["/w/.git/config", "/w/.git", "/w/sub/.git/hooks/pre-commit", "/w/.GIT/HEAD"],
        &["/w/.github/ci.yml", "/w/.gitignore", "/w/my.git/config", "/w/git/config"]),
    protected("git configuration", Dir(".config/git"), ReadOnly(Skip),
        &["/home/u/.config/git/config", "/w/home/.config/git/ignore"],
        &["/home/u/.config/gitx/config", "/home/u/.config/nvim/init.lua"]),
    protected("git configuration", File(".gitconfig"), ReadOnly(MoveAside), &["/home/u/.gitconfig"], &["/w/gitconfig.md"]),
    protected("git configuration", File(".gitmodules"), ReadOnly(MoveAside), &["/w/.gitmodules", "/w/sub/.gitmodules"], &["/w/.gitmodules.bak", "/w/.gitignore"]),
    // --- editors and agents
    protected("editor configuration", Dir(".vscode"), ReadOnly(PlaceholderDir), &["/w/.vscode/settings.json"], &["/w/vscode/x"]),
    protected("editor configuration", Dir(".idea"), ReadOnly(MoveAside), &["/w/.idea/workspace.xml"], &["/w/.ideas/notes.md", "/w/idea.md"]),
    protected("dev container", Dir(".devcontainer"), ReadOnly(MoveAside), &["/w/.devcontainer/devcontainer.json"], &["/w/devcontainer/x.json"]),
    protected("dev container", File(".devcontainer.json"), ReadOnly(MoveAside), &["/w/.devcontainer.json"], &["/w/devcontainer.json"]),
    PathClassEntry {
        except_child: Some("worktrees"),
        ..protected("agent configuration", Dir(".claude"), ReadOnly(PlaceholderDir),
            &["/w/.claude/settings.json", "/w/.claude/agents/x.md", "/w/.claude", "/home/u/.claude/settings.json"],
            &["/w/.claude/worktrees/feature/src/main.rs", "/w/claude/settings.json", "/w/claude.md"])
    },
    protected("agent configuration", File(".claude.json"), ReadOnly(MoveAside), &["/home/u/.claude.json"], &["/w/claude.json"]),
    protected("agent configuration", Dir(".toolgate"), ReadOnly(PlaceholderDir),
        &["/w/.toolgate/settings.json", "/w/.toolgate/settings.local.json"], &["/w/toolgate/settings.json", "/w/.toolgates/x"]),
    protected("agent configuration", File(".mcp.json"), ReadOnly(PlaceholderFile), &["/w/.mcp.json"], &["/w/mcp.json"]),
    protected("agent configuration", Dir(".codex"), ReadOnly(MoveAside), &["/w/.codex/config.toml", "/home/u/.codex/config.toml"], &["/w/codex/x"]),
    protected("agent configuration", Dir(".agents"), ReadOnly(MoveAside), &["/w/.agents/skills/x/SKILL.md"], &["/w/agents/x.md"]),
    protected("agent configuration", Dir(".cursor"), ReadOnly(MoveAside), &["/w/.cursor/mcp.json", "/w/.cursor/rules/x.mdc"], &["/w/cursor/mcp.json"]),
    protected("agent configuration", Dir(".gemini"), ReadOnly(MoveAside), &["/w/.gemini/settings.json"], &["/w/gemini/settings.json"]),
    // --- shells
    protected("shell startup", File(".bashrc"), ReadOnly(MoveAside), &["/home/u/.bashrc", "/w/.bashrc"], &["/w/bashrc.example", "/w/.bashrc.d/x"]),
    protected("shell startup", File(".bash_profile"), ReadOnly(MoveAside), &["/home/u/.bash_profile"], &["/w/bash_profile"]),
    protected("shell startup", File(".bash_login"), ReadOnly(MoveAside), &["/home/u/.bash_login"], &["/w/bash_login"]),
    protected("shell startup", File(".bash_aliases"), ReadOnly(MoveAside), &["/home/u/.bash_aliases"], &["/w/.bash_aliases.txt"]),
    protected("shell startup", File(".bash_logout"), ReadOnly(MoveAside), &["/home/u/.bash_logout"], &["/w/bash_logout"]),
    protected("shell startup", File(".zshrc"), ReadOnly(MoveAside), &["/home/u/.zshrc"], &["/w/zshrc"]),
    protected("shell startup", File(".zprofile"), ReadOnly(MoveAside), &["/home/u/.zprofile"], &["/w/zprofile"]),
    protected("shell startup", File(".zshenv"), ReadOnly(MoveAside), &["/home/u/.zshenv"], &["/w/zshenv"]),
    protected("shell startup", File(".zlogin"), ReadOnly(MoveAside), &["/home/u/.zlogin"], &["/w/zlogin"]),
    protected("shell startup", File(".zlogout"), ReadOnly(MoveAside), &["/home/u/.zlogout"], &["/w/zlogout"]),
    protected("shell startup", File(".profile"), ReadOnly(MoveAside), &["/home/u/.profile"], &["/w/profile", "/w/src/profile.rs"]),
    protected("shell startup", File(".envrc"), ReadOnly(MoveAside), &["/w/.envrc"], &["/w/envrc", "/w/.env"]),
    // --- package managers and build tools: configuration that runs code on install or build
    protected("build tool configuration", Dir(".cargo"), ReadOnly(PlaceholderDir), &["/home/u/.cargo/config.toml", "/w/.cargo/config.toml"], &["/w/Cargo.toml", "/w/cargo/config.toml"]),
    protected("JS package manager", Dir(".yarn"), ReadOnly(MoveAside), &["/w/.yarn/releases/yarn.cjs"], &["/w/yarn.lock"]),
    protected("JS package manager", File(".npmrc"), ReadOnly(MoveAside), &["/w/.npmrc", "/w/packages/a/.npmrc"], &["/w/npmrc"]),
    protected("JS package manager", File(".yarnrc"), ReadOnly(MoveAside), &["/w/.yarnrc"], &["/w/yarnrc"]),
    protected("JS package manager", File(".yarnrc.yml"), ReadOnly(MoveAside), &["/w/.yarnrc.yml"], &["/w/yarnrc.yml"]),
    protected("JS package manager", File(".pnp.cjs"), ReadOnly(MoveAside), &["/w/.pnp.cjs"], &["/w/pnp.cjs"]),
    protected("JS package manager", File(".pnp.loader.mjs"), ReadOnly(MoveAside), &["/w/.pnp.loader.mjs"], &["/w/pnp.loader.mjs"]),
    protected("JS package manager", File(".pnpmfile.cjs"), ReadOnly(MoveAside), &["/w/.pnpmfile.cjs"], &["/w/pnpmfile.cjs"]),
    protected("JS package manager", File("bunfig.toml"), ReadOnly(MoveAside), &["/w/bunfig.toml"], &["/w/bunfig.toml.bak"]),
    protected("JS package manager", File(".bunfig.toml"), ReadOnly(MoveAside), &["/w/.bunfig.toml"], &[]),
    protected("Bazel", File(".bazelrc"), ReadOnly(MoveAside), &["/w/.bazelrc"], &["/w/bazelrc"]),
    protected("Bazel", File(".bazelversion"), ReadOnly(MoveAside), &["/w/.bazelversion"], &[]),
    protected("Bazel", File(".bazeliskrc"), ReadOnly(MoveAside), &["/w/.bazeliskrc"], &[]),
    protected("build wrapper", Dir(".mvn"), ReadOnly(MoveAside), &["/w/.mvn/jvm.config", "/w/.mvn/wrapper/maven-wrapper.properties"], &["/w/mvnw"]),
    protected("build wrapper", File("gradle-wrapper.properties"), ReadOnly(Skip), &["/w/gradle/wrapper/gradle-wrapper.properties"], &[]),
    protected("build wrapper", File("maven-wrapper.properties"), ReadOnly(Skip), &["/w/x/maven-wrapper.properties"], &[]),
    // --- commit hooks
    protected("commit hooks", Dir(".husky"), ReadOnly(MoveAside), &["/w/.husky/pre-commit"], &["/w/husky.txt"]),
    protected("commit hooks", File(".pre-commit-config.yaml"), ReadOnly(MoveAside), &["/w/.pre-commit-config.yaml"], &["/w/pre-commit-config.yaml"]),
    protected("commit hooks", File("lefthook.yml"), ReadOnly(MoveAside), &["/w/lefthook.yml"], &[]),
    protected("commit hooks", File("lefthook.yaml"), ReadOnly(MoveAside), &["/w/lefthook.yaml"], &[]),
    protected("commit hooks", File(".lefthook.yml"), ReadOnly(MoveAside), &["/w/.lefthook.yml"], &[]),
    protected("commit hooks", File(".lefthook.yaml"), ReadOnly(MoveAside), &["/w/.lefthook.yaml"], &[]),
    // --- other tools that read configuration from the workspace or home
    protected("tool configuration", File(".ripgreprc"), ReadOnly(MoveAside), &["/home/u/.ripgreprc"], &[]),
    protected("tool configuration", File("pyrightconfig.json"), ReadOnly(MoveAside), &["/w/pyrightconfig.json"], &[]),
    protected("ssh configuration", Dir(".ssh"), ReadOnly(MoveAside), &["/home/u/.ssh/authorized_keys", "/home/u/.ssh/config"], &["/w/ssh.md", "/w/docs/ssh/setup.md"]),

    // --- secrets
    PathClassEntry {
        except_leaf: &["*.pub", "known_hosts", "known_hosts.old"],
        ..secret("ssh keys", Dir(".ssh"), HiddenInHome,
            &["/home/u/.ssh", "/home/u/.ssh/id_rsa", "/home/u/.ssh/deploy_key"],
            &["/home/u/.ssh/id_rsa.pub", "/home/u/.ssh/known_hosts", "/w/ssh/x"])
    },
    PathClassEntry {
        except_leaf: &["*.pub"],
        ..secret("ssh key", Glob("id_*"), InRoom::Nothing, &["/home/u/.ssh/id_rsa", "/w/id_ed25519"], &["/home/u/.ssh/id_rsa.pub", "/w/idx"])
    },
    secret("private key", Glob("*.pem"), InRoom::Nothing, &["/w/server.pem", "/w/certs/s.pem"], &["/w/pem.txt"]),
    secret("private key", Glob("*.key"), InRoom::Nothing, &["/w/tls.key"], &["/w/keys.txt"]),
    secret("cloud credentials", Dir(".aws"), HiddenInHome, &["/home/u/.aws/credentials", "/home/u/.aws"], &["/w/aws/main.tf"]),
    secret("cloud credentials", Dir(".config/gcloud"), HiddenInHome, &["/home/u/.config/gcloud/application_default_credentials.json"], &["/home/u/.config/gcloudx"]),
    secret("cloud credentials", Dir(".azure"), HiddenInHome, &["/home/u/.azure/accessTokens.json"], &["/w/azure/x"]),
    secret("cluster credentials", Dir(".kube"), HiddenInHome, &["/home/u/.kube/config"], &["/w/kube/deploy.yaml"]),
    secret("registry credentials", Dir(".docker"), HiddenInHome, &["/home/u/.docker/config.json"], &["/w/docker/Dockerfile"]),
    secret("netrc", File(".netrc"), HiddenInHome, &["/home/u/.netrc"], &["/w/netrc"]),
    secret("git credentials", File(".git-credentials"), HiddenInHome, &["/home/u/.git-credentials"], &[]),
    secret("token file", Home(".npmrc"), HiddenInHome, &["/home/u/.npmrc"], &["/w/.npmrc"]),
    secret("token file", File(".pypirc"), HiddenInHome, &["/home/u/.pypirc"], &[]),
    secret("token file", File(".vault-token"), HiddenInHome, &["/home/u/.vault-token"], &[]),
    secret("token file", Dir(".config/gh"), HiddenInHome, &["/home/u/.config/gh/hosts.yml"], &["/home/u/.config/ghx/x"]),
    secret("token file", File("credentials.toml"), InRoom::Nothing, &["/home/u/.cargo/credentials.toml"], &["/w/credentials.toml.example"]),
    secret("token file", Home(".cargo/credentials.toml"), HiddenInHome, &["/home/u/.cargo/credentials.toml"], &["/home/u/.cargo/config.toml"]),
    secret("token file", Home(".cargo/credentials"), HiddenInHome, &["/home/u/.cargo/credentials"], &[]),
    secret("keyring", Dir(".gnupg"), HiddenInHome, &["/home/u/.gnupg/private-keys-v1.d/x.key", "/home/u/.gnupg/pubring.kbx"], &["/w/gnupg/x"]),
    secret("keyring", Dir(".password-store"), HiddenInHome, &["/home/u/.password-store/a.gpg"], &[]),
    secret("dotenv", Glob(".env"), HiddenAtRootTop, &["/w/.env", "/w/app/.env"], &["/w/.envrc", "/w/env"]),
    PathClassEntry {
        except_leaf: ENV_TEMPLATES,
        ..secret("dotenv", Glob(".env.*"), HiddenAtRootTop, &["/w/.env.production", "/w/app/.env.local"], &["/w/.env.example", "/w/.env.sample", "/w/.env.template"])
    },
    secret("system auth", Abs("/etc/shadow"), InRoom::Nothing, &["/etc/shadow"], &["/etc/passwd"]),
    secret("system auth", Abs("/etc/gshadow"), InRoom::Nothing, &["/etc/gshadow"], &[]),
    secret("system auth", Abs("/etc/sudoers"), InRoom::Nothing, &["/etc/sudoers"], &["/etc/sudoers.d"]),
    secret("system auth", Abs("/etc/sudoers.d"), InRoom::Nothing, &["/etc/sudoers.d/x"], &["/etc/sudoers"]),

    // --- personal data in the home directory
    personal("documents", "Documents", &["/home/u/Documents/tax.pdf"]),
    personal("desktop", "Desktop", &["/home/u/Desktop/a.txt"]),
    personal("downloads", "Downloads", &["/home/u/Downloads/a.txt"]),
    personal("pictures", "Pictures", &["/home/u/Pictures/a.jpg"]),
    personal("music", "Music", &["/home/u/Music/a.mp3"]),
    personal("videos", "Videos", &["/home/u/Videos/a.mp4"]),
    personal("movies", "Movies", &["/home/u/Movies/a.mp4"]),
    personal("application data", "Library", &["/home/u/Library/Messages/chat.db", "/home/u/Library/Safari/History.db"]),
    personal("mail", ".thunderbird", &["/home/u/.thunderbird/x"]),
    personal("browser profile", ".mozilla", &["/home/u/.mozilla/firefox/x"]),
    personal("browser profile", ".config/google-chrome", &["/home/u/.config/google-chrome/Default/Cookies"]),
    personal("browser profile", ".config/chromium", &["/home/u/.config/chromium/Default/Cookies"]),
];

/// The home directory and workspace root the table's examples assume.
pub const EXAMPLE_HOME: &str = "/home/u";
/// See [`EXAMPLE_HOME`].
pub const EXAMPLE_ROOT: &str = "/w";

/// What [`classify`] found: the first matching entry of each class.
#[derive(Debug, Clone, Copy, Default)]
pub struct Classes {
    /// A protected entry.
    pub protected: Option<&'static PathClassEntry>,
    /// A secret entry.
    pub secret: Option<&'static PathClassEntry>,
    /// A personal entry.
    pub personal: Option<&'static PathClassEntry>,
}

impl Classes {
    /// Whether the path is of `class`.
    pub fn has(&self, class: Class) -> bool {
        self.get(class).is_some()
    }

    /// The entry of `class`, if any.
    pub fn get(&self, class: Class) -> Option<&'static PathClassEntry> {
        match class {
            Class::Protected => self.protected,
            Class::Secret => self.secret,
            Class::Personal => self.personal,
        }
    }

    /// Whether no entry matched.
    pub fn is_empty(&self) -> bool {
        self.protected.is_none() && self.secret.is_none() && self.personal.is_none()
    }
}

/// Classifies an absolute, normalised `path` of a session whose roots are `roots` and whose
/// home directory is `home` (see the module doc for how the anchor is chosen).
pub fn classify<P: AsRef<Path>>(path: &Path, roots: &[P], home: Option<&Path>) -> Classes {
    let below = below_anchor(path, roots, home);
    let mut out = Classes::default();
    for e in PATH_CLASSES {
        let slot = match e.class {
            Class::Protected => &mut out.protected,
            Class::Secret => &mut out.secret,
            Class::Personal => &mut out.personal,
        };
        if slot.is_none() && e.matches_in(path, &below, home) {
            *slot = Some(e);
        }
    }
    out
}

/// Whether `path` is protected (see [`classify`]).
pub fn is_protected<P: AsRef<Path>>(path: &Path, roots: &[P], home: Option<&Path>) -> bool {
    classify(path, roots, home).protected.is_some()
}

/// The entries whose room behaviour is not [`InRoom::Nothing`].
pub fn room_entries() -> impl Iterator<Item = &'static PathClassEntry> {
    PATH_CLASSES.iter().filter(|e| e.room != InRoom::Nothing)
}

/// The normal components of `path` below its anchor: the deepest root or home directory
/// that contains it, else all of them.
fn below_anchor<'p, P: AsRef<Path>>(
    path: &'p Path,
    roots: &[P],
    home: Option<&Path>,
) -> Vec<&'p str> {
    let anchor = roots
        .iter()
        .map(AsRef::as_ref)
        .chain(home)
        .filter(|a| path.starts_with(a))
        .max_by_key(|a| a.as_os_str().len());
    let rel = anchor
        .and_then(|a| path.strip_prefix(a).ok())
        .unwrap_or(path);
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect()
}

impl PathClassEntry {
    /// Whether this entry matches `path` in a session with `roots` and `home`.
    pub fn matches<P: AsRef<Path>>(&self, path: &Path, roots: &[P], home: Option<&Path>) -> bool {
        self.matches_in(path, &below_anchor(path, roots, home), home)
    }

    /// Whether `path` names the directory a [`Pattern::Dir`] or [`Pattern::Home`] entry
    /// covers rather than something inside it: reading that directory without descending
    /// lists names (`ls ~/.aws`), it does not read what the files hold.
    pub fn is_the_directory(&self, path: &Path, home: Option<&Path>) -> bool {
        match self.pattern {
            Dir(dir) => {
                let tail: Vec<&str> = path
                    .components()
                    .rev()
                    .take(dir.split('/').count())
                    .filter_map(|c| c.as_os_str().to_str())
                    .collect();
                tail.iter()
                    .rev()
                    .zip(dir.split('/'))
                    .all(|(a, b)| a.eq_ignore_ascii_case(b))
                    && tail.len() == dir.split('/').count()
            }
            Home(rel) => home.is_some_and(|h| {
                below_home(path, h, rel).is_some_and(|mut rest| rest.next().is_none())
            }),
            _ => false,
        }
    }

    fn matches_in(&self, path: &Path, below: &[&str], home: Option<&Path>) -> bool {
        let leaf_excepted = || {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|leaf| self.except_leaf.iter().any(|g| glob_match(g, leaf)))
        };
        let hit = match self.pattern {
            Dir(dir) => {
                let parts: Vec<&str> = dir.split('/').collect();
                below.windows(parts.len()).enumerate().any(|(i, w)| {
                    w.iter().zip(&parts).all(|(a, b)| a.eq_ignore_ascii_case(b))
                        && !self.except_child.is_some_and(|child| {
                            below
                                .get(i + parts.len())
                                .is_some_and(|c| c.eq_ignore_ascii_case(child))
                        })
                })
            }
            File(name) => below.last().is_some_and(|n| n.eq_ignore_ascii_case(name)),
            Glob(glob) => below.last().is_some_and(|n| glob_match(glob, n)),
            Home(rel) => home.is_some_and(|h| below_home(path, h, rel).is_some()),
            Abs(abs) => path.starts_with(abs),
        };
        hit && !leaf_excepted()
    }
}

/// When `path` is `home/rel` or below it (the names of `rel` compared ASCII
/// case-insensitively, like every name in the table; `home` itself exactly, like a root),
/// the components of `path` below `home/rel`.
fn below_home<'p>(
    path: &'p Path,
    home: &Path,
    rel: &str,
) -> Option<impl Iterator<Item = Component<'p>>> {
    let mut rest = path.strip_prefix(home).ok()?.components();
    for want in rel.split('/') {
        match rest.next() {
            Some(Component::Normal(name))
                if name
                    .as_encoded_bytes()
                    .eq_ignore_ascii_case(want.as_bytes()) => {}
            _ => return None,
        }
    }
    Some(rest)
}

/// Glob on one name: `*` matches any run of characters, everything else itself, ASCII
/// case-insensitively like every name in the table (`ID_RSA` on a case-insensitive file
/// system is `id_rsa`).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, s) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if pi < p.len() && p[pi].eq_ignore_ascii_case(&s[si]) {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ([&'static Path; 1], Option<&'static Path>) {
        ([Path::new(EXAMPLE_ROOT)], Some(Path::new(EXAMPLE_HOME)))
    }

    /// Found by the property test `names_below_the_anchor_compare_without_ascii_case`
    /// (toolgate-core): glob and home entries compared case-sensitively while the other
    /// name patterns did not, so `ID_ED25519`, `SERVER.PEM` or `~/.NPMRC` were no secret.
    #[test]
    fn glob_and_home_entries_ignore_ascii_case_like_the_other_names() {
        let (roots, home) = ctx();
        for p in [
            "/w/ID_ED25519",
            "/w/Server.PEM",
            "/w/tls.Key",
            "/w/app/.ENV",
            "/w/.Env.Local",
        ] {
            assert!(classify(Path::new(p), &roots, home).secret.is_some(), "{p}");
        }
        for p in ["/home/u/.ssh/ID_RSA.PUB", "/w/.ENV.Example"] {
            let c = classify(Path::new(p), &roots, home);
            assert!(c.secret.is_none(), "{p} is an exception: {:?}", c.secret);
        }
        assert!(glob_match("id_*", "Id_Rsa") && !glob_match("id_*", "idx"));
        // Home entries too, below the home directory (which is compared exactly).
        for p in ["/home/u/.NPMRC", "/home/u/.Cargo/Credentials.toml"] {
            assert!(classify(Path::new(p), &roots, home).secret.is_some(), "{p}");
        }
        assert!(
            classify(Path::new("/HOME/U/.npmrc"), &roots, home)
                .secret
                .is_none()
        );
    }

    #[test]
    fn every_entry_walks_its_examples() {
        let (roots, home) = ctx();
        for e in PATH_CLASSES {
            assert!(!e.matches.is_empty(), "{:?} has no example", e.pattern);
            for m in e.matches {
                assert!(
                    e.matches(Path::new(m), &roots, home),
                    "{:?} should match {m}",
                    e.pattern
                );
                assert!(
                    classify(Path::new(m), &roots, home).has(e.class),
                    "{m} is {:?}",
                    e.class
                );
            }
            for n in e.not_matches {
                assert!(
                    !e.matches(Path::new(n), &roots, home),
                    "{:?} should not match {n}",
                    e.pattern
                );
            }
        }
    }

    #[test]
    fn the_anchor_is_the_deepest_root_or_home() {
        let home = Some(Path::new("/home/u"));
        let roots = [Path::new("/home/u/.cargo/proj")];
        assert!(!is_protected(
            Path::new("/home/u/.cargo/proj/src/lib.rs"),
            &roots,
            home
        ));
        assert!(is_protected(
            Path::new("/home/u/.cargo/proj/.git/config"),
            &roots,
            home
        ));
        assert!(is_protected(
            Path::new("/home/u/.cargo/config.toml"),
            &roots,
            home
        ));
        // Outside every root and home: any component counts.
        assert!(is_protected(
            Path::new("/srv/repo/.git/hooks/x"),
            &roots,
            home
        ));
        // A workspace inside .claude/worktrees is not protected; .claude itself is.
        let roots = [Path::new("/w")];
        assert!(!is_protected(
            Path::new("/w/.claude/worktrees/a/src/x.rs"),
            &roots,
            home
        ));
        assert!(is_protected(
            Path::new("/w/.claude/settings.json"),
            &roots,
            home
        ));
    }

    #[test]
    fn leaf_exceptions() {
        let (roots, home) = ctx();
        let secret = |p: &str| classify(Path::new(p), &roots, home).secret.is_some();
        assert!(secret("/home/u/.ssh"));
        assert!(secret("/home/u/.ssh/id_ed25519"));
        assert!(!secret("/home/u/.ssh/id_ed25519.pub"));
        assert!(secret("/w/.env.production"));
        assert!(!secret("/w/.env.example"));
        let ssh = classify(Path::new("/home/u/.ssh"), &roots, home).secret;
        assert!(ssh.is_some_and(|e| e.is_the_directory(Path::new("/home/u/.ssh"), home)));
        let key = Path::new("/home/u/.ssh/id_rsa");
        let e = classify(key, &roots, home).secret;
        assert!(e.is_some_and(|e| !e.is_the_directory(key, home)));
        let gcloud = Path::new("/home/u/.config/gcloud");
        let e = classify(gcloud, &roots, home).secret;
        assert!(e.is_some_and(|e| e.is_the_directory(gcloud, home)));
    }

    #[test]
    fn globs() {
        assert!(glob_match("*.pem", "a.pem"));
        assert!(glob_match("id_*", "id_rsa"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("*.pem", "a.pe"));
        assert!(glob_match("a*b*c", "aXbYbc"));
        assert!(!glob_match(".env", ".envrc"));
    }
}
