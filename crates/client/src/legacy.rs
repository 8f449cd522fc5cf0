//! The client's 2025-11-25 codec: the `initialize` handshake, the `params` the client sends
//! and the results it reads, turned into and out of the era-neutral types of
//! [`crate::types`]. The one place (with `connection` and `hosted`, which route and host
//! the server's own requests) that names `mcp_tasks_protocol::legacy`.

use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::legacy::{
    self as wire, CallToolParams, CreateTaskResult, InitializeParams, InitializeResult, ListTasksResult, ListToolsResult,
    RelatedTaskMetadata, TaskMetadata, ToolExecution,
};
use mcp_tasks_protocol::mcp::{self, Implementation, Meta, RequestMeta};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// The method names, and the revision the HTTP transport names in `MCP-Protocol-Version`.
pub(crate) use mcp_tasks_protocol::legacy::{PROTOCOL_VERSION, method};

use crate::client::{from_value, to_value};
use crate::error::ClientError;
use crate::types::{Declared, ServerInfo, TaskInfo, TaskMode, TaskStatus, ToolInfo};

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
        status: status(task.status),
        status_message: task.status_message,
        created_at: task.created_at,
        last_updated_at: task.last_updated_at,
        ttl_ms: task.ttl,
        poll_interval_ms: task.poll_interval,
    }
}

fn status(status: wire::TaskStatus) -> TaskStatus {
    match status {
        wire::TaskStatus::Working => TaskStatus::Working,
        wire::TaskStatus::InputRequired => TaskStatus::InputRequired,
        wire::TaskStatus::Completed => TaskStatus::Completed,
        wire::TaskStatus::Failed => TaskStatus::Failed,
        wire::TaskStatus::Cancelled => TaskStatus::Cancelled,
    }
}

fn tool_info(tool: wire::Tool) -> ToolInfo {
    let (task_mode, declared) = match tool.execution.map(|execution| execution.task_support) {
        None => (TaskMode::Forbidden, Declared::Absent),
        Some(None) => (TaskMode::Forbidden, Declared::Empty),
        Some(Some(support)) => (mode(support), Declared::Explicit),
    };
    let mcp::Tool { name, title, description, input_schema, output_schema, annotations, meta } = tool.base;
    ToolInfo { name, title, description, input_schema, output_schema, annotations, meta, task_mode, declared }
}

fn mode(support: wire::TaskSupport) -> TaskMode {
    match support {
        wire::TaskSupport::Forbidden => TaskMode::Forbidden,
        wire::TaskSupport::Optional => TaskMode::Optional,
        wire::TaskSupport::Required => TaskMode::Required,
    }
}

fn support(mode: TaskMode) -> wire::TaskSupport {
    match mode {
        TaskMode::Forbidden => wire::TaskSupport::Forbidden,
        TaskMode::Optional => wire::TaskSupport::Optional,
        TaskMode::Required => wire::TaskSupport::Required,
    }
}

/// The tool object as `tools/list` carried it.
impl Serialize for ToolInfo {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let execution = match (self.declared, self.task_mode) {
            (Declared::Absent, TaskMode::Forbidden) | (Declared::ServerDecides, _) => None,
            (Declared::Empty, TaskMode::Forbidden) => Some(ToolExecution { task_support: None }),
            (_, mode) => Some(ToolExecution { task_support: Some(support(mode)) }),
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
