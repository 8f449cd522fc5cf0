//! The tasks extension's methods: `tasks/get` (a pure read, the DetailedTask),
//! `tasks/update` (answers to input requests, acknowledged) and `tasks/cancel`
//! (cooperative, acknowledged, idempotent on a terminal task). Each is scoped to the
//! requestor's principal: another's task is an unknown id, `-32602`.

use mcp_tasks_engine::{EngineError, TaskId};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::modern::{TaskIdParams, UpdateTaskParams};
use serde_json::{Value, json};

use super::wire;
use crate::connection::Payload;
use crate::context::RequestContext;
use crate::errors::rpc_error;
use crate::ops;

/// `tasks/get`: the task as it stands, its result, error or questions inlined.
pub(crate) async fn get(ctx: &RequestContext, params: TaskIdParams) -> Result<Payload, RpcError> {
    let record = ops::tasks::get(ctx, &TaskId::from(params.task_id)).await.map_err(|err| rpc_error(&err))?;
    wire::detailed_task_result(&record, &ctx.server().inner.info)
}

/// `tasks/update`: each answer goes to the waiting work; keys that are unknown, already
/// answered or gone are ignored, and a partial set of answers leaves the rest outstanding.
pub(crate) async fn update(ctx: &RequestContext, params: UpdateTaskParams) -> Result<Value, RpcError> {
    let id = TaskId::from(params.task_id);
    ops::tasks::get(ctx, &id).await.map_err(|err| rpc_error(&err))?;
    for (key, response) in params.input_responses {
        match ops::tasks::answer(ctx.server(), &ctx.principal, &id, &key, Ok(response)).await {
            Ok(true) => tracing::debug!(task = %id, %key, "input answered"),
            Ok(false) => tracing::debug!(task = %id, %key, "ignoring an answer to no outstanding input request"),
            Err(EngineError::NotFound(_)) => return Err(rpc_error(&EngineError::NotFound(id))),
            Err(err) => return Err(rpc_error(&err)),
        }
    }
    Ok(json!({}))
}

/// `tasks/cancel`: an acknowledgement; running work is stopped and the task ends
/// `cancelled`; a terminal task stays as it is.
pub(crate) async fn cancel(ctx: &RequestContext, params: TaskIdParams) -> Result<Value, RpcError> {
    ops::tasks::request_cancel(ctx, &TaskId::from(params.task_id)).await.map_err(|err| rpc_error(&err))?;
    Ok(json!({}))
}
