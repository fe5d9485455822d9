//! Path rules against what a command touches *beneath* a directory it names: `grep -r KEY .`
//! reads `.env`, `tar czf x.tgz .` archives it, `rm -r d` deletes `d/keep`. Run on real
//! trees with the real shell analyzer.

mod common;

use std::path::Path;

use serde_json::json;
use toolgate_policy::{Decided, Engine, PolicyRequest, RuleKind};
use toolgate_protocol::{Beneath, Decision, Layer, PermissionMode, Subject, ToolAnnotations};

struct Tree {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
}

impl Tree {
    fn new(files: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in files {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
        }
        Tree { _dir: dir, root }
    }

    fn engine(&self, rules: &[(RuleKind, &str)]) -> Engine {
        let mut b = Engine::builder().cwd(&self.root).home(common::HOME);
        for (k, r) in rules {
            b = b.rule(*k, r, "test settings");
        }
        b.build().unwrap()
    }

    fn decide(&self, engine: &Engine, command: &str) -> Decided {
        let root: &Path = &self.root;
        let facts = common::analyzer_facts(command, root, &[root]).unwrap();
        let input = json!({ "command": command });
        let req = PolicyRequest {
            tool: "Bash",
            subject: &Subject::Command {
                field: "command".into(),
            },
            annotations: ToolAnnotations::default(),
            input: &input,
            facts: &facts,
            mode: PermissionMode::Default,
            hook: None,
            cwd: root,
            roots: &[root],
        };
        engine.decide(&req)
    }

    fn verdict(&self, engine: &Engine, command: &str) -> (Decision, Layer, String) {
        let v = self.decide(engine, command).verdict;
        (v.decision, v.layer, v.reason)
    }
}

fn deny(rule: &str) -> Vec<(RuleKind, &str)> {
    vec![(RuleKind::Deny, rule)]
}

#[test]
fn recursive_searches_and_archives_meet_read_denies_below_their_directory() {
    let t = Tree::new(&[".env", "src/main.rs", "docs/guide.md"]);
    let e = t.engine(&deny("Read(.env)"));
    let env = t.root.join(".env");
    for cmd in [
        "grep -r KEY .",
        "grep -rn KEY",
        "grep -R KEY .",
        "egrep --recursive KEY .",
        "grep -d recurse KEY .",
        "rg --hidden KEY",
        "rg -uu KEY .",
        "rg -. KEY",
        "ack KEY",
        "tar czf /tmp/out.tgz .",
        "tar -cf /tmp/out.tar .",
        "zip -r /tmp/out.zip .",
        "cp -r . /tmp/copy",
        "rsync -a ./ /tmp/copy/",
        "diff -r . /tmp/other",
        "cd src && grep -r KEY ..",
    ] {
        let (d, layer, reason) = t.verdict(&e, cmd);
        assert_eq!((d, layer), (Decision::Deny, Layer::Rule), "{cmd}: {reason}");
        assert!(
            reason.contains(&env.display().to_string()) && reason.contains("beneath"),
            "{cmd}: {reason}"
        );
    }
    // Directories without a denied file below them, single files, and commands that do
    // not descend are untouched.
    for cmd in [
        "grep -r KEY src docs",
        "grep KEY src/main.rs",
        "grep KEY .",
        "rg KEY",
        "rg KEY src",
        "ls -R .",
        "tar xzf /tmp/out.tgz",
        "tar tf /tmp/out.tar",
        "tar --no-recursion -cf /tmp/out.tar .",
        "cat src/main.rs | rg KEY",
        "rg KEY < src/main.rs",
    ] {
        let (d, _, reason) = t.verdict(&e, cmd);
        assert_ne!(d, Decision::Deny, "{cmd}: {reason}");
    }
}

#[test]
fn rg_default_walk_skips_hidden_and_ignored_files_as_rg_does() {
    let t = Tree::new(&["secrets/key.txt", "src/main.rs", ".gitignore"]);
    std::fs::write(t.root.join(".gitignore"), "secrets/\n").unwrap();
    std::fs::create_dir(t.root.join(".git")).unwrap();
    let e = t.engine(&deny("Read(./secrets/**)"));
    // `rg` honours .gitignore in a repository: it never opens secrets/.
    assert_ne!(t.verdict(&e, "rg KEY").0, Decision::Deny);
    // Without ignore files it would; so would grep.
    for cmd in [
        "rg --no-ignore KEY",
        "rg -u KEY",
        "grep -r KEY .",
        "ag -U KEY",
    ] {
        let (d, _, reason) = t.verdict(&e, cmd);
        assert_eq!(d, Decision::Deny, "{cmd}: {reason}");
    }
}

#[test]
fn two_searches_of_one_directory_reach_what_the_wider_one_does() {
    let t = Tree::new(&["src/.env", "src/a.py"]);
    let e = t.engine(&deny("Read(.env)"));
    // `rg` alone skips the hidden file; with `grep -r` after it, in either order, it is read.
    assert_ne!(
        t.verdict(&e, "rg KEY src && rg -n KEY src").0,
        Decision::Deny
    );
    for cmd in [
        "rg KEY src && grep -r KEY src",
        "grep -r KEY src; rg KEY src",
    ] {
        assert_eq!(t.verdict(&e, cmd).0, Decision::Deny, "{cmd}");
    }
    // A name limit on one search does not narrow the other.
    let cmd = "grep -r --include=*.py KEY src; grep -r KEY src";
    assert_eq!(t.verdict(&e, cmd).0, Decision::Deny, "{cmd}");
    let cmd = "grep -r --include=*.py KEY src; grep -r --include=*.py KEY src";
    assert_ne!(t.verdict(&e, cmd).0, Decision::Deny, "{cmd}");
}

#[test]
fn recursive_deletes_and_mode_changes_meet_edit_denies_but_not_read_denies() {
    let t = Tree::new(&["build/keep.txt", "build/out.o", "node_modules/x/.env"]);
    let e = t.engine(&deny("Edit(./build/keep.txt)"));
    for cmd in [
        "rm -rf build",
        "rm -r .",
        "chmod -R 777 build",
        "mv build /tmp/b",
    ] {
        let (d, layer, reason) = t.verdict(&e, cmd);
        assert_eq!((d, layer), (Decision::Deny, Layer::Rule), "{cmd}: {reason}");
        assert!(reason.contains("keep.txt"), "{cmd}: {reason}");
    }
    assert_ne!(t.verdict(&e, "rm -rf node_modules").0, Decision::Deny);
    assert_ne!(t.verdict(&e, "rm build/out.o").0, Decision::Deny);
    // Deleting a tree is not a read of what it holds.
    let e = t.engine(&deny("Read(.env)"));
    assert_ne!(t.verdict(&e, "rm -rf node_modules").0, Decision::Deny);
}

#[test]
fn ask_rules_apply_beneath_too_and_copies_need_a_recursive_flag() {
    let t = Tree::new(&["conf/prod.yaml", "notes.txt"]);
    let e = t.engine(&[(RuleKind::Ask, "Read(./conf/prod.yaml)")]);
    let (d, layer, reason) = t.verdict(&e, "grep -r host .");
    assert_eq!((d, layer), (Decision::Ask, Layer::Rule), "{reason}");
    // `cp` without -r copies no directory; `cp notes.txt` has nothing beneath.
    let e = t.engine(&deny("Read(./conf/**)"));
    assert_ne!(t.verdict(&e, "cp . /tmp/x").0, Decision::Deny);
    assert_ne!(t.verdict(&e, "cp -r notes.txt /tmp/x").0, Decision::Deny);
    assert_eq!(t.verdict(&e, "cp -a . /tmp/x").0, Decision::Deny);
}

#[test]
fn a_symlinked_directory_is_walked_where_it_leads() {
    let t = Tree::new(&["real/.env", "real/a.txt"]);
    std::os::unix::fs::symlink(t.root.join("real"), t.root.join("link")).unwrap();
    let e = t.engine(&deny("Read(.env)"));
    let (d, _, reason) = t.verdict(&e, "grep -r KEY link");
    assert_eq!(d, Decision::Deny, "{reason}");
    // A link inside a tree is not followed by `grep -r`, and not by the walk.
    let t = Tree::new(&["a.txt", "elsewhere/.env"]);
    std::os::unix::fs::symlink(t.root.join("elsewhere"), t.root.join("src_link")).unwrap();
    std::fs::create_dir(t.root.join("src")).unwrap();
    std::os::unix::fs::symlink(t.root.join("elsewhere"), t.root.join("src/inner")).unwrap();
    assert_ne!(t.verdict(&e, "grep -r KEY src").0, Decision::Deny);
    // A link to a covered file is checked where it leads (`grep -R` reads through it).
    std::os::unix::fs::symlink(t.root.join("elsewhere/.env"), t.root.join("src/settings")).unwrap();
    let (d, _, reason) = t.verdict(&e, "grep -R KEY src");
    assert_eq!(d, Decision::Deny, "{reason}");
    assert!(reason.contains("elsewhere/.env"), "{reason}");
}

#[test]
fn rules_that_cannot_reach_below_skip_the_walk_and_huge_trees_are_opaque() {
    let t = Tree::new(&["src/a.rs"]);
    // Two directories of just over half the entries the walk looks at per call.
    for half in ["h1", "h2"] {
        let dir = t.root.join(half);
        std::fs::create_dir(&dir).unwrap();
        for i in 0..=toolgate_policy::MAX_BENEATH_ENTRIES / 2 {
            std::fs::File::create(dir.join(format!("{i}"))).unwrap();
        }
    }
    // A rule anchored elsewhere never walks them: allowed as a read-only command.
    let e = t.engine(&deny("Read(./src/secret/**)"));
    let (d, _, reason) = t.verdict(&e, "grep -r KEY h1 h2");
    assert_eq!(d, Decision::Allow, "{reason}");
    // An unanchored rule has to look at every entry: each alone is walked to the end...
    let e = t.engine(&deny("Read(.env)"));
    for half in ["h1", "h2"] {
        let (d, _, reason) = t.verdict(&e, &format!("grep -r KEY {half}"));
        assert_eq!(d, Decision::Allow, "{half}: {reason}");
    }
    // ...but the budget is for the whole call, not for each directory it names: the call
    // is opaque (asked), never judged on a partial walk.
    let (d, _, reason) = t.verdict(&e, "grep -r KEY h1 h2");
    assert_eq!(d, Decision::Ask, "{reason}");
    assert!(reason.contains("entries below"), "{reason}");
}

#[test]
fn facts_say_what_lies_beneath() {
    let t = Tree::new(&["src/a.rs"]);
    let root: &Path = &t.root;
    let beneath = |cmd: &str| -> Vec<Beneath> {
        common::analyzer_facts(cmd, root, &[root])
            .unwrap()
            .paths
            .iter()
            .map(|p| p.beneath)
            .collect()
    };
    assert_eq!(beneath("grep -r x src"), [Beneath::Everything]);
    assert_eq!(beneath("rg x src"), [Beneath::Visible]);
    assert_eq!(beneath("rg x"), [Beneath::Visible]);
    // Input on stdin replaces the directory; another descriptor does not.
    assert_eq!(beneath("rg x < src/a.rs"), [Beneath::Nothing]);
    assert_eq!(
        beneath("rg x 3< src/a.rs"),
        [Beneath::Nothing, Beneath::Visible]
    );
    assert_eq!(
        beneath("grep -r x < src/a.rs"),
        [Beneath::Nothing, Beneath::Everything]
    );
    assert_eq!(beneath("grep x src/a.rs"), [Beneath::Nothing]);
    assert_eq!(beneath("ln -s src l")[0], Beneath::Nothing);
    // Serialised only when there is something beneath.
    let facts = common::analyzer_facts("grep x src/a.rs", root, &[root]).unwrap();
    assert!(
        serde_json::to_value(&facts.paths[0])
            .unwrap()
            .get("beneath")
            .is_none()
    );
    let facts = common::analyzer_facts("grep -r x src", root, &[root]).unwrap();
    assert_eq!(
        serde_json::to_value(&facts.paths[0]).unwrap()["beneath"],
        "everything"
    );
}

#[test]
fn name_limits_of_a_search_narrow_the_walk_and_nothing_else_does() {
    let t = Tree::new(&[".env", "src/app.py", "secrets/key.pem", "secrets/notes.txt"]);
    let e = t.engine(&deny("Read(.env)"));
    for cmd in [
        "grep -rn --include=*.py KEY .",
        "grep -r --include '*.py' --include='*.ts' KEY .",
        "rg --hidden -g '*.py' KEY",
        "rg -uu --glob=*.py KEY .",
    ] {
        let (d, _, reason) = t.verdict(&e, cmd);
        assert_ne!(d, Decision::Deny, "{cmd}: {reason}");
    }
    for cmd in [
        "grep -r --include=.env* KEY .",
        "grep -r --include=*.py --include=*env KEY .",
        // An exclusion is not modelled, and a glob with a path drops the limit.
        "rg --hidden -g '!*.py' KEY",
        "rg --hidden -g 'src/*.py' KEY",
        "grep -r --exclude=.env KEY .",
        // grep matches `--include` with fnmatch: classes, negated classes, escapes and
        // `?` that reach `.env` there must reach it in the model too (or drop the limit).
        "grep -r --include='.[[:alpha:]]nv' KEY .",
        "grep -r --include='.[!x]nv' KEY .",
        "grep -r --include='.[^x]nv' KEY .",
        "grep -r --include='[.]env' KEY .",
        "grep -r --include='.e?v' KEY .",
        "grep -r --include='.\\env' KEY .",
        "grep -r --include='[.env' --include='.env' KEY .",
    ] {
        let (d, _, reason) = t.verdict(&e, cmd);
        assert_eq!(d, Decision::Deny, "{cmd}: {reason}");
    }
    // Directories are crossed, not read: a limited walk meets the rule on the files only.
    let e = t.engine(&deny("Read(./secrets/**)"));
    assert_eq!(
        t.verdict(&e, "grep -r --include=*.txt KEY .").0,
        Decision::Deny
    );
    assert_ne!(
        t.verdict(&e, "grep -r --include=*.rs KEY .").0,
        Decision::Deny
    );
    assert_eq!(t.verdict(&e, "grep -r KEY .").0, Decision::Deny);
}
