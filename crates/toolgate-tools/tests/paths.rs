//! Adversarial path tests, through the Gate: nothing may read or write outside the roots.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use common::*;
use serde_json::json;
use toolgate_protocol::ErrorCode;
use toolgate_tools::FileToolsConfig;

const SECRET: &str = "top-secret-token\n";

fn secret_outside(env: &Env) -> std::path::PathBuf {
    let p = env.out().join("secret.txt");
    std::fs::write(&p, SECRET).unwrap();
    p
}

#[tokio::test]
async fn symlink_to_etc_is_refused_by_every_tool() {
    let env = Env::new();
    symlink("/etc", env.path("etc"));
    let e = env.err("Read", json!({"file_path": "etc/passwd"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "outside the directories");
    let e = env
        .err("Write", json!({"file_path": "etc/evil", "content": "x"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "outside the directories");
    let e = env
        .err("Glob", json!({"pattern": "*", "path": "etc"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "outside the directories");
    let e = env
        .err("Grep", json!({"pattern": "root", "path": "etc"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "outside the directories");
    let e = env.err("Glob", json!({"pattern": "etc/*"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "outside the directories");
    // Walking the workspace does not follow the link either.
    let out = env.ok("Grep", json!({"pattern": "root:"})).await;
    assert_eq!(out, "No files found");
    let out = env.ok("Glob", json!({"pattern": "**/passwd"})).await;
    assert_eq!(out, "No files found");
}

#[tokio::test]
async fn dot_dot_chains_are_resolved_before_the_check() {
    let env = Env::new();
    secret_outside(&env);
    env.write("sub/a.txt", "inside\n");
    let name = env
        .outside
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    for p in [
        "../../../../../../etc/passwd".to_owned(),
        format!("../{name}/secret.txt"),
        format!("sub/../../{name}/secret.txt"),
        format!("{}/../{name}/secret.txt", env.ws().display()),
        format!("{}/sub/../../../../../../etc/shadow", env.ws().display()),
    ] {
        let e = env.err("Read", json!({"file_path": p})).await;
        assert_code(&e, ErrorCode::InvalidRequest, "outside the directories");
        assert!(!e.message.contains("top-secret"));
    }
    let out = env
        .ok("Read", json!({"file_path": "sub/../sub/./a.txt"}))
        .await;
    assert!(out.contains("inside"));
}

#[tokio::test]
async fn proc_paths_are_refused() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    for p in [
        "/proc/self/root/etc/passwd".to_owned(),
        "/proc/self/fd/0".to_owned(),
        format!("/proc/self/cwd/{}", env.path("a.txt").display()),
        format!("/proc/self/root{}", env.path("a.txt").display()),
    ] {
        let e = env.err("Read", json!({"file_path": p})).await;
        assert_eq!(e.code, ErrorCode::InvalidRequest, "{p}: {}", e.message);
    }
}

#[tokio::test]
async fn hard_link_to_a_file_outside_is_refused() {
    let env = Env::new();
    let secret = secret_outside(&env);
    // Both temp dirs live on the same file system, so the link can be made.
    if std::fs::hard_link(&secret, env.path("innocent.txt")).is_err() {
        eprintln!("skipped: cannot hard-link across the temp directories");
        return;
    }
    let e = env.err("Read", json!({"file_path": "innocent.txt"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "hard links");
    assert!(!e.message.contains("top-secret"));
    let out = env
        .ok(
            "Grep",
            json!({"pattern": "top-secret", "output_mode": "content"}),
        )
        .await;
    assert!(!out.contains("top-secret-token"), "{out}");
    assert!(
        out.contains("1 file with several hard links was left out"),
        "{out}"
    );
    // Edit and Write cannot get there either (no read), and the outside file is untouched.
    let e = env
        .err(
            "Edit",
            json!({"file_path": "innocent.txt", "old_string": "top", "new_string": "x"}),
        )
        .await;
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), SECRET);
}

#[tokio::test]
async fn hard_links_can_be_allowed_and_writes_break_the_link() {
    let config = FileToolsConfig {
        allow_hard_links: true,
        ..FileToolsConfig::default()
    };
    let env = Env::with(config, |b| b);
    let other = env.out().join("other.txt");
    std::fs::write(&other, "shared\n").unwrap();
    if std::fs::hard_link(&other, env.path("linked.txt")).is_err() {
        return;
    }
    assert!(
        env.ok("Read", json!({"file_path": "linked.txt"}))
            .await
            .contains("shared")
    );
    env.ok(
        "Edit",
        json!({"file_path": "linked.txt", "old_string": "shared", "new_string": "mine"}),
    )
    .await;
    assert_eq!(env.read("linked.txt"), "mine\n");
    // The atomic rename replaced the directory entry: the other name keeps its content.
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "shared\n");
}

#[tokio::test]
async fn file_swapped_for_a_symlink_after_validation_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    let target = dir.path().join("a.txt");
    std::fs::write(&target, "harmless\n").unwrap();
    let (t, s) = (target.clone(), secret.clone());
    let hook = RaceHook::new(move || {
        std::fs::remove_file(&t).unwrap();
        std::os::unix::fs::symlink(&s, &t).unwrap();
    });
    let env = Env::with(FileToolsConfig::default(), |b| {
        b.workspace(dir.path()).hooks(hook.clone())
    });
    let r = env.call("Read", json!({"file_path": target})).await;
    assert!(r.is_error(), "{}", r.model_text());
    assert!(!r.model_text().contains("top-secret"));
    assert!(
        r.model_text().contains("changed while it was being opened"),
        "{}",
        r.model_text()
    );
}

#[tokio::test]
async fn directory_swapped_for_a_symlink_after_validation_stops_write_and_read() {
    for tool in ["Write", "Read", "Edit"] {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("f.txt"), SECRET).unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("f.txt"), "inside\n").unwrap();
        let (d, o) = (sub.clone(), outside.path().to_path_buf());
        let hook = RaceHook::new(move || {
            std::fs::rename(&d, d.with_extension("old")).unwrap();
            std::os::unix::fs::symlink(&o, &d).unwrap();
        });
        let env = Env::with(FileToolsConfig::default(), |b| {
            b.workspace(dir.path()).hooks(hook.clone())
        });
        // The ledger needs a read before Write/Edit; read through a second session-less path:
        // record it by reading before the hook is armed (the hook fires on the first call).
        let input = match tool {
            "Write" => json!({"file_path": sub.join("new.txt"), "content": "planted"}),
            "Edit" => {
                json!({"file_path": sub.join("f.txt"), "old_string": "inside", "new_string": "x"})
            }
            _ => json!({"file_path": sub.join("f.txt")}),
        };
        let r = env.call(tool, input).await;
        assert!(r.is_error(), "{tool}: {}", r.model_text());
        assert!(!r.model_text().contains("top-secret"), "{tool}");
        assert!(
            !outside.path().join("new.txt").exists(),
            "{tool} wrote outside"
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join("f.txt")).unwrap(),
            SECRET
        );
    }
}

#[tokio::test]
async fn write_into_a_swapped_directory_after_a_read_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("f.txt"), "inside\n").unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("f.txt"), "inside\n").unwrap();
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (d, o, a) = (sub.clone(), outside.path().to_path_buf(), armed.clone());
    struct Swap(
        Arc<std::sync::atomic::AtomicBool>,
        std::path::PathBuf,
        std::path::PathBuf,
    );
    #[async_trait::async_trait]
    impl toolgate_core::stages::HookStage for Swap {
        async fn pre_tool_use(
            &self,
            _r: &toolgate_core::stages::HookRequest<'_>,
        ) -> toolgate_core::stages::PreHookOutcome {
            if self.0.load(std::sync::atomic::Ordering::SeqCst) {
                std::fs::rename(&self.1, self.1.with_extension("old")).unwrap();
                std::os::unix::fs::symlink(&self.2, &self.1).unwrap();
            }
            Default::default()
        }
        async fn post_tool_use(
            &self,
            _r: &toolgate_core::stages::HookRequest<'_>,
            _res: &Result<toolgate_protocol::ToolOutput, toolgate_protocol::CallError>,
            _ms: u64,
        ) -> toolgate_core::stages::PostHookOutcome {
            Default::default()
        }
    }
    let env = Env::with(FileToolsConfig::default(), |b| {
        b.workspace(dir.path()).hooks(Arc::new(Swap(a, d, o)))
    });
    env.ok("Read", json!({"file_path": sub.join("f.txt")}))
        .await;
    armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let r = env
        .call(
            "Edit",
            json!({"file_path": sub.join("f.txt"), "old_string": "inside", "new_string": "owned"}),
        )
        .await;
    assert!(r.is_error(), "{}", r.model_text());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("f.txt")).unwrap(),
        "inside\n"
    );
}

#[tokio::test]
async fn symlinks_inside_the_roots_work_and_writes_go_to_the_target() {
    let env = Env::new();
    env.write("real.txt", "one\n");
    symlink(env.path("real.txt"), env.path("link.txt"));
    assert!(
        env.ok("Read", json!({"file_path": "link.txt"}))
            .await
            .contains("one")
    );
    env.ok(
        "Edit",
        json!({"file_path": "link.txt", "old_string": "one", "new_string": "two"}),
    )
    .await;
    assert_eq!(env.read("real.txt"), "two\n");
    assert!(
        std::fs::symlink_metadata(env.path("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn dangling_and_outside_symlinks_for_new_files_are_refused() {
    let env = Env::new();
    symlink(env.out().join("nothing-here.txt"), env.path("dangling.txt"));
    let e = env
        .err(
            "Write",
            json!({"file_path": "dangling.txt", "content": "x"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "symlink");
    assert!(!env.out().join("nothing-here.txt").exists());
    symlink(env.out(), env.path("outdir"));
    let e = env
        .err(
            "Write",
            json!({"file_path": "outdir/new.txt", "content": "x"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "outside the directories");
    assert!(!env.out().join("new.txt").exists());
}

#[tokio::test]
async fn additional_directories_are_roots_too() {
    let extra = tempfile::tempdir().unwrap();
    std::fs::write(extra.path().join("notes.md"), "extra\n").unwrap();
    let extra_path = extra.path().to_path_buf();
    let env = Env::with(FileToolsConfig::default(), |b| {
        b.add_dir(extra_path.clone())
    });
    let out = env
        .ok("Read", json!({"file_path": extra.path().join("notes.md")}))
        .await;
    assert!(out.contains("extra"));
    symlink(extra.path(), env.path("extra"));
    let out = env.ok("Read", json!({"file_path": "extra/notes.md"})).await;
    assert!(out.contains("extra"));
}

#[tokio::test]
async fn tilde_and_absolute_paths_outside_are_refused() {
    let env = Env::new();
    let e = env.err("Read", json!({"file_path": "~/.bashrc"})).await;
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    let e = env.err("Read", json!({"file_path": "~root/.bashrc"})).await;
    assert_code(
        &e,
        ErrorCode::InvalidRequest,
        "only `~` and `~/…` are expanded",
    );
    let e = env.err("Read", json!({"file_path": "/etc/hostname"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "outside the directories");
}

#[tokio::test]
async fn fifos_and_devices_are_refused_without_blocking() {
    let env = Env::new();
    let fifo = env.path("pipe");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let e = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        env.err("Read", json!({"file_path": "pipe"})),
    )
    .await
    .expect("Read of a FIFO must not block");
    assert_code(&e, ErrorCode::InvalidRequest, "FIFO");
}

#[tokio::test]
async fn protected_paths_reach_policy_as_facts() {
    let policy = Arc::new(FactsPolicy::default());
    let p = policy.clone();
    let env = Env::with(FileToolsConfig::default(), move |b| b.policy(p));
    let e = env
        .err("Write", json!({"file_path": ".git/config", "content": "x"}))
        .await;
    assert_eq!(e.code, ErrorCode::Denied);
    assert!(!env.path(".git/config").exists());
    env.ok(
        "Write",
        json!({"file_path": "src/main.rs", "content": "fn main() {}\n"}),
    )
    .await;
    // A link with an innocent name to a protected file is reported as protected.
    env.write(".mcp.json", "{}\n");
    symlink(env.path(".mcp.json"), env.path("innocent.json"));
    env.ok("Read", json!({"file_path": "innocent.json"})).await;
    let e = env
        .err(
            "Edit",
            json!({"file_path": "innocent.json", "old_string": "{}", "new_string": "{\"x\":1}"}),
        )
        .await;
    assert_eq!(e.code, ErrorCode::Denied);
    let facts = policy.facts.lock().unwrap();
    assert!(facts[0].paths[0].protected);
    assert!(!facts[1].paths[0].protected);
    let edit = facts.last().unwrap();
    assert_eq!(edit.paths.len(), 2, "real path and the path as given");
    assert!(edit.paths[0].protected && edit.paths[0].path.ends_with(".mcp.json"));
    assert!(!edit.paths[1].protected);
}

#[tokio::test]
async fn hooks_see_absolute_normalised_paths() {
    let hook = RaceHook::recorder();
    let h = hook.clone();
    let env = Env::with(FileToolsConfig::default(), move |b| b.hooks(h));
    env.write("sub/a.txt", "x\n");
    env.ok("Read", json!({"file_path": "sub/../sub/./a.txt"}))
        .await;
    env.ok("Grep", json!({"pattern": "x"})).await;
    let seen = hook.seen.lock().unwrap();
    assert_eq!(seen[0]["file_path"], json!(env.path("sub/a.txt")));
    assert_eq!(seen[1]["path"], json!(env.ws()));
}

#[tokio::test]
async fn written_files_keep_their_mode() {
    let env = Env::new();
    let p = env.write("run.sh", "echo hi\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o751)).unwrap();
    env.ok("Read", json!({"file_path": "run.sh"})).await;
    env.ok(
        "Write",
        json!({"file_path": "run.sh", "content": "echo bye\n"}),
    )
    .await;
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o751);
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(env.ws())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}
