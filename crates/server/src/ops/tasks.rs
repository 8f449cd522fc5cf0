//! Reading, waiting for, listing, cancelling and answering tasks, each scoped to the
//! requestor's principal: another's task looks exactly like an unknown one.

use std::sync::Arc;

use mcp_tasks_engine::{Cursor, EngineError, ListQuery, Principal, TaskId, TaskRecord, TaskWatch};
use serde_json::Value;

use crate::context::RequestContext;
use crate::server::Server;

/// The task as it stands (shared: the store's or the last change's record, not a copy).
///
/// # Errors
/// [`EngineError::NotFound`] for an unknown, expired or foreign id; a store failure.
pub(crate) async fn get(ctx: &RequestContext, id: &TaskId) -> Result<Arc<TaskRecord>, EngineError> {
    ctx.server().engine().get_shared(&ctx.principal, id).await
}

/// A watch on task `id`'s changes, taken before reading the task so that no change after
/// the read is missed. Woken by that task's changes only.
pub(crate) fn changes(ctx: &RequestContext, id: &TaskId) -> TaskWatch {
    ctx.server().engine().watch_task(id)
}

/// The task's next state: woken by its changes, never by a timer. When the watch lagged,
/// the task is read again. The record the change carried, shared, not copied.
///
/// # Errors
/// As [`get`] after a lag.
pub(crate) async fn next_change(ctx: &RequestContext, feed: &TaskWatch, id: &TaskId) -> Result<Arc<TaskRecord>, EngineError> {
    match feed.next_task().await {
        Some(record) => Ok(record),
        None => get(ctx, id).await,
    }
}

/// Times the delivery of task `id`'s outcome to a `tasks/result` that waited for it, which
/// answers now: from the commit of its terminal state on this node
/// (`mcp_tasks_result_delivery_seconds`). Nothing is observed for a task finished by another
/// node of a shared store, whose commit this node did not see return.
pub(crate) fn delivered(ctx: &RequestContext, id: &TaskId) {
    if let Some(committed) = ctx.server().engine().committed_at(id) {
        ctx.server().metrics().result_delivered(committed.elapsed());
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
            Ok(record) => records.push(Arc::unwrap_or_clone(record)),
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

/// Asks for the task to be cancelled, cooperatively: an acknowledgement that never refuses a
/// terminal task (it comes back unchanged); running work is told to stop and the task ends
/// `cancelled` when it has (2026-07-28 tasks extension `tasks/cancel`).
///
/// # Errors
/// [`EngineError::NotFound`]; a store failure.
pub(crate) async fn request_cancel(ctx: &RequestContext, id: &TaskId) -> Result<TaskRecord, EngineError> {
    ctx.server().engine().request_cancel(&ctx.principal, id).await
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mcp_tasks_engine::{Engine, EventKind, NewTask, Outcome, Policy, Principal, Status, SystemClock};
    use mcp_tasks_protocol::era::Era;
    use mcp_tasks_protocol::jsonrpc::RequestId;
    use serde_json::json;
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::catalog::handler_fn;
    use crate::connection::{Connection, Listing};
    use crate::context::ClientCaps;
    use crate::registry::{TaskMode, ToolDef};

    fn ctx() -> (RequestContext, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = mcp_tasks_sqlite::SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
        let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
        let handler = handler_fn(|_arguments, ctx| async move {
            ctx.cancelled().await;
            Outcome::Result(json!({"content": []}))
        });
        let tool = ToolDef::new("wait", "", json!({"type": "object"}), handler).task_mode(TaskMode::Optional);
        let server = Server::builder(engine).tool(tool).build().unwrap();
        let (out, _outgoing) = mpsc::unbounded_channel();
        let conn = Arc::new(Connection::new(server, Principal::new("p"), Listing::Principal, out));
        let ctx = RequestContext {
            era: Era::Modern,
            principal: Principal::new("p"),
            client: ClientCaps::default(),
            id: RequestId::Number(1),
            cancel: CancellationToken::new(),
            conn,
        };
        (ctx, dir)
    }

    #[tokio::test]
    async fn a_requested_cancel_stops_the_work_and_acknowledges_a_terminal_task_unchanged() {
        let (ctx, _dir) = ctx();
        let engine = ctx.server().engine().clone();
        let new = NewTask {
            trace: None,
            origin: None,
            owner: ctx.principal.clone(),
            tool: "wait".into(),
            arguments: json!({}),
            requested_ttl_ms: None,
            error_result_fails: true,
            input_kinds: vec![],
        };
        let record = engine.create(new).await.unwrap();
        let feed = changes(&ctx, &record.id);
        engine.start(&record).unwrap();
        request_cancel(&ctx, &record.id).await.unwrap();
        let mut last = get(&ctx, &record.id).await.unwrap();
        while !last.status().is_terminal() {
            last = next_change(&ctx, &feed, &record.id).await.unwrap();
        }
        assert_eq!(last.status(), Status::Cancelled);
        let again = request_cancel(&ctx, &record.id).await.unwrap();
        assert_eq!((again.status(), again.version), (Status::Cancelled, last.version), "unchanged, not refused");
        let refused = cancel(&ctx, &record.id).await.unwrap_err();
        assert!(matches!(refused, EngineError::Refused { event: EventKind::Cancel, .. }), "{refused}");
    }
}
