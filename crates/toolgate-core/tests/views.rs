//! Registry views and tool definitions in the three API formats.

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use toolgate_core::registry::{Lookup, Snapshot};
use toolgate_core::{Registry, ViewOptions};
use toolgate_protocol::wire::Format;
use toolgate_protocol::*;

fn names(reg: &Registry, opts: ViewOptions) -> Vec<String> {
    reg.view(&opts)
        .unwrap()
        .entries()
        .iter()
        .map(|e| e.spec().name.clone())
        .collect()
}

fn reg() -> Registry {
    registry(&Arc::default())
}

#[test]
fn modes_hide_nothing_the_policy_decides_per_call() {
    // Plan mode still runs read-only Bash commands and refuses edits: the permission
    // engine's decision, not the view's.
    let all = names(&reg(), ViewOptions::default());
    let plan = names(
        &reg(),
        ViewOptions {
            mode: PermissionMode::Plan,
            ..Default::default()
        },
    );
    assert_eq!(plan, all);
}

#[test]
fn bare_name_deny_removes_tools_and_scoped_deny_does_not() {
    let r = reg();
    let v = names(
        &r,
        ViewOptions {
            deny: vec!["Bash".into(), "mcp__*".into()],
            ..Default::default()
        },
    );
    assert_eq!(v, ["Reader", "Writer", "Read", "Edit"]);
    let v = names(
        &r,
        ViewOptions {
            deny: vec!["Bash(*)".into()],
            ..Default::default()
        },
    );
    assert!(
        !v.contains(&"Bash".to_owned()),
        "`Bash(*)` is a bare-name deny"
    );
    let v = names(
        &r,
        ViewOptions {
            deny: vec!["*".into()],
            ..Default::default()
        },
    );
    assert!(v.is_empty());
    // Case matters: `bash` is not `Bash`.
    let v = names(
        &r,
        ViewOptions {
            deny: vec!["bash".into()],
            ..Default::default()
        },
    );
    assert!(v.contains(&"Bash".to_owned()));
}

#[test]
fn allow_list_and_simple_set() {
    let r = reg();
    let v = names(
        &r,
        ViewOptions {
            allow_only: Some(vec!["Read".into(), "mcp__gh__*".into()]),
            ..Default::default()
        },
    );
    assert_eq!(v, ["Read", "mcp__gh__issues"]);
    let v = names(
        &r,
        ViewOptions {
            simple: true,
            ..Default::default()
        },
    );
    assert_eq!(v, ["Bash", "Read", "Edit"]);
}

#[test]
fn hidden_tools_are_reported_as_denied_not_unknown() {
    let view = reg()
        .view(&ViewOptions {
            deny: vec!["Writer".into()],
            ..Default::default()
        })
        .unwrap();
    match view.lookup("Writer") {
        Lookup::Hidden(h) => {
            assert_eq!(h.layer, Layer::Rule);
            assert!(h.reason.contains("denied by the rule"), "{}", h.reason);
        }
        other => panic!("expected Hidden, got {other:?}"),
    }
    assert!(matches!(view.lookup("Nothing"), Lookup::Unknown(_)));
}

#[test]
fn views_do_not_change_the_registry() {
    let r = reg();
    let before = r.entries().len();
    let _ = r
        .view(&ViewOptions {
            deny: vec!["*".into()],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.entries().len(), before);
}

#[test]
fn bad_names_and_schemas_are_refused() {
    let t = Arc::default();
    let err = Registry::builder()
        .register(Probe {
            spec: spec("bad name", true),
            timeline: Arc::clone(&t),
        })
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("invalid"));
    let mut s = spec("X", true);
    s.input_schema = json!({"type": 12});
    let err = Registry::builder()
        .register(Probe {
            spec: s,
            timeline: Arc::clone(&t),
        })
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("input schema of `X`"));
    let err = Registry::builder()
        .register(Probe {
            spec: spec("X", true),
            timeline: Arc::clone(&t),
        })
        .register(Probe {
            spec: spec("X", true),
            timeline: t,
        })
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("unique"));
}

#[test]
fn snapshots_round_trip_and_pin_specs() {
    let t: Timeline = Arc::default();
    let r = reg();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.json");
    let mut snap = r.snapshot();
    snap.tools.retain(|s| s.name == "Read" || s.name == "Bash");
    snap.tools[0].description = "pinned".into();
    snap.save(&path).unwrap();
    let loaded = Snapshot::load(&path).unwrap();
    assert_eq!(loaded, snap);
    let pinned = Registry::builder()
        .register(Probe {
            spec: spec("Bash", false),
            timeline: t.clone(),
        })
        .register(Probe {
            spec: spec("Read", true),
            timeline: t.clone(),
        })
        .snapshot(loaded)
        .build()
        .unwrap();
    let specs: Vec<(String, String)> = pinned
        .entries()
        .iter()
        .map(|e| (e.spec().name.clone(), e.spec().description.clone()))
        .collect();
    assert_eq!(specs[0], ("Bash".into(), "pinned".into()));
    assert_eq!(specs.len(), 2);

    let mut unknown = r.snapshot();
    unknown.tools[0].name = "Ghost".into();
    let err = Registry::builder()
        .register(Probe {
            spec: spec("Bash", false),
            timeline: t,
        })
        .snapshot(unknown)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("Ghost"));
    std::fs::write(&path, "{\"format\":\"other\",\"tools\":[]}").unwrap();
    assert!(
        Snapshot::load(&path)
            .unwrap_err()
            .to_string()
            .contains("expected")
    );
}

/// Published shapes of a tool definition, as JSON Schemas: Anthropic Messages API `tools[]`
/// (custom tool), OpenAI Chat Completions `tools[]` (function tool), and MCP `Tool`
/// (schema 2025-06-18).
fn published_shape(format: Format) -> Value {
    let name = json!({"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"});
    let object_schema = json!({
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"const": "object"}, "properties": {"type": "object"}, "required": {"type": "array", "items": {"type": "string"}}}
    });
    match format {
        Format::Anthropic => json!({
            "type": "object",
            "required": ["name", "input_schema"],
            "additionalProperties": false,
            "properties": {
                "name": name, "description": {"type": "string"}, "input_schema": object_schema,
                "type": {"const": "custom"}, "cache_control": {"type": "object"}
            }
        }),
        Format::OpenAi => json!({
            "type": "object",
            "required": ["type", "function"],
            "additionalProperties": false,
            "properties": {
                "type": {"const": "function"},
                "function": {
                    "type": "object",
                    "required": ["name"],
                    "additionalProperties": false,
                    "properties": {
                        "name": name, "description": {"type": "string"},
                        "parameters": {"type": "object"}, "strict": {"type": ["boolean", "null"]}
                    }
                }
            }
        }),
        Format::Mcp => json!({
            "type": "object",
            "required": ["name", "inputSchema"],
            "additionalProperties": false,
            "properties": {
                "name": {"type": "string"}, "title": {"type": "string"}, "description": {"type": "string"},
                "inputSchema": object_schema, "outputSchema": object_schema,
                "annotations": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "title": {"type": "string"},
                        "readOnlyHint": {"type": "boolean"}, "destructiveHint": {"type": "boolean"},
                        "idempotentHint": {"type": "boolean"}, "openWorldHint": {"type": "boolean"}
                    }
                },
                "_meta": {"type": "object"}
            }
        }),
    }
}

#[test]
fn definitions_match_each_published_shape() {
    let view = reg().view(&ViewOptions::default()).unwrap();
    for format in [Format::Anthropic, Format::OpenAi, Format::Mcp] {
        let validator = jsonschema::validator_for(&published_shape(format)).unwrap();
        let defs = view.definitions(format);
        assert_eq!(defs.len(), 6);
        for def in &defs {
            let errors: Vec<String> = validator.iter_errors(def).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{format:?} {def}: {errors:?}");
        }
    }
    let mcp = view.listing(Format::Mcp);
    let reader = &mcp["tools"][0];
    assert_eq!(reader["annotations"]["readOnlyHint"], true);
    assert_eq!(reader["annotations"]["destructiveHint"], false);
    let writer = &mcp["tools"][1];
    assert_eq!(writer["annotations"]["destructiveHint"], true);
    assert!(view.listing(Format::OpenAi).is_array());
}
