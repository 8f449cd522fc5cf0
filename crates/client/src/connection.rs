//! One session's message routing: requests wait for their responses by id, whichever
//! stream those arrive on; requests from the server go to the host's handlers and their
//! answers are POSTed back (task-augmented ones and the `tasks/*` requests about them go to
//! [`crate::hosted`]); a stream that breaks before its response is resumed with
//! `Last-Event-ID`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcp_tasks_protocol::jsonrpc::{self, Incoming, RequestId, RpcError};
use mcp_tasks_protocol::legacy::{RELATED_TASK, method, related_task_meta};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::handlers::{ElicitationHandler, SamplingHandler, ServerNotification, ServerRequest};
use crate::hosted::{self, HostedTasks};
use crate::http::{EventStream, HttpTransport, Reply};
use crate::stdio::{LineReader, StdioTransport};

/// How long connecting waits for the server to answer the standalone GET.
const STANDALONE_WAIT: Duration = Duration::from_secs(5);

/// Wait before reconnecting when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Resumption attempts in a row, without an event in between, before giving up a stream.
const MAX_RESUME_ATTEMPTS: u32 = 3;
/// Notifications kept for a subscriber that lags; older ones are dropped for it.
const NOTIFICATION_BUFFER: usize = 256;

type Waiter = oneshot::Sender<Result<Value, ClientError>>;

tokio::task_local! {
    /// The requests sent by the call [`Connection::cancellable`] runs.
    static SENT: Arc<Mutex<Vec<RequestId>>>;
}

/// The host's handlers for server requests.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub(crate) sampling: Option<Arc<dyn SamplingHandler>>,
}

impl Handlers {
    /// Whether a handler answers `method` (`elicitation/create`, `sampling/createMessage`).
    pub(crate) fn handles(&self, method: &str) -> bool {
        match method {
            method::ELICITATION_CREATE => self.elicitation.is_some(),
            method::SAMPLING_CREATE_MESSAGE => self.sampling.is_some(),
            _ => false,
        }
    }

    /// Runs the host's handler of the request; -32601 when there is none.
    pub(crate) async fn call(&self, request: ServerRequest) -> Result<Value, RpcError> {
        match request.method.as_str() {
            method::ELICITATION_CREATE => match &self.elicitation {
                Some(handler) => handler.elicit(request).await,
                None => Err(RpcError::method_not_found("this client answers no elicitation requests")),
            },
            method::SAMPLING_CREATE_MESSAGE => match &self.sampling {
                Some(handler) => handler.create_message(request).await,
                None => Err(RpcError::method_not_found("this client answers no sampling requests")),
            },
            other => Err(RpcError::method_not_found(format!("Method not found: {other}"))),
        }
    }
}

/// How messages reach the server.
pub(crate) enum Transport {
    /// Streamable HTTP: a POST per message, answers as JSON or SSE.
    Http(HttpTransport),
    /// stdio: one line per message each way; every answer arrives on the one reader.
    Stdio(StdioTransport),
}

impl Transport {
    /// Marks the handshake done (HTTP: later requests carry `MCP-Protocol-Version`).
    pub(crate) fn set_initialized(&self) {
        if let Transport::Http(http) = self {
            http.set_initialized();
        }
    }

    /// Speaks 2026-07-28 from now on (`true`), or 2025-11-25 (HTTP: the headers each POST
    /// carries; stdio has none).
    pub(crate) fn set_modern(&self, modern: bool) {
        if let Transport::Http(http) = self {
            http.set_modern(modern);
        }
    }

    /// Ends the transport's resources now (stdio: kills the child).
    pub(crate) fn shutdown(&self) {
        if let Transport::Stdio(stdio) = self {
            stdio.shutdown();
        }
    }
}

pub(crate) struct Connection {
    pub(crate) transport: Transport,
    pub(crate) handlers: Handlers,
    /// The tasks this client runs for the server (task-augmented server requests).
    pub(crate) hosted: HostedTasks,
    next_id: AtomicI64,
    /// Requests waiting for their response. A std mutex: never held across an await.
    pending: Mutex<HashMap<RequestId, Waiter>>,
    /// Ends the background streams when the client is dropped.
    pub(crate) stop: CancellationToken,
    /// Cancelled when the stdio server's output ended: nothing more will be answered.
    pub(crate) closed: CancellationToken,
    /// Every notification from the server, to whoever subscribed.
    pub(crate) notifications: broadcast::Sender<ServerNotification>,
}

/// An open `subscriptions/listen`; dropping it ends the subscription.
pub(crate) struct Listening {
    connection: Arc<Connection>,
    id: RequestId,
    stop: CancellationToken,
    live: Arc<std::sync::atomic::AtomicBool>,
}

impl Listening {
    /// Whether the stream may still bring notifications (not refused, not ended).
    pub(crate) fn is_live(&self) -> bool {
        self.live.load(Ordering::SeqCst)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Transport::Stdio(_) = self.connection.transport
            && self.is_live()
        {
            // stdio: the client cancels its listen request; the server then sends nothing more.
            let (connection, id) = (Arc::clone(&self.connection), self.id.clone());
            tokio::spawn(async move {
                let params = serde_json::json!({"requestId": id});
                let _ = connection.notify(mcp_tasks_protocol::mcp::method::NOTIFY_CANCELLED, params).await;
            });
        }
    }
}

/// Removes a request's waiter if the caller stops waiting.
struct PendingGuard<'a> {
    connection: &'a Connection,
    id: RequestId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.connection.pending().remove(&self.id);
    }
}

impl Connection {
    pub(crate) fn new(transport: Transport, handlers: Handlers) -> Connection {
        Connection {
            transport,
            handlers,
            hosted: HostedTasks::default(),
            next_id: AtomicI64::new(1),
            pending: Mutex::new(HashMap::new()),
            stop: CancellationToken::new(),
            closed: CancellationToken::new(),
            notifications: broadcast::channel(NOTIFICATION_BUFFER).0,
        }
    }

    fn pending(&self) -> MutexGuard<'_, HashMap<RequestId, Waiter>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends a request and waits for its result, from a JSON answer or from an SSE stream
    /// (resumed if it breaks).
    pub(crate) async fn request(self: &Arc<Self>, method: &str, params: Value) -> Result<Value, ClientError> {
        self.request_with_headers(method, params, &[]).await
    }

    /// [`Connection::request`] with extra HTTP headers in 2026-07-28 (`Mcp-Param-*`); stdio
    /// has no headers and ignores them.
    pub(crate) async fn request_with_headers(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        headers: &[(String, String)],
    ) -> Result<Value, ClientError> {
        let id = RequestId::from(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        self.pending().insert(id.clone(), tx);
        // Inside Connection::cancellable: noted, to be cancelled with the call.
        let _ = SENT.try_with(|sent| sent.lock().unwrap_or_else(PoisonError::into_inner).push(id.clone()));
        let _guard = PendingGuard { connection: self, id: id.clone() };
        let token = crate::handlers::progress_token_of(&params);
        let message = jsonrpc::request(&id, method, params);
        let http = match &self.transport {
            Transport::Http(http) => http,
            Transport::Stdio(stdio) => {
                stdio.send(&message).await?;
                return self.wait(rx).await;
            }
        };
        match http.post(&message, headers).await? {
            Reply::Json(message) => self.deliver(message),
            Reply::Stream(stream) => {
                let this = Arc::clone(self);
                let method = method.to_owned();
                tokio::spawn(async move { this.read(stream, Some((id, method)), token).await });
            }
            Reply::Accepted => {
                return Err(ClientError::Protocol(format!("the server answered 202 Accepted to the request {method}")));
            }
        }
        self.wait(rx).await
    }

    /// Runs `call` (requests of this connection) until `cancel` fires; then each request it
    /// still has in flight is given up and the server is sent `notifications/cancelled` for
    /// it. The requests are known by a task-local list that [`Connection::request`] fills
    /// (other calls on the connection, in other tasks, are not touched).
    pub(crate) async fn cancellable<T>(
        self: &Arc<Self>,
        call: impl std::future::Future<Output = Result<T, ClientError>>,
        cancel: &CancellationToken,
    ) -> Result<T, ClientError> {
        let sent = Arc::new(Mutex::new(Vec::new()));
        // Boxed, so that dropping it below ends the call (and its pending entries) before the
        // notifications go out.
        let mut call = Box::pin(SENT.scope(Arc::clone(&sent), call));
        tokio::select! {
            biased;
            outcome = &mut call => return outcome,
            () = cancel.cancelled() => {}
        }
        let in_flight: Vec<RequestId> = {
            let pending = self.pending();
            let sent = sent.lock().unwrap_or_else(PoisonError::into_inner);
            sent.iter().filter(|id| pending.contains_key(*id)).cloned().collect()
        };
        drop(call);
        for id in in_flight {
            let params = serde_json::json!({"requestId": id, "reason": "cancelled by the client"});
            if let Err(error) = self.notify(mcp_tasks_protocol::mcp::method::NOTIFY_CANCELLED, params).await {
                tracing::debug!(%error, "could not send notifications/cancelled");
            }
        }
        Err(ClientError::CallCancelled)
    }

    async fn wait(&self, rx: oneshot::Receiver<Result<Value, ClientError>>) -> Result<Value, ClientError> {
        tokio::select! {
            biased;
            outcome = rx => outcome.unwrap_or(Err(ClientError::Closed)),
            () = self.stop.cancelled() => Err(ClientError::Closed),
            () = self.closed.cancelled() => Err(self.exited()),
        }
    }

    fn exited(&self) -> ClientError {
        let (status, stderr) = match &self.transport {
            Transport::Stdio(stdio) => (stdio.exit_status(), stdio.last_words()),
            Transport::Http(_) => (None, Vec::new()),
        };
        ClientError::ServerExited { status, stderr }
    }

    /// Sends a notification (the server answers 202).
    pub(crate) async fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        self.expect_accepted(&jsonrpc::notification(method, params)).await
    }

    async fn expect_accepted(&self, message: &Value) -> Result<(), ClientError> {
        let http = match &self.transport {
            Transport::Http(http) => http,
            Transport::Stdio(stdio) => return stdio.send(message).await,
        };
        match http.post(message, &[]).await? {
            Reply::Accepted => Ok(()),
            Reply::Json(answer) => Err(ClientError::Protocol(format!("expected 202 Accepted, got {answer}"))),
            Reply::Stream(_) => Err(ClientError::Protocol("expected 202 Accepted, got an SSE stream".into())),
        }
    }

    /// Opens a 2026-07-28 `subscriptions/listen` (its `params` framed by the caller) in the
    /// background: its notifications reach [`Connection::notifications`] like any other;
    /// the stream is closed (HTTP) or cancelled (stdio: `notifications/cancelled`) when the
    /// returned guard is dropped. A server that refuses it, or a stream that ends, leaves
    /// the caller to poll: [`Listening::is_live`] says which.
    pub(crate) fn listen(self: &Arc<Self>, params: Value) -> Listening {
        let id = RequestId::from(self.next_id.fetch_add(1, Ordering::Relaxed));
        let message = jsonrpc::request(&id, mcp_tasks_protocol::modern::method::SUBSCRIPTIONS_LISTEN, params);
        let (stop, live) = (CancellationToken::new(), Arc::new(std::sync::atomic::AtomicBool::new(true)));
        let guard = Listening { connection: Arc::clone(self), id: id.clone(), stop: stop.clone(), live: Arc::clone(&live) };
        let this = Arc::clone(self);
        match &self.transport {
            Transport::Http(_) => {
                tokio::spawn(async move {
                    let Transport::Http(http) = &this.transport else { return };
                    if let Ok(Reply::Stream(mut stream)) = http.post(&message, &[]).await {
                        loop {
                            let event = tokio::select! {
                                event = stream.next() => event,
                                () = stop.cancelled() => break,
                                () = this.stop.cancelled() => break,
                            };
                            let Some(event) = event else { break };
                            if let Ok(message) = serde_json::from_str(&event.data) {
                                this.deliver(message);
                            }
                        }
                    }
                    live.store(false, Ordering::SeqCst);
                });
            }
            Transport::Stdio(_) => {
                let (tx, rx) = oneshot::channel();
                self.pending().insert(id.clone(), tx);
                tokio::spawn(async move {
                    if let Transport::Stdio(stdio) = &this.transport
                        && stdio.send(&message).await.is_ok()
                    {
                        tokio::select! {
                            _ = rx => {}
                            () = stop.cancelled() => {}
                            () = this.stop.cancelled() => {}
                        }
                    }
                    this.pending().remove(&id);
                    live.store(false, Ordering::SeqCst);
                });
            }
        }
        guard
    }

    /// Opens the standalone GET stream, for server requests that are not tied to an open
    /// POST, and reads it in the background. A server without one (405) is fine.
    ///
    /// Returns once the server answered the GET (or after [`STANDALONE_WAIT`]): a server
    /// that sends a request on that stream right after the handshake (the TypeScript SDK
    /// does so for an elicitation inside a tool call) drops it when no stream is open yet,
    /// so the first call must not race the GET.
    pub(crate) async fn open_standalone(self: &Arc<Self>) {
        if !matches!(self.transport, Transport::Http(_)) {
            return;
        }
        let this = Arc::clone(self);
        let (opened, answered) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let Transport::Http(http) = &this.transport else { return };
            let outcome = http.get(None).await;
            let _ = opened.send(());
            match outcome {
                Ok(stream) => this.read(stream, None, None).await,
                Err(error) => tracing::debug!(%error, "no standalone SSE stream"),
            }
        });
        if tokio::time::timeout(STANDALONE_WAIT, answered).await.is_err() {
            tracing::debug!("the standalone SSE stream is not answered yet; going on without waiting");
        }
    }

    /// Reads a stream until it ends; if it breaks while `waiting` is unanswered (or if it
    /// is the standalone stream), resumes it after its last event id. `token`: the progress
    /// token of the request whose response stream it is (its server requests say so).
    async fn read(self: Arc<Self>, mut stream: EventStream, waiting: Option<(RequestId, String)>, token: Option<String>) {
        let mut last_id: Option<String> = None;
        let mut retry = DEFAULT_RETRY;
        let mut attempts = 0;
        loop {
            loop {
                let event = tokio::select! {
                    event = stream.next() => event,
                    () = self.stop.cancelled() => return,
                };
                let Some(event) = event else { break };
                last_id = event.id.or(last_id);
                retry = event.retry.map_or(retry, Duration::from_millis);
                if event.data.trim().is_empty() {
                    continue; // a priming event
                }
                attempts = 0;
                match serde_json::from_str(&event.data) {
                    Ok(message) => self.deliver_from(message, token.as_deref()),
                    Err(error) => tracing::warn!(%error, "an SSE event is not JSON; skipped"),
                }
            }
            if let Some((id, _)) = &waiting
                && !self.pending().contains_key(id)
            {
                return; // answered (or nobody waits any more)
            }
            let Some(last) = last_id.clone() else {
                return self.give_up(waiting.as_ref(), "the stream had no event id".into());
            };
            attempts += 1;
            if attempts > MAX_RESUME_ATTEMPTS {
                return self.give_up(waiting.as_ref(), format!("{MAX_RESUME_ATTEMPTS} reconnections failed"));
            }
            tokio::select! {
                () = tokio::time::sleep(retry) => {}
                () = self.stop.cancelled() => return,
            }
            tracing::debug!(last_event_id = %last, "resuming an SSE stream");
            let Transport::Http(http) = &self.transport else {
                return self.give_up(waiting.as_ref(), "stdio streams cannot be resumed".into());
            };
            match http.get(Some(&last)).await {
                Ok(resumed) => stream = resumed,
                Err(error @ ClientError::Transport(_)) => tracing::debug!(%error, "resumption failed; retrying"),
                Err(error) => return self.give_up(waiting.as_ref(), error.to_string()),
            }
        }
    }

    /// Reads the stdio server's output in the background, one message per line, until it
    /// ends or the client is dropped; then every waiting request fails.
    pub(crate) fn read_lines(self: &Arc<Self>, mut reader: LineReader) {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let mut line = String::new();
            loop {
                line.clear();
                let read = tokio::select! {
                    read = reader.read_line(&mut line) => read,
                    () = this.stop.cancelled() => return,
                };
                match read {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "reading the stdio server's output");
                        break;
                    }
                }
                let text = line.trim();
                if text.is_empty() {
                    continue;
                }
                match serde_json::from_str(text) {
                    Ok(message) => this.deliver(message),
                    Err(error) => tracing::warn!(%error, "a line from the stdio server is not JSON; skipped"),
                }
            }
            if let Transport::Stdio(stdio) = &this.transport {
                stdio.stderr_read().await;
            }
            this.closed.cancel();
            let waiting: Vec<Waiter> = this.pending().drain().map(|(_, waiter)| waiter).collect();
            for waiter in waiting {
                let _ = waiter.send(Err(this.exited()));
            }
        });
    }

    fn give_up(&self, waiting: Option<&(RequestId, String)>, reason: String) {
        let Some((id, method)) = waiting else {
            tracing::debug!(%reason, "standalone SSE stream ended");
            return;
        };
        if let Some(waiter) = self.pending().remove(id) {
            let _ = waiter.send(Err(ClientError::StreamLost { method: method.clone(), reason }));
        }
    }

    /// Routes one message from the server.
    fn deliver(self: &Arc<Self>, message: Value) {
        self.deliver_from(message, None);
    }

    /// [`Connection::deliver`] of a message that came on the response stream of the request
    /// with progress token `token`.
    fn deliver_from(self: &Arc<Self>, message: Value, token: Option<&str>) {
        match jsonrpc::parse(&message.to_string()) {
            Ok(Incoming::Response(response)) => {
                let waiter = self.pending().remove(&response.id);
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(response.outcome.map_err(ClientError::from));
                    }
                    None => tracing::debug!(id = %response.id, "a response nobody waits for"),
                }
            }
            Ok(Incoming::Request(request)) => {
                let this = Arc::clone(self);
                let token = token.map(str::to_owned);
                tokio::spawn(async move {
                    let id = request.id.clone();
                    let mut asked = ServerRequest::new(request.method, request.params);
                    asked.request_token = token;
                    let related = asked.related_task.clone();
                    let answer = match this.answer(asked).await {
                        Ok(result) => jsonrpc::response(&id, tag(result, related.as_deref())),
                        Err(error) => jsonrpc::error_response(Some(&id), &error),
                    };
                    if let Err(error) = this.expect_accepted(&answer).await {
                        tracing::warn!(%error, %id, "could not deliver the answer to a server request");
                    }
                });
            }
            Ok(Incoming::Notification(notification)) => {
                tracing::debug!(method = %notification.method, "notification");
                let params = notification.params.unwrap_or_else(|| Value::Object(Default::default()));
                // No subscriber is fine: nobody wanted them.
                let _ = self.notifications.send(ServerNotification { method: notification.method, params });
            }
            Err(failure) => tracing::warn!(%failure, "a malformed message from the server; skipped"),
        }
    }

    async fn answer(self: &Arc<Self>, request: ServerRequest) -> Result<Value, RpcError> {
        let hosting = self.handlers.elicitation.is_some() || self.handlers.sampling.is_some();
        match request.method.as_str() {
            method::PING => Ok(Value::Object(Default::default())),
            method::TASKS_GET | method::TASKS_RESULT | method::TASKS_LIST | method::TASKS_CANCEL if hosting => {
                // A blocked tasks/result must not outlive the client.
                tokio::select! {
                    served = self.hosted.serve(&request) => served,
                    () = self.stop.cancelled() => Err(RpcError::internal("the client is closing")),
                }
            }
            method::ELICITATION_CREATE | method::SAMPLING_CREATE_MESSAGE
                if request.params.get("task").is_some() && self.handlers.handles(&request.method) =>
            {
                hosted::create(self, request)
            }
            _ => self.handlers.call(request).await,
        }
    }
}

/// Adds the related-task `_meta` to an answer about a task (2025-11-25: MUST).
pub(crate) fn tag(mut result: Value, related: Option<&str>) -> Value {
    let (Some(task_id), Some(object)) = (related, result.as_object_mut()) else { return result };
    let meta = object.entry("_meta").or_insert_with(|| Value::Object(Default::default()));
    if let Some(meta) = meta.as_object_mut()
        && !meta.contains_key(RELATED_TASK)
    {
        meta.extend(related_task_meta(task_id));
    }
    result
}
