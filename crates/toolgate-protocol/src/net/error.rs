//! What can be wrong with a host, an address entry or a domain pattern.

use thiserror::Error;

/// A host, address-list entry or domain pattern that cannot be used. Each message says what
/// to write instead.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NetError {
    /// A host that is neither a valid name nor an address.
    #[error("`{host}` is not a valid host: {why}")]
    BadHost {
        /// The host as given.
        host: String,
        /// What is wrong with it.
        why: String,
    },
    /// An address-list entry that does not parse.
    #[error(
        "`{entry}` is not an address, address:port or CIDR block ({why}); write e.g. 127.0.0.1:8080, [::1]:8080, 10.1.2.0/24 or fd00::/8"
    )]
    BadAddr {
        /// The entry as given.
        entry: String,
        /// What is wrong with it.
        why: String,
    },
    /// A domain pattern that does not parse.
    #[error("{why}")]
    BadPattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it, and what to write instead.
        why: String,
    },
}
