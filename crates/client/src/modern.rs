//! The client's 2026-07-28 codec (with the tasks extension `io.modelcontextprotocol/tasks`):
//! the per-request `_meta` every request carries, `server/discover`, and the results read
//! back: `resultType` (`complete`, `input_required`, `task`), tools without `execution`, the
//! flat `CreateTaskResult`, the `DetailedTask` of `tasks/get`. Turned into and out of the
//! era-neutral types of [`crate::types`], as `legacy` does for 2025-11-25.

use mcp_tasks_protocol::era::{Era, PROTOCOL_VERSION_META};
use mcp_tasks_protocol::mcp::{self, Implementation};
use mcp_tasks_protocol::modern::{CLIENT_CAPABILITIES_META, PROTOCOL_VERSION, TASKS_EXTENSION};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::client::from_value;
use crate::connection::Handlers;
use crate::handlers::ServerRequest;
use crate::error::ClientError;
use crate::types::{Declared, ServerInfo, TaskInfo, TaskMode, TaskStatus, ToolInfo};

/// The `_meta` key of the client's `Implementation`.
const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";

/// What a 2026-07-28 client says of itself on every request.
#[derive(Clone, Debug)]
pub(crate) struct Identity {
    /// The client capabilities of a request that wants no task (elicitation, sampling
    /// where a handler answers them).
    pub(crate) capabilities: Map<String, Value>,
    pub(crate) info: Implementation,
}

impl Identity {
    /// Adds the per-request `_meta` to `params` (an object, or null for none): the
    /// revision, the capabilities (with the tasks extension when `tasks`), the client info.
    /// Members already in `params._meta` (a progress token) stay.
    pub(crate) fn frame(&self, params: Value, tasks: bool) -> Value {
        let mut params = match params {
            Value::Object(params) => params,
            _ => Map::new(),
        };
        let mut capabilities = self.capabilities.clone();
        if tasks {
            capabilities.insert("extensions".into(), json!({ TASKS_EXTENSION: {} }));
        }
        let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(PROTOCOL_VERSION_META.into(), json!(PROTOCOL_VERSION));
            meta.insert(CLIENT_CAPABILITIES_META.into(), Value::Object(capabilities));
            meta.insert(CLIENT_INFO_META.into(), json!(self.info));
        }
        Value::Object(params)
    }
}

/// The `server/discover` result.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Discover {
    supported_versions: Vec<String>,
    #[serde(default)]
    capabilities: Map<String, Value>,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(rename = "_meta", default)]
    meta: Map<String, Value>,
}

/// What `server/discover` says, when the server serves 2026-07-28 per request; `None` when
/// it does not list that revision (then the client falls back to `initialize`).
pub(crate) fn server_info(answer: Value) -> Result<Option<ServerInfo>, ClientError> {
    let discover: Discover = from_value(answer, mcp_tasks_protocol::modern::method::SERVER_DISCOVER)?;
    if !discover.supported_versions.iter().any(|version| version == PROTOCOL_VERSION) {
        return Ok(None);
    }
    let implementation = discover
        .meta
        .get(mcp_tasks_protocol::modern::SERVER_INFO_META)
        .and_then(|info| serde_json::from_value::<Implementation>(info.clone()).ok())
        .unwrap_or_else(|| Implementation::new("unknown", "unknown"));
    let tasks = discover
        .capabilities
        .get("extensions")
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some();
    Ok(Some(ServerInfo {
        implementation,
        instructions: discover.instructions,
        era: Era::Modern,
        runs_tool_tasks: tasks,
        lists_tasks: false,
        cancels_tasks: tasks,
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolsPage {
    tools: Vec<mcp::Tool>,
    #[serde(default)]
    next_cursor: Option<String>,
}

/// One page of `tools/list`. A 2026-07-28 tool declares no task mode (the server decides
/// whether a call becomes a task): it reads as `optional`, and serializes without
/// `execution`, as listed. Tools with invalid `x-mcp-header` annotations are left out.
pub(crate) fn tools_page(answer: Value) -> Result<(Vec<ToolInfo>, Option<String>), ClientError> {
    let page: ToolsPage = from_value(answer, mcp::method::TOOLS_LIST)?;
    let tools = page
        .tools
        .into_iter()
        // SEP-2243: a client on HTTP MUST drop a tool whose x-mcp-header annotations break
        // the rules (and SHOULD log it); one bad tool does not spoil the others.
        .filter(|tool| match crate::param_headers::annotations(&tool.input_schema) {
            Ok(_) => true,
            Err(reason) => {
                tracing::warn!(tool = %tool.name, %reason, "tool dropped: invalid x-mcp-header");
                false
            }
        })
        .map(|tool| {
            let mcp::Tool { name, title, description, input_schema, output_schema, annotations, meta } = tool;
            ToolInfo {
                name,
                title,
                description,
                input_schema,
                output_schema,
                annotations,
                meta,
                task_mode: TaskMode::Optional,
                declared: Declared::ServerDecides,
            }
        })
        .collect();
    Ok((tools, page.next_cursor))
}

/// A result of `tools/call`, `prompts/get` or `resources/read`, by its `resultType`.
pub(crate) enum Answer {
    /// The result itself (`complete`, or no `resultType`: read as complete).
    Complete(Value),
    /// A round of a Multi Round-Trip Request: the questions, and the state to echo.
    InputRequired { requests: Map<String, Value>, state: Option<String> },
    /// The task the server made (the flat `CreateTaskResult`).
    Task(TaskInfo),
}

/// Reads a result by its `resultType`.
pub(crate) fn answer(answer: Value, method: &str) -> Result<Answer, ClientError> {
    match answer.get("resultType").and_then(Value::as_str) {
        None | Some("complete") => Ok(Answer::Complete(answer)),
        Some("input_required") => {
            let requests = answer.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
            let state = answer.get("requestState").and_then(Value::as_str).map(str::to_owned);
            Ok(Answer::InputRequired { requests, state })
        }
        Some("task") => task_info(&answer, method).map(Answer::Task),
        Some(other) => Err(ClientError::Protocol(format!("{method} answered an unknown resultType {other:?}"))),
    }
}

/// The answers of the host's handlers to a round's `inputRequests`, by key: all of them, or
/// the error of the first that could not be answered (a round is retried whole).
///
/// # Errors
/// [`ClientError::InputUnanswered`] when a handler fails or none answers the method.
pub(crate) async fn answer_all(
    handlers: &Handlers,
    requests: &Map<String, Value>,
    task: Option<&str>,
    request_token: Option<&str>,
) -> Result<Map<String, Value>, ClientError> {
    match answer_each(handlers, requests, task, request_token).await {
        (answers, None) => Ok(answers),
        (_, Some(failure)) => Err(failure),
    }
}

/// The answers of the host's handlers to a task's `inputRequests`, by key, each tried: the
/// ones answered (to send now: a task takes partial answers), and the error of the first
/// that could not be, if any. `request_token`: the progress token of the call that asked
/// ([`ServerRequest::request_token`]).
pub(crate) async fn answer_each(
    handlers: &Handlers,
    requests: &Map<String, Value>,
    task: Option<&str>,
    request_token: Option<&str>,
) -> (Map<String, Value>, Option<ClientError>) {
    let mut answers = Map::new();
    let mut failure = None;
    for (key, request) in requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
        let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
        let asked = ServerRequest {
            method: method.clone(),
            params,
            related_task: task.map(str::to_owned),
            request_token: request_token.map(str::to_owned),
        };
        match handlers.call(asked).await {
            Ok(answer) => {
                answers.insert(key.clone(), answer);
            }
            Err(error) => {
                failure.get_or_insert(ClientError::InputUnanswered { method, message: error.message });
            }
        }
    }
    (answers, failure)
}

/// A task as `tasks/get`, `notifications/tasks` or a `CreateTaskResult` give it, and what
/// its DetailedTask inlines.
pub(crate) struct Detailed {
    pub(crate) task: TaskInfo,
    /// `input_required`: the outstanding questions by key (`{method, params}` each).
    pub(crate) input_requests: Map<String, Value>,
    /// `completed`: the underlying result.
    pub(crate) result: Option<Value>,
    /// `failed`: the JSON-RPC error.
    pub(crate) error: Option<Value>,
}

/// The DetailedTask of a `tasks/get` answer.
pub(crate) fn detailed(answer: Value, method: &str) -> Result<Detailed, ClientError> {
    let task = task_info(&answer, method)?;
    let input_requests = answer.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
    Ok(Detailed { task, input_requests, result: answer.get("result").cloned(), error: answer.get("error").cloned() })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireTask {
    task_id: String,
    status: TaskStatus,
    #[serde(default)]
    status_message: Option<String>,
    created_at: String,
    last_updated_at: String,
    #[serde(default)]
    ttl_ms: Option<u64>,
    #[serde(default)]
    poll_interval_ms: Option<u64>,
}

fn task_info(answer: &Value, method: &str) -> Result<TaskInfo, ClientError> {
    let task: WireTask = from_value(answer.clone(), method)?;
    Ok(TaskInfo {
        id: task.task_id,
        status: task.status,
        status_message: task.status_message,
        created_at: task.created_at,
        last_updated_at: task.last_updated_at,
        ttl_ms: task.ttl_ms,
        poll_interval_ms: task.poll_interval_ms,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_meta_is_added_and_a_progress_token_kept() {
        let identity = Identity { capabilities: Map::from_iter([("elicitation".to_owned(), json!({}))]), info: Implementation::new("c", "1") };
        let framed = identity.frame(json!({"name": "x", "_meta": {"progressToken": "p"}}), true);
        let meta = &framed["_meta"];
        assert_eq!(meta["progressToken"], "p");
        assert_eq!(meta[PROTOCOL_VERSION_META], "2026-07-28");
        assert_eq!(meta[CLIENT_CAPABILITIES_META], json!({"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}));
        assert_eq!(identity.frame(Value::Null, false)["_meta"][CLIENT_CAPABILITIES_META], json!({"elicitation": {}}));
    }

    #[test]
    fn results_are_read_by_their_result_type() {
        assert!(matches!(answer(json!({"content": []}), "tools/call").unwrap(), Answer::Complete(_)));
        let round = answer(json!({"resultType": "input_required", "inputRequests": {"k": {}}, "requestState": "s"}), "x").unwrap();
        assert!(matches!(round, Answer::InputRequired { state: Some(ref s), .. } if s == "s"));
        let task = json!({"resultType": "task", "taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": 5});
        assert!(matches!(answer(task, "x").unwrap(), Answer::Task(ref t) if t.id == "t" && t.ttl_ms == Some(5)));
        assert!(answer(json!({"resultType": "mystery"}), "x").is_err());
    }
}
