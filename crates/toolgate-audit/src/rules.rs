//! The built-in redaction rules, as data with examples. A unit test in `redact.rs` walks
//! every example, so a rule cannot drift from what it claims.

/// One built-in pattern for credentials inside strings.
#[derive(Debug, Clone, Copy)]
pub struct PatternSpec {
    /// Short name; masked text becomes `[REDACTED:<name>]`.
    pub name: &'static str,
    /// The regex (Rust `regex` syntax). If it has groups whose names start with `secret`,
    /// only those are masked (so `password=` or `Bearer ` stay readable); otherwise the whole
    /// match is.
    pub regex: &'static str,
    /// Mask only if the masked text contains an ASCII digit: real keys are random and
    /// nearly always have one, prose does not (`Bearer instruments`).
    pub needs_digit: bool,
    /// Texts that must be masked, each with the secret that must disappear.
    pub positives: &'static [(&'static str, &'static str)],
    /// Texts that must come through the whole default redactor unchanged.
    pub near_misses: &'static [&'static str],
}

/// The built-in patterns, applied in this order. `(?-u:\b)` is an ASCII word boundary, which
/// keeps matching linear-time on non-ASCII text.
pub const BUILTIN_PATTERNS: &[PatternSpec] = &[
    PatternSpec {
        name: "pem_private_key",
        regex: r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?s:.*?)(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\z)",
        needs_digit: false,
        positives: &[
            (
                "k = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----'",
                "MIIEowIBAAKCAQEA",
            ),
            (
                "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq",
                "MIIEvQIBADANBgkq",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----",
                "b3BlbnNzaC1rZXktdjE",
            ),
        ],
        near_misses: &[
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYI\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgI\n-----END CERTIFICATE-----",
            "grep -r 'PRIVATE KEY' .",
        ],
    },
    PatternSpec {
        name: "jwt",
        regex: r"(?-u:\b)eyJ[A-Za-z0-9_-]{2,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*",
        needs_digit: false,
        positives: &[(
            "cookie eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        )],
        near_misses: &["eyJhbGciOiJIUzI1NiJ9", "eyJhbGciOiJIUzI1NiJ9.notjson.sig"],
    },
    PatternSpec {
        name: "aws_access_key_id",
        regex: r"(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)",
        needs_digit: false,
        positives: &[
            (
                "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
                "AKIAIOSFODNN7EXAMPLE",
            ),
            ("ASIAY34FZKBOKMUTVV7A:session", "ASIAY34FZKBOKMUTVV7A"),
        ],
        near_misses: &[
            "AKIA1234",
            "akiaiosfodnn7example",
            "AKIAIOSFODNN7EXAMPLEXYZ",
            "MAKIAIOSFODNN7EXAMPLE",
        ],
    },
    PatternSpec {
        name: "github_token",
        regex: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?-u:\b)",
        needs_digit: false,
        positives: &[
            (
                "GH=ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
                "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "11ABCDEFG0123456789_abcdefghij",
            ),
        ],
        near_misses: &[
            "ghp_short",
            "ghx_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
            "see github_pat_ docs",
        ],
    },
    PatternSpec {
        name: "slack_token",
        regex: r"(?-u:\b)xox[abprs]-[A-Za-z0-9-]{10,}",
        needs_digit: false,
        positives: &[("SLACK=xoxb-1234567890-abcdefghij", "1234567890-abcdefghij")],
        near_misses: &["xoxz-1234567890-abcdefghij", "xoxb-123"],
    },
    PatternSpec {
        name: "anthropic_api_key",
        regex: r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        needs_digit: false,
        positives: &[(
            "ANTHROPIC_API_KEY sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
            "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        )],
        near_misses: &[
            "sk-ant-short",
            "task-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        ],
    },
    PatternSpec {
        name: "openai_api_key",
        regex: r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        needs_digit: true,
        positives: &[
            (
                "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
                "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            ),
            (
                "key: sk-AbCdEfGhIjKlMnOpQrSt0123456789abcdefghijklmn",
                "AbCdEfGhIjKlMnOpQrSt0123456789",
            ),
        ],
        near_misses: &[
            "sk-learn",
            "sk-this-is-a-long-slug-without-any-digits",
            "disk-AbCdEfGhIjKlMnOpQrSt0123456789",
        ],
    },
    PatternSpec {
        name: "url_userinfo_password",
        regex: r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:"']+:(?P<secret>[^\s/?#@"']+)@"#,
        needs_digit: false,
        positives: &[
            (
                "git clone https://alice:s3cretPass@example.com/repo.git",
                "s3cretPass",
            ),
            ("DATABASE_URL=postgres://app:hunter2@db:5432/app", "hunter2"),
        ],
        near_misses: &[
            "https://example.com:8080/path",
            "https://alice@example.com/",
            "git@github.com:org/repo.git",
            "https://host:8080/a@b",
        ],
    },
    PatternSpec {
        name: "user_option_password",
        regex: r#"(?:^|\s)(?:-u|--user|--proxy-user)(?:\s+|=)["']?[^\s:"']+:(?P<secret>[^\s"']+)"#,
        needs_digit: false,
        positives: &[
            ("curl -u bob:hunter2 https://example.com", "hunter2"),
            ("curl --user='admin:pa55' x", "pa55"),
        ],
        near_misses: &[
            "curl -u bob https://example.com",
            "ps -u root",
            "useradd --user-group x:y",
        ],
    },
    PatternSpec {
        name: "authorization_header",
        regex: r#"(?i)(?-u:\b)(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:basic|bearer|token|digest|bot|apikey)\s+)?(?P<secret>[^\s"',;]+)"#,
        needs_digit: false,
        positives: &[
            (
                "curl -H 'Authorization: Basic dXNlcjpwYXNz' x",
                "dXNlcjpwYXNz",
            ),
            ("Authorization: Bearer abc123def456ghi", "abc123def456ghi"),
            (r#"{"authorization":"token ghs_short"}"#, "ghs_short"),
        ],
        near_misses: &[
            "authorization is required",
            "Authorization header missing",
            "no authorization needed",
        ],
    },
    PatternSpec {
        name: "bearer_token",
        regex: r"(?i)(?-u:\b)bearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
        needs_digit: true,
        positives: &[(
            "use: bearer 0123456789abcdef for access",
            "0123456789abcdef",
        )],
        near_misses: &[
            "the bearer of bad news",
            "bearer instruments are paper",
            "Bearer short1",
        ],
    },
    PatternSpec {
        name: "secret_assignment",
        regex: r#"(?i)(?-u:\b)[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key)["']?\s*[:=]\s*(?:"(?P<secret_dq>[^"\n]+)"|'(?P<secret_sq>[^'\n]+)'|["']?(?P<secret>[^\s"'&;,]+))"#,
        needs_digit: false,
        positives: &[
            ("PGPASSWORD=hunter2 psql", "hunter2"),
            ("mysql --password=s3cr3t db", "s3cr3t"),
            (
                "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG",
                "wJalrXUtnFEMIK7MDENG",
            ),
            (r#"{"password": "correct horse"}"#, "correct horse"),
            ("https://x/?user=a&token=abc123&x=1", "abc123"),
            ("client_secret: 'zzTop'", "zzTop"),
        ],
        near_misses: &[
            "tokenizer: bert",
            "max_tokens=100",
            "password_policy: strict",
            "the password is wrong",
            "secretary: Ann",
            "token_count=5",
            "password=",
        ],
    },
];

/// Key-name words: a JSON key is sensitive if one of its words (split at `_`, `-`, `.`,
/// spaces and camelCase humps, lowercased) is in this list. So `api_key`, `apiKey`,
/// `x-api-key` and `PRIVATE_KEY` match through `key`, but `monkey`, `keyword` and `hotkey`
/// (one word each) do not. Plural `tokens` is deliberately absent (`max_tokens`).
pub const SENSITIVE_KEY_WORDS: &[&str] = &[
    "token",
    "secret",
    "secrets",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "credential",
    "credentials",
    "auth",
    "authorization",
    "cookie",
    "cookies",
    "key",
    "bearer",
    "jwt",
    // Single-word spellings that no split can see into.
    "apikey",
    "apitoken",
    "accesskey",
    "accesstoken",
    "authtoken",
    "secretkey",
    "privatekey",
    "refreshtoken",
    "sessiontoken",
    "clientsecret",
    "setcookie",
    "xapikey",
];

/// Substrings that make a key sensitive wherever they appear (`PGPASSWORD`, `dbpassword`):
/// too specific to occur inside an innocent word.
pub const SENSITIVE_KEY_SUBSTRINGS: &[&str] = &["password", "passwd", "passphrase"];

/// A key with one of these words describes a secret rather than holding one
/// (`token_count`, `key_type`, `password_min_length`), so it is left alone.
pub const EXEMPT_KEY_WORDS: &[&str] = &[
    "count", "limit", "max", "min", "num", "len", "length", "size", "ttl", "type", "kind",
    "expiry", "expires", "usage", "policy",
];

/// `(key, sensitive?)`: examples for the key rule, walked by a unit test.
pub const KEY_EXAMPLES: &[(&str, bool)] = &[
    ("api_key", true),
    ("apiKey", true),
    ("APIKey", true),
    ("apikey", true),
    ("x-api-key", true),
    ("X-Api-Key", true),
    ("private_key", true),
    ("privateKey", true),
    ("key", true),
    ("KEY", true),
    ("AWS_SECRET_ACCESS_KEY", true),
    ("token", true),
    ("access_token", true),
    ("accessToken", true),
    ("GITHUB_TOKEN", true),
    ("session_token", true),
    ("secret", true),
    ("client_secret", true),
    ("clientSecret", true),
    ("password", true),
    ("Password", true),
    ("PGPASSWORD", true),
    ("db_password", true),
    ("passwd", true),
    ("passphrase", true),
    ("credentials", true),
    ("auth", true),
    ("Authorization", true),
    ("x-auth-token", true),
    ("cookie", true),
    ("Set-Cookie", true),
    ("monkey", false),
    ("keyword", false),
    ("Keywords", false),
    ("keyboard", false),
    ("hotkey", false),
    ("donkey_name", false),
    ("file_path", false),
    ("author", false),
    ("authority", false),
    ("authenticated", false),
    ("tokenizer", false),
    ("max_tokens", false),
    ("token_count", false),
    ("tokenType", false),
    ("key_type", false),
    ("password_min_length", false),
    ("session_id", false),
    ("secretary", false),
    ("pwd", false),
    ("command", false),
];
