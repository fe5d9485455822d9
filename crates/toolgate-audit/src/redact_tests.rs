use super::*;
use crate::rules::{BUILTIN_PATTERNS, KEY_EXAMPLES};
use serde_json::json;

#[test]
fn every_builtin_pattern_compiles_and_walks_its_examples() {
    let r = Redactor::default();
    assert_eq!(
        r.patterns.len(),
        builtin_patterns().count(),
        "a built-in pattern failed to compile"
    );
    for p in BUILTIN_PATTERNS {
        let alone = Redactor::builder()
            .builtin_patterns(false)
            .pattern(p.name, p.regex)
            .build()
            .unwrap();
        assert!(
            !p.positives.is_empty() && !p.near_misses.is_empty(),
            "{}",
            p.name
        );
        for (text, secret) in p.positives {
            assert!(text.contains(secret), "{}: bad example {text:?}", p.name);
            let out = r.redact_str(text);
            assert!(!out.contains(secret), "{}: {text:?} -> {out:?}", p.name);
            assert!(out.contains("[REDACTED:"), "{}: {out:?}", p.name);
            // The pattern masks it on its own, not only thanks to another pattern.
            let by_itself = alone.redact_str(text);
            assert!(
                !by_itself.contains(secret),
                "{}: alone: {text:?} -> {by_itself:?}",
                p.name
            );
            // Idempotent.
            assert_eq!(
                r.redact_str(&out),
                out,
                "{}: not idempotent on {text:?}",
                p.name
            );
        }
        for text in p.near_misses {
            assert_eq!(
                r.redact_str(text),
                *text,
                "{}: near miss {text:?} was masked",
                p.name
            );
        }
    }
}

#[test]
fn masks_keep_the_readable_part() {
    let r = Redactor::default();
    assert_eq!(
        r.redact_str("PGPASSWORD=hunter2 psql"),
        "PGPASSWORD=[REDACTED:secret_assignment] psql"
    );
    assert_eq!(
        r.redact_str("Authorization: Bearer abc123def456ghi"),
        "Authorization: Bearer [REDACTED:authorization_header]"
    );
    assert_eq!(
        r.redact_str("https://alice:pw1@example.com/x"),
        "https://alice:[REDACTED:url_userinfo_password]@example.com/x"
    );
    assert_eq!(
        r.redact_str("AKIAIOSFODNN7EXAMPLE"),
        "[REDACTED:aws_access_key_id]"
    );
}

#[test]
fn key_rule_walks_its_examples() {
    let r = Redactor::default();
    for (key, sensitive) in KEY_EXAMPLES {
        // Superseded by the added key words (`pwd` holds passwords; see redact_rules.rs).
        if redact_rules::KEY_EXAMPLES.iter().any(|(k, _)| k == key) {
            continue;
        }
        assert_eq!(r.is_sensitive_key(key), *sensitive, "key {key:?}");
    }
}

#[test]
fn key_words_split() {
    assert_eq!(key_words("APIKey"), ["api", "key"]);
    assert_eq!(key_words("XApiKey"), ["x", "api", "key"]);
    assert_eq!(key_words("x-api-key"), ["x", "api", "key"]);
    assert_eq!(key_words("oauth2Token"), ["oauth", "2", "token"]);
    assert_eq!(key_words("PGPASSWORD"), ["pgpassword"]);
    assert!(key_words("").is_empty());
    assert_eq!(key_words("__"), Vec::<String>::new());
}

#[test]
fn values_nested_arrays_and_types() {
    let r = Redactor::default();
    let mut v = json!({
        "file_path": "/tmp/x",
        "api_key": "s",
        "pin": 1234,
        "password": 1234,
        "secrets": ["a", 2, {"note": "kept", "token": "t"}, null],
        "auth": {"user": "bob", "client_secret": "cs"},
        "token": true,
        "headers": {"Cookie": "sid=1", "Accept": "text/html"},
        "env": {"GITHUB_TOKEN": "x", "HOME": "/root"},
        "nested": [[{"deep": "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"}]],
        "token_count": 12
    });
    r.redact(&mut v);
    assert_eq!(
        v,
        json!({
            "file_path": "/tmp/x",
            "api_key": "[REDACTED]",
            "pin": 1234,
            "password": "[REDACTED]",
            "secrets": ["[REDACTED]", "[REDACTED]", {"note": "kept", "token": "[REDACTED]"}, null],
            "auth": {"user": "bob", "client_secret": "[REDACTED]"},
            "token": true,
            "headers": {"Cookie": "[REDACTED]", "Accept": "text/html"},
            "env": {"GITHUB_TOKEN": "[REDACTED]", "HOME": "/root"},
            "nested": [[{"deep": "[REDACTED:github_token]"}]],
            "token_count": 12
        })
    );
}

#[test]
fn configuration_extra_keys_patterns_and_disable() {
    let r = RedactionConfig {
        enabled: true,
        keys: vec!["pin".into(), "X-Internal-Ticket".into()],
        patterns: vec![ExtraPattern {
            name: "ticket".into(),
            regex: r"TCK-(?P<secret>\d+)".into(),
        }],
    }
    .build()
    .unwrap();
    let mut v =
        json!({"pin": 1234, "x_internal_ticket": "a", "note": "see TCK-991 now", "pinned": 1});
    r.redact(&mut v);
    assert_eq!(
        v,
        json!({"pin": "[REDACTED]", "x_internal_ticket": "[REDACTED]", "note": "see TCK-[REDACTED:ticket] now", "pinned": 1})
    );
    let off: RedactionConfig = serde_json::from_value(json!({"enabled": false})).unwrap();
    let mut v = json!({"password": "p", "s": "AKIAIOSFODNN7EXAMPLE"});
    let before = v.clone();
    off.build().unwrap().redact(&mut v);
    assert_eq!(v, before);
    let bad = Redactor::builder()
        .pattern("broken", "(")
        .build()
        .unwrap_err();
    assert!(bad.to_string().contains("broken"), "{bad}");
}

#[test]
fn huge_strings_are_linear() {
    let r = Redactor::default();
    let start = std::time::Instant::now();
    // 10 MB of near-misses: lots of `=`, word starts, 'password' prefixes, non-ASCII.
    let unit = "password_policy=é tokenizer: x sk-learn AKIA1234 bearer of https://h:1/a@b ";
    let big = unit.repeat(10_000_000 / unit.len());
    // With one secret at the very end.
    let text = format!("{big} PGPASSWORD=hunter2");
    assert_eq!(
        r.redact_str(&text),
        format!("{big} PGPASSWORD=[REDACTED:secret_assignment]")
    );
    let one_word = "a".repeat(10_000_000);
    assert_eq!(r.redact_str(&one_word), one_word.as_str());
    let elapsed = start.elapsed();
    assert!(elapsed.as_secs() < 60, "took {elapsed:?}");
}

#[test]
fn deep_values_do_not_overflow() {
    let mut v = json!("AKIAIOSFODNN7EXAMPLE");
    for _ in 0..100_000 {
        v = Value::Array(vec![v]);
    }
    Redactor::default().redact(&mut v);
    let mut cur = &v;
    while let Value::Array(a) = cur {
        cur = &a[0];
    }
    assert_eq!(cur, "[REDACTED:aws_access_key_id]");
    // Dropping a deep Value recurses in serde_json; unwind it by hand.
    let mut cur = v;
    while let Value::Array(mut a) = cur {
        cur = a.pop().unwrap_or(Value::Null);
    }
}

/// Every built-in pattern, the base table and the command-line additions alike.
#[test]
fn command_line_patterns_walk_their_examples() {
    let r = Redactor::default();
    for p in redact_rules::COMMAND_LINE_PATTERNS {
        for (text, secret) in p.positives {
            assert!(text.contains(secret), "{}: bad example {text:?}", p.name);
            let out = r.redact_str(text);
            assert!(!out.contains(secret), "{}: {text:?} -> {out:?}", p.name);
            assert_eq!(r.redact_str(&out), out, "{}: not idempotent", p.name);
        }
        for text in p.near_misses {
            assert_eq!(r.redact_str(text), *text, "{}: near miss masked", p.name);
        }
    }
}

/// What issue #21 found in audit.jsonl in clear, each in the shape it was seen.
const ISSUE_21_SECRETS: &[(&str, &str)] = &[
    (
        "aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE9",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE9",
    ),
    (
        "curl https://api.stripe.com/v1/charges -u sk_live_51HqLyjWDarjtT1zdp7dcXa2b:",
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
    ("mysql -u root -pTr0ub4dor&3x shop", "Tr0ub4dor"),
    (
        "sshpass -p 'c0rrect h0rse' ssh admin@10.0.0.5",
        "c0rrect h0rse",
    ),
    (
        "curl -X POST -d '{\"text\":\"hi\"}' https://hooks.slack.com/services/T02ABCDEF/B03GHIJKL/aBcDeFgHiJkLmNoPqRsTuVwX",
        "aBcDeFgHiJkLmNoPqRsTuVwX",
    ),
    (
        "az storage blob list --connection-string 'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net'",
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6",
    ),
];

#[test]
fn the_secrets_issue_21_found_are_masked() {
    let r = Redactor::default();
    for (text, secret) in ISSUE_21_SECRETS {
        let mut v = json!({"input": {"command": text}});
        r.redact(&mut v);
        let out = v.to_string();
        assert!(!out.contains(secret), "{text:?} -> {out}");
        let again = r
            .redact_str(v["input"]["command"].as_str().unwrap())
            .into_owned();
        assert_eq!(again, v["input"]["command"], "not idempotent: {out}");
    }
    let mut fields = json!({"user": "bob", "pass": "hunter2", "pwd": "s3cr3t", "cwd": "/w"});
    r.redact(&mut fields);
    assert_eq!(
        fields,
        json!({"user": "bob", "pass": REDACTED, "pwd": REDACTED, "cwd": "/w"})
    );
}

/// Everyday commands and paths come through the whole default redactor as they are: the
/// published rules and the entropy check must not make the audit log unreadable.
#[test]
fn everyday_text_is_left_alone() {
    let r = Redactor::default();
    for text in [
        "cargo test -p toolgate-audit -- --nocapture",
        "git log --oneline -20",
        "git show 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
        "grep -rn api_key src/auth/token.rs",
        "ls -la ~/.ssh",
        "export PATH=/usr/local/bin:$PATH",
        "curl https://api.github.com/repos/rust-lang/rust/pulls",
        "npm install --save-dev typescript",
        "python3 -m pytest tests/test_auth.py::test_access_token -q",
        "kubectl get secrets -n prod",
        "docker build -t registry.example.com/team/app:1.4.2 .",
        "crates/toolgate-audit/src/redact_gitleaks.rs",
        "task-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    ] {
        assert_eq!(r.redact_str(text), text, "{text:?} was masked");
    }
}

#[test]
fn every_gitleaks_rule_compiles_or_is_listed() {
    let rules = redact_gitleaks::Gitleaks::shared().expect("the vendored rules load");
    assert!(rules.rules.len() > 200, "{} rules", rules.rules.len());
    let failing: Vec<&str> = rules
        .rules
        .iter()
        .filter(|r| r.regex().is_none())
        .map(|r| r.id)
        .collect();
    // Rules Rust's regex engine cannot compile (RE2 features it lacks); they are skipped.
    let known: &[&str] = &[];
    assert_eq!(
        failing,
        known,
        "sources: {:?}",
        rules
            .rules
            .iter()
            .filter(|r| r.regex().is_none())
            .map(|r| r.source())
            .collect::<Vec<_>>()
    );
}

#[test]
fn entropy_check_walks_its_examples() {
    let r = Redactor::default();
    for (text, token) in redact_entropy::POSITIVES {
        let out = r.redact_str(text);
        assert!(!out.contains(token), "{text:?} -> {out:?}");
    }
    for text in redact_entropy::NEAR_MISSES {
        assert_eq!(r.redact_str(text), *text, "{text:?} was masked");
    }
    // Without the built-in patterns (a settings choice), no published layer either.
    let bare = Redactor::builder().builtin_patterns(false).build().unwrap();
    let (text, _) = redact_entropy::POSITIVES[0];
    assert_eq!(bare.redact_str(text), text);
}

#[test]
fn added_key_words_walk_their_examples() {
    let r = Redactor::default();
    for (key, want) in redact_rules::KEY_EXAMPLES {
        assert_eq!(r.is_sensitive_key(key), *want, "{key}");
    }
}

#[test]
fn json_rpc_messages_keep_their_envelope() {
    let r = Redactor::shared();
    let mut m = json!({"jsonrpc": "2.0", "id": "sk_live_51HqLyjWDarjtT1zdp7dcXa2b", "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"api_key": "k1", "note": "token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"}}});
    r.redact_message(&mut m);
    assert_eq!(
        m["id"], "sk_live_51HqLyjWDarjtT1zdp7dcXa2b",
        "ids route answers"
    );
    assert_eq!(m["method"], "tools/call");
    assert_eq!(m["params"]["arguments"]["api_key"], REDACTED);
    assert!(
        !m.to_string()
            .contains("aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"),
        "{m}"
    );
}
