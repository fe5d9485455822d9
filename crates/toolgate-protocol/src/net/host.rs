//! Reading a host the way the network stack will: every IPv4 spelling is the address it names.
//!
//! URL parsers (WHATWG) and `inet_aton` — which `getaddrinfo` falls back to — accept IPv4
//! literals in decimal (`2130706433`), octal (`0177.0.0.1`), hex (`0x7f.1`) and short
//! (`127.1`) forms. A check that read such a host as a *name* would let it through to a
//! resolver that then connects to `127.0.0.1`. [`Host::parse`] follows the WHATWG IPv4 parser
//! (a superset of `inet_aton`'s numeric forms): a host whose last label is numeric is an IPv4
//! address or an error, never a name.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::NetError;

/// A host: an address, or a name to resolve.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// An address literal (any spelling), canonical.
    Ip(IpAddr),
    /// A DNS name: lower-case ASCII letters, digits, `-`, `_` and `.`, no trailing dot.
    Name(String),
}

impl Host {
    /// Reads a host as it appears in a URL or a `CONNECT` line (IPv6 with or without
    /// brackets). Names must already be ASCII (IDNA `xn--` form).
    ///
    /// ```
    /// use toolgate_protocol::net::Host;
    /// for spelling in ["127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0x7F000001."] {
    ///     assert_eq!(Host::parse(spelling).unwrap(), Host::Ip("127.0.0.1".parse().unwrap()));
    /// }
    /// assert_eq!(Host::parse("[::1]").unwrap(), Host::Ip("::1".parse().unwrap()));
    /// assert_eq!(Host::parse("Example.COM.").unwrap(), Host::Name("example.com".into()));
    /// assert!(Host::parse("1.2.3.256").is_err());
    /// assert!(Host::parse("example.123").is_err());
    /// ```
    pub fn parse(raw: &str) -> Result<Host, NetError> {
        let bad = |why: &str| NetError::BadHost {
            host: raw.to_owned(),
            why: why.to_owned(),
        };
        if let Some(inner) = raw.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| bad("an IPv6 address opened with `[` but not closed"))?;
            return inner
                .parse::<Ipv6Addr>()
                .map(|a| Host::Ip(IpAddr::V6(a)))
                .map_err(|_| bad("not an IPv6 address"));
        }
        if raw.contains(':') {
            return raw
                .parse::<Ipv6Addr>()
                .map(|a| Host::Ip(IpAddr::V6(a)))
                .map_err(|_| bad("a name cannot contain `:`"));
        }
        let host = raw.strip_suffix('.').unwrap_or(raw).to_ascii_lowercase();
        if host.is_empty() {
            return Err(bad("it is empty"));
        }
        if !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err(bad(
                "only ASCII letters, digits, `-`, `_` and `.` may appear in a host name (write international names in their xn-- form)",
            ));
        }
        if host.split('.').any(str::is_empty) {
            return Err(bad("it has an empty label"));
        }
        if ends_in_number(&host) {
            return parse_ipv4(&host)
                .map(|a| Host::Ip(IpAddr::V4(a)))
                .ok_or_else(|| bad("it ends in a number but is not an IPv4 address"));
        }
        Ok(Host::Name(host))
    }

    /// The text domain patterns are matched against: a name, a dotted IPv4 address, or a
    /// bracketed IPv6 address (as URL parsers serialise hosts).
    pub fn match_text(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ip(IpAddr::V4(a)) => write!(f, "{a}"),
            Host::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Host::Name(n) => f.write_str(n),
        }
    }
}

/// WHATWG "ends in a number": the last label is all digits, or `0x` followed by hex digits.
fn ends_in_number(host: &str) -> bool {
    let last = host.rsplit('.').next().unwrap_or_default();
    if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    last.strip_prefix("0x")
        .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// One part: `0x…` hex (empty is 0), `0…` octal, else decimal; `None` if not a number or
/// beyond `u32` (every valid part fits).
fn parse_part(part: &str) -> Option<u64> {
    let (digits, radix) = if let Some(hex) = part.strip_prefix("0x") {
        (hex, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (&part[1..], 8)
    } else {
        (part, 10)
    };
    if digits.is_empty() {
        return (radix != 10).then_some(0);
    }
    u64::from_str_radix(digits, radix)
        .ok()
        .filter(|n| *n <= u64::from(u32::MAX))
}

/// The WHATWG IPv4 parser: one to four parts; all but the last at most 255, the last fills
/// the remaining bytes.
fn parse_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let numbers: Vec<u64> = parts.iter().map(|p| parse_part(p)).collect::<Option<_>>()?;
    let (last, head) = numbers.split_last()?;
    if head.iter().any(|n| *n > 255) {
        return None;
    }
    let room = 8 * (5 - numbers.len() as u32);
    if *last >= 1u64 << room {
        return None;
    }
    let mut addr = *last;
    for (i, n) in head.iter().enumerate() {
        addr += n << (8 * (3 - i as u32));
    }
    u32::try_from(addr).ok().map(Ipv4Addr::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spellings with the address they name; WHATWG's URL parser reads them the same way.
    const SPELLINGS: &[(&str, &str)] = &[
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0X7F000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        ("2852039166", "169.254.169.254"),
        ("169.254.43518", "169.254.169.254"),
        ("10.0x10203", "10.1.2.3"),
        ("4294967295", "255.255.255.255"),
    ];

    #[test]
    fn every_spelling_is_the_address() {
        for (spelling, addr) in SPELLINGS {
            let want: IpAddr = addr.parse().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(Host::parse(spelling), Ok(Host::Ip(want)), "{spelling}");
        }
    }

    #[test]
    fn numeric_look_alikes_are_errors_not_names() {
        for bad in [
            "1.2.3.256",
            "256.1",
            "4294967296",
            "1.2.3.4.5",
            "09",
            "08.1.1.1",
            "example.123",
            "example.0x1",
            "99999999999999999999999",
        ] {
            assert!(
                matches!(Host::parse(bad), Err(NetError::BadHost { .. })),
                "{bad}: {:?}",
                Host::parse(bad)
            );
        }
    }

    #[test]
    fn names_and_ipv6() {
        assert_eq!(
            Host::parse("API.Example.com."),
            Ok(Host::Name("api.example.com".into()))
        );
        // A label that is not all digits is a name (`1e2` is no number here or in inet_aton).
        assert_eq!(Host::parse("1e2.com"), Ok(Host::Name("1e2.com".into())));
        assert_eq!(
            Host::parse("0x.example"),
            Ok(Host::Name("0x.example".into()))
        );
        // `0x` followed by a non-hex digit is no number for WHATWG or inet_aton either.
        assert_eq!(Host::parse("0x1g"), Ok(Host::Name("0x1g".into())));
        for v6 in ["::1", "[::1]", "[::ffff:127.0.0.1]", "fd00:ec2::254"] {
            assert!(
                matches!(Host::parse(v6), Ok(Host::Ip(IpAddr::V6(_)))),
                "{v6}"
            );
        }
        for bad in [
            "",
            ".",
            "a..b",
            "exa mple.com",
            "evil.com\r\n",
            "ex%61mple.com",
            "例え.jp",
            "[::1",
            "a:b",
            "[1.2.3.4]",
        ] {
            assert!(Host::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Host::parse("[::1]").map(|h| h.match_text()),
            Ok("[::1]".to_owned())
        );
    }
}
