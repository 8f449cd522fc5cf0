//! Client-hosted tasks (2025-11-25): the server sends `elicitation/create` or
//! `sampling/createMessage` with `params.task`, and the client is the receiver. It answers at
//! once with a `CreateTaskResult`, runs the host's handler in the background, and serves the
//! server's `tasks/get`, `tasks/result` (blocking until terminal), `tasks/list` and
//! `tasks/cancel` for it.
//!
//! Storage is in memory, for the session only: a receiver-side task is a question put to this
//! host (a form, a model call) and means nothing to another process, so it lives until its
//! `ttl` runs out or the client is dropped, whichever comes first. (The durable part of the
//! client is the [`crate::ledger`] of the tasks it started.) The `ttl` asked for is granted up
//! to [`MAX_TTL`] ([`DEFAULT_TTL`] when none is asked); an expired task is dropped, its handler
//! aborted, and its id then answers -32602 like an unknown one.
//!
//! Expiry is measured on Tokio's clock ([`tokio::time::Instant`]), which is the system's
//! monotonic clock unless a test pauses it (`tokio::time::pause`) and drives it with
//! `tokio::time::advance`; `createdAt` and `lastUpdatedAt` are wall-clock times.
//!
//! Task ids are 128 random bits in hex. There is one requestor per session, the server this
//! client is connected to, so `tasks/list` lists every task of the session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::legacy::{
    CreateTaskResult, ListTasksResult, Task, TaskIdParams, TaskMetadata, TaskStatus, method,
};
use mcp_tasks_protocol::mcp::PaginatedParams;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::client::to_value;
use crate::connection::{Connection, tag};
use crate::handlers::ServerRequest;

/// Retention granted when the server asks for none: one hour.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(60 * 60);
/// The longest retention granted: one day.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// The `pollInterval` suggested to the server.
const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Tasks per `tasks/list` page.
const PAGE_SIZE: usize = 50;
/// Hosted tasks still running at once (2025-11-25: receivers SHOULD cap concurrent tasks
/// per requestor; a session has one requestor). A server asking for more gets an error.
pub const MAX_RUNNING: usize = 16;
/// Hosted tasks kept at once, finished ones included (each holds its answer until it
/// expires); the oldest finished ones make room, running ones are never dropped.
pub const MAX_KEPT: usize = 1000;
/// The error code of a refused creation: the server's own limit code (`-32010`, as
/// `mcp-tasks serve` answers when a limit is reached).
const LIMIT_EXCEEDED: i64 = -32010;

/// The tasks this client hosts in one session.
#[derive(Default)]
pub(crate) struct HostedTasks {
    /// A std mutex: never held across an await.
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    tasks: HashMap<String, Entry>,
    /// The creation number of the next task: orders `tasks/list` and makes its cursors.
    next_seq: u64,
}

struct Entry {
    seq: u64,
    task: Task,
    expires: Instant,
    /// The handler's answer; `None` while it runs, and for a cancelled task.
    outcome: Option<Result<Value, RpcError>>,
    /// Turns `true` once the task is terminal (wakes `tasks/result`).
    done: watch::Sender<bool>,
    /// Stops the handler (`tasks/cancel`, expiry).
    abort: Option<AbortHandle>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        if let Some(abort) = &self.abort {
            abort.abort();
        }
    }
}

/// Accepts a task-augmented `elicitation/create` or `sampling/createMessage`: creates the
/// task, starts the host's handler in the background and returns the `CreateTaskResult`.
pub(crate) fn create(connection: &Arc<Connection>, request: ServerRequest) -> Result<Value, RpcError> {
    let asked: TaskMetadata = serde_json::from_value(request.params.get("task").cloned().unwrap_or(Value::Null))
        .map_err(|e| RpcError::invalid_params(format!("params.task is not a TaskMetadata: {e}")))?;
    let ttl = asked.ttl.map_or(DEFAULT_TTL, Duration::from_millis).min(MAX_TTL);
    let id = random_id();
    let now = timestamp(SystemTime::now());
    let task = Task {
        task_id: id.clone(),
        status: TaskStatus::Working,
        status_message: None,
        created_at: now.clone(),
        last_updated_at: now,
        ttl: Some(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
        poll_interval: Some(u64::try_from(POLL_INTERVAL.as_millis()).unwrap_or(u64::MAX)),
    };
    let hosted = &connection.hosted;
    {
        let mut state = hosted.state();
        state.sweep(Instant::now());
        let running = state.tasks.values().filter(|entry| !entry.task.status.is_terminal()).count();
        if running >= MAX_RUNNING {
            return Err(RpcError::new(
                LIMIT_EXCEEDED,
                format!("this client already runs {running} tasks for the server (at most {MAX_RUNNING}); retry when one has finished"),
            )
            .with_data(serde_json::json!({"limit": "running", "max": MAX_RUNNING, "current": running})));
        }
        state.make_room();
        let seq = state.next_seq;
        state.next_seq += 1;
        let entry =
            Entry { seq, task: task.clone(), expires: Instant::now() + ttl, outcome: None, done: watch::channel(false).0, abort: None };
        state.tasks.insert(id.clone(), entry);
    }
    tracing::info!(task = %id, method = %request.method, "hosting a task for the server");
    let runner = {
        let connection = Arc::clone(connection);
        let id = id.clone();
        async move {
            let mut unfinished = Unfinished { connection: Arc::clone(&connection), id: id.clone(), armed: true };
            let outcome = tokio::select! {
                outcome = connection.handlers.call(request) => outcome,
                () = connection.stop.cancelled() => return,
            };
            unfinished.armed = false;
            if let Some(task) = connection.hosted.finish(&id, outcome) {
                // Optional (MAY); the server keeps polling tasks/get anyway.
                if let Err(error) = connection.notify(method::NOTIFY_TASK_STATUS, to_value(&task)).await {
                    tracing::debug!(%error, task = %id, "could not send notifications/tasks/status");
                }
            }
        }
    };
    let abort = tokio::spawn(runner).abort_handle();
    if let Some(entry) = hosted.state().tasks.get_mut(&id) {
        entry.abort = Some(abort);
    }
    Ok(to_value(&CreateTaskResult { task, meta: None }))
}

/// Fails the task if its handler ends without an answer (it panicked); a task already
/// terminal (cancelled, expired) is left as it is.
struct Unfinished {
    connection: Arc<Connection>,
    id: String,
    armed: bool,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if self.armed {
            self.connection.hosted.finish(&self.id, Err(RpcError::internal("the host's handler ended without an answer")));
        }
    }
}

impl HostedTasks {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Serves `tasks/get`, `tasks/result`, `tasks/list` or `tasks/cancel` from the server.
    pub(crate) async fn serve(&self, request: &ServerRequest) -> Result<Value, RpcError> {
        match request.method.as_str() {
            method::TASKS_GET => Ok(to_value(&self.get(&task_id(request)?)?)),
            method::TASKS_RESULT => self.result(&task_id(request)?).await,
            method::TASKS_CANCEL => Ok(to_value(&self.cancel(&task_id(request)?)?)),
            method::TASKS_LIST => {
                let params: PaginatedParams = serde_json::from_value(request.params.clone())
                    .map_err(|e| RpcError::invalid_params(format!("invalid tasks/list params: {e}")))?;
                Ok(to_value(&self.list(params.cursor.as_deref())?))
            }
            other => Err(RpcError::method_not_found(format!("Method not found: {other}"))),
        }
    }

    fn get(&self, id: &str) -> Result<Task, RpcError> {
        let mut state = self.state();
        state.sweep(Instant::now());
        state.tasks.get(id).map(|entry| entry.task.clone()).ok_or_else(|| not_found(id))
    }

    /// Waits until the task is terminal, then answers what its request would have: the
    /// handler's result with the related-task `_meta`, or its JSON-RPC error.
    async fn result(&self, id: &str) -> Result<Value, RpcError> {
        let mut done = {
            let mut state = self.state();
            state.sweep(Instant::now());
            state.tasks.get(id).ok_or_else(|| not_found(id))?.done.subscribe()
        };
        if done.wait_for(|done| *done).await.is_err() {
            return Err(RpcError::invalid_params(format!("Failed to retrieve task: Task {id} has expired")));
        }
        let state = self.state();
        let entry = state.tasks.get(id).ok_or_else(|| not_found(id))?;
        tracing::info!(task = %id, status = %entry.task.status, "hosted task result retrieved");
        match &entry.outcome {
            Some(Ok(result)) => Ok(tag(result.clone(), Some(id))),
            Some(Err(error)) => Err(error.clone()),
            None => Err(RpcError::internal(format!("Task {id} was cancelled before it produced a result"))
                .with_data(serde_json::json!({ "taskId": id, "status": "cancelled" }))),
        }
    }

    /// `cancelled` before this returns, the handler aborted; a terminal task is -32602.
    fn cancel(&self, id: &str) -> Result<Task, RpcError> {
        let mut state = self.state();
        state.sweep(Instant::now());
        let entry = state.tasks.get_mut(id).ok_or_else(|| not_found(id))?;
        if entry.task.status.is_terminal() {
            return Err(RpcError::invalid_params(format!(
                "Cannot cancel task: already in terminal status '{}'",
                entry.task.status
            )));
        }
        entry.settle(TaskStatus::Cancelled, Some("The task was cancelled by request.".into()), None);
        if let Some(abort) = &entry.abort {
            abort.abort();
        }
        tracing::info!(task = %id, "hosted task cancelled");
        Ok(entry.task.clone())
    }

    /// Oldest first, [`PAGE_SIZE`] at a time; the cursor is the last listed task's creation
    /// number (opaque to the server).
    fn list(&self, cursor: Option<&str>) -> Result<ListTasksResult, RpcError> {
        let mut state = self.state();
        state.sweep(Instant::now());
        let after = match cursor {
            None => None,
            Some(cursor) => {
                let invalid = || RpcError::invalid_params(format!("Invalid cursor: {cursor:?}"));
                let seq = cursor.strip_prefix("after-").and_then(|n| n.parse::<u64>().ok()).ok_or_else(invalid)?;
                if seq >= state.next_seq {
                    return Err(invalid());
                }
                Some(seq)
            }
        };
        let mut entries: Vec<&Entry> =
            state.tasks.values().filter(|entry| after.is_none_or(|after| entry.seq > after)).collect();
        entries.sort_by_key(|entry| entry.seq);
        let next_cursor = (entries.len() > PAGE_SIZE).then(|| format!("after-{}", entries[PAGE_SIZE - 1].seq));
        let tasks = entries.iter().take(PAGE_SIZE).map(|entry| entry.task.clone()).collect();
        Ok(ListTasksResult { tasks, next_cursor })
    }

    /// Records the handler's answer: `completed`, or `failed` for a JSON-RPC error. Returns
    /// the task, or `None` if it had already ended (cancelled) or is gone (expired).
    fn finish(&self, id: &str, outcome: Result<Value, RpcError>) -> Option<Task> {
        let mut state = self.state();
        let entry = state.tasks.get_mut(id)?;
        if entry.task.status.is_terminal() {
            return None; // cancelled stays cancelled
        }
        let (status, message) = match &outcome {
            Ok(_) => (TaskStatus::Completed, None),
            Err(error) => (TaskStatus::Failed, Some(format!("{} (JSON-RPC error {})", error.message, error.code))),
        };
        entry.settle(status, message, Some(outcome));
        entry.abort = None;
        tracing::info!(task = %id, %status, "hosted task finished");
        Some(entry.task.clone())
    }
}

impl State {
    /// Drops the tasks whose ttl ran out (their handlers are aborted, their waiters told).
    /// Drops the oldest finished tasks while [`MAX_KEPT`] are kept.
    fn make_room(&mut self) {
        while self.tasks.len() >= MAX_KEPT {
            let oldest = self
                .tasks
                .iter()
                .filter(|(_, entry)| entry.task.status.is_terminal())
                .min_by_key(|(_, entry)| entry.seq)
                .map(|(id, _)| id.clone());
            let Some(oldest) = oldest else { return };
            tracing::info!(task = %oldest, "hosted task dropped to make room");
            self.tasks.remove(&oldest);
        }
    }

    fn sweep(&mut self, now: Instant) {
        self.tasks.retain(|id, entry| {
            let keep = entry.expires > now;
            if !keep {
                tracing::info!(task = %id, "hosted task expired");
            }
            keep
        });
    }
}

impl Entry {
    /// Moves to a terminal status and wakes `tasks/result`.
    fn settle(&mut self, status: TaskStatus, message: Option<String>, outcome: Option<Result<Value, RpcError>>) {
        self.task.status = status;
        self.task.status_message = message;
        self.task.last_updated_at = timestamp(SystemTime::now());
        self.outcome = outcome;
        self.done.send_replace(true);
    }
}

fn task_id(request: &ServerRequest) -> Result<String, RpcError> {
    serde_json::from_value::<TaskIdParams>(request.params.clone())
        .map(|params| params.task_id)
        .map_err(|e| RpcError::invalid_params(format!("invalid {} params: {e}", request.method)))
}

fn not_found(id: &str) -> RpcError {
    RpcError::invalid_params(format!("Failed to retrieve task: Task {id} not found"))
}

/// 128 bits from the OS random source, in hex (the ids must be unguessable: the server
/// reads tasks by id alone).
fn random_id() -> String {
    let mut bytes = [0u8; 16];
    #[allow(clippy::expect_used)] // without OS randomness no id could be safe
    getrandom::fill(&mut bytes).expect("the OS random source is unavailable");
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// RFC 3339 in UTC with milliseconds, as the server writes `createdAt`.
fn timestamp(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}
