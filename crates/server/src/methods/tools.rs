//! `tools/list` and `tools/call`: plain calls, and calls augmented with a task.

use std::sync::Arc;

use mcp_tasks_engine::{ClientLink, Context, NewTask, Outcome};
use mcp_tasks_protocol::jsonrpc::{RequestId, RpcError};
use mcp_tasks_protocol::legacy::{CallToolParams, CreateTaskResult, ListToolsResult, TaskSupport};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::codec;
use crate::errors::{invalid_arguments, rpc_error, work_error};
use crate::session::{CallLink, Session};

/// `tools/list`: every tool, each with its `execution.taskSupport`.
pub(crate) fn list(session: &Session) -> Value {
    let tools = session.server.inner.tools.values().map(|tool| tool.descriptor.clone()).collect();
    serde_json::to_value(ListToolsResult { tools, next_cursor: None }).unwrap_or(Value::Null)
}

/// `tools/call`. The arguments are checked against the tool's `inputSchema` first (`-32602`
/// naming the failing fields; no task is created). With `params.task` it creates a task,
/// commits it, answers with `CreateTaskResult`, and only then starts the work; without it,
/// it runs the call and answers with its result. Either way the engine's limits apply.
/// `None`: the reply has already been sent.
pub(crate) async fn call(
    session: &Arc<Session>,
    id: &RequestId,
    params: CallToolParams,
    cancel: CancellationToken,
) -> Option<Result<Value, RpcError>> {
    let Some(tool) = session.server.tool(&params.name) else {
        return Some(Err(RpcError::invalid_params(format!("Unknown tool: {}", params.name))));
    };
    let arguments = Value::Object(params.arguments.unwrap_or_default());
    let progress_token = params.meta.and_then(|meta| meta.progress_token);
    match (params.task, tool.task_support()) {
        // 2025-11-25 tools: a task on a forbidden tool SHOULD be -32601.
        (Some(_), TaskSupport::Forbidden) => Some(Err(RpcError::method_not_found(format!(
            "Tool {} does not support task augmentation (taskSupport: 'forbidden'); call it without `task`",
            params.name
        )))),
        // 2025-11-25 tools: a plain call to a required tool MUST be -32601.
        (None, TaskSupport::Required) => Some(Err(RpcError::method_not_found(format!(
            "Tool {} requires task augmentation (taskSupport: 'required'); call it with `task`",
            params.name
        )))),
        // After the rules on how the tool may be called, and before anything is created or
        // run: arguments that break the tool's inputSchema never reach the work.
        _ if let Err(invalid) = session.server.check_arguments(&params.name, &arguments) => {
            Some(Err(invalid_arguments(&invalid)))
        }
        (Some(task), _) => {
            let new = NewTask {
                owner: session.principal.clone(),
                tool: params.name,
                arguments,
                requested_ttl_ms: task.ttl,
                error_result_fails: codec::legacy::ERROR_RESULT_FAILS,
                input_kinds: session.input_kinds(),
            };
            let engine = session.server.engine();
            let record = match engine.create(new).await {
                Ok(record) => record,
                Err(err) => return Some(Err(rpc_error(&err))),
            };
            // Invariant 1: the task is committed; now the CreateTaskResult may leave, and
            // only after it the work starts, so no notification precedes the response.
            let result = CreateTaskResult { task: codec::legacy::task(&record), meta: None };
            session.respond(id, serde_json::to_value(result).map_err(|err| RpcError::internal(err.to_string())));
            session.watch(&record.id, progress_token);
            session.created(&record.id);
            if let Err(err) = engine.start(&record) {
                tracing::error!(task = %record.id, error = %err, "could not start a created task");
            }
            None
        }
        (None, _) => {
            let link: Arc<dyn ClientLink> =
                Arc::new(CallLink { session: Arc::clone(session), request: id.clone(), progress_token });
            let ctx = Context::plain(cancel, Some(link));
            let outcome = session.server.engine().call_plain(&session.principal, &params.name, arguments, ctx).await;
            Some(match outcome {
                Ok(Outcome::Result(result)) => Ok(result),
                Ok(Outcome::Error(error)) => Err(RpcError { code: error.code, message: error.message, data: error.data }),
                Ok(Outcome::Failure(failure)) => Err(work_error(&failure)),
                Err(err) => Err(rpc_error(&err)),
            })
        }
    }
}
