//! Modes, the risk floor, hooks and the evaluation order, written from compat §4–§6 and the
//! issue (catastrophic and critical-path deletion denied in every mode). Workspace `/p`.

mod common;

/// Each call in every mode: default, acceptEdits, plan, auto, dontAsk, bypassPermissions.
const MATRIX: &[(&str, &str, [&str; 6])] = &[
    (
        "Read /p/a.txt",
        "-",
        [
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
        ],
    ),
    (
        "Read /etc/hosts",
        "-",
        [
            "ask/default",
            "ask/default",
            "ask/default",
            "ask/default",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "Grep /p/src",
        "-",
        [
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
        ],
    ),
    (
        "Edit /p/a.txt",
        "-",
        [
            "ask/default",
            "allow/mode",
            "deny/mode",
            "allow/mode",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "Write /p/new.txt",
        "-",
        [
            "ask/default",
            "allow/mode",
            "deny/mode",
            "allow/mode",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "Edit /etc/hosts",
        "-",
        [
            "ask/default",
            "ask/default",
            "deny/mode",
            "ask/default",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "Edit /p/.git/config",
        "-",
        [
            "ask/risk",
            "ask/risk",
            "deny/mode",
            "ask/risk",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "Bash ls -la",
        "-",
        [
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
        ],
    ),
    (
        "Bash git status && git diff",
        "-",
        [
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
        ],
    ),
    (
        "Bash npm test",
        "-",
        [
            "ask/default",
            "ask/default",
            "ask/mode",
            "ask/default",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "Bash rm -rf build",
        "-",
        [
            "ask/default",
            "allow/mode",
            "ask/mode",
            "allow/mode",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "Bash touch a && mkdir b",
        "-",
        [
            "ask/default",
            "allow/mode",
            "ask/mode",
            "allow/mode",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "Bash git push",
        "-",
        [
            "ask/default",
            "ask/default",
            "ask/mode",
            "ask/default",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "WebFetch https://x.org/",
        "-",
        [
            "ask/default",
            "ask/default",
            "ask/default",
            "ask/default",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "mcp__s__t {}",
        "-",
        [
            "ask/default",
            "ask/default",
            "deny/mode",
            "ask/default",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "TodoWrite {\"todos\":[]}",
        "-",
        [
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
        ],
    ),
    (
        "AskUserQuestion {\"questions\":[]}",
        "-",
        [
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "ExitPlanMode {}",
        "-",
        [
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
            "allow/mode",
        ],
    ),
    (
        "Agent {\"prompt\":\"x\"}",
        "-",
        [
            "ask/default",
            "ask/default",
            "ask/default",
            "ask/default",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "Frob {}",
        "-",
        [
            "ask/default",
            "ask/default",
            "deny/mode",
            "ask/default",
            "deny/mode",
            "allow/mode",
        ],
    ),
    (
        "Frob {}",
        "ro",
        [
            "ask/default",
            "ask/default",
            "ask/default",
            "ask/default",
            "deny/mode",
            "allow/mode",
        ],
    ),
];

/// The same calls with rules: (rules, call, facts, expectations per mode).
const RULED: &[(&str, &str, &str, [&str; 6])] = &[
    (
        "deny:Bash(git push *)",
        "Bash git push origin",
        "-",
        ["deny/rule"; 6],
    ),
    (
        "ask:Bash(git push *)",
        "Bash git push origin",
        "-",
        [
            "ask/rule",
            "ask/rule",
            "ask/rule",
            "ask/rule",
            "deny/mode",
            "ask/rule",
        ],
    ),
    (
        "allow:Bash(npm test)",
        "Bash npm test",
        "-",
        [
            "allow/rule",
            "allow/rule",
            "ask/mode",
            "allow/rule",
            "allow/rule",
            "allow/mode",
        ],
    ),
    (
        "allow:Bash(*)",
        "Bash npm test",
        "-",
        [
            "allow/rule",
            "allow/rule",
            "ask/mode",
            "ask/default",
            "allow/rule",
            "allow/mode",
        ],
    ),
    (
        "allow:Bash(python *)",
        "Bash python x.py",
        "-",
        [
            "allow/rule",
            "allow/rule",
            "ask/mode",
            "ask/default",
            "allow/rule",
            "allow/mode",
        ],
    ),
    (
        "allow:Agent",
        "Agent {\"prompt\":\"x\"}",
        "-",
        [
            "allow/rule",
            "allow/rule",
            "allow/rule",
            "ask/default",
            "allow/rule",
            "allow/mode",
        ],
    ),
    (
        "allow:Edit(./src/**)",
        "Edit /p/src/a.rs",
        "-",
        [
            "allow/rule",
            "allow/mode",
            "deny/mode",
            "allow/mode",
            "allow/rule",
            "allow/mode",
        ],
    ),
    (
        "ask:Edit(./src/**)",
        "Edit /p/src/a.rs",
        "-",
        [
            "ask/rule",
            "ask/rule",
            "ask/rule",
            "ask/rule",
            "deny/mode",
            "ask/rule",
        ],
    ),
    ("deny:Read(.env)", "Read /p/.env", "-", ["deny/rule"; 6]),
    (
        "ask:Bash(ls *)",
        "Bash ls",
        "-",
        [
            "ask/rule",
            "ask/rule",
            "ask/rule",
            "ask/rule",
            "deny/mode",
            "ask/rule",
        ],
    ),
    (
        "allow:mcp__s",
        "mcp__s__t {}",
        "-",
        [
            "allow/rule",
            "allow/rule",
            "deny/mode",
            "allow/rule",
            "allow/rule",
            "allow/mode",
        ],
    ),
    (
        "allow:WebFetch(domain:x.org)",
        "WebFetch https://x.org/",
        "-",
        [
            "allow/rule",
            "allow/rule",
            "allow/rule",
            "allow/rule",
            "allow/rule",
            "allow/mode",
        ],
    ),
    ("-", "Bash rm -rf /", "-", ["deny/risk"; 6]),
    ("allow:Bash(*)", "Bash rm -rf ~", "-", ["deny/risk"; 6]),
    (
        "-",
        "Bash x",
        "subs=x; risk=catastrophic:fork_bomb",
        ["deny/risk"; 6],
    ),
    ("-", "Bash npm test", "hook=deny", ["deny/hook"; 6]),
    (
        "-",
        "Bash npm test",
        "hook=allow",
        [
            "allow/hook",
            "allow/hook",
            "ask/mode",
            "allow/hook",
            "allow/hook",
            "allow/mode",
        ],
    ),
    (
        "-",
        "Bash npm test",
        "hook=ask",
        [
            "ask/hook",
            "ask/hook",
            "ask/hook",
            "ask/hook",
            "deny/mode",
            "ask/hook",
        ],
    ),
];

const MODES: [&str; 6] = [
    "default",
    "acceptEdits",
    "plan",
    "auto",
    "dontAsk",
    "bypassPermissions",
];

#[test]
fn every_mode_for_every_kind_of_call() {
    let mut lines = String::new();
    for (call, facts, want) in MATRIX {
        for (mode, w) in MODES.iter().zip(want) {
            lines.push_str(&format!("{mode} ¦ - ¦ {call} ¦ {facts} ¦ {w}\n"));
        }
    }
    for (rules, call, facts, want) in RULED {
        for (mode, w) in MODES.iter().zip(want) {
            lines.push_str(&format!("{mode} ¦ {rules} ¦ {call} ¦ {facts} ¦ {w}\n"));
        }
    }
    assert!(common::run_table(&lines) >= 230);
}

const FLOOR_HOOKS_ORDER: &str = r#"
read-only ¦ - ¦ Edit /p/a ¦ - ¦ deny/mode
workspace-write ¦ - ¦ Edit /p/a ¦ - ¦ allow/mode
danger-full-access ¦ - ¦ Bash npm test ¦ - ¦ allow/mode
manual ¦ - ¦ Bash npm test ¦ - ¦ ask/default
bypassPermissions ¦ - ¦ Bash rm -rf /etc ¦ - ¦ deny/risk
bypassPermissions ¦ - ¦ Bash rm -rf . ¦ - ¦ deny/risk
bypassPermissions ¦ - ¦ Bash rm -rf .. ¦ - ¦ deny/risk
bypassPermissions ¦ - ¦ Bash rm -rf /p/* ¦ - ¦ deny/risk
bypassPermissions ¦ - ¦ Bash rm -rf ~/* ¦ - ¦ deny/risk
bypassPermissions ¦ - ¦ Bash rmdir /home/u ¦ - ¦ deny/risk
bypassPermissions ¦ - ¦ Bash rm -rf /p/src/* ¦ - ¦ allow/mode
bypassPermissions ¦ - ¦ Bash rm -rf build ¦ - ¦ allow/mode
bypassPermissions ¦ - ¦ Bash echo $(rm -rf /) ¦ - ¦ deny/risk
bypassPermissions ¦ - ¦ Bash bash -c 'rm -rf /' ¦ - ¦ deny/risk
default ¦ - ¦ Bash rm -rf x ¦ subs=rm -rf x; d=/ ¦ deny/risk
default ¦ - ¦ Bash x ¦ subs=x; d=/home/u ¦ deny/risk
default ¦ - ¦ Bash x ¦ subs=x; d=/usr ¦ deny/risk
default ¦ - ¦ Bash rm -rf / ¦ hook=allow ¦ deny/risk
default ¦ deny:Bash(rm *) ¦ Bash rm -rf / ¦ - ¦ deny/rule
default ¦ ask:Bash(rm *) ¦ Bash rm -rf / ¦ - ¦ deny/risk
default ¦ allow:Bash(curl *) ¦ Bash curl x ¦ risk=high:network ¦ allow/rule
default ¦ - ¦ Bash ls ¦ risk=high:odd ¦ ask/risk
acceptEdits ¦ - ¦ Bash rm x ¦ risk=high:odd ¦ ask/risk
default ¦ - ¦ Bash ls ¦ risk=moderate ¦ ask/default
default ¦ deny:Bash(npm *) ¦ Bash npm test ¦ hook=allow ¦ deny/rule
default ¦ ask:Bash(npm *) ¦ Bash npm test ¦ hook=allow ¦ ask/rule
plan ¦ - ¦ Edit /p/a ¦ hook=allow ¦ deny/mode
default ¦ - ¦ Edit /p/.git/config ¦ hook=allow ¦ ask/risk
bypassPermissions ¦ - ¦ Edit /p/a ¦ hook=ask ¦ ask/hook
default ¦ - ¦ Read /p/a ¦ hook=allow ¦ allow/mode
default ¦ - ¦ Read /etc/hosts ¦ hook=allow ¦ allow/hook
default ¦ ask:Bash(git *); deny:Bash(git push *) ¦ Bash git push ¦ - ¦ deny/rule
default ¦ deny:Bash(git push *); allow:Bash(git push origin main) ¦ Bash git push origin main ¦ - ¦ deny/rule
default ¦ ask:Read(./a) ¦ Read /p/a ¦ - ¦ ask/rule
acceptEdits ¦ ask:Edit(./src/**) ¦ Edit /p/src/a ¦ - ¦ ask/rule
auto ¦ ask:Bash(git push *) ¦ Bash git push ¦ - ¦ ask/rule
dontAsk ¦ ask:Bash(npm *); allow:Bash(npm test) ¦ Bash npm test ¦ - ¦ deny/mode
plan ¦ allow:Edit ¦ Edit /p/a ¦ - ¦ deny/mode
plan ¦ - ¦ Bash cat README && ls ¦ - ¦ allow/mode
plan ¦ - ¦ Bash echo x > f ¦ - ¦ ask/mode
auto ¦ allow:Bash(npx *) ¦ Bash npx jest ¦ - ¦ ask/default
auto ¦ allow:Bash(npm run *) ¦ Bash npm run x ¦ - ¦ ask/default
auto ¦ allow:Bash(npm run lint) ¦ Bash npm run lint ¦ - ¦ allow/rule
auto ¦ allow:Bash(bash *) ¦ Bash bash x.sh ¦ - ¦ ask/default
auto ¦ - ¦ Bash rm -rf /tmp/x ¦ - ¦ ask/default
dontAsk ¦ - ¦ Bash ls ¦ - ¦ allow/mode
dontAsk ¦ - ¦ Bash ls ¦ opaque ¦ deny/mode
"#;

#[test]
fn risk_floor_hooks_and_order() {
    assert!(common::run_table(FLOOR_HOOKS_ORDER) >= 45);
}

/// `dangerouslyDisableSandbox: true` on a Bash call, with the sandbox enabled: no mode
/// approves it (not even for a read-only command), an allow rule or a person must; as root
/// in bypassPermissions it counts as unsandboxed for the root guard.
#[test]
fn leaving_the_sandbox_is_never_approved_by_a_mode() {
    use toolgate_policy::Engine;
    use toolgate_protocol::{Decision, Layer};
    let flagged = r#"{"command": "ls", "dangerouslyDisableSandbox": true}"#;
    let plain = r#"{"command": "ls"}"#;
    let make = r#"{"command": "make", "dangerouslyDisableSandbox": true}"#;
    // (mode, allow rule, input, is_root, sandboxed, allow_root) → (decision, layer)
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a str,
        bool,
        bool,
        bool,
        (Decision, Layer),
    );
    let cases: &[Case<'_>] = &[
        (
            "default",
            "-",
            plain,
            false,
            true,
            false,
            (Decision::Allow, Layer::Mode),
        ),
        (
            "default",
            "-",
            flagged,
            false,
            true,
            false,
            (Decision::Ask, Layer::Default),
        ),
        (
            "acceptEdits",
            "-",
            flagged,
            false,
            true,
            false,
            (Decision::Ask, Layer::Default),
        ),
        (
            "auto",
            "-",
            flagged,
            false,
            true,
            false,
            (Decision::Ask, Layer::Default),
        ),
        (
            "dontAsk",
            "-",
            flagged,
            false,
            true,
            false,
            (Decision::Deny, Layer::Mode),
        ),
        (
            "plan",
            "-",
            flagged,
            false,
            true,
            false,
            (Decision::Ask, Layer::Default),
        ),
        // An explicit allow rule approves it.
        (
            "default",
            "allow:Bash(make)",
            make,
            false,
            true,
            false,
            (Decision::Allow, Layer::Rule),
        ),
        (
            "default",
            "-",
            make,
            false,
            true,
            false,
            (Decision::Ask, Layer::Default),
        ),
        // Without a sandbox the flag means nothing: the read-only command runs.
        (
            "default",
            "-",
            flagged,
            false,
            false,
            false,
            (Decision::Allow, Layer::Mode),
        ),
        // bypassPermissions: allowed for a normal user …
        (
            "bypassPermissions",
            "-",
            flagged,
            false,
            true,
            false,
            (Decision::Allow, Layer::Mode),
        ),
        // … but as root the sandbox was what made bypass acceptable.
        (
            "bypassPermissions",
            "-",
            plain,
            true,
            true,
            false,
            (Decision::Allow, Layer::Mode),
        ),
        (
            "bypassPermissions",
            "-",
            flagged,
            true,
            true,
            false,
            (Decision::Deny, Layer::Mode),
        ),
        (
            "bypassPermissions",
            "-",
            flagged,
            true,
            true,
            true,
            (Decision::Allow, Layer::Mode),
        ),
    ];
    let mut failures = Vec::new();
    for (mode, rule, input, is_root, sandboxed, allow_root, want) in cases {
        let line = format!("{mode} ¦ {rule} ¦ Bash {input} ¦ - ¦ allow/mode");
        let case = common::parse(&line);
        let mut b =
            Engine::builder()
                .cwd("/p")
                .home("/home/u")
                .root(*is_root, *sandboxed, *allow_root);
        for (k, r) in &case.rules {
            b = b.rule(*k, r, "test settings");
        }
        let engine = b.build().unwrap_or_else(|e| panic!("{e}"));
        let v = common::run(&case, &engine).verdict;
        if (v.decision, v.layer) != *want {
            failures.push(format!(
                "{line}: got {:?}/{:?} ({})\n{}",
                v.decision,
                v.layer,
                v.reason,
                common::run(&case, &engine).render()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
