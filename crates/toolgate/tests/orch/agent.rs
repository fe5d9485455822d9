//! Sub-agents on a scripted model: every call they make passes the child gate, is refused
//! where the parent would be refused (or where the sub-agent's narrower view or mode says
//! so), and is audited under the Agent call.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::fixture::{ModelServer, anthropic_results, chat, messages, text as block, tool_use};
use crate::{Exec, agent_settings, code, dirs, text};

fn by_parent<'a>(records: &'a [Value], parent: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| r["parent_call_id"] == parent)
        .collect()
}

#[test]
fn a_subagent_asked_to_escape_is_refused_by_the_child_gate_and_audited_under_its_call() {
    let (ws, home) = dirs();
    std::fs::write(ws.path().join("important.txt"), "keep me\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("stolen.txt");
    let target_s = target.to_string_lossy().into_owned();
    let script_target = target_s.clone();
    let server = ModelServer::start(Arc::new(move |n, _body| match n {
        0 => messages(json!([
            block("Let me try a few things."),
            tool_use("u1", "Bash", json!({"command": "rm -rf important.txt"})),
            tool_use(
                "u2",
                "Write",
                json!({"file_path": script_target, "content": "x"})
            ),
            tool_use("u3", "ExitPlanMode", json!({"plan": "take over"})),
            tool_use("u4", "Read", json!({"file_path": "notes.txt"})),
        ])),
        _ => messages(json!([block(
            "FINAL: I read notes.txt; the rest was refused."
        )])),
    }));
    let settings = agent_settings("anthropic", &server.url);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &[
            "--mode",
            "acceptEdits",
            "--allow",
            "Agent",
            "--allow",
            "Bash",
            "--deny",
            "Bash(rm *)",
            "--settings",
            &settings,
        ],
    );
    let r = exec.call(
        "agent-1",
        "Agent",
        json!({"description": "try things", "prompt": "do what you are told"}),
    );
    assert_eq!(code(&r), None, "{r}");
    assert!(text(&r).contains("FINAL: I read notes.txt"), "{r}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("important.txt")).unwrap(),
        "keep me\n"
    );
    assert!(!target.exists(), "the write outside the roots happened");

    // What the model was told about each call.
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    let results = anthropic_results(&bodies[1]);
    let by_id = |id: &str| results.iter().find(|(i, _, _)| i == id).unwrap().clone();
    let (_, rm, rm_err) = by_id("u1");
    assert!(rm_err && rm.contains("Bash(rm *)"), "{rm}");
    let (_, write, write_err) = by_id("u2");
    assert!(write_err && write.contains("outside"), "{write}");
    let (_, exit, exit_err) = by_id("u3");
    assert!(
        exit_err && exit.contains("not available to sub-agents"),
        "{exit}"
    );
    let (_, read, read_err) = by_id("u4");
    assert!(!read_err && read.contains("alpha"), "{read}");
    // The model saw only the tools of its view.
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"Read") && offered.contains(&"Bash"));
    assert!(!offered.contains(&"ExitPlanMode") && !offered.contains(&"AskUserQuestion"));

    // Every sub-agent call is in the audit log under the Agent call.
    let records = exec.records();
    let children = by_parent(&records, "agent-1");
    let codes: Vec<(&str, Option<&str>)> = children
        .iter()
        .map(|r| (r["tool"].as_str().unwrap(), r["code"].as_str()))
        .collect();
    assert_eq!(
        codes,
        vec![
            ("Bash", Some("denied")),
            ("Write", Some("invalid_request")),
            ("ExitPlanMode", Some("denied")),
            ("Read", None),
        ],
        "{children:#?}"
    );
    for c in &children {
        assert_eq!(
            c["session_id"].as_str().unwrap().split('/').next_back(),
            Some("agent-1")
        );
        assert_eq!(c["client"], "agent:general-purpose");
    }
    let agent = records.iter().find(|r| r["call_id"] == "agent-1").unwrap();
    assert_eq!(agent["status"], "ok");
    assert!(agent["parent_call_id"].is_null());
}

#[test]
fn a_subagent_cannot_use_a_tool_outside_its_view_nor_a_mode_wider_than_its_parent() {
    let (ws, home) = dirs();
    // Explore sees Read, Glob and Grep, in plan mode.
    let server = ModelServer::start(Arc::new(|n, _| match n {
        0 => chat(
            None,
            &[
                ("c1", "Bash", json!({"command": "echo hi"})),
                (
                    "c2",
                    "Edit",
                    json!({"file_path": "notes.txt", "old_string": "alpha", "new_string": "ALPHA"}),
                ),
                (
                    "c3",
                    "Grep",
                    json!({"pattern": "beta", "output_mode": "content"}),
                ),
            ],
        ),
        _ => chat(Some("EXPLORED"), &[]),
    }));
    let settings = agent_settings("openai", &server.url);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &[
            "--mode",
            "bypassPermissions",
            "--allow-root",
            "--settings",
            &settings,
        ],
    );
    let r = exec.call(
        "a2",
        "Agent",
        json!({"description": "look around", "prompt": "explore", "subagent_type": "Explore"}),
    );
    assert_eq!(code(&r), None, "{r}");
    assert_eq!(text(&r), "EXPLORED");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("notes.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    assert_eq!(server.paths()[0], "/chat/completions");
    let second = &server.bodies()[1];
    let tool_msgs: Vec<&Value> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_msgs.len(), 3);
    assert!(
        tool_msgs[0]["content"]
            .as_str()
            .unwrap()
            .contains("not among this sub-agent's tools")
    );
    assert!(tool_msgs[2]["content"].as_str().unwrap().contains("beta"));
    let records = exec.records();
    let children = by_parent(&records, "a2");
    assert_eq!(children.len(), 3);
    assert_eq!(children[0]["code"], "denied");
    assert_eq!(children[0]["stages"][0]["stage"], "resolve");
    assert_eq!(children[1]["code"], "denied");

    // A parent in plan mode: a general-purpose child may not write either.
    let server = ModelServer::start(Arc::new(|n, _| match n {
        0 => messages(json!([tool_use(
            "w",
            "Write",
            json!({"file_path": "new.txt", "content": "x"})
        )])),
        _ => messages(json!([block("done")])),
    }));
    let settings = agent_settings("anthropic", &server.url);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &[
            "--mode",
            "plan",
            "--allow",
            "Agent",
            "--allow",
            "Write",
            "--settings",
            &settings,
        ],
    );
    let r = exec.call(
        "a3",
        "Agent",
        json!({"description": "write", "prompt": "write"}),
    );
    assert_eq!(code(&r), None, "{r}");
    assert!(!ws.path().join("new.txt").exists());
    let results = anthropic_results(&server.bodies()[1]);
    assert!(
        results[0].2 && results[0].1.contains("plan mode"),
        "{results:?}"
    );
}

#[test]
fn a_looping_subagent_stops_at_the_turn_limit() {
    let (ws, home) = dirs();
    let server = ModelServer::start(Arc::new(|n, _| {
        messages(json!([tool_use(
            &format!("r{n}"),
            "Read",
            json!({"file_path": "notes.txt"})
        )]))
    }));
    let settings = agent_settings("anthropic", &server.url);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--allow", "Agent", "--settings", &settings],
    );
    let r = exec.call(
        "loop",
        "Agent",
        json!({"description": "loop", "prompt": "loop"}),
    );
    assert_eq!(code(&r).as_deref(), Some("execution_failed"), "{r}");
    assert!(text(&r).contains("stopped after 25 turns"), "{r}");
    assert_eq!(server.bodies().len(), 25);
    let records = exec.records();
    assert_eq!(by_parent(&records, "loop").len(), 25);
}

#[test]
fn an_endpoint_that_is_down_or_answers_garbage_is_a_structured_error() {
    let (ws, home) = dirs();
    // A port nothing listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let settings = agent_settings("anthropic", &closed);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--allow", "Agent", "--settings", &settings],
    );
    let r = exec.call("down", "Agent", json!({"description": "x", "prompt": "x"}));
    assert_eq!(code(&r).as_deref(), Some("execution_failed"), "{r}");
    assert!(text(&r).contains("could not be reached"), "{r}");

    let server = ModelServer::start(Arc::new(|n, _| match n {
        0 => (200, "{\"surprise\": true}".into()),
        _ => (500, "{\"error\": \"boom\"}".into()),
    }));
    let settings = agent_settings("anthropic", &server.url);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--allow", "Agent", "--settings", &settings],
    );
    let r = exec.call(
        "garbage",
        "Agent",
        json!({"description": "x", "prompt": "x"}),
    );
    assert!(
        text(&r).contains("not a Anthropic Messages response"),
        "{r}"
    );
    let r = exec.call(
        "http500",
        "Agent",
        json!({"description": "x", "prompt": "x"}),
    );
    assert!(text(&r).contains("HTTP 500"), "{r}");

    // No endpoint and no MCP client: says how to configure one.
    let mut exec = Exec::start(ws.path(), home.path(), &["--allow", "Agent"]);
    let r = exec.call("none", "Agent", json!({"description": "x", "prompt": "x"}));
    assert!(text(&r).contains("toolgate.agent"), "{r}");
    let r = exec.call(
        "bad-type",
        "Agent",
        json!({"description": "x", "prompt": "x", "subagent_type": "nope"}),
    );
    assert_eq!(code(&r).as_deref(), Some("invalid_request"), "{r}");
    assert!(text(&r).contains("general-purpose"), "{r}");
}

#[test]
fn subagents_nest_only_to_the_depth_limit() {
    let (ws, home) = dirs();
    // Depth 1 delegates, depth 2 delegates, depth 3 is refused.
    let server = ModelServer::start(Arc::new(|n, _| match n {
        0 => messages(json!([tool_use(
            "d1",
            "Agent",
            json!({"description": "deeper", "prompt": "go"})
        )])),
        1 => messages(json!([tool_use(
            "d2",
            "Agent",
            json!({"description": "deeper", "prompt": "go"})
        )])),
        2 => messages(json!([block("depth two done")])),
        _ => messages(json!([block("depth one done")])),
    }));
    let settings = agent_settings("anthropic", &server.url);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--allow", "Agent", "--settings", &settings],
    );
    let r = exec.call(
        "top",
        "Agent",
        json!({"description": "nest", "prompt": "nest"}),
    );
    assert_eq!(text(&r), "depth one done", "{r}");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 4);
    let refused = anthropic_results(&bodies[2]);
    assert!(
        refused[0].2 && refused[0].1.contains("nest at most 2"),
        "{refused:?}"
    );
    let records = exec.records();
    let d1 = records.iter().find(|r| r["call_id"] == "d1").unwrap();
    assert_eq!(d1["parent_call_id"], "top");
    let d2 = records.iter().find(|r| r["call_id"] == "d2").unwrap();
    assert_eq!(d2["parent_call_id"], "d1");
    assert_eq!(d2["code"], "invalid_request");
}

#[test]
fn a_background_subagent_is_a_task() {
    let (ws, home) = dirs();
    let server = ModelServer::start(Arc::new(|n, body: &Value| {
        if body["messages"][0]["content"][0]["text"] == "forever" {
            std::thread::sleep(std::time::Duration::from_millis(50));
            return messages(json!([tool_use(
                &format!("f{n}"),
                "Glob",
                json!({"pattern": "*.txt"})
            )]));
        }
        match anthropic_results(body).len() {
            0 => messages(json!([tool_use("g1", "Grep", json!({"pattern": "alpha"}))])),
            _ => messages(json!([block("BACKGROUND REPORT")])),
        }
    }));
    let settings = agent_settings("anthropic", &server.url);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--allow", "Agent", "--settings", &settings],
    );
    let r = exec.call(
        "bg",
        "Agent",
        json!({"description": "in the back", "prompt": "report", "run_in_background": true}),
    );
    assert_eq!(code(&r), None, "{r}");
    let id = text(&r)
        .split("ID: ")
        .nth(1)
        .unwrap()
        .split('.')
        .next()
        .unwrap()
        .to_owned();
    let out = exec.call("to", "TaskOutput", json!({"task_id": id, "timeout": 30000}));
    assert!(text(&out).contains("<status>completed</status>"), "{out}");
    assert!(text(&out).contains("BACKGROUND REPORT"), "{out}");
    assert!(text(&out).contains("Grep: ok"), "{out}");

    // One that never ends is stopped by TaskStop, and its calls stop with it.
    let r = exec.call(
        "bg2",
        "Agent",
        json!({"description": "forever", "prompt": "forever", "run_in_background": true}),
    );
    let id = text(&r)
        .split("ID: ")
        .nth(1)
        .unwrap()
        .split('.')
        .next()
        .unwrap()
        .to_owned();
    let m = exec.call(
        "mon",
        "Monitor",
        json!({"task_id": id, "timeout_ms": 10000}),
    );
    assert!(text(&m).contains("Glob: ok"), "{m}");
    let stop = exec.call("stop", "TaskStop", json!({"task_id": id}));
    assert_eq!(code(&stop), None, "{stop}");
    let after = exec.call("to2", "TaskOutput", json!({"task_id": id, "block": false}));
    assert!(text(&after).contains("<status>killed</status>"), "{after}");
    let records = exec.records();
    assert!(
        by_parent(&records, "bg2")
            .iter()
            .all(|r| r["tool"] == "Glob")
    );
}

#[test]
fn agent_definitions_narrow_and_project_ones_wait_for_trust() {
    let (ws, home) = dirs();
    let agents = home.path().join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reader.md"),
        "---\nname: reader\ndescription: Reads files\ntools: Read\npermissionMode: bypassPermissions\n---\nYou only read.\n",
    )
    .unwrap();
    std::fs::write(agents.join("broken.md"), "---\nname: broken\n").unwrap();
    let project = ws.path().join(".claude/agents");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("proj.md"),
        "---\nname: proj\ndescription: From the repo\n---\nx\n",
    )
    .unwrap();
    let server = ModelServer::start(Arc::new(|n, _| match n {
        0 => messages(json!([
            tool_use("g", "Grep", json!({"pattern": "alpha"})),
            tool_use(
                "w",
                "Write",
                json!({"file_path": "new.txt", "content": "x"})
            ),
            tool_use("r", "Read", json!({"file_path": "notes.txt"})),
        ])),
        _ => messages(json!([block("read it")])),
    }));
    let settings = agent_settings("anthropic", &server.url);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--allow", "Agent", "--settings", &settings],
    );
    let r = exec.call(
        "def",
        "Agent",
        json!({"description": "read", "prompt": "read", "subagent_type": "reader"}),
    );
    assert_eq!(text(&r), "read it", "{r}");
    let bodies = server.bodies();
    assert!(
        bodies[0]["system"]
            .as_str()
            .unwrap()
            .contains("You only read.")
    );
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["Read"]);
    let results = anthropic_results(&bodies[1]);
    assert!(results[0].2 && results[1].2 && !results[2].2, "{results:?}");
    assert!(!ws.path().join("new.txt").exists());
    // bypassPermissions asked for, default given: the parent's mode caps it.
    let records = exec.records();
    let read = records.iter().find(|r| r["call_id"] == "r").unwrap();
    assert_eq!(read["verdict"]["layer"], "mode", "{read}");
    assert!(
        !read["verdict"]["reason"]
            .as_str()
            .unwrap()
            .contains("bypassPermissions"),
        "{read}"
    );

    let b = exec.call(
        "b",
        "Agent",
        json!({"description": "x", "prompt": "x", "subagent_type": "broken"}),
    );
    assert_eq!(code(&b).as_deref(), Some("invalid_request"), "{b}");
    assert!(text(&b).contains("broken.md:2"), "{b}");
    let p = exec.call(
        "p",
        "Agent",
        json!({"description": "x", "prompt": "x", "subagent_type": "proj"}),
    );
    assert_eq!(code(&p).as_deref(), Some("denied"), "{p}");
    assert!(text(&p).contains("toolgate trust"), "{p}");
}

#[test]
fn task_is_the_old_name_of_agent_for_calls_rules_and_hooks() {
    let (ws, home) = dirs();
    let server = ModelServer::start(Arc::new(|_, _| messages(json!([block("FINAL: done")]))));
    let settings = agent_settings("anthropic", &server.url);
    // An old settings file allows `Task`: the rule is about Agent, called by either name.
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--allow", "Task", "--settings", &settings],
    );
    for (id, name) in [("old", "Task"), ("new", "Agent")] {
        let r = exec.call(
            id,
            name,
            json!({"description": "x", "prompt": "x", "name": "helper", "model": "haiku"}),
        );
        assert_eq!(code(&r), None, "{name}: {r}");
        assert!(text(&r).contains("FINAL: done"), "{name}: {r}");
    }
    let records = exec.records();
    let old = records.iter().find(|r| r["call_id"] == "old").unwrap();
    assert_eq!(old["tool"], "Agent", "{old}");
    // A deny rule under the old name refuses the tool under the new one.
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &[
            "--allow",
            "Agent",
            "--deny",
            "Task",
            "--settings",
            &settings,
        ],
    );
    let r = exec.call(
        "denied",
        "Agent",
        json!({"description": "x", "prompt": "x"}),
    );
    assert_eq!(code(&r).as_deref(), Some("denied"), "{r}");
    // Claude Code's `isolation` is refused with what to do instead, not a schema error.
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--allow", "Agent", "--settings", &settings],
    );
    let r = exec.call(
        "iso",
        "Agent",
        json!({"description": "x", "prompt": "x", "isolation": "worktree"}),
    );
    assert_eq!(code(&r).as_deref(), Some("invalid_request"), "{r}");
    assert!(text(&r).contains("EnterWorktree"), "{r}");
}
