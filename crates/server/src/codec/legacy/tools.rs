//! 2025-11-25 `tools/list` and `tools/call`: the client decides whether a call becomes a
//! task (`params.task`), within each tool's `execution.taskSupport`.

use std::sync::Arc;

use mcp_tasks_engine::ClientLink;
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::legacy::{CallToolParams, CreateTaskResult, ListToolsResult, method};
use serde_json::Value;

use super::session::{CallLink, LegacySession};
use super::wire;
use crate::connection::Payload;
use crate::context::RequestContext;
use crate::request::Reply;
use crate::errors::{invalid_arguments, rpc_error};
use crate::ops;
use crate::registry::TaskMode;

/// `tools/list`: every tool, each with its `execution.taskSupport`, in one page.
///
/// # Errors
/// `-32602` for any cursor: none is issued, so none is valid (2025-11-25 pagination).
pub(crate) fn list(ctx: &RequestContext, params: Option<Value>) -> Result<Value, RpcError> {
    crate::catalog::first_page(method::TOOLS_LIST, params)?;
    let mut tools: Vec<_> = ctx.server().tools().snapshot().values().map(|entry| wire::tool(&ops::handoff::listed_spec(ctx, entry))).collect();
    if ops::handoff::helpers_listed(ctx) {
        tools.extend(ops::handoff::helper_specs(ctx).iter().map(wire::tool));
    }
    serde_json::to_value(ListToolsResult { tools, next_cursor: None }).map_err(|err| RpcError::internal(err.to_string()))
}

/// `tools/call`. The arguments are checked against the tool's `inputSchema` first (`-32602`
/// naming the failing fields; no task is created). With `params.task` it creates a task,
/// commits it, answers with `CreateTaskResult`, and only then starts the work; without it,
/// it runs the call and answers with its result. Either way the engine's limits apply.
/// A task call with an idempotency key (`_meta["dev.mcp-tasks/idempotency-key"]`) that an
/// earlier call of the principal used for the same tool and arguments answers with that
/// task as it stands, and starts nothing; used for another call, it is `-32602`. A
/// malformed key is `-32602` on any call; a plain call ignores a well-formed one.
/// `None`: the reply has already been sent.
pub(crate) async fn call(session: &Arc<LegacySession>, ctx: &RequestContext, params: CallToolParams) -> Reply {
    let arguments = Value::Object(params.arguments.unwrap_or_default());
    if params.task.is_none()
        && let Some(answer) = ops::handoff::call_helper(ctx, &params.name, &arguments).await
    {
        return Some(answer.map(Payload::from));
    }
    let Some(tool) = ops::call::tool(ctx, &params.name) else {
        return Some(Err(RpcError::invalid_params(format!("Unknown tool: {}", params.name))));
    };
    let idempotency_key = match ops::call::idempotency_key(params.meta.as_ref().map(|meta| &meta.rest)) {
        Ok(key) => key,
        Err(invalid) => return Some(Err(invalid)),
    };
    let trace = ops::call::trace_context(params.meta.as_ref().map(|meta| &meta.rest));
    let progress_token = params.meta.and_then(|meta| meta.progress_token);
    match (params.task, tool.def.spec.task_mode) {
        // 2025-11-25 tools: a task on a forbidden tool SHOULD be -32601.
        (Some(_), TaskMode::Forbidden) => Some(Err(RpcError::method_not_found(format!(
            "Tool {} does not support task augmentation (taskSupport: 'forbidden'); call it without `task`",
            params.name
        )))),
        // 2025-11-25 tools: a plain call to a required tool MUST be -32601.
        (None, TaskMode::Required) => Some(Err(RpcError::method_not_found(format!(
            "Tool {} requires task augmentation (taskSupport: 'required'); call it with `task`",
            params.name
        )))),
        // After the rules on how the tool may be called, and before anything is created or
        // run: arguments that break the tool's inputSchema never reach the work.
        _ if let Err(invalid) = tool.check(&arguments) => Some(Err(invalid_arguments(&invalid))),
        (Some(task), _) => {
            let call = ops::call::TaskCall {
                tool: params.name,
                arguments,
                requested_ttl_ms: task.ttl,
                error_result_fails: wire::ERROR_RESULT_FAILS,
                idempotency_key,
                trace,
            };
            let created = match ops::call::create_task(ctx, call).await {
                Ok(created) => created,
                Err(err) => return Some(Err(rpc_error(&err))),
            };
            // Invariant 1: the task is committed; now the CreateTaskResult may leave, and
            // only after it the work starts, so no notification precedes the response. A
            // task found by its idempotency key is answered the same way; its work runs
            // already (or has ended), so nothing starts.
            let record = created.record();
            // Recorded before the answer: the session's listing (on any replica) shows it.
            session.created(&record.id, created.is_new()).await;
            let result = CreateTaskResult { task: wire::task(record), meta: None };
            ctx.conn.respond(&ctx.id, Payload::text(&result));
            session.watch(record, progress_token);
            created.start();
            None
        }
        (None, _) => {
            let has_token = progress_token.is_some();
            let link: Arc<dyn ClientLink> =
                Arc::new(CallLink { session: Arc::clone(session), request: ctx.id.clone(), progress_token });
            // A long call from a client without tasks may be handed off to a task.
            let call = ops::handoff::PlainCall {
                tool,
                arguments,
                link,
                progress_token: has_token,
                error_result_fails: wire::ERROR_RESULT_FAILS,
            };
            Some(ops::handoff::call(ctx, call).await.map(Payload::from))
        }
    }
}
