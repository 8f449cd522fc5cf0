//! Certificate authorities and certificates made by the tests (rcgen), for the TLS tests: a
//! CA, server certificates it signs for the names given, and a rustls server configuration
//! that serves one (for the tests' own HTTPS servers).

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// A certificate authority of the test's own.
pub(crate) struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

impl Ca {
    /// A new CA named `name`.
    pub(crate) fn new(name: &str) -> Ca {
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let pem = params.self_signed(&key).expect("the CA's certificate").pem();
        Ca { issuer: Issuer::new(params, key), pem }
    }

    /// The CA's certificate, PEM.
    pub(crate) fn pem(&self) -> &str {
        &self.pem
    }

    /// A certificate for `names` (host names or IP addresses) signed by this CA, and its key,
    /// both PEM.
    pub(crate) fn issue(&self, names: &[&str]) -> (String, String) {
        let key = KeyPair::generate().expect("a server key");
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = CertificateParams::new(names.clone()).expect("server parameters");
        params.distinguished_name.push(DnType::CommonName, names.first().cloned().unwrap_or_default());
        let cert = params.signed_by(&key, &self.issuer).expect("the server's certificate");
        (cert.pem(), key.serialize_pem())
    }
}

/// A rustls server configuration serving the PEM certificate chain `cert` with its key `key`.
pub(crate) fn server_config(cert: &str, key: &str) -> std::sync::Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_slice_iter(cert.as_bytes()).collect::<Result<Vec<_>, _>>().expect("the certificate");
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("the key");
    let config = rustls::ServerConfig::builder_with_provider(mcp_tasks_tls::provider())
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_no_client_auth().with_single_cert(chain, key))
        .expect("a TLS server configuration");
    std::sync::Arc::new(config)
}
