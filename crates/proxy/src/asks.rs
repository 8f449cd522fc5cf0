//! The upstream's input requests (elicitation, sampling), routed to the call they belong to
//! and asked downstream through that call's [`Context`]: in a task they become its input
//! requests (`input_required`), in a plain call they go straight to the client; the answer
//! goes back upstream as the request's result.
//!
//! Which call a request is about, from what says so, in this order:
//! 1. the related-task `_meta` of an upstream task: the call that drives that task;
//! 2. the transport ([`ServerRequest::request_token`]): over Streamable HTTP the request came
//!    on the response stream of one of our calls, and a 2026-07-28 call's round asks its own
//!    questions; each plain call goes upstream with a progress token of its own, which names
//!    it;
//! 3. nothing (stdio, 2025-11-25, or the standalone GET stream): the oldest call in flight.
//!    With one call at a time that is always the right one; with several plain calls in
//!    flight on a stdio upstream it is a guess, since MCP gives such a request no link to
//!    the call it is about.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use mcp_tasks_client::{ElicitationHandler, RpcError, SamplingHandler, ServerRequest};
use mcp_tasks_engine::{Context, InputError};
use mcp_tasks_protocol::legacy::RELATED_TASK;
use serde_json::Value;

/// The calls in flight that may be asked something, oldest first.
#[derive(Default)]
pub(crate) struct Asks {
    next: AtomicU64,
    /// A std mutex: held only to read or change the list, never across an await.
    calls: Mutex<Vec<Asking>>,
}

struct Asking {
    id: u64,
    ctx: Context,
    upstream_task: Option<String>,
    /// The progress token the call went upstream with.
    token: Option<String>,
}

/// A call's place among those that may be asked; dropped when the call ends.
pub(crate) struct AskGuard {
    asks: Arc<Asks>,
    id: u64,
}

impl AskGuard {
    /// Notes the upstream task the call drives (requests tagged with it come here).
    pub(crate) fn upstream_task(&self, task_id: &str) {
        let mut calls = self.asks.lock();
        if let Some(call) = calls.iter_mut().find(|call| call.id == self.id) {
            call.upstream_task = Some(task_id.to_owned());
        }
    }
}

impl Drop for AskGuard {
    fn drop(&mut self) {
        self.asks.lock().retain(|call| call.id != self.id);
    }
}

impl Asks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Asking>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Enters a call that may be asked, with the context its questions go through and the
    /// progress token it goes upstream with, if it is ours to choose.
    pub(crate) fn enter(self: &Arc<Self>, ctx: Context, token: Option<&str>) -> AskGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push(Asking { id, ctx, upstream_task: None, token: token.map(str::to_owned) });
        AskGuard { asks: Arc::clone(self), id }
    }

    /// The context of the call `request` is about (see the module's comment).
    fn find(&self, request: &ServerRequest) -> Option<Context> {
        let calls = self.lock();
        if let Some(task) = request.related_task.as_deref()
            && let Some(call) = calls.iter().find(|call| call.upstream_task.as_deref() == Some(task))
        {
            return Some(call.ctx.clone());
        }
        if let Some(token) = request.request_token.as_deref()
            && let Some(call) = calls.iter().find(|call| call.token.as_deref() == Some(token))
        {
            return Some(call.ctx.clone());
        }
        calls.first().map(|call| call.ctx.clone())
    }
}

/// Answers the upstream's elicitation and sampling requests by asking downstream.
#[derive(Clone)]
pub(crate) struct Router(pub(crate) Arc<Asks>);

impl Router {
    async fn ask(&self, request: ServerRequest, sampling: bool) -> Result<Value, RpcError> {
        let Some(ctx) = self.0.find(&request) else {
            return Err(RpcError::internal(format!(
                "{} reached the proxy while no call through it was running, so nobody can answer it",
                request.method
            )));
        };
        let params = downstream_params(request.params);
        let asked = if sampling { ctx.sample(params).await } else { ctx.elicit(params).await };
        asked.map_err(|error| match error {
            InputError::Client(error) => RpcError { code: error.code, message: error.message, data: error.data },
            other => RpcError::internal(format!("the proxy could not ask its client: {other}")),
        })
    }
}

/// The params of an upstream request as asked downstream: without the upstream's task
/// augmentation and related-task `_meta` (they name the upstream's tasks, not ours).
fn downstream_params(mut params: Value) -> Value {
    if let Some(object) = params.as_object_mut() {
        object.remove("task");
        if let Some(meta) = object.get_mut("_meta").and_then(Value::as_object_mut) {
            meta.remove(RELATED_TASK);
            if meta.is_empty() {
                object.remove("_meta");
            }
        }
    }
    params
}

#[async_trait]
impl ElicitationHandler for Router {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, RpcError> {
        self.ask(request, false).await
    }
}

#[async_trait]
impl SamplingHandler for Router {
    async fn create_message(&self, request: ServerRequest) -> Result<Value, RpcError> {
        self.ask(request, true).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_upstream_task_and_its_tag_are_not_asked_downstream() {
        let params = json!({"message": "m", "requestedSchema": {}, "task": {"ttl": 1},
            "_meta": {RELATED_TASK: {"taskId": "up"}}});
        assert_eq!(downstream_params(params), json!({"message": "m", "requestedSchema": {}}));
        let kept = json!({"message": "m", "_meta": {RELATED_TASK: {"taskId": "up"}, "x": 1}});
        assert_eq!(downstream_params(kept), json!({"message": "m", "_meta": {"x": 1}}));
    }
}
