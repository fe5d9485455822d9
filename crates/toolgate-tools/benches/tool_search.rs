//! ToolSearch over 1,000 synthetic deferred MCP tool definitions. Target: p50 ≤ 1 ms per
//! search (issue 23), measured through the gate as the model's call runs
//! (`gate_call/*`), and for the search alone (`view/*`). `view/index_build` is the one-off
//! cost of a session's first search (its view's BM25 index).

use std::hint::black_box;
use std::sync::Arc;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate_core::stages::AllowAll;
use toolgate_core::tool_search::{Query, Scope};
use toolgate_core::{Gate, Registry, ToolContext, ToolError, TypedTool, ViewOptions};
use toolgate_protocol::*;
use toolgate_tools::ToolSearchTool;

const TOOLS: usize = 1000;

const TOPICS: [&str; 8] = [
    "Creates an issue in the tracker with a title, body and labels",
    "Lists pull requests of a repository, filtered by state and author",
    "Reads calendar events for a day in the user's time zone",
    "Sends an email message to one or more recipients",
    "Builds an invoice for a customer from line items",
    "Runs a read-only SQL query against the analytics database",
    "Gets the weather forecast for a city for the next days",
    "Gets the stock price forecast for a ticker symbol",
];

struct Fake(ToolSpec);

#[async_trait]
impl TypedTool for Fake {
    type Input = Value;
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

fn fake(i: usize) -> Fake {
    Fake(ToolSpec {
        name: format!("mcp__server{}__tool_{i}", i % 10),
        version: "1".into(),
        description: format!("{} (synthetic tool {i})", TOPICS[i % TOPICS.len()]),
        input_schema: json!({
            "type": "object",
            "properties": {
                "target": {"type": "string", "description": "what to act on"},
                "limit": {"type": "integer", "description": "how many results at most"},
                format!("option_{i}"): {"type": "boolean", "description": format!("switch number {i}")},
            },
            "required": ["target"]
        }),
        output_schema: None,
        annotations: ToolAnnotations::default(),
        concurrency: Concurrency::Shared,
        timeout: TimeoutSpec {
            default_ms: 1000,
            max_ms: 1000,
        },
        subject: Subject::None,
    })
}

fn setup() -> (Registry, ViewOptions) {
    let mut builder = Registry::builder().register(ToolSearchTool::new());
    for i in 0..TOOLS {
        builder = builder.register(fake(i));
    }
    let registry = builder.build().expect("registry");
    let options = ViewOptions {
        deferred: registry
            .entries()
            .iter()
            .map(|e| e.spec().name.clone())
            .filter(|n| n.starts_with("mcp__"))
            .collect(),
        ..ViewOptions::default()
    };
    (registry, options)
}

fn bench(c: &mut Criterion) {
    let (registry, options) = setup();
    let queries = [
        ("keywords", "weather forecast city"),
        ("required", "+stock forecast ticker"),
        ("rare_parameter", "option_737"),
        (
            "select",
            "select:mcp__server7__tool_737,mcp__server1__tool_1",
        ),
    ];
    let mut group = c.benchmark_group("tool_search");

    group.bench_function("view/index_build", |b| {
        let query = Query::parse("weather forecast").expect("query");
        b.iter(|| {
            let view = registry.view(&options).expect("view");
            black_box(view.search(&query, Scope::Deferred, 5).tools.len())
        })
    });

    let view = registry.view(&options).expect("view");
    for (label, text) in queries {
        let query = Query::parse(text).expect("query");
        group.bench_function(format!("view/{label}"), |b| {
            b.iter(|| black_box(view.search(&query, Scope::Deferred, 5).tools.len()))
        });
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let gate = Gate::builder()
        .workspace(dir.path())
        .registry(registry.clone())
        .view(options.clone())
        .policy(Arc::new(AllowAll))
        .build()
        .expect("gate");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for (label, text) in queries {
        let input = json!({ "query": text });
        group.bench_function(format!("gate_call/{label}"), |b| {
            b.iter(|| {
                let call = ToolCall::new("b", "ToolSearch", input.clone());
                let result = rt.block_on(gate.execute(call));
                assert!(!result.is_error(), "{result:?}");
                black_box(result)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
