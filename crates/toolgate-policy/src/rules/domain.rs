//! `WebFetch(domain:…)` specifiers and host extraction from URLs.
//!
//! The pattern itself is [`toolgate_protocol::net::DomainPattern`], the one matcher shared
//! with the sandbox proxy's domain lists and WebFetch: hosts compare case-insensitively with a
//! trailing `.` ignored; `*.example.com` matches subdomains at any depth but not the apex; any
//! other `*` stays inside one label (`example.*` does not match `example.evil.com`);
//! `domain:*` matches every host.

pub(crate) use toolgate_protocol::net::DomainPattern;
use toolgate_protocol::net::normalize_host;

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

    #[test]
    fn rules_and_urls_read_hosts_alike() {
        // A rule pattern matches the host url_host reads, whatever the URL's spelling.
        let p = DomainPattern::parse("*.example.com").unwrap_or_else(|e| panic!("{e}"));
        for url in [
            "https://A.Example.COM./x",
            "https://user@a.example.com:8443/",
        ] {
            assert!(url_host(url).is_some_and(|h| p.matches(&h)), "{url}");
        }
        let ip = DomainPattern::parse("127.0.0.1").unwrap_or_else(|e| panic!("{e}"));
        assert!(url_host("http://0x7f.1/").is_some_and(|h| ip.matches(&h)));
    }
}
