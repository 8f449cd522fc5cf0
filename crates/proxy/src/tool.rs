//! [`UpstreamTool`]: the handler of an upstream tool. A call goes upstream as a task when
//! the upstream runs that tool as one (it is then driven with the client's
//! [`TaskHandle`], and its id stored as our task's checkpoint, so a restarted proxy resumes
//! polling it), plainly otherwise (with a progress token and a cancellation that sends
//! `notifications/cancelled`). An upstream that dies mid-call ends the call by the tool's
//! `on_restart` policy: `fail` with an error that says what happened, `retry` once the
//! upstream is back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_client::protocol::CallToolResult;
use mcp_tasks_client::{Called, ClientError, ServerNotification, TaskHandle, TaskMode as UpstreamMode};
use mcp_tasks_engine::{Context, ErrorObject, Handler, Outcome, Progress, RestartPolicy, WorkError};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::legacy::RELATED_TASK;
use mcp_tasks_protocol::mcp::method;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::ToolPolicy;
use crate::upstream::{Link, Upstream};

/// The checkpoint key that holds the upstream task's id.
const UPSTREAM_TASK: &str = "upstream_task";
/// How long a cancel (or a timeout) waits for the upstream to take `tasks/cancel`.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// Progress tokens of plain upstream calls, unique in this process.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

pub(crate) struct UpstreamTool {
    pub(crate) name: String,
    pub(crate) upstream: Arc<Upstream>,
    pub(crate) policy: ToolPolicy,
}

/// How one attempt at the upstream ended.
enum Attempt {
    Done(Outcome),
    /// The upstream went away (exited, unreachable); the message says how.
    Lost(String),
    /// The upstream no longer knows the session (HTTP 404): the call never reached the
    /// tool, so it is sent again on the new session whatever the tool's policy.
    Undelivered(String),
}

#[async_trait]
impl Handler for UpstreamTool {
    async fn call(&self, arguments: Value, ctx: Context) -> Outcome {
        let cancel = ctx.cancellation().child_token();
        let work = self.run(arguments, &ctx, &cancel);
        let Some(limit) = self.policy.timeout else {
            return work.await;
        };
        let mut work = std::pin::pin!(work);
        tokio::select! {
            outcome = &mut work => outcome,
            () = tokio::time::sleep(limit) => {
                // Cancel upstream (notifications/cancelled or tasks/cancel), bounded.
                cancel.cancel();
                let _ = tokio::time::timeout(CANCEL_WAIT * 2, &mut work).await;
                Outcome::Error(internal(format!(
                    "the upstream tool {} did not finish within its timeout of {} s; the call was cancelled upstream",
                    self.name,
                    limit.as_secs_f64()
                )))
            }
        }
    }
}

impl UpstreamTool {
    async fn run(&self, arguments: Value, ctx: &Context, cancel: &CancellationToken) -> Outcome {
        if let Some(task_id) = ctx.checkpointed().await.and_then(|note| note.get(UPSTREAM_TASK)?.as_str().map(str::to_owned)) {
            ctx.status(format!("the proxy restarted; polling upstream task {task_id} again")).await;
            return match self.link(cancel).await {
                Ok(link) => {
                    let handle = link.client.task(&task_id);
                    match self.drive(&link, handle, ctx, cancel).await {
                        Attempt::Done(outcome) => outcome,
                        Attempt::Lost(reason) | Attempt::Undelivered(reason) => Outcome::Error(internal(format!(
                            "the upstream server went away while the proxy polled its task {task_id}: {reason}"
                        ))),
                    }
                }
                Err(outcome) => outcome,
            };
        }
        let mut attempt = 1;
        let mut resent = false;
        let mut gone = None;
        loop {
            let link = match self.link_after(cancel, gone).await {
                Ok(link) => link,
                Err(outcome) => return outcome,
            };
            let reason = match self.once(&link, arguments.clone(), ctx, cancel).await {
                Attempt::Done(outcome) => return outcome,
                Attempt::Undelivered(reason) if !resent => {
                    resent = true;
                    tracing::info!(tool = %self.name, %reason, "the upstream lost its session; sending the call again on a new one");
                    self.upstream.report_broken(link.generation);
                    gone = Some(link.generation);
                    continue;
                }
                Attempt::Lost(reason) | Attempt::Undelivered(reason) => reason,
            };
            self.upstream.report_broken(link.generation);
            gone = Some(link.generation);
            if cancel.is_cancelled() {
                return Outcome::Failure(WorkError::CallCancelled);
            }
            if self.policy.on_restart == RestartPolicy::Retry && attempt < self.policy.max_attempts.max(1) {
                attempt += 1;
                tracing::warn!(tool = %self.name, %reason, attempt, "the upstream went away mid-call; calling again once it is back");
                ctx.status(format!("the upstream server went away ({reason}); calling again once it is back (attempt {attempt})"))
                    .await;
                continue;
            }
            let what = match self.policy.on_restart {
                RestartPolicy::Retry => format!("after {attempt} attempts"),
                RestartPolicy::Fail => "and the tool is not retried (on_restart = \"fail\")".to_owned(),
            };
            return Outcome::Error(internal(format!(
                "the upstream server went away during the call ({reason}) {what}; the proxy is starting it again: call the tool again"
            )));
        }
    }

    async fn link(&self, cancel: &CancellationToken) -> Result<Link, Outcome> {
        self.link_after(cancel, None).await
    }

    /// The upstream session, newer than generation `gone` if given.
    async fn link_after(&self, cancel: &CancellationToken, gone: Option<u64>) -> Result<Link, Outcome> {
        self.upstream.wait_link_after(Some(cancel), gone).await.map_err(|reason| {
            if cancel.is_cancelled() { Outcome::Failure(WorkError::CallCancelled) } else { Outcome::Error(internal(reason)) }
        })
    }

    /// One call upstream: as a task where the upstream runs this tool as one, else plainly.
    async fn once(&self, link: &Link, arguments: Value, ctx: &Context, cancel: &CancellationToken) -> Attempt {
        let client = &link.client;
        let as_task = client.server_runs_tool_tasks() && self.upstream.upstream_mode(&self.name) != UpstreamMode::Forbidden;
        if as_task {
            let asking = self.upstream.asks.enter(ctx.clone(), None);
            // 2026-07-28: the upstream decides, and may answer plainly; until it answers, a
            // cancel is sent as notifications/cancelled.
            let called = client.call_cancellable(&self.name, arguments, cancel).await;
            return match called {
                Ok(Called::Result(result)) => Attempt::Done(outcome(result)),
                Ok(Called::Task(handle)) => {
                    asking.upstream_task(handle.id());
                    if ctx.checkpoint(json!({UPSTREAM_TASK: handle.id()})).await {
                        ctx.status(format!("running upstream as task {}", handle.id())).await;
                    } else if ctx.task_id().is_some() {
                        tracing::warn!(tool = %self.name, upstream_task = handle.id(), "could not store the upstream task's id");
                    }
                    drop(asking);
                    self.drive(link, handle, ctx, cancel).await
                }
                Err(error) => attempt_of(error),
            };
        }
        let token = format!("mcp-tasks-proxy-{}", NEXT_TOKEN.fetch_add(1, Ordering::Relaxed));
        let _asking = self.upstream.asks.enter(ctx.clone(), Some(&token));
        let notes = client.notifications();
        let called = client.call_tool_with(&self.name, arguments, &token, cancel);
        tokio::select! {
            biased;
            called = called => match called {
                Ok(result) => Attempt::Done(outcome(result)),
                Err(error) => attempt_of(error),
            },
            () = relay(notes, Some(token.clone()), None, ctx) => Attempt::Lost("its notifications ended".to_owned()),
        }
    }

    /// Drives an upstream task to its end, relaying its progress and status; a cancel is
    /// sent upstream as `tasks/cancel`.
    async fn drive(&self, link: &Link, handle: TaskHandle, ctx: &Context, cancel: &CancellationToken) -> Attempt {
        let asking = self.upstream.asks.enter(ctx.clone(), None);
        asking.upstream_task(handle.id());
        let notes = link.client.notifications();
        let token = handle.progress_token().map(str::to_owned);
        let task_id = handle.id().to_owned();
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                match tokio::time::timeout(CANCEL_WAIT, handle.cancel()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => tracing::debug!(%error, task = %task_id, "tasks/cancel upstream"),
                    Err(_) => tracing::debug!(task = %task_id, "tasks/cancel upstream took too long"),
                }
                Attempt::Done(Outcome::Failure(WorkError::CallCancelled))
            }
            waited = handle.wait() => match waited {
                Ok(result) => Attempt::Done(outcome(result)),
                Err(ClientError::TaskFailed { code, message, data, .. }) => {
                    Attempt::Done(Outcome::Error(ErrorObject { code, message, data }))
                }
                Err(ClientError::TaskCancelled { message, .. }) => Attempt::Done(Outcome::Error(internal(format!(
                    "the upstream cancelled its task {task_id}{}",
                    message.map(|m| format!(": {m}")).unwrap_or_default()
                )))),
                Err(ClientError::Rpc { code: RpcError::INVALID_PARAMS, message, .. }) => Attempt::Done(Outcome::Error(internal(format!(
                    "the upstream server no longer knows its task {task_id} ({message}); it may keep tasks in memory and have \
                     restarted. The result is lost: call the tool again"
                )))),
                Err(error) => attempt_of(error),
            },
            () = relay(notes, token, Some(task_id.clone()), ctx) => Attempt::Lost("its notifications ended".to_owned()),
        }
    }
}

/// Relays the upstream's notifications about one call to its context: progress under
/// `token`, the status message of upstream task `task`, log messages. Returns only when the
/// upstream session's notifications end.
async fn relay(mut notes: broadcast::Receiver<ServerNotification>, token: Option<String>, task: Option<String>, ctx: &Context) {
    loop {
        let note = match notes.recv().await {
            Ok(note) => note,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::debug!(missed, "progress relay lagged");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        match note.method.as_str() {
            method::NOTIFY_PROGRESS if token.is_some() && note.progress_token() == token => {
                let params = &note.params;
                let Some(progress) = params.get("progress").and_then(Value::as_f64) else { continue };
                let total = params.get("total").and_then(Value::as_f64);
                let message = params.get("message").and_then(Value::as_str).map(str::to_owned);
                if let Some(message) = &message {
                    ctx.status(message.clone()).await;
                }
                ctx.progress(Progress { progress, total, message });
            }
            _ if task.is_some() && note.task_id() == task => {
                if let Some(message) = note.task_status().and_then(|status| status.status_message) {
                    ctx.status(message).await;
                }
            }
            "notifications/message" if task.is_none() => {
                // Into the task's event log too (`dev.mcp-tasks.log`), when the call is a task.
                let params = &note.params;
                let mut payload = serde_json::json!({
                    "level": params.get("level").and_then(Value::as_str).unwrap_or("info"),
                    "message": match params.get("data") {
                        Some(Value::String(text)) => text.clone(),
                        Some(data) => data.to_string(),
                        None => String::new(),
                    },
                });
                if let Some(logger) = params.get("logger").and_then(Value::as_str) {
                    payload["logger"] = Value::String(logger.to_owned());
                }
                ctx.event(mcp_tasks_engine::LOG_EVENT, payload);
                ctx.notify(&note.method, note.params);
            }
            _ => {}
        }
    }
}

/// Whether a client error means the upstream went away (rather than refused the call).
pub(crate) fn upstream_lost(error: &ClientError) -> bool {
    session_lost(error)
        || matches!(
            error,
            ClientError::ServerExited { .. } | ClientError::Closed | ClientError::Transport(_) | ClientError::StreamLost { .. }
        )
}

/// Whether an HTTP upstream refused the request for its session, before running it: `404`
/// (the Streamable HTTP rule for an ended session), or a `400` that names the session (what
/// the TypeScript SDK's servers answer for a session id they do not know).
fn session_lost(error: &ClientError) -> bool {
    match error {
        ClientError::Http { status: 404, .. } => true,
        ClientError::Http { status: 400, body } => body.to_ascii_lowercase().contains("session"),
        _ => false,
    }
}

fn attempt_of(error: ClientError) -> Attempt {
    if session_lost(&error) {
        return Attempt::Undelivered(error.to_string());
    }
    if upstream_lost(&error) {
        return Attempt::Lost(error.to_string());
    }
    Attempt::Done(match error {
        ClientError::CallCancelled => Outcome::Failure(WorkError::CallCancelled),
        // The upstream's own error (an unknown tool, bad arguments, its failure), as it said it.
        ClientError::Rpc { code, message, data } => Outcome::Error(ErrorObject { code, message, data }),
        other => Outcome::Error(internal(format!("the upstream call failed: {other}"))),
    })
}

/// The upstream's result as ours, without the upstream's related-task `_meta` (it names
/// the upstream's task, not ours).
fn outcome(result: CallToolResult) -> Outcome {
    let mut value = serde_json::to_value(&result).unwrap_or_else(|_| json!({"content": []}));
    if let Some(object) = value.as_object_mut()
        && let Some(meta) = object.get_mut("_meta").and_then(Value::as_object_mut)
    {
        meta.remove(RELATED_TASK);
        if meta.is_empty() {
            object.remove("_meta");
        }
    }
    Outcome::Result(value)
}

fn internal(message: String) -> ErrorObject {
    ErrorObject { code: RpcError::INTERNAL_ERROR, message, data: None }
}
