//! TLS under a listener: the server's certificate chain and private key
//! from PEM files and, when a client CA is given, client certificates
//! signed by it, required of every client. Both listeners (Kafka `SSL` /
//! `SASL_SSL`, and HTTPS) wrap their TCP streams with the acceptor built
//! here; SASL and HTTP authentication run above it, unaware of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::rustls::crypto::{ring, CryptoProvider};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};
pub use tokio_rustls::TlsAcceptor;

/// Where a listener's certificate, key and optional client CA are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// When set, a client must present a certificate this CA signed.
    pub client_ca: Option<PathBuf>,
}

/// The acceptor for `files`, offering `alpn` (empty for Kafka), or why the
/// files cannot serve, naming the file.
pub fn acceptor(files: &TlsFiles, alpn: &[&[u8]]) -> Result<TlsAcceptor, String> {
    // The provider is named rather than taken from the process default, so
    // no other crate's choice of provider can change or break it.
    let provider = Arc::new(ring::default_provider());
    let chain = certificates(&files.cert, "certificate")?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| format!("the TLS key {}: {e} (a PEM private key is expected)", files.key.display()))?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS protocol versions: {e}"))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => builder.with_client_cert_verifier(client_verifier(ca, provider)?),
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        format!(
            "the TLS certificate {} and key {} do not serve together: {e}",
            files.cert.display(),
            files.key.display()
        )
    })?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let chain = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("the TLS {what} {}: {e}", path.display()))?;
    if chain.is_empty() {
        return Err(format!("the TLS {what} {}: no PEM certificate in it", path.display()));
    }
    Ok(chain)
}

fn client_verifier(
    ca: &Path,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn tokio_rustls::rustls::server::danger::ClientCertVerifier>, String> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(ca, "client CA")? {
        roots.add(cert).map_err(|e| format!("the TLS client CA {}: {e}", ca.display()))?;
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| format!("the TLS client CA {}: {e}", ca.display()))
}
