//! [`Client`]: one initialized MCP session, and the calls a host makes on it.

use std::ffi::OsStr;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_tasks_protocol::mcp::{CallToolResult, Implementation, ProgressToken, RequestMeta};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::connection::{Connection, Handlers, Transport};
use crate::error::ClientError;
use crate::handlers::{ElicitationHandler, SamplingHandler};
use crate::http::HttpTransport;
use crate::legacy::{self, method};
use crate::modern::{self, Identity};
use crate::param_headers;
use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::mcp::IDEMPOTENCY_KEY_META;
use mcp_tasks_protocol::modern::UNSUPPORTED_PROTOCOL_VERSION;
use mcp_tasks_protocol::modern::method::SERVER_DISCOVER;
use crate::stdio::{LineReader, StdioTransport};
use crate::task::TaskHandle;
use crate::types::{ServerInfo, TaskInfo, TaskMode, ToolInfo};

/// How long [`Client::close`] waits for a stdio server before each signal.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Configures a [`Client`] before it connects: token, handlers, identity.
#[must_use]
pub struct ClientBuilder {
    token: Option<String>,
    /// Extra HTTP headers on every request.
    headers: Vec<(String, String)>,
    handlers: Handlers,
    info: Implementation,
    /// The era to speak; `None`: the server's newest (probe, then fall back).
    era: Option<Era>,
}

impl ClientBuilder {
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
        let transport = HttpTransport::new(url, self.token.clone(), &self.headers)?;
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
        let (transport, reader) = StdioTransport::spawn(program, args)?;
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

    /// The era: `server/discover` first (unless pinned to 2025-11-25); a server that
    /// serves 2026-07-28 is spoken to in it, per request; else `initialize`.
    async fn handshake(self, connection: Arc<Connection>) -> Result<Client, ClientError> {
        let identity = Identity { capabilities: self.modern_capabilities(), info: self.info.clone() };
        if self.era != Some(Era::Legacy) {
            match discover(&connection, &identity).await? {
                Some(server) => {
                    let inner = Inner::new(connection, server, Some(identity));
                    return Ok(Client { inner: Arc::new(inner) });
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
        Ok(Client { inner: Arc::new(Inner::new(connection, server, None)) })
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

/// An initialized MCP session (2025-11-25) with a server, over Streamable HTTP or stdio.
///
/// Cheap to clone; the session's background streams end when the last clone is dropped.
///
/// ```no_run
/// # async fn demo() -> Result<(), mcp_tasks_client::ClientError> {
/// use mcp_tasks_client::Client;
/// let client = Client::connect_http("http://127.0.0.1:8765/mcp", None).await?;
/// let task = client.call_tool_as_task("render", serde_json::json!({"scene": 1}), None).await?;
/// let result = task.wait().await?; // owns polling: tasks/result, resumption, tasks/get
/// println!("{:?}", result.content);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    connection: Arc<Connection>,
    server: ServerInfo,
    /// `tools/list`, once fetched (for the tools' task modes).
    tools: Mutex<Option<Vec<ToolInfo>>>,
    /// The next progress token's number.
    next_token: std::sync::atomic::AtomicU64,
    /// 2026-07-28: what every request says of the client; `None` in 2025-11-25.
    modern: Option<Arc<Identity>>,
}

impl Inner {
    fn new(connection: Arc<Connection>, server: ServerInfo, modern: Option<Identity>) -> Inner {
        Inner {
            connection,
            server,
            tools: Mutex::new(None),
            next_token: std::sync::atomic::AtomicU64::new(1),
            modern: modern.map(Arc::new),
        }
    }
}

/// An open 2026-07-28 `subscriptions/listen` ([`Client::listen_tool_changes`]); dropping it
/// ends the subscription.
pub struct Subscription(crate::connection::Listening);

impl Subscription {
    /// Whether the stream is still open (a server that refused it, or a stream that ended,
    /// sends nothing more).
    pub fn is_live(&self) -> bool {
        self.0.is_live()
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").field("live", &self.is_live()).finish()
    }
}

/// How many Multi Round-Trip rounds (2026-07-28 `InputRequiredResult`) one call may take
/// before the client gives up on it.
pub(crate) const MAX_ROUNDS: usize = 16;

/// What a call came to: its result, or the task the server made of it.
#[derive(Debug)]
pub enum Called {
    /// The tool's result (which may have `isError`).
    Result(CallToolResult),
    /// A task; [`TaskHandle::wait`] drives it to its result.
    Task(TaskHandle),
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let transport = match &self.inner.connection.transport {
            Transport::Http(_) => "http",
            Transport::Stdio(_) => "stdio",
        };
        f.debug_struct("Client")
            .field("server", &self.inner.server.implementation.name)
            .field("transport", &transport)
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.connection.stop.cancel();
        self.connection.transport.shutdown();
    }
}

impl Client {
    /// A builder, to set handlers or a token before connecting.
    pub fn builder() -> ClientBuilder {
        let info = Implementation::new("mcp-tasks-client", env!("CARGO_PKG_VERSION"));
        ClientBuilder { token: None, headers: Vec::new(), handlers: Handlers::default(), info, era: None }
    }

    /// Connects to `url` with an optional bearer token and no handlers: see
    /// [`ClientBuilder::connect_http`].
    ///
    /// # Errors
    /// As [`ClientBuilder::connect_http`].
    pub async fn connect_http(url: &str, token: Option<String>) -> Result<Client, ClientError> {
        let builder = Client::builder();
        match token {
            Some(token) => builder.token(token),
            None => builder,
        }
        .connect_http(url)
        .await
    }

    /// Resolves when the stdio server's output has ended (it exited or closed its stdout):
    /// nothing more will be answered on this session. Over HTTP, where each request has its
    /// own connection, it resolves only when the client is closed; failed requests say when
    /// the server is gone.
    pub async fn closed(&self) {
        let connection = &self.inner.connection;
        tokio::select! {
            () = connection.closed.cancelled() => {}
            () = connection.stop.cancelled() => {}
        }
    }

    /// The process id of the stdio server this client spawned, while it runs.
    pub fn server_process_id(&self) -> Option<u32> {
        match &self.inner.connection.transport {
            Transport::Stdio(stdio) => stdio.child_id(),
            Transport::Http(_) => None,
        }
    }

    /// Ends the session gracefully, for every clone of this client: for a spawned stdio
    /// server, closes its stdin, waits up to 2 s for it to exit, then sends SIGTERM and waits
    /// 2 s more, then SIGKILL, and reaps it; over HTTP, sends DELETE with the session id (a
    /// server that answers 405 keeps the session until it expires). Dropping the last clone
    /// instead kills a spawned server at once. See [`Client::close_within`].
    ///
    /// Returns how a spawned server ended (`None` over HTTP or a caller's reader/writer).
    ///
    /// # Errors
    /// Over HTTP, an unreachable server or an HTTP error other than 404 and 405.
    pub async fn close(self) -> Result<Option<ExitStatus>, ClientError> {
        self.close_within(CLOSE_GRACE).await
    }

    /// [`Client::close`] with another wait before each signal instead of 2 s.
    ///
    /// # Errors
    /// As [`Client::close`].
    pub async fn close_within(self, grace: Duration) -> Result<Option<ExitStatus>, ClientError> {
        let connection = &self.inner.connection;
        let outcome = match &connection.transport {
            Transport::Stdio(stdio) => Ok(stdio.close(grace).await),
            Transport::Http(http) => http.delete_session().await.map(|()| None),
        };
        connection.stop.cancel();
        outcome
    }

    /// Who the server is and what it does: its name and version, its instructions, the
    /// protocol revision spoken, whether it runs tool calls as tasks.
    pub fn server(&self) -> &ServerInfo {
        &self.inner.server
    }

    /// Every tool of the server (all pages of `tools/list`); remembered for
    /// [`Client::call_tool_as_task`].
    ///
    /// # Errors
    /// Transport, HTTP or JSON-RPC errors.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.map_or_else(|| json!({}), |cursor| json!({ "cursor": cursor }));
            // 2026-07-28: listed as the calls are made, with the tasks extension when the
            // server offers it (a server may list other tools to clients without tasks, e.g.
            // mcp-tasks' helper tools).
            let answer = self.request_framed(method::TOOLS_LIST, params, self.server_runs_tool_tasks(), &[]).await?;
            let (page, next_cursor) = match self.inner.modern {
                Some(_) => modern::tools_page(answer)?,
                None => legacy::tools_page(answer)?,
            };
            tools.extend(page);
            match next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        *self.inner.tools.lock().unwrap_or_else(PoisonError::into_inner) = Some(tools.clone());
        Ok(tools)
    }

    /// Calls a tool plainly and waits for its result (a result with `isError: true` is a
    /// result, not an error).
    ///
    /// # Errors
    /// `arguments` that are not an object or null, transport errors, or a JSON-RPC error
    /// (an unknown tool, arguments that do not fit its schema, a tool that requires a task).
    ///
    /// In 2026-07-28 the call declares no tasks extension (so the server answers it
    /// plainly), and a work that asks the client is answered in rounds
    /// (`InputRequiredResult`) by the handlers, at most 16.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, ClientError> {
        let arguments = arguments_map(arguments)?;
        if self.inner.modern.is_some() {
            return match self.rounds(name, arguments, false, None).await? {
                modern::Answer::Complete(result) => from_value(result, method::TOOLS_CALL),
                _ => Err(ClientError::Protocol(format!("tools/call of {name:?} made a task that was not asked for"))),
            };
        }
        let params = legacy::call_params(name, arguments, None, self.progress_meta());
        from_value(self.request(method::TOOLS_CALL, params).await?, method::TOOLS_CALL)
    }

    /// [`Client::call_tool`] with a progress token the caller chose (the server's
    /// `notifications/progress` for the call carry it: match them with
    /// [`ServerNotification::progress_token`](crate::ServerNotification::progress_token)), that
    /// can be cancelled: when `cancel` fires first, the client sends
    /// `notifications/cancelled` for the request (the server should stop the work) and
    /// returns [`ClientError::CallCancelled`].
    ///
    /// # Errors
    /// As [`Client::call_tool`]; [`ClientError::CallCancelled`] once `cancel` fired.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        progress_token: &str,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<CallToolResult, ClientError> {
        let arguments = arguments_map(arguments)?;
        let meta = RequestMeta { progress_token: Some(ProgressToken::String(progress_token.to_owned())), rest: Default::default() };
        let called = async {
            if self.inner.modern.is_some() {
                let mut params = json!({"name": name, "_meta": meta});
                if let Some(arguments) = arguments {
                    params["arguments"] = Value::Object(arguments);
                }
                return match self.rounds_from(name, params, false).await? {
                    modern::Answer::Complete(result) => from_value(result, method::TOOLS_CALL),
                    _ => Err(ClientError::Protocol(format!("tools/call of {name:?} made a task that was not asked for"))),
                };
            }
            let params = legacy::call_params(name, arguments, None, meta);
            from_value(self.request(method::TOOLS_CALL, params).await?, method::TOOLS_CALL)
        };
        self.inner.connection.cancellable(called, cancel).await
    }

    /// Sends a request of any `method` with `params` in the session's era (2026-07-28: with
    /// the per-request `_meta`) and returns its result as JSON: for the methods this client
    /// has no typed call for, e.g. `resources/read`, `prompts/get`, `completion/complete`.
    ///
    /// # Errors
    /// Transport, HTTP or JSON-RPC errors.
    pub async fn request_raw(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.request(method, params).await
    }

    /// Calls a tool, as a task where that is how the era and the tool have it: in
    /// 2025-11-25 as a task when the server runs tool calls as tasks and the tool's
    /// [`TaskMode`] allows it, plainly otherwise; in 2026-07-28 the server decides (the
    /// client declares the tasks extension when the server offers it).
    ///
    /// # Errors
    /// As [`Client::call_tool`] and [`Client::call_tool_as_task`].
    pub async fn call(&self, name: &str, arguments: Value) -> Result<Called, ClientError> {
        self.call_keyed(name, arguments, None).await
    }

    /// [`Client::call`] that `cancel` can stop until it is answered (a call answered with a
    /// task is then cancelled with [`TaskHandle::cancel`]): the requests in flight are given
    /// up and the server is sent `notifications/cancelled` for each.
    ///
    /// # Errors
    /// As [`Client::call`]; [`ClientError::CallCancelled`] once `cancel` fired.
    pub async fn call_cancellable(
        &self,
        name: &str,
        arguments: Value,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Called, ClientError> {
        self.inner.connection.cancellable(self.call_keyed(name, arguments, None), cancel).await
    }

    /// [`Client::call`] made once-only by idempotency `key`
    /// (`_meta["dev.mcp-tasks/idempotency-key"]`, see the README): a call that makes a
    /// task, sent again with the same key (after a crash, a lost answer), gets the task the
    /// first one made from a server that honours the key (mcp-tasks does), never a second
    /// one. A plain call runs each time (2025-11-25: it is sent without the key).
    ///
    /// # Errors
    /// As [`Client::call`]; `-32602` from the server for a key used for another call.
    pub async fn call_with_key(&self, name: &str, arguments: Value, key: &str) -> Result<Called, ClientError> {
        self.call_keyed(name, arguments, Some(key)).await
    }

    async fn call_keyed(&self, name: &str, arguments: Value, key: Option<&str>) -> Result<Called, ClientError> {
        if self.inner.modern.is_some() {
            return self.call_modern(name, arguments_map(arguments)?, key).await;
        }
        if self.server_runs_tool_tasks() && self.tool(name).await?.task_mode != TaskMode::Forbidden {
            return self.as_task_legacy(name, arguments, None, key).await.map(Called::Task);
        }
        self.call_tool(name, arguments).await.map(Called::Result)
    }

    /// 2026-07-28 [`Client::call`]: the server decides.
    async fn call_modern(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        key: Option<&str>,
    ) -> Result<Called, ClientError> {
        match self.rounds(name, arguments, self.server_runs_tool_tasks(), key).await? {
            modern::Answer::Complete(result) => from_value(result, method::TOOLS_CALL).map(Called::Result),
            modern::Answer::Task(task) => Ok(Called::Task(self.handle(task))),
            modern::Answer::InputRequired { .. } => {
                Err(ClientError::Protocol(format!("tools/call of {name:?} ended its rounds asking for input")))
            }
        }
    }

    /// 2026-07-28: `tools/call` (with the tasks extension when `tasks`), its rounds
    /// answered by the handlers, to a result that is not `input_required`.
    async fn rounds(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        tasks: bool,
        key: Option<&str>,
    ) -> Result<modern::Answer, ClientError> {
        let mut params = json!({"name": name, "_meta": self.progress_meta()});
        if let Some(key) = key {
            params["_meta"][IDEMPOTENCY_KEY_META] = json!(key);
        }
        if let Some(arguments) = arguments {
            params["arguments"] = Value::Object(arguments);
        }
        self.rounds_from(name, params, tasks).await
    }

    /// [`Client::rounds`] from the first round's `params`.
    async fn rounds_from(&self, name: &str, mut params: Value, tasks: bool) -> Result<modern::Answer, ClientError> {
        let mut headers = self.param_headers(name, params.get("arguments").and_then(Value::as_object)).await;
        let mut relisted = false;
        for _ in 0..MAX_ROUNDS {
            let answer = match self.request_framed(method::TOOLS_CALL, params.clone(), tasks, &headers).await {
                Ok(answer) => answer,
                // SEP-2243: a header mismatch may mean the tool's x-mcp-header annotations
                // changed since the client listed them: list again and retry once.
                Err(error) if !relisted && header_mismatch(&error) => {
                    relisted = true;
                    tracing::debug!(tool = name, %error, "header mismatch: listing the tools again");
                    self.list_tools().await?;
                    headers = self.param_headers(name, params.get("arguments").and_then(Value::as_object)).await;
                    continue;
                }
                Err(error) => return Err(error),
            };
            match modern::answer(answer, method::TOOLS_CALL)? {
                modern::Answer::InputRequired { requests, state } => {
                    let token = crate::handlers::progress_token_of(&params);
                    let responses =
                        modern::answer_all(&self.inner.connection.handlers, &requests, None, token.as_deref()).await?;
                    params["inputResponses"] = Value::Object(responses);
                    match state {
                        Some(state) => params["requestState"] = json!(state),
                        None => {
                            params.as_object_mut().map(|params| params.remove("requestState"));
                        }
                    }
                }
                done => return Ok(done),
            }
        }
        Err(ClientError::Protocol(format!("tools/call of {name:?} asked for input more than {MAX_ROUNDS} rounds")))
    }

    /// 2026-07-28 over HTTP (SEP-2243): the `Mcp-Param-*` headers of a call, from the
    /// tool's `x-mcp-header` annotations. The tool is looked up in the last `tools/list`, and
    /// listed once more when it is not there; a tool the server does not list gets none (the
    /// server answers the call as it sees fit).
    async fn param_headers(&self, name: &str, arguments: Option<&Map<String, Value>>) -> Vec<(String, String)> {
        let over_http = matches!(self.inner.connection.transport, Transport::Http(_));
        if !over_http || arguments.is_none_or(Map::is_empty) {
            return Vec::new();
        }
        match self.tool(name).await {
            Ok(tool) => {
                let annotated = param_headers::annotations(&tool.input_schema).unwrap_or_default();
                param_headers::headers(&annotated, arguments)
            }
            Err(error) => {
                tracing::debug!(tool = name, %error, "no tool definition: no Mcp-Param headers");
                Vec::new()
            }
        }
    }

    fn handle(&self, task: TaskInfo) -> TaskHandle {
        TaskHandle::new(Arc::clone(&self.inner.connection), task).in_era(self.inner.modern.clone())
    }

    /// Whether the server runs `tools/call` as a task when asked (for the tools whose
    /// [`TaskMode`] allows it): [`ServerInfo::runs_tool_tasks`]. In 2025-11-25, whether it
    /// declared `tasks.requests.tools.call`.
    pub fn server_runs_tool_tasks(&self) -> bool {
        self.inner.server.runs_tool_tasks
    }

    /// Calls a tool as a task and returns a [`TaskHandle`] that drives it to its end.
    ///
    /// Refuses (without calling) when the server does not run tool calls as tasks
    /// (`tasks.requests.tools.call`) or the tool's [`TaskMode`] is `forbidden`
    /// (`execution.taskSupport` absent or `forbidden`): a task was asked
    /// for, and silently running the call plainly would lose what a task gives (the
    /// detach, the id to resume with). Use [`Client::call_tool`] for those tools. `ttl` is
    /// the retention asked for; the server may grant another.
    ///
    /// # Errors
    /// [`ClientError::TasksUnsupported`], [`ClientError::UnknownTool`], or the call's errors.
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        ttl: Option<Duration>,
    ) -> Result<TaskHandle, ClientError> {
        let unsupported = |reason: &str| ClientError::TasksUnsupported { tool: name.to_owned(), reason: reason.to_owned() };
        if self.inner.modern.is_some() {
            if !self.server_runs_tool_tasks() {
                return Err(unsupported("the server does not offer the io.modelcontextprotocol/tasks extension"));
            }
            return match self.call_modern(name, arguments_map(arguments)?, None).await? {
                Called::Task(handle) => Ok(handle),
                Called::Result(result) => Err(ClientError::AnsweredInline { tool: name.to_owned(), result: Box::new(result) }),
            };
        }
        self.as_task_legacy(name, arguments, ttl, None).await
    }

    /// 2025-11-25 [`Client::call_tool_as_task`], with an idempotency key if any.
    async fn as_task_legacy(
        &self,
        name: &str,
        arguments: Value,
        ttl: Option<Duration>,
        key: Option<&str>,
    ) -> Result<TaskHandle, ClientError> {
        let unsupported = |reason: &str| ClientError::TasksUnsupported { tool: name.to_owned(), reason: reason.to_owned() };
        if !self.server_runs_tool_tasks() {
            return Err(unsupported("the server does not declare tasks.requests.tools.call"));
        }
        if self.tool(name).await?.task_mode == TaskMode::Forbidden {
            return Err(unsupported("its execution.taskSupport is \"forbidden\""));
        }
        let ttl = ttl.map(|ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        let mut meta = self.progress_meta();
        if let Some(key) = key {
            meta.rest.insert(IDEMPOTENCY_KEY_META.to_owned(), json!(key));
        }
        let token = match &meta.progress_token {
            Some(ProgressToken::String(token)) => Some(token.clone()),
            _ => None,
        };
        let params = legacy::call_params(name, arguments_map(arguments)?, Some(ttl), meta);
        let created = legacy::created_task(name, self.request(method::TOOLS_CALL, params).await?)?;
        Ok(TaskHandle::new(Arc::clone(&self.inner.connection), created).with_progress_token(token))
    }

    /// A `_meta` asking for progress under a token unique in this session
    /// (`ServerNotification::progress_token` matches it; [`TaskHandle::progress_token`]).
    fn progress_meta(&self) -> RequestMeta {
        let n = self.inner.next_token.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        RequestMeta { progress_token: Some(ProgressToken::String(format!("mcp-tasks-{n}"))), rest: Default::default() }
    }

    /// The era the session speaks.
    pub fn era(&self) -> Era {
        self.inner.server.era
    }

    /// Every notification the server sends from now on (progress, task status, log
    /// messages, list changes), on all of this session's streams. A subscriber that falls
    /// more than 256 behind loses the oldest (`RecvError::Lagged`).
    pub fn notifications(&self) -> tokio::sync::broadcast::Receiver<crate::ServerNotification> {
        self.inner.connection.notifications.subscribe()
    }

    /// 2026-07-28: asks the server for `notifications/tools/list_changed` with a
    /// `subscriptions/listen` (in this era list changes come only on such a stream); they
    /// reach [`Client::notifications`] like any other, until the returned [`Subscription`]
    /// is dropped. `None` in 2025-11-25, where a server sends list changes on the session's
    /// own streams unasked.
    pub fn listen_tool_changes(&self) -> Option<Subscription> {
        let identity = self.inner.modern.as_ref()?;
        let params = identity.frame(json!({"notifications": {"toolsListChanged": true}}), false);
        Some(Subscription(self.inner.connection.listen(params)))
    }

    /// [`Client::listen_tool_changes`] for every list: `notifications/tools/list_changed`,
    /// `notifications/resources/list_changed` and `notifications/prompts/list_changed`, and
    /// `notifications/resources/updated` for `resources` (URIs; the server agrees to those
    /// it sends).
    pub fn listen_list_changes(&self, resources: &[String]) -> Option<Subscription> {
        let identity = self.inner.modern.as_ref()?;
        let mut wanted = json!({"toolsListChanged": true, "resourcesListChanged": true, "promptsListChanged": true});
        if !resources.is_empty() {
            wanted["resourceSubscriptions"] = json!(resources);
        }
        let params = identity.frame(json!({"notifications": wanted}), false);
        Some(Subscription(self.inner.connection.listen(params)))
    }

    /// A handle on a task created earlier (e.g. by another process of the same principal),
    /// by its id; call [`TaskHandle::status`] to learn where it stands.
    pub fn task(&self, task_id: &str) -> TaskHandle {
        TaskHandle::unseen(Arc::clone(&self.inner.connection), task_id).in_era(self.inner.modern.clone())
    }

    /// Every task the server lists for this requestor (all pages of `tasks/list`).
    ///
    /// # Errors
    /// Transport, HTTP or JSON-RPC errors (a server without `tasks.list` answers -32601);
    /// [`ClientError::NotInEra`] in 2026-07-28, which has no `tasks/list`.
    pub async fn list_tasks(&self) -> Result<Vec<TaskInfo>, ClientError> {
        if self.inner.modern.is_some() {
            return Err(ClientError::NotInEra {
                what: "tasks/list",
                instead: "a client keeps the ids of the tasks it made (the mcp-tasks ledger does)",
            });
        }
        let mut tasks = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.map_or_else(|| json!({}), |cursor| json!({ "cursor": cursor }));
            let (page, next_cursor) = legacy::tasks_page(self.request(method::TASKS_LIST, params).await?)?;
            tasks.extend(page);
            match next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok(tasks)
    }

    async fn tool(&self, name: &str) -> Result<ToolInfo, ClientError> {
        let known = self.inner.tools.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let tools = match known {
            Some(tools) if tools.iter().any(|tool| tool.name == name) => tools,
            _ => self.list_tools().await?,
        };
        tools.into_iter().find(|tool| tool.name == name).ok_or_else(|| ClientError::UnknownTool(name.to_owned()))
    }

    /// A request in the session's era (2026-07-28: with the per-request `_meta`, the tasks
    /// extension declared on `tasks/*`).
    async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.request_framed(method, params, method.starts_with("tasks/"), &[]).await
    }

    async fn request_framed(
        &self,
        method: &str,
        params: Value,
        tasks: bool,
        headers: &[(String, String)],
    ) -> Result<Value, ClientError> {
        let params = match &self.inner.modern {
            Some(identity) => identity.frame(params, tasks),
            None => params,
        };
        self.inner.connection.request_with_headers(method, params, headers).await
    }
}

/// Whether `error` is a 2026-07-28 `-32020` HeaderMismatch (over HTTP, a 400 with it).
fn header_mismatch(error: &ClientError) -> bool {
    match error {
        ClientError::Rpc { code, .. } => *code == mcp_tasks_protocol::modern::HEADER_MISMATCH,
        ClientError::Http { status: 400, body } => serde_json::from_str::<Value>(body)
            .is_ok_and(|body| body["error"]["code"] == json!(mcp_tasks_protocol::modern::HEADER_MISMATCH)),
        _ => false,
    }
}

fn arguments_map(arguments: Value) -> Result<Option<Map<String, Value>>, ClientError> {
    match arguments {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        other => Err(ClientError::InvalidArguments(format!("tool arguments must be a JSON object, not {other}"))),
    }
}

pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

pub(crate) fn from_value<T: DeserializeOwned>(value: Value, method: &str) -> Result<T, ClientError> {
    serde_json::from_value(value).map_err(|e| ClientError::Protocol(format!("the result of {method} does not fit its schema: {e}")))
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
