//! The one way Warrant makes an HTTP client.
//!
//! reqwest is built over rustls without a crypto provider of its own (its default, aws-lc,
//! is a C library whose build script was the slowest of a cold build and which added
//! megabytes to the binary); this crate installs rustls's `ring` provider for the process the
//! first time a client is made, so every client — a model's API, an MCP server over HTTP, an
//! OpenAPI service, a webhook's receiver, an OTLP collector — speaks TLS the same way. A
//! client built with `reqwest::Client::builder()` directly, before any client was made here,
//! would panic: make every client here.

use std::sync::Once;

/// A builder for an HTTP client, with the process's TLS provider installed.
#[expect(
    clippy::disallowed_methods,
    reason = "the one place a client builder is made: the provider is installed first"
)]
pub fn builder() -> reqwest::ClientBuilder {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // Err only when a provider is installed already (by the embedding program): that
        // one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}

/// A client with reqwest's defaults, for tests and tools.
///
/// # Panics
/// When the client cannot be built: only if TLS cannot be set up at all, which a test or a
/// tool cannot go on from.
#[expect(
    clippy::expect_used,
    reason = "for tests and tools: a default client fails to build only if TLS cannot start"
)]
pub fn client() -> reqwest::Client {
    builder()
        .build()
        .expect("an HTTP client with default settings builds")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_made_here_has_a_tls_provider_and_builds() {
        assert!(super::builder().build().is_ok());
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
