//! Shapes only protocol revision 2026-07-28 ("Modern") has, with the tasks extension
//! `io.modelcontextprotocol/tasks` (SEP-2663): the per-request `_meta` every request carries
//! (there is no `initialize`), `server/discover`, the error codes of the revision, and the
//! `params` of `tools/call`, `tasks/get`, `tasks/update` and `tasks/cancel`, and (in
//! `results`) the result shapes of the tasks extension: [`DetailedTask`] ([`GetTaskResult`]),
//! [`CreateTaskResult`], [`InputRequiredResult`].
//!
//! The server's Modern codec writes these results from borrowed parts of its records, the
//! client reads them; the server's tests check them against the official
//! `mcp-2026-07-28.schema.json` and `ext-tasks-draft.schema.json`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::era::PROTOCOL_VERSION_META;
use crate::mcp::{Implementation, Meta, ProgressToken};
use crate::object;

mod results;

pub use results::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputRequest, InputRequests, InputRequiredResult, ResultMeta,
    ResultType, Task, UnderlyingResult,
};

/// The protocol revision this module implements.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// The `params._meta` key of the client's capabilities for this one request (required).
pub const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `params._meta` key of the client's `Implementation` (SHOULD be on every request).
pub const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";
/// The `params._meta` key of the lowest log level this request wants `notifications/message` at.
pub const LOG_LEVEL_META: &str = "io.modelcontextprotocol/logLevel";
/// The result `_meta` key of the server's `Implementation` (SHOULD be on every result).
pub const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
/// The identifier of the tasks extension, under `capabilities.extensions` on both sides.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `revision`s of the tasks extension this build implements, besides the initial one
/// (which a settings object without `revision` names, SEP-3392 revision_05). None yet: the
/// extension's settings object is `{}` in the 2026-07-28 schema, and this build advertises
/// exactly that (revision_04 adds a `revision` only with a breaking change).
pub const TASKS_REVISIONS: &[&str] = &[];

/// Whether an extension's settings object names a revision this build implements (SEP-3392):
/// none (the initial revision, revision_05) or one of the extension's known ones, compared
/// as opaque strings by exact match (never numerically: the text fixes no order). A
/// `revision` that is not a string is unknown (revision_09: a peer's extension data is
/// validated). Only the tasks extension has known revisions; any other's initial revision
/// alone is known.
pub fn known_revision(extension: &str, settings: &Value) -> bool {
    match settings.get("revision") {
        None => true,
        Some(Value::String(revision)) => extension == TASKS_EXTENSION && TASKS_REVISIONS.contains(&revision.as_str()),
        Some(_) => false,
    }
}

/// `-32020` HeaderMismatch: HTTP headers missing, malformed, or different from the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// `-32021` MissingRequiredClientCapability, with `data.requiredCapabilities`.
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
/// `-32022` UnsupportedProtocolVersion, with `data.supported` and `data.requested`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Method names only this revision has (the shared ones are in [`crate::mcp::method`]).
pub mod method {
    /// Request: the server's versions, capabilities and instructions.
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// Request (tasks extension): answers to a task's `inputRequests`.
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// Request: a stream of change notifications.
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// Notification (tasks extension): a task's `DetailedTask` after a change.
    pub const NOTIFY_TASKS: &str = "notifications/tasks";
    /// Notification: the first message of a `subscriptions/listen` stream, with the filter
    /// the server agreed to.
    pub const NOTIFY_SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
    /// Request (draft SEP-2694, served with the tasks extension): a task's numbered events
    /// after a cursor, then live, on the request's stream.
    pub const TASKS_STREAM: &str = "tasks/stream";
    /// Notification (draft SEP-2694): one event of a `tasks/stream`.
    pub const NOTIFY_TASK_EVENT: &str = "notifications/tasks/event";
}

/// The body field the `Mcp-Name` header mirrors on Streamable HTTP, for the methods that
/// have one: the tool or prompt `name`, the resource `uri`, the tasks extension's `taskId`.
pub fn name_header_field(method_name: &str) -> Option<&'static str> {
    match method_name {
        crate::mcp::method::TOOLS_CALL | crate::mcp::method::PROMPTS_GET => Some("name"),
        crate::mcp::method::RESOURCES_READ => Some("uri"),
        crate::mcp::method::TASKS_GET | crate::mcp::method::TASKS_CANCEL | method::TASKS_UPDATE | method::TASKS_STREAM => {
            Some("taskId")
        }
        _ => None,
    }
}

/// The `_meta` key SEP-2694 (draft) puts on every `notifications/tasks/event`, with the
/// event's `{"taskId"}` (stream_09). 2026-07-28 dropped it everywhere else; the draft keeps
/// it on its events.
pub const TASK_EVENT_RELATED_META: &str = "io.modelcontextprotocol/related-task";

/// The `_meta` key that tags every message of a `subscriptions/listen` stream with the id
/// of its request.
pub const SUBSCRIPTION_ID_META: &str = "io.modelcontextprotocol/subscriptionId";

/// Schema `SubscriptionFilter` (with the tasks extension's `taskIds`): what a
/// `subscriptions/listen` asks for, and, in its acknowledgement, what the server agreed to.
/// An absent member is not subscribed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Tasks extension: `notifications/tasks` for these tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
}

/// The `params` of `subscriptions/listen`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenParams {
    /// What the client asks for.
    pub notifications: SubscriptionFilter,
}

/// What a request's `params._meta` says about the request (schema `RequestMetaObject`).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestMeta {
    /// The revision of this request.
    pub protocol_version: String,
    /// The client's capabilities for this request only (`ClientCapabilities`, an object).
    pub client_capabilities: Map<String, Value>,
    /// Who the client says it is, if it said.
    pub client_info: Option<Implementation>,
    /// The lowest log level it wants `notifications/message` at, if any.
    pub log_level: Option<String>,
    /// Asks for `notifications/progress` with this token.
    pub progress_token: Option<ProgressToken>,
}

impl RequestMeta {
    /// Reads the `_meta` of `params`.
    ///
    /// # Errors
    /// What is missing or malformed, for a `-32602` (HTTP 400): a request without the
    /// protocol version or the client capabilities is malformed in this revision.
    pub fn read(params: Option<&Value>) -> Result<RequestMeta, String> {
        let meta = params.and_then(|params| params.get("_meta"));
        let Some(meta) = meta.and_then(Value::as_object) else {
            return Err(format!(
                "request _meta is missing: a 2026-07-28 request carries params._meta with \
                 {PROTOCOL_VERSION_META:?} and {CLIENT_CAPABILITIES_META:?}"
            ));
        };
        let protocol_version = match meta.get(PROTOCOL_VERSION_META) {
            Some(Value::String(version)) => version.clone(),
            Some(_) => return Err(format!("request _meta {PROTOCOL_VERSION_META:?} must be a string")),
            None => return Err(format!("request _meta is missing {PROTOCOL_VERSION_META:?}")),
        };
        let client_capabilities = match meta.get(CLIENT_CAPABILITIES_META) {
            Some(Value::Object(capabilities)) => capabilities.clone(),
            Some(_) => return Err(format!("request _meta {CLIENT_CAPABILITIES_META:?} must be an object")),
            None => return Err(format!("request _meta is missing {CLIENT_CAPABILITIES_META:?}")),
        };
        let client_info = match meta.get(CLIENT_INFO_META) {
            None => None,
            // Read from the borrowed value: no copy of it is built to be consumed.
            Some(info) => Some(
                Deserialize::deserialize(info)
                    .map_err(|err| format!("request _meta {CLIENT_INFO_META:?} is not an Implementation: {err}"))?,
            ),
        };
        let log_level = match meta.get(LOG_LEVEL_META) {
            None => None,
            Some(Value::String(level)) => Some(level.clone()),
            Some(_) => return Err(format!("request _meta {LOG_LEVEL_META:?} must be a string")),
        };
        let progress_token = match meta.get("progressToken") {
            None | Some(Value::Null) => None,
            Some(token) => Some(
                Deserialize::deserialize(token)
                    .map_err(|_| "request _meta \"progressToken\" must be a string or an integer".to_owned())?,
            ),
        };
        Ok(RequestMeta { protocol_version, client_capabilities, client_info, log_level, progress_token })
    }

    /// Whether the client declared `extension` under `clientCapabilities.extensions`, in a
    /// revision this build knows: a settings object whose `revision` is one this build
    /// implements ([`known_revision`]; SEP-3392 revision_06: an unknown one leaves the
    /// extension off, as if it were not declared).
    pub fn declares_extension(&self, extension: &str) -> bool {
        self.client_capabilities
            .get("extensions")
            .and_then(|extensions| extensions.get(extension))
            .is_some_and(|settings| settings.is_object() && known_revision(extension, settings))
    }

    /// The `revision` the client's settings of `extension` name, when the extension is left
    /// off for it (a revision this build does not know, or not a string).
    pub fn unknown_revision(&self, extension: &str) -> Option<String> {
        let settings = self.client_capabilities.get("extensions")?.get(extension)?;
        (settings.is_object() && !known_revision(extension, settings)).then(|| settings["revision"].to_string())
    }

    /// Whether the client declared capability `name` (e.g. `elicitation`, `sampling`).
    pub fn declares(&self, name: &str) -> bool {
        self.client_capabilities.get(name).is_some_and(Value::is_object)
    }
}

/// Schema `CallToolRequestParams` (2026-07-28): no `task` member (a 2025-11-25 `params.task`
/// that arrives is ignored, as the extension requires).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// The tool to call.
    pub name: String,
    /// The tool's arguments.
    #[serde(default, deserialize_with = "arguments", skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// A Multi Round-Trip retry: the answers to the previous round's `inputRequests`, by key.
    #[serde(default, deserialize_with = "optional_input_responses", skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// A Multi Round-Trip retry: the `requestState` of the previous round, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// The request's `_meta` (read for [`crate::mcp::IDEMPOTENCY_KEY_META`]; the rest of
    /// it is [`RequestMeta`]).
    #[serde(rename = "_meta", default, deserialize_with = "optional_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The Multi Round-Trip members of the `params` of a retried request (`prompts/get`,
/// `resources/read`; `tools/call` has them in [`CallToolParams`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryParams {
    /// The answers to the previous round's `inputRequests`, by key.
    #[serde(default, deserialize_with = "optional_input_responses", skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// The `requestState` of the previous round, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

/// The `params` of `tasks/get` and `tasks/cancel` (tasks extension).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task the request is about.
    pub task_id: String,
}

/// The `params` of `tasks/update` (tasks extension): answers to some or all of the task's
/// `inputRequests`, by key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// Answers by input request key (`ElicitResult`, `CreateMessageResult`, `ListRootsResult`).
    #[serde(deserialize_with = "input_responses")]
    pub input_responses: Map<String, Value>,
}

/// A result `_meta` with the server's `Implementation`.
pub fn server_info_meta(server: &Implementation) -> Meta {
    let mut meta = Meta::new();
    meta.insert(SERVER_INFO_META.to_owned(), serde_json::to_value(server).unwrap_or(Value::Null));
    meta
}

fn arguments<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Map<String, Value>>, D::Error> {
    object::optional(deserializer, "arguments")
}

fn optional_meta<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Meta>, D::Error> {
    object::optional(deserializer, "_meta")
}

fn optional_input_responses<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Map<String, Value>>, D::Error> {
    object::optional(deserializer, "inputResponses")
}

fn input_responses<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Map<String, Value>, D::Error> {
    object::required(deserializer, "inputResponses")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn meta(meta: Value) -> Value {
        json!({"name": "t", "_meta": meta})
    }

    #[test]
    fn modern_1_2_the_version_and_the_capabilities_are_required_in_request_meta() {
        let full = meta(json!({PROTOCOL_VERSION_META: "2026-07-28", CLIENT_CAPABILITIES_META: {}}));
        let read = RequestMeta::read(Some(&full)).unwrap();
        assert_eq!(read.protocol_version, "2026-07-28");
        assert!(!read.declares_extension(TASKS_EXTENSION));
        for (bad, says) in [
            (json!({"name": "t"}), "missing"),
            (meta(json!({CLIENT_CAPABILITIES_META: {}})), "protocolVersion"),
            (meta(json!({PROTOCOL_VERSION_META: "2026-07-28"})), "clientCapabilities"),
            (meta(json!({PROTOCOL_VERSION_META: 7, CLIENT_CAPABILITIES_META: {}})), "must be a string"),
            (meta(json!({PROTOCOL_VERSION_META: "2026-07-28", CLIENT_CAPABILITIES_META: []})), "must be an object"),
        ] {
            let err = RequestMeta::read(Some(&bad)).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn the_tasks_extension_is_declared_under_client_capability_extensions() {
        let declared = meta(json!({
            PROTOCOL_VERSION_META: "2026-07-28",
            CLIENT_CAPABILITIES_META: {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}},
            "progressToken": "p-1",
        }));
        let read = RequestMeta::read(Some(&declared)).unwrap();
        assert!(read.declares_extension(TASKS_EXTENSION) && read.declares("elicitation") && !read.declares("sampling"));
        assert_eq!(read.progress_token, Some(ProgressToken::String("p-1".into())));
    }

    #[test]
    fn a_legacy_task_member_in_tools_call_params_is_ignored() {
        let params: CallToolParams = serde_json::from_value(json!({"name": "t", "task": {"ttl": 5}})).unwrap();
        assert_eq!(params.name, "t");
        assert!(serde_json::from_value::<UpdateTaskParams>(json!({"taskId": "x", "inputResponses": []})).is_err());
    }
}
