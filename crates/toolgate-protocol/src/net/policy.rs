//! The address check both network doors run on every address before connecting.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use super::ranges::carried_v4;
use super::{AddrList, RangeMatch, local_addresses, refused_range};

/// Why an address is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The address (or the IPv4 address it carries) is in a refused range.
    Range {
        /// The address asked for.
        addr: IpAddr,
        /// The row, and the carrying form if any.
        found: RangeMatch,
        /// It is also one of the host's own addresses.
        own: bool,
    },
    /// The address is one of the host's own.
    OwnAddress {
        /// The address asked for.
        addr: IpAddr,
    },
    /// The host's own addresses could not be read, so no address can be cleared of being
    /// one of them (fail closed).
    OwnAddressesUnknown {
        /// The address asked for.
        addr: IpAddr,
        /// Why they could not be read.
        error: String,
    },
}

impl Refusal {
    /// The address refused.
    pub fn addr(&self) -> IpAddr {
        match self {
            Refusal::Range { addr, .. }
            | Refusal::OwnAddress { addr }
            | Refusal::OwnAddressesUnknown { addr, .. } => *addr,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Range { addr, found, own } => {
                let r = found.range;
                match found.carrier {
                    Some((c, v4)) => write!(
                        f,
                        "{addr} is an {} address carrying {v4}, which is {} ({}: {})",
                        c.name, r.name, r.block, r.why
                    )?,
                    None => write!(f, "{addr} is {} ({}: {})", r.name, r.block, r.why)?,
                }
                if *own && r.name != "loopback" {
                    write!(f, ", and an address of this host")?;
                }
                Ok(())
            }
            Refusal::OwnAddress { addr } => write!(
                f,
                "{addr} is an address of this host (a service bound to all interfaces answers on it)"
            ),
            Refusal::OwnAddressesUnknown { addr, error } => write!(
                f,
                "{addr} cannot be checked: this host's own addresses could not be read ({error})"
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// Refuses the [`super::REFUSED_RANGES`] and the host's own addresses, except what the
/// allow list names. The default allows nothing extra.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddrPolicy {
    allow: AddrList,
}

impl AddrPolicy {
    /// A policy letting `allow` through.
    pub fn new(allow: AddrList) -> AddrPolicy {
        AddrPolicy { allow }
    }

    /// The allow list.
    pub fn allow_list(&self) -> &AddrList {
        &self.allow
    }

    /// Checks one address.
    pub fn check(&self, addr: SocketAddr) -> Result<(), Refusal> {
        self.check_all(&[addr])
    }

    /// Checks every address (all must pass: one refused answer among public ones is how DNS
    /// rebinding is done). The host's own addresses are read once per call, and only when an
    /// address is not on the allow list.
    pub fn check_all(&self, addrs: &[SocketAddr]) -> Result<(), Refusal> {
        self.check_all_with(addrs, local_addresses)
    }

    /// [`AddrPolicy::check_all`] with the host's own addresses from `own_addresses`.
    fn check_all_with(
        &self,
        addrs: &[SocketAddr],
        own_addresses: impl FnOnce() -> std::io::Result<Vec<IpAddr>>,
    ) -> Result<(), Refusal> {
        let mut read = Some(own_addresses);
        let mut own: Option<Vec<IpAddr>> = None;
        for addr in addrs {
            if self.allow.allowing(*addr).is_some() {
                continue;
            }
            let ip = addr.ip();
            // Read even for an address a range refuses, so the refusal can say that it is
            // also this host's (the range alone would hide why it matters).
            let own = match &own {
                Some(list) => list,
                None => own.insert(read.take().map_or(Ok(Vec::new()), |f| f()).map_err(|e| {
                    Refusal::OwnAddressesUnknown {
                        addr: ip,
                        error: e.to_string(),
                    }
                })?),
            };
            let canonical = carried_v4(ip).map_or(ip, IpAddr::V4);
            let is_own = own.contains(&ip) || own.contains(&canonical);
            match refused_range(ip) {
                Some(found) => {
                    return Err(Refusal::Range {
                        addr: ip,
                        found,
                        own: is_own,
                    });
                }
                None if is_own => return Err(Refusal::OwnAddress { addr: ip }),
                None => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(s: &str) -> SocketAddr {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn own_addresses_are_refused_and_allow_lists_apply() {
        let strict = AddrPolicy::default();
        assert!(strict.check(sock("93.184.216.34:443")).is_ok());
        assert!(strict.check(sock("[2606:4700::1111]:443")).is_ok());
        let e = strict
            .check_all_with(&[sock("93.184.216.34:443"), sock("10.0.0.1:443")], || {
                Ok(vec![])
            })
            .unwrap_err();
        assert_eq!(e.addr(), sock("10.0.0.1:443").ip());
        assert!(e.to_string().contains("private"), "{e}");
        let mapped = strict
            .check_all_with(&[sock("[::ffff:127.0.0.1]:80")], || Ok(vec![]))
            .unwrap_err();
        assert!(mapped.to_string().contains("IPv4-mapped"), "{mapped}");
        // Every global address of this host (if it has any) is refused.
        for ip in local_addresses().unwrap_or_else(|e| panic!("{e}")) {
            let r = strict.check(SocketAddr::new(ip, 80));
            assert!(r.is_err(), "own address {ip} passed");
        }
        // A public address of the host is refused like loopback; unreadable addresses refuse.
        let public = sock("93.184.216.34:443");
        let own = strict.check_all_with(&[public], || Ok(vec![public.ip()]));
        assert_eq!(own, Err(Refusal::OwnAddress { addr: public.ip() }));
        let mapped = sock("[::ffff:93.184.216.34]:443");
        assert!(
            strict
                .check_all_with(&[mapped], || Ok(vec![public.ip()]))
                .is_err()
        );
        let unknown = strict.check_all_with(&[public], || Err(std::io::Error::other("no")));
        assert!(matches!(unknown, Err(Refusal::OwnAddressesUnknown { .. })));
        let allow = AddrList::parse(&["127.0.0.1:8080".into()]).unwrap_or_else(|e| panic!("{e}"));
        let local = AddrPolicy::new(allow);
        assert!(local.check(sock("127.0.0.1:8080")).is_ok());
        assert!(local.check(sock("127.0.0.1:8081")).is_err());
    }
}
