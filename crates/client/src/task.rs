//! [`TaskHandle`]: a task on the server, and the one loop that drives it to its end.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::mcp::CallToolResult;
use mcp_tasks_protocol::modern::method as modern_method;
use serde_json::{Value, json};

use crate::client::from_value;
use crate::connection::Connection;
use crate::error::ClientError;
use crate::ledger::{Endpoint, Ledger};
use crate::legacy::{self, method};
use crate::modern::{self, Identity};
use crate::types::{TaskInfo, TaskStatus};

/// 2026-07-28: how long [`TaskHandle::cancel`] polls after the acknowledgement for the task
/// to reach its end.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// Poll interval when the server suggests none.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// `tasks/result` streams lost in a row on a terminal task before [`TaskHandle::wait`]
/// gives up.
const MAX_LOST_RESULTS: u32 = 3;
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
    connection: Arc<Connection>,
    id: String,
    /// The last state seen (`None` for a handle attached by id and not yet polled).
    last: Arc<Mutex<Option<TaskInfo>>>,
    /// The `progressToken` the creating request carried, if this handle made the task.
    progress_token: Option<String>,
    /// 2026-07-28: how requests say who the client is; `None` in 2025-11-25.
    modern: Option<Arc<Identity>>,
    /// 2026-07-28: the input request keys answered already (each is answered once, however
    /// many polls show it).
    answered: Arc<Mutex<HashSet<String>>>,
    /// Where the answered keys are remembered across a restart of the host, if anywhere;
    /// and whether they were read from there yet.
    memory: Option<Arc<(Ledger, Endpoint, std::sync::atomic::AtomicBool)>>,
}

impl TaskHandle {
    pub(crate) fn new(connection: Arc<Connection>, task: TaskInfo) -> TaskHandle {
        let id = task.id.clone();
        TaskHandle::make(connection, id, Some(task))
    }

    pub(crate) fn unseen(connection: Arc<Connection>, id: &str) -> TaskHandle {
        TaskHandle::make(connection, id.to_owned(), None)
    }

    fn make(connection: Arc<Connection>, id: String, last: Option<TaskInfo>) -> TaskHandle {
        TaskHandle {
            connection,
            id,
            last: Arc::new(Mutex::new(last)),
            progress_token: None,
            modern: None,
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

    /// The handle of a 2026-07-28 session (`Some`), or of a 2025-11-25 one.
    pub(crate) fn in_era(mut self, modern: Option<Arc<Identity>>) -> TaskHandle {
        self.modern = modern;
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
        if self.modern.is_some() { Era::Modern } else { Era::Legacy }
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
        if self.modern.is_some() {
            return self.detailed().await.map(|detailed| detailed.task);
        }
        let task = legacy::task(self.polled(method::TASKS_GET, self.params()).await?, method::TASKS_GET)?;
        self.remember(&task);
        Ok(task)
    }

    /// A task read (`tasks/get`), retried after the wait the server names when it refuses
    /// it for polling too fast.
    async fn polled(&self, name: &str, params: Value) -> Result<Value, ClientError> {
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

    /// 2026-07-28 `tasks/get`: the task and what it inlines.
    async fn detailed(&self) -> Result<modern::Detailed, ClientError> {
        let answer = self.polled(method::TASKS_GET, self.params()).await?;
        let detailed = modern::detailed(answer, method::TASKS_GET)?;
        self.remember(&detailed.task);
        Ok(detailed)
    }

    async fn request(&self, name: &str, params: Value) -> Result<Value, ClientError> {
        let params = match &self.modern {
            Some(identity) => identity.frame(params, true),
            None => params,
        };
        self.connection.request(name, params).await
    }

    /// Cancels the task (`tasks/cancel`); returns it, now `cancelled`.
    ///
    /// # Errors
    /// Transport errors, or -32602 for a task that is unknown or already terminal.
    ///
    /// In 2026-07-28 `tasks/cancel` is an acknowledgement: the task is then polled until it
    /// ends, for at most 10 s, and returned as it stands.
    pub async fn cancel(&self) -> Result<TaskInfo, ClientError> {
        if self.modern.is_some() {
            self.request(method::TASKS_CANCEL, self.params()).await?;
            let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
            loop {
                let task = self.status().await?;
                if task.status.is_terminal() || tokio::time::Instant::now() >= deadline {
                    return Ok(task);
                }
                self.pause(&task).await?;
            }
        }
        let answer = self.connection.request(method::TASKS_CANCEL, self.params()).await?;
        let task = legacy::task(answer, method::TASKS_CANCEL)?;
        self.remember(&task);
        Ok(task)
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
        if self.modern.is_some() {
            return self.wait_modern().await;
        }
        let mut lost = 0;
        loop {
            match self.connection.request(method::TASKS_RESULT, self.params()).await {
                Ok(result) => return from_value(result, method::TASKS_RESULT),
                Err(ClientError::Rpc { code, message, data }) => return Err(self.outcome_error(code, message, data).await),
                Err(error @ (ClientError::StreamLost { .. } | ClientError::Transport(_))) => {
                    tracing::debug!(task = %self.id, %error, "tasks/result lost; polling tasks/get");
                    let task = self.poll_until_actionable().await?;
                    if task.status.is_terminal() {
                        lost += 1;
                        if lost >= MAX_LOST_RESULTS {
                            return Err(error);
                        }
                    }
                }
                Err(other) => return Err(other),
            }
        }
    }

    async fn wait_modern(&self) -> Result<CallToolResult, ClientError> {
        // Told of the task's changes where the server offers it; polled all the same (a
        // notification only shortens the pause), so a stream that drops loses nothing.
        let mut changes = self.connection.notifications.subscribe();
        let _listening = self.modern.as_ref().map(|identity| {
            let params = identity.frame(json!({"notifications": {"taskIds": [self.id]}}), true);
            self.connection.listen(params)
        });
        loop {
            let detailed = self.detailed().await?;
            match detailed.task.status {
                TaskStatus::Completed => {
                    let result = detailed.result.unwrap_or_else(|| json!({"content": []}));
                    return from_value(result, method::TASKS_GET);
                }
                TaskStatus::Failed => {
                    let error = detailed.error.unwrap_or_else(|| json!({}));
                    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
                    let message = error.get("message").and_then(Value::as_str).map_or_else(
                        || detailed.task.status_message.clone().unwrap_or_else(|| "the task failed".to_owned()),
                        str::to_owned,
                    );
                    return Err(ClientError::TaskFailed { task_id: self.id.clone(), code, message, data: error.get("data").cloned() });
                }
                TaskStatus::Cancelled => {
                    return Err(ClientError::TaskCancelled { task_id: self.id.clone(), message: detailed.task.status_message });
                }
                TaskStatus::InputRequired => {
                    if self.answer(&detailed.input_requests).await? {
                        continue;
                    }
                }
                TaskStatus::Working => {}
            }
            self.pause_or_change(&detailed.task, &mut changes).await?;
        }
    }

    /// [`TaskHandle::pause`], ended early by a `notifications/tasks` about this task.
    async fn pause_or_change(
        &self,
        task: &TaskInfo,
        changes: &mut tokio::sync::broadcast::Receiver<crate::ServerNotification>,
    ) -> Result<(), ClientError> {
        let pause = tokio::time::sleep(task.poll_interval_ms.map_or(DEFAULT_POLL, Duration::from_millis));
        tokio::pin!(pause);
        loop {
            tokio::select! {
                () = &mut pause => return Ok(()),
                () = self.connection.stop.cancelled() => return Err(ClientError::Closed),
                change = changes.recv() => match change {
                    Ok(note) if note.method == modern_method::NOTIFY_TASKS && note.params["taskId"] == self.id.as_str() => {
                        return Ok(());
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }

    /// Answers the questions of `requests` not answered yet, in one `tasks/update`; `true`
    /// if it sent one.
    async fn answer(&self, requests: &serde_json::Map<String, Value>) -> Result<bool, ClientError> {
        if let Some(memory) = &self.memory
            && !memory.2.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            match memory.0.answered(&memory.1, &self.id).await {
                Ok(keys) => self.answered.lock().unwrap_or_else(PoisonError::into_inner).extend(keys),
                Err(err) => tracing::warn!(task = %self.id, error = %err, "cannot read the answered input requests"),
            }
        }
        let fresh: serde_json::Map<String, Value> = {
            let answered = self.answered.lock().unwrap_or_else(PoisonError::into_inner);
            requests.iter().filter(|(key, _)| !answered.contains(*key)).map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        if fresh.is_empty() {
            return Ok(false);
        }
        // The questions answered go at once, even when another could not be: a task takes
        // partial answers, and the one left open can be answered by a later run.
        let (answers, failure) = modern::answer_each(&self.connection.handlers, &fresh, Some(&self.id), None).await;
        if answers.is_empty() {
            return Err(failure.unwrap_or_else(|| ClientError::Protocol("no input request to answer".into())));
        }
        self.request(modern_method::TASKS_UPDATE, json!({"taskId": self.id, "inputResponses": answers})).await?;
        self.answered.lock().unwrap_or_else(PoisonError::into_inner).extend(answers.keys().cloned());
        if let Some(memory) = &self.memory {
            for key in answers.keys() {
                if let Err(err) = memory.0.note_answered(&memory.1, &self.id, key).await {
                    tracing::warn!(task = %self.id, error = %err, "cannot note an answered input request");
                }
            }
        }
        match failure {
            Some(failure) => Err(failure),
            None => Ok(true),
        }
    }

    /// Waits the task's poll interval (or 1 s), unless the client closes.
    async fn pause(&self, task: &TaskInfo) -> Result<(), ClientError> {
        let pause = task.poll_interval_ms.map_or(DEFAULT_POLL, Duration::from_millis);
        tokio::select! {
            () = tokio::time::sleep(pause) => Ok(()),
            () = self.connection.stop.cancelled() => Err(ClientError::Closed),
        }
    }

    /// Polls `tasks/get` until the task is `input_required` or terminal.
    async fn poll_until_actionable(&self) -> Result<TaskInfo, ClientError> {
        loop {
            let task = self.status().await?;
            if task.status.is_terminal() || task.status == TaskStatus::InputRequired {
                return Ok(task);
            }
            let pause = task.poll_interval_ms.map_or(DEFAULT_POLL, Duration::from_millis);
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = self.connection.stop.cancelled() => return Err(ClientError::Closed),
            }
        }
    }

    /// What a JSON-RPC error from `tasks/result` means: a cancelled task, the replayed
    /// error of a failed one, or an error about the request itself (e.g. unknown task).
    async fn outcome_error(&self, code: i64, message: String, data: Option<Value>) -> ClientError {
        let said_cancelled = data.as_ref().and_then(|data| data.get("status")).and_then(Value::as_str) == Some("cancelled");
        let task = match self.status().await {
            Ok(task) => task,
            Err(_) => return ClientError::Rpc { code, message, data },
        };
        match task.status {
            TaskStatus::Cancelled => ClientError::TaskCancelled { task_id: self.id.clone(), message: task.status_message },
            TaskStatus::Failed if !said_cancelled => ClientError::TaskFailed { task_id: self.id.clone(), code, message, data },
            _ => ClientError::Rpc { code, message, data },
        }
    }

    fn params(&self) -> Value {
        json!({ "taskId": self.id })
    }

    fn remember(&self, task: &TaskInfo) {
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
