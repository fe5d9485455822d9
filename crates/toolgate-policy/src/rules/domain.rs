//! `WebFetch(domain:…)` specifiers and host extraction from URLs.
//!
//! Hosts compare case-insensitively with a trailing `.` ignored. `*.example.com` matches
//! subdomains at any depth but not the apex; any other `*` stays inside one label
//! (`example.*` does not match `example.evil.com`); `domain:*` matches every host.

/// A compiled domain pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DomainPattern {
    /// Every host.
    Any,
    /// `*.suffix`: strict subdomains of `suffix`, any depth.
    Subdomains(String),
    /// Label-wise pattern; a label may contain `*` (within the label).
    Labels(Vec<String>),
}

impl DomainPattern {
    /// Compiles the text after `domain:`.
    pub fn new(raw: &str) -> Result<Self, String> {
        let host = normalize_host(raw.trim());
        if host.is_empty() {
            return Err("an empty domain; write domain:example.com or domain:*.example.com".into());
        }
        if host == "*" {
            return Ok(DomainPattern::Any);
        }
        if host.contains(['/', ':', '@', ' ']) {
            return Err(format!(
                "`{host}` is not a host name; write only the host, e.g. domain:example.com"
            ));
        }
        if let Some(suffix) = host.strip_prefix("*.")
            && !suffix.contains('*')
        {
            return Ok(DomainPattern::Subdomains(suffix.to_owned()));
        }
        Ok(DomainPattern::Labels(
            host.split('.').map(str::to_owned).collect(),
        ))
    }

    /// Whether `host` (already normalised) matches.
    pub fn matches(&self, host: &str) -> bool {
        match self {
            DomainPattern::Any => true,
            DomainPattern::Subdomains(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.ends_with('.') && head.len() > 1),
            DomainPattern::Labels(labels) => {
                let parts: Vec<&str> = host.split('.').collect();
                parts.len() == labels.len()
                    && labels.iter().zip(parts).all(|(l, p)| label_matches(l, p))
            }
        }
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
pub(crate) fn normalize_host(h: &str) -> String {
    h.trim_end_matches('.').to_ascii_lowercase()
}

/// The host of a URL (or a bare `host[:port][/path]`), normalised — parsed by the same
/// WHATWG parser the fetcher uses (`reqwest::Url`), so the host a rule is matched against is
/// the host that would be contacted: userinfo before the last `@` is dropped, `\` ends the
/// authority like `/` does, percent-escapes and full-width letters in the host are decoded
/// (IDNA), numeric IPv4 forms are read as the address they name, and a port is removed.
///
/// ```
/// # use toolgate_policy::url_host;
/// assert_eq!(url_host("https://Docs.Example.COM./x").as_deref(), Some("docs.example.com"));
/// assert_eq!(url_host("https://good.com@evil.com/").as_deref(), Some("evil.com"));
/// assert_eq!(url_host("https://evil.com\\@good.com/").as_deref(), Some("evil.com"));
/// assert_eq!(url_host("https://ev%69l.com/").as_deref(), Some("evil.com"));
/// assert_eq!(url_host("https://\u{ff45}vil\u{3002}com/").as_deref(), Some("evil.com"));
/// assert_eq!(url_host("http://0x7f000001/").as_deref(), Some("127.0.0.1"));
/// assert_eq!(url_host("http://[::1]:8080/").as_deref(), Some("[::1]"));
/// assert_eq!(url_host("example.com:8080/x").as_deref(), Some("example.com"));
/// ```
pub fn url_host(url: &str) -> Option<String> {
    let url = url.trim();
    let parsed = reqwest::Url::parse(url)
        .ok()
        .filter(|u| u.has_host())
        .or_else(|| {
            // A bare `host[:port][/path]` (or `//host`): read it as an https URL.
            let bare = url.strip_prefix("//").unwrap_or(url);
            reqwest::Url::parse(&format!("https://{bare}")).ok()
        })?;
    // Serialised as WHATWG does: a domain in ASCII (punycode), IPv4 dotted, IPv6 bracketed.
    let host = normalize_host(parsed.host_str()?);
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, h: &str) -> bool {
        DomainPattern::new(p).unwrap().matches(&normalize_host(h))
    }

    #[test]
    fn domain_rules() {
        assert!(m("example.com", "EXAMPLE.com."));
        assert!(!m("example.com", "www.example.com"));
        assert!(m("*.example.com", "a.b.example.com"));
        assert!(!m("*.example.com", "example.com"));
        assert!(!m("*.example.com", "badexample.com"));
        assert!(m("example.*", "example.org"));
        assert!(!m("example.*", "example.evil.com"));
        assert!(m("api-*.example.com", "api-v2.example.com"));
        assert!(!m("api-*.example.com", "api.v2.example.com"));
        assert!(m("*", "anything.at.all"));
        assert!(DomainPattern::new("https://x.com/").is_err());
    }
}
