//! Deferred tools and ToolSearch through the library: 1,000 synthetic MCP tools
//! (`mcp__fake__tool_N`) registered next to the built-in tools, the view and its deferral
//! from real settings (`toolgate.toolSearch`, deny rules), and every call through a gate.

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_core::stages::AllowAll;
use toolgate_core::{Gate, Registry, SessionOptions, ToolContext, ToolError, TypedTool};
use toolgate_protocol::wire::Format;
use toolgate_protocol::{
    CallResult, Concurrency, ErrorCode, Subject, TimeoutSpec, ToolAnnotations, ToolCall,
    ToolOutput, ToolSpec,
};
use toolgate_setup::{Setup, SetupError, ViewChoice};

/// The tool with the one rare parameter.
const RARE: &str = "mcp__fake__tool_737";

const TOPICS: [&str; 8] = [
    "Creates an issue in the tracker",
    "Lists pull requests of a repository",
    "Reads calendar events for a day",
    "Sends an email message",
    "Builds an invoice for a customer",
    "Runs a database query",
    "Gets the weather forecast for a city",
    "Gets the stock price forecast for a ticker",
];

struct Fake(ToolSpec);

#[async_trait::async_trait]
impl TypedTool for Fake {
    type Input = Value;
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("ran {}", self.0.name)))
    }
}

fn fake(i: usize) -> Fake {
    let mut properties = json!({
        "target": {"type": "string", "description": "what to act on"},
        "limit": {"type": "integer", "description": "how many at most"},
    });
    let name = format!("mcp__fake__tool_{i}");
    if name == RARE {
        properties["zanzibar_code"] =
            json!({"type": "string", "description": "the island routing code"});
    }
    Fake(ToolSpec {
        name,
        version: "1".into(),
        description: format!("{} (fake tool {i})", TOPICS[i % TOPICS.len()]),
        input_schema: json!({"type": "object", "properties": properties}),
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

/// A gate over the built-in tools plus `count` fake MCP tools, its view and deferral from
/// `settings` as `toolgate-setup` computes them. Every call is allowed: what these tests
/// check is the view (deny rules remove tools from it) and ToolSearch.
fn gate(dir: &tempfile::TempDir, settings: &str, count: usize) -> Result<Gate, SetupError> {
    let mut setup = Setup::new(dir.path());
    setup.settings.files = vec![settings.to_owned()];
    let loaded = setup.load()?;
    let mut builder = Registry::builder();
    for tool in toolgate_setup::builtin_tools(&loaded.settings)? {
        builder = builder.register_arc(tool);
    }
    for i in 0..count {
        builder = builder.register_arc(Arc::new(fake(i)));
    }
    let registry = builder.build()?;
    let choice = ViewChoice {
        deferral: Some(toolgate_setup::deferral(&loaded.settings)?),
        ..ViewChoice::default()
    };
    let view = toolgate_setup::view_options(&choice, loaded.mode, &registry, &loaded.engine);
    Ok(Gate::builder()
        .workspace(dir.path())
        .registry(registry)
        .view(view)
        .policy(Arc::new(AllowAll))
        .build()?)
}

fn thousand(settings: &str) -> (tempfile::TempDir, Gate) {
    let dir = tempfile::tempdir().unwrap();
    let g = gate(&dir, settings, 1000).unwrap();
    (dir, g)
}

async fn call(gate: &Gate, name: &str, input: Value) -> CallResult {
    gate.execute(ToolCall::new("c", name, input)).await
}

async fn search(gate: &Gate, input: Value) -> CallResult {
    call(gate, "ToolSearch", input).await
}

/// The names a successful ToolSearch returned, in order.
fn found(r: &CallResult) -> Vec<String> {
    let out = r.output().unwrap_or_else(|| panic!("{r:?}"));
    out.structured.as_ref().unwrap()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn code(r: &CallResult) -> Option<ErrorCode> {
    r.error().map(|e| e.code)
}

fn named<'a>(defs: &'a [Value], name: &str) -> Option<&'a Value> {
    defs.iter().find(|d| d["name"] == name)
}

#[tokio::test]
async fn small_pools_are_not_deferred_and_toolsearch_is_not_offered() {
    let dir = tempfile::tempdir().unwrap();
    let gate = gate(&dir, "{}", 5).unwrap();
    assert!(gate.view().deferred_names().is_empty());
    let defs = gate.definitions(Format::Anthropic);
    assert!(named(&defs, "ToolSearch").is_none());
    let def = named(&defs, "mcp__fake__tool_3").unwrap();
    assert!(def.get("defer_loading").is_none(), "{def}");
    assert_eq!(
        call(&gate, "mcp__fake__tool_3", json!({}))
            .await
            .output()
            .unwrap()
            .joined_text(),
        "ran mcp__fake__tool_3"
    );
    let r = search(&gate, json!({"query": "select:mcp__fake__tool_3"})).await;
    assert_eq!(code(&r), Some(ErrorCode::Denied));
    assert!(
        r.error().unwrap().message.contains("no tool is deferred"),
        "{r:?}"
    );
}

#[tokio::test]
async fn large_pools_are_deferred_with_defer_loading() {
    let (_dir, gate) = thousand("{}");
    assert_eq!(gate.view().deferred_names().len(), 1000);
    let defs = gate.definitions(Format::Anthropic);
    let def = named(&defs, "mcp__fake__tool_3").unwrap();
    assert_eq!(def["defer_loading"], true);
    // Built-in tools are never deferred.
    assert!(named(&defs, "Read").unwrap().get("defer_loading").is_none());
    let ts = named(&defs, "ToolSearch").unwrap();
    assert!(ts.get("defer_loading").is_none());
    let about = ts["description"].as_str().unwrap();
    assert!(about.contains("mcp__fake__tool_999"), "{about}");
    // Formats without a deferral flag leave the deferred tools out.
    let openai = gate.definitions(Format::OpenAi);
    assert!(openai.iter().any(|d| d["function"]["name"] == "ToolSearch"));
    assert!(
        !openai
            .iter()
            .any(|d| d["function"]["name"] == "mcp__fake__tool_3")
    );
}

#[tokio::test]
async fn deferral_follows_the_settings() {
    let dir = tempfile::tempdir().unwrap();
    let off = gate(
        &dir,
        r#"{"toolgate": {"toolSearch": {"mode": "off"}}}"#,
        1000,
    )
    .unwrap();
    assert!(off.view().deferred_names().is_empty());
    let always = gate(
        &dir,
        r#"{"toolgate": {"toolSearch": {"mode": "always"}}}"#,
        3,
    )
    .unwrap();
    assert_eq!(always.view().deferred_names().len(), 3);
    // A large context budget holds 1,000 definitions; a small share of a small one not.
    let roomy = r#"{"toolgate": {"toolSearch": {"contextTokens": 10000000}}}"#;
    assert!(
        gate(&dir, roomy, 1000)
            .unwrap()
            .view()
            .deferred_names()
            .is_empty()
    );
    let tight = r#"{"toolgate": {"toolSearch": {"contextTokens": 10000, "thresholdPercent": 50}}}"#;
    assert_eq!(
        gate(&dir, tight, 100)
            .unwrap()
            .view()
            .deferred_names()
            .len(),
        100
    );
    assert!(
        gate(&dir, tight, 2)
            .unwrap()
            .view()
            .deferred_names()
            .is_empty()
    );
    let bad = r#"{"toolgate": {"toolSearch": {"thresholdPercent": 0}}}"#;
    let err = gate(&dir, bad, 1).unwrap_err();
    assert!(matches!(err, SetupError::ToolSearch(_)), "{err}");
    assert!(err.to_string().contains("thresholdPercent"), "{err}");
    let err = gate(
        &dir,
        r#"{"toolgate": {"toolSearch": {"mode": "sometimes"}}}"#,
        1,
    )
    .unwrap_err();
    assert!(err.to_string().contains("sometimes"), "{err}");
}

#[tokio::test]
async fn denying_toolsearch_turns_deferral_off() {
    let (_dir, gate) = thousand(r#"{"permissions": {"deny": ["ToolSearch"]}}"#);
    assert!(gate.view().deferred_names().is_empty());
    let r = call(&gate, "mcp__fake__tool_3", json!({})).await;
    assert!(!r.is_error(), "{r:?}");
}

#[tokio::test]
async fn deferred_tools_load_per_session_through_toolsearch() {
    let (_dir, gate) = thousand("{}");
    let r = call(&gate, "mcp__fake__tool_3", json!({})).await;
    assert_eq!(code(&r), Some(ErrorCode::ToolNotLoaded));
    assert!(r.error().unwrap().message.contains("ToolSearch"), "{r:?}");

    let r = search(&gate, json!({"query": "select:mcp__fake__tool_3"})).await;
    assert_eq!(found(&r), ["mcp__fake__tool_3"]);
    let text = r.output().unwrap().joined_text();
    assert!(text.contains("<functions>"), "{text}");
    assert!(text.contains(r#""name":"mcp__fake__tool_3""#), "{text}");
    assert!(text.contains("target"), "the schema comes back: {text}");

    let r = call(&gate, "mcp__fake__tool_3", json!({})).await;
    assert_eq!(r.output().unwrap().joined_text(), "ran mcp__fake__tool_3");
    // Its definition now goes out in full; the others stay deferred.
    let defs = gate.definitions(Format::Anthropic);
    assert!(
        named(&defs, "mcp__fake__tool_3")
            .unwrap()
            .get("defer_loading")
            .is_none()
    );
    assert_eq!(
        named(&defs, "mcp__fake__tool_4").unwrap()["defer_loading"],
        true
    );
    assert!(
        !named(&defs, "ToolSearch").unwrap()["description"]
            .as_str()
            .unwrap()
            .contains("mcp__fake__tool_3,")
    );
    // Another session has loaded nothing.
    let other = gate.new_session(SessionOptions::default(), None).unwrap();
    let r = call(&other, "mcp__fake__tool_3", json!({})).await;
    assert_eq!(code(&r), Some(ErrorCode::ToolNotLoaded));
}

#[tokio::test]
async fn select_returns_exact_names_and_reports_the_rest() {
    let (_dir, gate) = thousand("{}");
    let r = search(
        &gate,
        json!({"query": "select: mcp__fake__tool_10 ,mcp__fake__tool_2,mcp__nope__x"}),
    )
    .await;
    assert_eq!(found(&r), ["mcp__fake__tool_10", "mcp__fake__tool_2"]);
    let out = r.output().unwrap();
    assert_eq!(
        out.structured.as_ref().unwrap()["unknown"],
        json!(["mcp__nope__x"])
    );
    assert!(out.joined_text().contains("No tool named `mcp__nope__x`"));
    for name in ["mcp__fake__tool_10", "mcp__fake__tool_2"] {
        assert!(!call(&gate, name, json!({})).await.is_error());
    }
}

#[tokio::test]
async fn a_rare_parameter_ranks_its_tool_first() {
    let (_dir, gate) = thousand("{}");
    for query in ["zanzibar", "island routing", "zanzibar code"] {
        let r = search(&gate, json!({"query": query})).await;
        assert_eq!(found(&r).first().map(String::as_str), Some(RARE), "{query}");
    }
    // The searched tool is loaded; ranking by name words works too.
    assert!(!call(&gate, RARE, json!({})).await.is_error());
    let r = search(&gate, json!({"query": "tool 42", "max_results": 3})).await;
    assert_eq!(
        found(&r).first().map(String::as_str),
        Some("mcp__fake__tool_42")
    );
    assert_eq!(found(&r).len(), 3);
}

#[tokio::test]
async fn required_words_filter_the_results() {
    let (_dir, gate) = thousand("{}");
    // Both weather and stock tools forecast; the shorter weather descriptions rank first.
    let plain = found(&search(&gate, json!({"query": "forecast", "max_results": 50})).await);
    assert!(plain.iter().any(|n| fake_topic(n) == 6), "{plain:?}");
    let r = search(
        &gate,
        json!({"query": "+stock forecast", "max_results": 50}),
    )
    .await;
    let names = found(&r);
    assert_eq!(names.len(), 50);
    assert!(names.iter().all(|n| fake_topic(n) == 7), "{names:?}");
    let none = found(&search(&gate, json!({"query": "+xylophone forecast"})).await);
    assert!(none.is_empty());
}

fn fake_topic(name: &str) -> usize {
    name.rsplit('_').next().unwrap().parse::<usize>().unwrap() % TOPICS.len()
}

#[tokio::test]
async fn denied_tools_are_never_found() {
    let (_dir, gate) = thousand(&format!(
        r#"{{"permissions": {{"deny": ["{RARE}", "mcp__fake__tool_5"]}}}}"#
    ));
    let r = search(
        &gate,
        json!({"query": "zanzibar island routing", "max_results": 50}),
    )
    .await;
    assert!(!found(&r).iter().any(|n| n == RARE), "{r:?}");
    let r = search(&gate, json!({"query": "email message", "max_results": 50})).await;
    let names = found(&r);
    assert!(!names.is_empty());
    assert!(!names.iter().any(|n| n == "mcp__fake__tool_5"), "{names:?}");
    let r = search(
        &gate,
        json!({"query": format!("select:{RARE},mcp__fake__tool_6")}),
    )
    .await;
    assert_eq!(found(&r), ["mcp__fake__tool_6"]);
    let out = r.output().unwrap();
    assert_eq!(out.structured.as_ref().unwrap()["denied"][0]["name"], RARE);
    assert!(
        !out.joined_text().contains("zanzibar"),
        "no definition of a denied tool: {}",
        out.joined_text()
    );
    let defs = gate.definitions(Format::Anthropic);
    assert!(named(&defs, RARE).is_none());
    assert!(
        !named(&defs, "ToolSearch").unwrap()["description"]
            .as_str()
            .unwrap()
            .contains(RARE)
    );
    let r = call(&gate, RARE, json!({})).await;
    assert_eq!(code(&r), Some(ErrorCode::Denied));
}

#[tokio::test]
async fn malformed_queries_get_clear_errors_and_load_nothing() {
    let (_dir, gate) = thousand("{}");
    let cases = [
        (json!({"query": "   "}), ErrorCode::InvalidRequest, "empty"),
        (
            json!({"query": "select: ,"}),
            ErrorCode::InvalidRequest,
            "names no tools",
        ),
        (
            json!({"query": "select:mcp__fake__tool_3,bad name"}),
            ErrorCode::InvalidRequest,
            "`bad name`",
        ),
        (
            json!({"query": "+ weather"}),
            ErrorCode::InvalidRequest,
            "`+`",
        ),
        (
            json!({"query": "?! --"}),
            ErrorCode::InvalidRequest,
            "no words",
        ),
        (
            json!({"query": "x".repeat(600)}),
            ErrorCode::InvalidRequest,
            "600 characters",
        ),
        (
            json!({"query": "mail", "max_results": 0}),
            ErrorCode::InvalidInput,
            "max_results",
        ),
        (json!({"query": 7}), ErrorCode::InvalidInput, "query"),
        (json!({}), ErrorCode::InvalidInput, "query"),
    ];
    for (input, want, says) in cases {
        let r = search(&gate, input.clone()).await;
        let err = r.error().unwrap_or_else(|| panic!("{input}: {r:?}"));
        assert_eq!(err.code, want, "{input}: {}", err.message);
        assert!(
            err.message.contains(says) || err.details.to_string().contains(says),
            "{input}: {} {}",
            err.message,
            err.details
        );
    }
    let r = call(&gate, "mcp__fake__tool_3", json!({})).await;
    assert_eq!(code(&r), Some(ErrorCode::ToolNotLoaded));
}

#[tokio::test]
async fn a_narrower_view_without_toolsearch_defers_nothing() {
    let (_dir, gate) = thousand("{}");
    let reason = |n: &str| format!("{n} is not for this sub-agent");
    let with = gate.view().narrowed(
        |n| n == "ToolSearch" || n.starts_with("mcp__fake__tool_1"),
        reason,
    );
    assert_eq!(with.deferred_names().len(), 111);
    let without = gate
        .view()
        .narrowed(|n| n.starts_with("mcp__fake__tool_1"), reason);
    assert!(without.deferred_names().is_empty());
    let defs = without.definitions(Format::Anthropic);
    assert_eq!(defs.len(), 111);
    assert!(defs.iter().all(|d| d.get("defer_loading").is_none()));
}

/// An upstream controls its definitions: a deeply nested schema and a huge description are
/// indexed within bounds (parameters deeper than six levels are not), and searching them
/// neither fails nor hangs.
#[tokio::test]
async fn hostile_definitions_are_indexed_within_bounds() {
    let mut schema = json!({"type": "object", "properties": {"abyssword": {"type": "string"}}});
    for depth in 0..40 {
        schema = json!({"type": "object", "properties": {format!("level{depth}"): schema}});
    }
    schema["properties"]["shallowword"] = json!({"type": "string"});
    let mut deep = fake(0);
    deep.0.name = "mcp__evil__deep".into();
    deep.0.input_schema = schema;
    deep.0.description = "flood ".repeat(200_000);
    let dir = tempfile::tempdir().unwrap();
    let mut builder = Registry::builder().register(toolgate_tools::ToolSearchTool::new());
    builder = builder.register(deep);
    let registry = builder.build().unwrap();
    let view = toolgate_core::ViewOptions {
        deferred: vec!["mcp__evil__deep".into()],
        ..Default::default()
    };
    let gate = Gate::builder()
        .workspace(dir.path())
        .registry(registry)
        .view(view)
        .policy(Arc::new(AllowAll))
        .build()
        .unwrap();
    assert_eq!(
        found(&search(&gate, json!({"query": "shallowword"})).await),
        ["mcp__evil__deep"]
    );
    assert!(found(&search(&gate, json!({"query": "abyssword"})).await).is_empty());
    assert_eq!(
        found(&search(&gate, json!({"query": "flood"})).await),
        ["mcp__evil__deep"]
    );
}
