//! Secrets in tool calls never reach audit.jsonl in clear (issue #21, item 6), through
//! `toolgate exec`: the credential shapes the red team saw in clear, in commands, in input
//! fields, and in what a hook prints.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;

/// `(command, secret)`: each command carries one secret.
const SECRETS: &[(&str, &str)] = &[
    (
        "aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE9",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE9",
    ),
    (
        "curl -u sk_live_51HqLyjWDarjtT1zdp7dcXa2b: https://api.stripe.com/v1/charges",
        "sk_live_51HqLyjWDarjtT1zdp7dcXa2b",
    ),
    (
        "curl 'https://maps.googleapis.com/maps/api/geocode/json?key=AIzaSyD8f3Kq9Lm2Xp7Vb4Nc1Rt6Wz0Yh5Ju3Ge'",
        "AIzaSyD8f3Kq9Lm2Xp7Vb4Nc1Rt6Wz0Yh5Ju3Ge",
    ),
    (
        "git clone https://oauth2:glpat-x8Kd2Lq9Wm4Zn7Pv3Rt1@gitlab.com/g/p.git",
        "glpat-x8Kd2Lq9Wm4Zn7Pv3Rt1",
    ),
    (
        "npm config set //registry.npmjs.org/:_authToken npm_a8Kd2Lq9Wm4Zn7Pv3Rt1Xc6Vb5Nm0Hj8Gf2Ds",
        "npm_a8Kd2Lq9Wm4Zn7Pv3Rt1Xc6Vb5Nm0Hj8Gf2Ds",
    ),
    (
        "huggingface-cli login --token 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",
        "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",
    ),
    ("mysql -u root -pTr0ub4dorX3 shop", "Tr0ub4dorX3"),
    ("sshpass -p c0rrectH0rse ssh admin@db", "c0rrectH0rse"),
    (
        "curl -d x https://hooks.slack.com/services/T02ABCDEF/B03GHIJKL/aBcDeFgHiJkLmNoPqRsTuVwX",
        "aBcDeFgHiJkLmNoPqRsTuVwX",
    ),
    (
        "az storage blob list --connection-string 'AccountName=a;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net'",
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6",
    ),
];

/// What the hook prints when it refuses a call.
const HOOK_SECRET: &str = "sk_live_99ZzYyXxWwVvUuTtSsRrQq11";

#[test]
fn secrets_in_calls_and_hook_output_are_masked_in_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let audit = ws.join("audit.jsonl");
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{
        "type": "command",
        "command": format!("echo 'refused: key {HOOK_SECRET} is live' >&2; exit 2"),
    }]}]}});
    let mut input = String::new();
    for (i, (command, _)) in SECRETS.iter().enumerate() {
        let call = json!({"type": "tool_use", "id": format!("c{i}"), "name": "Bash",
                          "input": {"command": command}});
        input.push_str(&format!("{call}\n"));
    }
    let fields = json!({"type": "tool_use", "id": "fields", "name": "Write",
        "input": {"file_path": "creds.json", "content": "{}", "pass": "hunter2pass", "pwd": "s3cr3tpwd"}});
    input.push_str(&format!("{fields}\n"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .env_remove("TOOLGATE_LOG")
        .env("XDG_CONFIG_HOME", ws.join("no-user-config"))
        .args(["exec", "--workspace"])
        .arg(ws)
        .arg("--audit")
        .arg(&audit)
        .args(["--settings", &settings.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(
        log.lines().count(),
        SECRETS.len() + 1,
        "one record per call"
    );
    assert!(
        log.contains("refused: key"),
        "the hook's output is recorded"
    );
    for (command, secret) in SECRETS {
        assert!(
            !log.contains(secret),
            "{command:?} reached the log in clear"
        );
    }
    for secret in [HOOK_SECRET, "hunter2pass", "s3cr3tpwd"] {
        assert!(!log.contains(secret), "{secret} reached the log in clear");
    }
}
