//! Environment scrubbing: variables whose names or values look like credentials are not
//! passed to commands, unless [`crate::shell::ShellConfig::allow_env`] names them.
//!
//! The rules are data, each with names it must catch and near misses it must leave alone; one
//! test walks them all.

use std::ffi::{OsStr, OsString};

/// How a rule looks at a variable.
#[derive(Debug, Clone, Copy)]
enum Test {
    /// The whole name, exactly.
    Name(&'static [&'static str]),
    /// One `_`-separated word of the name, exactly.
    Word(&'static [&'static str]),
    /// One word ends with one of these (`PGPASSWORD`, `GHTOKEN`).
    WordSuffix(&'static [&'static str]),
    /// The last word, in a name of two words or more (`MYSQL_PWD`, but not `PWD`).
    LastWord(&'static [&'static str]),
    /// The value starts with a known credential prefix and is at least
    /// [`MIN_SECRET_VALUE_LEN`] long.
    ValuePrefix(&'static [&'static str]),
}

/// A rule for secret-looking variables.
#[derive(Debug)]
pub(crate) struct SecretRule {
    /// Identifier, for tests and documentation.
    pub id: &'static str,
    test: Test,
    /// `NAME=value` pairs the rule must catch (walked by the tests).
    #[cfg_attr(not(test), allow(dead_code))]
    pub examples: &'static [&'static str],
    /// `NAME=value` pairs it must leave alone (walked by the tests).
    #[cfg_attr(not(test), allow(dead_code))]
    pub near_misses: &'static [&'static str],
}

/// Shortest value a value-prefix rule fires on: real keys are long, and short values such
/// as `sk-1` are ordinary text.
const MIN_SECRET_VALUE_LEN: usize = 20;

/// The rules, applied to the upper-cased name (values as they are).
pub(crate) const SECRET_RULES: &[SecretRule] = &[
    SecretRule {
        id: "known_credentials",
        test: Test::Name(&[
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_SECURITY_TOKEN",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "NPM_TOKEN",
            "PGPASSWORD",
            "MYSQL_PWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_CLIENT_SECRET",
            "VAULT_TOKEN",
            "HF_TOKEN",
            "DOCKER_AUTH_CONFIG",
        ]),
        examples: &[
            "AWS_ACCESS_KEY_ID=AKIAEXAMPLE",
            "GH_TOKEN=x",
            "DOCKER_AUTH_CONFIG={}",
        ],
        near_misses: &[
            "AWS_REGION=eu-west-1",
            "AWS_PROFILE=dev",
            "GITHUB_ACTIONS=true",
        ],
    },
    SecretRule {
        id: "secret_word",
        test: Test::Word(&[
            "TOKEN",
            "TOKENS",
            "SECRET",
            "SECRETS",
            "PASSWORD",
            "PASSWORDS",
            "PASSWD",
            "PASSPHRASE",
            "CREDENTIAL",
            "CREDENTIALS",
            "APIKEY",
            "PRIVATEKEY",
            "AUTHTOKEN",
            "ACCESSTOKEN",
        ]),
        examples: &[
            "FOO_TOKEN=abc",
            "CI_JOB_TOKEN=abc",
            "MY_SECRET_VALUE=abc",
            "REDIS_PASSWORD=abc",
            "SLACK_APIKEY=abc",
            "git_token=abc",
        ],
        near_misses: &[
            "TOKENIZERS_PARALLELISM=false",
            "SECRETARY_NAME=x",
            "PASSAGE_COUNT=3",
        ],
    },
    SecretRule {
        id: "secret_word_suffix",
        test: Test::WordSuffix(&["TOKEN", "PASSWORD", "SECRET"]),
        examples: &["GHTOKEN=x", "PGPASSWORD=x", "CLIENTSECRET=x"],
        near_misses: &["TOKENIZER=x", "SECRETARY=x"],
    },
    SecretRule {
        id: "key_or_password_last_word",
        test: Test::LastWord(&["KEY", "KEYS", "PWD", "PASS", "PAT"]),
        examples: &[
            "FOO_KEY=x",
            "STRIPE_API_KEY=x",
            "SSH_PRIVATE_KEY=x",
            "SMTP_PASS=x",
            "AZURE_DEVOPS_PAT=x",
            "DB_PWD=x",
        ],
        near_misses: &[
            "PWD=/home/u",
            "OLDPWD=/tmp",
            "KEYTIMEOUT=1",
            "KEY_PATH=/k",
            "MONKEY=x",
        ],
    },
    SecretRule {
        id: "credential_value",
        test: Test::ValuePrefix(&[
            "sk-ant-",
            "sk-proj-",
            "ghp_",
            "gho_",
            "ghu_",
            "ghs_",
            "ghr_",
            "github_pat_",
            "glpat-",
            "xoxb-",
            "xoxp-",
            "AKIA",
            "ASIA",
            "AIza",
        ]),
        examples: &[
            "CONFIG_X=ghp_0123456789abcdefghij0123",
            "SOMETHING=sk-ant-api03-0123456789abcdef",
            "UPLOAD_ID=AKIAIOSFODNN7EXAMPLE1",
        ],
        near_misses: &["GREETING=sk-1", "NAME=ghp_", "LANG=en_US.UTF-8"],
    },
];

impl SecretRule {
    fn matches(&self, name: &str, value: &OsStr) -> bool {
        let upper = name.to_ascii_uppercase();
        let words: Vec<&str> = upper.split('_').filter(|w| !w.is_empty()).collect();
        match self.test {
            Test::Name(names) => names.contains(&upper.as_str()),
            Test::Word(list) => words.iter().any(|w| list.contains(w)),
            Test::WordSuffix(list) => words
                .iter()
                .any(|w| list.iter().any(|s| w.ends_with(s) && w != s)),
            Test::LastWord(list) => {
                words.len() >= 2 && words.last().is_some_and(|w| list.contains(w))
            }
            Test::ValuePrefix(prefixes) => {
                let value = value.to_string_lossy();
                value.len() >= MIN_SECRET_VALUE_LEN && prefixes.iter().any(|p| value.starts_with(p))
            }
        }
    }
}

/// The rule a variable trips, if any.
pub(crate) fn secret_rule(name: &str, value: &OsStr) -> Option<&'static str> {
    SECRET_RULES
        .iter()
        .find(|r| r.matches(name, value))
        .map(|r| r.id)
}

/// Whether `allow` (exact names, or prefixes ending in `*`) lets `name` through.
fn allowed(name: &str, allow: &[String]) -> bool {
    allow.iter().any(|a| match a.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => a == name,
    })
}

/// The environment without secret-looking variables, and the names removed.
pub(crate) fn scrub(
    env: Vec<(OsString, OsString)>,
    allow: &[String],
) -> (Vec<(OsString, OsString)>, Vec<OsString>) {
    let mut kept = Vec::with_capacity(env.len());
    let mut removed = Vec::new();
    for (name, value) in env {
        let text = name.to_string_lossy();
        if !allowed(&text, allow) && secret_rule(&text, &value).is_some() {
            removed.push(name);
        } else {
            kept.push((name, value));
        }
    }
    (kept, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pair: &str) -> (&str, &OsStr) {
        let (n, v) = pair.split_once('=').unwrap_or((pair, ""));
        (n, OsStr::new(v))
    }

    #[test]
    fn every_rule_walks_its_examples() {
        for rule in SECRET_RULES {
            for e in rule.examples {
                let (n, v) = split(e);
                assert!(rule.matches(n, v), "{} should catch {e}", rule.id);
            }
            for e in rule.near_misses {
                let (n, v) = split(e);
                assert_eq!(secret_rule(n, v), None, "{e} is not a secret ({})", rule.id);
            }
        }
    }

    #[test]
    fn allow_list_lets_names_through() {
        let env = vec![
            ("FOO_TOKEN".into(), "a".into()),
            ("MY_APP_SECRET".into(), "b".into()),
            ("BAR_TOKEN".into(), "c".into()),
            ("PATH".into(), "/bin".into()),
        ];
        let allow = vec!["FOO_TOKEN".to_owned(), "MY_APP_*".to_owned()];
        let (kept, removed) = scrub(env, &allow);
        let names: Vec<_> = kept
            .iter()
            .map(|(n, _)| n.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["FOO_TOKEN", "MY_APP_SECRET", "PATH"]);
        assert_eq!(removed, [OsString::from("BAR_TOKEN")]);
    }
}
