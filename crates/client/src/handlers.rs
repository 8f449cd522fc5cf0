//! What the host implements to answer the server's own requests: `elicitation/create` (ask
//! the user) and `sampling/createMessage` (ask a model).

use async_trait::async_trait;
use mcp_tasks_protocol::jsonrpc::RpcError;
use serde_json::Value;

use crate::types::TaskInfo;

/// A request the server sent to the client.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerRequest {
    /// The method, e.g. `elicitation/create`.
    pub method: String,
    /// Its `params` (an object; `{}` when the server sent none).
    pub params: Value,
    /// The task the request is about (`_meta["io.modelcontextprotocol/related-task"]`), if
    /// any. The answer carries the same tag back.
    pub related_task: Option<String>,
    /// The progress token of this client's request the server asked this within, where the
    /// transport says so: over Streamable HTTP, the request whose POST response stream
    /// carried it; in 2026-07-28, the `tools/call` whose round asked it (`inputRequests`).
    /// `None` on stdio, on the standalone GET stream, or for a request sent without a token.
    pub request_token: Option<String>,
}

impl ServerRequest {
    pub(crate) fn new(method: String, params: Option<Value>) -> ServerRequest {
        let params = params.unwrap_or_else(|| Value::Object(Default::default()));
        let related_task = crate::legacy::related_task(&params);
        ServerRequest { method, params, related_task, request_token: None }
    }
}

/// The progress token in a request's `params._meta` (a string, or a number as its text).
pub(crate) fn progress_token_of(params: &Value) -> Option<String> {
    match params.get("_meta")?.get("progressToken")? {
        Value::String(token) => Some(token.clone()),
        Value::Number(token) => Some(token.to_string()),
        _ => None,
    }
}

/// A notification the server sent (`notifications/progress`,
/// `notifications/tasks/status`, `notifications/message`, …), as
/// [`crate::Client::notifications`] hands them out.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerNotification {
    /// The method, e.g. `notifications/progress`.
    pub method: String,
    /// Its `params` (an object; `{}` when the server sent none).
    pub params: Value,
}

impl ServerNotification {
    /// The `progressToken` of a `notifications/progress`, as a string (integers in decimal).
    pub fn progress_token(&self) -> Option<String> {
        match self.params.get("progressToken")? {
            Value::String(token) => Some(token.clone()),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        }
    }

    /// The task a `notifications/tasks/status` is about (its `taskId`), or the related-task
    /// `_meta` of any other notification.
    pub fn task_id(&self) -> Option<String> {
        if let Some(Value::String(id)) = self.params.get("taskId") {
            return Some(id.clone());
        }
        ServerRequest::new(self.method.clone(), Some(self.params.clone())).related_task
    }

    /// The task state a `notifications/tasks/status` carries (`None` for other
    /// notifications, or params that are not a task).
    pub fn task_status(&self) -> Option<TaskInfo> {
        if self.method != crate::legacy::method::NOTIFY_TASK_STATUS {
            return None;
        }
        crate::legacy::task_status_notification(&self.params)
    }
}

/// Answers `elicitation/create`: shows `request.params.message` and the
/// `requestedSchema` form to the user and returns an `ElicitResult`
/// (`{"action": "accept", "content": {...}}`, or `"decline"` / `"cancel"`).
#[async_trait]
pub trait ElicitationHandler: Send + Sync + 'static {
    /// The `ElicitResult` JSON, or a JSON-RPC error to send instead.
    async fn elicit(&self, request: ServerRequest) -> Result<Value, RpcError>;
}

/// Answers `sampling/createMessage`: runs the messages through a model and returns a
/// `CreateMessageResult` (`{"role": "assistant", "content": {...}, "model": "..."}`).
#[async_trait]
pub trait SamplingHandler: Send + Sync + 'static {
    /// The `CreateMessageResult` JSON, or a JSON-RPC error to send instead.
    async fn create_message(&self, request: ServerRequest) -> Result<Value, RpcError>;
}
