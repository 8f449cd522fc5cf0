//! `params` and `result` shapes of MCP revision 2025-11-25 ("Legacy"), the revision whose core
//! protocol has tasks.
//!
//! Every type here maps to one definition of the official 2025-11-25 JSON schema (named in
//! its doc comment) and uses the schema's camelCase member names. Optional members are left out
//! of the JSON when they are `None`, except `Task.ttl`, whose key the schema requires (it is
//! `null` for unlimited retention). Incoming members this crate does not model are accepted
//! and dropped: `icons`, and the optional `_meta` of `InitializeResult`, `ListToolsResult`,
//! `ListTasksResult`, `PaginatedRequestParams`, `CancelledNotificationParams` and of the
//! `Task`-shaped results and notification params (`GetTaskResult`, `CancelTaskResult`,
//! `TaskStatusNotificationParams`), which the spec says SHOULD NOT carry related-task anyway.
//!//! The shapes both eras share are in [`crate::mcp`]; the method names of 2025-11-25 (shared
//! and Legacy-only) are in [`method`]. The envelope around these shapes is in
//! [`crate::jsonrpc`].

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::mcp::{self, Empty, Implementation, Meta, RequestMeta};
/// The task status and task support both eras name (here for the 2025-11-25 paths).
pub use crate::mcp::{TaskStatus, TaskSupport};
use crate::object;

/// The protocol revision this module implements, as sent in `protocolVersion`.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The `_meta` key that ties a message to a task: its value is a [`RelatedTaskMetadata`].
///
/// 2025-11-25 `tasks/result`: the successful response MUST carry it.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The `_meta` key of a [`CreateTaskResult`] for `tools/call` whose string value the host may
/// hand to the model as a provisional tool result while the task runs (optional hint).
pub const MODEL_IMMEDIATE_RESPONSE: &str = "io.modelcontextprotocol/model-immediate-response";

/// `{"io.modelcontextprotocol/related-task": {"taskId": task_id}}`, the `_meta` that ties a
/// message (such as the `tasks/result` response) to a task.
pub fn related_task_meta(task_id: &str) -> Meta {
    let mut related = Map::new();
    related.insert("taskId".to_owned(), Value::String(task_id.to_owned()));
    let mut meta = Map::new();
    meta.insert(RELATED_TASK.to_owned(), Value::Object(related));
    meta
}

/// Schema `RelatedTaskMetadata`: the value under the [`RELATED_TASK`] `_meta` key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTaskMetadata {
    /// The id of the task the message belongs to.
    pub task_id: String,
}

impl RelatedTaskMetadata {
    /// Reads the related task from a `_meta` object, if it has a well-formed one.
    pub fn from_meta(meta: &Meta) -> Option<Self> {
        serde_json::from_value(meta.get(RELATED_TASK)?.clone()).ok()
    }
}

/// Schema `InitializeRequestParams`: the `params` of `initialize`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The newest protocol version the client supports.
    pub protocol_version: String,
    /// The client's `ClientCapabilities`, kept as raw JSON: the server only looks at a few
    /// keys, and the client side of tasks is not modelled here. Always an object.
    #[serde(deserialize_with = "capabilities")]
    pub capabilities: Value,
    /// The client's name and version.
    #[serde(deserialize_with = "client_info")]
    pub client_info: Implementation,
    /// Request `_meta`.
    #[serde(rename = "_meta", default, deserialize_with = "meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

// The object-typed fields of incoming params, each named in its error (see [`object`]).

fn capabilities<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    object::required(deserializer, "capabilities")
}

fn client_info<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Implementation, D::Error> {
    object::required(deserializer, "clientInfo")
}

fn meta<'de, D: Deserializer<'de>, T: DeserializeOwned + 'static>(deserializer: D) -> Result<Option<T>, D::Error> {
    object::optional(deserializer, "_meta")
}

fn arguments<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Map<String, Value>>, D::Error> {
    object::optional(deserializer, "arguments")
}

fn task<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<TaskMetadata>, D::Error> {
    object::optional(deserializer, "task")
}

/// Schema `InitializeResult`: the server's answer to `initialize`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose; [`PROTOCOL_VERSION`] when it speaks this module.
    pub protocol_version: String,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// The server's name and version.
    pub server_info: Implementation,
    /// Hints for the model about how to use the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// Schema `ServerCapabilities`: what a server supports. An absent member means "not supported".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Argument autocompletion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Empty>,
    /// Non-standard capabilities: an object of objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Value>,
    /// Log messages to the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Empty>,
    /// Prompt templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Task-augmented requests and the `tasks/*` methods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ServerTasksCapability>,
    /// Tools (`tools/list`, `tools/call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
}

/// `ServerCapabilities.tools`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Whether the server sends `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// `ServerCapabilities.prompts`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// Whether the server sends `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// `ServerCapabilities.resources`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether clients may subscribe to resource updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether the server sends `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// `ServerCapabilities.tasks`: which task features the server offers.
///
/// 2025-11-25: `list` governs `tasks/list`, `cancel` governs `tasks/cancel`, and
/// `requests` is the exhaustive list of request types that may carry `params.task`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerTasksCapability {
    /// The server serves `tasks/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Empty>,
    /// The server serves `tasks/cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<Empty>,
    /// Request types that can be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ServerTaskRequests>,
}

impl ServerTasksCapability {
    /// Everything a server can offer:
    /// `{"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}`.
    pub fn full() -> Self {
        Self {
            list: Some(Empty {}),
            cancel: Some(Empty {}),
            requests: Some(ServerTaskRequests {
                tools: Some(ToolTaskRequests {
                    call: Some(Empty {}),
                }),
            }),
        }
    }
}

/// `ServerCapabilities.tasks.requests`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerTaskRequests {
    /// Tool requests that can be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolTaskRequests>,
}

/// `ServerCapabilities.tasks.requests.tools`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolTaskRequests {
    /// `tools/call` accepts `params.task`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Empty>,
}

/// Schema `ToolExecution`: execution properties of a tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool takes `params.task`; `None` means [`TaskSupport::Forbidden`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// Schema `Tool` of 2025-11-25: the shared [`mcp::Tool`] and its `execution` (with
/// `taskSupport`), flattened into one object on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    /// Everything but `execution`.
    #[serde(flatten)]
    pub base: mcp::Tool,
    /// Execution properties, including `taskSupport`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
}

impl Tool {
    /// A tool with a name and an input schema, and nothing else.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Self { base: mcp::Tool::new(name, input_schema), execution: None }
    }

    /// The tool's task support, with an absent value read as the default `forbidden`.
    pub fn task_support(&self) -> TaskSupport {
        self.execution
            .as_ref()
            .and_then(|execution| execution.task_support)
            .unwrap_or_default()
    }
}

/// Schema `ListToolsResult`: the result of `tools/list`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Opaque cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Schema `TaskMetadata`: the `params.task` object that asks for a task.
///
/// An empty `{}` still asks for a task.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskMetadata {
    /// Requested retention in milliseconds from creation; the receiver may grant another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// Schema `CallToolRequestParams`: the `params` of `tools/call`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// The tool to call.
    pub name: String,
    /// The tool's arguments.
    #[serde(default, deserialize_with = "arguments", skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Present when the caller asks for task-augmented execution (an object; `null` is
    /// read as absent).
    #[serde(default, deserialize_with = "task", skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request `_meta`, with the optional `progressToken`.
    #[serde(rename = "_meta", default, deserialize_with = "meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
}

/// Schema `Task`: the state of one task as the receiver reports it.
///
/// It is nested under `result.task` in [`CreateTaskResult`], and spread directly into the
/// `result` of `tasks/get` ([`GetTaskResult`]) and `tasks/cancel` ([`CancelTaskResult`]) and
/// into the `params` of `notifications/tasks/status` ([`TaskStatusNotificationParams`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The id the receiver generated; unguessable when tasks are not bound to an auth context.
    pub task_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// Human-readable context for any status (diagnostics for `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time, ISO 8601 / RFC 3339, such as `2025-11-25T10:30:00Z`.
    pub created_at: String,
    /// Time of the last change, same format.
    pub last_updated_at: String,
    /// Granted retention in milliseconds from `createdAt`; `None` is unlimited.
    ///
    /// Always serialized, as `null` when `None`: the schema requires the key. A missing key is
    /// read as `None`.
    pub ttl: Option<u64>,
    /// Suggested milliseconds between `tasks/get` polls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
}

/// Schema `CreateTaskResult`: the immediate answer to a task-augmented request.
///
/// It holds only the task; the real result comes from `tasks/result`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    /// The new task (status `working`).
    pub task: Task,
    /// Result `_meta`; may carry [`MODEL_IMMEDIATE_RESPONSE`].
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The `params` of `tasks/get`, `tasks/result` and `tasks/cancel`: `{"taskId": "..."}`.
///
/// 2025-11-25: `taskId` is authoritative; a related-task `_meta` here MUST be ignored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task the request is about.
    pub task_id: String,
    /// Request `_meta`.
    #[serde(rename = "_meta", default, deserialize_with = "meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Schema `ListTasksResult`: the result of `tasks/list`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// The tasks on this page.
    pub tasks: Vec<Task>,
    /// Opaque cursor of the next page; MUST be present while more tasks exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Schema `GetTaskResult` (`Result & Task`): the result of `tasks/get` is the [`Task`] itself,
/// its members spread directly into `result`.
pub type GetTaskResult = Task;

/// Schema `CancelTaskResult` (`Result & Task`): the result of `tasks/cancel` is the [`Task`]
/// itself, now `cancelled`, its members spread directly into `result`.
pub type CancelTaskResult = Task;

/// Schema `TaskStatusNotificationParams` (`NotificationParams & Task`): the `params` of
/// `notifications/tasks/status` are the whole [`Task`].
pub type TaskStatusNotificationParams = Task;

/// Method names of 2025-11-25: the ones both eras share ([`crate::mcp::method`], re-exported
/// here) and the Legacy-only ones.
pub mod method {
    pub use crate::mcp::method::*;

    /// Request: client → server, first message of a session.
    pub const INITIALIZE: &str = "initialize";
    /// Notification: client → server, after the `initialize` response.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Request: requestor → receiver; blocks until the task is terminal, then answers with the
    /// underlying request's result (or error).
    pub const TASKS_RESULT: &str = "tasks/result";
    /// Request: requestor → receiver; result [`super::ListTasksResult`].
    pub const TASKS_LIST: &str = "tasks/list";
    /// Notification: receiver → requestor, optional; params [`super::TaskStatusNotificationParams`].
    pub const NOTIFY_TASK_STATUS: &str = "notifications/tasks/status";
    /// Sets the lowest log level the client wants.
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// Subscribes to a resource's updates.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// Ends a subscription.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::mcp::ProgressToken;

    /// `params` whose `field` has the wrong type: read as `T`, the error must name the field.
    fn assert_refused_naming<T: serde::de::DeserializeOwned + std::fmt::Debug>(params: Value, field: &str) {
        match serde_json::from_value::<T>(params.clone()) {
            Ok(read) => panic!("{params} was accepted as {read:?}"),
            Err(err) => assert!(err.to_string().contains(&format!("`{field}`")), "{params}: {err}"),
        }
    }

    #[test]
    fn object_typed_params_fields_given_as_another_type_are_refused_naming_the_field() {
        for wrong in [json!([]), json!([60000]), json!(5), json!("task"), json!(true)] {
            assert_refused_naming::<CallToolParams>(json!({"name": "t", "task": wrong}), "task");
            assert_refused_naming::<CallToolParams>(json!({"name": "t", "arguments": wrong}), "arguments");
            assert_refused_naming::<CallToolParams>(json!({"name": "t", "_meta": wrong}), "_meta");
            assert_refused_naming::<TaskIdParams>(json!({"taskId": "t", "_meta": wrong}), "_meta");
            let client = json!({"name": "c", "version": "1"});
            let init = |capabilities: Value, client_info: Value| {
                json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": client_info})
            };
            assert_refused_naming::<InitializeParams>(init(wrong.clone(), client.clone()), "capabilities");
            assert_refused_naming::<InitializeParams>(init(json!({}), wrong.clone()), "clientInfo");
            let mut with_meta = init(json!({}), client);
            with_meta["_meta"] = wrong.clone();
            assert_refused_naming::<InitializeParams>(with_meta, "_meta");
        }
        // An array of the right length was read as the struct's fields in order.
        assert_refused_naming::<InitializeParams>(
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": ["c", null, "1"]}),
            "clientInfo",
        );
    }

    #[test]
    fn object_typed_params_fields_still_read_objects_and_take_null_as_absent() {
        let params: CallToolParams = serde_json::from_value(
            json!({"name": "t", "arguments": {"a": 1}, "task": {"ttl": 5}, "_meta": {"progressToken": 3}}),
        )
        .unwrap();
        assert_eq!(params.task, Some(TaskMetadata { ttl: Some(5) }));
        assert_eq!(params.arguments.unwrap()["a"], 1);
        assert_eq!(params.meta.unwrap().progress_token, Some(ProgressToken::Number(3)));
        let params: CallToolParams =
            serde_json::from_value(json!({"name": "t", "arguments": null, "task": null, "_meta": null})).unwrap();
        assert_eq!((params.arguments, params.task, params.meta), (None, None, None));
        let params: CallToolParams = serde_json::from_value(json!({"name": "t"})).unwrap();
        assert_eq!((params.arguments, params.task, params.meta), (None, None, None));
        assert_refused_naming::<CallToolParams>(json!({"name": "t", "task": {"ttl": "soon"}}), "task");
        assert_refused_naming::<InitializeParams>(json!({"protocolVersion": "2025-11-25", "capabilities": {}}), "clientInfo");
    }

    #[test]
    fn related_task_meta_has_spec_shape() {
        let meta = related_task_meta("t-1");
        assert_eq!(
            Value::Object(meta.clone()),
            json!({"io.modelcontextprotocol/related-task": {"taskId": "t-1"}})
        );
        let related = RelatedTaskMetadata::from_meta(&meta).unwrap();
        assert_eq!(related.task_id, "t-1");
        assert_eq!(RelatedTaskMetadata::from_meta(&Meta::new()), None);
    }

    #[test]
    fn full_tasks_capability_matches_spec() {
        assert_eq!(
            serde_json::to_value(ServerTasksCapability::full()).unwrap(),
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
        );
    }

    #[test]
    fn task_support_is_lowercase_and_defaults_to_forbidden() {
        assert_eq!(TaskSupport::default(), TaskSupport::Forbidden);
        assert_eq!(
            serde_json::to_value(TaskSupport::Optional).unwrap(),
            json!("optional")
        );
        let tool = Tool::new("t", json!({"type": "object"}));
        assert_eq!(tool.task_support(), TaskSupport::Forbidden);
        let tool: Tool = serde_json::from_value(json!({
            "name": "t", "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "required"}
        }))
        .unwrap();
        assert_eq!(tool.task_support(), TaskSupport::Required);
    }

    #[test]
    fn task_status_is_snake_case() {
        assert_eq!(
            serde_json::to_value(TaskStatus::InputRequired).unwrap(),
            json!("input_required")
        );
        for status in [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                json!(status.as_str())
            );
        }
        assert!(!TaskStatus::InputRequired.is_terminal());
        assert!(TaskStatus::Cancelled.is_terminal());
    }

    #[test]
    fn task_ttl_none_is_serialized_as_null() {
        let task = Task {
            task_id: "t".to_owned(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: "2025-11-25T10:30:00Z".to_owned(),
            last_updated_at: "2025-11-25T10:30:00Z".to_owned(),
            ttl: None,
            poll_interval: None,
        };
        let json = serde_json::to_value(&task).unwrap();
        assert_eq!(json.get("ttl"), Some(&Value::Null));
        assert_eq!(json.get("pollInterval"), None);
        assert_eq!(json.get("statusMessage"), None);
    }
}
