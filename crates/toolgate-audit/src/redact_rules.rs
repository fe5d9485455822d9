//! Redaction rules added for issue #21, beside the built-in table in `rules.rs` (which
//! another change owns): command-line secrets no published rule set covers, and two key
//! words. Same shape as the built-ins, walked by the same example test. gitleaks' rules
//! (`redact_gitleaks.rs`) cover the provider formats (Stripe, Google, GitLab, npm, Hugging
//! Face, Slack webhooks); these cover secrets that only a command line's shape gives away.

use crate::rules::PatternSpec;

/// Patterns for secrets passed to programs as arguments.
pub(crate) const COMMAND_LINE_PATTERNS: &[PatternSpec] = &[
    PatternSpec {
        name: "aws_cli_secret",
        regex: r#"(?i)(?-u:\b)aws\s+configure\s+set\s+(?:[\w-]+\.)*(?:aws_secret_access_key|aws_session_token|secret_access_key|session_token)\s+(?:"(?P<secret_dq>[^"\n]+)"|'(?P<secret_sq>[^'\n]+)'|(?P<secret>[^\s'"]+))"#,
        needs_digit: false,
        positives: &[
            (
                "aws configure set aws_secret_access_key wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
                "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
            ),
            (
                "aws configure set profile.prod.aws_session_token 'FwoGZXIvYXdzEJr'",
                "FwoGZXIvYXdzEJr",
            ),
        ],
        near_misses: &[
            "aws configure set region eu-west-1",
            "aws configure get aws_secret_access_key",
        ],
    },
    PatternSpec {
        name: "mysql_password_option",
        regex: r#"(?-u:\b)(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump)(?-u:\b)[^\n;|&]*?\s-p(?:"(?P<secret_dq>[^"\n]+)"|'(?P<secret_sq>[^'\n]+)'|(?P<secret>[^\s'";|&]+))"#,
        needs_digit: false,
        positives: &[
            ("mysql -u root -pS3cretPass shop", "S3cretPass"),
            ("mysqldump -h db -u app -p'hunter two' shop", "hunter two"),
        ],
        near_misses: &[
            "mysql -u root -p shop",
            "mysql -u root -P 3306 shop",
            "mysql --help",
        ],
    },
    PatternSpec {
        name: "sshpass_password",
        regex: r#"(?-u:\b)sshpass(?-u:\b)[^\n;|&]*?\s-p\s*(?:"(?P<secret_dq>[^"\n]+)"|'(?P<secret_sq>[^'\n]+)'|(?P<secret>[^\s'";|&]+))"#,
        needs_digit: false,
        positives: &[
            ("sshpass -p hunter2 ssh admin@host", "hunter2"),
            ("sshpass -v -p 'my pass' scp f host:", "my pass"),
        ],
        near_misses: &["sshpass -f ~/.pw ssh host", "sshpass -e ssh host"],
    },
    PatternSpec {
        name: "azure_connection_string_key",
        regex: r"(?i)(?-u:\b)(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/=]{16,})",
        needs_digit: false,
        positives: &[(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net",
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq",
        )],
        near_misses: &[
            "AccountName=acct;EndpointSuffix=core.windows.net",
            "AccountKey=",
        ],
    },
];

/// Key words beyond `rules::SENSITIVE_KEY_WORDS`: a field named `pass` or `pwd` held a
/// password in clear (issue #21). `rules::KEY_EXAMPLES` lists `pwd` as not sensitive;
/// [`KEY_EXAMPLES`] here supersedes that entry (to be folded into `rules.rs` by its owner).
pub(crate) const KEY_WORDS: &[&str] = &["pass", "pwd"];

/// `(key, sensitive?)` for [`KEY_WORDS`]; where a key is also in `rules::KEY_EXAMPLES`,
/// this answer wins.
#[cfg(test)]
pub(crate) const KEY_EXAMPLES: &[(&str, bool)] = &[
    ("pass", true),
    ("PASS", true),
    ("pwd", true),
    ("db_pass", true),
    ("userPwd", true),
    ("smtp-pass", true),
    ("passenger", false),
    ("bypass", false),
    ("compass", false),
    ("pass_count", false),
];
