//! Fuzz target: one permission rule (`Bash(npm run *)`, `Read(~/.ssh/**)`,
//! `WebFetch(domain:*.example.com)`, `mcp__s__t`, …) compiled as an allow, ask or deny rule,
//! then matched against calls whose subjects also come from the input. Besides "no panic":
//!
//! - adding a deny or ask rule never makes a decision more permissive, and adding an allow
//!   rule never makes one stricter (the engine's precedence: deny > ask > allow);
//! - `CommandPatterns` (hook `if` and `excludedCommands`) and `toolgate check`'s target
//!   parser take the same text without panicking.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolgate_policy::{CommandPatterns, Engine, PolicyRequest, RuleKind, parse_check_target};
use toolgate_protocol::{
    Access, CallFacts, Decision, PathFact, PermissionMode, Subject, ToolAnnotations,
};
use toolgate_shell::{Context, analyze};

const CWD: &str = "/w";
const HOME: &str = "/home/u";

fn engine(rule: Option<(RuleKind, &str)>) -> Option<Engine> {
    let mut b = Engine::builder().cwd(CWD).home(HOME);
    if let Some((kind, text)) = rule {
        b = b.rule(kind, text, "fuzz");
    }
    b.build().ok()
}

/// Strictness: deny > ask > allow.
fn rank(d: Decision) -> u8 {
    match d {
        Decision::Allow => 0,
        Decision::Ask => 1,
        Decision::Deny => 2,
    }
}

struct Call {
    tool: &'static str,
    subject: Subject,
    input: Value,
    facts: CallFacts,
    annotations: ToolAnnotations,
}

fn calls(subject: &str) -> Vec<Call> {
    let ctx = Context::new(CWD).with_home(HOME);
    let bash_facts = analyze(subject, &ctx).facts();
    let path = PathBuf::from(CWD).join(subject);
    let path_fact = |access| CallFacts {
        paths: vec![PathFact {
            path: toolgate_core::session::normalize_lexically(&path),
            access,
            inside_roots: true,
            protected: false,
            beneath: Default::default(),
            beneath_only: Vec::new(),
        }],
        ..CallFacts::default()
    };
    vec![
        Call {
            tool: "Bash",
            subject: Subject::Command {
                field: "command".into(),
            },
            input: json!({ "command": subject }),
            facts: bash_facts,
            annotations: ToolAnnotations::default(),
        },
        Call {
            tool: "Read",
            subject: Subject::Path {
                field: "file_path".into(),
                writes: false,
            },
            input: json!({ "file_path": subject }),
            facts: path_fact(Access::Read),
            annotations: ToolAnnotations {
                read_only: true,
                ..Default::default()
            },
        },
        Call {
            tool: "Edit",
            subject: Subject::Path {
                field: "file_path".into(),
                writes: true,
            },
            input: json!({ "file_path": subject, "old_string": "a", "new_string": "b" }),
            facts: path_fact(Access::Write),
            annotations: ToolAnnotations::default(),
        },
        Call {
            tool: "WebFetch",
            subject: Subject::Url { field: "url".into() },
            input: json!({ "url": subject, "prompt": "p" }),
            facts: CallFacts::default(),
            annotations: ToolAnnotations::default(),
        },
        Call {
            tool: "mcp__srv__tool",
            subject: Subject::None,
            input: json!({ "q": subject }),
            facts: CallFacts::default(),
            annotations: ToolAnnotations::default(),
        },
    ]
}

fn decide(engine: &Engine, call: &Call) -> Decision {
    let roots = [Path::new(CWD)];
    let req = PolicyRequest {
        tool: call.tool,
        subject: &call.subject,
        annotations: call.annotations.clone(),
        input: &call.input,
        facts: &call.facts,
        mode: PermissionMode::Default,
        hook: None,
        cwd: Path::new(CWD),
        roots: &roots,
    };
    let decided = engine.decide(&req);
    let _ = decided.explain();
    decided.verdict.decision
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // "RULE\nSUBJECT": the rule, and the command / path / URL the calls carry.
    let (rule, subject) = text.split_once('\n').unwrap_or((text, "ls -la"));
    let _ = parse_check_target(rule, None);
    let _ = CommandPatterns::new(&[rule.to_owned()], PathBuf::from(CWD), Some(PathBuf::from(HOME)));
    let Some(base) = engine(None) else {
        panic!("an engine without rules must build");
    };
    let calls = calls(subject);
    let before: Vec<Decision> = calls.iter().map(|c| decide(&base, c)).collect();
    for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
        let Some(with) = engine(Some((kind, rule))) else {
            continue;
        };
        for (call, was) in calls.iter().zip(&before) {
            let now = decide(&with, call);
            match kind {
                RuleKind::Allow => assert!(
                    rank(now) <= rank(*was),
                    "allow rule {rule:?} made {} {subject:?} stricter: {was:?} -> {now:?}",
                    call.tool
                ),
                _ => assert!(
                    rank(now) >= rank(*was),
                    "{kind:?} rule {rule:?} made {} {subject:?} more permissive: {was:?} -> {now:?}",
                    call.tool
                ),
            }
        }
    }
});
