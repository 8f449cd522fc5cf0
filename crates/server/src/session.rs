//! One client connection: whether it is initialized, its in-flight requests (so that
//! `notifications/cancelled` can stop them), and the tasks it watches, whose changes it
//! forwards as `notifications/tasks/status` and `notifications/progress`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_tasks_engine::{Change, Principal, Progress, TaskId, TaskRecord};
use mcp_tasks_protocol::jsonrpc::{self, RequestId, RpcError};
use mcp_tasks_protocol::legacy::{self, ProgressToken, method};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::codec;
use crate::server::Server;

/// A client connection's state. Shared by the transport and the request handlers.
pub(crate) struct Session {
    pub(crate) server: Server,
    pub(crate) principal: Principal,
    out: mpsc::UnboundedSender<Value>,
    closed: CancellationToken,
    /// A std mutex: every critical section is a few map operations, never across an await.
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    initialized: bool,
    client_capabilities: Value,
    inflight: HashMap<RequestId, CancellationToken>,
    /// Progress tokens of tasks created here: they stay valid for the task's whole life
    /// (2025-11-25 progress rule) and are dropped once it is terminal.
    progress: HashMap<TaskId, ProgressToken>,
    /// Tasks this session created or asked about: their changes become notifications.
    watched: HashSet<TaskId>,
}

impl Session {
    /// A session whose outgoing messages go to `out`, forwarding task changes until
    /// [`Session::close`].
    pub(crate) fn start(server: Server, principal: Principal, out: mpsc::UnboundedSender<Value>) -> Arc<Session> {
        let feed = server.engine().subscribe();
        let session = Arc::new(Session {
            server,
            principal,
            out,
            closed: CancellationToken::new(),
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

    /// Queues a message to the client. A closed transport drops it.
    pub(crate) fn send(&self, message: Value) {
        let _ = self.out.send(message);
    }

    pub(crate) fn respond(&self, id: &RequestId, reply: Result<Value, RpcError>) {
        self.send(match reply {
            Ok(result) => jsonrpc::response(id, result),
            Err(error) => jsonrpc::error_response(Some(id), &error),
        });
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

    fn on_task_change(&self, record: &TaskRecord) {
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
        self.send(jsonrpc::notification(method::NOTIFY_TASK_STATUS, params));
    }

    fn on_progress(&self, id: &TaskId, progress: &Progress) {
        let token = self.state().progress.get(id).cloned();
        if let Some(token) = token {
            self.send(progress_notification(&token, progress, Some(id)));
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
