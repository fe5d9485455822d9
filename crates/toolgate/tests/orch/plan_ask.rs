//! AskUserQuestion, ExitPlanMode and EnterPlanMode through `toolgate exec`, with nobody to
//! ask and with a prompt UI (`--prompt-command`) answering.

use serde_json::json;

use crate::{Exec, code, dirs, prompt_ui, text};

fn question() -> serde_json::Value {
    json!({"questions": [{
        "question": "Which database should we use?",
        "header": "Database",
        "multiSelect": false,
        "options": [
            {"label": "Postgres", "description": "the server one"},
            {"label": "SQLite", "description": "a file"}
        ]
    }]})
}

#[test]
fn with_nobody_to_ask_the_answer_is_that_nobody_answered() {
    let (ws, home) = dirs();
    let mut exec = Exec::start(ws.path(), home.path(), &[]);
    let r = exec.call("q1", "AskUserQuestion", question());
    assert_eq!(code(&r).as_deref(), Some("execution_failed"), "{r}");
    let t = text(&r);
    assert!(t.contains("No user is available"), "{t}");
    assert!(
        !t.contains("Postgres") && !t.contains("SQLite"),
        "an answer was made up: {t}"
    );
    // Malformed questions are refused before anyone is asked.
    let mut bad = question();
    bad["questions"][0]["options"] = json!([{"label": "only", "description": ""}]);
    assert_eq!(
        code(&exec.call("q2", "AskUserQuestion", bad)).as_deref(),
        Some("invalid_input")
    );
    let mut twice = question();
    twice["questions"][0]["options"][1]["label"] = json!("Postgres");
    assert_eq!(
        code(&exec.call("q3", "AskUserQuestion", twice)).as_deref(),
        Some("invalid_request")
    );
}

#[test]
fn the_prompt_ui_answers_questions_and_its_answer_is_checked() {
    let (ws, home) = dirs();
    let log = home.path().join("asked.jsonl");
    let ui = prompt_ui(&["SQLite"], &log);
    let mut exec = Exec::start(ws.path(), home.path(), &["--prompt-command", &ui]);
    let r = exec.call("q1", "AskUserQuestion", question());
    assert_eq!(code(&r), None, "{r}");
    assert!(
        text(&r).contains("\"Which database should we use?\"=\"SQLite\""),
        "{r}"
    );
    let asked: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(asked["type"], "question_request");
    assert_eq!(asked["questions"][0]["options"][1]["label"], "SQLite");
    assert_eq!(asked["nonce"].as_str().unwrap().len(), 32);

    // A UI answering with its own words gets them passed on as the user's own answer.
    let log2 = home.path().join("asked2.jsonl");
    let ui = prompt_ui(&["use MySQL instead"], &log2);
    let mut exec = Exec::start(ws.path(), home.path(), &["--prompt-command", &ui]);
    let r = exec.call("q1", "AskUserQuestion", question());
    assert!(text(&r).contains("=\"use MySQL instead\""), "{r}");
}

#[test]
fn leaving_plan_mode_needs_the_users_approval_and_is_audited() {
    let (ws, home) = dirs();
    // Nobody to ask: plan mode stays, and writes stay refused.
    let mut exec = Exec::start(ws.path(), home.path(), &["--mode", "plan"]);
    let r = exec.call("p1", "ExitPlanMode", json!({"plan": "1. edit notes.txt"}));
    assert_eq!(code(&r).as_deref(), Some("execution_failed"), "{r}");
    assert!(text(&r).contains("stays in plan mode"), "{r}");
    let w = exec.call(
        "w1",
        "Write",
        json!({"file_path": "new.txt", "content": "x"}),
    );
    assert_eq!(code(&w).as_deref(), Some("denied"), "{w}");
    assert!(exec.records().iter().all(|r| r["mode_change"].is_null()));
    drop(exec);
    std::fs::remove_file(ws.path().join(".toolgate-test-audit.jsonl")).unwrap();

    // The user picks "auto-accept edits": the mode changes, and the record says so.
    let log = home.path().join("plan.jsonl");
    let ui = prompt_ui(&["Yes, auto-accept edits"], &log);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--mode", "plan", "--prompt-command", &ui],
    );
    let r = exec.call("p2", "ExitPlanMode", json!({"plan": "1. write new.txt"}));
    assert_eq!(code(&r), None, "{r}");
    assert!(text(&r).contains("acceptEdits"), "{r}");
    let w = exec.call(
        "w2",
        "Write",
        json!({"file_path": "new.txt", "content": "x"}),
    );
    assert_eq!(code(&w), None, "{w}");
    let records = exec.records();
    let p2 = records.iter().find(|r| r["call_id"] == "p2").unwrap();
    assert_eq!(
        p2["mode_change"],
        json!({"from": "plan", "to": "acceptEdits"})
    );
    let asked = std::fs::read_to_string(&log).unwrap();
    assert!(
        asked.contains("1. write new.txt"),
        "the plan was not shown: {asked}"
    );

    // "No, keep planning" (with feedback as the user's own words) keeps plan mode.
    let log = home.path().join("plan2.jsonl");
    let ui = prompt_ui(&["split step 1 in two"], &log);
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--mode", "plan", "--prompt-command", &ui],
    );
    let r = exec.call("p3", "ExitPlanMode", json!({"plan": "1. write"}));
    assert_eq!(code(&r).as_deref(), Some("denied"), "{r}");
    // The user said no, not a rule: the refusal names the user's layer.
    assert_eq!(r["toolgate"]["layer"], "user", "{r}");
    assert!(text(&r).contains("split step 1 in two"), "{r}");
    // Outside plan mode there is nothing to leave.
    let mut exec = Exec::start(ws.path(), home.path(), &[]);
    let r = exec.call("p4", "ExitPlanMode", json!({"plan": "x"}));
    assert_eq!(code(&r).as_deref(), Some("invalid_request"), "{r}");
}

#[test]
fn entering_plan_mode_narrows_and_leaving_it_never_widens_past_where_it_was() {
    let (ws, home) = dirs();
    // Nobody to ask: entering plan mode only narrows, so it happens.
    let mut exec = Exec::start(ws.path(), home.path(), &["--mode", "acceptEdits"]);
    let r = exec.call("e1", "EnterPlanMode", json!({}));
    assert_eq!(code(&r), None, "{r}");
    let w = exec.call(
        "w1",
        "Write",
        json!({"file_path": "new.txt", "content": "x"}),
    );
    assert!(text(&w).contains("plan mode"), "{w}");
    let records = exec.records();
    let e1 = records.iter().find(|r| r["call_id"] == "e1").unwrap();
    assert_eq!(
        e1["mode_change"],
        json!({"from": "acceptEdits", "to": "plan"})
    );
    drop(exec);

    // dontAsk → plan → back: "auto-accept edits" is not offered past dontAsk, so the
    // answer the UI prefers is not among the options and the next one is taken.
    let log = home.path().join("e.jsonl");
    let ui = prompt_ui(
        &[
            "Yes, plan first",
            "Yes, auto-accept edits",
            "Yes, back to the previous mode",
        ],
        &log,
    );
    let mut exec = Exec::start(
        ws.path(),
        home.path(),
        &["--mode", "dontAsk", "--prompt-command", &ui],
    );
    let r = exec.call("e2", "EnterPlanMode", json!({}));
    assert_eq!(code(&r), None, "{r}");
    let r = exec.call("e3", "ExitPlanMode", json!({"plan": "write new.txt"}));
    assert_eq!(code(&r), None, "{r}");
    assert!(text(&r).contains("dontAsk"), "{r}");
    let records = exec.records();
    let e3 = records.iter().find(|r| r["call_id"] == "e3").unwrap();
    assert_eq!(e3["mode_change"], json!({"from": "plan", "to": "dontAsk"}));
    let asked = std::fs::read_to_string(&log).unwrap();
    let exit_question = asked.lines().last().unwrap();
    assert!(!exit_question.contains("auto-accept"), "{exit_question}");
    // "No" to plan mode keeps the mode.
    let log = home.path().join("e2.jsonl");
    let ui = prompt_ui(&["No"], &log);
    let mut exec = Exec::start(ws.path(), home.path(), &["--prompt-command", &ui]);
    let r = exec.call("e4", "EnterPlanMode", json!({}));
    assert_eq!(code(&r).as_deref(), Some("denied"), "{r}");
    let records = exec.records();
    let e4 = records.iter().find(|r| r["call_id"] == "e4").unwrap();
    assert!(e4["mode_change"].is_null(), "{e4}");
}
