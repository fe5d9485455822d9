//! Explicit allow lists of addresses: what a user lets through the address check.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use super::{Cidr, NetError};

/// An address or block, with or without one port: `127.0.0.1:8080`, `[::1]:8080`,
/// `10.1.2.0/24`, `fd00::/8`, `192.168.1.5`.
///
/// Only addresses, never names: a name's answer can change between the check and the next
/// lookup (DNS rebinding), an address cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddrEntry {
    /// The block (a single address is a /32 or /128).
    pub block: Cidr,
    /// The one port allowed, or every port.
    pub port: Option<u16>,
}

impl AddrEntry {
    /// Reads one entry.
    ///
    /// ```
    /// use toolgate_protocol::net::AddrEntry;
    /// let e = AddrEntry::parse("[::1]:8080").unwrap();
    /// assert!(e.allows("[::1]:8080".parse().unwrap()));
    /// assert!(!e.allows("[::1]:8081".parse().unwrap()));
    /// assert!(AddrEntry::parse("localhost:8080").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<AddrEntry, NetError> {
        let bad = |why: String| NetError::BadAddr {
            entry: text.to_owned(),
            why,
        };
        let t = text.trim();
        if let Ok(sock) = t.parse::<SocketAddr>() {
            return Ok(AddrEntry {
                block: Cidr::parse(&sock.ip().to_string()).map_err(bad)?,
                port: Some(sock.port()),
            });
        }
        if t.contains('/') || t.parse::<IpAddr>().is_ok() {
            return Ok(AddrEntry {
                block: Cidr::parse(t).map_err(bad)?,
                port: None,
            });
        }
        Err(bad(match t.rsplit_once(':') {
            Some((_, port)) if port.parse::<u16>().is_err() => {
                format!("`{port}` is not a port number")
            }
            _ => "only IP addresses are accepted here, not names".to_owned(),
        }))
    }

    /// Whether the entry lets `addr` through.
    pub fn allows(&self, addr: SocketAddr) -> bool {
        self.port.is_none_or(|p| p == addr.port()) && self.block.contains(addr.ip())
    }

    /// Whether the entry names `ip` on some port.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.block.contains(ip)
    }
}

impl fmt::Display for AddrEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.block, self.port) {
            (Cidr::V4(a, 32), Some(p)) => write!(f, "{a}:{p}"),
            (Cidr::V6(a, 128), Some(p)) => write!(f, "[{a}]:{p}"),
            (Cidr::V4(a, 32), None) => write!(f, "{a}"),
            (Cidr::V6(a, 128), None) => write!(f, "{a}"),
            (block, Some(p)) => write!(f, "{block} port {p}"),
            (block, None) => write!(f, "{block}"),
        }
    }
}

/// A list of [`AddrEntry`]; an address is allowed when any entry allows it. IPv6 forms
/// carrying an IPv4 address (`::ffff:127.0.0.1`) are allowed by an entry for that IPv4
/// address too, since that is where they lead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddrList(Vec<AddrEntry>);

impl AddrList {
    /// Reads every entry; the first bad one is the error.
    pub fn parse(entries: &[String]) -> Result<AddrList, NetError> {
        entries
            .iter()
            .map(|e| AddrEntry::parse(e))
            .collect::<Result<_, _>>()
            .map(AddrList)
    }

    /// A list of already-parsed entries.
    pub fn new(entries: Vec<AddrEntry>) -> AddrList {
        AddrList(entries)
    }

    /// The entries.
    pub fn entries(&self) -> &[AddrEntry] {
        &self.0
    }

    /// Whether no entry is listed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entry that allows `addr` (or the IPv4 address it carries), if any.
    pub fn allowing(&self, addr: SocketAddr) -> Option<&AddrEntry> {
        let carried = super::ranges::carried_v4(addr.ip())
            .map(|v4| SocketAddr::new(IpAddr::V4(v4), addr.port()));
        self.0
            .iter()
            .find(|e| e.allows(addr) || carried.is_some_and(|c| e.allows(c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries() {
        let list = AddrList::parse(&[
            "127.0.0.1:8080".into(),
            "10.1.2.0/24".into(),
            "fd00::/8".into(),
            " 192.168.1.5 ".into(),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let allowed = |a: &str| list.allowing(a.parse().unwrap_or_else(|e| panic!("{e}")));
        assert!(allowed("127.0.0.1:8080").is_some());
        assert!(allowed("[::ffff:127.0.0.1]:8080").is_some());
        assert!(allowed("127.0.0.1:8081").is_none());
        assert!(allowed("10.1.2.200:22").is_some());
        assert!(allowed("10.1.3.1:80").is_none());
        assert!(allowed("[fd00:ec2::254]:80").is_some());
        assert!(allowed("192.168.1.5:443").is_some());
        for bad in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:http",
            "127.0.0.1:70000",
            "10.0.0.0/40",
            "0x7f.1:80",
            "",
        ] {
            assert!(
                matches!(AddrEntry::parse(bad), Err(NetError::BadAddr { .. })),
                "{bad}"
            );
        }
        let shown: Vec<String> = list.entries().iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["127.0.0.1:8080", "10.1.2.0/24", "fd00::/8", "192.168.1.5"]
        );
    }
}
