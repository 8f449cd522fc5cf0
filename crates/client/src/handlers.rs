//! What the host implements to answer the server's own requests: `elicitation/create` (ask
//! the user) and `sampling/createMessage` (ask a model).

use async_trait::async_trait;
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::legacy::{Meta, RelatedTaskMetadata};
use serde_json::Value;

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
}

impl ServerRequest {
    pub(crate) fn new(method: String, params: Option<Value>) -> ServerRequest {
        let params = params.unwrap_or_else(|| Value::Object(Default::default()));
        let related_task = params
            .get("_meta")
            .and_then(|meta| serde_json::from_value::<Meta>(meta.clone()).ok())
            .and_then(|meta| RelatedTaskMetadata::from_meta(&meta))
            .map(|related| related.task_id);
        ServerRequest { method, params, related_task }
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
