//! The HTTP client settings both tools share: rustls with the system's trust store (read
//! once per process), no environment proxies, no automatic redirects, toolgate's user agent.

use std::sync::OnceLock;

use crate::config::USER_AGENT;

/// The system's root certificates. Reading and parsing them takes tens of milliseconds,
/// which reqwest would spend again for every client (WebFetch builds one per fetch).
fn system_roots() -> &'static [reqwest::Certificate] {
    static ROOTS: OnceLock<Vec<reqwest::Certificate>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        rustls_native_certs::load_native_certs()
            .certs
            .iter()
            .filter_map(|der| reqwest::Certificate::from_der(der).ok())
            .collect()
    })
}

/// A client builder with the shared settings; callers add timeouts and resolvers. Without
/// `tls` the trust store is not read (a plain-HTTP fetch of a local server needs none).
pub(crate) fn builder(tls: bool) -> reqwest::ClientBuilder {
    let mut b = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .redirect(reqwest::redirect::Policy::none())
        // A proxy would resolve names itself, past WebFetch's address check.
        .no_proxy()
        .user_agent(USER_AGENT);
    if tls {
        for root in system_roots() {
            b = b.add_root_certificate(root.clone());
        }
    }
    b
}
