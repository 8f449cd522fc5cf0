//! The one mapping from engine errors to JSON-RPC errors. The engine never speaks JSON-RPC.

use mcp_tasks_engine::{EngineError, EventKind};
use mcp_tasks_protocol::jsonrpc::RpcError;

/// The JSON-RPC error a requestor sees for `err`.
///
/// 2025-11-25 tasks: an unknown, expired or foreign task id is `-32602` (the same answer
/// for another principal's task, so existence is not revealed); cancelling a terminal task
/// is `-32602`; internal failures are `-32603` with a generic message (the cause is logged).
pub(crate) fn rpc_error(err: &EngineError) -> RpcError {
    match err {
        EngineError::NotFound(id) => {
            RpcError::invalid_params(format!("Failed to retrieve task: Task not found ({id})"))
        }
        EngineError::Refused { from, event: EventKind::Cancel, .. } => RpcError::invalid_params(
            format!("Cannot cancel task: already in terminal status '{from}'"),
        ),
        EngineError::Refused { .. } => RpcError::invalid_params(err.to_string()),
        EngineError::UnknownTool(name) => RpcError::invalid_params(format!("Unknown tool: {name}")),
        other => {
            tracing::error!(error = %other, "internal error while serving a request");
            RpcError::internal("Internal error: the task store failed; see the server log")
        }
    }
}
