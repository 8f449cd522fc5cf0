//! [`TaskHandle`]: a task on the server, and what drives it to its end (its session's
//! [`Dialect`]: the blocking `tasks/result` of 2025-11-25 in `legacy`, the `tasks/get`
//! polling and `tasks/update` answers of 2026-07-28 in `modern`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::mcp::CallToolResult;
use serde_json::{Value, json};

use crate::connection::Connection;
use crate::dialect::Dialect;
use crate::error::ClientError;
use crate::ledger::{Endpoint, Ledger};
use crate::types::TaskInfo;

/// Poll interval when the server suggests none.
pub(crate) const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// How many times a poll refused by the server's polling rate limit is retried, each after
/// the wait the refusal names (at most [`MAX_RATE_WAIT`]).
const RATE_RETRIES: u32 = 20;
/// The longest wait taken from a rate-limit refusal's `data.retryAfterMs`.
const MAX_RATE_WAIT: Duration = Duration::from_secs(10);

/// The wait a refusal by the server's polling rate limit asks for (`-32010` with
/// `data.limit` `poll_rate` and `data.retryAfterMs`), if `error` is one.
fn rate_limited(error: &ClientError) -> Option<Duration> {
    let ClientError::Rpc { code: -32010, data: Some(data), .. } = error else { return None };
    if data.get("limit").and_then(Value::as_str) != Some("poll_rate") {
        return None;
    }
    let wait = data.get("retryAfterMs").and_then(Value::as_u64).map_or(DEFAULT_POLL, Duration::from_millis);
    Some(wait.clamp(Duration::from_millis(1), MAX_RATE_WAIT))
}

/// A task the client created (or attached to by id). Cheap to clone: one clone can
/// [`wait`](TaskHandle::wait) while another [`cancel`](TaskHandle::cancel)s.
#[derive(Clone)]
pub struct TaskHandle {
    pub(crate) connection: Arc<Connection>,
    pub(crate) id: String,
    /// The last state seen (`None` for a handle attached by id and not yet polled).
    last: Arc<Mutex<Option<TaskInfo>>>,
    /// The `progressToken` the creating request carried, if this handle made the task.
    progress_token: Option<String>,
    /// The era of the session the task is driven in.
    pub(crate) dialect: Dialect,
    /// 2026-07-28: the input request keys answered already (each is answered once, however
    /// many polls show it).
    pub(crate) answered: Arc<Mutex<HashSet<String>>>,
    /// Where the answered keys are remembered across a restart of the host, if anywhere;
    /// and whether they were read from there yet.
    pub(crate) memory: Option<Arc<(Ledger, Endpoint, std::sync::atomic::AtomicBool)>>,
}

impl TaskHandle {
    pub(crate) fn new(connection: Arc<Connection>, dialect: Dialect, task: TaskInfo) -> TaskHandle {
        let id = task.id.clone();
        TaskHandle::make(connection, dialect, id, Some(task))
    }

    pub(crate) fn unseen(connection: Arc<Connection>, dialect: Dialect, id: &str) -> TaskHandle {
        TaskHandle::make(connection, dialect, id.to_owned(), None)
    }

    fn make(connection: Arc<Connection>, dialect: Dialect, id: String, last: Option<TaskInfo>) -> TaskHandle {
        TaskHandle {
            connection,
            id,
            last: Arc::new(Mutex::new(last)),
            progress_token: None,
            dialect,
            answered: Arc::default(),
            memory: None,
        }
    }

    /// Remembers the input requests this handle answers in `ledger` (for the task on
    /// `endpoint`), and skips those a previous host process answered: a restarted host
    /// neither asks its user again nor answers twice (2026-07-28 `inputRequests`; a key is
    /// noted right after its `tasks/update` was acknowledged).
    #[must_use]
    pub fn remembering(mut self, ledger: Ledger, endpoint: Endpoint) -> TaskHandle {
        self.memory = Some(Arc::new((ledger, endpoint, std::sync::atomic::AtomicBool::new(false))));
        self
    }

    pub(crate) fn with_progress_token(mut self, token: Option<String>) -> TaskHandle {
        self.progress_token = token;
        self
    }

    /// The `progressToken` the `tools/call` that created the task carried: the server's
    /// `notifications/progress` about this task carry it for the task's whole life
    /// (`None` for a handle attached by id).
    pub fn progress_token(&self) -> Option<&str> {
        self.progress_token.as_deref()
    }

    /// The protocol revision the handle's session speaks (the era the task is driven in).
    pub fn era(&self) -> Era {
        self.dialect.era()
    }

    /// The task id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The last state seen, without asking the server.
    pub fn last_seen(&self) -> Option<TaskInfo> {
        self.last.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The task's current state (`tasks/get`).
    ///
    /// # Errors
    /// Transport errors, or -32602 for a task that is unknown or expired.
    pub async fn status(&self) -> Result<TaskInfo, ClientError> {
        self.dialect.status(self).await
    }

    /// A task read (`tasks/get`), retried after the wait the server names when it refuses
    /// it for polling too fast.
    pub(crate) async fn polled(&self, name: &str, params: Value) -> Result<Value, ClientError> {
        let mut tries = 0;
        loop {
            match self.request(name, params.clone()).await {
                Err(error) if tries < RATE_RETRIES && rate_limited(&error).is_some() => {
                    tries += 1;
                    let wait = rate_limited(&error).unwrap_or(DEFAULT_POLL);
                    tracing::debug!(task = %self.id, ?wait, "polling too fast for the server; backing off");
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = self.connection.stop.cancelled() => return Err(ClientError::Closed),
                    }
                }
                other => return other,
            }
        }
    }

    /// A request about the task, framed for the era (with the tasks extension declared).
    pub(crate) async fn request(&self, name: &str, params: Value) -> Result<Value, ClientError> {
        self.connection.request(name, self.dialect.frame(params, true)).await
    }

    /// Cancels the task (`tasks/cancel`); returns it, now `cancelled`.
    ///
    /// # Errors
    /// Transport errors, or -32602 for a task that is unknown or already terminal.
    ///
    /// In 2026-07-28 `tasks/cancel` is an acknowledgement: the task is then polled until it
    /// ends, for at most 10 s, and returned as it stands.
    pub async fn cancel(&self) -> Result<TaskInfo, ClientError> {
        self.dialect.cancel(self).await
    }

    /// Drives the task to its end and returns the tool's result (which may have `isError`).
    ///
    /// Waits in the blocking `tasks/result` (whose stream brings the server's elicitation
    /// and sampling requests to the handlers); a broken stream is first resumed with
    /// `Last-Event-ID`; if that fails, it polls `tasks/get` at the task's `pollInterval`
    /// and calls `tasks/result` again once the task is `input_required` or terminal.
    ///
    /// # Errors
    /// [`ClientError::TaskCancelled`], [`ClientError::TaskFailed`] (the underlying call
    /// ended in a JSON-RPC error), or transport and protocol errors.
    ///
    /// In 2026-07-28 it polls `tasks/get` at `pollIntervalMs`; the questions of an
    /// `input_required` task go to the handlers, each key once, and their answers to
    /// `tasks/update`; the result (or error) comes inlined in the terminal task.
    pub async fn wait(&self) -> Result<CallToolResult, ClientError> {
        self.dialect.wait(self).await
    }

    /// Waits the task's poll interval (or 1 s), unless the client closes.
    pub(crate) async fn pause(&self, task: &TaskInfo) -> Result<(), ClientError> {
        let pause = task.poll_interval_ms.map_or(DEFAULT_POLL, Duration::from_millis);
        tokio::select! {
            () = tokio::time::sleep(pause) => Ok(()),
            () = self.connection.stop.cancelled() => Err(ClientError::Closed),
        }
    }

    /// The `params` of a request about the task: `{"taskId": …}`.
    pub(crate) fn params(&self) -> Value {
        json!({ "taskId": self.id })
    }

    /// Notes `task` as the last state seen.
    pub(crate) fn remember(&self, task: &TaskInfo) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(task.clone());
    }
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle").field("id", &self.id).field("last", &self.last_seen()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_poll_rate_refusal_is_waited_out_for_the_time_it_names_capped() {
        let refusal = |data: Value| ClientError::Rpc { code: -32010, message: "Polling too fast".into(), data: Some(data) };
        assert_eq!(rate_limited(&refusal(json!({"limit": "poll_rate", "retryAfterMs": 120}))), Some(Duration::from_millis(120)));
        assert_eq!(rate_limited(&refusal(json!({"limit": "poll_rate", "retryAfterMs": 99_999_999}))), Some(MAX_RATE_WAIT));
        assert_eq!(rate_limited(&refusal(json!({"limit": "poll_rate"}))), Some(DEFAULT_POLL));
        assert_eq!(rate_limited(&refusal(json!({"limit": "max_running", "max": 1, "current": 1}))), None);
        assert_eq!(rate_limited(&ClientError::Rpc { code: -32602, message: "x".into(), data: None }), None);
    }
}
