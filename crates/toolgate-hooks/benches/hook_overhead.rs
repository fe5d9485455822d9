//! What one trivial command hook costs per tool call, measured through the gate: a no-op tool
//! with no hooks, with one `true` hook (shell form: `sh -c true`; exec form: `/bin/true`, no
//! shell), and with a hook whose `if` rule does not match (the filter alone, nothing spawned).
//! No audit log, so only the hook is the difference.

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_core::{Gate, Registry, ToolContext, ToolError, TypedTool};
use toolgate_hooks::{HookConfig, HookEngine, HookEnv};
use toolgate_protocol::*;

struct Noop(ToolSpec);

#[derive(Deserialize)]
struct NoopInput {
    #[allow(dead_code)]
    file_path: String,
}

#[async_trait]
impl TypedTool for Noop {
    type Input = NoopInput;
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, _input: NoopInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

fn gate(dir: &std::path::Path, handler: Option<Value>) -> Gate {
    let spec = ToolSpec {
        name: "Noop".into(),
        version: "1".into(),
        description: "does nothing".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"file_path": {"type": "string"}},
            "required": ["file_path"],
            "additionalProperties": false
        }),
        output_schema: None,
        annotations: ToolAnnotations {
            read_only: true,
            ..Default::default()
        },
        concurrency: Concurrency::Shared,
        timeout: TimeoutSpec {
            default_ms: 5000,
            max_ms: 5000,
        },
        subject: Subject::Path {
            field: "file_path".into(),
            writes: false,
        },
    };
    let registry = Registry::builder()
        .register(Noop(spec))
        .build()
        .expect("registry");
    let mut b = Gate::builder()
        .policy(std::sync::Arc::new(toolgate_core::stages::AllowAll))
        .workspace(dir)
        .registry(registry);
    if let Some(h) = handler {
        let hooks = json!({"PreToolUse": [{"matcher": "*", "hooks": [h]}]});
        let config = HookConfig::from_settings(&[(hooks, true, "bench".into())], false, false)
            .expect("hooks");
        let env = HookEnv {
            project_dir: dir.to_path_buf(),
            transcript_path: None,
        };
        b = b.hooks(Arc::new(HookEngine::new(config, env)));
    }
    b.build().expect("gate")
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let call = ToolCall::new("toolu_1", "Noop", json!({"file_path": "/ws/src/main.rs"}));
    let mut group = c.benchmark_group("hook_overhead");
    group.sample_size(50);
    for (name, handler) in [
        ("no_hooks", None),
        (
            "if_not_matching",
            Some(json!({"type": "command", "command": "true", "if": "Bash(git *)"})),
        ),
        (
            "exec_bin_true",
            Some(json!({"type": "command", "command": "/bin/true", "args": []})),
        ),
        (
            "shell_true",
            Some(json!({"type": "command", "command": "true"})),
        ),
    ] {
        let g = gate(dir.path(), handler);
        // A hook that failed would show up as an error, not as a cheap call.
        let r = rt.block_on(g.execute(call.clone()));
        assert!(!r.is_error(), "{r:?}");
        group.bench_function(name, |b| {
            b.iter(|| rt.block_on(g.execute(call.clone())));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
