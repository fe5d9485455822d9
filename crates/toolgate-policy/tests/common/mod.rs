//! The table-test harness: one line per case, `¦`-separated:
//!
//! `MODE ¦ RULES ¦ CALL ¦ FACTS ¦ EXPECT`
//!
//! - RULES: `-` or `allow:R; deny:R; ask:R` (`;;` separates when a rule holds `;`).
//! - CALL: `Bash <command>`, `Read <path>`, `Edit <path>`, `Write <path>`, `Grep <path>`,
//!   `Glob <path>`, `NotebookEdit <path>`, `WebFetch <url>`, or `<Tool> <json input>`.
//! - FACTS (`;`-separated, optional): `subs=a ⏐ b` (the analyzer's subcommands), `nofacts`
//!   (no analyzer facts), `w=PATH`, `r=PATH`, `d=PATH` (path facts), `risk=LEVEL[:category]`,
//!   `opaque`, `link=REAL` (a file tool's resolved target), `hook=allow|ask|deny`,
//!   `roots=/a,/b`, `cwd=/x`, `ro` (tool annotated read-only), `protected=PATH`.
//! - EXPECT: `decision/layer`, e.g. `allow/rule`, `ask/default`, `deny/risk`.
//!
//! The seam for running the table end to end with the real shell analyzer is
//! [`analyzer_facts`]: return `Some(facts)` from `toolgate_shell::analyze` there and the
//! table runs against it instead of the facts written in the cases.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolgate_policy::{Engine, PolicyRequest, RuleKind, split_command};
use toolgate_protocol::{
    Access, CallFacts, CommandFact, Decision, Finding, Layer, PathFact, PermissionMode, Risk,
    Subject, ToolAnnotations, Verdict,
};

pub const HOME: &str = "/home/u";
pub const CWD: &str = "/p";

/// Facts from the real shell analyzer, so the tables test rules end to end on what the
/// Bash tool would hand the engine. Cases that list their subcommands by hand (or say
/// `nofacts`) keep those.
pub fn analyzer_facts(command: &str, cwd: &Path, roots: &[&Path]) -> Option<CallFacts> {
    let mut ctx = toolgate_shell::Context::new(cwd).with_home(HOME);
    for root in roots {
        ctx = ctx.with_root(*root);
    }
    let mut facts = toolgate_shell::analyze(command, &ctx).facts();
    facts.subject = Some(command.to_owned());
    Some(facts)
}

pub struct Case {
    pub line: String,
    pub mode: PermissionMode,
    pub rules: Vec<(RuleKind, String)>,
    pub tool: String,
    pub input: Value,
    pub subject: Subject,
    pub annotations: ToolAnnotations,
    pub facts: CallFacts,
    pub hook: Option<Verdict>,
    pub cwd: PathBuf,
    pub roots: Vec<PathBuf>,
    pub want: (Decision, Layer),
}

fn decision(s: &str) -> Decision {
    match s {
        "allow" => Decision::Allow,
        "ask" => Decision::Ask,
        "deny" => Decision::Deny,
        other => panic!("bad decision {other}"),
    }
}

fn layer(s: &str) -> Layer {
    match s {
        "hook" => Layer::Hook,
        "rule" => Layer::Rule,
        "mode" => Layer::Mode,
        "risk" => Layer::Risk,
        "user" => Layer::User,
        "default" => Layer::Default,
        other => panic!("bad layer {other}"),
    }
}

fn subject_of(tool: &str) -> Subject {
    match tool {
        "Bash" => Subject::Command {
            field: "command".into(),
        },
        "Read" => Subject::Path {
            field: "file_path".into(),
            writes: false,
        },
        "Grep" | "Glob" => Subject::Path {
            field: "path".into(),
            writes: false,
        },
        "Edit" | "Write" | "MultiEdit" => Subject::Path {
            field: "file_path".into(),
            writes: true,
        },
        "NotebookEdit" => Subject::Path {
            field: "notebook_path".into(),
            writes: true,
        },
        "WebFetch" => Subject::Url {
            field: "url".into(),
        },
        _ => Subject::None,
    }
}

pub fn parse(line: &str) -> Case {
    let cols: Vec<&str> = line.split('¦').map(str::trim).collect();
    assert_eq!(cols.len(), 5, "5 columns in: {line}");
    let mode: PermissionMode = cols[0].parse().unwrap_or_else(|e| panic!("{e} in {line}"));
    let mut rules = Vec::new();
    if cols[1] != "-" {
        let sep = if cols[1].contains(";;") { ";;" } else { ";" };
        for r in cols[1].split(sep) {
            let r = r.trim();
            let (k, text) = r
                .split_once(':')
                .unwrap_or_else(|| panic!("kind:rule in {line}"));
            let kind = match k {
                "allow" => RuleKind::Allow,
                "deny" => RuleKind::Deny,
                "ask" => RuleKind::Ask,
                other => panic!("bad kind {other} in {line}"),
            };
            rules.push((kind, text.trim().to_owned()));
        }
    }
    let (tool, arg) = cols[2].split_once(' ').unwrap_or((cols[2], ""));
    let arg_owned = arg.replace("\\n", "\n");
    let tool = tool.to_owned();
    let subject = subject_of(&tool);
    let input = match &subject {
        _ if arg.starts_with("{\"") || arg == "{}" => {
            serde_json::from_str(arg).unwrap_or_else(|e| panic!("{e} in {line}"))
        }
        Subject::Command { field } | Subject::Path { field, .. } | Subject::Url { field } => {
            let mut m = serde_json::Map::new();
            m.insert(field.clone(), Value::String(arg_owned.clone()));
            if tool == "WebFetch" {
                m.insert("prompt".into(), json!("summarise"));
            }
            Value::Object(m)
        }
        Subject::None => {
            if arg.is_empty() {
                json!({})
            } else {
                serde_json::from_str(arg).unwrap_or_else(|e| panic!("{e} in {line}"))
            }
        }
    };
    let mut facts = CallFacts::default();
    let mut hook = None;
    let mut cwd = PathBuf::from(CWD);
    let mut roots = vec![PathBuf::from(CWD)];
    let mut nofacts = false;
    let mut subs: Option<Vec<String>> = None;
    let mut link = None;
    let mut annotations = ToolAnnotations::default();
    let mut protected_extra = Vec::new();
    if cols[3] != "-" {
        for f in cols[3].split(';').map(str::trim).filter(|f| !f.is_empty()) {
            let (k, v) = f.split_once('=').unwrap_or((f, ""));
            match k {
                "subs" => subs = Some(v.split('⏐').map(|s| s.trim().to_owned()).collect()),
                "nofacts" => nofacts = true,
                "w" | "r" | "d" => facts.paths.push(PathFact {
                    beneath: toolgate_protocol::Beneath::Nothing,
                    beneath_only: Vec::new(),
                    path: PathBuf::from(v),
                    access: match k {
                        "w" => Access::Write,
                        "r" => Access::Read,
                        _ => Access::Delete,
                    },
                    inside_roots: false,
                    protected: false,
                }),
                "protected" => protected_extra.push(PathBuf::from(v)),
                "risk" => {
                    let (lvl, cat) = v.split_once(':').unwrap_or((v, "test"));
                    let risk = match lvl {
                        "catastrophic" => Risk::Catastrophic,
                        "high" => Risk::High,
                        "moderate" => Risk::Moderate,
                        _ => Risk::ReadOnly,
                    };
                    facts.findings.push(Finding {
                        risk,
                        category: cat.into(),
                        reason: format!("{cat} finding"),
                    });
                }
                "opaque" => facts.opaque = true,
                "url" => facts.urls.push(v.to_owned()),
                "link" => link = Some(PathBuf::from(v)),
                "hook" => {
                    hook = Some(Verdict::new(
                        decision(v),
                        Layer::Hook,
                        format!("hook said {v}"),
                    ))
                }
                "roots" => roots = v.split(',').map(PathBuf::from).collect(),
                "cwd" => cwd = PathBuf::from(v),
                "ro" => annotations.read_only = true,
                other => panic!("bad fact {other} in {line}"),
            }
        }
    }
    let root_refs: Vec<&Path> = roots.iter().map(PathBuf::as_path).collect();
    let arg = subject.extract(&input).unwrap_or("").to_owned();
    let arg = arg.as_str();
    match &subject {
        Subject::Command { .. } if !nofacts => {
            if let (None, Some(mut real)) = (&subs, analyzer_facts(arg, &cwd, &root_refs)) {
                // Keep what the case states by hand on top of the analyzer's facts.
                real.paths.append(&mut facts.paths);
                real.findings.append(&mut facts.findings);
                real.urls.append(&mut facts.urls);
                real.opaque |= facts.opaque;
                facts = real;
            } else {
                let argvs: Vec<Vec<String>> = match subs {
                    Some(s) => s
                        .iter()
                        .map(|x| x.split(' ').map(str::to_owned).collect())
                        .collect(),
                    None => split_command(arg).commands,
                };
                facts.commands = argvs
                    .into_iter()
                    .map(|argv| CommandFact {
                        text: argv.join(" "),
                        argv,
                        ..Default::default()
                    })
                    .collect();
            }
        }
        Subject::Path { writes, .. } if !nofacts && facts.paths.is_empty() => {
            let p = link.clone().unwrap_or_else(|| {
                let raw = PathBuf::from(arg);
                if raw.is_absolute() {
                    raw
                } else {
                    cwd.join(raw)
                }
            });
            facts.paths.push(PathFact {
                beneath: toolgate_protocol::Beneath::Nothing,
                beneath_only: Vec::new(),
                path: p,
                access: if *writes { Access::Write } else { Access::Read },
                inside_roots: false,
                protected: false,
            });
        }
        _ => {}
    }
    for p in &mut facts.paths {
        p.inside_roots = roots.iter().any(|r| p.path.starts_with(r));
        p.protected |= protected_extra.contains(&p.path);
    }
    let (d, l) = cols[4]
        .split_once('/')
        .unwrap_or_else(|| panic!("decision/layer in {line}"));
    Case {
        line: line.to_owned(),
        mode,
        rules,
        tool,
        input,
        subject,
        annotations,
        facts,
        hook,
        cwd,
        roots,
        want: (decision(d), layer(l)),
    }
}

pub fn engine_for(rules: &[(RuleKind, String)]) -> Engine {
    let mut b = Engine::builder().cwd(CWD).home(HOME).known_tools(["Frob"]);
    for (k, r) in rules {
        b = b.rule(*k, r, "test settings");
    }
    b.build().unwrap_or_else(|e| panic!("{e}"))
}

pub fn run(case: &Case, engine: &Engine) -> toolgate_policy::Decided {
    let roots: Vec<&Path> = case.roots.iter().map(PathBuf::as_path).collect();
    let req = PolicyRequest {
        tool: &case.tool,
        subject: &case.subject,
        annotations: case.annotations,
        input: &case.input,
        facts: &case.facts,
        mode: case.mode,
        hook: case.hook.as_ref(),
        cwd: &case.cwd,
        roots: &roots,
    };
    engine.decide(&req)
}

/// Runs every line; reports all failures at once.
pub fn run_table(table: &str) -> usize {
    let mut failures = Vec::new();
    let mut n = 0;
    for line in table
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
    {
        n += 1;
        let case = parse(line);
        let engine = engine_for(&case.rules);
        let got = run(&case, &engine);
        let v = &got.verdict;
        if (v.decision, v.layer) != case.want {
            failures.push(format!(
                "\n  case: {}\n  want: {:?}/{:?}\n  got:  {:?}/{:?}: {}\n{}",
                case.line,
                case.want.0,
                case.want.1,
                v.decision,
                v.layer,
                v.reason,
                got.render()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed:{}",
        failures.len(),
        failures.join("\n")
    );
    n
}
