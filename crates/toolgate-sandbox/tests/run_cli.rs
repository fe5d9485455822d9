//! `toolgate-sandbox-helper run|status`: the small binary's command line, which runs the room
//! in its own process (no helper `execve`) unless the allow-list proxy needs serving.

mod common;

use std::process::{Command, Output, Stdio};

use common::{Fixture, HELPER, require};
use toolgate_sandbox::Layer;

fn run(f: &Fixture, extra: &[&str], script: &str) -> Output {
    Command::new(HELPER)
        .args(["run", "--workspace"])
        .arg(&f.ws)
        .args(extra)
        .args(["--", "sh", "-c", script])
        .current_dir(&f.ws)
        .env("HOME", &f.home)
        // Its own state directory: placeholders are removed only when no other sandbox of
        // the same state directory runs, and other tests run sandboxes meanwhile.
        .env("XDG_RUNTIME_DIR", &f.home)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn run_passes_status_through_and_confines_the_command() {
    require(&[Layer::UserNs, Layer::MountNs, Layer::PidNs]);
    let f = Fixture::new();
    // In-process room (no proxy) and the helper process (allow-list proxy to serve).
    for extra in [&[][..], &["--allow-domain", "example.invalid"][..]] {
        let out = run(&f, extra, "echo inside; exit 7");
        assert_eq!(out.status.code(), Some(7), "{extra:?}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "inside\n");
        let out = run(&f, extra, "kill -KILL $$");
        assert_eq!(out.status.code(), Some(128 + 9), "{extra:?}: {out:?}");
        let escaped = f.outside.join("escaped");
        let out = run(&f, extra, &format!("echo x > {}", escaped.display()));
        assert_ne!(out.status.code(), Some(0), "{extra:?}: {out:?}");
        assert!(!escaped.exists(), "{extra:?}: wrote outside the workspace");
        let key = f.home.join(".ssh/id_ed25519");
        let out = run(&f, extra, &format!("cat {}", key.display()));
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("SECRET-KEY"),
            "{extra:?}: read the ssh key"
        );
        let out = run(&f, extra, "echo x > .git/hooks/pre-commit");
        assert_ne!(out.status.code(), Some(0), "{extra:?}: {out:?}");
        assert!(!f.ws.join(".git/hooks/pre-commit").exists());
        let out = run(&f, extra, "echo x > made-inside && unshare -U true");
        assert_ne!(
            out.status.code(),
            Some(0),
            "{extra:?}: nested user ns: {out:?}"
        );
        assert!(f.ws.join("made-inside").exists());
        // The run's placeholders (missing protected paths) are gone once it returns.
        for name in [".claude", ".mcp.json", ".toolgate"] {
            assert!(!f.ws.join(name).exists(), "{extra:?}: {name} left behind");
        }
    }
}

#[test]
fn run_reports_setup_errors_and_usage() {
    let f = Fixture::new();
    let out = run(&f, &["--disable-layer", "no-such-layer"], "true");
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-layer"));
    let out = Command::new(HELPER)
        .args(["run", "--bogus", "--", "true"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(64), "{out:?}");
    let out = Command::new(HELPER)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(64), "{out:?}");
    let out = Command::new(HELPER)
        .args(["status", "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert!(v["layers"].is_object(), "{v}");
}

/// The command starts with SIGPIPE at its default (the sandbox's own Rust processes ignore
/// it, and an ignored signal survives `execve`): a pipeline's writer is killed quietly when
/// the reader goes away, as outside the sandbox.
#[test]
fn command_starts_with_default_sigpipe() {
    require(&[Layer::UserNs, Layer::MountNs, Layer::PidNs]);
    let f = Fixture::new();
    let out = run(&f, &[], "grep SigIgn /proc/self/status; yes | head -n 1");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mask = stdout
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no SigIgn line: {out:?}"));
    assert_eq!(
        mask & (1 << (libc::SIGPIPE - 1)),
        0,
        "SIGPIPE ignored: {out:?}"
    );
    assert!(stdout.ends_with("y\n"), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("Broken pipe"),
        "{out:?}"
    );
}

/// `/dev/shm` is a private tmpfs of its own, sized like the private `/tmp` (1 GiB by default):
/// it used to share `/dev`'s 64 KiB tmpfs, where POSIX shared memory of any real size failed.
#[test]
fn dev_shm_is_private_and_holds_megabytes() {
    require(&[Layer::UserNs, Layer::MountNs, Layer::PidNs]);
    let f = Fixture::new();
    let name = format!("toolgate-shm-test-{}", std::process::id());
    let script = format!(
        "dd if=/dev/zero of=/dev/shm/{name} bs=1M count=8 2>/dev/null && wc -c < /dev/shm/{name}"
    );
    let out = run(&f, &[], &script);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "8388608",
        "{out:?}"
    );
    assert!(
        !std::path::Path::new("/dev/shm").join(&name).exists(),
        "the sandbox's /dev/shm is the host's"
    );
}

/// `/proc/1/cmdline` is readable by every process of the room (no ptrace check, unlike
/// `environ`), and pid 1 is a copy of its creator: `run --settings …` itself, or the helper,
/// which used to get the whole policy as an argument. Neither may show: the command line of
/// pid 1 is a fixed title, in the in-process room and through the helper (allow-list proxy).
#[test]
fn pid_1_does_not_show_settings_or_the_policy() {
    require(&[Layer::UserNs, Layer::MountNs, Layer::PidNs]);
    let f = Fixture::new();
    let settings = r#"{"sandbox": {"limits": {"processes": 777}, "filesystem": {"denyRead": ["~/secret-marker"]}}}"#;
    for extra in [&[][..], &["--allow-domain", "example.invalid"][..]] {
        let mut args = vec!["--settings", settings];
        args.extend_from_slice(extra);
        let out = run(
            &f,
            &args,
            "tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/self/cmdline",
        );
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.starts_with("toolgate-sandbox-init "),
            "{extra:?}: {stdout}"
        );
        for leak in [
            "--settings",
            "777",
            "secret-marker",
            "writableRoots",
            "__sandbox",
        ] {
            assert!(!stdout.contains(leak), "{extra:?}: {leak} in {stdout}");
        }
    }
}

#[test]
fn two_rooms_in_one_workspace_share_its_placeholders_safely() {
    // Rooms started at once in one workspace (two MCP servers, a background command and a
    // foreground one) race for the placeholders of missing protected paths. The second
    // room must start (not fail because the first made a placeholder meanwhile), and when
    // it ends it must not move the first room's placeholder aside: that would unmount the
    // first room's protection and let it create `.git` after all. The race is retried a
    // few times, as it depends on which room scans first.
    require(&[Layer::UserNs, Layer::MountNs, Layer::PidNs]);
    let f = Fixture::new();
    for round in 0..6 {
        let ws = f.root.join(format!("bare{round}"));
        std::fs::create_dir(&ws).unwrap_or_else(|e| panic!("{e}"));
        let room = |script: &str| {
            Command::new(HELPER)
                .args(["run", "--workspace"])
                .arg(&ws)
                .args(["--", "sh", "-c", script])
                .current_dir(&ws)
                .env("HOME", &f.home)
                .env("XDG_RUNTIME_DIR", &f.home)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let first = room(
            "sleep 1; mkdir .git 2>/dev/null; echo x > .git/config 2>/dev/null && echo ESCAPED; echo first-done",
        );
        let second = room("echo second-done")
            .wait_with_output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(second.status.code(), Some(0), "round {round}: {second:?}");
        assert_eq!(String::from_utf8_lossy(&second.stdout), "second-done\n");
        let first = first.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        let out = String::from_utf8_lossy(&first.stdout);
        assert!(out.contains("first-done"), "round {round}: {first:?}");
        assert!(
            !out.contains("ESCAPED"),
            "round {round}: the first room created .git/config: {first:?}"
        );
        assert!(!ws.join(".git/config").exists());
        let aside: Vec<String> = std::fs::read_dir(&ws)
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("toolgate-blocked"))
            .collect();
        assert!(aside.is_empty(), "round {round}: moved aside: {aside:?}");
    }
}
