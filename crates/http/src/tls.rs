//! HTTPS on the listener ([`Options::tls`](crate::Options::tls)): the certificate and key are
//! read from their PEM files at start (a problem stops the start) and again on `SIGHUP` (a
//! problem then is logged and the certificate in use kept), so that a renewed certificate is
//! taken without a restart; each connection's handshake is bounded by the header timeout.

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

/// The PEM files of the listener's certificate (chain) and private key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain: the server's certificate first, then its intermediates.
    pub cert: PathBuf,
    /// The private key of the certificate.
    pub key: PathBuf,
}

/// The certificate in use, and where it is read from again.
pub(crate) struct Acceptor {
    files: TlsFiles,
    current: RwLock<TlsAcceptor>,
}

impl Acceptor {
    /// Reads the certificate and key.
    ///
    /// # Errors
    /// `InvalidInput`, saying which file and what is wrong.
    pub(crate) fn load(files: TlsFiles) -> io::Result<Arc<Acceptor>> {
        let config = mcp_tasks_tls::server_config(&files.cert, &files.key).map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, err))?;
        Ok(Arc::new(Acceptor { files, current: RwLock::new(TlsAcceptor::from(Arc::new(config))) }))
    }

    /// Reads the files again; on a problem the certificate in use stays.
    fn reload(&self) {
        match mcp_tasks_tls::server_config(&self.files.cert, &self.files.key) {
            Ok(config) => {
                *self.current.write().unwrap_or_else(PoisonError::into_inner) = TlsAcceptor::from(Arc::new(config));
                tracing::info!(cert = %self.files.cert.display(), "read the TLS certificate again (SIGHUP)");
            }
            Err(error) => tracing::error!(%error, "SIGHUP: the TLS certificate could not be read again; the one in use stays"),
        }
    }

    /// Reads the files again on every `SIGHUP`, until `stop`.
    pub(crate) fn reload_on_sighup(self: &Arc<Self>, stop: CancellationToken) {
        let Ok(mut hangups) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
            tracing::warn!("cannot listen for SIGHUP: the TLS certificate is read at start only");
            return;
        };
        let acceptor = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    got = hangups.recv() => if got.is_none() { return },
                }
                acceptor.reload();
            }
        });
    }

    /// The TLS handshake on `tcp`, within `timeout`.
    pub(crate) async fn accept(&self, tcp: TcpStream, timeout: Duration) -> io::Result<TlsStream<TcpStream>> {
        let acceptor = self.current.read().unwrap_or_else(PoisonError::into_inner).clone();
        tokio::time::timeout(timeout, acceptor.accept(tcp))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "the TLS handshake took too long"))?
    }
}
