//! Settings: sources, merge, strict parsing, workspace trust, profiles, `toolgate config`.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;
use toolgate_policy::settings::{self, LoadOptions, Settings, TrustStatus, TrustStore};
use toolgate_policy::{Engine, PolicyError, PolicyRequest, RuleKind};
use toolgate_protocol::{CallFacts, CommandFact, Decision, Layer, PermissionMode, Subject};

struct Env {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    config: PathBuf,
    managed: PathBuf,
    home: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let e = Env {
        project: root.join("proj"),
        config: root.join("config/toolgate"),
        managed: root.join("etc/toolgate"),
        home: root.join("home"),
        _tmp: tmp,
    };
    for d in [&e.project, &e.config, &e.managed, &e.home] {
        fs::create_dir_all(d).unwrap();
    }
    e
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

impl Env {
    fn opts(&self) -> LoadOptions {
        let mut o = LoadOptions::from_env(&self.project);
        o.home = Some(self.home.clone());
        o.config_dir = Some(self.config.clone());
        o.managed_dir = self.managed.clone();
        o.claude_dir = Some(self.home.join(".claude"));
        o.claude_managed_dir = self.managed.join("claude-none");
        o
    }
    fn project_file(&self, text: &str) {
        write(&self.project.join(".toolgate/settings.json"), text);
    }
    fn user_file(&self, text: &str) {
        write(&self.config.join("settings.json"), text);
    }
    fn load(&self) -> Settings {
        settings::load(&self.opts()).unwrap_or_else(|e| panic!("{e}"))
    }
}

fn bash(
    engine: &Engine,
    s: &Settings,
    cmd: &str,
    mode: PermissionMode,
) -> toolgate_policy::Decided {
    let input = json!({"command": cmd});
    let facts = CallFacts {
        commands: toolgate_policy::split_command(cmd)
            .commands
            .into_iter()
            .map(|argv| CommandFact {
                text: argv.join(" "),
                argv,
                ..Default::default()
            })
            .collect(),
        ..CallFacts::default()
    };
    let subject = Subject::Command {
        field: "command".into(),
    };
    let roots = [s.project.as_path()];
    engine.decide(&PolicyRequest {
        tool: "Bash",
        subject: &subject,
        annotations: Default::default(),
        input: &input,
        facts: &facts,
        mode,
        hook: None,
        cwd: &s.project,
        roots: &roots,
    })
}

fn engine(s: &Settings) -> Engine {
    s.engine_builder(None)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn broken_files_are_errors_with_line_and_column() {
    let e = env();
    for (text, line, col) in [
        (
            "{\n  \"permissions\": {\"deny\": [\"Bash(rm *)\",]}\n}",
            2,
            0,
        ),
        ("{ // comment\n}", 1, 0),
        ("", 1, 0),
        ("{\"permissions\": {\"allow\": \"Bash\"}}", 1, 0),
        ("[1, 2]", 1, 0),
        ("{\"permissions\": {}, \"permissions\": {}}", 1, 0),
        ("{\"toolgate\": {\"profils\": {}}}", 1, 0),
    ] {
        e.project_file(text);
        let err = settings::load(&e.opts()).expect_err(text);
        match &err {
            PolicyError::Syntax {
                path,
                line: l,
                column,
                ..
            } => {
                assert!(path.ends_with(".toolgate/settings.json"), "{err}");
                assert_eq!(*l, line, "{text}: {err}");
                assert!(*column >= 1 && col == 0, "{err}");
            }
            other => panic!("{text}: expected a syntax error, got {other}"),
        }
        let msg = err.to_string();
        assert!(
            msg.contains("settings.json:") && msg.contains("refuses to start"),
            "{msg}"
        );
    }
}

#[test]
fn unreadable_or_missing_cli_settings_file_is_an_error() {
    let e = env();
    let mut o = e.opts();
    o.cli.settings.push("nope.json".into());
    assert!(matches!(settings::load(&o), Err(PolicyError::Read { .. })));
}

#[test]
fn lists_merge_scalars_take_the_highest_source_and_deny_wins() {
    let e = env();
    e.user_file(r#"{"permissions": {"allow": ["Bash(npm *)"], "defaultMode": "acceptEdits"}}"#);
    e.project_file(r#"{"permissions": {"deny": ["Bash(npm publish *)"], "allow": ["Bash(make)"], "defaultMode": "plan"}}"#);
    let mut o = e.opts();
    o.trusted = Some(true);
    let s = settings::load(&o).unwrap();
    assert_eq!(s.rules.len(), 3);
    assert_eq!(s.resolve_mode(None).unwrap(), PermissionMode::Plan);
    let eng = engine(&s);
    let d = bash(&eng, &s, "npm publish --tag x", PermissionMode::Default);
    assert_eq!(
        (d.verdict.decision, d.verdict.layer),
        (Decision::Deny, Layer::Rule)
    );
    assert!(
        d.verdict
            .source
            .unwrap()
            .ends_with(".toolgate/settings.json")
    );
    let d = bash(&eng, &s, "npm test && make", PermissionMode::Default);
    assert_eq!(d.verdict.decision, Decision::Allow);
    o.cli.mode = Some("dontAsk".into());
    assert_eq!(
        settings::load(&o).unwrap().resolve_mode(None).unwrap(),
        PermissionMode::DontAsk
    );
    o.cli.mode = Some("yolo".into());
    assert!(settings::load(&o).is_err());
}

#[test]
fn command_line_rules_and_settings() {
    let e = env();
    e.user_file(r#"{"permissions": {"allow": ["Bash(git *)"]}}"#);
    let mut o = e.opts();
    o.cli.deny.push("Bash(git push *)".into());
    o.cli
        .settings
        .push(r#"{"permissions": {"ask": ["Bash(git commit *)"]}}"#.into());
    write(
        &e.project.join("extra/s.json"),
        r#"{"permissions": {"deny": ["Read(/secret)"]}}"#,
    );
    o.cli.settings.push("extra/s.json".into());
    let s = settings::load(&o).unwrap();
    let eng = engine(&s);
    assert_eq!(
        bash(&eng, &s, "git push origin", PermissionMode::Default)
            .verdict
            .decision,
        Decision::Deny
    );
    assert_eq!(
        bash(&eng, &s, "git commit -m x", PermissionMode::Default)
            .verdict
            .decision,
        Decision::Ask
    );
    assert_eq!(
        bash(&eng, &s, "git fetch", PermissionMode::Default)
            .verdict
            .decision,
        Decision::Allow
    );
    // `/secret` in a --settings file is relative to that file's directory.
    let d = bash(
        &eng,
        &s,
        &format!("cat {}/extra/secret", e.project.display()),
        PermissionMode::Default,
    );
    assert_eq!(d.verdict.decision, Decision::Deny, "{}", d.render());
    let text = s.render(eng.warnings());
    assert!(
        text.contains("--settings <json>") && text.contains("command line"),
        "{text}"
    );
}

#[test]
fn untrusted_project_allow_rules_wait_for_trust_but_deny_applies_now() {
    let e = env();
    e.project_file(
        r#"{"permissions": {"allow": ["Bash(npm test)"], "deny": ["Bash(curl *)"], "additionalDirectories": ["../shared"], "defaultMode": "acceptEdits"},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#,
    );
    let s = e.load();
    assert!(!s.trusted);
    let eng = engine(&s);
    assert_eq!(
        bash(&eng, &s, "npm test", PermissionMode::Default)
            .verdict
            .decision,
        Decision::Ask
    );
    assert_eq!(
        bash(&eng, &s, "curl x", PermissionMode::Default)
            .verdict
            .decision,
        Decision::Deny
    );
    assert!(s.additional_dirs().is_empty());
    assert!(s.hooks.iter().all(|h| !h.active));
    assert_eq!(s.resolve_mode(None).unwrap(), PermissionMode::Default);
    assert!(s.render(&[]).contains("waits for `toolgate trust`"));

    let store = TrustStore::new(&e.config);
    assert_eq!(store.status(&e.project).unwrap(), TrustStatus::Untrusted);
    store.trust(&e.project).unwrap();
    let s = e.load();
    assert!(s.trusted);
    let eng = engine(&s);
    assert_eq!(
        bash(&eng, &s, "npm test", PermissionMode::Default)
            .verdict
            .decision,
        Decision::Allow
    );
    assert_eq!(s.additional_dirs().len(), 1);
    assert!(s.hooks.iter().all(|h| h.active));
    assert_eq!(s.resolve_mode(None).unwrap(), PermissionMode::AcceptEdits);

    // A changed file needs trust again; so does a new local file.
    e.project_file(r#"{"permissions": {"allow": ["Bash(npm test)", "Bash(*)"]}}"#);
    assert_eq!(store.status(&e.project).unwrap(), TrustStatus::Changed);
    assert!(!e.load().trusted);
    store.trust(&e.project).unwrap();
    assert!(e.load().trusted);
    write(
        &e.project.join(".toolgate/settings.local.json"),
        r#"{"permissions": {"allow": ["Bash"]}}"#,
    );
    assert!(!e.load().trusted);
    assert!(store.untrust(&e.project).unwrap());
    assert_eq!(store.status(&e.project).unwrap(), TrustStatus::Untrusted);
}

#[test]
fn trust_is_keyed_by_real_path() {
    let e = env();
    e.project_file(r#"{"permissions": {"allow": ["Bash(make)"]}}"#);
    let link = e.home.join("link");
    std::os::unix::fs::symlink(&e.project, &link).unwrap();
    TrustStore::new(&e.config).trust(&link).unwrap();
    assert!(e.load().trusted);
}

#[test]
fn a_project_cannot_raise_the_mode() {
    let e = env();
    e.project_file(r#"{"permissions": {"defaultMode": "bypassPermissions"}}"#);
    let mut o = e.opts();
    o.trusted = Some(true);
    let s = settings::load(&o).unwrap();
    assert_eq!(s.resolve_mode(None).unwrap(), PermissionMode::Default);
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("cannot set bypassPermissions"))
    );
    e.user_file(r#"{"permissions": {"defaultMode": "auto"}}"#);
    e.project_file("{}");
    assert_eq!(
        settings::load(&o).unwrap().resolve_mode(None).unwrap(),
        PermissionMode::Auto
    );
}

#[test]
fn disabled_modes_are_refused() {
    let e = env();
    write(
        &e.managed.join("managed-settings.json"),
        r#"{"permissions": {"disableBypassPermissionsMode": "disable", "disableAutoMode": "disable"}}"#,
    );
    let mut o = e.opts();
    o.cli.mode = Some("bypassPermissions".into());
    let err = settings::load(&o).unwrap().resolve_mode(None).unwrap_err();
    assert!(
        err.to_string().contains("disableBypassPermissionsMode"),
        "{err}"
    );
    o.cli.mode = Some("auto".into());
    assert!(settings::load(&o).unwrap().resolve_mode(None).is_err());
    write(
        &e.managed.join("managed-settings.json"),
        r#"{"permissions": {"disableAutoMode": "off"}}"#,
    );
    assert!(matches!(
        settings::load(&o),
        Err(PolicyError::Invalid { .. })
    ));
}

#[test]
fn managed_files_order_and_managed_only_keys() {
    let e = env();
    write(
        &e.managed.join("managed-settings.json"),
        r#"{"permissions": {"deny": ["Bash(a)"]}}"#,
    );
    write(
        &e.managed.join("managed-settings.d/20-b.json"),
        r#"{"permissions": {"deny": ["Bash(c)"]}}"#,
    );
    write(
        &e.managed.join("managed-settings.d/10-a.json"),
        r#"{"permissions": {"deny": ["Bash(b)"]}, "toolgate": {"riskFloor": {"catastrophic": "ask"}}}"#,
    );
    write(
        &e.managed.join("managed-settings.d/.hidden.json"),
        "not json",
    );
    write(&e.managed.join("managed-settings.d/notes.txt"), "not json");
    e.user_file(r#"{"toolgate": {"riskFloor": {"catastrophic": "ask"}}, "permissions": {"allow": ["Bash(x)"]}}"#);
    let s = e.load();
    let denies: Vec<&str> = s
        .rules
        .iter()
        .filter(|r| r.kind == RuleKind::Deny)
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(denies, ["Bash(a)", "Bash(b)", "Bash(c)"]);
    assert!(s.catastrophic_ask.is_some());
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("riskFloor is honoured only in managed"))
    );

    write(
        &e.managed.join("managed-settings.json"),
        r#"{"allowManagedPermissionRulesOnly": true, "permissions": {"allow": ["Bash(m)"]}}"#,
    );
    let s = e.load();
    let active: Vec<&str> = s
        .rules
        .iter()
        .filter(|r| r.kind == RuleKind::Allow && r.active)
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(active, ["Bash(m)"]);
}

#[test]
fn user_file_anchor_and_claude_files() {
    let e = env();
    e.user_file(r#"{"permissions": {"deny": ["Read(/private/**)"]}}"#);
    write(
        &e.project.join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(claude-deny)"]}}"#,
    );
    write(
        &e.home.join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(claude-user)"]}}"#,
    );
    let s = e.load();
    assert_eq!(s.rules.len(), 1);
    let eng = engine(&s);
    let d = bash(
        &eng,
        &s,
        &format!("cat {}/private/x", e.config.display()),
        PermissionMode::Default,
    );
    assert_eq!(d.verdict.decision, Decision::Deny);
    let mut o = e.opts();
    o.claude = true;
    let s = settings::load(&o).unwrap();
    let texts: Vec<&str> = s.rules.iter().map(|r| r.text.as_str()).collect();
    assert!(
        texts.contains(&"Bash(claude-deny)") && texts.contains(&"Bash(claude-user)"),
        "{texts:?}"
    );
}

#[test]
fn broken_deny_rule_refuses_to_start_broken_allow_rule_warns() {
    let e = env();
    e.user_file(r#"{"permissions": {"deny": ["Bash(rm *"]}}"#);
    let s = e.load();
    let err = s.engine_builder(None).build().unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("settings.json") && msg.contains("invalid deny rule `Bash(rm *`"),
        "{msg}"
    );
    e.user_file(r#"{"permissions": {"allow": ["Bash(rm *", "*"], "deny": ["Frobnicate", "Bash(command:x)"]}}"#);
    let s = e.load();
    let eng = engine(&s);
    let w = eng.warnings().join("\n");
    assert!(w.contains("allow rule `Bash(rm *` skipped"), "{w}");
    assert!(w.contains("unknown tool `Frobnicate`"), "{w}");
    assert!(w.contains("primary field"), "{w}");
    assert!(w.contains("tool-name globs in allow rules"), "{w}");
}

#[test]
fn profiles_select_mode_tools_rules_and_constraints() {
    let e = env();
    e.user_file(
        r#"{"toolgate": {"profiles": {"external": {"mode": "dontAsk", "tools": ["Bash", "Read"], "allow": ["Bash(ls *)"], "deny": ["Bash(cat *)"],
            "constraints": {"Bash": {"rate": {"calls": 1, "perSeconds": 60}}}}}}}"#,
    );
    let s = e.load();
    assert!(matches!(
        s.profile("nope"),
        Err(PolicyError::UnknownProfile { .. })
    ));
    let p = s.profile("external").unwrap();
    assert_eq!(s.resolve_mode(Some(&p)).unwrap(), PermissionMode::DontAsk);
    let eng = s.engine_builder(Some(&p)).build().unwrap();
    let d = bash(&eng, &s, "cat x", PermissionMode::DontAsk);
    assert_eq!(d.verdict.decision, Decision::Deny);
    assert!(d.verdict.source.unwrap().starts_with("profile external"));
    assert!(eng.removes_tool("WebFetch").is_some());
    assert!(eng.removes_tool("Read").is_none());
    let c = s.constraints(Some(&p));
    let s1 = toolgate_policy::rate::RateScopes {
        session: "s1",
        client: "external",
    };
    let now = std::time::Instant::now();
    assert!(c.admit_at("Bash", &s1, now).is_ok());
    assert!(c.admit_at("Bash", &s1, now).is_err());

    e.project_file(r#"{"toolgate": {"profiles": {"sneaky": {"mode": "bypassPermissions"}}}}"#);
    let s = e.load();
    assert!(s.profile("sneaky").is_err());
}

#[test]
fn config_render_names_each_rule_source() {
    let e = env();
    e.user_file(r#"{"permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(./.env)"]}, "sandbox": {"network": {"allowedDomains": ["a.org"]}}}"#);
    let mut o = e.opts();
    o.cli.deny.push("WebFetch".into());
    o.cli.add_dirs.push(e.home.join("lib"));
    write(
        &e.managed.join("managed-settings.json"),
        r#"{"sandbox": {"network": {"allowedDomains": ["b.org"]}, "enabled": true}}"#,
    );
    let s = settings::load(&o).unwrap();
    let text = s.render(&[]);
    for want in [
        "Bash(npm test)",
        "Read(./.env)",
        "WebFetch",
        "command line",
        "settings.json",
        "user",
        "managed",
    ] {
        assert!(text.contains(want), "{want} in\n{text}");
    }
    assert_eq!(
        s.sandbox["network"]["allowedDomains"],
        json!(["b.org", "a.org"])
    );
    assert_eq!(s.additional_dirs(), vec![e.home.join("lib")]);
    let j = s.to_json();
    assert_eq!(j["rules"].as_array().unwrap().len(), 3);
}

#[test]
fn project_web_settings_wait_for_trust() {
    let e = env();
    e.user_file(
        r#"{"webFetch": {"allowPrivate": ["10.0.0.1:80"]}, "webSearch": {"backend": "brave", "apiKeyEnv": "BRAVE_API_KEY"}}"#,
    );
    e.project_file(
        r#"{"webFetch": {"allowPrivate": ["127.0.0.1:8080"], "allowHttp": ["*"]}, "webSearch": {"backend": "searxng", "url": "http://evil.example/"}}"#,
    );
    let s = e.load();
    assert!(!s.trusted);
    // The user's apply at once; the project's do not.
    assert_eq!(s.web_fetch, json!({"allowPrivate": ["10.0.0.1:80"]}));
    let search = s
        .web_search
        .as_ref()
        .unwrap_or_else(|| panic!("no webSearch"));
    assert_eq!(search.value["backend"], "brave");
    let text = s.render(&[]);
    assert!(
        text.contains("webFetch waits for `toolgate trust`"),
        "{text}"
    );
    assert!(
        text.contains("webSearch waits for `toolgate trust`"),
        "{text}"
    );
    // Trusted: lists merge, and webSearch comes whole from the highest source.
    TrustStore::new(&e.config).trust(&e.project).unwrap();
    let s = e.load();
    assert_eq!(
        s.web_fetch,
        json!({"allowPrivate": ["127.0.0.1:8080", "10.0.0.1:80"], "allowHttp": ["*"]})
    );
    let search = s
        .web_search
        .as_ref()
        .unwrap_or_else(|| panic!("no webSearch"));
    assert_eq!(
        search.value,
        json!({"backend": "searxng", "url": "http://evil.example/"})
    );
    // Command-line settings apply at once, above the project.
    let mut o = e.opts();
    o.trusted = Some(false);
    o.cli.settings = vec![r#"{"webFetch": {"maxChars": 10}}"#.into()];
    let s = settings::load(&o).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(
        s.web_fetch,
        json!({"maxChars": 10, "allowPrivate": ["10.0.0.1:80"]})
    );
}
