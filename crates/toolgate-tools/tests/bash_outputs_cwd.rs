//! Through the gate: where the Bash tool's output files go, how much a session may write,
//! what is left when the session ends — and that a cwd whose path was made to lie is
//! re-resolved by its directory handle.

mod bash_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bash_support::*;
use tokio_util::sync::CancellationToken;
use toolgate_core::outputs::SessionOutputs;
use toolgate_core::{Gate, Registry};
use toolgate_protocol::{ErrorCode, ToolCall};
use toolgate_tools::shell::{ShellConfig, register_shell_tools};

/// A gate with the shell tools' default settings (no output directory configured).
fn default_gate(dir: &Path) -> Gate {
    let registry = register_shell_tools(Registry::builder(), &ShellConfig::default())
        .build()
        .unwrap();
    Gate::builder()
        .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
        .workspace(dir)
        .registry(registry)
        .build()
        .unwrap()
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// Output files live in a 0700 directory of the session under the workspace's `.toolgate/`
/// (not the shared `/tmp/toolgate-outputs`), and when the session ends only the files a
/// returned result named are left: a cancelled call's file goes.
#[tokio::test]
async fn output_files_are_private_and_only_named_ones_outlive_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let g = default_gate(dir.path());
    let root = g.session().workspace().root().to_path_buf();
    let session_dir = root.join(".toolgate/outputs").join(
        g.session()
            .id()
            .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"),
    );

    let r = bash(&g, "seq 1 100000").await;
    let named = PathBuf::from(structured(&r)["stdout_path"].as_str().unwrap());
    assert_eq!(
        named.parent(),
        Some(session_dir.as_path()),
        "{}",
        named.display()
    );
    assert!(!named.starts_with(std::env::temp_dir().join("toolgate-outputs")));
    let mode = std::fs::metadata(&session_dir)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);

    // A call cancelled once its output file exists: no result names the file.
    let cancel = CancellationToken::new();
    let call = ToolCall::new(
        "c2",
        "Bash",
        serde_json::json!({"command": "head -c 200000 /dev/zero | tr '\\0' x; sleep 60"}),
    );
    let run = g.execute_with_cancel(call, cancel.clone());
    let watch = async {
        let start = Instant::now();
        while files_in(&session_dir).len() < 2 && start.elapsed() < Duration::from_secs(30) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cancel.cancel();
    };
    let (r, ()) = tokio::join!(run, watch);
    assert_eq!(code(&r), ErrorCode::Cancelled);
    assert_eq!(
        files_in(&session_dir).len(),
        2,
        "the cancelled call's file existed"
    );

    drop(g);
    assert_eq!(
        files_in(&session_dir),
        std::slice::from_ref(&named),
        "what no result named is gone"
    );
    let expected: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&named).unwrap(), expected);
}

/// All of a session's output files together stay within its budget; the result says when
/// a file was cut short.
#[tokio::test]
async fn a_session_budget_caps_its_output_files() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    SessionOutputs::of(g.session()).set_cap(300_000);
    let mut total = 0;
    let mut notices = 0;
    for _ in 0..3 {
        let r = bash(&g, "seq 1 100000").await; // 588,895 bytes each
        let t = text(&r);
        notices += usize::from(t.contains("reached their limit of 300000 bytes"));
        if let Some(p) = structured(&r)["stdout_path"].as_str() {
            total += std::fs::metadata(p).unwrap().len();
        }
    }
    assert!(total <= 300_000, "{total}");
    assert_eq!(notices, 3, "each cut file is reported");
}

/// `cd sub`, then `sub` is deleted and a link to a directory outside the workspace is put
/// in its place — by a background task, another process, or a command whose own shell sat
/// in the deleted directory and so reported no new cwd: the next command must not run
/// outside the workspace while the session believes it runs in `sub`.
#[tokio::test]
async fn a_cwd_path_replaced_by_a_link_is_re_resolved_by_its_handle() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let root = g.session().workspace().root().to_path_buf();
    bash(&g, "mkdir -p sub && cd sub").await;
    assert_eq!(g.session().cwd(), root.join("sub"));
    std::fs::remove_dir(root.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("sub")).unwrap();
    assert_eq!(
        g.session().cwd(),
        root.join("sub"),
        "the path still reads as inside"
    );
    let r = bash(&g, "pwd -P; echo pwned > marker").await;
    let t = text(&r);
    assert!(
        !outside.path().join("marker").exists(),
        "ran outside the workspace: {t}"
    );
    assert!(t.starts_with(&format!("{}\n", root.display())), "{t}");
    assert!(t.contains("no longer exists"), "{t}");
    assert_eq!(g.session().cwd(), root);
}

/// A cwd directory moved inside the workspace is followed to where it is now.
#[tokio::test]
async fn a_moved_cwd_is_followed_by_its_handle() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let root = g.session().workspace().root().to_path_buf();
    bash(&g, "mkdir -p a && cd a").await;
    std::fs::rename(root.join("a"), root.join("b")).unwrap();
    std::fs::create_dir(root.join("a")).unwrap(); // a different directory at the old path
    let t = text(&bash(&g, "pwd -P").await);
    assert!(
        t.starts_with(&format!("{}\n", root.join("b").display())),
        "{t}"
    );
    assert!(t.contains("not the directory it was"), "{t}");
    assert_eq!(g.session().cwd(), root.join("b"));
}
