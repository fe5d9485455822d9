use super::*;
use crate::rules::{BUILTIN_PATTERNS, KEY_EXAMPLES};
use serde_json::json;

#[test]
fn every_builtin_pattern_compiles_and_walks_its_examples() {
    let r = Redactor::default();
    assert_eq!(
        r.patterns.len(),
        BUILTIN_PATTERNS.len(),
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
