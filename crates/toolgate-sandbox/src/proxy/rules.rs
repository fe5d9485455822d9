//! The proxy's lists, compiled once: `sandbox.network.allowedDomains` / `deniedDomains`.
//!
//! An entry is a domain pattern — the matcher of `WebFetch(domain:…)` rules,
//! [`DomainPattern`], so a rule and the proxy never disagree about a host — or an address
//! block (`10.1.2.0/24`, `192.168.1.5`, `[fd00::1]`), either with an optional port:
//! `git.corp.example:8443`, `10.0.0.0/8:5432`, `pypi.org:*`.
//!
//! **Ports.** An allowed entry without a port allows [`DEFAULT_PORTS`] (80 and 443): a
//! sandboxed command has no business with a host's SSH, database or admin ports unless the
//! user lists them. A denied entry without a port denies every port.
//!
//! **Addresses.** The proxy runs on the host's network, so what a name resolves to is
//! checked with [`AddrPolicy`] (loopback, private, link-local, ULA, carried IPv4 forms, the
//! host's own addresses: `toolgate_protocol::net`) unless the request was allowed
//! *explicitly*: by an entry naming that exact host (no `*`) or an address block containing
//! it. Address blocks in the allowed list also clear resolved addresses inside them, so
//! `["*.corp.example", "10.0.0.0/8"]` lets internal names reach the internal network.
//!
//! A malformed entry fails closed: in the allowed list it matches nothing; in the denied
//! list it refuses every request (and each refusal names it) until it is fixed.

use std::net::IpAddr;

use toolgate_protocol::net::{
    AddrEntry, AddrList, AddrPolicy, Cidr, DomainPattern, Host, carried_v4,
};

/// The ports an allowed entry without a port lets through: plain HTTP and HTTPS.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// Which ports an entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Port {
    /// None given: [`DEFAULT_PORTS`] when allowing, every port when denying.
    Unset,
    /// `:N`.
    One(u16),
    /// `:*`.
    Any,
}

/// What an entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Domain(DomainPattern),
    Block(Cidr),
}

/// One list entry as written and compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    text: String,
    target: Result<Target, String>,
    port: Port,
}

/// Splits a trailing `:PORT` or `:*` off (IPv6 blocks keep their colons; a port after one
/// needs brackets: `[fd00::1]:8080`).
fn split_port(text: &str) -> (&str, Result<Port, String>) {
    let port = |p: &str| match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(Port::One(n)),
        _ => Err(format!("`{p}` is not a port (1-65535 or *)")),
    };
    if let Some(body) = text.strip_prefix('[') {
        return match body.split_once(']') {
            Some((inner, "")) => (inner, Ok(Port::Unset)),
            Some((inner, tail)) => match tail.strip_prefix(':') {
                Some("*") => (inner, Ok(Port::Any)),
                Some(p) => (inner, port(p)),
                None => (inner, Err(format!("`{tail}` after `]`"))),
            },
            None => (text, Err("`[` without `]`".into())),
        };
    }
    match text.split_once(':') {
        Some((host, p)) if !p.contains(':') => match p {
            "*" => (host, Ok(Port::Any)),
            _ => (host, port(p)),
        },
        _ => (text, Ok(Port::Unset)),
    }
}

impl Entry {
    fn parse(raw: &str) -> Entry {
        let text = raw.trim();
        let (body, port) = split_port(text);
        let target = port.clone().and_then(|_| match Cidr::parse(body) {
            Ok(block) => Ok(Target::Block(block)),
            Err(_) => DomainPattern::parse(body)
                .map(Target::Domain)
                .map_err(|e| e.to_string()),
        });
        Entry {
            text: text.to_owned(),
            target,
            port: port.unwrap_or(Port::Unset),
        }
    }

    fn matches_host(&self, host: &Host) -> bool {
        match (&self.target, host) {
            (Ok(Target::Domain(p)), h) => p.matches(&h.match_text()),
            (Ok(Target::Block(b)), Host::Ip(ip)) => {
                b.contains(*ip) || carried_v4(*ip).is_some_and(|v4| b.contains(IpAddr::V4(v4)))
            }
            _ => false,
        }
    }

    fn allows_port(&self, port: u16) -> bool {
        match self.port {
            Port::Unset => DEFAULT_PORTS.contains(&port),
            Port::One(p) => p == port,
            Port::Any => true,
        }
    }

    fn denies_port(&self, port: u16) -> bool {
        match self.port {
            Port::Unset | Port::Any => true,
            Port::One(p) => p == port,
        }
    }

    /// Names one host or address block itself (no wildcard): the user chose that
    /// destination, whatever it resolves to.
    fn explicit(&self) -> bool {
        match &self.target {
            Ok(Target::Domain(p)) => p.is_exact(),
            Ok(Target::Block(_)) => true,
            Err(_) => false,
        }
    }

    /// The address-list entries this entry contributes to the address check.
    fn addr_entries(&self) -> Vec<AddrEntry> {
        let Ok(Target::Block(block)) = &self.target else {
            return Vec::new();
        };
        let ports: Vec<Option<u16>> = match self.port {
            Port::Unset => DEFAULT_PORTS.iter().copied().map(Some).collect(),
            Port::One(p) => vec![Some(p)],
            Port::Any => vec![None],
        };
        ports
            .into_iter()
            .map(|port| AddrEntry {
                block: *block,
                port,
            })
            .collect()
    }
}

/// The proxy's allow and deny lists (see the module doc for the entry syntax).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainRules {
    allowed: Vec<Entry>,
    denied: Vec<Entry>,
    /// The address check, clearing the allowed address blocks.
    addresses: AddrPolicy,
}

/// Which entry decided a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule<'a> {
    /// A denied entry matches host and port.
    Denied(&'a Entry),
    /// A denied entry does not parse: every request is refused.
    BrokenDeny(&'a Entry),
    /// An allowed entry matches host and port.
    Allowed(&'a Entry),
    /// Allowed entries match the host, but none allows the port.
    WrongPort(&'a Entry),
    /// No allowed entry matches the host.
    Unlisted,
}

impl DomainRules {
    /// Lists from the policy's network settings.
    pub fn new(allowed: &[String], denied: &[String]) -> Self {
        let allowed: Vec<Entry> = allowed.iter().map(|e| Entry::parse(e)).collect();
        let denied = denied.iter().map(|e| Entry::parse(e)).collect();
        let blocks = allowed.iter().flat_map(Entry::addr_entries).collect();
        DomainRules {
            addresses: AddrPolicy::new(AddrList::new(blocks)),
            allowed,
            denied,
        }
    }

    /// Entries that do not parse, with why (for `toolgate sandbox` and the docs' examples).
    pub fn problems(&self) -> Vec<String> {
        let list = |name: &str, entries: &[Entry]| -> Vec<String> {
            entries
                .iter()
                .filter_map(|e| {
                    e.target
                        .as_ref()
                        .err()
                        .map(|why| format!("{name} entry `{}`: {why}", e.text))
                })
                .collect()
        };
        let mut out = list("deniedDomains", &self.denied);
        out.extend(list("allowedDomains", &self.allowed));
        out
    }

    /// The rule that decides `host:port`: denied entries first, then allowed ones.
    pub(crate) fn rule_for(&self, host: &Host, port: u16) -> Rule<'_> {
        if let Some(e) = self.denied.iter().find(|e| e.target.is_err()) {
            return Rule::BrokenDeny(e);
        }
        if let Some(e) = self
            .denied
            .iter()
            .find(|e| e.matches_host(host) && e.denies_port(port))
        {
            return Rule::Denied(e);
        }
        let mut for_host = self.allowed.iter().filter(|e| e.matches_host(host));
        let Some(first) = for_host.next() else {
            return Rule::Unlisted;
        };
        if first.allows_port(port) {
            return Rule::Allowed(first);
        }
        match for_host.find(|e| e.allows_port(port)) {
            Some(e) => Rule::Allowed(e),
            None => Rule::WrongPort(first),
        }
    }

    /// `(allowed, reason)` for `host:port` by the lists alone (before any address check);
    /// a host that does not parse is refused.
    pub fn decide(&self, host: &str, port: u16) -> (bool, String) {
        match Host::parse(host) {
            Ok(h) => self.rule_for(&h, port).verdict(port),
            Err(e) => (false, e.to_string()),
        }
    }

    /// The address check for requests not allowed explicitly.
    pub(crate) fn addresses(&self) -> &AddrPolicy {
        &self.addresses
    }
}

impl Rule<'_> {
    /// `(allowed, reason)`.
    pub(crate) fn verdict(&self, port: u16) -> (bool, String) {
        match self {
            Rule::Denied(e) => (false, format!("matches deniedDomains `{}`", e.text)),
            Rule::BrokenDeny(e) => (
                false,
                format!(
                    "deniedDomains entry `{}` is malformed ({}); every request is refused until it is fixed",
                    e.text,
                    e.target.as_ref().err().map_or("", String::as_str)
                ),
            ),
            Rule::Allowed(e) => (true, format!("matches allowedDomains `{}`", e.text)),
            Rule::WrongPort(e) => (
                false,
                format!(
                    "port {port} is not allowed: allowedDomains `{}` allows {}; list `HOST:{port}` (or `HOST:*`) to allow it",
                    e.text,
                    match e.port {
                        Port::Unset => "ports 80 and 443".to_owned(),
                        Port::One(p) => format!("port {p}"),
                        Port::Any => "every port".to_owned(),
                    }
                ),
            ),
            Rule::Unlisted => (false, "not in sandbox.network.allowedDomains".to_owned()),
        }
    }

    /// Allowed by an entry naming the host or its address block itself, not by a wildcard.
    pub(crate) fn allows_explicitly(&self) -> bool {
        matches!(self, Rule::Allowed(e) if e.explicit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(allowed: &[&str], denied: &[&str], host: &str, port: u16) -> bool {
        let own = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        DomainRules::new(&own(allowed), &own(denied))
            .decide(host, port)
            .0
    }

    #[test]
    fn entries_ports_and_addresses() {
        let allow = [
            "pypi.org",
            "*.github.com",
            "git.corp.example:8443",
            "10.1.2.0/24:*",
        ];
        let deny = ["evil.github.com"];
        assert!(decide(&allow, &deny, "pypi.org", 443));
        assert!(decide(&allow, &deny, "PyPI.org.", 80));
        assert!(!decide(&allow, &deny, "pypi.org", 22));
        assert!(!decide(&allow, &deny, "files.pypi.org", 443));
        assert!(decide(&allow, &deny, "api.github.com", 443));
        assert!(!decide(&allow, &deny, "github.com", 443));
        assert!(!decide(&allow, &deny, "evil.github.com", 443));
        assert!(decide(&allow, &deny, "git.corp.example", 8443));
        assert!(!decide(&allow, &deny, "git.corp.example", 443));
        assert!(decide(&allow, &deny, "10.1.2.3", 5432));
        assert!(decide(&allow, &deny, "0x0a010203", 5432));
        assert!(decide(&allow, &deny, "::ffff:10.1.2.3", 22));
        assert!(!decide(&allow, &deny, "10.1.3.1", 443));
        // Numeric look-alikes are never names.
        assert!(!decide(&["*"], &[], "1.2.3.256", 443));
        // A deny with a port denies only that port; without one, every port.
        assert!(!decide(&["*"], &["a.test:8080"], "a.test", 8080));
        assert!(decide(&["*:*"], &["a.test:8080"], "a.test", 8081));
        assert!(!decide(&["*:*"], &["a.test"], "a.test", 8081));
        // IPv6 blocks and bracketed ports.
        assert!(decide(&["[fd00::1]:8080"], &[], "fd00::1", 8080));
        assert!(decide(&["fd00::/8"], &[], "[fd00::2]", 443));
        assert!(!decide(&["fd00::/8"], &[], "fd00::2", 8080));
    }

    #[test]
    fn malformed_entries_fail_closed() {
        assert!(!decide(&["*"], &["bad:port"], "pypi.org", 443));
        let r = DomainRules::new(&["x.com:0".into(), "a/b".into()], &[]);
        assert_eq!(r.problems().len(), 2, "{:?}", r.problems());
        assert!(!r.decide("x.com", 443).0);
        let (_, why) = DomainRules::new(&["*".into()], &["[::1".into()]).decide("a.test", 443);
        assert!(why.contains("malformed"), "{why}");
    }

    #[test]
    fn explicit_entries() {
        let r = DomainRules::new(
            &[
                "exact.test".into(),
                "*.wild.test".into(),
                "10.0.0.0/8".into(),
                "*".into(),
            ],
            &[],
        );
        let explicit = |host: &str| {
            let h = Host::parse(host).unwrap_or_else(|e| panic!("{e}"));
            r.rule_for(&h, 443).allows_explicitly()
        };
        assert!(explicit("exact.test"));
        assert!(explicit("10.9.8.7"));
        assert!(!explicit("a.wild.test"));
        assert!(!explicit("other.test"));
        assert!(!explicit("127.0.0.1"));
        let blocks = r.addresses();
        assert!(
            blocks
                .check("10.1.1.1:443".parse().unwrap_or_else(|e| panic!("{e}")))
                .is_ok()
        );
        assert!(
            blocks
                .check("10.1.1.1:22".parse().unwrap_or_else(|e| panic!("{e}")))
                .is_err()
        );
        assert!(
            blocks
                .check("127.0.0.1:443".parse().unwrap_or_else(|e| panic!("{e}")))
                .is_err()
        );
    }
}
