//! TLS to PostgreSQL as libpq's connection parameters say (`sslmode`, `sslrootcert`), through
//! rustls (with ring; no OpenSSL), so that a URL written for `psql` works as it is.
//!
//! tokio-postgres reads `sslmode` only as `disable`, `prefer` or `require`, and no
//! `sslrootcert`: [`connection`] takes both out of the URL, gives tokio-postgres the mode it
//! knows (whether to ask for TLS, and whether to insist), and builds the rustls verifier that
//! libpq's mode means:
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `allow`, `prefer` (the default) | if the server offers it | not verified (libpq's meaning) |
//! | `require` | always | not verified, unless `sslrootcert` is given: then as `verify-ca` (libpq's meaning) |
//! | `verify-ca` | always | signed by a root of `sslrootcert` |
//! | `verify-full` | always | signed by a root of `sslrootcert`, and issued for the host connected to |
//!
//! Client certificates (`sslcert`, `sslkey`) are refused, saying so.
//!
//! `sslrootcert`: a PEM file of CA certificates, or `system` for the system's roots (the
//! default when it is not given and `~/.postgresql/root.crt`, libpq's default file, does not
//! exist).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `disable`.
    Disable,
    /// `allow` or `prefer` (libpq's default): TLS if the server offers it, not verified.
    Prefer,
    /// `require`: TLS, not verified.
    Require,
    /// `verify-ca`: TLS, the certificate signed by a trusted root.
    VerifyCa,
    /// `verify-full`: as `verify-ca`, and issued for the host.
    VerifyFull,
}

impl Mode {
    fn parse(value: &str) -> Result<Mode, String> {
        match value {
            "disable" => Ok(Mode::Disable),
            "allow" | "prefer" => Ok(Mode::Prefer),
            "require" => Ok(Mode::Require),
            "verify-ca" => Ok(Mode::VerifyCa),
            "verify-full" => Ok(Mode::VerifyFull),
            other => Err(format!(
                "sslmode={other} is not a mode PostgreSQL knows: use disable, allow, prefer, require, verify-ca or verify-full"
            )),
        }
    }

    /// What the startup line says of the connection's TLS.
    pub fn describe(self) -> &'static str {
        match self {
            Mode::Disable => "no TLS (sslmode=disable)",
            Mode::Prefer => "TLS if the server offers it, its certificate not verified (sslmode=prefer)",
            Mode::Require => "TLS, its certificate not verified (sslmode=require)",
            Mode::VerifyCa => "TLS, the certificate verified against the trusted roots (sslmode=verify-ca)",
            Mode::VerifyFull => "TLS, the certificate verified for the host (sslmode=verify-full)",
        }
    }
}

/// A connection's settings: what tokio-postgres reads, and the TLS connector for it.
pub(crate) struct Connection {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) tls: MakeRustlsConnect,
    pub(crate) mode: Mode,
    /// `pooler=transaction`: the URL names a transaction pooler (PgBouncer's `pool_mode =
    /// transaction`): no prepared statement outlives a transaction ([`crate::conn`]).
    pub(crate) pooled: bool,
    /// `listen_url`: a direct connection to the database, for the change feed's `LISTEN`
    /// (which a transaction pooler cannot carry).
    pub(crate) listen_url: Option<String>,
}

/// The settings of `url` (a `postgres://` URL or a `key=value` connection string).
///
/// # Errors
/// What is wrong, in words that say what to write instead: an unknown `sslmode`, a
/// `sslrootcert` that cannot be read or holds no certificate, a URL tokio-postgres cannot read.
pub(crate) fn connection(url: &str) -> Result<Connection, String> {
    let (rest, taken) =
        take_parameters(url, &["sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword", "pooler", "listen_url"]);
    let mut mode = Mode::Prefer;
    let mut root_file = None;
    let (mut pooled, mut listen_url) = (false, None);
    for (key, value) in taken {
        match key.as_str() {
            "sslmode" => mode = Mode::parse(&value)?,
            "sslrootcert" => root_file = Some(value),
            "pooler" => {
                pooled = match value.as_str() {
                    "transaction" => true,
                    "none" => false,
                    other => {
                        return Err(format!(
                            "pooler={other} is not known: write pooler=transaction for a pooler in transaction mode \
                             (PgBouncer's pool_mode = transaction), or leave it out for a direct connection or a \
                             session pooler"
                        ));
                    }
                }
            }
            "listen_url" => listen_url = Some(value),
            other => {
                return Err(format!(
                    "{other}: client certificates are not supported yet; log in with a password or another method the server allows"
                ));
            }
        }
    }
    if mode == Mode::Require && root_file.is_some() {
        mode = Mode::VerifyCa; // libpq: a root file given makes `require` check the chain.
    }
    let mut config = tokio_postgres::Config::from_str(&rest).map_err(|err| err.to_string())?;
    config.ssl_mode(match mode {
        Mode::Disable => SslMode::Disable,
        Mode::Prefer => SslMode::Prefer,
        Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
    });
    let provider = mcp_tasks_tls::provider();
    let algorithms = provider.signature_verification_algorithms;
    let verifier: Arc<dyn ServerCertVerifier> = match mode {
        Mode::Disable | Mode::Prefer | Mode::Require => Arc::new(Libpq { chain: None, algorithms }),
        Mode::VerifyCa | Mode::VerifyFull => {
            let roots = roots(root_file.as_deref())?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                .build()
                .map_err(|err| format!("cannot use the trusted roots: {err}"))?;
            if mode == Mode::VerifyCa { Arc::new(Libpq { chain: Some(webpki), algorithms }) } else { webpki }
        }
    };
    let tls = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("cannot set up TLS: {err}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Connection { config, tls: MakeRustlsConnect::new(tls), mode, pooled, listen_url })
}

/// The trusted roots: the PEM file `sslrootcert` names, or the system's (`system`, or no
/// `sslrootcert` and no `~/.postgresql/root.crt`).
fn roots(file: Option<&str>) -> Result<RootCertStore, String> {
    let file = match file {
        Some("system") => None,
        Some(file) => Some(PathBuf::from(file)),
        None => std::env::var_os("HOME").map(|home| Path::new(&home).join(".postgresql/root.crt")).filter(|file| file.exists()),
    };
    let what = file.as_ref().map(|file| format!("sslrootcert={}", file.display()));
    mcp_tasks_tls::roots(file.as_deref(), what.as_deref().unwrap_or("the system's roots"))
}

/// `url` without the parameters named `names`, and their values, in the URL's query
/// (`?a=b&c=d`, percent-encoded) or as `key=value` words of a connection string (`'quoted'`
/// values allowed). Written here because tokio-postgres refuses what it does not know and
/// offers no way to read the rest of a URL.
fn take_parameters(url: &str, names: &[&str]) -> (String, Vec<(String, String)>) {
    let mut taken = Vec::new();
    if url.contains("://") {
        let Some((base, query)) = url.split_once('?') else { return (url.to_owned(), taken) };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| match pair.split_once('=') {
                Some((key, value)) if names.contains(&key) => {
                    taken.push((key.to_owned(), crate::url::percent_decoded(value)));
                    false
                }
                _ => true,
            })
            .collect();
        let rest = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
        return (rest, taken);
    }
    let mut kept = Vec::new();
    for word in connection_words(url) {
        match word.split_once('=') {
            Some((key, value)) if names.contains(&key.trim()) => taken.push((key.trim().to_owned(), unquoted(value.trim()))),
            _ => kept.push(word),
        }
    }
    (kept.join(" "), taken)
}

/// The `key=value` words of a connection string, a `'quoted value'` kept whole.
fn connection_words(text: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted, mut escaped) = (Vec::new(), String::new(), false, false);
    for ch in text.chars() {
        match ch {
            _ if escaped => {
                word.push(ch);
                escaped = false;
            }
            '\\' => {
                word.push(ch);
                escaped = true;
            }
            '\'' => {
                word.push(ch);
                quoted = !quoted;
            }
            ch if ch.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            ch => word.push(ch),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

fn unquoted(value: &str) -> String {
    let inner = value.strip_prefix('\'').and_then(|value| value.strip_suffix('\'')).unwrap_or(value);
    inner.replace("\\'", "'").replace("\\\\", "\\")
}


/// The verifier of `prefer`, `require` and `verify-ca` (`verify-full` uses rustls's own):
/// the handshake's signatures are always checked (the connection is encrypted to whoever
/// holds the certificate's key); the certificate's chain against the trusted roots only with
/// `chain` (`verify-ca`), and the name it was issued for never, as libpq does in these modes.
#[derive(Debug)]
struct Libpq {
    chain: Option<Arc<WebPkiServerVerifier>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Libpq {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else { return Ok(ServerCertVerified::assertion()) };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::{Mode, connection, take_parameters};

    #[test]
    fn ssl_parameters_are_taken_out_of_urls_and_connection_strings() {
        let (rest, taken) = take_parameters(
            "postgres://u:p@db.example.com/app?sslmode=verify-full&application_name=x&sslrootcert=%2Fetc%2Fca%20file.pem",
            &["sslmode", "sslrootcert"],
        );
        assert_eq!(rest, "postgres://u:p@db.example.com/app?application_name=x");
        assert_eq!(taken, [("sslmode".to_owned(), "verify-full".to_owned()), ("sslrootcert".to_owned(), "/etc/ca file.pem".to_owned())]);
        let (rest, taken) = take_parameters("postgres://db/app?sslmode=require", &["sslmode"]);
        assert_eq!((rest.as_str(), taken.len()), ("postgres://db/app", 1));
        let (rest, taken) =
            take_parameters("host=db user=u sslmode=verify-ca sslrootcert='/etc/my ca.pem' dbname=app", &["sslmode", "sslrootcert"]);
        assert_eq!(rest, "host=db user=u dbname=app");
        assert_eq!(taken[1], ("sslrootcert".to_owned(), "/etc/my ca.pem".to_owned()));
    }

    #[test]
    fn modes_follow_libpq() {
        let mode = |url: &str| connection(url).map(|connection| connection.mode);
        assert_eq!(mode("postgres://db/app"), Ok(Mode::Prefer));
        assert_eq!(mode("postgres://db/app?sslmode=allow"), Ok(Mode::Prefer));
        assert_eq!(mode("postgres://db/app?sslmode=disable"), Ok(Mode::Disable));
        assert_eq!(mode("postgres://db/app?sslmode=require"), Ok(Mode::Require));
        let err = mode("postgres://db/app?sslmode=verify").expect_err("an unknown mode");
        assert!(err.contains("sslmode=verify is not a mode") && err.contains("verify-full"), "{err}");
        let err = mode("postgres://db/app?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem").expect_err("no such file");
        assert!(err.contains("sslrootcert=/nonexistent/ca.pem"), "{err}");
        let err = mode("postgres://db/app?sslmode=require&sslrootcert=/nonexistent/ca.pem").expect_err("require with a root file verifies");
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
        let err = mode("postgres://db/app?sslmode=verify-full&sslcert=/c.pem&sslkey=/k.pem").expect_err("no client certificates");
        assert!(err.contains("sslcert: client certificates are not supported yet"), "{err}");
    }
}
