//! Decision time with 1,000 rules (target: under 20 µs median per decision).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolgate_policy::{Engine, PolicyRequest, RuleKind, split_command};
use toolgate_protocol::{Access, CallFacts, CommandFact, PathFact, PermissionMode, Subject};

/// 1,000 rules in a realistic mix: Bash allow/deny/ask patterns, Read/Edit paths, MCP tools
/// and WebFetch domains.
fn engine() -> Engine {
    let mut b = Engine::builder().cwd("/work").home("/home/u");
    let mut n = 0;
    let mut rules: Vec<(RuleKind, String)> = Vec::new();
    for i in 0..400 {
        rules.push((RuleKind::Allow, format!("Bash(tool{i} run *)")));
    }
    for i in 0..150 {
        rules.push((RuleKind::Deny, format!("Bash(danger{i} -rf *)")));
    }
    for i in 0..50 {
        rules.push((RuleKind::Deny, format!("Bash(* --flag{i})")));
    }
    for i in 0..100 {
        rules.push((RuleKind::Ask, format!("Bash(deploy{i} *)")));
    }
    for i in 0..75 {
        rules.push((RuleKind::Deny, format!("Read(./secrets{i}/**)")));
        rules.push((RuleKind::Allow, format!("Edit(./src{i}/**/*.rs)")));
    }
    for i in 0..100 {
        rules.push((RuleKind::Allow, format!("mcp__server{i}__get_*")));
    }
    for i in 0..50 {
        rules.push((
            RuleKind::Allow,
            format!("WebFetch(domain:*.site{i}.example)"),
        ));
    }
    rules.push((RuleKind::Allow, "Bash(npm test)".into()));
    rules.push((RuleKind::Allow, "Bash(cargo build *)".into()));
    for (k, r) in &rules {
        b = b.rule(*k, r, "bench");
        n += 1;
    }
    assert!(n >= 1000, "{n} rules");
    b.build().expect("rules compile")
}

fn bench(c: &mut Criterion) {
    let e = engine();
    let roots = [Path::new("/work")];
    let cmd = "cd sub && timeout 60 npm test && cargo build --release 2>&1 | tee build.log && tool17 run x";
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
        paths: vec![PathFact {
            beneath: toolgate_protocol::Beneath::Nothing,
            beneath_only: Vec::new(),
            path: "/work/build.log".into(),
            access: Access::Write,
            inside_roots: true,
            protected: false,
        }],
        ..CallFacts::default()
    };
    let input = json!({"command": cmd});
    let bash = Subject::Command {
        field: "command".into(),
    };
    c.bench_function("decide_bash_compound_1000_rules", |bn| {
        bn.iter(|| {
            let req = PolicyRequest {
                tool: "Bash",
                subject: &bash,
                annotations: Default::default(),
                input: &input,
                facts: &facts,
                mode: PermissionMode::Default,
                hook: None,
                cwd: Path::new("/work"),
                roots: &roots,
            };
            black_box(e.decide(black_box(&req)))
        })
    });
    let edit_input = json!({"file_path": "/work/src42/deep/mod.rs"});
    let edit_facts = CallFacts {
        paths: vec![PathFact {
            beneath: toolgate_protocol::Beneath::Nothing,
            beneath_only: Vec::new(),
            path: "/work/src42/deep/mod.rs".into(),
            access: Access::Write,
            inside_roots: true,
            protected: false,
        }],
        ..CallFacts::default()
    };
    let edit = Subject::Path {
        field: "file_path".into(),
        writes: true,
    };
    c.bench_function("decide_edit_1000_rules", |bn| {
        bn.iter(|| {
            let req = PolicyRequest {
                tool: "Edit",
                subject: &edit,
                annotations: Default::default(),
                input: &edit_input,
                facts: &edit_facts,
                mode: PermissionMode::Default,
                hook: None,
                cwd: Path::new("/work"),
                roots: &roots,
            };
            black_box(e.decide(black_box(&req)))
        })
    });
    let mcp_input = json!({"id": 1});
    let none = Subject::None;
    let empty = CallFacts::default();
    c.bench_function("decide_mcp_1000_rules", |bn| {
        bn.iter(|| {
            let req = PolicyRequest {
                tool: "mcp__server77__get_issue",
                subject: &none,
                annotations: Default::default(),
                input: &mcp_input,
                facts: &empty,
                mode: PermissionMode::Default,
                hook: None,
                cwd: Path::new("/work"),
                roots: &roots,
            };
            black_box(e.decide(black_box(&req)))
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
