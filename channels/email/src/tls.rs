//! TLS for both servers (rustls, like every client of the gateway): the public web roots plus
//! the operator's own CA file (`tls_ca_file`), so a private mail server is verified rather
//! than trusted blindly.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

/// The certificates of `tls_ca_file`, read once when the channel is built.
pub(crate) fn extra_roots(file: Option<&Path>) -> Result<Vec<CertificateDer<'static>>, String> {
    let Some(file) = file else {
        return Ok(Vec::new());
    };
    let pem = std::fs::read(file).map_err(|e| format!("tls_ca_file {}: {e}", file.display()))?;
    let certs = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("tls_ca_file {}: {e}", file.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "tls_ca_file {} holds no PEM certificate",
            file.display()
        ));
    }
    Ok(certs)
}

/// A rustls connector trusting the web roots and `extra`.
pub(crate) fn connector(extra: &[CertificateDer<'static>]) -> Result<TlsConnector, String> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for cert in extra {
        roots
            .add(cert.clone())
            .map_err(|e| format!("tls_ca_file: {e}"))?;
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}
