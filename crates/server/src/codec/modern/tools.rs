//! 2026-07-28 `tools/list` and `tools/call`. The server decides whether a call becomes a
//! task (tasks extension): only for a client that declared the extension on this request;
//! a `required` tool always does (and without the extension is `-32021`); an `optional`
//! one answers inline when its work ends within the tool's inline wait, and as a task
//! otherwise; a `forbidden` one never does. A 2025-11-25 `params.task` is ignored.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks_engine::{ClientLink, InputKind, Outcome, TaskRecord, TaskState};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::method;
use mcp_tasks_protocol::modern::{CallToolParams, MISSING_CLIENT_CAPABILITY, RequestMeta, TASKS_EXTENSION};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::link::ModernLink;
use super::mrtr::{self, Event, Running};
use super::{missing_extension, wire};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::{invalid_arguments, rpc_error, work_error};
use crate::ops;
use crate::registry::TaskMode;
use crate::tool::input_capability;

/// `tools/list`: every tool, in one page (any cursor is `-32602`: none is issued).
pub(crate) fn list(ctx: &RequestContext, params: Option<Value>) -> Result<Value, RpcError> {
    crate::catalog::first_page(method::TOOLS_LIST, params)?;
    let tools: Vec<_> = ctx.server().tools().snapshot().values().map(|entry| wire::tool(&entry.def.spec)).collect();
    Ok(json!({ "tools": tools }))
}

/// `tools/call`. The arguments are checked against the tool's `inputSchema` first
/// (`-32602`, nothing created or run); then the call runs plainly, or as a task committed
/// before its `CreateTaskResult` is sent.
pub(crate) async fn call(meta: &RequestMeta, ctx: &RequestContext, params: CallToolParams) -> Reply {
    let Some(tool) = ops::call::tool(ctx, &params.name) else {
        return Some(Err(RpcError::invalid_params(format!("Unknown tool: {}", params.name))));
    };
    let arguments = Value::Object(params.arguments.unwrap_or_default());
    if let Err(invalid) = tool.check(&arguments) {
        return Some(Err(invalid_arguments(&invalid)));
    }
    let mode = tool.def.spec.task_mode;
    let as_task = match (mode, meta.declares_extension(TASKS_EXTENSION)) {
        (TaskMode::Forbidden, _) | (TaskMode::Optional, false) => false,
        (TaskMode::Required, false) => {
            return Some(Err(missing_extension(&format!("tool {} (it runs only as a task)", params.name))));
        }
        (_, true) => true,
    };
    if let Some(state) = &params.request_state {
        return Some(retry(ctx, &params.name, state, params.input_responses.unwrap_or_default()).await);
    }
    if !as_task {
        return Some(plain(meta, ctx, &params.name, arguments).await);
    }
    let call = ops::call::TaskCall { tool: params.name, arguments, requested_ttl_ms: None, error_result_fails: false };
    let created = match ops::call::create_task(ctx, call).await {
        Ok(created) => created,
        Err(err) => return Some(Err(rpc_error(&err))),
    };
    let inline = match mode {
        TaskMode::Optional => tool.def.inline_wait.unwrap_or(ctx.server().inner.inline_wait),
        _ => Duration::ZERO,
    };
    if inline.is_zero() {
        // Invariant 1: committed; the CreateTaskResult leaves before the work starts.
        let result = wire::create_task_result(created.record());
        created.start();
        return Some(Ok(result));
    }
    let id = created.record().id.clone();
    let mut feed = ops::tasks::changes(ctx);
    created.start();
    let settled = tokio::time::timeout(inline, async {
        let mut record = ops::tasks::get(ctx, &id).await.ok()?;
        while matches!(record.state, TaskState::Working) {
            record = ops::tasks::next_change(ctx, &mut feed, &id).await?.ok()?;
        }
        Some(record)
    })
    .await;
    Some(match settled {
        Ok(Some(record)) if record.status().is_terminal() => inline_result(&record),
        // Still working, or waiting for input (which the client answers through tasks/update).
        _ => match ops::tasks::get(ctx, &id).await {
            Ok(record) => Ok(wire::create_task_result(&record)),
            Err(err) => Err(rpc_error(&err)),
        },
    })
}

/// The answer of a task that ended within the inline wait: what a plain call would have
/// answered.
fn inline_result(record: &TaskRecord) -> Result<Value, RpcError> {
    match &record.state {
        TaskState::Completed { result } => Ok(result.clone()),
        TaskState::Failed { outcome: Outcome::Error(error) } => {
            Err(RpcError { code: error.code, message: error.message.clone(), data: error.data.clone() })
        }
        TaskState::Failed { outcome: Outcome::Failure(failure) } => Err(work_error(failure)),
        // Not reachable for a task of this era (a tool error completes it), nor cancelled
        // within the wait but by a race: the task as it stands says what happened.
        _ => Ok(wire::create_task_result(record)),
    }
}

/// `-32021` for a request whose work needed input of `kind` that it did not declare.
fn missing_capability(kind: InputKind) -> RpcError {
    let capability = input_capability(kind);
    RpcError::new(
        MISSING_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: the tool asks the client for {capability}; declare it in \
             _meta[\"io.modelcontextprotocol/clientCapabilities\"]"
        ),
    )
    .with_data(json!({"requiredCapabilities": {capability: {}}}))
}

/// A plain call: the work's progress and log messages go on the request's stream; its
/// questions become rounds of a Multi Round-Trip Request. The work runs in a task of its own,
/// so that it outlives a round (it waits, parked, for the client's retry).
async fn plain(meta: &RequestMeta, ctx: &RequestContext, tool: &str, arguments: Value) -> Result<Value, RpcError> {
    let log_level = meta.log_level.as_ref().and_then(|level| serde_json::from_value(json!(level)).ok());
    let (asks, events) = mpsc::unbounded_channel();
    let link = Arc::new(ModernLink {
        conn: Arc::clone(&ctx.conn),
        request: ctx.id.clone(),
        progress_token: meta.progress_token.clone(),
        log_level,
        client: ctx.client,
        missing: Mutex::new(None),
        asks: asks.clone(),
        asked: AtomicU64::new(0),
    });
    let cancel = CancellationToken::new();
    let (work_ctx, work_tool, work_cancel) = (ctx.clone(), tool.to_owned(), cancel.clone());
    tokio::spawn(async move {
        let handle = Arc::clone(&link) as Arc<dyn ClientLink>;
        let outcome = ops::call::call_plain(&work_ctx, &work_tool, arguments, handle, work_cancel).await;
        let reply = match (link.missing_capability(), outcome) {
            // 2026-07-28: processing needed a capability the request did not declare.
            (Some(kind), _) => Err(missing_capability(kind)),
            (None, Ok(Outcome::Result(result))) => Ok(result),
            (None, Ok(Outcome::Error(error))) => Err(RpcError { code: error.code, message: error.message, data: error.data }),
            (None, Ok(Outcome::Failure(failure))) => Err(work_error(&failure)),
            (None, Err(err)) => Err(rpc_error(&err)),
        };
        let _ = asks.send(Event::Done(reply));
    });
    let running = Running { owner: ctx.principal.clone(), tool: tool.to_owned(), events, open: Default::default(), cancel };
    mrtr::drive(&ctx.server().inner.parked, running, &ctx.cancel).await
}

/// A retry of a Multi Round-Trip Request: the answers go to the parked work, which goes on.
async fn retry(ctx: &RequestContext, tool: &str, state: &str, answers: Map<String, Value>) -> Result<Value, RpcError> {
    let parked = &ctx.server().inner.parked;
    let mut running = parked.take(state, &ctx.principal, tool)?;
    mrtr::answer(&mut running, answers)?;
    mrtr::drive(parked, running, &ctx.cancel).await
}
