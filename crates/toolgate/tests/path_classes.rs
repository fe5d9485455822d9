//! The one path-class table (`toolgate_protocol::paths`), walked through every layer that
//! reads it: each entry's examples must be judged the same by the file tools (stage 4 of the
//! gate), the shell analyzer, the permission engine and the sandbox's room. A layer that kept
//! its own list, or read the table differently, fails here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use toolgate_core::{Gate, Registry};
use toolgate_policy::{Engine, PolicyRequest};
use toolgate_protocol::paths::{
    Class, EXAMPLE_HOME, EXAMPLE_ROOT, InRoom, PATH_CLASSES, PathClassEntry, Pattern,
};
use toolgate_protocol::{
    Access, Beneath, CallFacts, Decision, Layer, PathFact, PermissionMode, Subject,
    ToolAnnotations, ToolCall,
};

/// A scratch home and workspace standing for the table's `/home/u` and `/w`.
struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("home/u");
        let root = base.join("w");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        World {
            _dir: dir,
            home,
            root,
        }
    }

    /// An example path of the table, moved into the scratch world (other absolute paths, such
    /// as `/etc/shadow`, stay as they are).
    fn place(&self, example: &str) -> PathBuf {
        if let Some(rest) = example.strip_prefix(EXAMPLE_HOME) {
            return self.home.join(rest.trim_start_matches('/'));
        }
        if let Some(rest) = example.strip_prefix(EXAMPLE_ROOT) {
            return self.root.join(rest.trim_start_matches('/'));
        }
        PathBuf::from(example)
    }

    fn engine(&self) -> Engine {
        Engine::builder()
            .cwd(&self.root)
            .home(&self.home)
            .build()
            .unwrap()
    }

    fn decide(
        &self,
        engine: &Engine,
        tool: &str,
        path: &Path,
        mode: PermissionMode,
    ) -> (Decision, Layer) {
        self.decide_beneath(engine, tool, path, mode, Beneath::Nothing)
    }

    /// As [`World::decide`], for a tool that reads what lies below `path` (`beneath`).
    fn decide_beneath(
        &self,
        engine: &Engine,
        tool: &str,
        path: &Path,
        mode: PermissionMode,
        beneath: Beneath,
    ) -> (Decision, Layer) {
        let access = if tool == "Read" {
            Access::Read
        } else {
            Access::Write
        };
        let facts = CallFacts {
            paths: vec![PathFact {
                path: path.to_path_buf(),
                access,
                inside_roots: path.starts_with(&self.root),
                protected: false,
                beneath,
                beneath_only: Vec::new(),
            }],
            ..CallFacts::default()
        };
        let subject = Subject::Path {
            field: "file_path".into(),
            writes: access != Access::Read,
        };
        let input = json!({ "file_path": path });
        let roots = [self.root.as_path()];
        let v = engine
            .decide(&PolicyRequest {
                tool,
                subject: &subject,
                annotations: ToolAnnotations::default(),
                input: &input,
                facts: &facts,
                mode,
                hook: None,
                cwd: &self.root,
                roots: &roots,
            })
            .verdict;
        (v.decision, v.layer)
    }

    fn analyze(&self, command: &str) -> toolgate_shell::Analysis {
        let ctx = toolgate_shell::Context::new(self.root.clone())
            .with_root(self.root.clone())
            .with_home(self.home.clone());
        toolgate_shell::analyze(command, &ctx)
    }

    /// A gate with the built-in tools over this world, for stage 4's facts.
    fn gate(&self) -> Gate {
        let settings = toolgate_policy::Settings::default();
        let mut registry = Registry::builder();
        for tool in toolgate_setup::builtin_tools(&settings).unwrap() {
            registry = registry.register_arc(tool);
        }
        Gate::builder()
            .workspace(&self.root)
            .home(Some(self.home.clone()))
            .registry(registry.build().unwrap())
            .policy(Arc::new(toolgate_core::stages::AllowAll))
            .build()
            .unwrap()
    }
}

fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

fn entries(class: Class) -> impl Iterator<Item = &'static PathClassEntry> {
    PATH_CLASSES.iter().filter(move |e| e.class == class)
}

#[test]
fn protected_examples_ask_in_every_layer() {
    let world = World::new();
    let engine = world.engine();
    let gate = world.gate();
    for e in entries(Class::Protected) {
        for example in e.matches {
            let path = world.place(example);
            // The engine: a write asks, as the risk floor, in acceptEdits too.
            for mode in [PermissionMode::Default, PermissionMode::AcceptEdits] {
                assert_eq!(
                    world.decide(&engine, "Write", &path, mode),
                    (Decision::Ask, Layer::Risk),
                    "{:?} {example} in {mode}",
                    e.pattern
                );
            }
            // The analyzer: a redirect into it is a write of a protected path.
            let analysis = world.analyze(&format!("echo x > {}", shell_quote(&path)));
            let facts = analysis.facts();
            assert!(
                facts.paths.iter().any(|p| p.path == path && p.protected),
                "analyzer: {example}: {:?}",
                facts.paths
            );
            // The file tools (inside the workspace; outside it they refuse the path).
            if path.starts_with(&world.root) {
                let call = ToolCall::new("c", "Write", json!({"file_path": path, "content": "x"}));
                let analyzed = gate.analyze(&call).unwrap();
                assert!(
                    analyzed.facts.paths.iter().any(|p| p.protected),
                    "Write tool: {example}: {:?}",
                    analyzed.facts.paths
                );
            }
        }
    }
}

#[test]
fn secret_examples_ask_in_every_layer() {
    let world = World::new();
    let engine = world.engine();
    for e in entries(Class::Secret) {
        for example in e.matches {
            let path = world.place(example);
            // A directory named whole is read with what it holds (Grep, `grep -r`).
            let whole = e.is_the_directory(&path, Some(&world.home));
            let beneath = if whole {
                Beneath::Everything
            } else {
                Beneath::Nothing
            };
            assert_eq!(
                world.decide_beneath(&engine, "Read", &path, PermissionMode::Default, beneath),
                (Decision::Ask, Layer::Risk),
                "engine: {:?} {example}",
                e.pattern
            );
            let command = if whole {
                format!("grep -r KEY {}", shell_quote(&path))
            } else {
                format!("cat {}", shell_quote(&path))
            };
            let analysis = world.analyze(&command);
            assert!(
                analysis
                    .findings
                    .iter()
                    .any(|f| f.category == "secret_access"),
                "analyzer: `{command}`: {:?}",
                analysis.findings
            );
        }
        for near in e.not_matches {
            let path = world.place(near);
            let (decision, layer) = world.decide(&engine, "Read", &path, PermissionMode::Default);
            assert!(
                !(decision == Decision::Ask && layer == Layer::Risk)
                    || toolgate_protocol::paths::classify(&path, &[&world.root], Some(&world.home))
                        .secret
                        .is_some(),
                "engine asks for the look-alike {near}"
            );
        }
    }
}

#[test]
fn the_room_covers_every_entry_it_is_told_to() {
    let protected: Vec<String> = toolgate_sandbox::default_protected()
        .into_iter()
        .map(|p| p.path)
        .collect();
    let home_masks = toolgate_sandbox::default_home_read_deny();
    let root_masks = toolgate_sandbox::default_root_read_deny();
    for e in PATH_CLASSES {
        let name = match e.pattern {
            Pattern::Dir(n) | Pattern::File(n) | Pattern::Glob(n) | Pattern::Home(n) => n,
            Pattern::Abs(_) => continue,
        };
        match e.room {
            InRoom::ReadOnly(_) => assert!(
                protected.iter().any(|p| p == name),
                "{name} not read-only in the room"
            ),
            InRoom::ReadOnlyParts(parts) => {
                for (part, _) in parts {
                    let want = format!("{name}/{part}");
                    assert!(
                        protected.contains(&want),
                        "{want} not read-only in the room"
                    );
                }
            }
            InRoom::HiddenInHome => assert!(
                home_masks.contains(&name),
                "~/{name} not hidden in the room"
            ),
            InRoom::HiddenAtRootTop => assert!(
                root_masks.contains(&name),
                "{name} not hidden at the top of the roots"
            ),
            InRoom::Nothing => {}
        }
    }
}

#[test]
fn a_workspace_inside_a_protected_directory_is_not_protected_as_a_whole() {
    // The case: a project under ~/.cargo/proj, Edit of src/lib.rs in acceptEdits.
    let world = World::new();
    let project = world.home.join(".cargo/proj");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.rs"), "").unwrap();
    let engine = Engine::builder()
        .cwd(&project)
        .home(&world.home)
        .build()
        .unwrap();
    let inner = World {
        _dir: tempfile::tempdir().unwrap(),
        home: world.home.clone(),
        root: project.clone(),
    };
    assert_eq!(
        inner
            .decide(
                &engine,
                "Write",
                &project.join("src/lib.rs"),
                PermissionMode::AcceptEdits
            )
            .0,
        Decision::Allow
    );
    assert_eq!(
        inner.decide(
            &engine,
            "Write",
            &world.home.join(".cargo/config.toml"),
            PermissionMode::AcceptEdits
        ),
        (Decision::Ask, Layer::Risk)
    );
}
