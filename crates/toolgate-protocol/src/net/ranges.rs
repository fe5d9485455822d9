//! The refused destination ranges: the table, with examples, and the lookup.
//!
//! A row names a block, why it is refused, and addresses that must fall in it and must not
//! be refused at all (near misses just outside). The IPv6 rows that *carry* an IPv4 address
//! (mapped, translated, compatible, NAT64, 6to4) are not refused for themselves: the carried
//! address is checked against the IPv4 rows, so `::ffff:127.0.0.1` is loopback and
//! `64:ff9b::8.8.8.8` is as public as `8.8.8.8`. IPv6 outside global unicast (`2000::/3`) is
//! refused as a whole by the last rows, so a block the table does not name is not a way in.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address block: a base address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cidr {
    /// An IPv4 block.
    V4(Ipv4Addr, u8),
    /// An IPv6 block.
    V6(Ipv6Addr, u8),
}

impl Cidr {
    /// Whether `ip` is inside the block (an IPv4 block never contains an IPv6 address; the
    /// address check unwraps IPv6 forms first).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (*self, ip) {
            (Cidr::V4(base, len), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
                u32::from(base) & mask == u32::from(ip) & mask
            }
            (Cidr::V6(base, len), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
                u128::from(base) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }

    /// Reads `10.0.0.0/8`, `fd00::/8`, or a single address (a /32 or /128). Host bits below
    /// the prefix are cleared (`10.1.2.3/24` is `10.1.2.0/24`).
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let (addr, len) = match text.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (text, None),
        };
        let ip: IpAddr = addr
            .parse()
            .map_err(|_| format!("`{addr}` is not an IP address"))?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => max,
            Some(l) => l
                .parse::<u8>()
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(|| format!("`/{l}` is not a prefix length from 0 to {max}"))?,
        };
        let block = match ip {
            IpAddr::V4(v4) => Cidr::V4(v4, len),
            IpAddr::V6(v6) => Cidr::V6(v6, len),
        };
        Ok(block.masked())
    }

    fn masked(self) -> Cidr {
        match self {
            Cidr::V4(base, len) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
                Cidr::V4(Ipv4Addr::from(u32::from(base) & mask), len)
            }
            Cidr::V6(base, len) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
                Cidr::V6(Ipv6Addr::from(u128::from(base) & mask), len)
            }
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cidr::V4(a, l) => write!(f, "{a}/{l}"),
            Cidr::V6(a, l) => write!(f, "{a}/{l}"),
        }
    }
}

/// Where an IPv6 form carries an IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// In the last 32 bits (mapped, translated, compatible, NAT64).
    Low32,
    /// In bits 16..48 (6to4, `2002:AABB:CCDD::`).
    SixToFour,
}

impl Carried {
    fn extract(self, v6: Ipv6Addr) -> Ipv4Addr {
        let bits = u128::from(v6);
        let shift = match self {
            Carried::Low32 => 0,
            Carried::SixToFour => 80,
        };
        // Truncation is the point: the 32 bits at `shift`.
        Ipv4Addr::from((bits >> shift) as u32)
    }
}

/// One row of [`REFUSED_RANGES`].
#[derive(Debug, PartialEq, Eq)]
pub struct RefusedRange {
    /// The block.
    pub block: Cidr,
    /// Short name (`loopback`, `link-local`, …).
    pub name: &'static str,
    /// Why a model must not reach it.
    pub why: &'static str,
    /// For an IPv6 form carrying an IPv4 address: where. The row then refuses only what the
    /// carried address's own row refuses.
    pub carries: Option<Carried>,
    /// Addresses this row refuses (for a carrier: refused because of what they carry).
    pub examples: &'static [&'static str],
    /// Look-alikes just outside, which no row refuses.
    pub near_misses: &'static [&'static str],
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Cidr {
    Cidr::V4(Ipv4Addr::new(a, b, c, d), len)
}

const fn v6(segments: [u16; 8], len: u8) -> Cidr {
    let [a, b, c, d, e, f, g, h] = segments;
    Cidr::V6(Ipv6Addr::new(a, b, c, d, e, f, g, h), len)
}

const fn row(
    block: Cidr,
    name: &'static str,
    why: &'static str,
    examples: &'static [&'static str],
    near_misses: &'static [&'static str],
) -> RefusedRange {
    RefusedRange {
        block,
        name,
        why,
        carries: None,
        examples,
        near_misses,
    }
}

const fn carrier(
    block: Cidr,
    name: &'static str,
    carries: Carried,
    examples: &'static [&'static str],
    near_misses: &'static [&'static str],
) -> RefusedRange {
    RefusedRange {
        block,
        name,
        why: "carries an IPv4 address, which is checked instead",
        carries: Some(carries),
        examples,
        near_misses,
    }
}

/// Every refused block, in lookup order (the first row containing an address decides).
pub static REFUSED_RANGES: &[RefusedRange] = &[
    // IPv4 (RFC 6890 and the IANA special-purpose registry: not globally reachable).
    row(
        v4(0, 0, 0, 0, 8),
        "this-network",
        "0.0.0.0/8 means this host on this network: connecting to 0.0.0.0 reaches local services",
        &["0.0.0.0", "0.1.2.3", "0.255.255.255"],
        &["1.0.0.1"],
    ),
    row(
        v4(10, 0, 0, 0, 8),
        "private",
        "RFC 1918 private network",
        &["10.0.0.1", "10.255.255.255"],
        &["9.255.255.255", "11.0.0.0"],
    ),
    row(
        v4(100, 64, 0, 0, 10),
        "shared (CGNAT)",
        "RFC 6598 carrier-grade NAT space, used inside clouds (Alibaba's metadata service is 100.100.100.200)",
        &["100.64.0.1", "100.100.100.200", "100.127.255.255"],
        &["100.63.255.255", "100.128.0.0"],
    ),
    row(
        v4(127, 0, 0, 0, 8),
        "loopback",
        "this host itself",
        &["127.0.0.1", "127.1.2.3", "127.255.255.254"],
        &["126.255.255.255", "128.0.0.1"],
    ),
    row(
        v4(169, 254, 0, 0, 16),
        "link-local",
        "the local link, where clouds serve instance metadata and credentials (169.254.169.254, ECS 169.254.170.2)",
        &["169.254.169.254", "169.254.170.2", "169.254.0.1"],
        &["169.253.255.255", "169.255.0.0"],
    ),
    row(
        v4(172, 16, 0, 0, 12),
        "private",
        "RFC 1918 private network",
        &["172.16.0.1", "172.31.255.255"],
        &["172.15.255.255", "172.32.0.0"],
    ),
    row(
        v4(192, 0, 0, 0, 24),
        "protocol assignments",
        "IETF protocol assignments (RFC 6890), not a destination on the internet",
        &["192.0.0.1", "192.0.0.170"],
        &["192.0.1.0"],
    ),
    row(
        v4(192, 0, 2, 0, 24),
        "documentation",
        "TEST-NET-1, reserved for examples; some networks route it internally",
        &["192.0.2.1"],
        &["192.0.3.0"],
    ),
    row(
        v4(192, 88, 99, 0, 24),
        "6to4 relay",
        "the deprecated 6to4 relay anycast block (RFC 7526)",
        &["192.88.99.1"],
        &["192.88.98.255", "192.88.100.0"],
    ),
    row(
        v4(192, 168, 0, 0, 16),
        "private",
        "RFC 1918 private network",
        &["192.168.0.1", "192.168.255.255"],
        &["192.167.255.255", "192.169.0.0"],
    ),
    row(
        v4(198, 18, 0, 0, 15),
        "benchmarking",
        "RFC 2544 benchmarking space, used by some networks internally",
        &["198.18.0.1", "198.19.255.255"],
        &["198.17.255.255", "198.20.0.0"],
    ),
    row(
        v4(198, 51, 100, 0, 24),
        "documentation",
        "TEST-NET-2, reserved for examples",
        &["198.51.100.7"],
        &["198.51.101.0"],
    ),
    row(
        v4(203, 0, 113, 0, 24),
        "documentation",
        "TEST-NET-3, reserved for examples",
        &["203.0.113.9"],
        &["203.0.114.0"],
    ),
    row(
        v4(224, 0, 0, 0, 4),
        "multicast",
        "multicast groups on the local network, not one host",
        &["224.0.0.1", "239.255.255.250"],
        &["223.255.255.255"],
    ),
    row(
        v4(255, 255, 255, 255, 32),
        "broadcast",
        "every host on the local network",
        &["255.255.255.255"],
        &[],
    ),
    row(
        v4(240, 0, 0, 0, 4),
        "reserved",
        "reserved for future use (class E), never a host on the internet",
        &["240.0.0.1", "255.255.255.254"],
        &[],
    ),
    // IPv6.
    row(
        v6([0, 0, 0, 0, 0, 0, 0, 0], 128),
        "unspecified",
        "`::` means this host, like 0.0.0.0",
        &["::"],
        &[],
    ),
    row(
        v6([0, 0, 0, 0, 0, 0, 0, 1], 128),
        "loopback",
        "this host itself",
        &["::1"],
        &[],
    ),
    carrier(
        v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96),
        "IPv4-mapped",
        Carried::Low32,
        &[
            "::ffff:127.0.0.1",
            "::ffff:7f00:1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
        ],
        &["::ffff:8.8.8.8", "::ffff:93.184.216.34"],
    ),
    carrier(
        v6([0, 0, 0, 0, 0xffff, 0, 0, 0], 96),
        "IPv4-translated",
        Carried::Low32,
        &["::ffff:0:127.0.0.1", "::ffff:0:a00:1"],
        &["::ffff:0:8.8.8.8"],
    ),
    carrier(
        v6([0, 0, 0, 0, 0, 0, 0, 0], 96),
        "IPv4-compatible",
        Carried::Low32,
        &["::127.0.0.1", "::10.0.0.1", "::a9fe:a9fe", "::0.0.0.2"],
        &["::8.8.8.8"],
    ),
    carrier(
        v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96),
        "NAT64",
        Carried::Low32,
        &[
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::192.168.1.1",
        ],
        &["64:ff9b::8.8.8.8"],
    ),
    row(
        v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48),
        "local NAT64",
        "RFC 8215 local-use NAT64: the local network translates it to any IPv4 address, internal ones included",
        &["64:ff9b:1::a00:1", "64:ff9b:1:ffff::1"],
        &[],
    ),
    row(
        v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64),
        "discard",
        "RFC 6666 discard-only block",
        &["100::1"],
        &[],
    ),
    row(
        v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32),
        "Teredo",
        "Teredo tunnels carry an obfuscated IPv4 address (RFC 4380) that cannot be checked as such",
        &["2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::1"],
        &["2001:4860:4860::8888"],
    ),
    row(
        v6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48),
        "benchmarking",
        "RFC 5180 benchmarking space",
        &["2001:2::1"],
        &["2001:3::1"],
    ),
    row(
        v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32),
        "documentation",
        "reserved for examples (RFC 3849)",
        &["2001:db8::1", "2001:db8:ffff::1"],
        &["2001:db9::1"],
    ),
    carrier(
        v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16),
        "6to4",
        Carried::SixToFour,
        &["2002:7f00:1::1", "2002:a9fe:a9fe::", "2002:c0a8:101::1"],
        &["2002:808:808::1"],
    ),
    row(
        v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20),
        "documentation",
        "reserved for examples (RFC 9637)",
        &["3fff::1", "3fff:fff::1"],
        &["3fff:1000::1"],
    ),
    row(
        v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),
        "unique local",
        "IPv6 private network (ULA); AWS serves instance metadata at fd00:ec2::254",
        &["fd00:ec2::254", "fc00::1", "fdff:ffff::1"],
        &[],
    ),
    row(
        v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10),
        "link-local",
        "the local link",
        &["fe80::1", "febf::1"],
        &[],
    ),
    row(
        v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10),
        "site-local",
        "the deprecated site-local block, still routed internally by some networks",
        &["fec0::1"],
        &[],
    ),
    row(
        v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8),
        "multicast",
        "multicast groups, not one host",
        &["ff02::1", "ff05::2"],
        &[],
    ),
    // Outside 2000::/3 nothing is global unicast: refused whatever the block is for.
    row(
        v6([0, 0, 0, 0, 0, 0, 0, 0], 3),
        "reserved",
        "not global unicast (outside 2000::/3)",
        &["1234::1", "::1:0:0:1"],
        &["2000::1", "2606:4700::1111"],
    ),
    row(
        v6([0x4000, 0, 0, 0, 0, 0, 0, 0], 2),
        "reserved",
        "not global unicast (outside 2000::/3)",
        &["4000::1", "5f00::1"],
        &["3fff:ffff::1"],
    ),
    row(
        v6([0x8000, 0, 0, 0, 0, 0, 0, 0], 1),
        "reserved",
        "not global unicast (outside 2000::/3)",
        &["8000::1", "fbff::1"],
        &[],
    ),
];

/// Which row refuses an address, and through which carrying form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeMatch {
    /// The row of the address (for a carrying form: of the carried IPv4 address).
    pub range: &'static RefusedRange,
    /// The carrying IPv6 row and the IPv4 address it carried.
    pub carrier: Option<(&'static RefusedRange, Ipv4Addr)>,
}

/// The row refusing `ip`, if any; IPv6 forms carrying an IPv4 address are unwrapped and the
/// carried address is looked up instead.
pub fn refused_range(ip: IpAddr) -> Option<RangeMatch> {
    let row = REFUSED_RANGES.iter().find(|r| r.block.contains(ip))?;
    match (row.carries, ip) {
        (Some(how), IpAddr::V6(v6)) => {
            let inner = how.extract(v6);
            let found = refused_range(IpAddr::V4(inner))?;
            Some(RangeMatch {
                range: found.range,
                carrier: Some((row, inner)),
            })
        }
        _ => Some(RangeMatch {
            range: row,
            carrier: None,
        }),
    }
}

/// The IPv4 address an IPv6 form carries (`::ffff:127.0.0.1` → `127.0.0.1`), if it is one of
/// the carrying forms: where a connection to it leads.
pub fn carried_v4(ip: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = ip else { return None };
    let row = REFUSED_RANGES
        .iter()
        .find(|r| r.block.contains(ip) && r.carries.is_some())?;
    row.carries.map(|how| how.extract(v6))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse()
            .unwrap_or_else(|e| panic!("bad example {text}: {e}"))
    }

    /// Every row's examples are refused by that row (or, for a carrier, through it), and
    /// every near miss is refused by no row.
    #[test]
    fn range_examples() {
        for row in REFUSED_RANGES {
            assert!(
                !row.examples.is_empty(),
                "{} {} has no example",
                row.block,
                row.name
            );
            assert_eq!(row.block, row.block.masked(), "{} has host bits", row.block);
            for ex in row.examples {
                let m = refused_range(ip(ex)).unwrap_or_else(|| panic!("{ex} is not refused"));
                let via = m.carrier.map(|(c, _)| c).unwrap_or(m.range);
                assert_eq!(via, row, "{ex} is refused by {} instead", via.block);
                if row.carries.is_none() {
                    assert!(row.block.contains(ip(ex)), "{ex} outside {}", row.block);
                }
            }
            for near in row.near_misses {
                assert!(
                    refused_range(ip(near)).is_none(),
                    "{near} (near {}) is refused: {:?}",
                    row.block,
                    refused_range(ip(near)).map(|m| m.range.block)
                );
            }
        }
    }

    #[test]
    fn carried_addresses_name_their_row() {
        let m = refused_range(ip("::ffff:169.254.169.254")).unwrap_or_else(|| panic!());
        assert_eq!(m.range.name, "link-local");
        assert_eq!(
            m.carrier.map(|(c, v4)| (c.name, v4)),
            Some(("IPv4-mapped", Ipv4Addr::new(169, 254, 169, 254)))
        );
        assert_eq!(
            carried_v4(ip("2002:c0a8:101::1")),
            Some(Ipv4Addr::new(192, 168, 1, 1))
        );
        assert_eq!(carried_v4(ip("2606:4700::1111")), None);
    }

    #[test]
    fn cidr_parsing() {
        assert_eq!(Cidr::parse("10.1.2.3/24"), Ok(v4(10, 1, 2, 0, 24)));
        assert_eq!(Cidr::parse("::1"), Ok(v6([0, 0, 0, 0, 0, 0, 0, 1], 128)));
        assert!(Cidr::parse("10.0.0.0/33").is_err());
        assert!(Cidr::parse("fd00::/129").is_err());
        assert!(Cidr::parse("example.com/8").is_err());
        assert!(v4(0, 0, 0, 0, 0).contains(ip("1.2.3.4")));
        assert!(!v4(10, 0, 0, 0, 8).contains(ip("::ffff:10.0.0.1")));
    }
}
