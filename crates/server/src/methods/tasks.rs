//! `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` (2025-11-25), each scoped
//! to the session's principal.

use std::collections::HashSet;
use std::sync::Arc;

use mcp_tasks_engine::{Change, Cursor, EngineError, ListQuery, TaskId, TaskRecord, TaskState};
use mcp_tasks_protocol::jsonrpc::{RequestId, RpcError};
use mcp_tasks_protocol::legacy::{ListTasksResult, PaginatedParams, TaskIdParams};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::codec;
use crate::errors::rpc_error;
use crate::session::{Listing, Route, Session};

/// Tasks per `tasks/list` page.
const PAGE_SIZE: u32 = 100;

/// `tasks/get`: the task as it stands (watched from now on). The related-task key in the request is ignored;
/// `params.taskId` is the source of truth.
pub(crate) async fn get(session: &Session, params: TaskIdParams) -> Result<Value, RpcError> {
    let id = TaskId::from(params.task_id);
    let record = session.server.engine().get(&session.principal, &id).await.map_err(|err| rpc_error(&err))?;
    session.watch(&id, None);
    to_value(codec::legacy::task(&record))
}

/// `tasks/result`: blocks until the task is terminal, then replays its outcome. While the
/// task is `input_required`, each outstanding input request goes to the client as an
/// ordinary request on this call's stream, tagged with the related-task metadata, and its
/// answer goes back to the waiting work (2025-11-25 tasks §input_required). Stops waiting
/// (without touching the task) when this request itself is cancelled.
pub(crate) async fn result(
    session: &Arc<Session>,
    request: &RequestId,
    params: TaskIdParams,
    cancel: CancellationToken,
) -> Result<Value, RpcError> {
    let id = TaskId::from(params.task_id);
    let engine = session.server.engine();
    let mut feed = engine.subscribe();
    let mut record = engine.get(&session.principal, &id).await.map_err(|err| rpc_error(&err))?;
    // Only a task found is watched: a refused id must not stay in the session's memory.
    session.watch(&id, None);
    let mut sent = HashSet::new();
    loop {
        if record.status().is_terminal() {
            tracing::info!(task = %id, principal = %session.principal, "task result retrieved");
            return codec::legacy::task_result(&record);
        }
        if let TaskState::InputRequired { requests } = &record.state {
            for (key, input) in requests {
                if sent.insert(key.clone()) {
                    session.deliver_input(&id, key, input, Route::Related(request.clone()));
                }
            }
        }
        record = tokio::select! {
            next = next_change(session, &mut feed, &id) => next?,
            _ = cancel.cancelled() => return Err(RpcError::internal("tasks/result was cancelled")),
        };
    }
}

/// The task's next state: woken by the change feed, never by a timer.
async fn next_change(session: &Session, feed: &mut broadcast::Receiver<Change>, id: &TaskId) -> Result<TaskRecord, RpcError> {
    let engine = session.server.engine();
    loop {
        match feed.recv().await {
            Ok(Change::Task(record)) if &record.id == id => return Ok(TaskRecord::clone(&record)),
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => {
                return engine.get(&session.principal, id).await.map_err(|err| rpc_error(&err));
            }
            Err(broadcast::error::RecvError::Closed) => return Err(RpcError::internal("the server is shutting down")),
        }
    }
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

#[cfg(test)]
mod tests {
    use mcp_tasks_engine::{Engine, Outcome, Policy, Principal, SystemClock};
    use mcp_tasks_protocol::legacy::{CallToolParams, TaskMetadata, TaskSupport};
    use serde_json::json;
    use tokio::sync::mpsc;

    use super::*;
    use crate::server::{Server, ToolDef};
    use crate::catalog::handler_fn;

    /// A session on a fresh SQLite store, with one tool that may run as a task.
    fn session() -> (Arc<Session>, mpsc::UnboundedReceiver<crate::session::Outbound>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = mcp_tasks_sqlite::SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
        let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
        let handler = handler_fn(|_arguments, _ctx| async { Outcome::Result(json!({"content": []})) });
        let tool = ToolDef::new("t", "", json!({"type": "object"}), handler).with_task_support(TaskSupport::Optional);
        let server = Server::builder(engine).tool(tool).build().unwrap();
        let (out, outgoing) = mpsc::unbounded_channel();
        (Session::start(server, Principal::new("p"), Listing::Principal, out), outgoing, dir)
    }

    #[tokio::test]
    async fn task_ids_refused_by_tasks_get_result_and_cancel_are_not_kept_as_watched() {
        let (session, _outgoing, _dir) = session();
        let call = CallToolParams { name: "t".into(), arguments: None, task: Some(TaskMetadata::default()), meta: None };
        assert!(crate::methods::tools::call(&session, &RequestId::Number(0), call, CancellationToken::new()).await.is_none());
        assert_eq!(session.watched_count(), 1, "the created task is watched");
        for n in 1..=4 {
            let params = TaskIdParams { task_id: format!("{}-{n}", "x".repeat(4096)), meta: None };
            let refused = [
                get(&session, params.clone()).await,
                result(&session, &RequestId::Number(n), params.clone(), CancellationToken::new()).await,
                cancel(&session, params).await,
            ];
            for reply in refused {
                assert_eq!(reply.unwrap_err().code, RpcError::INVALID_PARAMS);
            }
        }
        assert_eq!(session.watched_count(), 1, "no refused id is remembered");
    }
}
