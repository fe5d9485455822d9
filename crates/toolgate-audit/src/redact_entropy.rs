//! The last net: a long, random-looking token is masked even when no rule knows its format
//! (a new provider's key, a password pasted into a command).
//!
//! A token is a run of `[A-Za-z0-9+/=_-]` of at least [`MIN_TOKEN_CHARS`] characters that
//! looks random on three counts: it mixes upper case, lower case and digits; it has at
//! least [`MIN_BITS_PER_CHAR`] bits of Shannon entropy per character; and its characters
//! switch class (upper, lower, digit, other) between neighbours at least
//! [`MIN_CLASS_SWITCHES`] of the time, where words — `AbstractFactoryBean2`, paths, camel
//! case — switch only at word boundaries. Hex (git object ids, SHA-256, UUIDs) has no
//! upper case and stays readable; so do made-up sequences (`AbCdEf…`, see
//! [`MAX_SEQUENTIAL`]). Measured on random base62 tokens of 32 characters, the check finds
//! ≈90 %; the provider rules before it are what catches known formats.

use super::redact_gitleaks::shannon_entropy;

/// Shortest token considered: real keys are 32 characters or more; shorter random runs
/// (short ids, hashes cut to 12) are too common in ordinary output to mask.
pub(crate) const MIN_TOKEN_CHARS: usize = 32;

/// Bits of entropy per character a token needs. A random base62 string of 32 characters
/// measures ≈4.7; English words and paths joined together stay near 4.0, hex below 4.0.
pub(crate) const MIN_BITS_PER_CHAR: f64 = 4.3;

/// Fraction of neighbouring characters of different classes a token needs: random base62
/// switches ≈62 % of the time (1st percentile 42 %), identifiers and paths 30–40 %.
pub(crate) const MIN_CLASS_SWITCHES: f64 = 0.45;

/// Most neighbouring letter or digit pairs that run in sequence (`ab`, `Bc`, `12`) a
/// random token has: random tokens ≈2 % (99th percentile 12 %), `AbCdEfGh…` placeholders
/// nearly all.
pub(crate) const MAX_SEQUENTIAL: f64 = 0.2;

/// The label of a mask made by this check.
pub(crate) const HIGH_ENTROPY: &str = "high_entropy";

fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-')
}

/// Byte ranges of high-entropy tokens in `text`.
pub(crate) fn find(text: &str, out: &mut Vec<(usize, usize)>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !token_byte(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && token_byte(bytes[i]) {
            i += 1;
        }
        if i - start >= MIN_TOKEN_CHARS
            && let Some(token) = text.get(start..i)
            && looks_random(token)
        {
            out.push((start, i));
        }
    }
}

fn looks_random(token: &str) -> bool {
    let (mut upper, mut lower, mut digit) = (false, false, false);
    for b in token.bytes() {
        upper |= b.is_ascii_uppercase();
        lower |= b.is_ascii_lowercase();
        digit |= b.is_ascii_digit();
    }
    upper
        && lower
        && digit
        && shannon_entropy(token) >= MIN_BITS_PER_CHAR
        && switches(token) >= MIN_CLASS_SWITCHES
        && sequential(token) <= MAX_SEQUENTIAL
}

fn class(b: u8) -> u8 {
    match b {
        b'A'..=b'Z' => 0,
        b'a'..=b'z' => 1,
        b'0'..=b'9' => 2,
        _ => 3,
    }
}

/// Fraction of neighbouring bytes of different classes.
fn switches(token: &str) -> f64 {
    let b = token.as_bytes();
    let pairs = b.len().saturating_sub(1).max(1);
    let n = b.windows(2).filter(|w| class(w[0]) != class(w[1])).count();
    n as f64 / pairs as f64
}

/// Fraction of neighbouring alphanumeric pairs that count up by one (case-blind).
fn sequential(token: &str) -> f64 {
    let (mut pairs, mut up) = (0usize, 0usize);
    for w in token.as_bytes().windows(2) {
        if w[0].is_ascii_alphanumeric() && w[1].is_ascii_alphanumeric() {
            pairs += 1;
            if w[1].to_ascii_lowercase() == w[0].to_ascii_lowercase().wrapping_add(1) {
                up += 1;
            }
        }
    }
    up as f64 / pairs.max(1) as f64
}

/// `(text, token that must be masked)`.
#[cfg(test)]
pub(crate) const POSITIVES: &[(&str, &str)] = &[
    (
        "curl -H 'X-Key: Zk3pQ9vT2mL8xR4nB7cW1sY6dF0hJ5gA' https://api.example",
        "Zk3pQ9vT2mL8xR4nB7cW1sY6dF0hJ5gA",
    ),
    (
        "export NEWPROVIDER=q8F2kD9mZ3xL7pR1vB6nT4wS0cH5jY2gE8aU",
        "q8F2kD9mZ3xL7pR1vB6nT4wS0cH5jY2gE8aU",
    ),
];

/// Texts that must stay as they are.
#[cfg(test)]
pub(crate) const NEAR_MISSES: &[&str] = &[
    "git show 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "crates/toolgate-audit/src/redact_tests.rs",
    "AbstractSingletonProxyFactoryBean2Impl",
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
    "node_modules/@types/react-dom/server.d.ts",
    "ThisIsALongCamelCaseIdentifierName42",
    "task-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
];
