//! The one mapping from engine errors (and argument violations) to JSON-RPC errors. The
//! engine never speaks JSON-RPC.

use mcp_tasks_engine::{EngineError, EventKind, LimitExceeded, WorkError, StoreError};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::IDEMPOTENCY_KEY_META;
use serde_json::json;

use crate::arguments::InvalidArguments;

/// The JSON-RPC error code of a call refused by a limit of the server (tasks running at
/// once, overall or per principal; tasks kept per principal). Nothing was created or run;
/// the requestor may try again later. JSON-RPC 2.0 leaves `-32000` to `-32099` to
/// implementations; this is not `-32603`, since the server did not fail.
///
/// The error's `data` says which limit: `{"limit": "max_running_per_principal", "max": 16,
/// "current": 16}` (`limit` is one of `max_running`, `max_running_per_principal`,
/// `max_retained_per_principal`).
pub const LIMIT_EXCEEDED: i64 = -32010;

/// The JSON-RPC error a requestor sees for `err`.
///
/// 2025-11-25 tasks: an unknown, expired or foreign task id is `-32602` (the same answer
/// for another principal's task, so existence is not revealed); cancelling a terminal task
/// is `-32602`; internal failures are `-32603` with a generic message (the cause is logged),
/// except a full disk and an unreachable store, which say so and that the request may be
/// retried (`data`: `{"retryable": true, "cause": "store_disk_full" | "store_unavailable"}`).
/// A limit is [`LIMIT_EXCEEDED`]. An idempotency key reused for another call is `-32602`
/// (about the requestor's own tasks only: keys are per principal).
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
        EngineError::Limit(limit) => limit_error(limit),
        EngineError::KeyReused(_) => RpcError::invalid_params(format!(
            "This idempotency key was used for another call: your task made with _meta \
             \"{IDEMPOTENCY_KEY_META}\" of this value is for a different tool or different \
             arguments. Nothing was created; use a new key for a new call."
        )),
        EngineError::Store(StoreError::DiskFull(reason)) => {
            tracing::error!(%reason, "the task store's disk is full: refusing writes until space is freed");
            RpcError::internal(
                "Internal error: the server's task store is out of disk space, so nothing was stored (no task was \
                 created or changed; tasks stored before are intact). Retry once space is freed on the server.",
            )
            .with_data(serde_json::json!({"retryable": true, "cause": "store_disk_full"}))
        }
        EngineError::Store(StoreError::Unavailable(reason)) => {
            tracing::warn!(%reason, "the task store is unreachable: refusing the request until it is back");
            RpcError::internal(
                "Internal error: the server's task store is unreachable right now (the database may be restarting), \
                 so this request may not have been carried out; tasks stored before are kept. Retry in a few seconds.",
            )
            .with_data(serde_json::json!({"retryable": true, "cause": "store_unavailable"}))
        }
        other => {
            tracing::error!(error = %other, "internal error while serving a request");
            RpcError::internal("Internal error: the task store failed; see the server log")
        }
    }
}

/// The JSON-RPC error for a failure of the engine's own that ended the work of a task or a
/// plain call (`tasks/result` replays it, a plain `tools/call` answers it): `-32603` with
/// the failure's message, no `data`.
pub(crate) fn work_error(failure: &WorkError) -> RpcError {
    RpcError::internal(failure.to_string())
}

/// A call refused by a limit: what the limit is, how far the requestor is, and what to do.
fn limit_error(limit: &LimitExceeded) -> RpcError {
    let (name, max, current, message) = match limit {
        LimitExceeded::Running { running, limit } => (
            "max_running",
            u64::from(*limit),
            *running as u64,
            format!(
                "Too many tasks running: this server runs at most {limit} tasks and calls at once \
                 (max_running) and {running} are running. Nothing was started; try again when some \
                 have finished."
            ),
        ),
        LimitExceeded::RunningPerPrincipal { running, limit, .. } => (
            "max_running_per_principal",
            u64::from(*limit),
            *running as u64,
            format!(
                "Too many of your tasks running: each principal may run at most {limit} tasks and \
                 calls at once (max_running_per_principal) and you have {running} running. Nothing \
                 was started; wait for some to finish or cancel those you no longer need \
                 (tasks/cancel), then call again."
            ),
        ),
        LimitExceeded::RetainedPerPrincipal { retained, limit, .. } => (
            "max_retained_per_principal",
            *limit,
            *retained,
            format!(
                "Too many of your tasks retained: the server keeps at most {limit} tasks per \
                 principal (max_retained_per_principal) and holds {retained} of yours, finished \
                 or not. Nothing was created; finished tasks are deleted when their TTL runs out, \
                 so try again later, or ask for a shorter ttl when you create tasks."
            ),
        ),
        // `LimitExceeded` is non-exhaustive; a limit added later is still the requestor's.
        other => ("limit", 0, 0, format!("Refused by a limit of the server: {other}")),
    };
    RpcError::new(LIMIT_EXCEEDED, message).with_data(json!({"limit": name, "max": max, "current": current}))
}

/// `-32602` for arguments that break the tool's `inputSchema`: the message names the
/// failing fields and rules; `data` lists them all as `[{"path": "/package", "message":
/// "5 is not of type \"string\""}]` (`path` is a JSON Pointer into the arguments, empty for
/// the arguments object itself).
pub(crate) fn invalid_arguments(err: &InvalidArguments) -> RpcError {
    let data = err
        .violations
        .iter()
        .map(|violation| json!({"path": violation.path, "message": violation.message}))
        .collect();
    RpcError::invalid_params(err.to_string()).with_data(serde_json::Value::Array(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_store_is_a_retryable_error_that_says_so_and_hides_the_cause() {
        let err = EngineError::Store(StoreError::Unavailable("cannot reach PostgreSQL at postgres://u:***@db/x".to_owned()));
        let rpc = rpc_error(&err);
        assert_eq!(rpc.code, RpcError::INTERNAL_ERROR);
        assert!(rpc.message.contains("unreachable") && rpc.message.contains("Retry"), "{}", rpc.message);
        assert!(!rpc.message.contains("postgres://"), "the cause is logged, not sent: {}", rpc.message);
        assert_eq!(rpc.data, Some(json!({"retryable": true, "cause": "store_unavailable"})));
    }
}
