//! `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` (2025-11-25), each scoped
//! to the session's principal.

use mcp_tasks_engine::{Cursor, EngineError, ListQuery, TaskId, TaskRecord};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::legacy::{ListTasksResult, PaginatedParams, TaskIdParams};
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::codec;
use crate::errors::rpc_error;
use crate::session::{Listing, Session};

/// Tasks per `tasks/list` page.
const PAGE_SIZE: u32 = 100;

/// `tasks/get`: the task as it stands. The related-task key in the request is ignored;
/// `params.taskId` is the source of truth.
pub(crate) async fn get(session: &Session, params: TaskIdParams) -> Result<Value, RpcError> {
    let id = TaskId::from(params.task_id);
    let record = session.server.engine().get(&session.principal, &id).await.map_err(|err| rpc_error(&err))?;
    session.watch(&id, None);
    to_value(codec::legacy::task(&record))
}

/// `tasks/result`: blocks until the task is terminal, then replays its outcome. Stops
/// waiting (without touching the task) when the request itself is cancelled.
pub(crate) async fn result(session: &Session, params: TaskIdParams, cancel: CancellationToken) -> Result<Value, RpcError> {
    let id = TaskId::from(params.task_id);
    let engine = session.server.engine();
    session.watch(&id, None);
    let record = tokio::select! {
        record = engine.wait_terminal(&session.principal, &id) => record.map_err(|err| rpc_error(&err))?,
        _ = cancel.cancelled() => return Err(RpcError::internal("tasks/result was cancelled")),
    };
    tracing::info!(task = %id, principal = %session.principal, "task result retrieved");
    codec::legacy::task_result(&record)
}

/// `tasks/list`: the principal's tasks (or, for an unidentified requestor, the session's
/// own), oldest first, a page at a time.
pub(crate) async fn list(session: &Session, params: PaginatedParams) -> Result<Value, RpcError> {
    let after = params.cursor.as_deref().map(codec::legacy::decode_cursor).transpose()?;
    let mut records = match session.listing {
        Listing::Principal => {
            let query = ListQuery { owner: session.principal.clone(), after, limit: PAGE_SIZE + 1 };
            session.server.engine().list(&query).await.map_err(|err| rpc_error(&err))?
        }
        Listing::Session => session_tasks(session, after.as_ref()).await?,
    };
    let next_cursor = if records.len() > PAGE_SIZE as usize {
        records.truncate(PAGE_SIZE as usize);
        records.last().map(codec::legacy::encode_cursor)
    } else {
        None
    };
    let tasks = records.iter().map(codec::legacy::task).collect();
    to_value(ListTasksResult { tasks, next_cursor })
}

/// The session's own tasks still in the store, after the cursor, at most a page and one.
async fn session_tasks(session: &Session, after: Option<&Cursor>) -> Result<Vec<TaskRecord>, RpcError> {
    let mut records = Vec::new();
    for id in session.created_tasks() {
        match session.server.engine().get(&session.principal, &id).await {
            Ok(record) => records.push(record),
            Err(EngineError::NotFound(_)) => {} // purged
            Err(err) => return Err(rpc_error(&err)),
        }
    }
    records.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    records.retain(|record| after.is_none_or(|cursor| (record.created_at, &record.id) > (cursor.created_at, &cursor.id)));
    records.truncate(PAGE_SIZE as usize + 1);
    Ok(records)
}

/// `tasks/cancel`: the task is `cancelled` before this answers; a terminal task is -32602.
pub(crate) async fn cancel(session: &Session, params: TaskIdParams) -> Result<Value, RpcError> {
    let id = TaskId::from(params.task_id);
    let record = session.server.engine().cancel(&session.principal, &id).await.map_err(|err| rpc_error(&err))?;
    to_value(codec::legacy::task(&record))
}

fn to_value(value: impl Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|err| RpcError::internal(err.to_string()))
}
