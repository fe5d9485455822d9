//! Which URL is fetched and where it may connect: URL rules (absolute, http(s), no
//! credentials, http upgraded), then resolution and the shared address check on every
//! address, at connect time, for every hop.

use std::net::SocketAddr;

use reqwest::Url;
use toolgate_protocol::net::{AddrPolicy, Host};

use crate::config::{MAX_URL_CHARS, WebFetchConfig};
use crate::error::WebError;

/// A URL ready to be requested, with the host as the network stack will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The URL (http upgraded, fragment dropped).
    pub url: Url,
    /// Its host.
    pub host: Host,
    /// Its port (explicit or the scheme's).
    pub port: u16,
}

/// Reads the model's URL: absolute, `http`/`https`, no user or password; `http` becomes
/// `https` unless the host is in `allowHttp`.
pub(crate) fn parse_url(raw: &str, config: &WebFetchConfig) -> Result<Target, WebError> {
    let raw = raw.trim();
    if raw.chars().count() > MAX_URL_CHARS {
        return Err(WebError::BadInput(format!(
            "the URL is longer than {MAX_URL_CHARS} characters; fetch a shorter URL"
        )));
    }
    let url = Url::parse(raw).map_err(|e| {
        WebError::BadInput(match e {
            url_error if url_error.to_string().contains("relative URL") => format!(
                "`{raw}` is not an absolute URL; send a full URL such as https://example.com/page"
            ),
            other => format!("`{raw}` is not a valid URL ({other})"),
        })
    })?;
    target(url, config)
}

/// Applies the URL rules to an already parsed URL (the first one or a redirect's).
pub(crate) fn target(mut url: Url, config: &WebFetchConfig) -> Result<Target, WebError> {
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(WebError::BadInput(format!(
                "`{other}:` URLs are not fetched; WebFetch fetches http:// and https:// URLs only"
            )));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(WebError::BadInput(
            "the URL carries a user name or password; WebFetch never sends credentials — remove them from the URL".into(),
        ));
    }
    // The WHATWG parser has already read numeric IPv4 forms as addresses; Host::parse reads
    // its serialisation (dotted IPv4, bracketed IPv6, ASCII names) the same way.
    let host = match url.host_str() {
        Some(h) => Host::parse(h).map_err(|e| WebError::BadInput(format!("{url}: {e}")))?,
        None => return Err(WebError::BadInput(format!("`{url}` has no host"))),
    };
    url.set_fragment(None);
    if url.scheme() == "http"
        && !config
            .allow_http
            .iter()
            .any(|p| p.matches(&host.match_text()))
    {
        // Infallible between the two special schemes; if it ever failed, the URL stays http
        // and the request would go out unencrypted, so refuse instead.
        url.set_scheme("https")
            .map_err(|()| WebError::BadInput(format!("{url} could not be upgraded to https")))?;
    }
    let port = url
        .port_or_known_default()
        .ok_or_else(|| WebError::BadInput(format!("`{url}` has no port and no default one")))?;
    Ok(Target { url, host, port })
}

/// The addresses `target` may be reached at: the literal, the settings' `resolve` answer or
/// DNS — every one checked; one refused address refuses the fetch.
pub(crate) async fn checked_addresses(
    target: &Target,
    config: &WebFetchConfig,
    policy: &AddrPolicy,
) -> Result<Vec<SocketAddr>, WebError> {
    let port = target.port;
    let addrs: Vec<SocketAddr> = match &target.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
        Host::Name(name) => match config.resolve.get(name) {
            Some(ips) => ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect(),
            None => tokio::net::lookup_host((name.as_str(), port))
                .await
                .map_err(|e| WebError::Failed(format!("`{name}` does not resolve ({e})")))?
                .collect(),
        },
    };
    if addrs.is_empty() {
        return Err(WebError::Failed(format!(
            "`{}` resolves to no address",
            target.host
        )));
    }
    check(target, &addrs, policy)?;
    Ok(addrs)
}

/// The address check, with a message naming the URL and how to allow it.
pub(crate) fn check(
    target: &Target,
    addrs: &[SocketAddr],
    policy: &AddrPolicy,
) -> Result<(), WebError> {
    policy.check_all(addrs).map_err(|refusal| {
        let via = match &target.host {
            Host::Name(n) => format!("`{n}` resolves to {}, and ", refusal.addr()),
            Host::Ip(_) => String::new(),
        };
        WebError::Refused(format!(
            "{}: {via}{refusal}. WebFetch does not reach internal addresses; if this server is meant to be reached, the user can list it in webFetch.allowPrivate (e.g. \"{}\")",
            target.url,
            SocketAddr::new(refusal.addr(), target.port)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn t(raw: &str) -> Result<Target, WebError> {
        parse_url(raw, &WebFetchConfig::default())
    }

    #[test]
    fn url_rules() {
        let up = t("http://Example.com/a#frag").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(up.url.as_str(), "https://example.com/a");
        assert_eq!(up.port, 443);
        for (raw, ip) in [
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://2130706433/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://127.1/", "127.0.0.1"),
            ("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1"),
        ] {
            let want: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(t(raw).map(|x| x.host), Ok(Host::Ip(want)), "{raw}");
        }
        for bad in [
            "example.com/page",
            "/relative",
            "file:///etc/passwd",
            "gopher://x/",
            "ftp://x/",
            "https://user:pw@example.com/",
            "https://user@example.com/",
            "https://1.2.3.256/",
            "not a url",
        ] {
            assert!(
                matches!(t(bad), Err(WebError::BadInput(_))),
                "{bad}: {:?}",
                t(bad)
            );
        }
        let long = format!("https://e.test/{}", "a".repeat(MAX_URL_CHARS));
        assert!(matches!(t(&long), Err(WebError::BadInput(_))));
        let plain = WebFetchConfig {
            allow_http: vec![
                toolgate_protocol::net::DomainPattern::parse("127.0.0.1")
                    .unwrap_or_else(|e| panic!("{e}")),
            ],
            ..WebFetchConfig::default()
        };
        let kept = parse_url("http://127.0.0.1:8080/x", &plain).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kept.url.as_str(), "http://127.0.0.1:8080/x");
    }
}
