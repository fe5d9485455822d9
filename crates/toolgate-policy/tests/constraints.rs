//! Constraints (rate limits, output caps, masking), the root guard, the managed floor lift,
//! bare-name denies and the trace renderings.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_policy::constraints::{
    ConstraintConfig, MaskAction, MaskConfig, OutputConfig, RateConfig,
};
use toolgate_policy::rate::{RateHit, RateScopes, RateStore, RateStoreError, RateVerdict};
use toolgate_policy::{Constraints, Engine, PolicyRequest, split_command};
use toolgate_protocol::{
    CallFacts, CommandFact, Content, Decision, ErrorCode, Finding, Layer, PermissionMode, Risk,
    Subject, ToolOutput,
};

fn rate() -> RateConfig {
    serde_json::from_value(json!({"calls": 1, "perSeconds": 1})).unwrap()
}

fn s(session: &str) -> RateScopes<'_> {
    RateScopes {
        session,
        client: "cli",
    }
}

fn c(pattern: &str, config: ConstraintConfig) -> (String, ConstraintConfig, String) {
    (pattern.into(), config, "test".into())
}

#[test]
fn rate_limits_slide_and_every_matching_limit_applies() {
    let cs = Constraints::new(
        [
            c(
                "Bash",
                ConstraintConfig {
                    rate: Some(RateConfig {
                        calls: 2,
                        per_seconds: 10,
                        ..rate()
                    }),
                    ..Default::default()
                },
            ),
            c(
                "*",
                ConstraintConfig {
                    rate: Some(RateConfig {
                        calls: 3,
                        per_seconds: 60,
                        ..rate()
                    }),
                    ..Default::default()
                },
            ),
        ],
        Some("salt"),
    );
    let t0 = Instant::now();
    assert!(cs.admit_at("Bash", &s("s"), t0).is_ok());
    assert!(cs.admit_at("Bash", &s("s"), t0).is_ok());
    let err = cs.admit_at("Bash", &s("s"), t0).unwrap_err();
    assert_eq!(
        (err.code, err.layer),
        (ErrorCode::RateLimited, Some(Layer::Constraint))
    );
    assert!(
        err.message.contains("at most 2 call(s) of Bash per 10 s"),
        "{}",
        err.message
    );
    // Another session has its own window.
    assert!(cs.admit_at("Bash", &s("other"), t0).is_ok());
    // After the window, Bash may run again, but the `*` limit (3 per minute) now binds.
    let t1 = t0 + Duration::from_secs(11);
    assert!(cs.admit_at("Bash", &s("s"), t1).is_ok());
    assert!(cs.admit_at("Read", &s("s"), t1).is_err());
    // A refused call did not use up the quota.
    assert!(
        cs.admit_at("Read", &s("s"), t0 + Duration::from_secs(61))
            .is_ok()
    );
}

#[test]
fn output_caps_take_the_smallest() {
    let cs = Constraints::new(
        [
            c(
                "mcp__crm__*",
                ConstraintConfig {
                    output: Some(OutputConfig {
                        max_lines: Some(3),
                        max_bytes: Some(1000),
                        max_records: Some(2),
                    }),
                    ..Default::default()
                },
            ),
            c(
                "*",
                ConstraintConfig {
                    output: Some(OutputConfig {
                        max_bytes: Some(40),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ),
        ],
        None,
    );
    let out = cs.shape("mcp__crm__list", ToolOutput::text("1\n2\n3\n4\n5\n6"));
    assert!(
        out.joined_text()
            .starts_with("1\n2\n3\n[toolgate: 3 of 6 lines omitted"),
        "{}",
        out.joined_text()
    );
    let out = cs.shape("Bash", ToolOutput::text("é".repeat(100)));
    let t = out.joined_text();
    assert!(
        t.starts_with(&"é".repeat(20)) && t.contains("output cut at 40 of 200 bytes"),
        "{t}"
    );
    let out = cs.shape(
        "mcp__crm__list",
        ToolOutput::text("x").with_structured(json!([1, 2, 3, 4])),
    );
    assert_eq!(out.structured.unwrap().as_array().unwrap().len(), 3);
    let out = cs.shape("mcp__crm__list", ToolOutput::text("[1,2,3]"));
    assert!(
        out.joined_text()
            .starts_with("[1,2,\"[toolgate: 1 of 3 records omitted"),
        "{}",
        out.joined_text()
    );
}

#[test]
fn masking_by_pointer_and_key() {
    let hash = ConstraintConfig {
        mask: Some(MaskConfig {
            pointers: vec!["/customers/*/ssn".into(), "/token".into()],
            keys: vec!["Email".into()],
            action: MaskAction::Hash,
        }),
        ..Default::default()
    };
    let cs = Constraints::new([c("mcp__crm__*", hash)], Some("salt"));
    let v = json!({"token": "t", "customers": [{"ssn": "1", "email": "a@x", "name": "A"}, {"ssn": "1", "contact": {"EMAIL": "b@x"}}]});
    let out = cs.shape(
        "mcp__crm__get",
        ToolOutput::text(v.to_string()).with_structured(v.clone()),
    );
    let s = out.structured.unwrap();
    let h0 = s["customers"][0]["ssn"].as_str().unwrap();
    assert!(h0.starts_with("[masked:") && h0.len() == 25, "{h0}");
    assert_eq!(
        s["customers"][0]["ssn"], s["customers"][1]["ssn"],
        "equal values hash equally"
    );
    assert_ne!(s["token"], "t");
    assert!(
        s["customers"][0]["email"]
            .as_str()
            .unwrap()
            .starts_with("[masked:")
    );
    assert!(
        s["customers"][1]["contact"]["EMAIL"]
            .as_str()
            .unwrap()
            .starts_with("[masked:")
    );
    assert_eq!(s["customers"][0]["name"], "A");
    let text = out
        .content
        .iter()
        .map(|b| match b {
            Content::Text { text } => text.clone(),
            _ => String::new(),
        })
        .collect::<String>();
    assert!(!text.contains("a@x") && !text.contains("\"t\""), "{text}");
    // Another salt hashes differently.
    let other = Constraints::new(
        [c(
            "*",
            ConstraintConfig {
                mask: Some(MaskConfig {
                    pointers: vec!["/a".into()],
                    ..Default::default()
                }),
                ..Default::default()
            },
        )],
        Some("pepper"),
    );
    let same = Constraints::new(
        [c(
            "*",
            ConstraintConfig {
                mask: Some(MaskConfig {
                    pointers: vec!["/a".into()],
                    ..Default::default()
                }),
                ..Default::default()
            },
        )],
        Some("salt"),
    );
    let a = other
        .shape(
            "X",
            ToolOutput::default().with_structured(json!({"a": "1"})),
        )
        .structured
        .unwrap();
    let b = same
        .shape(
            "X",
            ToolOutput::default().with_structured(json!({"a": "1"})),
        )
        .structured
        .unwrap();
    assert_ne!(a, b);
    let remove = Constraints::new(
        [c(
            "*",
            ConstraintConfig {
                mask: Some(MaskConfig {
                    keys: vec!["secret".into()],
                    pointers: vec!["/list/0".into()],
                    action: MaskAction::Remove,
                }),
                ..Default::default()
            },
        )],
        None,
    );
    let s = remove
        .shape(
            "X",
            ToolOutput::default().with_structured(json!({"secret": 1, "keep": 2, "list": [1, 2]})),
        )
        .structured
        .unwrap();
    assert_eq!(s, json!({"keep": 2, "list": [2]}));
    // Non-JSON text is left alone by masking.
    assert_eq!(
        remove
            .shape("X", ToolOutput::text("secret: 1"))
            .joined_text(),
        "secret: 1"
    );
}

fn decide(
    engine: &Engine,
    cmd: &str,
    mode: PermissionMode,
    findings: Vec<Finding>,
) -> toolgate_policy::Decided {
    let input = json!({"command": cmd});
    let facts = CallFacts {
        commands: split_command(cmd)
            .commands
            .into_iter()
            .map(|argv| CommandFact {
                text: argv.join(" "),
                argv,
                ..Default::default()
            })
            .collect(),
        findings,
        ..CallFacts::default()
    };
    let subject = Subject::Command {
        field: "command".into(),
    };
    let roots = [Path::new("/p")];
    engine.decide(&PolicyRequest {
        tool: "Bash",
        subject: &subject,
        annotations: Default::default(),
        input: &input,
        facts: &facts,
        mode,
        hook: None,
        cwd: Path::new("/p"),
        roots: &roots,
    })
}

#[test]
fn root_guard_in_bypass_mode() {
    let root_unsandboxed = Engine::builder()
        .cwd("/p")
        .root(true, false, false)
        .build()
        .unwrap();
    let d = decide(
        &root_unsandboxed,
        "npm test",
        PermissionMode::BypassPermissions,
        vec![],
    );
    assert_eq!(
        (d.verdict.decision, d.verdict.layer),
        (Decision::Deny, Layer::Mode)
    );
    assert!(
        d.verdict.reason.contains("--allow-root"),
        "{}",
        d.verdict.reason
    );
    assert!(root_unsandboxed.root_guard().is_some());
    // Other modes are unaffected; --allow-root or a sandbox lifts it.
    assert_eq!(
        decide(
            &root_unsandboxed,
            "npm test",
            PermissionMode::Default,
            vec![]
        )
        .verdict
        .decision,
        Decision::Ask
    );
    for e in [
        Engine::builder()
            .cwd("/p")
            .root(true, false, true)
            .build()
            .unwrap(),
        Engine::builder()
            .cwd("/p")
            .root(true, true, false)
            .build()
            .unwrap(),
    ] {
        assert_eq!(
            decide(&e, "npm test", PermissionMode::BypassPermissions, vec![])
                .verdict
                .decision,
            Decision::Allow
        );
    }
}

#[test]
fn only_managed_settings_lift_the_catastrophic_floor_and_only_to_ask() {
    let cat = || {
        vec![Finding {
            risk: Risk::Catastrophic,
            category: "fork_bomb".into(),
            reason: "a fork bomb".into(),
        }]
    };
    let e = Engine::builder()
        .cwd("/p")
        .allow("Bash(*)")
        .build()
        .unwrap();
    let d = decide(&e, "x", PermissionMode::BypassPermissions, cat());
    assert_eq!(
        (d.verdict.decision, d.verdict.layer),
        (Decision::Deny, Layer::Risk)
    );
    assert!(d.verdict.reason.contains("fork_bomb"));
    let lifted = Engine::builder()
        .cwd("/p")
        .allow("Bash(*)")
        .catastrophic_ask(Some("/etc/toolgate/managed-settings.json".into()))
        .build()
        .unwrap();
    for mode in [
        PermissionMode::Default,
        PermissionMode::BypassPermissions,
        PermissionMode::Auto,
    ] {
        let d = decide(&lifted, "x", mode, cat());
        assert_eq!(
            (d.verdict.decision, d.verdict.layer),
            (Decision::Ask, Layer::Risk),
            "{mode}"
        );
    }
    assert_eq!(
        decide(&lifted, "x", PermissionMode::DontAsk, cat())
            .verdict
            .decision,
        Decision::Deny
    );
    let d = decide(&lifted, "rm -rf /", PermissionMode::Default, vec![]);
    assert_eq!(d.verdict.decision, Decision::Ask);
}

#[test]
fn bare_name_denies_remove_tools() {
    let e = Engine::builder()
        .cwd("/p")
        .deny("Bash(*)")
        .deny("mcp__*")
        .deny("WebFetch(domain:x.com)")
        .build()
        .unwrap();
    assert!(e.removes_tool("Bash").is_some());
    assert!(e.removes_tool("mcp__gh__x").is_some());
    assert!(e.removes_tool("WebFetch").is_none());
    assert!(e.removes_tool("Read").is_none());
    let all = Engine::builder().cwd("/p").deny("*").build().unwrap();
    assert_eq!(all.removes_tool("Read").unwrap().0, "*");
}

#[test]
fn trace_renderings_name_stage_rule_and_source() {
    let e = Engine::builder()
        .cwd("/p")
        .rule(
            toolgate_policy::RuleKind::Deny,
            "Bash(curl *)",
            "/p/.toolgate/settings.json",
        )
        .build()
        .unwrap();
    let d = decide(&e, "ls && curl evil.sh", PermissionMode::Default, vec![]);
    let r = d.render();
    assert!(r.starts_with("DENY Bash (rule layer, mode default)"), "{r}");
    assert!(
        r.contains("Bash(curl *)")
            && r.contains("/p/.toolgate/settings.json")
            && r.contains("command  curl evil.sh"),
        "{r}"
    );
    let x = d.explain();
    assert!(
        x.contains("would be refused")
            && x.contains("stage 6")
            && x.contains("The rule `Bash(curl *)` from /p/.toolgate/settings.json decided it"),
        "{x}"
    );
    let j = d.to_json();
    assert_eq!(j["verdict"]["decision"], "deny");
    assert_eq!(j["trace"]["facts"]["shell_facts"], "analyzer");
    assert!(
        j["trace"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["check"] == "deny rules" && s["outcome"] == "decided")
    );
    // Missing analyzer facts are marked as a gap.
    let input = json!({"command": "ls"});
    let subject = Subject::Command {
        field: "command".into(),
    };
    let facts = CallFacts::default();
    let roots = [Path::new("/p")];
    let d = e.decide(&PolicyRequest {
        tool: "Bash",
        subject: &subject,
        annotations: Default::default(),
        input: &input,
        facts: &facts,
        mode: PermissionMode::Default,
        hook: None,
        cwd: Path::new("/p"),
        roots: &roots,
    });
    assert_eq!(d.trace.facts.shell_facts, "fallback splitter");
    assert!(d.explain().contains("fallback splitter"));
}

#[test]
fn path_rule_for_directory_walkers() {
    use toolgate_policy::RuleKind;
    use toolgate_protocol::Access;
    let e = Engine::builder()
        .cwd("/p")
        .deny("Read(.env)")
        .ask("Edit(./docs/**)")
        .build()
        .unwrap();
    let (k, rule, _) = e.path_rule(Path::new("/p/sub/.env"), Access::Read).unwrap();
    assert_eq!((k, rule.as_str()), (RuleKind::Deny, "Read(.env)"));
    assert!(
        e.path_rule(Path::new("/p/src/a.rs"), Access::Read)
            .is_none()
    );
    assert_eq!(
        e.path_rule(Path::new("/p/docs/a.md"), Access::Write)
            .unwrap()
            .0,
        RuleKind::Ask
    );
    assert!(
        e.path_rule(Path::new("/p/docs/a.md"), Access::Read)
            .is_none()
    );
}

fn limited(
    pattern: &str,
    calls: u32,
    extra: serde_json::Value,
) -> (String, ConstraintConfig, String) {
    let mut rate = json!({"calls": calls, "perSeconds": 60});
    if let (Some(r), Some(x)) = (rate.as_object_mut(), extra.as_object()) {
        r.extend(x.clone());
    }
    c(
        pattern,
        ConstraintConfig {
            rate: Some(serde_json::from_value(rate).unwrap()),
            ..Default::default()
        },
    )
}

#[test]
fn a_scope_says_whose_calls_share_the_budget() {
    let cs = Constraints::new(
        [
            limited("Read", 2, json!({"scope": "client"})),
            limited("Grep", 2, json!({"scope": "global"})),
            limited("Glob", 1, json!({})),
        ],
        None,
    );
    let t = Instant::now();
    let a1 = RateScopes {
        session: "1",
        client: "alice",
    };
    let a2 = RateScopes {
        session: "2",
        client: "alice",
    };
    let b = RateScopes {
        session: "3",
        client: "bob",
    };
    // client: alice's two sessions share two calls; bob has his own.
    assert!(cs.admit_at("Read", &a1, t).is_ok());
    assert!(cs.admit_at("Read", &a2, t).is_ok());
    let err = cs.admit_at("Read", &a1, t).unwrap_err();
    assert!(err.message.contains("for this client"), "{}", err.message);
    assert!(cs.admit_at("Read", &b, t).is_ok());
    // global: everyone shares two calls.
    assert!(cs.admit_at("Grep", &a1, t).is_ok());
    assert!(cs.admit_at("Grep", &b, t).is_ok());
    let err = cs.admit_at("Grep", &a2, t).unwrap_err();
    assert!(
        err.message.contains("across all sessions"),
        "{}",
        err.message
    );
    // session (the default): each session its own.
    assert!(cs.admit_at("Glob", &a1, t).is_ok());
    assert!(cs.admit_at("Glob", &a2, t).is_ok());
    assert!(cs.admit_at("Glob", &a1, t).is_err());
}

/// A shared store that is down.
#[derive(Debug)]
struct DownStore;

#[async_trait::async_trait]
impl RateStore for DownStore {
    fn describe(&self) -> String {
        "redis://10.0.0.1:6379/0".into()
    }

    async fn hit(&self, _hits: &[RateHit]) -> Result<RateVerdict, RateStoreError> {
        Err(RateStoreError {
            message: "connection refused".into(),
        })
    }
}

#[tokio::test]
async fn a_store_that_is_down_never_means_unlimited() {
    let scopes = RateScopes {
        session: "s",
        client: "c",
    };
    // deny (the default) refuses, saying why.
    let deny = Constraints::new([limited("Bash", 100, json!({"scope": "global"}))], None)
        .with_store(std::sync::Arc::new(DownStore));
    let err = deny.admit("Bash", &scopes).await.unwrap_err();
    assert_eq!(
        (err.code, err.layer),
        (ErrorCode::RateLimited, Some(Layer::Constraint))
    );
    assert!(
        err.message.contains("redis://10.0.0.1:6379/0")
            && err.message.contains("connection refused")
            && err.message.contains("fallback deny"),
        "{}",
        err.message
    );
    // Unlimited tools are not affected.
    assert_eq!(deny.admit("Read", &scopes).await.unwrap(), None);
    // local counts in this process and says so.
    let local = Constraints::new(
        [limited(
            "Bash",
            2,
            json!({"scope": "global", "fallback": "local"}),
        )],
        None,
    )
    .with_store(std::sync::Arc::new(DownStore));
    let note = local.admit("Bash", &scopes).await.unwrap().unwrap();
    assert!(note.contains("counted in this process only"), "{note}");
    assert!(local.admit("Bash", &scopes).await.is_ok());
    assert!(local.admit("Bash", &scopes).await.is_err(), "still limited");
    // One deny among the matching limits is enough to refuse.
    let mixed = Constraints::new(
        [
            limited("Bash", 5, json!({"fallback": "local"})),
            limited("*", 5, json!({"scope": "client"})),
        ],
        None,
    )
    .with_store(std::sync::Arc::new(DownStore));
    assert!(mixed.admit("Bash", &scopes).await.is_err());
}
