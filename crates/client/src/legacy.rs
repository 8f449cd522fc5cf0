//! The client's 2025-11-25 codec: the `initialize` handshake, the `params` the client sends
//! and the results it reads, turned into and out of the era-neutral types of
//! [`crate::types`]; and the operations of a session in this era ([`crate::dialect`]
//! delegates to them): a call as a task when the tool allows it, `tasks/list`, and a task
//! driven to its end by the blocking `tasks/result`. The one place (with `connection` and
//! `hosted`, which route and host the server's own requests) that names
//! `mcp_tasks_protocol::legacy`.

use std::time::Duration;

use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::legacy::{
    self as wire, CallToolParams, CreateTaskResult, InitializeParams, InitializeResult, ListTasksResult, ListToolsResult,
    RelatedTaskMetadata, TaskMetadata, ToolExecution,
};
use mcp_tasks_protocol::mcp::{self, CallToolResult, IDEMPOTENCY_KEY_META, Implementation, Meta, ProgressToken, RequestMeta};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value, json};

/// The method names, and the revision the HTTP transport names in `MCP-Protocol-Version`.
pub(crate) use mcp_tasks_protocol::legacy::{PROTOCOL_VERSION, method};

use crate::client::{Called, Client, arguments_map, from_value, to_value};
use crate::error::ClientError;
use crate::task::TaskHandle;
use crate::types::{Declared, ServerInfo, TaskInfo, TaskMode, TaskStatus, ToolInfo};

/// `tasks/result` streams lost in a row on a terminal task before [`TaskHandle::wait`]
/// gives up.
const MAX_LOST_RESULTS: u32 = 3;

/// The `params` of `initialize`, declaring `capabilities` and `info`.
pub(crate) fn initialize_params(capabilities: Value, info: Implementation) -> Value {
    let params = InitializeParams {
        protocol_version: PROTOCOL_VERSION.to_owned(),
        capabilities,
        client_info: info,
        meta: None,
    };
    to_value(&params)
}

/// What the server answered to `initialize`; an error when it speaks another revision.
pub(crate) fn server_info(answer: Value) -> Result<ServerInfo, ClientError> {
    let server: InitializeResult = from_value(answer, method::INITIALIZE)?;
    if server.protocol_version != PROTOCOL_VERSION {
        return Err(ClientError::Protocol(format!(
            "the server speaks MCP {}, this client only {PROTOCOL_VERSION}",
            server.protocol_version
        )));
    }
    let tasks = server.capabilities.tasks.as_ref();
    let runs_tool_tasks = tasks
        .and_then(|tasks| tasks.requests.as_ref())
        .and_then(|requests| requests.tools.as_ref())
        .is_some_and(|tools| tools.call.is_some());
    Ok(ServerInfo {
        implementation: server.server_info,
        instructions: server.instructions,
        era: Era::Legacy,
        runs_tool_tasks,
        lists_tasks: tasks.is_some_and(|tasks| tasks.list.is_some()),
        cancels_tasks: tasks.is_some_and(|tasks| tasks.cancel.is_some()),
    })
}

/// One page of `tools/list`: its tools and the next cursor.
pub(crate) fn tools_page(answer: Value) -> Result<(Vec<ToolInfo>, Option<String>), ClientError> {
    let page: ListToolsResult = from_value(answer, method::TOOLS_LIST)?;
    Ok((page.tools.into_iter().map(tool_info).collect(), page.next_cursor))
}

/// One page of `tasks/list`: its tasks and the next cursor.
pub(crate) fn tasks_page(answer: Value) -> Result<(Vec<TaskInfo>, Option<String>), ClientError> {
    let page: ListTasksResult = from_value(answer, method::TASKS_LIST)?;
    Ok((page.tasks.into_iter().map(task_info).collect(), page.next_cursor))
}

/// The `params` of `tools/call`: as a task (with the retention asked for, in ms) when
/// `task` is `Some`.
pub(crate) fn call_params(
    name: &str,
    arguments: Option<Map<String, Value>>,
    task: Option<Option<u64>>,
    meta: RequestMeta,
) -> Value {
    let task = task.map(|ttl| TaskMetadata { ttl });
    to_value(&CallToolParams { name: name.to_owned(), arguments, task, meta: Some(meta) })
}

/// The task a task-augmented `tools/call` of `name` created.
pub(crate) fn created_task(name: &str, answer: Value) -> Result<TaskInfo, ClientError> {
    if answer.get("task").is_none() {
        return Err(ClientError::Protocol(format!(
            "tools/call of {name:?} with a task was answered with a plain result, not a CreateTaskResult"
        )));
    }
    let created: CreateTaskResult = from_value(answer, method::TOOLS_CALL)?;
    Ok(task_info(created.task))
}

/// The task a `tasks/get` or `tasks/cancel` (`method`) answered with.
pub(crate) fn task(answer: Value, method: &str) -> Result<TaskInfo, ClientError> {
    from_value::<wire::Task>(answer, method).map(task_info)
}

/// The task a `notifications/tasks/status` carries (its whole `params`).
pub(crate) fn task_status_notification(params: &Value) -> Option<TaskInfo> {
    serde_json::from_value::<wire::Task>(params.clone()).ok().map(task_info)
}

/// The task id of the related-task `_meta` in `params`, if any.
pub(crate) fn related_task(params: &Value) -> Option<String> {
    params
        .get("_meta")
        .and_then(|meta| serde_json::from_value::<Meta>(meta.clone()).ok())
        .and_then(|meta| RelatedTaskMetadata::from_meta(&meta))
        .map(|related| related.task_id)
}

fn task_info(task: wire::Task) -> TaskInfo {
    TaskInfo {
        id: task.task_id,
        status: task.status,
        status_message: task.status_message,
        created_at: task.created_at,
        last_updated_at: task.last_updated_at,
        ttl_ms: task.ttl,
        poll_interval_ms: task.poll_interval,
    }
}

fn tool_info(tool: wire::Tool) -> ToolInfo {
    let (task_mode, declared) = match tool.execution.map(|execution| execution.task_support) {
        None => (TaskMode::Forbidden, Declared::Absent),
        Some(None) => (TaskMode::Forbidden, Declared::Empty),
        Some(Some(support)) => (support, Declared::Explicit),
    };
    let mcp::Tool { name, title, description, input_schema, output_schema, annotations, meta } = tool.base;
    ToolInfo { name, title, description, input_schema, output_schema, annotations, meta, task_mode, declared }
}

/// The tool object as `tools/list` carried it.
impl Serialize for ToolInfo {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let execution = match (self.declared, self.task_mode) {
            (Declared::Absent, TaskMode::Forbidden) | (Declared::ServerDecides, _) => None,
            (Declared::Empty, TaskMode::Forbidden) => Some(ToolExecution { task_support: None }),
            (_, mode) => Some(ToolExecution { task_support: Some(mode) }),
        };
        let base = mcp::Tool {
            name: self.name.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            output_schema: self.output_schema.clone(),
            annotations: self.annotations.clone(),
            meta: self.meta.clone(),
        };
        wire::Tool { base, execution }.serialize(serializer)
    }
}

/// `tools/call`, plainly, with `meta` (the progress token).
pub(crate) async fn call_tool(
    client: &Client,
    name: &str,
    arguments: Option<Map<String, Value>>,
    meta: RequestMeta,
) -> Result<CallToolResult, ClientError> {
    let params = call_params(name, arguments, None, meta);
    from_value(client.request(method::TOOLS_CALL, params).await?, method::TOOLS_CALL)
}

/// [`Client::call`]: as a task when the server runs tool calls as tasks and the tool's
/// [`TaskMode`] allows it, plainly otherwise (then without `key`).
pub(crate) async fn call(client: &Client, name: &str, arguments: Value, key: Option<&str>) -> Result<Called, ClientError> {
    if client.server_runs_tool_tasks() && client.tool(name).await?.task_mode != TaskMode::Forbidden {
        return call_as_task(client, name, arguments, None, key).await.map(Called::Task);
    }
    client.call_tool(name, arguments).await.map(Called::Result)
}

/// [`Client::call_tool_as_task`], with an idempotency key if any: refused without a call
/// when the server or the tool does not have tasks.
pub(crate) async fn call_as_task(
    client: &Client,
    name: &str,
    arguments: Value,
    ttl: Option<Duration>,
    key: Option<&str>,
) -> Result<TaskHandle, ClientError> {
    let unsupported = |reason: &str| ClientError::TasksUnsupported { tool: name.to_owned(), reason: reason.to_owned() };
    if !client.server_runs_tool_tasks() {
        return Err(unsupported("the server does not declare tasks.requests.tools.call"));
    }
    if client.tool(name).await?.task_mode == TaskMode::Forbidden {
        return Err(unsupported("its execution.taskSupport is \"forbidden\""));
    }
    let ttl = ttl.map(|ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
    let mut meta = client.progress_meta();
    if let Some(key) = key {
        meta.rest.insert(IDEMPOTENCY_KEY_META.to_owned(), json!(key));
    }
    let token = match &meta.progress_token {
        Some(ProgressToken::String(token)) => Some(token.clone()),
        _ => None,
    };
    let params = call_params(name, arguments_map(arguments)?, Some(ttl), meta);
    let created = created_task(name, client.request(method::TOOLS_CALL, params).await?)?;
    Ok(client.handle(created).with_progress_token(token))
}

/// Every page of `tasks/list`.
pub(crate) async fn list_tasks(client: &Client) -> Result<Vec<TaskInfo>, ClientError> {
    let mut tasks = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.map_or_else(|| json!({}), |cursor| json!({ "cursor": cursor }));
        let (page, next_cursor) = tasks_page(client.request(method::TASKS_LIST, params).await?)?;
        tasks.extend(page);
        match next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok(tasks)
}

/// [`TaskHandle::status`]: `tasks/get`.
pub(crate) async fn status(handle: &TaskHandle) -> Result<TaskInfo, ClientError> {
    let task = task(handle.polled(method::TASKS_GET, handle.params()).await?, method::TASKS_GET)?;
    handle.remember(&task);
    Ok(task)
}

/// [`TaskHandle::cancel`]: `tasks/cancel` moves the task to `cancelled` before it answers.
pub(crate) async fn cancel(handle: &TaskHandle) -> Result<TaskInfo, ClientError> {
    let answer = handle.connection.request(method::TASKS_CANCEL, handle.params()).await?;
    let task = task(answer, method::TASKS_CANCEL)?;
    handle.remember(&task);
    Ok(task)
}

/// [`TaskHandle::wait`]: the blocking `tasks/result`; when its stream is lost (and cannot be
/// resumed), `tasks/get` is polled until the task is `input_required` or terminal, and
/// `tasks/result` asked again.
pub(crate) async fn wait(handle: &TaskHandle) -> Result<CallToolResult, ClientError> {
    let mut lost = 0;
    loop {
        match handle.connection.request(method::TASKS_RESULT, handle.params()).await {
            Ok(result) => return from_value(result, method::TASKS_RESULT),
            Err(ClientError::Rpc { code, message, data }) => return Err(outcome_error(handle, code, message, data).await),
            Err(error @ (ClientError::StreamLost { .. } | ClientError::Transport(_))) => {
                tracing::debug!(task = %handle.id, %error, "tasks/result lost; polling tasks/get");
                let task = poll_until_actionable(handle).await?;
                if task.status.is_terminal() {
                    lost += 1;
                    if lost >= MAX_LOST_RESULTS {
                        return Err(error);
                    }
                }
            }
            Err(other) => return Err(other),
        }
    }
}

/// Polls `tasks/get` until the task is `input_required` or terminal.
async fn poll_until_actionable(handle: &TaskHandle) -> Result<TaskInfo, ClientError> {
    loop {
        let task = handle.status().await?;
        if task.status.is_terminal() || task.status == TaskStatus::InputRequired {
            return Ok(task);
        }
        handle.pause(&task).await?;
    }
}

/// What a JSON-RPC error from `tasks/result` means: a cancelled task, the replayed
/// error of a failed one, or an error about the request itself (e.g. unknown task).
async fn outcome_error(handle: &TaskHandle, code: i64, message: String, data: Option<Value>) -> ClientError {
    let said_cancelled = data.as_ref().and_then(|data| data.get("status")).and_then(Value::as_str) == Some("cancelled");
    let task = match handle.status().await {
        Ok(task) => task,
        Err(_) => return ClientError::Rpc { code, message, data },
    };
    match task.status {
        TaskStatus::Cancelled => ClientError::TaskCancelled { task_id: handle.id.clone(), message: task.status_message },
        TaskStatus::Failed if !said_cancelled => ClientError::TaskFailed { task_id: handle.id.clone(), code, message, data },
        _ => ClientError::Rpc { code, message, data },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_tool_serializes_as_it_was_listed() {
        let schema = json!({"type": "object"});
        for listed in [
            json!({"name": "a", "inputSchema": schema}),
            json!({"name": "b", "inputSchema": schema, "execution": {}}),
            json!({"name": "c", "inputSchema": schema, "execution": {"taskSupport": "forbidden"}}),
            json!({"name": "d", "title": "D", "description": "x", "inputSchema": schema, "outputSchema": schema,
                   "annotations": {"readOnlyHint": true}, "_meta": {"k": 1}, "execution": {"taskSupport": "required"}}),
        ] {
            let (tools, _) = tools_page(json!({"tools": [listed.clone()]})).unwrap();
            let wire: wire::Tool = serde_json::from_value(listed).unwrap();
            assert_eq!(serde_json::to_string(&tools[0]).unwrap(), serde_json::to_string(&wire).unwrap());
        }
    }

    #[test]
    fn a_task_serializes_as_the_wire_task() {
        for listed in [
            json!({"taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttl": null}),
            json!({"taskId": "t", "status": "input_required", "statusMessage": "m", "createdAt": "a",
                   "lastUpdatedAt": "b", "ttl": 5, "pollInterval": 7}),
            json!({"taskId": "t", "status": "cancelled", "createdAt": "a", "lastUpdatedAt": "b"}),
        ] {
            let info = task(listed.clone(), "tasks/get").unwrap();
            let wire: wire::Task = serde_json::from_value(listed).unwrap();
            assert_eq!(serde_json::to_string(&info).unwrap(), serde_json::to_string(&wire).unwrap());
            assert_eq!(info.status.as_str(), wire.status.as_str());
        }
    }
}
