//! [`TestServer`]: a [`Server`] served for a test, over HTTP on `127.0.0.1:0` or over stdio
//! on an in-memory duplex, through the server crate's public transports only
//! (`mcp_tasks_http::serve`, `mcp_tasks_server::stdio::serve`).

use std::io;
use std::net::SocketAddr;

use mcp_tasks_http as http;
use mcp_tasks_server::{Server, stdio};
use tokio::io::{BufReader, DuplexStream};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Bytes each direction of a stdio pipe buffers.
const PIPE_BYTES: usize = 1 << 16;

/// A running server. Over HTTP, dropping it shuts the server down (as
/// [`TestServer::shutdown`] does, without waiting); over stdio the server ends when the
/// client's end of the pipe is closed.
pub struct TestServer {
    /// The address served, over HTTP.
    addr: Option<SocketAddr>,
    /// Shuts an HTTP server down.
    stop: CancellationToken,
    /// The serving task; `None` once awaited.
    serving: Option<JoinHandle<io::Result<()>>>,
}

/// The client's ends of a stdio pipe to a [`TestServer`].
pub struct StdioPipe {
    /// What the client writes: the server's stdin. Dropping it is the end of input.
    pub to_server: DuplexStream,
    /// What the client reads: the server's stdout.
    pub from_server: DuplexStream,
}

impl TestServer {
    /// Serves `server` over HTTP at `/mcp` on a free port of `127.0.0.1`, with the default
    /// [`http::Options`].
    ///
    /// # Errors
    /// If no port can be bound.
    pub async fn http(server: Server) -> io::Result<TestServer> {
        TestServer::http_with(server, http::Options::default()).await
    }

    /// Serves `server` over HTTP at `/mcp` on a free port of `127.0.0.1`, with `options`.
    ///
    /// # Errors
    /// If no port can be bound.
    pub async fn http_with(server: Server, options: http::Options) -> io::Result<TestServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let serving = tokio::spawn(http::serve(
            listener,
            server,
            options,
            stop.clone().cancelled_owned(),
        ));
        Ok(TestServer {
            addr: Some(addr),
            stop,
            serving: Some(serving),
        })
    }

    /// Serves `server` over stdio on an in-memory pipe; returns the server and the client's
    /// ends of the pipe.
    pub fn stdio(server: Server) -> (TestServer, StdioPipe) {
        let (to_server, server_reads) = tokio::io::duplex(PIPE_BYTES);
        let (server_writes, from_server) = tokio::io::duplex(PIPE_BYTES);
        let serving = tokio::spawn(stdio::serve(
            BufReader::new(server_reads),
            server_writes,
            server,
        ));
        let running = TestServer {
            addr: None,
            stop: CancellationToken::new(),
            serving: Some(serving),
        };
        let pipe = StdioPipe {
            to_server,
            from_server,
        };
        (running, pipe)
    }

    /// The address served over HTTP (`None` over stdio).
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The endpoint's URL, `http://127.0.0.1:<port>/mcp` (`None` over stdio).
    pub fn url(&self) -> Option<String> {
        self.addr.map(|addr| format!("http://{addr}/mcp"))
    }

    /// Over HTTP, shuts the server down (open SSE streams end) and waits until it has
    /// stopped; over stdio, waits until the server has ended (after the client closed its
    /// end of the pipe).
    ///
    /// # Errors
    /// The transport's I/O error, or the serving task's panic as an error.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if self.addr.is_some() {
            self.stop.cancel();
        }
        match self.serving.take() {
            Some(serving) => serving.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        // An HTTP server outliving its test would hold its port and tasks; a stdio server
        // ends on its own when the client's end of the pipe goes.
        if self.addr.is_some() {
            self.stop.cancel();
        }
    }
}
