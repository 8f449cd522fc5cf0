//! Reading, waiting for, listing, cancelling and answering tasks, each scoped to the
//! requestor's principal: another's task looks exactly like an unknown one.

use mcp_tasks_engine::{Change, Cursor, EngineError, ListQuery, Principal, TaskId, TaskRecord};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::context::RequestContext;
use crate::server::Server;

/// The task as it stands.
///
/// # Errors
/// [`EngineError::NotFound`] for an unknown, expired or foreign id; a store failure.
pub(crate) async fn get(ctx: &RequestContext, id: &TaskId) -> Result<TaskRecord, EngineError> {
    ctx.server().engine().get(&ctx.principal, id).await
}

/// A subscription to task changes, taken before reading a task so that no change after the
/// read is missed.
pub(crate) fn changes(ctx: &RequestContext) -> broadcast::Receiver<Change> {
    ctx.server().engine().subscribe()
}

/// The task's next state: woken by the change feed, never by a timer. When the feed lagged,
/// the task is read again.
///
/// # Errors
/// As [`get`] after a lag; `None` when the server is shutting down.
pub(crate) async fn next_change(
    ctx: &RequestContext,
    feed: &mut broadcast::Receiver<Change>,
    id: &TaskId,
) -> Option<Result<TaskRecord, EngineError>> {
    loop {
        match feed.recv().await {
            Ok(Change::Task(record)) if &record.id == id => return Some(Ok(TaskRecord::clone(&record))),
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => return Some(get(ctx, id).await),
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

/// The principal's tasks after `after`, oldest first, at most `limit`.
///
/// # Errors
/// A store failure.
pub(crate) async fn list(ctx: &RequestContext, after: Option<Cursor>, limit: u32) -> Result<Vec<TaskRecord>, EngineError> {
    let query = ListQuery { owner: ctx.principal.clone(), after, limit };
    ctx.server().engine().list(&query).await
}

/// The tasks among `ids` that are still in the store, oldest first, after `after`, at most
/// `limit` (a listing of the tasks one connection created).
///
/// # Errors
/// A store failure.
pub(crate) async fn list_of(
    ctx: &RequestContext,
    ids: &[TaskId],
    after: Option<&Cursor>,
    limit: usize,
) -> Result<Vec<TaskRecord>, EngineError> {
    let mut records = Vec::new();
    for id in ids {
        match get(ctx, id).await {
            Ok(record) => records.push(record),
            Err(EngineError::NotFound(_)) => {} // purged
            Err(err) => return Err(err),
        }
    }
    records.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    records.retain(|record| after.is_none_or(|cursor| (record.created_at, &record.id) > (cursor.created_at, &cursor.id)));
    records.truncate(limit);
    Ok(records)
}

/// Cancels the task now: it is `cancelled` when this returns, and its work is stopped.
///
/// # Errors
/// [`EngineError::NotFound`]; [`EngineError::Refused`] for a terminal task.
pub(crate) async fn cancel(ctx: &RequestContext, id: &TaskId) -> Result<TaskRecord, EngineError> {
    ctx.server().engine().cancel(&ctx.principal, id).await
}

/// Hands the client's answer to input request `key` of `owner`'s task `id` to the work.
/// `Ok(false)`: the request was no longer outstanding (answered already, or moved on).
///
/// # Errors
/// [`EngineError::NotFound`]; a store failure.
pub(crate) async fn answer(
    server: &Server,
    owner: &Principal,
    id: &TaskId,
    key: &str,
    answer: Result<Value, mcp_tasks_engine::ErrorObject>,
) -> Result<bool, EngineError> {
    server.engine().answer(owner, id, key, answer).await
}
