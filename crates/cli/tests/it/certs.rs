//! Certificate authorities and certificates made by the tests (rcgen), for the TLS tests: a
//! CA, and server certificates it signs for the names given.

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
