//! Tests of settings parsing: errors, trust, disable, managed-only, dedupe.

use super::*;
use serde_json::json;

#[test]
fn errors_name_source_and_path() {
    let bad = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "timeout": "x", "command": "true"}]}]});
    let e = HookConfig::from_settings(&[(bad, true, "project".into())], false, false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("project") && e.contains("hooks.PreToolUse[0].hooks[0].timeout"),
        "{e}"
    );
    let e = HookConfig::from_settings(&[(json!({"PreTool": []}), true, "u".into())], false, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown hook event"), "{e}");
}

#[test]
fn trust_disable_and_managed_only() {
    let h = json!({"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]});
    let h2 = json!({"Stop": [{"hooks": [{"type": "command", "command": "false"}]}]});
    let srcs = vec![
        (
            h.clone(),
            true,
            "/etc/toolgate/managed-settings.json".to_owned(),
        ),
        (h2.clone(), true, "user".to_owned()),
        (json!({"Stop": "garbage"}), false, "project".to_owned()),
    ];
    assert_eq!(
        HookConfig::from_settings(&srcs, false, false)
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        HookConfig::from_settings(&srcs, true, false).unwrap().len(),
        1
    );
    assert_eq!(
        HookConfig::from_settings(&srcs, false, true).unwrap().len(),
        1
    );
    let all = HookSource {
        hooks: h,
        active: true,
        label: "m".into(),
        managed: true,
    };
    assert!(
        HookConfig::from_sources(&[all], DisableHooks::All, false)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn dedupe_identical_handlers() {
    let h = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]},
                                  {"matcher": "*", "hooks": [{"type": "command", "command": "x"}, {"type": "command", "command": "y"}]}]});
    let c = HookConfig::from_settings(
        &[(h.clone(), true, "a".into()), (h, true, "b".into())],
        false,
        false,
    )
    .unwrap();
    assert_eq!(c.matching(HookEvent::PreToolUse, Some("Bash")).len(), 2);
    assert_eq!(c.matching(HookEvent::PreToolUse, Some("Read")).len(), 2);
}
