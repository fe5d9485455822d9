//! The escape suite: each test makes a real attempt from inside the sandbox and fails if it
//! escapes. Needs tier A (namespaces) — it fails loudly, never skips, when a layer is missing.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use toolgate_sandbox::{DomainRules, Layer, NetworkMode, Proxy, ProxyDecision};

fn tool_s() -> String {
    tool().to_string_lossy().into_owned()
}

fn tier_a() {
    require(&[
        Layer::UserNs,
        Layer::MountNs,
        Layer::PidNs,
        Layer::NetNs,
        Layer::Seccomp,
        Layer::Landlock,
    ]);
}

#[test]
fn positive_control_workspace_is_writable() {
    tier_a();
    let f = Fixture::new();
    let out = f.sh(
        &f.policy(),
        "echo ok > new.txt && mkdir -p sub && echo x > sub/y && cat new.txt",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(f.ws.join("new.txt")).unwrap_or_default(),
        "ok\n"
    );
}

/// The command process is forked before pid 1 builds the view and waits for it: when the
/// view cannot be built, the command must never run (neither in the host's view nor in half
/// a sandbox), and the run fails with the setup error.
#[test]
fn failed_view_build_runs_nothing() {
    tier_a();
    let f = Fixture::new();
    let link = f.root.join("link-to-outside");
    std::os::unix::fs::symlink(&f.outside, &link).unwrap_or_else(|e| panic!("{e}"));
    let mut policy = f.policy();
    // Rejected by pid 1 while it builds the view (a writable root must be canonical).
    policy.filesystem.writable_roots.push(link);
    let script = format!(
        "echo ran > {}/ran.txt; echo ran > {}/ran.txt",
        f.outside.display(),
        f.ws.display()
    );
    let out = f.sh(&policy, &script);
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(text(&out).contains("symlink"), "{}", text(&out));
    assert!(
        !f.outside.join("ran.txt").exists(),
        "ran in the host's view"
    );
    assert!(
        !f.ws.join("ran.txt").exists(),
        "ran without a complete view"
    );
}

#[test]
fn write_outside_workspace_is_contained() {
    tier_a();
    let f = Fixture::new();
    let p = f.policy();
    let victim = f.outside.join("victim.txt");
    for target in [
        victim.clone(),
        f.home.join("x"),
        "/etc/toolgate-escape".into(),
        f.root.join("x"),
    ] {
        let out = f.run(
            &p,
            &[&tool_s(), "write", &target.to_string_lossy(), "PWNED"],
        );
        // Under /tmp the write may succeed into the sandbox's private tmpfs (the checkout
        // itself may live under /tmp); what matters is the host, checked below.
        if !target.starts_with("/tmp") {
            assert_contained(&out);
        }
    }
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap_or_default(),
        "original"
    );
    assert!(!Path::new("/etc/toolgate-escape").exists());
    assert!(!f.home.join("x").exists());
    assert!(
        !f.root.join("x").exists(),
        "the host's file system was written"
    );
}

#[test]
fn read_ssh_key_and_dotenv_is_contained() {
    tier_a();
    let f = Fixture::new();
    let p = f.policy();
    for target in [f.home.join(".ssh/id_ed25519"), f.ws.join(".env")] {
        let out = f.run(&p, &[&tool_s(), "read", &target.to_string_lossy()]);
        assert_contained(&out);
    }
    let out = f.sh(
        &p,
        &format!(
            "ls -la {}/.ssh; cat {}/.ssh/* 2>&1; grep -r SECRET {} 2>/dev/null",
            f.home.display(),
            f.home.display(),
            f.root.display()
        ),
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("SECRET"),
        "{}",
        text(&out)
    );
}

#[test]
fn protected_paths_cannot_be_written_or_created() {
    tier_a();
    let f = Fixture::new();
    let p = f.policy();
    let targets = [
        f.ws.join(".git/hooks/pre-commit"), // .git/hooks missing: created as a read-only placeholder
        f.ws.join(".git/config"),
        f.ws.join(".claude/settings.json"), // missing: placeholder dir
        f.ws.join(".mcp.json"),             // missing: placeholder file
        f.ws.join(".toolgate/settings.json"),
    ];
    for t in &targets {
        let out = f.run(
            &p,
            &[
                &tool_s(),
                "write",
                &t.to_string_lossy(),
                "#!/bin/sh\necho pwned\n",
            ],
        );
        assert_contained(&out);
    }
    let out = f.sh(&p, "rm -rf .git/hooks .claude; mv .git/config x; mkdir -p .claude/x; echo > .git/hooks/post-checkout; ls .git/hooks");
    let _ = out;
    assert!(!f.ws.join(".git/hooks/pre-commit").exists());
    assert!(!f.ws.join(".git/hooks/post-checkout").exists());
    assert!(!f.ws.join(".claude/settings.json").exists());
    assert!(!f.ws.join(".claude/x").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/config")).unwrap_or_default(),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read(f.ws.join(".mcp.json"))
            .unwrap_or_default()
            .len(),
        0
    );
}

/// Where there is no `.git`, a command must not create a repository: its hooks, its
/// `core.fsmonitor` or a `gitdir:` file pointing at a directory the command filled would run
/// at the user's next `git` command in the workspace, outside the sandbox.
#[test]
fn a_repository_cannot_be_created_where_there_is_none() {
    tier_a();
    let f = Fixture::new();
    std::fs::remove_dir_all(f.ws.join(".git")).unwrap_or_else(|e| panic!("{e}"));
    let p = f.policy();
    for t in [".git/hooks/pre-commit", ".git/config", ".git/HEAD"] {
        let out = f.run(
            &p,
            &[&tool_s(), "write", &f.ws.join(t).to_string_lossy(), "pwned"],
        );
        assert_contained(&out);
    }
    let script = "mkdir -p .git/hooks; echo pwned > .git/hooks/pre-commit; \
                  git init -q . 2>/dev/null; git init -q --separate-git-dir=gd . 2>/dev/null; \
                  rm -rf .git 2>/dev/null; mv .git moved 2>/dev/null; \
                  printf 'gitdir: evil\\n' > .git 2>/dev/null; \
                  mkdir -p evil/hooks && echo written > evil/hooks/pre-commit; true";
    let out = f.sh(&p, script);
    assert!(out.status.success(), "{}", text(&out));
    // Positive control: the rest of the workspace stayed writable.
    assert_eq!(
        std::fs::read_to_string(f.ws.join("evil/hooks/pre-commit")).unwrap_or_default(),
        "written\n",
        "{}",
        text(&out)
    );
    // (`--separate-git-dir=gd` may leave a `gd` directory behind, depending on git's
    // version: an ordinary directory. What matters is that `.git` never points at it.)
    assert!(!f.ws.join("moved").exists());
    // The placeholder is gone after the run, or (while another test's sandbox holds the
    // shared lock) still an empty directory: never a file, never with content.
    let git = f.ws.join(".git");
    if let Ok(meta) = std::fs::symlink_metadata(&git) {
        let entries = std::fs::read_dir(&git)
            .map(|d| d.count())
            .unwrap_or(usize::MAX);
        assert!(
            meta.is_dir() && entries == 0,
            "a repository was created: {}",
            text(&out)
        );
    }
}

/// `.git/commondir` moves a repository's `config` and `hooks` to the directory it names;
/// pointed at a directory the command filled, its `core.fsmonitor` would run at the user's
/// next `git status`. The placeholder (`.`, pointing at the repository itself) must leave
/// git working inside and outside.
#[test]
fn git_config_cannot_be_redirected() {
    tier_a();
    let f = Fixture::new();
    std::fs::remove_dir_all(f.ws.join(".git")).unwrap_or_else(|e| panic!("{e}"));
    let git = |args: &[&str]| {
        Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(&f.ws)
            .output()
            .unwrap_or_else(|e| panic!("git: {e}"))
    };
    let init = git(&["init", "-q", "."]);
    assert!(init.status.success(), "{}", text(&init));
    let p = f.policy();
    for t in [".git/commondir", ".git/config.worktree"] {
        let out = f.run(
            &p,
            &[
                &tool_s(),
                "write",
                &f.ws.join(t).to_string_lossy(),
                "../evil\n",
            ],
        );
        assert_contained(&out);
    }
    let script = "mkdir -p evil/hooks evil/objects evil/refs && cp .git/HEAD evil/ && \
                  printf '[core]\\n\\tfsmonitor = \"touch pwned; false\"\\n' > evil/config; \
                  printf '../evil\\n' > .git/commondir 2>/dev/null; \
                  mv .git/commondir x 2>/dev/null; rm -f .git/commondir 2>/dev/null; \
                  git -c user.name=t -c user.email=t@t commit -q --allow-empty -m inside \
                  && echo COMMITTED";
    let out = f.sh(&p, script);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("COMMITTED"),
        "git must still work inside: {}",
        text(&out)
    );
    let status = git(&["status", "--short"]);
    assert!(status.status.success(), "{}", text(&status));
    assert!(
        !f.ws.join("pwned").exists(),
        "the command's core.fsmonitor ran outside"
    );
    let log = git(&["log", "--format=%s"]);
    assert_eq!(
        String::from_utf8_lossy(&log.stdout),
        "inside\n",
        "{}",
        text(&log)
    );
    // Gone after the run, or still the placeholder while another test's sandbox runs.
    match std::fs::read(f.ws.join(".git/commondir")) {
        Ok(content) => assert_eq!(content, b".\n"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
    }
}

/// The carve-outs live inside `.git`: moving the whole directory aside (or deleting it) and
/// making a fresh one would shed them all.
#[test]
fn git_dir_cannot_be_moved_aside_or_replaced() {
    tier_a();
    let f = Fixture::new();
    let p = f.policy();
    let script = "mv .git moved 2>/dev/null; rm -rf .git 2>/dev/null; \
                  mkdir -p .git/hooks 2>/dev/null; \
                  printf '[core]\\n\\tfsmonitor = \"touch pwned\"\\n' > .git/config 2>/dev/null; \
                  echo ok > .git/objects-like-file && echo STILL-WRITABLE";
    let out = f.sh(&p, script);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("STILL-WRITABLE"),
        "the rest of .git must stay writable: {}",
        text(&out)
    );
    assert!(!f.ws.join("moved").exists(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/config")).unwrap_or_default(),
        "[core]\n",
        "{}",
        text(&out)
    );
}

/// A `denyWrite` path below the workspace's top must not be shed by moving one of its
/// parent directories aside and recreating the path.
#[test]
fn write_denied_path_survives_moving_its_parents() {
    tier_a();
    let f = Fixture::new();
    let deep = f.ws.join("conf/prod");
    std::fs::create_dir_all(&deep).unwrap_or_else(|e| panic!("{e}"));
    let target = deep.join("deploy.yaml");
    std::fs::write(&target, "safe\n").unwrap_or_else(|e| panic!("{e}"));
    let mut p = f.policy();
    p.filesystem.write_denied.push(target.clone());
    let script = "mv conf c2 2>/dev/null; mv conf/prod conf/p2 2>/dev/null; \
                  rm -rf conf 2>/dev/null; mkdir -p conf/prod; \
                  echo evil > conf/prod/deploy.yaml 2>/dev/null; \
                  echo ok > conf/prod/other.yaml && echo STILL-WRITABLE";
    let out = f.sh(&p, script);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("STILL-WRITABLE"),
        "the rest of the directory must stay writable: {}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap_or_default(),
        "safe\n",
        "{}",
        text(&out)
    );
    assert!(
        !f.ws.join("c2").exists() && !f.ws.join("conf/p2").exists(),
        "{}",
        text(&out)
    );
}

/// A `.git` symlink could be replaced, and carve-outs through it would land wherever it
/// points: it is masked.
#[test]
fn git_symlink_is_masked() {
    tier_a();
    let f = Fixture::new();
    let real = f.ws.join("real-git");
    std::fs::rename(f.ws.join(".git"), &real).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink("real-git", f.ws.join(".git")).unwrap_or_else(|e| panic!("{e}"));
    let p = f.policy();
    let script = "rm -f .git 2>/dev/null; mkdir .git 2>/dev/null; \
                  echo evil > .git/config 2>/dev/null; ls .git/ 2>/dev/null; true";
    let out = f.sh(&p, script);
    assert!(out.status.success(), "{}", text(&out));
    let link = std::fs::read_link(f.ws.join(".git")).unwrap_or_default();
    assert_eq!(link, Path::new("real-git"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(real.join("config")).unwrap_or_default(),
        "[core]\n"
    );
}

/// A `.git` file (a linked worktree's or a submodule's `gitdir:` pointer) must not be
/// repointed at a directory the command controls.
#[test]
fn a_gitdir_file_cannot_be_repointed() {
    tier_a();
    let f = Fixture::new();
    std::fs::remove_dir_all(f.ws.join(".git")).unwrap_or_else(|e| panic!("{e}"));
    let pointer = format!("gitdir: {}\n", f.outside.join("repo.git").display());
    std::fs::write(f.ws.join(".git"), &pointer).unwrap_or_else(|e| panic!("{e}"));
    let p = f.policy();
    let out = f.run(
        &p,
        &[
            &tool_s(),
            "write",
            &f.ws.join(".git").to_string_lossy(),
            "gitdir: evil\n",
        ],
    );
    assert_contained(&out);
    let out = f.sh(
        &p,
        "rm -f .git; mv .git moved; printf 'gitdir: evil\\n' > .git; echo ok > other; true",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(f.ws.join("other")).unwrap_or_default(),
        "ok\n",
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git")).unwrap_or_default(),
        pointer,
        "{}",
        text(&out)
    );
}

#[test]
fn symlink_and_hard_link_out_of_workspace_are_contained() {
    tier_a();
    let f = Fixture::new();
    let victim = f.outside.join("victim.txt");
    std::os::unix::fs::symlink(&victim, f.ws.join("evil_link")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(&f.outside, f.ws.join("evil_dir")).unwrap_or_else(|e| panic!("{e}"));
    let p = f.policy();
    for t in ["evil_link", "evil_dir/new.txt", "../outside/victim.txt"] {
        let out = f.run(&p, &[&tool_s(), "write", t, "PWNED"]);
        assert_contained(&out);
    }
    // Hard link created inside the sandbox, then written through.
    let script = format!(
        "ln {} hl 2>/dev/null && echo PWNED >> hl; ln -s {} sl; echo PWNED >> sl; true",
        victim.display(),
        victim.display()
    );
    let out = f.sh(&p, &script);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap_or_default(),
        "original"
    );
    assert!(!f.outside.join("new.txt").exists());
}

#[test]
fn inherited_fd_is_closed() {
    tier_a();
    let f = Fixture::new();
    let home = std::ffi::CString::new(f.home.to_string_lossy().as_bytes()).unwrap_or_default();
    // SAFETY: deliberately leak a non-CLOEXEC dir fd into the child, as a careless harness would.
    let fd = unsafe { libc::open(home.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
    assert!(fd >= 0);
    // SAFETY: we own fd.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let out = f.run(
        &f.policy(),
        &[
            &tool_s(),
            "inherited-fd",
            &fd.to_string(),
            ".ssh/id_ed25519",
        ],
    );
    drop(owned);
    assert_contained(&out);
}

#[test]
fn remount_and_unmount_are_denied() {
    tier_a();
    let f = Fixture::new();
    let mask = f.home.join(".ssh");
    let out = f.run(
        &f.policy(),
        &[&tool_s(), "remount-rw", &mask.to_string_lossy()],
    );
    assert_contained(&out);
    let out = f.sh(&f.policy(), &format!("mount -o remount,rw / 2>&1; umount -l {} 2>&1; cat {}/id_ed25519 2>&1; touch /etc/x 2>&1", mask.display(), mask.display()));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("SECRET"),
        "{}",
        text(&out)
    );
    assert!(
        !Path::new("/etc/x").exists() || std::fs::metadata("/etc/x").is_ok_and(|m| m.len() > 0)
    );
}

#[test]
fn nested_user_namespace_is_denied() {
    tier_a();
    let f = Fixture::new();
    assert_contained(&f.run(&f.policy(), &[&tool_s(), "unshare-user"]));
    let out = f.sh(
        &f.policy(),
        "unshare --user --map-root-user true && echo NESTED-OK",
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("NESTED-OK"),
        "{}",
        text(&out)
    );
}

#[test]
fn outside_processes_cannot_be_traced_signalled_or_inspected() {
    tier_a();
    let f = Fixture::new();
    let mut victim = Command::new("sleep")
        .arg("30")
        .env("VICTIM_SECRET", "SECRET-ENVIRON")
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let pid = victim.id().to_string();
    let p = f.policy();
    assert_contained(&f.run(&p, &[&tool_s(), "ptrace", &pid]));
    assert_contained(&f.run(&p, &[&tool_s(), "kill", &pid]));
    assert_contained(&f.run(&p, &[&tool_s(), "read", &format!("/proc/{pid}/environ")]));
    // pid 1 inside is our init: its root and environment stay out of reach.
    assert_contained(&f.run(&p, &[&tool_s(), "read", "/proc/1/root/etc/hostname"]));
    assert_contained(&f.run(&p, &[&tool_s(), "ptrace", "1"]));
    assert!(
        victim.try_wait().ok().flatten().is_none(),
        "victim was killed from inside"
    );
    let _ = victim.kill();
    let _ = victim.wait();
}

#[test]
fn tiocsti_injection_is_denied() {
    tier_a();
    let f = Fixture::new();
    let (mut master, mut s) = (0, 0);
    // SAFETY: openpty fills two fds.
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut s,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0);
    // SAFETY: we own both fds.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(s)) };
    let argv: Vec<std::ffi::OsString> = vec![tool().into(), "tiocsti".into()];
    let mut cmd = toolgate_sandbox::command(&f.policy(), Path::new(HELPER), &argv, &f.ws)
        .unwrap_or_else(|e| panic!("{e}"));
    let stdin = slave.try_clone().unwrap_or_else(|e| panic!("{e}"));
    cmd.stdin(Stdio::from(stdin))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
    assert_contained(&out);
    // Nothing was injected into the terminal's input queue.
    // SAFETY: non-blocking read on our master fd.
    unsafe { libc::fcntl(master.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let mut buf = [0u8; 16];
    let mut m = std::fs::File::from(master);
    let n = m.read(&mut buf).unwrap_or(0);
    assert!(!buf[..n].contains(&b'x'), "injected: {:?}", &buf[..n]);
    drop(slave);
}

#[test]
fn fork_bomb_is_capped() {
    tier_a();
    let f = Fixture::new();
    let mut p = f.policy();
    p.limits.processes = Some(64);
    let out = f.run(&p, &[&tool_s(), "forkbomb", "400"]);
    assert_contained(&out);
}

#[test]
fn memory_beyond_limit_is_stopped() {
    tier_a();
    let f = Fixture::new();
    let mut p = f.policy();
    p.limits.memory = toolgate_sandbox::MemoryLimit::Bytes(128 << 20);
    let out = f.run(&p, &[&tool_s(), "alloc", "1024"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(!s.contains("ESCAPED"), "{}", text(&out));
    assert!(
        s.contains("CONTAINED") || out.status.code() == Some(137),
        "{}",
        text(&out)
    );
}

/// The limit the room's memory cgroup holds, read from inside (`None`: unlimited).
fn memory_limit_inside(f: &Fixture, p: &toolgate_sandbox::SandboxPolicy) -> Option<u64> {
    let out = f.run(p, &[&tool_s(), "memory-limit"]);
    let s = String::from_utf8_lossy(&out.stdout);
    let value = s
        .trim()
        .strip_prefix("MEMLIMIT ")
        .unwrap_or_else(|| panic!("{}", text(&out)));
    // cgroup v2 says `max`; v1 a page-rounded huge number.
    value.parse().ok().filter(|n| *n < (1u64 << 62))
}

/// With no `memoryMb`, the room's memory cgroup holds half the machine's RAM; `memoryMb`
/// sets another value, and `0` none at all.
#[test]
fn memory_is_limited_by_default() {
    tier_a();
    require(&[Layer::CgroupMemory]);
    let f = Fixture::new();
    let half = toolgate_sandbox::default_memory_bytes();
    let page = 4096;
    let got = memory_limit_inside(&f, &f.policy());
    assert!(
        got.is_some_and(|n| n <= half && n + page > half),
        "default limit {got:?}, expected {half}"
    );
    for (settings, want) in [
        (r#"{"limits": {"memoryMb": 300}}"#, Some(300u64 << 20)),
        (r#"{"limits": {"memoryMb": 0}}"#, None),
    ] {
        let json = serde_json::from_str(settings).unwrap_or_else(|e| panic!("{e}"));
        let ctx = toolgate_sandbox::PolicyContext {
            workspace: f.ws.clone(),
            additional_dirs: Vec::new(),
            home: Some(f.home.clone()),
        };
        let mut p = toolgate_sandbox::SandboxPolicy::from_settings(&json, &ctx)
            .unwrap_or_else(|e| panic!("{e}"));
        p.enabled = true;
        assert_eq!(memory_limit_inside(&f, &p), want, "{settings}");
    }
}

#[test]
fn time_limit_kills_everything_and_leaves_no_survivors() {
    tier_a();
    let f = Fixture::new();
    let mut p = f.policy();
    p.limits.wall_time_ms = Some(800);
    let marker = f.ws.join("daemon-survived");
    let start = Instant::now();
    let out = f.sh(
        &p,
        &format!("{} daemon {} ; sleep 30", tool_s(), marker.display()),
    );
    assert_eq!(
        out.status.code(),
        Some(i32::from(toolgate_sandbox::EXIT_TIMEOUT)),
        "{}",
        text(&out)
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(2000));
    assert!(
        !marker.exists(),
        "a daemonized grandchild survived the sandbox"
    );
}

#[test]
fn command_exit_leaves_no_survivors() {
    tier_a();
    let f = Fixture::new();
    let marker = f.ws.join("daemon-survived");
    let out = f.run(
        &f.policy(),
        &[&tool_s(), "daemon", &marker.to_string_lossy()],
    );
    assert!(out.status.success(), "{}", text(&out));
    std::thread::sleep(Duration::from_millis(2000));
    assert!(
        !marker.exists(),
        "a setsid grandchild survived the command's exit"
    );
}

#[test]
fn cpu_limit_kills_a_spinner() {
    tier_a();
    let f = Fixture::new();
    let mut p = f.policy();
    p.limits.cpu_time_secs = Some(1);
    let start = Instant::now();
    let out = f.run(&p, &[&tool_s(), "spin"]);
    let code = out.status.code().unwrap_or(0);
    assert!(
        code == 128 + libc::SIGXCPU || code == 128 + libc::SIGKILL,
        "{}",
        text(&out)
    );
    assert!(start.elapsed() < Duration::from_secs(6));
}

#[test]
fn network_none_blocks_host_loopback_and_internet_but_keeps_local_loopback() {
    tier_a();
    let f = Fixture::new();
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = host
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .to_string();
    let p = f.policy();
    assert_eq!(p.network.mode, NetworkMode::None);
    assert_contained(&f.run(&p, &[&tool_s(), "tcp-connect", &addr]));
    // UDP connect() sends nothing; it only asks for a route (TEST-NET-1 and a resolver).
    assert_contained(&f.run(&p, &[&tool_s(), "udp-route", "192.0.2.1:53"]));
    assert_contained(&f.run(&p, &[&tool_s(), "udp-route", "[2001:db8::1]:53"]));
    let out = f.run(&p, &[&tool_s(), "loopback-server"]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("pong"),
        "{}",
        text(&out)
    );
}

/// A socket file of the host (Docker's, the user's systemd or D-Bus, an ssh agent) is not
/// protected by the read-only view: `connect` needs no write access to the mount. It must
/// still be unreachable, in every network mode; `allowAllUnixSockets` opts out (and proves
/// the fixture can be reached, so the contained case is not a broken fixture).
#[test]
fn host_unix_sockets_are_unreachable() {
    tier_a();
    let f = Fixture::new();
    let path = f.outside.join("daemon.sock");
    let server = std::os::unix::net::UnixListener::bind(&path).unwrap_or_else(|e| panic!("{e}"));
    // Answers every connection that gets through; blocked in accept when the test ends.
    std::thread::spawn(move || {
        for mut conn in server.incoming().flatten() {
            let _ = conn.write_all(b"HOST-DAEMON");
        }
    });
    let sock = path.to_string_lossy().into_owned();
    for mode in [NetworkMode::None, NetworkMode::Full] {
        let mut p = f.policy();
        p.network.mode = mode;
        let out = f.run(&p, &[&tool_s(), "unix-connect", &sock]);
        assert_contained(&out);
        // Refused by the filter, not merely invisible (a socket under a private /tmp).
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("os error 1)"),
            "expected EPERM: {}",
            text(&out)
        );
        let out = f.run(&p, &[&tool_s(), "socketpair"]);
        assert!(
            out.status.success(),
            "socketpair must keep working: {}",
            text(&out)
        );
    }
    let mut p = f.policy();
    p.network.allow_all_unix_sockets = true;
    let out = f.run(&p, &[&tool_s(), "unix-connect", &sock]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ESCAPED unix-connect")
            && String::from_utf8_lossy(&out.stdout).contains("HOST-DAEMON"),
        "allowAllUnixSockets must let the command connect: {}",
        text(&out)
    );
}

/// A directory for a host socket where host daemons keep theirs: under `/run` (root, as in
/// CI) or `$XDG_RUNTIME_DIR` (`/run/user/UID`). Removed on drop.
struct RunDir(std::path::PathBuf);

impl RunDir {
    fn new() -> RunDir {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("toolgate-escape-{}-{n}", std::process::id());
        let bases = [Some(std::path::PathBuf::from("/run"))]
            .into_iter()
            .chain([std::env::var_os("XDG_RUNTIME_DIR").map(Into::into)])
            .flatten();
        for base in bases {
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                return RunDir(dir);
            }
        }
        panic!("this test binds a host socket under /run or $XDG_RUNTIME_DIR: neither is writable");
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a non-blocking datagram listener has received so far.
fn received(sock: &std::os::unix::net::UnixDatagram) -> Vec<String> {
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while let Ok(n) = sock.recv(&mut buf) {
        got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    got
}

/// A datagram socket of the host (journald's, the one `/dev/log` names, chronyd's) takes a
/// datagram from any datagram socket, and an anonymous pair needs no `socket(2)`:
/// `socketpair` + `sendto(path)` reached the host. Each layer is shown to hold on its own:
/// the view hides `/run` (also with seccomp off), the network namespace holds abstract
/// sockets (network `none`) and Landlock scopes them (network `full`), seccomp refuses
/// datagram pairs (a socket outside `/run`). A sendto that succeeds has queued its
/// datagram, so an empty listener afterwards is proof, with no waiting.
#[test]
fn host_datagram_sockets_are_unreachable() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    tier_a();
    let f = Fixture::new();
    let run = RunDir::new();
    let in_run = run.0.join("dgram.sock");
    let elsewhere = f.outside.join("dgram.sock");
    let abstract_name = format!("toolgate-escape-dgram-{}", std::process::id());
    let bind = |p: &Path| {
        let s = UnixDatagram::bind(p).unwrap_or_else(|e| panic!("bind {}: {e}", p.display()));
        s.set_nonblocking(true).unwrap_or_else(|e| panic!("{e}"));
        s
    };
    let (run_sock, other_sock) = (bind(&in_run), bind(&elsewhere));
    let abstract_sock = SocketAddr::from_abstract_name(abstract_name.as_bytes())
        .and_then(|a| UnixDatagram::bind_addr(&a))
        .unwrap_or_else(|e| panic!("abstract bind: {e}"));
    abstract_sock
        .set_nonblocking(true)
        .unwrap_or_else(|e| panic!("{e}"));
    let target = |p: &Path| p.to_string_lossy().into_owned();
    let (run_t, other_t, abstract_t) = (
        target(&in_run),
        target(&elsewhere),
        format!("@{abstract_name}"),
    );
    let cases: [(NetworkMode, &[Layer], &[&str]); 4] = [
        (NetworkMode::None, &[], &[&run_t, &other_t, &abstract_t]),
        (NetworkMode::Full, &[], &[&run_t, &other_t, &abstract_t]),
        // Without the syscall filter: the view, the namespace and Landlock alone.
        (NetworkMode::None, &[Layer::Seccomp], &[&run_t, &abstract_t]),
        (NetworkMode::Full, &[Layer::Seccomp], &[&run_t, &abstract_t]),
    ];
    for (mode, off, targets) in cases {
        let mut p = f.policy();
        p.network.mode = mode;
        p.disabled_layers = off.to_vec();
        for t in targets {
            let out = f.run(&p, &[&tool_s(), "unix-dgram-send", t]);
            assert_contained(&out);
        }
        for (name, sock) in [
            ("/run", &run_sock),
            ("outside", &other_sock),
            ("abstract", &abstract_sock),
        ] {
            let got = received(sock);
            assert!(
                got.is_empty(),
                "{name} listener got {got:?} ({mode:?}, off {off:?})"
            );
        }
    }
    // The fixtures are reachable: with every unix socket allowed from the room, and the
    // abstract one from outside it (Landlock still scopes abstract sockets then).
    let mut p = f.policy();
    p.network.mode = NetworkMode::Full;
    p.network.allow_all_unix_sockets = true;
    for t in [&run_t, &other_t] {
        let out = f.run(&p, &[&tool_s(), "unix-dgram-send", t]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("ESCAPED"),
            "allowAllUnixSockets must reach {t}: {}",
            text(&out)
        );
    }
    assert_eq!(received(&run_sock), ["PWNED-SENDTO"]);
    assert_eq!(received(&other_sock), ["PWNED-SENDTO"]);
    let out = Command::new(tool())
        .args(["unix-dgram-send", &abstract_t])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ESCAPED"));
    assert_eq!(received(&abstract_sock), ["PWNED-SENDTO"]);
}

/// What programs read in `/run` stays: the resolver configuration `/etc/resolv.conf` links
/// to (when it does), and a workspace that lies there.
#[test]
fn hidden_run_keeps_resolver_config_and_a_workspace_there() {
    tier_a();
    let run = RunDir::new();
    let f = Fixture::new_in(&run.0);
    std::fs::write(run.0.join("sibling.txt"), "hidden").unwrap_or_else(|e| panic!("{e}"));
    let out = f.sh(
        &f.policy(),
        &format!(
            "echo made > made.txt && cat made.txt && cat /etc/resolv.conf >/dev/null && echo resolv-ok; \
             cat {}/sibling.txt 2>/dev/null || echo sibling-hidden",
            run.0.display()
        ),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("made\n"), "{}", text(&out));
    assert!(stdout.contains("sibling-hidden"), "{}", text(&out));
    if std::fs::read_to_string("/etc/resolv.conf").is_ok() {
        assert!(stdout.contains("resolv-ok"), "{}", text(&out));
    }
}

#[test]
fn dns_exfiltration_has_no_route() {
    tier_a();
    let f = Fixture::new();
    let resolv = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
    let servers: Vec<String> = resolv
        .lines()
        .filter_map(|l| l.strip_prefix("nameserver"))
        .map(|s| s.trim().to_owned())
        .filter(|s| s.parse::<std::net::Ipv4Addr>().is_ok())
        .collect();
    let p = f.policy();
    for s in servers.iter().chain(["8.8.8.8".to_owned()].iter()) {
        let target = format!("{s}:53");
        let out = f.run(&p, &[&tool_s(), "udp-route", &target]);
        if s.starts_with("127.") {
            // Loopback inside is the sandbox's own, with nothing listening: a query gets no answer.
            let out = f.sh(&p, "getent hosts exfil-secret.example.invalid; echo rc=$?");
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("rc=2"),
                "{}",
                text(&out)
            );
        } else {
            assert_contained(&out);
        }
    }
}

#[test]
fn dangerous_syscalls_are_denied() {
    tier_a();
    let f = Fixture::new();
    assert_contained(&f.run(&f.policy(), &[&tool_s(), "syscalls"]));
}

/// A 32-bit syscall from a 64-bit process (`int 0x80`) goes to another syscall table: the
/// filter's architecture check must kill the process (SIGSYS) before any list is consulted.
/// The same call is made outside first: on a kernel without 32-bit emulation it cannot
/// succeed anywhere, and then only "not escaped" can be checked.
#[cfg(target_arch = "x86_64")]
#[test]
fn foreign_architecture_syscalls_kill_the_process() {
    tier_a();
    let f = Fixture::new();
    let outside = std::process::Command::new(tool())
        .arg("int80")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let inside = f.run(&f.policy(), &[&tool_s(), "int80"]);
    assert!(
        !String::from_utf8_lossy(&inside.stdout).contains("ESCAPED"),
        "{}",
        text(&inside)
    );
    if String::from_utf8_lossy(&outside.stdout).contains("ESCAPED") {
        assert_eq!(
            inside.status.code(),
            Some(128 + libc::SIGSYS),
            "{}",
            text(&inside)
        );
    } else {
        assert_ne!(inside.status.code(), Some(0), "{}", text(&inside));
    }
}

/// A tiny HTTP server on host loopback answering every request with `body`.
fn http_server(body: &'static str) -> (String, std::thread::JoinHandle<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = l.local_addr().unwrap_or_else(|e| panic!("{e}")).to_string();
    let t = std::thread::spawn(move || {
        l.set_nonblocking(false).ok();
        for _ in 0..4 {
            let Ok((mut s, _)) = l.accept() else { return };
            let mut buf = [0u8; 2048];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (addr, t)
}

#[test]
fn allowlist_proxy_allows_listed_domains_only() {
    tier_a();
    let f = Fixture::new();
    let (addr, _server) = http_server("hello-from-allowed");
    let port = addr.rsplit(':').next().unwrap_or("0").to_owned();
    let sock = f.root.join("proxy.sock");
    let decisions: Arc<Mutex<Vec<ProxyDecision>>> = Arc::default();
    let d2 = decisions.clone();
    let mut hosts = HashMap::new();
    let ip: std::net::SocketAddr = addr.parse().unwrap_or_else(|e| panic!("{e}"));
    hosts.insert("allowed.test".to_owned(), vec![ip]);
    hosts.insert("blocked.test".to_owned(), vec![ip]);
    let proxy = Proxy::start_with_hosts(
        &sock,
        // Any port: the test server listens on a random one (80 and 443 only by default).
        DomainRules::new(&["allowed.test:*".into()], &[]),
        hosts,
        move |d| d2.lock().map(|mut v| v.push(d.clone())).is_ok(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut p = f.policy();
    p.network.mode = NetworkMode::Allowlist;
    p.network.proxy_socket = Some(proxy.socket_path().to_path_buf());
    let out = f.run(
        &p,
        &[
            &tool_s(),
            "http-proxy",
            &format!("http://allowed.test:{port}/"),
        ],
    );
    let s = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        s.contains("200") && s.contains("hello-from-allowed"),
        "{}",
        text(&out)
    );
    let out = f.run(
        &p,
        &[
            &tool_s(),
            "http-proxy",
            &format!("http://blocked.test:{port}/"),
        ],
    );
    let s = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(s.contains("403") && !s.contains("hello"), "{}", text(&out));
    // Direct connections (ignoring the proxy) have no route, DNS neither.
    assert_contained(&f.run(&p, &[&tool_s(), "tcp-connect", &addr]));
    assert_contained(&f.run(&p, &[&tool_s(), "udp-route", "192.0.2.1:53"]));
    let d = decisions.lock().map(|v| v.clone()).unwrap_or_default();
    assert!(
        d.iter().any(|d| d.host == "allowed.test" && d.allowed),
        "{d:?}"
    );
    assert!(
        d.iter().any(|d| d.host == "blocked.test" && !d.allowed),
        "{d:?}"
    );
    drop(proxy);
}

/// pid 1 (the mini-init) and the proxy bridge are reachable from the command only through
/// the kernel's ptrace checks and their own code; neither may hold a capability while the
/// command runs, or a flaw in them would be worth the user namespace's privileges (unmasking
/// a read-denied path, for one).
#[test]
fn init_and_bridge_hold_no_capabilities() {
    tier_a();
    let f = Fixture::new();
    let sock = f.root.join("proxy.sock");
    let proxy =
        Proxy::start(&sock, DomainRules::new(&[], &[]), |_| true).unwrap_or_else(|e| panic!("{e}"));
    let mut p = f.policy();
    p.network.mode = NetworkMode::Allowlist;
    p.network.proxy_socket = Some(proxy.socket_path().to_path_buf());
    // pid 1 and the bridge (pid 3: forked after the command) are out of the command's reach
    // even without Landlock, whose ptrace scoping would otherwise hide a missing guard:
    // their memory, environment and descriptors.
    let mut bare = p.clone();
    bare.disabled_layers = vec![Layer::Landlock];
    for pid in ["1", "3"] {
        assert_contained(&f.run(&bare, &[&tool_s(), "read", &format!("/proc/{pid}/environ")]));
        // Opening is the whole check (reading offset 0 of `mem` fails anyway).
        let out = f.sh(
            &bare,
            &format!(
                "grep -q '^Name:.*toolgate' /proc/{pid}/status && echo FOUND; \
                 (exec 3<>/proc/{pid}/mem) 2>/dev/null && echo OPENED; \
                 readlink /proc/{pid}/fd/0 && echo LINKED"
            ),
        );
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            said.contains("FOUND"),
            "pid {pid} is not ours: {}",
            text(&out)
        );
        assert!(
            !said.contains("OPENED"),
            "pid {pid}'s memory opened: {}",
            text(&out)
        );
        assert!(
            !said.contains("LINKED"),
            "pid {pid}'s descriptors: {}",
            text(&out)
        );
    }
    let out = f.sh(
        &p,
        "for s in /proc/[0-9]*/status; do \
           printf '%s %s %s %s\\n' \"$s\" \"$(grep '^NoNewPrivs' \"$s\" | cut -f2)\" \
             \"$(grep '^CapEff' \"$s\" | cut -f2)\" \"$(grep '^CapPrm' \"$s\" | cut -f2)\"; \
         done",
    );
    assert!(out.status.success(), "{}", text(&out));
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let processes: Vec<&str> = listing.lines().filter(|l| !l.trim().is_empty()).collect();
    // pid 1, the bridge, the shell and the children it forked for the loop.
    assert!(
        processes.iter().any(|l| l.starts_with("/proc/1/status ")),
        "{listing}"
    );
    assert!(processes.len() >= 3, "{listing}");
    for line in &processes {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // A process that exited between the glob and the read shows no fields: skip it.
        if fields.len() < 4 {
            continue;
        }
        assert_eq!(fields[1], "1", "no_new_privs not set: {line}\n{listing}");
        assert_eq!(
            fields[2], "0000000000000000",
            "effective capabilities: {line}"
        );
        assert_eq!(
            fields[3], "0000000000000000",
            "permitted capabilities: {line}"
        );
    }
    drop(proxy);
}

#[test]
fn exit_status_and_signals_propagate() {
    tier_a();
    let f = Fixture::new();
    assert_eq!(f.sh(&f.policy(), "exit 7").status.code(), Some(7));
    assert_eq!(
        f.sh(&f.policy(), "kill -TERM $$").status.code(),
        Some(128 + 15)
    );
    assert_eq!(
        f.run(&f.policy(), &["/nonexistent-binary"]).status.code(),
        Some(127)
    );
    // SIGTERM to the helper reaches the command through pid 1.
    let argv: Vec<std::ffi::OsString> = [
        "sh",
        "-c",
        "trap 'echo got-term; exit 42' TERM; sleep 10 & wait",
    ]
    .iter()
    .map(Into::into)
    .collect();
    let mut cmd = toolgate_sandbox::command(&f.policy(), Path::new(HELPER), &argv, &f.ws)
        .unwrap_or_else(|e| panic!("{e}"));
    let child = cmd
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(42), "{}", text(&out));
}

#[test]
fn environment_is_allow_listed() {
    tier_a();
    let f = Fixture::new();
    // The test process env is the harness env: secrets in it must not reach the command.
    let out = f.sh(&f.policy(), "env");
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("PATH=") && s.contains("TMPDIR=/tmp"), "{s}");
    assert!(
        !s.contains("CARGO_PKG_") && !s.contains("CARGO_MANIFEST_DIR"),
        "{s}"
    );
}

/// Negative control: the same attempts without the sandbox do escape, so the assertions above
/// can tell an escape from containment.
#[test]
fn negative_control_attempts_escape_without_sandbox() {
    let f = Fixture::new();
    let mut p = f.policy();
    p.enabled = false;
    let victim = f.outside.join("victim.txt");
    let out = f.run(&p, &[&tool_s(), "write", &victim.to_string_lossy(), "x"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ESCAPED"),
        "{}",
        text(&out)
    );
    let out = f.run(
        &p,
        &[
            &tool_s(),
            "read",
            &f.home.join(".ssh/id_ed25519").to_string_lossy(),
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ESCAPED"),
        "{}",
        text(&out)
    );
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = host
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .to_string();
    let out = f.run(&p, &[&tool_s(), "tcp-connect", &addr]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ESCAPED"),
        "{}",
        text(&out)
    );
    let out = f.run(&p, &[&tool_s(), "unshare-user"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ESCAPED"),
        "{}",
        text(&out)
    );
}

/// Runs `script` with the placeholder lock and pending list in `state` (a private
/// `XDG_RUNTIME_DIR`), so concurrently running tests do not hold this run's lock.
fn sh_with_state(f: &Fixture, state: &Path, script: &str) -> std::process::Output {
    let argv: Vec<std::ffi::OsString> = ["sh", "-c", script].iter().map(Into::into).collect();
    let mut cmd = toolgate_sandbox::command(&f.policy(), Path::new(HELPER), &argv, &f.ws)
        .unwrap_or_else(|e| panic!("command: {e}"));
    cmd.env("XDG_RUNTIME_DIR", state)
        .stdin(std::process::Stdio::null());
    cmd.output().unwrap_or_else(|e| panic!("spawn: {e}"))
}

#[test]
fn placeholders_are_removed_after_the_run_unless_another_run_holds_them() {
    tier_a();
    let f = Fixture::new();
    let state = tempfile::tempdir_in(&f.root).unwrap_or_else(|e| panic!("{e}"));
    let user_dir = f.ws.join(".idea"); // exists before the run: the user's, never removed
    std::fs::create_dir(&user_dir).unwrap_or_else(|e| panic!("{e}"));
    let script = "test -d .claude && test -f .mcp.json && echo placeholders-present; \
                  mkdir .claude/x 2>/dev/null || echo create-blocked; \
                  echo x > .mcp.json 2>/dev/null || echo write-blocked";
    let out = sh_with_state(&f, state.path(), script);
    let s = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        s.contains("placeholders-present")
            && s.contains("create-blocked")
            && s.contains("write-blocked"),
        "{}",
        text(&out)
    );
    for name in [
        ".claude",
        ".mcp.json",
        ".toolgate",
        ".vscode",
        ".git/hooks",
        ".git/commondir",
        ".git/config.worktree",
    ] {
        assert!(
            std::fs::symlink_metadata(f.ws.join(name)).is_err(),
            "placeholder {name} left behind: {}",
            text(&out)
        );
    }
    assert!(
        user_dir.is_dir(),
        "a directory that existed before was removed"
    );

    // Another sandbox of this user still running (shared lock held): the placeholders
    // stay, are recorded as pending, and the next run that ends alone removes them.
    let lock_path = state.path().join("toolgate/sandbox.lock");
    let lock = std::fs::File::open(&lock_path).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: flock on a file we opened.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_SH) },
        0
    );
    let out = sh_with_state(&f, state.path(), "true");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        f.ws.join(".claude").is_dir(),
        "removed while another run may use it"
    );
    let pending = std::fs::read_to_string(state.path().join("toolgate/placeholders.pending"))
        .unwrap_or_default();
    assert!(pending.contains(".claude"), "{pending}");
    drop(lock);
    let out = sh_with_state(&f, state.path(), "true");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(std::fs::symlink_metadata(f.ws.join(".claude")).is_err());
    assert!(std::fs::symlink_metadata(f.ws.join(".mcp.json")).is_err());
    assert!(user_dir.is_dir());
}
