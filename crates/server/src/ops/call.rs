//! Calling a tool: plainly (the result is the answer), or as a task (committed first, then
//! started), with the tool's arguments checked against its `inputSchema` before anything is
//! created or run.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;
use mcp_tasks_engine::{ClientLink, Context, Engine, EngineError, InputKind, NewTask, Outcome, TaskRecord, WorkError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

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
}

/// A task committed to the store whose work has not started: answer the requestor with it
/// first (invariant 1: the task is durable before its id leaves), then [`Created::start`].
#[must_use = "a created task runs only once started"]
pub(crate) struct Created {
    engine: Engine,
    record: TaskRecord,
}

impl Created {
    /// The committed task.
    pub(crate) fn record(&self) -> &TaskRecord {
        &self.record
    }

    /// Starts the work (so no notification of it can precede the answer).
    pub(crate) fn start(self) {
        if let Err(err) = self.engine.start(&self.record) {
            tracing::error!(task = %self.record.id, error = %err, "could not start a created task");
        }
    }
}

/// Creates the task for `call` under the request's principal, within the engine's limits.
///
/// # Errors
/// A limit of the engine, or a store failure; nothing was created.
pub(crate) async fn create_task(ctx: &RequestContext, call: TaskCall) -> Result<Created, EngineError> {
    let engine = ctx.server().engine().clone();
    let new = NewTask {
        owner: ctx.principal.clone(),
        tool: call.tool,
        arguments: call.arguments,
        requested_ttl_ms: call.requested_ttl_ms,
        error_result_fails: call.error_result_fails,
        input_kinds: input_kinds(ctx),
    };
    let record = engine.create(new).await?;
    tracing::debug!(task = %record.id, era = %ctx.era, tool = %record.tool, "task created");
    Ok(Created { engine, record })
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

/// The kinds of input request the work of a task may send this requestor: those its client
/// declared it can answer.
fn input_kinds(ctx: &RequestContext) -> Vec<InputKind> {
    [InputKind::Elicitation, InputKind::Sampling, InputKind::Roots]
        .into_iter()
        .filter(|kind| ctx.client.declares(*kind))
        .collect()
}
