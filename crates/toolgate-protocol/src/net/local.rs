//! The host's own interface addresses.
//!
//! A service bound to `0.0.0.0` answers on every address of the host, its public one
//! included, so refusing loopback alone does not keep a model off the host's own services.
//! The list is read from the kernel (`getifaddrs`) at every check, because addresses come
//! and go (DHCP, VPNs, containers) while a session runs.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Every address configured on the host's interfaces (in this network namespace).
pub fn local_addresses() -> io::Result<Vec<IpAddr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head we own until freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*cur };
        if !ifa.ifa_addr.is_null() {
            // SAFETY: ifa_addr points to a sockaddr whose family says which struct it is.
            let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
            match family {
                libc::AF_INET => {
                    // SAFETY: AF_INET entries hold a sockaddr_in.
                    let sin = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in>() };
                    out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                        sin.sin_addr.s_addr,
                    ))));
                }
                libc::AF_INET6 => {
                    // SAFETY: AF_INET6 entries hold a sockaddr_in6.
                    let sin6 = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in6>() };
                    out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
                }
                _ => {}
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_among_them() {
        let addrs = local_addresses().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            addrs.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)),
            "{addrs:?}"
        );
    }
}
