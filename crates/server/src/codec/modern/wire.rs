//! The 2026-07-28 shapes of era-neutral facts: a task record as a `DetailedTask` (its
//! result, error or input requests inlined) and as the flat `CreateTaskResult`, a tool as
//! the base `Tool` (no `execution`), and the `server/discover` result.

use mcp_tasks_engine::{InputRequests, Outcome, TaskRecord, TaskState};
use mcp_tasks_protocol::mcp;
use mcp_tasks_protocol::modern::TASKS_EXTENSION;
use serde_json::{Map, Value, json};

use super::SUPPORTED_VERSIONS;
use crate::codec::rfc3339;
use crate::errors;
use crate::registry::ToolSpec;
use crate::server::Server;
use crate::tool::input_method;

/// The `Task` fields of a record: `taskId`, `status`, `statusMessage`, `createdAt`,
/// `lastUpdatedAt`, `ttlMs` (always present, `null` for unlimited) and `pollIntervalMs`.
fn task(record: &TaskRecord) -> Map<String, Value> {
    let mut task = Map::new();
    task.insert("taskId".into(), json!(record.id.as_str()));
    task.insert("status".into(), json!(record.status().as_str()));
    if let Some(message) = &record.status_message {
        task.insert("statusMessage".into(), json!(message));
    }
    task.insert("createdAt".into(), json!(rfc3339(record.created_at)));
    task.insert("lastUpdatedAt".into(), json!(rfc3339(record.updated_at)));
    task.insert("ttlMs".into(), json!(record.ttl_ms));
    if let Some(poll) = record.poll_interval_ms {
        task.insert("pollIntervalMs".into(), json!(poll));
    }
    task
}

/// The flat `CreateTaskResult`: `resultType: "task"` and the task's fields, nothing inlined.
pub(crate) fn create_task_result(record: &TaskRecord) -> Value {
    let mut result = task(record);
    result.insert("resultType".into(), json!("task"));
    Value::Object(result)
}

/// The `DetailedTask` of a record: `inputRequests` while `input_required` (each a bare
/// `{method, params}`), the underlying `result` once `completed` (with its own
/// `resultType: "complete"`, no related-task `_meta`), the JSON-RPC `error` once `failed`.
pub(crate) fn detailed_task(record: &TaskRecord) -> Value {
    let mut detailed = task(record);
    match &record.state {
        TaskState::InputRequired { requests } => {
            detailed.insert("inputRequests".into(), Value::Object(input_requests(requests)));
        }
        TaskState::Completed { result } => {
            let mut result = match result {
                Value::Object(result) => result.clone(),
                other => Map::from_iter([("result".to_owned(), other.clone())]),
            };
            result.entry("resultType").or_insert_with(|| json!("complete"));
            detailed.insert("result".into(), Value::Object(result));
        }
        TaskState::Failed { outcome } => {
            detailed.insert("error".into(), failure(record, outcome));
        }
        TaskState::Working | TaskState::Cancelled => {}
    }
    Value::Object(detailed)
}

/// The `inputRequests` of a task's outstanding questions, each a bare `{method, params}`.
pub(crate) fn input_requests(requests: &InputRequests) -> Map<String, Value> {
    requests
        .iter()
        .map(|(key, input)| (key.clone(), json!({"method": input_method(input.kind), "params": input.params})))
        .collect()
}

/// The `error` of a failed task. A task that a 2025-11-25 client created and whose tool
/// reported an error (`isError`) is `failed` there; this era has no failed result, so it
/// reads as an internal error carrying the status message.
fn failure(record: &TaskRecord, outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Error(error) => serde_json::to_value(error).unwrap_or(Value::Null),
        Outcome::Failure(failure) => {
            let error = errors::work_error(failure);
            json!({"code": error.code, "message": error.message})
        }
        Outcome::Result(_) => json!({
            "code": mcp_tasks_protocol::jsonrpc::RpcError::INTERNAL_ERROR,
            "message": record.status_message.clone().unwrap_or_else(|| "The tool reported an error".to_owned()),
        }),
    }
}

/// The 2026-07-28 `Tool` of a spec: the shared shape, no `execution` (the server decides).
pub(crate) fn tool(spec: &ToolSpec) -> mcp::Tool {
    let mut tool = mcp::Tool::new(spec.name.clone(), spec.input_schema.clone());
    tool.title.clone_from(&spec.title);
    tool.description.clone_from(&spec.description);
    tool.output_schema.clone_from(&spec.output_schema);
    tool.annotations.clone_from(&spec.annotations);
    tool
}

/// `server/discover`: the revisions served per request, the capabilities (the tasks
/// extension under `extensions`), the instructions; `serverInfo` and the cache hints are
/// added to every result by the codec.
pub(crate) fn discover(server: &Server) -> Value {
    let catalog = &server.inner.catalog;
    let mut capabilities = json!({
        "tools": {"listChanged": true},
        "completions": {},
        "extensions": {TASKS_EXTENSION: {}},
    });
    if catalog.has_prompts() {
        capabilities["prompts"] = json!({"listChanged": catalog.lists_change()});
    }
    if catalog.has_resources() {
        capabilities["resources"] = json!({"listChanged": catalog.lists_change(), "subscribe": true});
    }
    let mut result = json!({
        "supportedVersions": SUPPORTED_VERSIONS,
        "capabilities": capabilities,
        "cacheScope": "public",
    });
    if let Some(instructions) = &server.inner.instructions {
        result["instructions"] = json!(instructions);
    }
    result
}
