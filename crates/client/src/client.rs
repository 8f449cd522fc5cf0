//! [`Client`]: one initialized MCP session, and the calls a host makes on it.

use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::mcp::{CallToolResult, ProgressToken, RequestMeta, method};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::builder::ClientBuilder;
use crate::connection::{Connection, Transport};
use crate::dialect::Dialect;
use crate::error::ClientError;
use crate::task::TaskHandle;
use crate::types::{ServerInfo, TaskInfo, ToolInfo};

/// How long [`Client::close`] waits for a stdio server before each signal.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// An MCP session with a server (2025-11-25 begun with `initialize`, or 2026-07-28 per request), over Streamable HTTP or stdio.
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
    /// The era spoken, chosen at the handshake.
    dialect: Dialect,
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
    /// A session over `connection` with `server`, speaking `dialect`.
    pub(crate) fn new(connection: Arc<Connection>, server: ServerInfo, dialect: Dialect) -> Client {
        let inner = Inner {
            connection,
            server,
            tools: Mutex::new(None),
            next_token: std::sync::atomic::AtomicU64::new(1),
            dialect,
        };
        Client { inner: Arc::new(inner) }
    }

    /// A builder, to set handlers or a token before connecting.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
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
            let (page, next_cursor) = self.inner.dialect.tools_page(answer)?;
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
        self.inner.dialect.call_tool(self, name, arguments, self.progress_meta()).await
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
        let called = self.inner.dialect.call_tool(self, name, arguments, meta);
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
    /// [`TaskMode`](crate::TaskMode) allows it, plainly otherwise; in 2026-07-28 the server decides (the
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
        self.inner.dialect.call(self, name, arguments, key).await
    }

    /// A handle on `task`, a task this session's server made, driven in the session's era.
    pub(crate) fn handle(&self, task: TaskInfo) -> TaskHandle {
        TaskHandle::new(Arc::clone(&self.inner.connection), self.inner.dialect.clone(), task)
    }

    /// The session's connection.
    pub(crate) fn connection(&self) -> &Arc<Connection> {
        &self.inner.connection
    }

    /// Whether the server runs `tools/call` as a task when asked (for the tools whose
    /// [`TaskMode`](crate::TaskMode) allows it): [`ServerInfo::runs_tool_tasks`]. In 2025-11-25, whether it
    /// declared `tasks.requests.tools.call`.
    pub fn server_runs_tool_tasks(&self) -> bool {
        self.inner.server.runs_tool_tasks
    }

    /// Calls a tool as a task and returns a [`TaskHandle`] that drives it to its end.
    ///
    /// Refuses (without calling) when the server does not run tool calls as tasks
    /// (`tasks.requests.tools.call`) or the tool's [`TaskMode`](crate::TaskMode) is `forbidden`
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
        self.inner.dialect.call_as_task(self, name, arguments, ttl).await
    }

    /// A `_meta` asking for progress under a token unique in this session
    /// (`ServerNotification::progress_token` matches it; [`TaskHandle::progress_token`]).
    pub(crate) fn progress_meta(&self) -> RequestMeta {
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
        let wanted = json!({"toolsListChanged": true});
        self.inner.dialect.listen(&self.inner.connection, wanted, false).map(Subscription)
    }

    /// [`Client::listen_tool_changes`] for every list: `notifications/tools/list_changed`,
    /// `notifications/resources/list_changed` and `notifications/prompts/list_changed`, and
    /// `notifications/resources/updated` for `resources` (URIs; the server agrees to those
    /// it sends).
    pub fn listen_list_changes(&self, resources: &[String]) -> Option<Subscription> {
        let mut wanted = json!({"toolsListChanged": true, "resourcesListChanged": true, "promptsListChanged": true});
        if !resources.is_empty() {
            wanted["resourceSubscriptions"] = json!(resources);
        }
        self.inner.dialect.listen(&self.inner.connection, wanted, false).map(Subscription)
    }

    /// A handle on a task created earlier (e.g. by another process of the same principal),
    /// by its id; call [`TaskHandle::status`] to learn where it stands.
    pub fn task(&self, task_id: &str) -> TaskHandle {
        TaskHandle::unseen(Arc::clone(&self.inner.connection), self.inner.dialect.clone(), task_id)
    }

    /// Every task the server lists for this requestor (all pages of `tasks/list`).
    ///
    /// # Errors
    /// Transport, HTTP or JSON-RPC errors (a server without `tasks.list` answers -32601);
    /// [`ClientError::NotInEra`] in 2026-07-28, which has no `tasks/list`.
    pub async fn list_tasks(&self) -> Result<Vec<TaskInfo>, ClientError> {
        self.inner.dialect.list_tasks(self).await
    }

    /// The tool `name` as last listed, listed again when it is not there.
    pub(crate) async fn tool(&self, name: &str) -> Result<ToolInfo, ClientError> {
        let known = self.inner.tools.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let tools = match known {
            Some(tools) if tools.iter().any(|tool| tool.name == name) => tools,
            _ => self.list_tools().await?,
        };
        tools.into_iter().find(|tool| tool.name == name).ok_or_else(|| ClientError::UnknownTool(name.to_owned()))
    }

    /// A request in the session's era (2026-07-28: with the per-request `_meta`, the tasks
    /// extension declared on `tasks/*`).
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.request_framed(method, params, method.starts_with("tasks/"), &[]).await
    }

    /// A request with its params framed for the era (`tasks`: the tasks extension declared)
    /// and extra HTTP `headers`.
    pub(crate) async fn request_framed(
        &self,
        method: &str,
        params: Value,
        tasks: bool,
        headers: &[(String, String)],
    ) -> Result<Value, ClientError> {
        let params = self.inner.dialect.frame(params, tasks);
        self.inner.connection.request_with_headers(method, params, headers).await
    }
}

/// The arguments of a call as its `params` carry them: an object, or none for null.
///
/// # Errors
/// [`ClientError::InvalidArguments`] for anything else.
pub(crate) fn arguments_map(arguments: Value) -> Result<Option<Map<String, Value>>, ClientError> {
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
