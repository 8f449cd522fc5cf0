//! One client connection: whether it is initialized, its in-flight requests (so that
//! `notifications/cancelled` can stop them), and the tasks it watches, whose changes it
//! forwards as `notifications/tasks/status` and `notifications/progress`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use async_trait::async_trait;
use mcp_tasks_engine::{
    Change, ClientLink, ErrorObject, InputKind, InputRequest, Principal, Progress, TaskId, TaskRecord, TaskState,
};
use mcp_tasks_protocol::jsonrpc::{self, RequestId, Response, RpcError};
use mcp_tasks_protocol::legacy::{self, ProgressToken, method};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::codec;
use crate::server::Server;

/// Where an outgoing message belongs. Over stdio every message goes to stdout; over
/// Streamable HTTP a reply and the messages related to a request go on that request's
/// stream, everything else on the standalone GET stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// The response to this request (ends its stream).
    Reply(RequestId),
    /// A request or notification sent while serving this request.
    Related(RequestId),
    /// Not tied to any request (e.g. task status notifications).
    General,
}

/// An outgoing message and its route.
#[derive(Clone, Debug)]
pub(crate) struct Outbound {
    pub(crate) message: Value,
    pub(crate) route: Route,
}

/// Which tasks `tasks/list` shows a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Listing {
    /// Every task of the session's principal (an identified requestor).
    Principal,
    /// Only the tasks this session created: the requestor is not identified (HTTP without
    /// tokens), so no client may enumerate another's tasks (2025-11-25 tasks security).
    Session,
}

/// A client connection's state. Shared by the transport and the request handlers.
pub(crate) struct Session {
    pub(crate) server: Server,
    pub(crate) principal: Principal,
    pub(crate) listing: Listing,
    out: mpsc::UnboundedSender<Outbound>,
    closed: CancellationToken,
    /// Ids of our requests to the client: `mcp-tasks-<n>`, never reused in a session.
    next_request: AtomicU64,
    /// Whether the transport has a standalone stream open right now (HTTP GET); unset for
    /// stdio, where everything goes through the one output.
    standalone_open: OnceLock<Box<dyn Fn() -> bool + Send + Sync>>,
    /// A std mutex: every critical section is a few map operations, never across an await.
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    initialized: bool,
    client_capabilities: Value,
    /// Lowest `notifications/message` level the client wants (`logging/setLevel`).
    log_level: Option<LogLevel>,
    /// Our requests to the client awaiting an answer.
    pending: HashMap<RequestId, oneshot::Sender<Result<Value, RpcError>>>,
    /// Input requests of tasks this session has put to the client: the request id, and
    /// whether it went on the standalone stream (rather than a `tasks/result` stream).
    offers: HashMap<(TaskId, String), (RequestId, bool)>,
    inflight: HashMap<RequestId, CancellationToken>,
    /// Progress tokens of tasks created here: they stay valid for the task's whole life
    /// (2025-11-25 progress rule) and are dropped once it is terminal.
    progress: HashMap<TaskId, ProgressToken>,
    /// Tasks this session created or asked about: their changes become notifications.
    watched: HashSet<TaskId>,
    /// Tasks this session created, oldest first (for [`Listing::Session`]).
    created: Vec<TaskId>,
}

impl Session {
    /// A session whose outgoing messages go to `out`, forwarding task changes until
    /// [`Session::close`].
    pub(crate) fn start(
        server: Server,
        principal: Principal,
        listing: Listing,
        out: mpsc::UnboundedSender<Outbound>,
    ) -> Arc<Session> {
        let feed = server.engine().subscribe();
        let session = Arc::new(Session {
            server,
            principal,
            listing,
            out,
            closed: CancellationToken::new(),
            next_request: AtomicU64::new(1),
            standalone_open: OnceLock::new(),
            state: Mutex::new(State::default()),
        });
        tokio::spawn(forward_changes(Arc::clone(&session), feed));
        session
    }

    /// Stops forwarding task changes. In-flight requests still finish and answer: a
    /// client that closes its input after a request still gets the response.
    pub(crate) fn close(&self) {
        self.closed.cancel();
    }

    /// Ends the session now: stops forwarding and cancels its in-flight requests (their
    /// tasks, if any, keep running; they belong to the principal, not the session).
    pub(crate) fn abort(&self) {
        self.closed.cancel();
        for token in self.state().inflight.values() {
            token.cancel();
        }
    }

    /// Records that this session created `id`.
    pub(crate) fn created(&self, id: &TaskId) {
        self.state().created.push(id.clone());
    }

    /// The tasks this session created, oldest first.
    pub(crate) fn created_tasks(&self) -> Vec<TaskId> {
        self.state().created.clone()
    }

    /// Queues a message to the client. A closed transport drops it.
    pub(crate) fn send(&self, message: Value, route: Route) {
        let _ = self.out.send(Outbound { message, route });
    }

    pub(crate) fn respond(&self, id: &RequestId, reply: Result<Value, RpcError>) {
        let message = match reply {
            Ok(result) => jsonrpc::response(id, result),
            Err(error) => jsonrpc::error_response(Some(id), &error),
        };
        self.send(message, Route::Reply(id.clone()));
    }

    /// Answers an error to a message whose id could not be read (or that had none).
    pub(crate) fn reject(&self, id: Option<&RequestId>, error: &RpcError) {
        let route = id.map_or(Route::General, |id| Route::Reply(id.clone()));
        self.send(jsonrpc::error_response(id, error), route);
    }

    /// Whether the client declared capability `name` (e.g. `sampling`, `elicitation`).
    pub(crate) fn client_declared(&self, name: &str) -> bool {
        self.state().client_capabilities.get(name).is_some_and(Value::is_object)
    }

    /// The kinds of input this client can answer, from its declared capabilities.
    pub(crate) fn input_kinds(&self) -> Vec<InputKind> {
        [InputKind::Elicitation, InputKind::Sampling]
            .into_iter()
            .filter(|kind| self.client_declared(input_capability(*kind)))
            .collect()
    }

    /// `logging/setLevel`.
    pub(crate) fn set_log_level(&self, level: LogLevel) {
        self.state().log_level = Some(level);
    }

    /// Whether a log message at `level` goes to the client (all do until a level is set).
    pub(crate) fn wants_log(&self, level: LogLevel) -> bool {
        self.state().log_level.is_none_or(|min| level >= min)
    }

    /// Sends a request to the client on `route` and waits for its answer.
    ///
    /// # Errors
    /// The client's JSON-RPC error, or `-32603` if the session closes first.
    pub(crate) async fn request_client(&self, method: &str, params: Value, route: Route) -> Result<Value, RpcError> {
        let (id, answer) = {
            let mut state = self.state();
            self.open_request(&mut state)
        };
        self.send(jsonrpc::request(&id, method, params), route);
        self.await_answer(&id, answer).await
    }

    /// Tells the session how to see whether the transport's standalone stream is open.
    pub(crate) fn set_standalone_probe(&self, probe: Box<dyn Fn() -> bool + Send + Sync>) {
        let _ = self.standalone_open.set(probe);
    }

    fn standalone_is_open(&self) -> bool {
        self.standalone_open.get().is_some_and(|probe| probe())
    }

    /// Allocates a request id and registers its waiter (under the caller's lock, so that
    /// the pending check and the registration are one step).
    fn open_request(&self, state: &mut State) -> (RequestId, oneshot::Receiver<Result<Value, RpcError>>) {
        let id = RequestId::String(format!("mcp-tasks-{}", self.next_request.fetch_add(1, Ordering::Relaxed)));
        let (tx, rx) = oneshot::channel();
        state.pending.insert(id.clone(), tx);
        (id, rx)
    }

    async fn await_answer(&self, id: &RequestId, answer: oneshot::Receiver<Result<Value, RpcError>>) -> Result<Value, RpcError> {
        tokio::select! {
            answer = answer => answer.unwrap_or_else(|_| Err(RpcError::internal("the session ended before the client answered"))),
            _ = self.closed.cancelled() => {
                self.state().pending.remove(id);
                Err(RpcError::internal("the session ended before the client answered"))
            }
        }
    }

    /// Sends outstanding input request `key` of task `id` to the client on `route`, tagged
    /// with the related-task metadata, and hands the answer to the engine. A client that did
    /// not declare the matching capability is not asked.
    pub(crate) fn deliver_input(self: &Arc<Self>, id: &TaskId, key: &str, input: &InputRequest, route: Route) {
        let method = input_method(input.kind);
        if !self.client_declared(input_capability(input.kind)) {
            tracing::debug!(task = %id, %method, "not asking a client that lacks the capability");
            return;
        }
        let standalone = route == Route::General;
        let opened = {
            let mut state = self.state();
            let offer = (id.clone(), key.to_owned());
            // One open question per input request on the standalone stream; a tasks/result
            // stream always gets its own copy unless the standalone one is still open (the
            // client may have lost an earlier tasks/result stream).
            let busy = state.offers.get(&offer).is_some_and(|(asked, on_standalone)| {
                state.pending.contains_key(asked) && (standalone || *on_standalone)
            });
            if busy {
                return;
            }
            let (request, answer) = self.open_request(&mut state);
            state.offers.insert(offer, (request.clone(), standalone));
            (request, answer)
        };
        let (request, answer) = opened;
        let mut params = input.params.clone();
        if let Value::Object(object) = &mut params {
            let meta = object.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(meta) = meta {
                meta.extend(legacy::related_task_meta(id.as_str()));
            }
        }
        self.send(jsonrpc::request(&request, method, params), route);
        let session = Arc::clone(self);
        let (id, key) = (id.clone(), key.to_owned());
        tokio::spawn(async move {
            let answer = session.await_answer(&request, answer).await;
            if answer.is_err() && session.closed.is_cancelled() {
                // The client went away without answering: the request stays outstanding
                // for the next tasks/result of the same principal, on any session.
                tracing::debug!(task = %id, %method, "session closed before the client answered");
                return;
            }
            let answer = answer.map_err(|error| ErrorObject { code: error.code, message: error.message, data: error.data });
            match session.server.engine().answer(&session.principal, &id, &key, answer).await {
                Ok(true) => tracing::debug!(task = %id, %method, "input answered"),
                Ok(false) => tracing::debug!(task = %id, %method, "input was already answered; ignoring the repeat"),
                Err(err) => tracing::warn!(task = %id, error = %err, "could not apply the client's answer"),
            }
        });
    }

    /// Routes the client's answer to one of our requests.
    pub(crate) fn on_response(&self, response: Response) {
        match self.state().pending.remove(&response.id) {
            Some(waiter) => {
                let _ = waiter.send(response.outcome);
            }
            None => tracing::debug!(id = %response.id, "ignoring a response to no pending request"),
        }
    }

    pub(crate) fn is_initialized(&self) -> bool {
        self.state().initialized
    }

    /// Marks the session initialized; `false` if it already was.
    pub(crate) fn mark_initialized(&self, client_capabilities: Value) -> bool {
        let mut state = self.state();
        if state.initialized {
            return false;
        }
        state.initialized = true;
        state.client_capabilities = client_capabilities;
        true
    }

    /// Registers an in-flight request; its token fires on `notifications/cancelled`.
    pub(crate) fn begin(&self, id: &RequestId) -> CancellationToken {
        let token = CancellationToken::new();
        self.state().inflight.insert(id.clone(), token.clone());
        token
    }

    pub(crate) fn end(&self, id: &RequestId) {
        self.state().inflight.remove(id);
    }

    /// `notifications/cancelled`: stops the named in-flight request, if any (unknown or
    /// finished ids are ignored, as the spec allows).
    pub(crate) fn cancel_request(&self, id: &RequestId) {
        if let Some(token) = self.state().inflight.get(id) {
            token.cancel();
        }
    }

    /// From now on, changes of `id` are forwarded; progress goes to `token` if given.
    pub(crate) fn watch(&self, id: &TaskId, token: Option<ProgressToken>) {
        let mut state = self.state();
        state.watched.insert(id.clone());
        if let Some(token) = token {
            state.progress.insert(id.clone(), token);
        }
    }

    fn on_task_change(self: &Arc<Self>, record: &TaskRecord) {
        {
            let mut state = self.state();
            if !state.watched.contains(&record.id) {
                return;
            }
            if record.status().is_terminal() {
                state.progress.remove(&record.id);
            }
        }
        let params = serde_json::to_value(codec::legacy::task(record)).unwrap_or(Value::Null);
        self.send(jsonrpc::notification(method::NOTIFY_TASK_STATUS, params), Route::General);
        if matches!(record.state, TaskState::InputRequired { .. }) && self.standalone_is_open() {
            self.offer_on_standalone_later(record);
        }
    }

    /// 2025-11-25: clients SHOULD expect task messages on any stream, the GET stream too.
    /// A client is expected to call `tasks/result` when it sees `input_required` (and gets
    /// the question there, as the reference SDKs do); one that only polls `tasks/get` would
    /// wait forever. So a question that no `tasks/result` of this session has taken within
    /// two poll intervals is put on the open standalone stream instead.
    fn offer_on_standalone_later(self: &Arc<Self>, record: &TaskRecord) {
        let grace = Duration::from_millis(record.poll_interval_ms.unwrap_or(1000).clamp(250, 30_000) * 2);
        let session = Arc::clone(self);
        let id = record.id.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(grace) => {}
                _ = session.closed.cancelled() => return,
            }
            if !session.standalone_is_open() {
                return;
            }
            let Ok(task) = session.server.engine().get(&session.principal, &id).await else { return };
            if let TaskState::InputRequired { requests } = &task.state {
                for (key, input) in requests {
                    session.deliver_input(&id, key, input, Route::General);
                }
            }
        });
    }

    fn on_progress(&self, id: &TaskId, progress: &Progress) {
        let token = self.state().progress.get(id).cloned();
        if let Some(token) = token {
            self.send(progress_notification(&token, progress, Some(id)), Route::General);
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A `notifications/progress` message; for a task it carries the related-task metadata.
pub(crate) fn progress_notification(token: &ProgressToken, progress: &Progress, task: Option<&TaskId>) -> Value {
    let mut params = json!({ "progressToken": token, "progress": progress.progress });
    if let Some(total) = progress.total {
        params["total"] = json!(total);
    }
    if let Some(message) = &progress.message {
        params["message"] = json!(message);
    }
    if let Some(id) = task {
        params["_meta"] = Value::Object(legacy::related_task_meta(id.as_str()));
    }
    jsonrpc::notification(method::NOTIFY_PROGRESS, params)
}

/// The level of a `notifications/message` (RFC 5424 severities, lowest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

/// The client side of one plain call: its progress, notifications and requests go on the
/// call's own stream.
pub(crate) struct CallLink {
    pub(crate) session: Arc<Session>,
    pub(crate) request: RequestId,
    pub(crate) progress_token: Option<ProgressToken>,
}

#[async_trait]
impl ClientLink for CallLink {
    fn progress(&self, progress: Progress) {
        if let Some(token) = &self.progress_token {
            let message = progress_notification(token, &progress, None);
            self.session.send(message, Route::Related(self.request.clone()));
        }
    }

    fn notify(&self, method: &str, params: Value) {
        if method == method::NOTIFY_MESSAGE {
            let level = params.get("level").cloned().and_then(|level| serde_json::from_value(level).ok());
            if !level.is_some_and(|level| self.session.wants_log(level)) {
                return;
            }
        }
        self.session.send(jsonrpc::notification(method, params), Route::Related(self.request.clone()));
    }

    async fn request(&self, kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
        let (method, capability) = (input_method(kind), input_capability(kind));
        if !self.session.client_declared(capability) {
            let message = format!("cannot send {method}: the client did not declare the '{capability}' capability");
            return Err(ErrorObject { code: RpcError::INTERNAL_ERROR, message, data: None });
        }
        self.session
            .request_client(method, params, Route::Related(self.request.clone()))
            .await
            .map_err(|error| ErrorObject { code: error.code, message: error.message, data: error.data })
    }
}

/// The 2025-11-25 request method that asks a client for input of `kind`.
pub(crate) fn input_method(kind: InputKind) -> &'static str {
    match kind {
        InputKind::Elicitation => method::ELICITATION_CREATE,
        InputKind::Sampling => method::SAMPLING_CREATE_MESSAGE,
    }
}

/// The client capability that says it can answer input of `kind`.
fn input_capability(kind: InputKind) -> &'static str {
    match kind {
        InputKind::Elicitation => "elicitation",
        InputKind::Sampling => "sampling",
    }
}

async fn forward_changes(session: Arc<Session>, mut feed: broadcast::Receiver<Change>) {
    loop {
        let change = tokio::select! {
            _ = session.closed.cancelled() => return,
            change = feed.recv() => change,
        };
        match change {
            Ok(Change::Task(record)) => session.on_task_change(&record),
            Ok(Change::Progress { id, progress, .. }) => session.on_progress(&id, &progress),
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "session fell behind the change feed; some notifications were skipped");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
