//! [`ClientBuilder`]: what a [`Client`] is configured with before it connects, and the
//! handshake that picks the connection's [`Dialect`]: `server/discover` first (2026-07-28,
//! per request), else `initialize` (2025-11-25), unless pinned to one era.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::mcp::Implementation;
use mcp_tasks_protocol::modern::UNSUPPORTED_PROTOCOL_VERSION;
use mcp_tasks_protocol::modern::method::SERVER_DISCOVER;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::client::Client;
use crate::connection::{Connection, Handlers, Transport};
use crate::dialect::Dialect;
use crate::error::ClientError;
use crate::handlers::{ElicitationHandler, SamplingHandler};
use crate::http::HttpTransport;
use crate::legacy::{self, method};
use crate::modern::{self, Identity};
use crate::stdio::{LineReader, StdioTransport};
use crate::types::ServerInfo;

/// Configures a [`Client`] before it connects: token, handlers, identity.
#[must_use]
pub struct ClientBuilder {
    token: Option<String>,
    /// Extra HTTP headers on every request.
    headers: Vec<(String, String)>,
    /// The CA certificates an `https://` server is checked against instead of the system's.
    ca_file: Option<std::path::PathBuf>,
    handlers: Handlers,
    info: Implementation,
    /// The era to speak; `None`: the server's newest (probe, then fall back).
    era: Option<Era>,
    /// A spawned server's stderr is kept for its errors, not shown.
    quiet_server: bool,
}

impl ClientBuilder {
    /// No token, no extra headers, no handlers, `mcp-tasks-client` as the client info, the
    /// era negotiated.
    pub(crate) fn new() -> ClientBuilder {
        let info = Implementation::new("mcp-tasks-client", env!("CARGO_PKG_VERSION"));
        ClientBuilder { token: None, headers: Vec::new(), ca_file: None, handlers: Handlers::default(), info, era: None, quiet_server: false }
    }

    /// A server this client spawns ([`ClientBuilder::connect_process`]) logs to a buffer,
    /// not to this process's stderr: its last lines are shown only in the error that says
    /// it ended ([`ClientError::ServerExited`]).
    pub fn quiet_server(mut self, quiet: bool) -> ClientBuilder {
        self.quiet_server = quiet;
        self
    }

    /// Checks an `https://` server's certificate against the CA certificates of the PEM file
    /// `path` (a private CA) instead of the system's roots.
    pub fn ca_file(mut self, path: impl Into<std::path::PathBuf>) -> ClientBuilder {
        self.ca_file = Some(path.into());
        self
    }

    /// Sends `Authorization: Bearer <token>` on every HTTP request.
    pub fn token(mut self, token: impl Into<String>) -> ClientBuilder {
        self.token = Some(token.into());
        self
    }

    /// Sends the HTTP header `name: value` on every request (e.g. an API key an upstream
    /// wants); over stdio it is ignored. Checked when connecting.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> ClientBuilder {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Answers `elicitation/create`; the client then declares the `elicitation` capability,
    /// and `tasks.requests.elicitation.create` (with `tasks.list` and `tasks.cancel`): a
    /// request sent with `params.task` is answered at once with a task, the handler runs in
    /// the background, and the server reads the answer with `tasks/result`. Such tasks live in
    /// memory for the session (the `ttl` asked for, up to a day; an hour when none is asked).
    pub fn elicitation(mut self, handler: impl ElicitationHandler) -> ClientBuilder {
        self.handlers.elicitation = Some(Arc::new(handler));
        self
    }

    /// Answers `sampling/createMessage`; the client then declares the `sampling` capability,
    /// and `tasks.requests.sampling.createMessage`, hosting task-augmented requests as
    /// [`ClientBuilder::elicitation`] says.
    pub fn sampling(mut self, handler: impl SamplingHandler) -> ClientBuilder {
        self.handlers.sampling = Some(Arc::new(handler));
        self
    }

    /// Speaks only `era`, instead of negotiating: [`Era::Modern`] fails against a server
    /// that does not serve 2026-07-28, [`Era::Legacy`] never probes with `server/discover`.
    /// By default the client probes with `server/discover` and speaks 2026-07-28 when the
    /// server serves it, else falls back to `initialize` (2025-11-25).
    pub fn era(mut self, era: Era) -> ClientBuilder {
        self.era = Some(era);
        self
    }

    /// The `clientInfo` sent at `initialize` (default: `mcp-tasks-client` and its version).
    pub fn client_info(mut self, info: Implementation) -> ClientBuilder {
        self.info = info;
        self
    }

    /// Connects to the Streamable HTTP endpoint `url` (e.g. `http://127.0.0.1:8765/mcp`):
    /// `initialize`, `notifications/initialized`, then the standalone SSE stream is opened
    /// in the background for server requests not tied to a call.
    ///
    /// # Errors
    /// A bad URL, an unreachable server, an HTTP error (401 without a valid token), or an
    /// `initialize` the server refused or answered with another protocol version.
    pub async fn connect_http(self, url: &str) -> Result<Client, ClientError> {
        let transport = HttpTransport::new(url, self.token.clone(), &self.headers, self.ca_file.as_deref())?;
        let connection = Arc::new(Connection::new(Transport::Http(transport), self.handlers.clone()));
        self.handshake(connection).await
    }

    /// Spawns a stdio server from a command line such as `mcp-tasks serve --stdio`, split
    /// into words as a POSIX shell would (quotes and backslashes), but run without a shell:
    /// no variables, globs, pipes or redirections. See [`ClientBuilder::connect_process`].
    ///
    /// # Errors
    /// [`ClientError::InvalidArguments`] for an empty or unbalanced command line, then as
    /// [`ClientBuilder::connect_process`].
    pub async fn connect_command(self, command: &str) -> Result<Client, ClientError> {
        let words = shlex::split(command)
            .ok_or_else(|| ClientError::InvalidArguments(format!("the command {command:?} has an unclosed quote")))?;
        let Some((program, args)) = words.split_first() else {
            return Err(ClientError::InvalidArguments("the command is empty".into()));
        };
        self.connect_process(program, args).await
    }

    /// Spawns `program` with `args` (no shell) and talks MCP over its stdin and stdout,
    /// one JSON-RPC message per line; its stderr goes to ours. The process is killed when
    /// the last clone of the [`Client`] is dropped.
    ///
    /// # Errors
    /// [`ClientError::Spawn`] if it cannot start; [`ClientError::ServerExited`] if it ends
    /// before answering `initialize`; or an `initialize` the server refused.
    pub async fn connect_process<S: AsRef<OsStr>>(self, program: &str, args: &[S]) -> Result<Client, ClientError> {
        let (transport, reader) = StdioTransport::spawn(program, args, self.quiet_server)?;
        self.connect_stdio_transport(transport, reader).await
    }

    /// Talks MCP over any byte streams, one JSON-RPC message per line: `reader` carries the
    /// server's messages, `writer` ours (e.g. the two ends of a `tokio::io::duplex`, or a
    /// process's stdout and stdin). The session ends when `reader` does.
    ///
    /// # Errors
    /// [`ClientError::ServerExited`] if `reader` ends before `initialize` is answered, a
    /// write error, or an `initialize` the server refused.
    pub async fn connect_stdio(
        self,
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Result<Client, ClientError> {
        let (transport, reader) = StdioTransport::new(reader, writer);
        self.connect_stdio_transport(transport, reader).await
    }

    async fn connect_stdio_transport(self, transport: StdioTransport, reader: LineReader) -> Result<Client, ClientError> {
        let connection = Arc::new(Connection::new(Transport::Stdio(transport), self.handlers.clone()));
        connection.read_lines(reader);
        let connected = self.handshake(Arc::clone(&connection)).await;
        if connected.is_err() {
            connection.stop.cancel();
            connection.transport.shutdown();
        }
        connected
    }

    /// Picks the connection's [`Dialect`]: `server/discover` first (unless pinned to
    /// 2025-11-25); a server that serves 2026-07-28 is spoken to in it, per request; else
    /// `initialize`.
    async fn handshake(self, connection: Arc<Connection>) -> Result<Client, ClientError> {
        let identity = Identity { capabilities: self.modern_capabilities(), info: self.info.clone() };
        if self.era != Some(Era::Legacy) {
            match discover(&connection, &identity).await? {
                Some(server) => {
                    return Ok(Client::new(connection, server, Dialect::Modern(Arc::new(identity))));
                }
                None if self.era == Some(Era::Modern) => {
                    return Err(ClientError::Protocol(
                        "the server does not serve MCP 2026-07-28 (server/discover did not list it); connect in \
                         auto or 2025-11-25 mode"
                            .to_owned(),
                    ));
                }
                None => {
                    tracing::debug!("the server does not serve 2026-07-28; falling back to initialize");
                    // A server that made a session for the probe (the Python SDK's does, and
                    // ends it after the error) must not see its id on `initialize`: 404.
                    if let Transport::Http(http) = &connection.transport {
                        if let Err(error) = http.delete_session().await {
                            tracing::debug!(%error, "ending the session the probe was given");
                        }
                        http.forget_session();
                    }
                }
            }
        }
        self.initialize(connection).await
    }

    /// The 2026-07-28 client capabilities: what a handler answers.
    fn modern_capabilities(&self) -> Map<String, Value> {
        let mut capabilities = Map::new();
        if self.handlers.elicitation.is_some() {
            capabilities.insert("elicitation".into(), json!({"form": {}}));
        }
        if self.handlers.sampling.is_some() {
            capabilities.insert("sampling".into(), json!({}));
        }
        capabilities
    }

    /// `initialize`, `notifications/initialized`, then (HTTP) the standalone SSE stream.
    async fn initialize(self, connection: Arc<Connection>) -> Result<Client, ClientError> {
        let mut capabilities = Map::new();
        if self.handlers.elicitation.is_some() {
            capabilities.insert("elicitation".into(), json!({}));
        }
        if self.handlers.sampling.is_some() {
            capabilities.insert("sampling".into(), json!({}));
        }
        // Client-hosted tasks for the request kinds a handler answers. tasks.list is declared
        // too: the one requestor is the server of this session, so it lists only its own.
        let mut requests = Map::new();
        if self.handlers.elicitation.is_some() {
            requests.insert("elicitation".into(), json!({"create": {}}));
        }
        if self.handlers.sampling.is_some() {
            requests.insert("sampling".into(), json!({"createMessage": {}}));
        }
        if !requests.is_empty() {
            capabilities.insert("tasks".into(), json!({"list": {}, "cancel": {}, "requests": requests}));
        }
        let params = legacy::initialize_params(Value::Object(capabilities), self.info);
        let answer = connection.request(method::INITIALIZE, params).await?;
        let server = legacy::server_info(answer)?;
        connection.transport.set_initialized();
        connection.notify(method::INITIALIZED, json!({})).await?;
        connection.open_standalone().await;
        Ok(Client::new(connection, server, Dialect::Legacy))
    }
}

/// How long a `server/discover` probe waits before the client falls back to `initialize`
/// (a 2025-11-25 server over stdio may not answer an unknown request before `initialize`).
const DISCOVER_WAIT: Duration = Duration::from_secs(10);

/// The probe: `server/discover` as a 2026-07-28 request. `None` (and the transport back in
/// 2025-11-25) when the server refuses it, answers another way, or does not answer in time.
async fn discover(connection: &Arc<Connection>, identity: &Identity) -> Result<Option<ServerInfo>, ClientError> {
    connection.transport.set_modern(true);
    let probe = || tokio::time::timeout(DISCOVER_WAIT, connection.request(SERVER_DISCOVER, identity.frame(json!({}), false)));
    let mut outcome = probe().await;
    // SEP-2575: a refusal with -32022 UnsupportedProtocolVersion whose `data.supported`
    // lists 2026-07-28 after all is retried once, as a new request (`supported` without it
    // falls back to initialize below).
    if let Ok(Err(error)) = &outcome
        && unsupported_version_data(error).is_some_and(|data| lists_modern(&data))
    {
        tracing::debug!(%error, "server/discover refused a version the server lists as supported; retrying once");
        outcome = probe().await;
    }
    let answer = match outcome {
        Ok(Ok(answer)) => modern::server_info(answer),
        // Refused (a 2025-11-25 server: unknown method, no session, bad request).
        Ok(Err(ClientError::Rpc { .. } | ClientError::Http { .. } | ClientError::Protocol(_))) | Err(_) => Ok(None),
        Ok(Err(other)) => Err(other),
    };
    if !matches!(answer, Ok(Some(_))) {
        connection.transport.set_modern(false);
    }
    answer
}

/// The `data` of a -32022 UnsupportedProtocolVersion refusal: a JSON-RPC error, or the
/// JSON-RPC body of an HTTP error (400 over Streamable HTTP).
fn unsupported_version_data(error: &ClientError) -> Option<Value> {
    match error {
        ClientError::Rpc { code: UNSUPPORTED_PROTOCOL_VERSION, data, .. } => data.clone(),
        ClientError::Http { body, .. } => {
            let body: Value = serde_json::from_str(body).ok()?;
            let error = body.get("error")?;
            (error.get("code")?.as_i64()? == UNSUPPORTED_PROTOCOL_VERSION).then(|| error.get("data").cloned())?
        }
        _ => None,
    }
}

/// Whether a -32022's `data.supported` lists 2026-07-28.
fn lists_modern(data: &Value) -> bool {
    data.get("supported")
        .and_then(Value::as_array)
        .is_some_and(|supported| supported.iter().any(|version| version == mcp_tasks_protocol::modern::PROTOCOL_VERSION))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_32022_that_lists_2026_07_28_is_read_from_an_http_400_body_or_a_json_rpc_error() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}});
        let http = ClientError::Http { status: 400, body: body.to_string() };
        assert!(unsupported_version_data(&http).is_some_and(|data| lists_modern(&data)));
        let rpc = ClientError::Rpc { code: -32022, message: "no".into(), data: Some(json!({"supported": ["2025-11-25"]})) };
        assert!(unsupported_version_data(&rpc).is_some_and(|data| !lists_modern(&data)), "only 2025-11-25: fall back");
        let other = ClientError::Http { status: 400, body: json!({"error": {"code": -32600, "message": "x"}}).to_string() };
        assert!(unsupported_version_data(&other).is_none());
        assert!(unsupported_version_data(&ClientError::Http { status: 404, body: "not json".into() }).is_none());
    }
}

