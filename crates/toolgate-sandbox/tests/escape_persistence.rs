//! The escape suite, persistence part: files that tools outside the sandbox act on — the
//! sandbox's list of persistence names, and repositories anywhere below a project root —
//! cannot be created or changed from the room so that they act later, outside it. Each
//! test makes the real attempt and then checks the host, as the user's next command would.
//! Needs tier A; fails loudly, never skips.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use toolgate_sandbox::{Layer, WhenMissing, default_protected};

fn tier_a() {
    require(&[Layer::UserNs, Layer::MountNs, Layer::PidNs, Layer::Seccomp]);
}

/// Persistence files found creatable in the room (issue "one source of truth"); each must be
/// covered by an entry of the list (itself or a directory above it).
const CONFIRMED: &[&str] = &[
    ".profile",
    ".zshrc",
    ".bash_profile",
    ".cargo/config.toml",
    ".npmrc",
    ".yarnrc.yml",
    "bunfig.toml",
    ".pnpmfile.cjs",
    ".husky/pre-commit",
    "lefthook.yml",
    ".pre-commit-config.yaml",
    ".envrc",
    ".devcontainer/devcontainer.json",
    ".gitmodules",
    ".codex/config.toml",
    ".cursor/mcp.json",
    ".gemini/settings.json",
    ".mcp.json",
    ".claude/settings.json",
    ".toolgate/settings.json",
    ".vscode/tasks.json",
];

/// The persistence names of the list the room keeps from being created — all but git's own
/// (tested below), the exceptions, and the entries protected only where they exist
/// (`WhenMissing::Skip`: `.config/git`, a build wrapper's properties deeper down).
fn persistence_names() -> Vec<String> {
    let names: Vec<String> = default_protected()
        .into_iter()
        .filter(|n| {
            !n.path.starts_with(".git/")
                && !matches!(n.when_missing, WhenMissing::Exception | WhenMissing::Skip)
        })
        .map(|n| n.path)
        .collect();
    for c in CONFIRMED {
        assert!(
            names.iter().any(|n| Path::new(c).starts_with(n)),
            "{c} is not covered by the sandbox's persistence names"
        );
    }
    names
}

/// `git` on the host, as the user would run it next, never looking above `ceiling`.
fn host_git(ceiling: &Path, dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CEILING_DIRECTORIES", ceiling)
        .output()
        .unwrap_or_else(|e| panic!("git: {e}"))
}

fn fsmonitor(marker: &Path) -> String {
    format!(
        "[core]\\n\\tfsmonitor = \\\"touch {}; false\\\"\\n",
        marker.display()
    )
}

/// Every name of the list, created fresh in the room (as a file, else as a directory with a
/// file in it), is not there with the command's content after the run: a placeholder kept it
/// from being created, or it was moved aside (and the run says so).
#[test]
fn persistence_files_cannot_be_created() {
    tier_a();
    let f = Fixture::new();
    let names = persistence_names();
    let mut script = String::new();
    for n in &names {
        script.push_str(&format!(
            "mkdir -p \"$(dirname {n})\" 2>/dev/null; printf PWNED > {n} 2>/dev/null || \
             {{ mkdir -p {n} && printf PWNED > {n}/inner; }} 2>/dev/null; "
        ));
    }
    script.push_str("echo ok > positive-control; true");
    let out = f.sh(&f.policy(), &script);
    assert!(out.status.success(), "{}", text(&out));
    assert!(f.ws.join("positive-control").exists(), "{}", text(&out));
    for n in &names {
        let p = f.ws.join(n);
        let content = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(
            !content.contains("PWNED"),
            "{n} was created: {}",
            text(&out)
        );
        assert!(
            !p.join("inner").exists(),
            "{n}/inner was created: {}",
            text(&out)
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(".npmrc.toolgate-blocked") && stderr.contains("persistence file"),
        "{}",
        text(&out)
    );
}

/// Where they exist, the names of the list are read-only: not overwritten, removed, moved
/// aside, or replaced through a moved parent directory.
#[test]
fn existing_persistence_files_cannot_be_changed() {
    tier_a();
    let f = Fixture::new();
    let names = persistence_names();
    for n in &names {
        let p = f.ws.join(n);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(&p, "orig").unwrap_or_else(|e| panic!("{e}"));
    }
    let mut script = String::new();
    for n in &names {
        script.push_str(&format!(
            "printf PWNED > {n}; printf PWNED >> {n}; rm -f {n}; mv {n} {n}.x; \
             mv \"$(dirname {n})\" moved-parent && mkdir -p \"$(dirname {n})\" && printf PWNED > {n}; "
        ));
    }
    let out = f.sh(&f.policy(), &format!("{script} true"));
    for n in &names {
        assert_eq!(
            std::fs::read_to_string(f.ws.join(n)).unwrap_or_default(),
            "orig",
            "{n} changed: {}",
            text(&out)
        );
    }
}

/// `.claude/worktrees` (where agent worktrees live) is the exception inside `.claude`.
#[test]
fn claude_worktrees_stay_writable_inside_a_read_only_claude_dir() {
    tier_a();
    let f = Fixture::new();
    std::fs::create_dir_all(f.ws.join(".claude/worktrees")).unwrap_or_else(|e| panic!("{e}"));
    let out = f.sh(
        &f.policy(),
        "mkdir -p .claude/worktrees/wt1 && echo ok > .claude/worktrees/wt1/f && echo MADE; \
         echo '{}' > .claude/settings.json 2>/dev/null || echo REFUSED",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("MADE") && stdout.contains("REFUSED"),
        "{}",
        text(&out)
    );
    assert!(f.ws.join(".claude/worktrees/wt1/f").exists());
    assert!(!f.ws.join(".claude/settings.json").exists());
}

/// A repository below the workspace (a vendored checkout, a bare fixture, a submodule's git
/// directory under `.git/modules/`) keeps its `config` and `hooks` read-only and cannot be
/// moved aside: a `core.fsmonitor` written from the room would run at the user's next
/// `git status` there.
#[test]
fn nested_repositories_keep_config_and_hooks_read_only() {
    tier_a();
    let f = Fixture::new();
    let marker = f.outside.join("pwned");
    std::fs::remove_dir_all(f.ws.join(".git")).unwrap_or_else(|e| panic!("{e}"));
    for args in [
        &["init", "-q", "."][..],
        &["init", "-q", "vendor/lib"],
        &["init", "-q", "--bare", "fixtures/bare.git"],
        &["init", "-q", "--bare", ".git/modules/sub"],
    ] {
        let out = host_git(&f.root, &f.ws, args);
        assert!(out.status.success(), "{}", text(&out));
    }
    let gitdirs = ["vendor/lib/.git", "fixtures/bare.git", ".git/modules/sub"];
    let before: Vec<Vec<u8>> = gitdirs
        .iter()
        .map(|g| std::fs::read(f.ws.join(g).join("config")).unwrap_or_default())
        .collect();
    let mut script = String::new();
    for g in gitdirs {
        script.push_str(&format!(
            "printf '{fsm}' >> {g}/config; git config -f {g}/config core.fsmonitor 'touch {m}'; \
             mkdir -p {g}/hooks; printf '#!/bin/sh\\ntouch {m}\\n' > {g}/hooks/pre-commit; \
             printf '../../evil' > {g}/commondir; mv {g} {g}.moved; ",
            fsm = fsmonitor(&marker),
            m = marker.display()
        ));
    }
    let out = f.sh(&f.policy(), &format!("{script} echo ok > positive-control"));
    assert!(f.ws.join("positive-control").exists(), "{}", text(&out));
    for (g, before) in gitdirs.iter().zip(&before) {
        let dir = f.ws.join(g);
        assert_eq!(
            &std::fs::read(dir.join("config")).unwrap_or_default(),
            before,
            "{g}/config changed: {}",
            text(&out)
        );
        assert!(!dir.join("hooks/pre-commit").exists(), "{g}: hook planted");
        assert!(!f.ws.join(format!("{g}.moved")).exists(), "{g} moved aside");
    }
    let out = host_git(&f.root, &f.ws.join("vendor/lib"), &["status"]);
    assert!(out.status.success(), "{}", text(&out));
    // Bare: no work tree to report on, but git reads their config all the same.
    let _ = host_git(&f.root, &f.ws.join("fixtures/bare.git"), &["status"]);
    let _ = host_git(&f.root, &f.ws, &["--git-dir=.git/modules/sub", "status"]);
    assert!(
        !marker.exists(),
        "a hook or fsmonitor planted in the room ran outside it"
    );
}

/// A repository the command creates — `git init sub`, a bare one, a `.git` file pointing at
/// a git directory it filled — is neutralised after the run, so the `core.fsmonitor` it
/// planted does not run at the next `git status` there.
#[test]
fn repositories_created_in_the_room_are_neutralised() {
    tier_a();
    let f = Fixture::new();
    let marker = f.outside.join("pwned");
    let fsm = fsmonitor(&marker);
    let script = format!(
        "git init -q sub && printf '{fsm}' >> sub/.git/config; \
         mkdir -p a/b && git init -q --bare a/b/bare.git && printf '{fsm}' >> a/b/bare.git/config; \
         git init -q --bare evilgd && printf '{fsm}' >> evilgd/config; \
         mkdir -p c && printf 'gitdir: ../evilgd\\n' > c/.git; \
         mkdir -p d/.git && cp -r evilgd/. d/.git/; \
         echo ok > positive-control"
    );
    let out = f.sh(&f.policy(), &script);
    assert!(f.ws.join("positive-control").exists(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a repository created in the sandbox"),
        "{}",
        text(&out)
    );
    for dir in ["sub", "a/b/bare.git", "c", "d", "evilgd"] {
        let _ = host_git(&f.root, &f.ws.join(dir), &["status"]);
        assert!(
            !marker.exists(),
            "{dir}: the fsmonitor planted in the room ran outside: {}",
            text(&out)
        );
    }
    assert!(
        f.ws.join("sub/.git.toolgate-blocked").exists(),
        "{}",
        text(&out)
    );
    assert!(
        f.ws.join("c/.git.toolgate-blocked").exists(),
        "{}",
        text(&out)
    );
    assert!(
        f.ws.join("a/b/bare.git/HEAD.toolgate-blocked").exists(),
        "{}",
        text(&out)
    );
}
