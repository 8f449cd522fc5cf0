//! What `initialize` creates on a connection (2025-11-25): the client's declared
//! capabilities, its log level (`logging/setLevel`), the tasks it watches and created, their
//! progress tokens, and the questions put to it. A [`LegacySession`] forwards the changes of
//! the tasks it watches as `notifications/tasks/status` and `notifications/progress`, and
//! delivers task input requests to the client as server-to-client requests tagged with
//! related-task metadata.
//!
//! Over HTTP on a shared store the session is stored too ([`LegacySession::stored_state`]):
//! another replica serves it from the record ([`LegacySession::restore`]), and what it
//! changes (the log level, the tasks it created) is written back for the others.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_engine::{
    Change, ClientLink, ErrorObject, FastMap, FastSet, InputKind, InputRequest, Progress, SessionRecord, TaskId, TaskRecord, TaskState,
    TaskWatch, Watched,
};
use mcp_tasks_protocol::jsonrpc::{self, RequestId, RpcError};
use mcp_tasks_protocol::legacy::{self, method};
use mcp_tasks_protocol::mcp::ProgressToken;
use serde_json::{Value, json};

use super::wire;
use crate::connection::{Connection, Route};
use crate::context::ClientCaps;
use crate::catalog::LogLevel;
use crate::ops;
use crate::tool::{input_capability, input_method};

/// A Legacy session: the state `initialize` created on one connection.
pub(crate) struct LegacySession {
    pub(crate) conn: Arc<Connection>,
    /// The `capabilities` of the client's `initialize`.
    client_capabilities: Value,
    /// A std mutex: every critical section is a few map operations, never across an await.
    /// Lock order: this, then the connection's.
    state: Mutex<State>,
    /// The changes of the tasks in [`State::watched`], and of no others.
    feed: TaskWatch,
}

#[derive(Default)]
struct State {
    /// Lowest `notifications/message` level the client wants (`logging/setLevel`).
    log_level: Option<LogLevel>,
    /// Input requests of tasks this session has put to the client: the request id, and
    /// whether it went on the standalone stream (rather than a `tasks/result` stream).
    offers: FastMap<(TaskId, String), (RequestId, bool)>,
    /// Progress tokens of tasks created here: they stay valid for the task's whole life
    /// (2025-11-25 progress rule) and are dropped once it is terminal.
    progress: FastMap<TaskId, ProgressToken>,
    /// Tasks this session created or asked about: their changes become notifications.
    watched: FastSet<TaskId>,
    /// Tasks this session created, oldest first (for [`Listing::Session`](crate::connection::Listing)).
    created: Vec<TaskId>,
}

impl LegacySession {
    /// The session `initialize` opens on `conn` for a client that declared
    /// `client_capabilities`.
    pub(crate) fn new(conn: Arc<Connection>, client_capabilities: Value) -> Arc<LegacySession> {
        let feed = conn.server.engine().watch_tasks();
        Arc::new(LegacySession { conn, client_capabilities, state: Mutex::new(State::default()), feed })
    }

    /// The session `state` a stored record holds ([`LegacySession::stored_state`]), with the
    /// tasks it created, restored on `conn` (another replica's session, or one this replica
    /// dropped from memory).
    ///
    /// # Errors
    /// What is wrong with `state` (written by another build, or damaged).
    pub(crate) fn restore(conn: Arc<Connection>, state: &Value, created: Vec<TaskId>) -> Result<Arc<LegacySession>, String> {
        let capabilities = state.get("capabilities").filter(|caps| caps.is_object()).cloned().ok_or("no client capabilities")?;
        if let Some(info) = state.get("clientInfo") {
            let field = |name: &str| info.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
            conn.set_client_info(&field("name"), &field("version"));
        }
        let session = LegacySession::new(conn, capabilities);
        session.refresh(state, created)?;
        Ok(session)
    }

    /// What a stored record keeps of the session: the negotiated version, the client's
    /// capabilities and info, and its log level (the tasks it created are kept beside it).
    pub(crate) fn stored_state(&self) -> Value {
        let (name, version) = self.conn.client_info().unwrap_or_default();
        json!({
            "protocolVersion": legacy::PROTOCOL_VERSION,
            "capabilities": self.client_capabilities,
            "clientInfo": {"name": name, "version": version},
            "logLevel": self.state().log_level,
        })
    }

    /// Takes over what another replica may have changed of the stored session: its log level
    /// and the tasks it created.
    ///
    /// # Errors
    /// What is wrong with `state`.
    pub(crate) fn refresh(&self, state: &Value, created: Vec<TaskId>) -> Result<(), String> {
        let log_level = match state.get("logLevel") {
            None | Some(Value::Null) => None,
            Some(level) => Some(serde_json::from_value(level.clone()).map_err(|err| format!("logLevel: {err}"))?),
        };
        let mut mine = self.state();
        mine.log_level = log_level;
        // A set, not a scan of the list per id: a session may have created many tasks.
        let fresh: Vec<TaskId> = {
            let known: FastSet<&TaskId> = mine.created.iter().collect();
            let mut seen = FastSet::default();
            created.iter().filter(|id| !known.contains(id) && seen.insert(*id)).cloned().collect()
        };
        mine.created.extend(fresh);
        Ok(())
    }

    /// Writes the session's state to its stored record, if it has one (a failure is logged:
    /// the other replicas then see the earlier state).
    async fn save(&self) {
        let Some((id, sessions)) = self.conn.stored_as() else { return };
        let record = SessionRecord::put(id, &self.conn.principal, self.stored_state(), self.conn.server.engine().now());
        if let Err(err) = sessions.put_session(&record).await {
            tracing::warn!(session = %id, error = %err, "could not store the session's state");
        }
    }

    /// From now on, and until the connection closes, changes of the tasks this session
    /// watches are sent to the client as notifications.
    pub(crate) fn start_forwarding(self: &Arc<Self>) {
        tokio::spawn(forward_changes(Arc::clone(self)));
        tokio::spawn(forward_list_changes(Arc::clone(self)));
    }

    /// The client's capabilities as era-neutral facts.
    pub(crate) fn client(&self) -> ClientCaps {
        ClientCaps {
            elicitation: self.client_declared("elicitation"),
            sampling: self.client_declared("sampling"),
            roots: self.client_declared("roots"),
            tasks: self.client_declared("tasks"),
        }
    }

    /// Whether the client declared capability `name` (e.g. `sampling`, `elicitation`).
    pub(crate) fn client_declared(&self, name: &str) -> bool {
        self.client_capabilities.get(name).is_some_and(Value::is_object)
    }

    /// Records that this session created `id` (`new`), or got it by its idempotency key, in
    /// its stored record too if it has one, so that its listing on another replica shows it.
    pub(crate) async fn created(&self, id: &TaskId, new: bool) {
        {
            let mut state = self.state();
            // Only a task found by its idempotency key may be listed already (a retry): a
            // new one is not, and is not looked for. The scan of the session's whole list on
            // every `tools/call` was 1.8 % of the worker thread's time at ~300 tasks per
            // session (perf, block at c = 32), and grew with every task the session made.
            if new || !state.created.contains(id) {
                state.created.push(id.clone());
            }
        }
        let Some((session, sessions)) = self.conn.stored_as() else { return };
        if let Err(err) = sessions.add_session_task(session, id).await {
            tracing::warn!(session = %session, task = %id, error = %err, "could not store a task the session created");
        }
    }

    /// The tasks this session created, oldest first.
    pub(crate) fn created_tasks(&self) -> Vec<TaskId> {
        self.state().created.clone()
    }

    /// `logging/setLevel` (stored for the other replicas too, if the session is stored).
    pub(crate) async fn set_log_level(&self, level: LogLevel) {
        self.state().log_level = Some(level);
        self.save().await;
    }

    /// Whether a log message at `level` goes to the client (all do until a level is set).
    pub(crate) fn wants_log(&self, level: LogLevel) -> bool {
        self.state().log_level.is_none_or(|min| level >= min)
    }

    /// From now on, changes of `task` are forwarded; progress goes to `token` if given. A
    /// terminal task changes no more: nothing of it to forward, nothing kept (else the
    /// session's memory and the engine's routes of changes would grow with every task read
    /// or found again once finished).
    pub(crate) fn watch(&self, task: &TaskRecord, token: Option<ProgressToken>) {
        if task.status().is_terminal() {
            return;
        }
        let id = &task.id;
        let mut state = self.state();
        if state.watched.insert(id.clone()) {
            self.feed.add(id);
        }
        if let Some(token) = token {
            state.progress.insert(id.clone(), token);
        }
    }

    /// How many tasks this session watches.
    #[cfg(test)]
    pub(crate) fn watched_count(&self) -> usize {
        self.state().watched.len()
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
        let (request, answer) = {
            let mut state = self.state();
            let offer = (id.clone(), key.to_owned());
            // One open question per input request on the standalone stream; a tasks/result
            // stream always gets its own copy unless the standalone one is still open (the
            // client may have lost an earlier tasks/result stream).
            let busy = state
                .offers
                .get(&offer)
                .is_some_and(|(asked, on_standalone)| self.conn.is_pending(asked) && (standalone || *on_standalone));
            if busy {
                return;
            }
            let (request, answer) = self.conn.open_request();
            state.offers.insert(offer, (request.clone(), standalone));
            (request, answer)
        };
        let mut params = input.params.clone();
        if let Value::Object(object) = &mut params {
            let meta = object.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(meta) = meta {
                meta.extend(legacy::related_task_meta(id.as_str()));
            }
        }
        self.conn.send(jsonrpc::request(&request, method, params), route);
        let session = Arc::clone(self);
        let (id, key) = (id.clone(), key.to_owned());
        tokio::spawn(async move {
            let answer = session.conn.await_answer(&request, answer).await;
            if answer.is_err() && session.conn.closed().is_cancelled() {
                // The client went away without answering: the request stays outstanding
                // for the next tasks/result of the same principal, on any session.
                tracing::debug!(task = %id, %method, "session closed before the client answered");
                return;
            }
            let answer = answer.map_err(|error| ErrorObject { code: error.code, message: error.message, data: error.data });
            match ops::tasks::answer(&session.conn.server, &session.conn.principal, &id, &key, answer).await {
                Ok(true) => tracing::debug!(task = %id, %method, "input answered"),
                Ok(false) => tracing::debug!(task = %id, %method, "input was already answered; ignoring the repeat"),
                Err(err) => tracing::warn!(task = %id, error = %err, "could not apply the client's answer"),
            }
        });
    }

    fn on_task_change(self: &Arc<Self>, record: &TaskRecord) {
        {
            let mut state = self.state();
            if record.status().is_terminal() {
                // Its last change: the task is forgotten here, as the engine's routes forget it.
                if !state.watched.remove(&record.id) {
                    return;
                }
                state.progress.remove(&record.id);
            } else if !state.watched.contains(&record.id) {
                return;
            }
        }
        // Built only if a client reads it: most never open the GET stream it goes to.
        let status = wire::StatusOf::new(record);
        let build = move || {
            let params = serde_json::to_value(status.task()).unwrap_or(Value::Null);
            jsonrpc::notification(method::NOTIFY_TASK_STATUS, params)
        };
        self.conn.send_later(Arc::new(build), Route::General);
        if matches!(record.state, TaskState::InputRequired { .. }) && self.conn.standalone_is_open() {
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
                _ = session.conn.closed().cancelled() => return,
            }
            if !session.conn.standalone_is_open() {
                return;
            }
            let Ok(task) = session.conn.server.engine().get(&session.conn.principal, &id).await else { return };
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
            self.conn.send(progress_notification(&token, progress, Some(id)), Route::General);
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

/// The client side of one plain call (2025-11-25: the work asks the client directly): its
/// progress, notifications and requests go on the call's own stream.
pub(crate) struct CallLink {
    pub(crate) session: Arc<LegacySession>,
    pub(crate) request: RequestId,
    pub(crate) progress_token: Option<ProgressToken>,
}

#[async_trait]
impl ClientLink for CallLink {
    fn progress(&self, progress: Progress) {
        if let Some(token) = &self.progress_token {
            let message = progress_notification(token, &progress, None);
            self.session.conn.send(message, Route::Related(self.request.clone()));
        }
    }

    fn notify(&self, method: &str, params: Value) {
        if method == method::NOTIFY_MESSAGE {
            let level = params.get("level").cloned().and_then(|level| serde_json::from_value(level).ok());
            if !level.is_some_and(|level| self.session.wants_log(level)) {
                return;
            }
        }
        self.session.conn.send(jsonrpc::notification(method, params), Route::Related(self.request.clone()));
    }

    async fn request(&self, kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
        let (method, capability) = (input_method(kind), input_capability(kind));
        if !self.session.client_declared(capability) {
            let message = format!("cannot send {method}: the client did not declare the '{capability}' capability");
            return Err(ErrorObject { code: RpcError::INTERNAL_ERROR, message, data: None });
        }
        self.session
            .conn
            .request_client(method, params, Route::Related(self.request.clone()))
            .await
            .map_err(|error| ErrorObject { code: error.code, message: error.message, data: error.data })
    }
}

/// Sends the changes of the tasks this session watches to the client, until the connection
/// closes. A loop of its own: a `select!` that also polled the list watchers below on every
/// task change took ~3 k instructions of a lifecycle (docs/benchmarks/14-fourteenth-round.md).
async fn forward_changes(session: Arc<LegacySession>) {
    loop {
        let change = tokio::select! {
            _ = session.conn.closed().cancelled() => return,
            change = session.feed.recv() => change,
        };
        match change {
            Watched::Change(Change::Task(record)) => session.on_task_change(&record),
            Watched::Change(Change::Progress { id, progress, .. }) => session.on_progress(&id, &progress),
            Watched::Lagged => {
                tracing::warn!("session fell behind the changes of its tasks; some notifications were skipped");
            }
        }
    }
}

/// Sends `notifications/tools/list_changed` (and the resources' and prompts' ones, for the
/// lists the server offers as it now stands) to the client, until the connection closes.
async fn forward_list_changes(session: Arc<LegacySession>) {
    let mut tools = session.conn.server.tools().watch();
    tools.mark_unchanged();
    let mut tools_changing = true;
    let catalog = &session.conn.server.inner.catalog;
    let lists = &session.conn.server.inner.list_changes;
    let (mut resources, mut prompts) = (lists.resources.subscribe(), lists.prompts.subscribe());
    resources.mark_unchanged();
    prompts.mark_unchanged();
    let list_changed = |name: &str| session.conn.send(jsonrpc::notification(name, json!({})), Route::General);
    loop {
        tokio::select! {
            _ = session.conn.closed().cancelled() => return,
            changed = tools.changed(), if tools_changing => match changed {
                Ok(()) => list_changed(method::NOTIFY_TOOLS_LIST_CHANGED),
                Err(_) => tools_changing = false,
            },
            // The senders live as long as the server (and so this session): never an error.
            // Only for a list the server offers (declares) as it now stands.
            Ok(()) = resources.changed() => {
                if catalog.has_resources() {
                    list_changed(method::NOTIFY_RESOURCES_LIST_CHANGED);
                }
            }
            Ok(()) = prompts.changed() => {
                if catalog.has_prompts() {
                    list_changed(method::NOTIFY_PROMPTS_LIST_CHANGED);
                }
            }
        }
    }
}
