//! The Bash tool through the gate: output, exit codes, limits, cwd, environment, and that
//! nothing a command started survives its timeout, cancellation or a dropped call.

mod bash_support;

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bash_support::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_core::sandbox::{Room, SandboxStage};
use toolgate_core::stages::{DecisionRequest, PolicyStage};
use toolgate_core::{Gate, Registry};
use toolgate_protocol::{Decision, ErrorCode, Layer, ToolCall, Verdict};
use toolgate_tools::shell::{ShellConfig, register_shell_tools, tasks};

#[tokio::test]
async fn echo_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    assert_eq!(text(&bash(&g, "echo hello").await), "hello");
    let r = bash(&g, "echo partial; exit 3").await;
    assert!(
        !r.is_error(),
        "a non-zero exit is a result, not a tool error"
    );
    assert_eq!(text(&r), "partial\nExit code 3");
    assert_eq!(structured(&r)["exit_code"], 3);
    assert_eq!(text(&bash(&g, "true").await), "(no output)");
    assert_eq!(text(&bash(&g, "false").await), "Exit code 1");
}

#[tokio::test]
async fn exit_one_of_search_and_compare_commands_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let r = bash(&g, "grep needle /dev/null").await;
    assert_eq!(text(&r), "Exit code 1 (no lines matched; not an error)");
    let r = bash(&g, "test -e /nonexistent-toolgate").await;
    assert_eq!(
        text(&r),
        "Exit code 1 (the condition is false; not an error)"
    );
}

#[tokio::test]
async fn a_signal_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let r = bash(&g, "echo before; kill -TERM $$").await;
    assert_eq!(text(&r), "before\nKilled by signal 15 (SIGTERM)");
    assert_eq!(structured(&r)["signal"], 15);
}

#[tokio::test]
async fn stdout_and_stderr_are_merged_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let r = bash(&g, "for i in 1 2 3; do echo out$i; echo err$i >&2; done").await;
    assert_eq!(text(&r), "out1\nerr1\nout2\nerr2\nout3\nerr3");
}

#[tokio::test]
async fn stdin_is_dev_null() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let start = Instant::now();
    let r = bash(
        &g,
        "cat; read -r line || echo eof; ls -l /proc/self/fd/0 | grep -o /dev/null",
    )
    .await;
    assert_eq!(text(&r), "eof\n/dev/null");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn empty_and_nul_commands_are_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    assert_eq!(code(&bash(&g, "  \n ").await), ErrorCode::InvalidRequest);
    assert_eq!(
        code(&bash(&g, "echo a\0b").await),
        ErrorCode::InvalidRequest
    );
    let r = call(&g, "Bash", json!({"command": "ls", "bogus": 1})).await;
    assert_eq!(code(&r), ErrorCode::InvalidInput);
}

/// Denies any call whose analysed subcommands include `rm`, as a permission rule would.
struct DenyRm;

impl PolicyStage for DenyRm {
    fn decide(&self, request: &DecisionRequest<'_>) -> Verdict {
        let rm = request
            .facts
            .commands
            .iter()
            .any(|c| c.argv.first().is_some_and(|p| p == "rm"));
        if rm {
            Verdict::new(Decision::Deny, Layer::Rule, "rm is not allowed")
        } else {
            Verdict::new(Decision::Allow, Layer::Default, "ok")
        }
    }
}

#[tokio::test]
async fn the_analysis_reaches_the_policy_stage() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep"), "x").unwrap();
    let registry = register_shell_tools(Registry::builder(), &ShellConfig::default())
        .build()
        .unwrap();
    let g = Gate::builder()
        .workspace(dir.path())
        .registry(registry)
        .policy(Arc::new(DenyRm))
        .build()
        .unwrap();
    // Hidden behind quotes and a variable, still seen.
    let r = bash(&g, "x=r''m; echo $(true) && $x keep").await;
    assert_eq!(code(&r), ErrorCode::Denied);
    assert!(dir.path().join("keep").exists());
    assert_eq!(text(&bash(&g, "echo fine").await), "fine");
}

#[tokio::test]
async fn long_output_keeps_head_and_tail_and_saves_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let r = bash(&g, "seq 1 100000").await;
    let t = text(&r);
    let s = structured(&r);
    assert_eq!(s["truncated"], true);
    let path = s["stdout_path"].as_str().unwrap().to_owned();
    assert!(t.starts_with("1\n2\n3\n"), "{}", &t[..50]);
    assert!(t.ends_with("99999\n100000"), "{}", &t[t.len() - 50..]);
    assert!(t.contains(&path) && t.contains("characters omitted"));
    assert!(t.chars().count() < 30_000 + 500);
    let expected: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn output_within_the_budget_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let r = bash(&g, "head -c 29000 /dev/zero | tr '\\0' a").await;
    assert_eq!(text(&r).len(), 29_000);
    assert_eq!(structured(&r)["truncated"], false);
    assert!(structured(&r).get("stdout_path").is_none());
}

#[tokio::test]
async fn output_past_the_byte_limit_kills_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let config = ShellConfig {
        max_output_bytes: 2_000_000,
        ..ShellConfig::default()
    };
    let g = gate_with(dir.path(), &config);
    let start = Instant::now();
    let r = bash(&g, "yes").await;
    assert!(
        text(&r).contains("printed more than 2000000 bytes and was killed"),
        "{}",
        text(&r)
    );
    assert!(start.elapsed() < Duration::from_secs(20));
    let path = structured(&r)["stdout_path"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 2_000_000);
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn secret_looking_variables_are_scrubbed_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config_with_env(&[
        ("FOO_TOKEN", "s3cret"),
        ("AWS_SECRET_ACCESS_KEY", "k"),
        ("ANTHROPIC_API_KEY", "sk-ant-xxxxxxxxxxxxxxxxxxxxxxxx"),
        ("PLAIN", "visible"),
        ("ALLOWED_TOKEN", "ok"),
    ]);
    config.allow_env = vec!["ALLOWED_TOKEN".into()];
    let g = gate_with(dir.path(), &config);
    let r = bash(
        &g,
        "echo \"${FOO_TOKEN:-unset} ${AWS_SECRET_ACCESS_KEY:-unset} ${ANTHROPIC_API_KEY:-unset} $PLAIN $ALLOWED_TOKEN\"",
    )
    .await;
    assert_eq!(text(&r), "unset unset unset visible ok");
    let r = bash(&g, "env | grep -c TOKEN").await;
    assert_eq!(text(&r), "1");
}

#[tokio::test]
async fn cd_persists_inside_the_roots_and_resets_outside() {
    let dir = tempfile::tempdir().unwrap();
    let extra = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let registry = register_shell_tools(Registry::builder(), &ShellConfig::default())
        .build()
        .unwrap();
    let g = Gate::builder()
        .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
        .workspace(dir.path())
        .add_dir(extra.path())
        .registry(registry)
        .build()
        .unwrap();
    let root = g.session().workspace().root().to_path_buf();
    let sub = root.join("sub");

    let r = bash(&g, "cd sub && echo moved").await;
    assert_eq!(text(&r), "moved");
    assert_eq!(g.session().cwd(), sub);
    assert_eq!(text(&bash(&g, "pwd").await), sub.display().to_string());

    // Outside the roots: undone, with a notice.
    let r = bash(&g, "cd / && pwd").await;
    let t = text(&r);
    assert!(t.starts_with("/\nShell cwd was reset to"), "{t}");
    assert!(t.contains("outside the allowed directories"));
    assert_eq!(g.session().cwd(), sub);

    // An additional directory is inside the roots; `exit` still reports where it ended.
    let extra_real = extra.path().canonicalize().unwrap();
    let r = bash(&g, &format!("cd '{}'; exit 4", extra_real.display())).await;
    assert_eq!(text(&r), "Exit code 4");
    assert_eq!(g.session().cwd(), extra_real);

    // `..` out of the root is outside too.
    bash(&g, &format!("cd '{}'", root.display())).await;
    bash(&g, "cd ..").await;
    assert_eq!(g.session().cwd(), root);
}

#[tokio::test]
async fn a_vanished_cwd_falls_back_to_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let root = g.session().workspace().root().to_path_buf();
    bash(&g, "mkdir gone && cd gone").await;
    assert_eq!(g.session().cwd(), root.join("gone"));
    std::fs::remove_dir(root.join("gone")).unwrap();
    let t = text(&bash(&g, "pwd").await);
    assert!(t.starts_with(&format!("{}\n", root.display())), "{t}");
    assert!(t.contains("no longer exists"));
    assert_eq!(g.session().cwd(), root);
}

#[tokio::test]
async fn a_missing_shell_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = ShellConfig {
        shell: "/nonexistent/toolgate-bash".into(),
        ..ShellConfig::default()
    };
    let g = gate_with(dir.path(), &config);
    let r = bash(&g, "echo hi").await;
    assert_eq!(code(&r), ErrorCode::ExecutionFailed);
    assert!(r.error().unwrap().message.contains("was not found"));
}

/// A command that records its shell's pid, a background child's, and a `setsid` child's
/// (which leaves the process group), then waits.
const SPAWNER: &str =
    "echo $$ > pids; sleep 1000 & echo $! >> pids; setsid sleep 1000 & echo $! >> pids; wait";

#[tokio::test]
async fn timeout_kills_the_group_and_escaped_children() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let start = Instant::now();
    let r = call(
        &g,
        "Bash",
        json!({"command": format!("echo before-the-kill; {SPAWNER}"), "timeout": 1500}),
    )
    .await;
    assert!(start.elapsed() < Duration::from_secs(10));
    // A timeout is an error with code `timeout`, and the partial output reaches the model.
    assert_eq!(code(&r), ErrorCode::Timeout);
    let e = r.outcome.as_ref().err().unwrap();
    assert!(
        e.message.contains("did not finish within 1500 ms"),
        "{}",
        e.message
    );
    assert!(e.message.contains("before-the-kill"), "{}", e.message);
    assert!(
        e.message.contains("Command timed out after 1500 ms"),
        "{}",
        e.message
    );
    let partial = e.details["partial_output"].as_str().unwrap();
    assert!(partial.contains("before-the-kill"), "{partial}");
    let pids = pids_in(&dir.path().join("pids"), 3).await;
    assert_eq!(
        survivors(&pids, Duration::from_secs(10)).await,
        Vec::<i32>::new()
    );
}

#[tokio::test]
async fn a_term_ignoring_command_is_killed_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let r = call(
        &g,
        "Bash",
        json!({"command": "trap '' TERM; echo $$ > pids; (trap '' TERM; sleep 1000) & echo $! >> pids; wait", "timeout": 1000}),
    )
    .await;
    assert_eq!(code(&r), ErrorCode::Timeout, "{}", r.model_text());
    let pids = pids_in(&dir.path().join("pids"), 2).await;
    assert_eq!(
        survivors(&pids, Duration::from_secs(10)).await,
        Vec::<i32>::new()
    );
}

#[tokio::test]
async fn cancellation_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let cancel = CancellationToken::new();
    let running = {
        let g = g.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            g.execute_with_cancel(
                ToolCall::new("c", "Bash", json!({"command": SPAWNER})),
                cancel,
            )
            .await
        })
    };
    let pids = pids_in(&dir.path().join("pids"), 3).await;
    cancel.cancel();
    let r = running.await.unwrap();
    assert_eq!(code(&r), ErrorCode::Cancelled);
    assert_eq!(
        survivors(&pids, Duration::from_secs(10)).await,
        Vec::<i32>::new()
    );
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let file = dir.path().join("pids");
    let pids = {
        let call = g.execute(ToolCall::new("d", "Bash", json!({"command": SPAWNER})));
        tokio::select! {
            r = call => panic!("the command should not finish: {r:?}"),
            pids = pids_in(&file, 3) => pids,
        }
    };
    assert_eq!(
        survivors(&pids, Duration::from_secs(10)).await,
        Vec::<i32>::new()
    );
}

#[tokio::test]
async fn processes_left_behind_become_a_background_task() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    let r = bash(
        &g,
        "sleep 1000 >/dev/null 2>&1 & echo $! > pid; echo started",
    )
    .await;
    let t = text(&r);
    assert!(
        t.starts_with("started\nThe command exited but left processes running"),
        "{t}"
    );
    let id = task_id(&r);
    let listed = tasks(g.session());
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, id);
    assert!(listed[0].status.is_running());
    let pid = pids_in(&dir.path().join("pid"), 1).await[0];
    assert!(!gone(pid));
    let r = call(&g, "TaskStop", json!({"task_id": id})).await;
    assert!(
        text(&r).starts_with("Successfully stopped task"),
        "{}",
        text(&r)
    );
    assert_eq!(
        survivors(&[pid], Duration::from_secs(10)).await,
        Vec::<i32>::new()
    );
}

#[tokio::test]
async fn a_quick_command_is_not_slowed_by_the_machinery() {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    bash(&g, "true").await;
    let start = Instant::now();
    for _ in 0..5 {
        bash(&g, "echo fast").await;
    }
    // Generous: five commands well under the per-command drain grace each.
    assert!(start.elapsed() < Duration::from_secs(10));
}

/// A room that runs the command through another `bash`, adds a variable, passes a secret-looking one
/// (as a room that copies the environment would), and closes the cwd report descriptor (as
/// the real sandbox closes every descriptor above 2).
#[derive(Debug)]
struct FakeRoom;

impl Room for FakeRoom {
    fn describe(&self) -> String {
        "fake".into()
    }

    fn command(&self, argv: &[OsString], cwd: &Path) -> std::io::Result<tokio::process::Command> {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg("exec 63>&-; exec \"$@\"")
            .arg("sh")
            .args(argv)
            .current_dir(cwd)
            .env("IN_ROOM", "yes")
            .env("FAKE_TOKEN", "leaked");
        Ok(cmd)
    }
}

struct FakeSandbox;

/// A room for every call, except one whose tool says it asks to run outside the sandbox.
impl SandboxStage for FakeSandbox {
    fn select(
        &self,
        request: &toolgate_core::sandbox::SandboxRequest<'_>,
    ) -> Result<Option<Arc<dyn Room>>, toolgate_core::sandbox::SandboxUnavailable> {
        if request.outside_sandbox {
            return Ok(None);
        }
        Ok(Some(Arc::new(FakeRoom)))
    }
}

#[tokio::test]
async fn a_sandbox_room_builds_the_command() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let config = config_with_env(&[("FAKE_TOKEN", "x")]);
    let registry = register_shell_tools(Registry::builder(), &config)
        .build()
        .unwrap();
    let g = Gate::builder()
        .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
        .workspace(dir.path())
        .registry(registry)
        .sandbox(Arc::new(FakeSandbox))
        .build()
        .unwrap();
    let r = bash(&g, "echo $IN_ROOM ${FAKE_TOKEN:-unset}").await;
    assert_eq!(text(&r), "yes unset");
    // Bash's typed `dangerouslyDisableSandbox` reaches the sandbox stage; a string is not
    // the flag (the schema refuses it before any stage could misread it).
    let r = call(
        &g,
        "Bash",
        json!({"command": "echo ${IN_ROOM:-outside}", "dangerouslyDisableSandbox": true}),
    )
    .await;
    assert_eq!(text(&r), "outside");
    let r = call(
        &g,
        "Bash",
        json!({"command": "echo x", "dangerouslyDisableSandbox": "yes"}),
    )
    .await;
    assert_eq!(code(&r), ErrorCode::InvalidInput, "{}", r.model_text());
    // No report on fd 63 inside the room: the static `cd` is followed instead.
    bash(&g, "cd sub").await;
    assert_eq!(
        g.session().cwd(),
        g.session().workspace().root().join("sub")
    );
    // The timeout still kills what the room started.
    let r = call(&g, "Bash", json!({"command": SPAWNER, "timeout": 1000})).await;
    assert_eq!(code(&r), ErrorCode::Timeout, "{}", r.model_text());
    let pids = pids_in(&dir.path().join("sub/pids"), 3).await;
    assert_eq!(
        survivors(&pids, Duration::from_secs(10)).await,
        Vec::<i32>::new()
    );
}
