//! What every TLS side of mcp-tasks shares: rustls on ring ([`provider`]); for the clients
//! (the PostgreSQL store, webhooks, the OAuth keys, the MCP client and proxy) the roots a
//! server's certificate is checked against ([`roots`]: the system's, or the CA certificates
//! of a PEM file for a private CA), in one [`client_config`]; for the HTTP listener, a
//! certificate and key read from PEM files ([`server_config`]). A leaf crate (rustls only),
//! so that the stores may use it without an HTTP stack.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// rustls's provider on ring. Deprecated by rustls for its lack of post-quantum key exchange;
/// the provider that has it (aws-lc-rs) builds C with cmake, minutes on this project's two
/// build cores. Revisit with rustls 0.24.
#[allow(deprecated)]
#[must_use]
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The trusted roots: the CA certificates of the PEM file `ca_file` when given, else the
/// system's (`/etc/ssl/certs`, as `rustls-native-certs` finds them).
///
/// # Errors
/// What is wrong, naming `what` (the setting that gave the file, e.g. `sslrootcert=…`): the
/// file cannot be read, it holds no certificate, or the system has none.
pub fn roots(ca_file: Option<&Path>, what: &str) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(file) => {
            let certificates = CertificateDer::pem_file_iter(file)
                .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                .map_err(|err| format!("cannot read the CA certificates of {what}: {err}"))?;
            let (added, _) = roots.add_parsable_certificates(certificates);
            if added == 0 {
                return Err(format!(
                    "{what} holds no CA certificate (a PEM file of `-----BEGIN CERTIFICATE-----` blocks is expected)"
                ));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err("no trusted roots: the system has no CA certificates (install ca-certificates) or give a CA file".to_owned());
            }
        }
    }
    Ok(roots)
}

/// A client configuration that verifies servers against [`roots`] (the system's, or
/// `ca_file`'s), with the name they were reached by, as every HTTPS client does.
///
/// # Errors
/// As [`roots`].
pub fn client_config(ca_file: Option<&Path>, what: &str) -> Result<ClientConfig, String> {
    let roots = roots(ca_file, what)?;
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("cannot set up TLS: {err}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// A server configuration serving the certificate chain of the PEM file `cert` (the server's
/// certificate first, then its intermediates) with the private key of the PEM file `key`.
///
/// # Errors
/// Which file cannot be read or holds nothing usable, or that the key does not match.
pub fn server_config(cert: &Path, key: &Path) -> Result<ServerConfig, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|err| format!("cannot read the certificate {}: {err}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{} holds no certificate (PEM `-----BEGIN CERTIFICATE-----` blocks are expected)", cert.display()));
    }
    let private = PrivateKeyDer::from_pem_file(key)
        .map_err(|err| format!("cannot read the private key {}: {err} (a PEM private key is expected)", key.display()))?;
    ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("cannot set up TLS: {err}"))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|err| format!("the certificate {} and the key {} do not go together: {err}", cert.display(), key.display()))
}

/// `err` with every cause it holds that its message does not already say: what a TLS
/// failure needs shown (hyper's and tokio-postgres's errors leave out why a connection
/// failed, e.g. which certificate check refused the server).
#[must_use]
pub fn with_causes(err: &(dyn std::error::Error + 'static)) -> String {
    let mut message = err.to_string();
    let mut cause = err.source();
    while let Some(next) = cause {
        let text = next.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        cause = next.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::roots;

    #[test]
    fn a_ca_file_that_is_missing_or_holds_no_certificate_is_named() {
        let err = roots(Some(std::path::Path::new("/nonexistent/ca.pem")), "ca_file = \"/nonexistent/ca.pem\"").unwrap_err();
        assert!(err.contains("ca_file = \"/nonexistent/ca.pem\""), "{err}");
        let dir = std::env::temp_dir().join(format!("mcp-tasks-tls-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = roots(Some(&empty), "the file").unwrap_err();
        assert!(err.contains("holds no CA certificate"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
