//! 2026-07-28 `tools/list` and `tools/call`. The server decides whether a call becomes a
//! task (tasks extension): only for a client that declared the extension on this request;
//! a `required` tool always does (and without the extension is `-32021`); an `optional`
//! one answers inline when its work ends within the tool's inline wait, with rounds of a
//! Multi Round-Trip Request when it asks the client within that wait, and as a task
//! otherwise; a `forbidden` one never does. A 2025-11-25 `params.task` is ignored.

use std::time::Duration;

use mcp_tasks_engine::{Outcome, TaskId, TaskRecord, TaskState, TaskWatch};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::method;
use mcp_tasks_protocol::modern::{CallToolParams, RequestMeta, TASKS_EXTENSION};
use serde_json::{Map, Value, json};

use super::mrtr::{self, Round};
use super::{missing_extension, wire};
use crate::connection::Payload;
use crate::context::RequestContext;
use crate::request::Reply;
use crate::errors::{invalid_arguments, rpc_error, work_error};
use crate::ops;
use crate::registry::{Entry, TaskMode};

/// `tools/list`: every tool, in one page (any cursor is `-32602`: none is issued).
pub(crate) fn list(ctx: &RequestContext, params: Option<Value>) -> Result<Value, RpcError> {
    crate::catalog::first_page(method::TOOLS_LIST, params)?;
    let mut tools: Vec<_> = ctx.server().tools().snapshot().values().map(|entry| wire::tool(&ops::handoff::listed_spec(ctx, entry))).collect();
    if ops::handoff::helpers_listed(ctx) {
        tools.extend(ops::handoff::helper_specs(ctx).iter().map(wire::tool));
    }
    Ok(json!({ "tools": tools }))
}

/// `tools/call`. The arguments are checked against the tool's `inputSchema` first
/// (`-32602`, nothing created or run); then the call runs plainly, or as a task committed
/// before its `CreateTaskResult` is sent. A call that becomes a task with an idempotency key
/// (`_meta["dev.mcp-tasks/idempotency-key"]`) that an earlier call of the principal used
/// for the same tool and arguments answers at once with that task's `CreateTaskResult`, as
/// the task stands, without waiting inline or starting anything; used for another call, it
/// is `-32602`. A malformed key is `-32602` on any call; a plain call ignores a well-formed
/// one.
pub(crate) async fn call(meta: &RequestMeta, ctx: &RequestContext, params: CallToolParams) -> Reply {
    let arguments = Value::Object(params.arguments.unwrap_or_default());
    if params.request_state.is_none()
        && let Some(answer) = ops::handoff::call_helper(ctx, &params.name, &arguments).await
    {
        return Some(answer.map(Payload::from));
    }
    let Some(tool) = ops::call::tool(ctx, &params.name) else {
        return Some(Err(RpcError::invalid_params(format!("Unknown tool: {}", params.name))));
    };
    if let Err(invalid) = tool.check(&arguments) {
        return Some(Err(invalid_arguments(&invalid)));
    }
    let idempotency_key = match ops::call::idempotency_key(params.meta.as_ref()) {
        Ok(key) => key,
        Err(invalid) => return Some(Err(invalid)),
    };
    let mode = tool.def.spec.task_mode;
    let as_task = match (mode, meta.declares_extension(TASKS_EXTENSION)) {
        (TaskMode::Forbidden, _) | (TaskMode::Optional, false) => false,
        (TaskMode::Required, false) => {
            return Some(Err(missing_extension(&format!("tool {} (it runs only as a task)", params.name))));
        }
        (_, true) => true,
    };
    if let Some(state) = &params.request_state {
        return Some(Box::pin(retry(ctx, &params.name, state, params.input_responses.unwrap_or_default())).await);
    }
    if !as_task {
        return Some(Box::pin(plain(meta, ctx, &tool, arguments, params.input_responses.unwrap_or_default())).await.map(Payload::from));
    }
    // A keyed call's task can be found again with its key; a keyless one's only by its id.
    let findable = idempotency_key.is_some();
    let call = ops::call::TaskCall {
        tool: params.name,
        arguments,
        requested_ttl_ms: None,
        error_result_fails: false,
        idempotency_key,
        trace: ops::call::trace_context(params.meta.as_ref()),
    };
    let created = match ops::call::create_task(ctx, call).await {
        Ok(created) => created,
        Err(err) => return Some(Err(rpc_error(&err))),
    };
    let inline = match mode {
        TaskMode::Optional => tool.def.inline_wait.unwrap_or(ctx.server().inner.inline_wait),
        _ => Duration::ZERO,
    };
    if inline.is_zero() || !created.is_new() {
        // Invariant 1: committed; the CreateTaskResult leaves before the work starts. A
        // task found by its idempotency key is answered as it stands (its work runs, or
        // ran, already; `start` does nothing).
        let result = wire::create_task_result(created.record(), &ctx.server().inner.info);
        created.start();
        return Some(result);
    }
    let (id, tool) = (created.record().id.clone(), created.record().tool.clone());
    let feed = ops::tasks::changes(ctx, &id);
    created.start();
    Some(Box::pin(settle(ctx, &tool, &id, inline, feed, findable)).await)
}

/// The answer to a call whose task runs, after waiting up to `inline` for it: what a plain
/// call would have answered if it ended; an `InputRequiredResult` round if it asks the
/// client first (the task is shown only once its first questions are answered, on retries
/// of the call: MRTR composed with task creation); else its `CreateTaskResult`. `feed` was
/// subscribed before the task last changed. A keyless call (`findable` false) cancelled
/// while it waits cancels its task, whose id nobody has.
async fn settle(
    ctx: &RequestContext,
    tool: &str,
    id: &TaskId,
    inline: Duration,
    feed: TaskWatch,
    findable: bool,
) -> Result<Payload, RpcError> {
    let waited = tokio::time::timeout(inline, async {
        let mut record = ops::tasks::get(ctx, id).await.ok()?;
        while matches!(record.state, TaskState::Working) {
            record = ops::tasks::next_change(ctx, &feed, id).await.ok()?;
        }
        Some(record)
    });
    let settled = tokio::select! {
        settled = waited => settled,
        () = ctx.cancel.cancelled(), if !findable => {
            // The request was cancelled (notifications/cancelled, a closed response) before
            // its task was shown, and it carried no idempotency key: nobody can find the task
            // again, so its work is stopped too. (A keyed call's task is kept: the caller
            // gets it by sending the call again with its key.)
            if let Err(err) = ops::tasks::request_cancel(ctx, id).await {
                tracing::debug!(task = %id, error = ?err, "cancelling the unshown task of a cancelled call");
            }
            return Err(RpcError::internal("the call was cancelled"));
        }
    };
    match settled {
        Ok(Some(record)) if record.status().is_terminal() => inline_result(ctx, &record),
        Ok(Some(ref record)) if let TaskState::InputRequired { requests } = &record.state => {
            let round = Round::Task {
                owner: ctx.principal.clone(),
                tool: mrtr::call_of(tool),
                id: id.clone(),
                engine: ctx.server().engine().clone(),
            };
            let state = ctx.server().inner.codecs.modern.parked.park(round);
            Ok(json!({"resultType": "input_required", "inputRequests": wire::input_requests(requests), "requestState": state}).into())
        }
        // Still working (or gone by a race: the task as it stands says what happened).
        _ => match ops::tasks::get(ctx, id).await {
            Ok(record) => wire::create_task_result(&record, &ctx.server().inner.info),
            Err(err) => Err(rpc_error(&err)),
        },
    }
}

/// The answer of a task that ended within the inline wait: what a plain call would have
/// answered.
fn inline_result(ctx: &RequestContext, record: &TaskRecord) -> Result<Payload, RpcError> {
    match &record.state {
        TaskState::Completed { result } => Ok(result.clone().into()),
        TaskState::Failed { outcome: Outcome::Error(error) } => {
            Err(RpcError { code: error.code, message: error.message.clone(), data: error.data.clone() })
        }
        TaskState::Failed { outcome: Outcome::Failure(failure) } => Err(work_error(failure)),
        // Not reachable for a task of this era (a tool error completes it), nor cancelled
        // within the wait but by a race: the task as it stands says what happened.
        _ => wire::create_task_result(record, &ctx.server().inner.info),
    }
}

/// A plain call: the work's progress and log messages go on the request's stream; its
/// questions become rounds of a Multi Round-Trip Request (unless `ahead` has their answers).
/// A long one gets heartbeats, and is handed off to a task after the sync wait
/// ([`ops::handoff`]).
async fn plain(
    meta: &RequestMeta,
    ctx: &RequestContext,
    tool: &Entry,
    arguments: Value,
    ahead: Map<String, Value>,
) -> Result<Value, RpcError> {
    let (work_ctx, work_tool) = (ctx.clone(), tool.def.spec.name.clone());
    // A tool error completes a task of this era: a handed-off call's task too.
    let long = ops::handoff::Long::of(ctx, tool, &arguments, meta.progress_token.is_some(), false);
    mrtr::run(meta, ctx, mrtr::call_of(&work_tool), ahead, long, move |link, cancel| async move {
        ops::handoff::answer(ops::call::call_plain(&work_ctx, &work_tool, arguments, link, cancel).await)
    })
    .await
}

/// A retry of a Multi Round-Trip Request: the answers go to the parked work, which goes on.
async fn retry(ctx: &RequestContext, tool: &str, state: &str, answers: Map<String, Value>) -> Result<Payload, RpcError> {
    let parked = &ctx.server().inner.codecs.modern.parked;
    match parked.take(state, &ctx.principal, &mrtr::call_of(tool))? {
        Round::Work(running) => mrtr::resume(ctx, running, answers).await.map(Payload::from),
        Round::Task { id, .. } => {
            let record = ops::tasks::get(ctx, &id).await.map_err(|err| rpc_error(&err))?;
            if let TaskState::InputRequired { requests } = &record.state
                && let Err(invalid) = mrtr::check_answers(requests.keys(), &answers)
            {
                // The round is used up: its task goes, like the work of a plain call.
                let _ = ops::tasks::request_cancel(ctx, &id).await;
                return Err(invalid);
            }
            let feed = ops::tasks::changes(ctx, &id);
            for (key, answer) in answers {
                ops::tasks::answer(ctx.server(), &ctx.principal, &id, &key, Ok(answer)).await.map_err(|err| rpc_error(&err))?;
            }
            let inline = ops::call::tool(ctx, tool)
                .and_then(|tool| tool.def.inline_wait)
                .unwrap_or(ctx.server().inner.inline_wait);
            // A round's task is not shown before its questions are answered; keep it on a
            // cancel as before (its round stays parked for the retry).
            settle(ctx, tool, &id, inline, feed, true).await
        }
    }
}
