//! `tasks/stream` (draft SEP-2694): a task's event log on the request's stream, served by both
//! eras' codecs (2026-07-28 with the tasks extension; a 2025-11-25 session too, which nothing
//! in that era forbids), each with its own names for the method and the `_meta` key
//! ([`Wire`]). Each event is a `notifications/tasks/event` (`seq`, `taskId`, `type`,
//! `payload`, and `_meta` with the related task); first those kept after the cursor `after`
//! (exclusive; absent: from the oldest kept), then, live, each new one, with no gap and no
//! repeat at the switch; once the task is finished and its last event is sent, the empty
//! result ends the stream.
//!
//! - `after` is a non-negative integer (`-32602` otherwise, stream_17), at most the log's
//!   last number (`-32602` past it: the draft leaves it open, and skipping the numbers up to
//!   it would hide events); behind what is kept it is `events_gone`: `-32010` with
//!   `data.reason`, `taskId` and `earliestSeq` (stream_18); so is a stream that falls behind
//!   a pruning (stream_21).
//! - Another principal's task, or an unknown one, is the usual `-32602` (stream_36, 38).
//! - One stream per task per connection (stream_12): a second is `-32602`. Over HTTP each
//!   2026-07-28 request is its own connection.
//! - Cancelling the request stops the stream only (stream_14), and frees its place at once: a
//!   new stream of the task opened right after the cancellation is served.
//! - Live: woken by this process's appends and by the task's changes (from any process), and
//!   every [`POLL_EVERY`] for another process's appends.

use std::time::Duration;

use mcp_tasks_engine::{Events, TaskEvent, TaskId};
use mcp_tasks_protocol::jsonrpc::{self, RpcError};
use serde_json::{Value, json};

use crate::connection::Route;
use crate::context::RequestContext;
use crate::errors::rpc_error;
use crate::ops;

/// The names a codec's era gives the stream's parts.
pub(crate) struct Wire {
    /// The notification that carries each event (`notifications/tasks/event`).
    pub(crate) notification: &'static str,
    /// The `_meta` key of the related task.
    pub(crate) related_meta: &'static str,
}

/// How many events are read from the store at once.
const PAGE: u32 = 256;
/// How often a live stream looks for events another process appended.
const POLL_EVERY: Duration = Duration::from_millis(250);
/// `-32010`, the draft's code for `events_gone` (in the range 2026-07-28 calls legacy;
/// clients read `data.reason`).
const EVENTS_GONE: i64 = -32010;

/// The request's parameters: the task, and the cursor if any.
fn params(params: Option<Value>) -> Result<(TaskId, Option<u64>), RpcError> {
    let invalid = |message: String| RpcError::new(RpcError::INVALID_PARAMS, message);
    let params = params.unwrap_or(Value::Null);
    let Some(id) = params.get("taskId").and_then(Value::as_str) else {
        return Err(invalid("tasks/stream needs params.taskId, the task's id (a string)".to_owned()));
    };
    let after = match params.get("after") {
        None | Some(Value::Null) => None,
        Some(after) => Some(after.as_u64().ok_or_else(|| {
            invalid(format!(
                "params.after must be a non-negative integer, the seq of the last event you processed (got {after}); \
                 leave it out to start from the oldest event kept"
            ))
        })?),
    };
    Ok((TaskId::from(id.to_owned()), after))
}

/// Serves a `tasks/stream` request until the task's last event is sent, or the request is
/// cancelled.
pub(crate) async fn stream(ctx: &RequestContext, raw: Option<Value>, wire: &Wire) -> Result<Value, RpcError> {
    let (id, after) = params(raw)?;
    ops::tasks::get(ctx, &id).await.map_err(|err| rpc_error(&err))?;
    if !ctx.conn.open_stream(&ctx.id, id.as_str()) {
        return Err(RpcError::new(
            RpcError::INVALID_PARAMS,
            format!("a tasks/stream of task {id} is already open on this connection: cancel it before opening another"),
        ));
    }
    let engine = ctx.server().engine();
    // Subscribed before the first read: nothing appended or changed after it is missed.
    let mut appended = engine.subscribe_appended();
    let watch = engine.watch_task(&id);
    let mut cursor = after;
    loop {
        let page = engine.events(&ctx.principal, &id, cursor, PAGE).await.map_err(|err| rpc_error(&err))?;
        let (events, finished) = match page {
            Events::Page { events, finished } => (events, finished),
            Events::Gone { earliest } => return Err(gone(&id, earliest)),
            Events::Ahead { last } => {
                return Err(RpcError::new(
                    RpcError::INVALID_PARAMS,
                    format!(
                        "params.after {} is past the last event of task {id}, {last}: send the seq of an event you \
                         received, or leave after out",
                        cursor.unwrap_or(0)
                    ),
                ));
            }
        };
        let full = events.len() >= PAGE as usize;
        for event in events {
            cursor = Some(event.seq);
            send(ctx, &id, event, wire);
        }
        if finished {
            return Ok(json!({}));
        }
        if full {
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            () = ctx.cancel.cancelled() => return Ok(json!({})),
            () = tokio::time::sleep(POLL_EVERY) => {}
            _ = watch.next_task() => {}
            _ = async {
                while let Ok((task, _)) = appended.recv().await {
                    if task == id {
                        return;
                    }
                }
            } => {}
        }
    }
}

/// `events_gone`: the events after the cursor were pruned; kept from `earliest` on.
fn gone(id: &TaskId, earliest: u64) -> RpcError {
    RpcError::new(
        EVENTS_GONE,
        format!(
            "the events of task {id} before {earliest} are no longer kept: resume with after = {} or leave after out",
            earliest.saturating_sub(1)
        ),
    )
    .with_data(json!({"reason": "events_gone", "taskId": id.as_str(), "earliestSeq": earliest}))
}

/// Sends `event` of task `id` on the request's stream.
fn send(ctx: &RequestContext, id: &TaskId, event: TaskEvent, wire: &Wire) {
    let params = json!({
        "seq": event.seq,
        "taskId": id.as_str(),
        "type": event.kind,
        "payload": event.payload,
        "_meta": {wire.related_meta: {"taskId": id.as_str()}, "dev.mcp-tasks/at": event.at.0},
    });
    ctx.conn.send(jsonrpc::notification(wire.notification, params), Route::Related(ctx.id.clone()));
}
