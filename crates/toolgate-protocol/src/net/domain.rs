//! Domain patterns, with Claude Code's `WebFetch(domain:…)` semantics: the one matcher for
//! permission rules, the sandbox proxy's `allowedDomains` / `deniedDomains` and WebFetch's
//! plain-http list, so that none of them can disagree about which host a pattern names.
//!
//! Hosts compare case-insensitively with a trailing `.` ignored. `*.example.com` matches
//! subdomains at any depth but not the apex; any other `*` stays inside one label
//! (`example.*` does not match `example.evil.com`); `*` alone matches every host.

use super::NetError;

/// A compiled domain pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainPattern(Kind);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// Every host.
    Any,
    /// `*.suffix`: strict subdomains of `suffix`, any depth.
    Subdomains(String),
    /// Label-wise pattern; a label may contain `*` (within the label).
    Labels(Vec<String>),
}

impl DomainPattern {
    /// Compiles a pattern (the text after `domain:`).
    ///
    /// ```
    /// use toolgate_protocol::net::DomainPattern;
    /// let p = DomainPattern::parse("*.example.com").unwrap();
    /// assert!(p.matches("a.b.example.com") && !p.matches("example.com"));
    /// assert!(DomainPattern::parse("https://example.com/").is_err());
    /// ```
    pub fn parse(raw: &str) -> Result<Self, NetError> {
        let host = normalize_host(raw.trim());
        let bad = |why: String| NetError::BadPattern {
            pattern: raw.to_owned(),
            why,
        };
        if host.is_empty() {
            return Err(bad(
                "an empty domain; write domain:example.com or domain:*.example.com".into(),
            ));
        }
        if host == "*" {
            return Ok(DomainPattern(Kind::Any));
        }
        if host.contains(['/', ':', '@', ' ']) {
            return Err(bad(format!(
                "`{host}` is not a host name; write only the host, e.g. domain:example.com"
            )));
        }
        if let Some(suffix) = host.strip_prefix("*.")
            && !suffix.contains('*')
        {
            return Ok(DomainPattern(Kind::Subdomains(suffix.to_owned())));
        }
        Ok(DomainPattern(Kind::Labels(
            host.split('.').map(str::to_owned).collect(),
        )))
    }

    /// Whether `host` matches; `host` is normalised here (case, trailing dot).
    pub fn matches(&self, host: &str) -> bool {
        // Hosts usually arrive normalised (rules match many per decision): no copy then.
        let host: std::borrow::Cow<'_, str> =
            if host.ends_with('.') || host.bytes().any(|b| b.is_ascii_uppercase()) {
                normalize_host(host).into()
            } else {
                host.into()
            };
        let host = host.as_ref();
        match &self.0 {
            Kind::Any => true,
            Kind::Subdomains(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.ends_with('.') && head.len() > 1),
            Kind::Labels(labels) => {
                let parts: Vec<&str> = host.split('.').collect();
                parts.len() == labels.len()
                    && labels.iter().zip(parts).all(|(l, p)| label_matches(l, p))
            }
        }
    }

    /// Whether the pattern names one host exactly (no `*` anywhere): listing a host this way
    /// is an explicit choice of that host, which a wildcard is not.
    pub fn is_exact(&self) -> bool {
        matches!(&self.0, Kind::Labels(labels) if labels.iter().all(|l| !l.contains('*')))
    }
}

fn label_matches(pattern: &str, label: &str) -> bool {
    if !pattern.contains('*') {
        return pattern == label;
    }
    let pieces: Vec<&str> = pattern.split('*').collect();
    let mut rest = label;
    for (i, piece) in pieces.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(piece) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == pieces.len() - 1 {
            return rest.len() >= piece.len() && rest.ends_with(piece);
        } else {
            match rest.find(piece) {
                Some(at) => rest = &rest[at + piece.len()..],
                None => return false,
            }
        }
    }
    rest.is_empty()
}

/// Lower-cases and drops a trailing dot.
pub fn normalize_host(h: &str) -> String {
    h.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each pattern with hosts it must match and near misses it must not.
    const PATTERN_EXAMPLES: &[(&str, &[&str], &[&str])] = &[
        (
            "example.com",
            &["example.com", "EXAMPLE.com."],
            &["www.example.com", "example.com.evil.test", "badexample.com"],
        ),
        (
            "*.example.com",
            &["a.example.com", "a.b.example.com"],
            &["example.com", "badexample.com", "example.com.evil.test"],
        ),
        (
            "example.*",
            &["example.org"],
            &["example.evil.com", "www.example.org"],
        ),
        (
            "api-*.example.com",
            &["api-v2.example.com", "api-.example.com"],
            &["api.v2.example.com", "web-v2.example.com"],
        ),
        ("*", &["anything.at.all", "127.0.0.1"], &[]),
        ("127.0.0.1", &["127.0.0.1"], &["127.0.0.10", "1.127.0.0.1"]),
    ];

    #[test]
    fn pattern_examples() {
        for (pattern, hits, misses) in PATTERN_EXAMPLES {
            let p = DomainPattern::parse(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
            for h in *hits {
                assert!(p.matches(h), "{pattern} must match {h}");
            }
            for h in *misses {
                assert!(!p.matches(h), "{pattern} must not match {h}");
            }
        }
        assert!(DomainPattern::parse("https://x.com/").is_err());
        assert!(DomainPattern::parse("x.com:443").is_err());
        assert!(DomainPattern::parse(" ").is_err());
        assert!(DomainPattern::parse("example.com").is_ok_and(|p| p.is_exact()));
        assert!(DomainPattern::parse("*.example.com").is_ok_and(|p| !p.is_exact()));
        assert!(DomainPattern::parse("api-*.x.com").is_ok_and(|p| !p.is_exact()));
        assert!(DomainPattern::parse("*").is_ok_and(|p| !p.is_exact()));
    }
}
