//! Network destinations: which addresses toolgate refuses to reach for a model, how a host
//! is read, and the domain patterns of `WebFetch(domain:…)` rules and the sandbox proxy.
//!
//! Two doors reach the network on a model's behalf: the WebFetch tool (`toolgate-web`) and
//! the sandbox's allow-list proxy (`toolgate-sandbox`). Both run on the host's network, so a
//! name that resolves to `127.0.0.1`, `169.254.169.254` (a cloud's metadata service) or the
//! host's own public address would reach exactly what the sandbox keeps out. What they refuse
//! is kept once, here, as data:
//!
//! - [`REFUSED_RANGES`]: every refused block with the reason and with addresses that must and
//!   must not match (one test walks them). IPv6 forms that carry an IPv4 address (mapped,
//!   compatible, NAT64, 6to4) are unwrapped and the carried address is checked instead.
//! - [`local_addresses`]: the host's own interface addresses, read at check time (a service
//!   bound to `0.0.0.0` also answers on the public address).
//! - [`AddrPolicy`]: the check both doors call on every resolved address before connecting,
//!   with an explicit allow list ([`AddrList`]: `127.0.0.1:8080`, `10.1.2.0/24`).
//! - [`Host::parse`]: reads a host the way a URL parser and `inet_aton` would, so every
//!   spelling of an IPv4 literal (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`) is the address
//!   it names — refused as that address and never sent to DNS as a name.
//! - [`DomainPattern`]: Claude Code's `domain:` semantics, the one matcher for permission rules
//!   and the proxy's `allowedDomains` / `deniedDomains`.
//!
//! ```
//! use std::net::SocketAddr;
//! use toolgate_protocol::net::{AddrList, AddrPolicy, Host};
//!
//! let host = Host::parse("0x7f.1").unwrap();
//! assert_eq!(host, Host::Ip("127.0.0.1".parse().unwrap()));
//!
//! let strict = AddrPolicy::default();
//! let meta: SocketAddr = "169.254.169.254:80".parse().unwrap();
//! let why = strict.check(meta).unwrap_err();
//! assert!(why.to_string().contains("link-local"), "{why}");
//! let mapped: SocketAddr = "[::ffff:10.0.0.1]:443".parse().unwrap();
//! assert!(strict.check(mapped).is_err());
//!
//! let allow = AddrList::parse(&["127.0.0.1:8080".to_owned()]).unwrap();
//! let local = AddrPolicy::new(allow);
//! assert!(local.check("127.0.0.1:8080".parse().unwrap()).is_ok());
//! assert!(local.check("127.0.0.1:22".parse().unwrap()).is_err());
//! ```
//!
//! Everything here is pure except [`local_addresses`] (one `getifaddrs` call), which the
//! address check needs at the moment of connecting.

mod allow;
mod domain;
mod error;
mod host;
mod local;
mod policy;
mod ranges;

pub use allow::{AddrEntry, AddrList};
pub use domain::{DomainPattern, normalize_host};
pub use error::NetError;
pub use host::Host;
pub use local::local_addresses;
pub use policy::{AddrPolicy, Refusal};
pub use ranges::{
    Carried, Cidr, REFUSED_RANGES, RangeMatch, RefusedRange, carried_v4, refused_range,
};
