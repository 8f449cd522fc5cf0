//! Calling a tool: plainly (the result is the answer), or as a task (committed first, then
//! started), with the tool's arguments checked against its `inputSchema` before anything is
//! created or run. A task call with an idempotency key (`dev.mcp-tasks/idempotency-key`,
//! both eras) makes at most one task per principal and key: a retry gets the existing task,
//! which is not started again.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;
use mcp_tasks_engine::{
    ClientLink, Context, Creation, Engine, EngineError, IdempotencyKey, InputKind, NewTask, Origin, Outcome, TaskRecord,
    TraceContext, WorkError,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use mcp_tasks_protocol::jsonrpc::RpcError;

use crate::context::RequestContext;
use crate::registry::Entry;

/// The tool `name`, if the server has it; [`Entry::check`] checks a call's arguments
/// against its `inputSchema` (the codec answers violations with `-32602`).
pub(crate) fn tool(ctx: &RequestContext, name: &str) -> Option<Arc<Entry>> {
    ctx.server().tools().get(name)
}

/// A call to run as a task, as the codec decoded it.
pub(crate) struct TaskCall {
    /// The tool.
    pub(crate) tool: String,
    /// Its arguments (already checked).
    pub(crate) arguments: Value,
    /// The retention the requestor asked for, in ms.
    pub(crate) requested_ttl_ms: Option<u64>,
    /// Whether a result that reports an error ends the task `failed` (an era rule).
    pub(crate) error_result_fails: bool,
    /// The requestor's idempotency key, already checked against the wire's rules.
    pub(crate) idempotency_key: Option<IdempotencyKey>,
    /// The request's W3C trace context ([`trace_context`]), kept with the task.
    pub(crate) trace: Option<TraceContext>,
}

/// A task committed to the store whose work has not started: answer the requestor with it
/// first (invariant 1: the task is durable before its id leaves), then [`Created::start`].
/// Or the task an earlier call with the same idempotency key made, as it stands: the answer
/// is that task, and [`Created::start`] does nothing.
///
/// Dropped unstarted (the request was given up between the commit and the answer), a new
/// task is started all the same: it is committed, and its owner can find it.
#[must_use = "a created task runs only once started"]
pub(crate) struct Created {
    engine: Engine,
    creation: Creation,
    started: bool,
}

impl Created {
    /// The committed task.
    pub(crate) fn record(&self) -> &TaskRecord {
        self.creation.record()
    }

    /// Whether this call made the task (`false`: an earlier call with its idempotency key did).
    pub(crate) fn is_new(&self) -> bool {
        self.creation.is_new()
    }

    /// Starts the work of a new task (so no notification of it can precede the answer); a
    /// task found by its idempotency key already has its work. Work that started before the
    /// commit ([`ToolDef::start_before_commit`](crate::ToolDef::start_before_commit)) shows
    /// itself from now on (its outcome too, if it has ended).
    pub(crate) fn start(mut self) {
        self.start_once();
    }

    fn start_once(&mut self) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        let Creation::New(record) = &self.creation else { return };
        if let Err(err) = self.engine.start(record) {
            tracing::error!(task = %record.id, error = %err, "could not start a created task");
        }
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        self.start_once();
    }
}

/// Where a task made by this request comes from, for the web view: the era and the client
/// (written with the task's row).
pub(crate) fn origin_of(ctx: &RequestContext) -> Origin {
    let (client_name, client_version) = ctx.conn.client_info().unzip();
    Origin { era: ctx.era.revision().to_owned(), client_name, client_version }
}

/// Creates the task for `call` under the request's principal, within the engine's limits.
///
/// With an idempotency key, the principal's retained task made with it is the answer
/// instead, if there is one ([`Engine::create_with_key`]).
///
/// # Errors
/// A limit of the engine, a store failure, or the key used for another call; nothing was
/// created.
pub(crate) async fn create_task(ctx: &RequestContext, call: TaskCall) -> Result<Created, EngineError> {
    let engine = ctx.server().engine().clone();
    let new = NewTask {
        trace: call.trace,
        origin: Some(origin_of(ctx)),
        owner: ctx.principal.clone(),
        tool: call.tool,
        arguments: call.arguments,
        requested_ttl_ms: call.requested_ttl_ms,
        error_result_fails: call.error_result_fails,
        input_kinds: input_kinds(ctx),
    };
    let creation = match call.idempotency_key {
        Some(key) => engine.create_with_key(new, key).await?,
        None => Creation::New(engine.create(new).await?),
    };
    let record = creation.record();
    ctx.server().inner.polls.created(&ctx.principal, record.id.as_str());
    if creation.is_new() {
        ctx.server().metrics().task_created(record, ctx.era);
        tracing::debug!(task = %record.id, era = %ctx.era, tool = %record.tool, "task created");
    } else {
        tracing::debug!(task = %record.id, era = %ctx.era, tool = %record.tool, "task found by its idempotency key");
    }
    Ok(Created { engine, creation, started: false })
}

/// Runs a plain call of `tool`; what the work sends the client meanwhile goes through
/// `link`. Stops when `cancel` fires (the request's, or the call's own when its work
/// outlives one request, as a 2026-07-28 Multi Round-Trip Request does).
///
/// # Errors
/// A limit of the engine, or an unknown tool.
pub(crate) async fn call_plain(
    ctx: &RequestContext,
    tool: &str,
    arguments: Value,
    link: Arc<dyn ClientLink>,
    cancel: CancellationToken,
) -> Result<Outcome, EngineError> {
    let work = Context::plain(cancel, Some(link));
    let call = ctx.server().engine().call_plain(&ctx.principal, tool, arguments, work);
    // As for a task's handler (the engine's `start`): a panic is the tool's crash.
    AssertUnwindSafe(call).catch_unwind().await.unwrap_or_else(|_| {
        tracing::error!(tool, "tool handler panicked in a plain call");
        Ok(Outcome::Failure(WorkError::HandlerCrashed))
    })
}

/// The W3C trace context of a `tools/call`'s `_meta`: its `traceparent` and `tracestate`
/// (both eras; over HTTP the transport copies the `traceparent` header there when `_meta`
/// has none). Trace context is advisory: a missing, non-string or malformed `traceparent`
/// gives `None`, never an error, and a bad `tracestate` is dropped on its own
/// ([`TraceContext::parse`]).
pub(crate) fn trace_context(meta: Option<&mcp_tasks_protocol::mcp::Meta>) -> Option<TraceContext> {
    let meta = meta?;
    let traceparent = meta.get("traceparent")?.as_str()?;
    let tracestate = meta.get("tracestate").and_then(Value::as_str);
    let parsed = TraceContext::parse(traceparent, tracestate);
    if parsed.is_none() {
        tracing::debug!("ignored a malformed traceparent in a tools/call's _meta");
    }
    parsed
}

/// The idempotency key of a `tools/call`'s `_meta`, checked against the wire's rules. Read
/// for every call, plain ones too (where it has no effect): a malformed key is refused
/// whether or not the call would have become a task, so a client learns of its bug at once.
///
/// # Errors
/// `-32602` saying what is wrong with the key.
pub(crate) fn idempotency_key(meta: Option<&mcp_tasks_protocol::mcp::Meta>) -> Result<Option<IdempotencyKey>, RpcError> {
    match mcp_tasks_protocol::mcp::idempotency_key(meta) {
        Ok(key) => Ok(key.map(IdempotencyKey::new)),
        Err(problem) => Err(RpcError::invalid_params(problem)),
    }
}

/// The kinds of input request the work of a task may send this requestor: those its client
/// declared it can answer.
pub(crate) fn input_kinds(ctx: &RequestContext) -> Vec<InputKind> {
    [InputKind::Elicitation, InputKind::Sampling, InputKind::Roots]
        .into_iter()
        .filter(|kind| ctx.client.declares(*kind))
        .collect()
}
