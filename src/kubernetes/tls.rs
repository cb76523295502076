//! TLS for [`KubernetesApi::serve`](super::KubernetesApi::serve): a rustls
//! server configuration from a PEM certificate chain and key.

use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A certificate chain or key that TLS cannot be served with
/// ([`KubernetesApi::tls`](super::KubernetesApi::tls)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate chain holds no `CERTIFICATE` PEM block.
    #[error("no certificate in the PEM certificate chain")]
    NoCertificate,
    /// A `CERTIFICATE` block of the chain is not valid PEM.
    #[error("the certificate chain is not valid PEM: {0}")]
    Certificate(String),
    /// No private key (PKCS#8, PKCS#1 or SEC1 PEM block), or one that is not valid PEM.
    #[error("no valid PEM private key (PKCS#8, PKCS#1 or SEC1): {0}")]
    Key(String),
    /// rustls refused the pair: the key does not match the certificate, or
    /// is of a kind it does not support.
    #[error("the certificate and key cannot be served: {0}")]
    Rejected(#[source] rustls::Error),
}

/// The rustls configuration serving `cert_chain_pem` (the server's
/// certificate first, then any intermediates) with `key_pem`, on the `ring`
/// provider, TLS 1.2 and 1.3, no client certificates.
pub(crate) fn server_config(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = CertificateDer::pem_slice_iter(cert_chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Certificate(e.to_string()))?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Key(e.to_string()))?;
    let config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Rejected)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(TlsError::Rejected)?;
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_pem_is_a_typed_error() {
        assert!(matches!(server_config(b"", b""), Err(TlsError::NoCertificate)));
        let broken = b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n";
        assert!(matches!(server_config(broken, b""), Err(TlsError::Certificate(_))));
    }
}
