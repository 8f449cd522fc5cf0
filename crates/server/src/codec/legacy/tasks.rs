//! 2025-11-25 `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`, each scoped to
//! the requestor's principal.

use std::collections::HashSet;
use std::sync::Arc;

use mcp_tasks_engine::{TaskId, TaskState};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::legacy::{ListTasksResult, TaskIdParams};
use mcp_tasks_protocol::mcp::PaginatedParams;
use serde::Serialize;
use serde_json::Value;

use super::session::LegacySession;
use super::wire;
use crate::connection::{Listing, Payload, Route};
use crate::context::RequestContext;
use crate::errors::rpc_error;
use crate::ops;

/// Tasks per `tasks/list` page.
const PAGE_SIZE: u32 = 100;

/// `tasks/get`: the task as it stands. The related-task key in the request is ignored;
/// `params.taskId` is the source of truth.
pub(crate) async fn get(session: &LegacySession, ctx: &RequestContext, params: TaskIdParams) -> Result<Payload, RpcError> {
    let id = TaskId::from(params.task_id);
    let record = ops::tasks::get(ctx, &id).await.map_err(|err| rpc_error(&err))?;
    session.watch(&record, None);
    Payload::text(&wire::task(&record))
}

/// `tasks/result`: blocks until the task is terminal, then replays its outcome. While the
/// task is `input_required`, each outstanding input request goes to the client as an
/// ordinary request on this call's stream, tagged with the related-task metadata, and its
/// answer goes back to the waiting work (2025-11-25 tasks §input_required). Stops waiting
/// (without touching the task) when this request itself is cancelled. An answer that had to
/// wait for the task is timed from its terminal commit (`ops::tasks::delivered`); one for a
/// task found finished is not a delivery to a waiter.
pub(crate) async fn result(
    session: &Arc<LegacySession>,
    ctx: &RequestContext,
    params: TaskIdParams,
) -> Result<Payload, RpcError> {
    let id = TaskId::from(params.task_id);
    let feed = ops::tasks::changes(ctx, &id);
    let mut record = ops::tasks::get(ctx, &id).await.map_err(|err| rpc_error(&err))?;
    // Only a task found is watched: a refused id must not stay in the session's memory.
    session.watch(&record, None);
    let mut sent = HashSet::new();
    let mut waited = false;
    loop {
        if record.status().is_terminal() {
            tracing::info!(task = %id, principal = %ctx.principal, "task result retrieved");
            let answer = wire::task_result(&record);
            if waited {
                // Rendered: what is left is handing it to the transport.
                ops::tasks::delivered(ctx, &id);
            }
            return answer;
        }
        if let TaskState::InputRequired { requests } = &record.state {
            for (key, input) in requests {
                if sent.insert(key.clone()) {
                    session.deliver_input(&id, key, input, Route::Related(ctx.id.clone()));
                }
            }
        }
        waited = true;
        record = tokio::select! {
            next = ops::tasks::next_change(ctx, &feed, &id) => next.map_err(|err| rpc_error(&err))?,
            _ = ctx.cancel.cancelled() => return Err(RpcError::internal("tasks/result was cancelled")),
        };
    }
}

/// `tasks/list`: the principal's tasks (or, for an unidentified requestor, the session's
/// own), oldest first, a page at a time.
pub(crate) async fn list(session: &LegacySession, ctx: &RequestContext, params: PaginatedParams) -> Result<Value, RpcError> {
    let after = params.cursor.as_deref().map(wire::decode_cursor).transpose()?;
    let mut records = match ctx.conn.listing {
        Listing::Principal => ops::tasks::list(ctx, after, PAGE_SIZE + 1).await,
        Listing::Session => {
            ops::tasks::list_of(ctx, &session.created_tasks(), after.as_ref(), PAGE_SIZE as usize + 1).await
        }
    }
    .map_err(|err| rpc_error(&err))?;
    let next_cursor = if records.len() > PAGE_SIZE as usize {
        records.truncate(PAGE_SIZE as usize);
        records.last().map(wire::encode_cursor)
    } else {
        None
    };
    let tasks = records.iter().map(wire::task).collect();
    to_value(ListTasksResult { tasks, next_cursor })
}

/// `tasks/cancel`: the task is `cancelled` before this answers; a terminal task is -32602.
pub(crate) async fn cancel(ctx: &RequestContext, params: TaskIdParams) -> Result<Value, RpcError> {
    let id = TaskId::from(params.task_id);
    let record = ops::tasks::cancel(ctx, &id).await.map_err(|err| rpc_error(&err))?;
    to_value(wire::task(&record))
}

fn to_value(value: impl Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|err| RpcError::internal(err.to_string()))
}

#[cfg(test)]
mod tests {
    use mcp_tasks_engine::{Engine, Outcome, Policy, Principal, SystemClock};
    use mcp_tasks_protocol::era::Era;
    use mcp_tasks_protocol::jsonrpc::RequestId;
    use mcp_tasks_protocol::legacy::{CallToolParams, TaskMetadata};
    use serde_json::json;
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::catalog::handler_fn;
    use crate::codec::legacy::tools;
    use crate::connection::{Connection, Outbound};
    use crate::registry::{TaskMode, ToolDef};
    use crate::server::Server;

    /// A Legacy session on a fresh SQLite store, with one tool that may run as a task.
    fn session() -> (Arc<LegacySession>, mpsc::UnboundedReceiver<Outbound>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = mcp_tasks_sqlite::SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
        let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
        let handler = handler_fn(|_arguments, _ctx| async { Outcome::Result(json!({"content": []})) });
        let tool = ToolDef::new("t", "", json!({"type": "object"}), handler).task_mode(TaskMode::Optional);
        let never = handler_fn(|_arguments, _ctx| std::future::pending::<Outcome>());
        let working = ToolDef::new("working", "", json!({"type": "object"}), never).task_mode(TaskMode::Optional);
        let server = Server::builder(engine).tool(tool).tool(working).build().unwrap();
        let (out, outgoing) = mpsc::unbounded_channel();
        let conn = Arc::new(Connection::new(server, Principal::new("p"), Listing::Principal, out));
        (LegacySession::new(conn, json!({})), outgoing, dir)
    }

    fn ctx(session: &LegacySession, n: i64) -> RequestContext {
        RequestContext {
            era: Era::Legacy,
            principal: session.conn.principal.clone(),
            client: session.client(),
            id: RequestId::Number(n),
            cancel: CancellationToken::new(),
            conn: Arc::clone(&session.conn),
        }
    }

    #[tokio::test]
    async fn task_ids_refused_by_tasks_get_result_and_cancel_are_not_kept_as_watched() {
        let (session, _outgoing, _dir) = session();
        // A task that stays working: watched until it is terminal.
        let call = CallToolParams { name: "working".into(), arguments: None, task: Some(TaskMetadata::default()), meta: None };
        assert!(tools::call(&session, &ctx(&session, 0), call).await.is_none());
        assert_eq!(session.watched_count(), 1, "the created task is watched");
        for n in 1..=4 {
            let params = TaskIdParams { task_id: format!("{}-{n}", "x".repeat(4096)), meta: None };
            let refused = [
                get(&session, &ctx(&session, n), params.clone()).await,
                result(&session, &ctx(&session, n), params.clone()).await,
                cancel(&ctx(&session, n), params).await.map(Payload::from),
            ];
            for reply in refused {
                assert_eq!(reply.unwrap_err().code, RpcError::INVALID_PARAMS);
            }
        }
        assert_eq!(session.watched_count(), 1, "no refused id is remembered");
    }

    #[tokio::test]
    async fn a_task_is_forgotten_once_terminal_and_a_terminal_task_read_is_never_watched() {
        let (session, _outgoing, _dir) = session();
        session.start_forwarding();
        let engine = session.conn.server.engine().clone();
        let keyed = || -> CallToolParams {
            serde_json::from_value(json!({"name": "t", "task": {}, "_meta": {"dev.mcp-tasks/idempotency-key": "k"}})).unwrap()
        };
        assert!(tools::call(&session, &ctx(&session, 0), keyed()).await.is_none());
        let id = session.created_tasks()[0].clone();
        let params = TaskIdParams { task_id: id.as_str().to_owned(), meta: None };
        assert!(result(&session, &ctx(&session, 1), params.clone()).await.is_ok());
        // The session hears the terminal change on its own task; then it holds nothing of it.
        for _ in 0..10_000 {
            if session.watched_count() == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(session.watched_count(), 0, "a terminal task is not watched any more");
        assert_eq!(engine.watched_ids(), 0, "nor routed to the session");
        // Read again, by tasks/get and tasks/result, it is not watched again.
        assert!(get(&session, &ctx(&session, 2), params.clone()).await.is_ok());
        assert!(result(&session, &ctx(&session, 3), params).await.is_ok());
        assert_eq!((session.watched_count(), engine.watched_ids()), (0, 0));
        // Nor when a retry with its idempotency key finds it again.
        assert!(tools::call(&session, &ctx(&session, 4), keyed()).await.is_none());
        assert_eq!(session.created_tasks(), [id], "the same task, listed once");
        assert_eq!((session.watched_count(), engine.watched_ids()), (0, 0));
    }
}
