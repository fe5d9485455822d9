//! The probe and degradation: layers forced off, the plan and the helper follow, and
//! `failIfUnavailable` refuses to run. Also the escape basics as an unprivileged user.

mod common;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use common::*;
use toolgate_sandbox::{Layer, Plan, Probe, SandboxError, Tier};

fn tool_s() -> String {
    tool().to_string_lossy().into_owned()
}

#[test]
fn probe_reports_every_layer_and_disabling_works() {
    let p = Probe::detect(&[Layer::UserNs, Layer::Landlock]);
    for l in Layer::ALL {
        assert!(p.layers.contains_key(&l), "{l} missing from probe");
    }
    assert!(!p.has(Layer::UserNs) && p.reason(Layer::UserNs).contains("disabled"));
    assert!(!p.has(Layer::Landlock));
    assert_ne!(p.tier(), Tier::A);
    let json = serde_json::to_value(&p).unwrap_or_default();
    assert_eq!(json["layers"]["user_ns"]["available"], false);
    assert!(p.render().contains("MISSING user_ns"));
    assert_eq!(Probe::detect(&Layer::ALL).tier(), Tier::None);
}

#[test]
fn fail_if_unavailable_refuses_to_run() {
    let f = Fixture::new();
    let mut policy = f.policy();
    policy.fail_if_unavailable = true;
    policy.disabled_layers = vec![Layer::UserNs];
    let argv: Vec<OsString> = vec!["true".into()];
    let err = toolgate_sandbox::command(&policy, Path::new(HELPER), &argv, &f.ws);
    match err {
        Err(SandboxError::Unavailable { missing }) => {
            assert!(
                missing
                    .iter()
                    .any(|(l, why)| *l == Layer::UserNs && why.contains("disabled"))
            );
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[test]
fn nothing_available_is_refused_even_without_fail_if_unavailable() {
    let f = Fixture::new();
    let policy = f.policy();
    let probe = Probe::detect(&Layer::ALL);
    let err = Plan::new(&policy, &probe);
    assert!(
        matches!(err, Err(SandboxError::Unavailable { .. })),
        "{err:?}"
    );
}

#[test]
fn tier_b_without_user_namespaces_still_contains_writes_reads_and_network() {
    require(&[Layer::Landlock, Layer::Seccomp]);
    let f = Fixture::new();
    let mut policy = f.policy();
    policy.disabled_layers = vec![Layer::UserNs];
    let plan = Plan::new(&policy, toolgate_sandbox::probe()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.tier, Tier::B);
    assert!(!plan.applies(Layer::UserNs) && plan.applies(Layer::Landlock));
    let victim = f.outside.join("victim.txt");
    let out = f.run(
        &policy,
        &[&tool_s(), "write", &victim.to_string_lossy(), "PWNED"],
    );
    assert_contained(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning: degraded sandbox (tier B)"),
        "{}",
        text(&out)
    );
    assert_contained(&f.run(
        &policy,
        &[
            &tool_s(),
            "read",
            &f.home.join(".ssh/id_ed25519").to_string_lossy(),
        ],
    ));
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = host
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .to_string();
    assert_contained(&f.run(&policy, &[&tool_s(), "tcp-connect", &addr]));
    assert_contained(&f.run(&policy, &[&tool_s(), "unshare-user"]));
    assert_contained(&f.run(&policy, &[&tool_s(), "syscalls"]));
    let mut victim_proc = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_contained(&f.run(&policy, &[&tool_s(), "kill", &victim_proc.id().to_string()]));
    assert_contained(&f.run(
        &policy,
        &[&tool_s(), "ptrace", &victim_proc.id().to_string()],
    ));
    let _ = victim_proc.kill();
    let _ = victim_proc.wait();
    // The workspace stays writable, and the private temp dir is removed afterwards.
    let out = f.sh(
        &policy,
        "echo ok > inside.txt && echo $TMPDIR && touch $TMPDIR/x",
    );
    assert!(out.status.success(), "{}", text(&out));
    let tmp = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        tmp.contains("toolgate-sbx-") && !Path::new(&tmp).exists(),
        "{tmp}"
    );
    assert_eq!(assert_file(&victim), "original");
}

fn assert_file(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

#[test]
fn tier_c_seccomp_only_runs_with_a_warning() {
    require(&[Layer::Seccomp]);
    let f = Fixture::new();
    let mut policy = f.policy();
    policy.disabled_layers = vec![Layer::UserNs, Layer::Landlock];
    let out = f.sh(&policy, "echo hi");
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tier C") && err.contains("landlock"), "{err}");
    assert_contained(&f.run(&policy, &[&tool_s(), "unshare-user"]));
}

#[test]
fn disabled_cgroups_as_root_report_the_unenforced_process_limit() {
    let f = Fixture::new();
    let mut policy = f.policy();
    policy.disabled_layers = vec![Layer::CgroupPids];
    let probe = toolgate_sandbox::probe();
    let plan = Plan::new(&policy, probe).unwrap_or_else(|e| panic!("{e}"));
    if probe.uid == 0 {
        assert!(plan.missing.iter().any(|(l, _)| *l == Layer::CgroupPids));
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.contains("process limit NOT enforced"))
        );
        policy.fail_if_unavailable = true;
        assert!(Plan::new(&policy, probe).is_err());
    } else {
        assert!(
            plan.missing.is_empty(),
            "non-root: RLIMIT_NPROC backstop: {plan:?}"
        );
    }
}

/// Runs the sandbox as an unprivileged user (`nobody`), when the tests run as root.
fn run_unprivileged(f: &Fixture, argv: &[&str]) -> Option<std::process::Output> {
    // SAFETY: getuid never fails.
    if unsafe { libc::getuid() } != 0 {
        return None;
    }
    // The build tree may sit under a 0700 home: run copies of the binaries from the fixture.
    let bin = f.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap_or_else(|e| panic!("{e}"));
    let helper = bin.join("helper");
    if !helper.exists() {
        std::fs::copy(HELPER, &helper).unwrap_or_else(|e| panic!("{e}"));
        std::fs::copy(tool(), bin.join("tool")).unwrap_or_else(|e| panic!("{e}"));
    }
    let mut policy = f.policy();
    // The harness probe ran as root; cgroups stay root-only.
    policy.disabled_layers = vec![Layer::CgroupPids, Layer::CgroupMemory];
    policy.limits.processes = Some(64);
    let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
    // The Command itself (it hands the helper its spec descriptor), with std dropping to
    // nobody (and its supplementary groups) between fork and exec.
    let mut cmd =
        toolgate_sandbox::command(&policy, &helper, &argv, &f.ws).unwrap_or_else(|e| panic!("{e}"));
    cmd.uid(65534)
        .gid(65534)
        .current_dir("/")
        .stdin(Stdio::null());
    Some(cmd.output().unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn unprivileged_user_is_contained_too() {
    // /var/tmp: world-traversable, and not hidden by the sandbox's private /tmp.
    let f = Fixture::new_in(Path::new("/var/tmp"));
    let t = f.root.join("bin/tool").to_string_lossy().into_owned();
    let Some(out) = run_unprivileged(&f, &["sh", "-c", "id -u"]) else {
        return; // not root: every other test already runs unprivileged
    };
    // Reaching the helper binary may be impossible for nobody (e.g. 0700 home); say so loudly.
    assert!(
        out.status.success(),
        "unprivileged helper failed:\n{}",
        text(&out)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "65534");
    let victim = f.outside.join("victim.txt");
    for argv in [
        vec![t.as_str(), "write", &victim.to_string_lossy()],
        vec![
            &t,
            "read",
            &f.home.join(".ssh/id_ed25519").to_string_lossy(),
        ],
        vec![&t, "write", ".git/hooks/pre-commit", "x"],
        vec![&t, "remount-rw", &f.home.join(".ssh").to_string_lossy()],
        vec![&t, "unshare-user"],
        vec![&t, "forkbomb", "200"],
    ] {
        let out = run_unprivileged(&f, &argv).unwrap_or_else(|| panic!("not root any more"));
        assert_contained(&out);
    }
    assert_eq!(assert_file(&victim), "original");
}
