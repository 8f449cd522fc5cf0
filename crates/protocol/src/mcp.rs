//! Shapes both protocol eras share: content blocks, `CallToolResult`, `Implementation`, the
//! base `Tool` (without 2025-11-25's `execution`), a task's [`TaskStatus`] and a tool's
//! [`TaskSupport`], progress tokens and notifications, pagination, and the names of the
//! methods both eras have.
//!
//! Each type maps to the definition of the same name in the official JSON schemas of
//! 2025-11-25 and 2026-07-28, with the schema's camelCase member names; optional members are
//! left out of the JSON when they are `None`. The era-specific shapes are in
//! [`crate::legacy`] and [`crate::modern`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::jsonrpc::RequestId;

/// The `_meta` object that most params and results may carry: any JSON object.
pub type Meta = Map<String, Value>;

/// An object that carries no data: `{}` on the wire; any object is accepted on input.
///
/// Capability flags in 2025-11-25 are such objects: presence means "supported". Never `true`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Empty {}

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Map::new().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Empty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::<String, Value>::deserialize(deserializer).map(|_| Empty {})
    }
}

/// Schema `Implementation`: the name and version of a client or server.
///
/// `icons` is not modelled and is dropped on input.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Name for programmatic use.
    pub name: String,
    /// Name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Version string.
    pub version: String,
    /// What the implementation does (new in 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Website of the implementation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Implementation {
    /// An implementation with just a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            ..Self::default()
        }
    }
}

/// Schema `Tool` without era-specific members: what both eras list for a tool. The
/// 2025-11-25 listing adds `execution` ([`crate::legacy::Tool`]).
///
/// `icons` is not modelled and is dropped on input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Name used in `tools/call`.
    pub name: String,
    /// Name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments; the schema requires `"type": "object"` at its root.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, if the tool returns any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// `ToolAnnotations` (hints such as `readOnlyHint`), kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Tool `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Tool {
    /// A tool with a name and an input schema, and nothing else.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
            meta: None,
        }
    }
}

/// Schema `TaskStatus` (2025-11-25 core, and the 2026-07-28 tasks extension: the same five
/// strings): where a task stands.
///
/// On the wire: `"working"`, `"input_required"`, `"completed"`, `"failed"`, `"cancelled"`.
/// Listed in lifecycle order (every task starts `working`); exhaustive on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The receiver needs input from the requestor (2025-11-25: who should call
    /// `tasks/result`; 2026-07-28: the task's `inputRequests`, answered with `tasks/update`).
    InputRequired,
    /// Finished successfully (terminal).
    Completed,
    /// The underlying request failed (terminal); in 2025-11-25 also a tool result with
    /// `isError: true`.
    Failed,
    /// Cancelled before completion (terminal).
    Cancelled,
}

impl TaskStatus {
    /// Whether the status never changes again: `completed`, `failed` or `cancelled`.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The wire spelling, such as `"input_required"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a tool may, or must, be called as a task. 2025-11-25 writes it as the tool's
/// `execution.taskSupport` (schema `ToolExecution.taskSupport`); in 2026-07-28 a tool
/// declares none and the server decides per call, by this same mode.
///
/// On the wire: `"forbidden"`, `"optional"` or `"required"`. Absent means
/// [`TaskSupport::Forbidden`] (the [`Default`]; a config file's default is `optional`, which
/// it says itself).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// The tool must not be called as a task (the default); the server SHOULD answer such a
    /// call with `-32601`.
    #[default]
    Forbidden,
    /// The tool may be called as a task or normally.
    Optional,
    /// The tool must be called as a task; the server MUST answer a plain call with `-32601`.
    Required,
}

impl TaskSupport {
    /// The wire spelling: `"forbidden"`, `"optional"` or `"required"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

impl std::fmt::Display for TaskSupport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Schema `PaginatedRequestParams`: the `params` of `tools/list` and `tasks/list`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedParams {
    /// Opaque cursor from the previous page's `nextCursor`; absent for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Schema `ProgressToken`: a string or an integer chosen by the requestor.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}

/// The `_meta` of a request's params: `progressToken` plus any other keys.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestMeta {
    /// Asks for `notifications/progress` with this token. For a task-augmented request the
    /// token stays valid until the task is terminal (2025-11-25 progress rules).
    #[serde(
        rename = "progressToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub progress_token: Option<ProgressToken>,
    /// All other `_meta` keys, as they came.
    #[serde(flatten)]
    pub rest: Meta,
}

/// The `params._meta` key of a `tools/call` that names this submission of the call, in both
/// eras (an mcp-tasks extension, hence our own prefix): a non-empty string of at most
/// [`MAX_IDEMPOTENCY_KEY_CHARS`] characters. A call that makes a task, retried with the
/// same key by the same principal, gets the task the first call made while that task is
/// retained; a plain call ignores the key.
///
/// `{"name": "deploy", "arguments": {…}, "_meta": {"dev.mcp-tasks/idempotency-key": "deploy-7f3a"}}`
pub const IDEMPOTENCY_KEY_META: &str = "dev.mcp-tasks/idempotency-key";

/// The longest [`IDEMPOTENCY_KEY_META`] value accepted, in characters (Unicode scalar
/// values): room for a UUID or a hash with a prefix, not for a payload.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 200;

/// The idempotency key of a request's `_meta` ([`IDEMPOTENCY_KEY_META`]), if it has one.
///
/// # Errors
/// What is wrong with the key, for a `-32602`: not a string, empty, or too long.
pub fn idempotency_key(meta: Option<&Meta>) -> Result<Option<String>, String> {
    let Some(value) = meta.and_then(|meta| meta.get(IDEMPOTENCY_KEY_META)) else {
        return Ok(None);
    };
    let Some(key) = value.as_str() else {
        return Err(format!("_meta {IDEMPOTENCY_KEY_META:?} must be a string, not {value}"));
    };
    if key.is_empty() {
        return Err(format!("_meta {IDEMPOTENCY_KEY_META:?} must not be empty"));
    }
    let chars = key.chars().count();
    if chars > MAX_IDEMPOTENCY_KEY_CHARS {
        return Err(format!(
            "_meta {IDEMPOTENCY_KEY_META:?} is {chars} characters long; at most {MAX_IDEMPOTENCY_KEY_CHARS} are allowed"
        ));
    }
    Ok(Some(key.to_owned()))
}

/// Schema `ContentBlock`: one item of `CallToolResult.content`, tagged by `type`.
///
/// Exhaustive on purpose: these are the five block types of 2025-11-25.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// `"type": "text"` (schema `TextContent`).
    Text {
        /// The text.
        text: String,
        /// Schema `Annotations` (audience, priority, lastModified), kept as raw JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Block `_meta`.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// `"type": "image"` (schema `ImageContent`).
    Image {
        /// Base64-encoded image data.
        data: String,
        /// MIME type of the image, such as `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Schema `Annotations`, kept as raw JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Block `_meta`.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// `"type": "audio"` (schema `AudioContent`).
    Audio {
        /// Base64-encoded audio data.
        data: String,
        /// MIME type of the audio, such as `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Schema `Annotations`, kept as raw JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Block `_meta`.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// `"type": "resource_link"` (schema `ResourceLink`): a pointer to a resource.
    ResourceLink {
        /// URI of the resource.
        uri: String,
        /// Name for programmatic use.
        name: String,
        /// Name for display.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// What the resource is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// MIME type, if known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Size in bytes of the raw content, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        /// Schema `Icon`s, kept as raw JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        icons: Option<Vec<Value>>,
        /// Schema `Annotations`, kept as raw JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Block `_meta`.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// `"type": "resource"` (schema `EmbeddedResource`): a resource's contents inline.
    Resource {
        /// Schema `TextResourceContents` or `BlobResourceContents`, kept as raw JSON.
        resource: Value,
        /// Schema `Annotations`, kept as raw JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Block `_meta`.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
}

impl Content {
    /// A text block with no annotations: `{"type": "text", "text": text}`.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// Schema `CallToolResult`: the result of a `tools/call` that ran without a task, and the
/// result of `tasks/result` for a tool-call task.
///
/// A tool failure is reported here with `isError: true`, not as a JSON-RPC error; in
/// 2025-11-25 such a result makes the task `failed`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The unstructured result.
    pub content: Vec<Content>,
    /// The structured result, an object matching the tool's `outputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// `true` when the tool call failed; absent means `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result `_meta`; from `tasks/result` it carries [`RELATED_TASK`](crate::legacy::RELATED_TASK).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Schema `ProgressNotificationParams`: the `params` of `notifications/progress`.
///
/// `progress` and `total` are written as integers when they hold whole numbers, so `50` stays
/// `50` on a round trip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the original request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with every notification.
    #[serde(serialize_with = "number::serialize")]
    pub progress: f64,
    /// Total, if known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "number::serialize_option"
    )]
    pub total: Option<f64>,
    /// Human-readable progress message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Notification `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Schema `CancelledNotificationParams`: the `params` of `notifications/cancelled`.
///
/// 2025-11-25: never used for tasks (`tasks/cancel` is); `requestId` MUST be given when
/// cancelling an ordinary request. `_meta` is not modelled and is dropped on input.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The request to cancel, previously sent in the same direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why, for logs or the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Method names both eras share.
pub mod method {
    /// Request: either direction; answered with `{}`.
    pub const PING: &str = "ping";
    /// Request: client → server; result `ListToolsResult`.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Request: client → server; result [`super::CallToolResult`] (or, as a task, each era's
    /// `CreateTaskResult`).
    pub const TOOLS_CALL: &str = "tools/call";
    /// Request: requestor → receiver; result: each era's task shape.
    pub const TASKS_GET: &str = "tasks/get";
    /// Request: requestor → receiver; result: each era's answer.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// Notification: params [`super::ProgressNotificationParams`].
    pub const NOTIFY_PROGRESS: &str = "notifications/progress";
    /// Notification: params [`super::CancelledNotificationParams`]; never for tasks.
    pub const NOTIFY_CANCELLED: &str = "notifications/cancelled";
    /// Server → client log message.
    pub const NOTIFY_MESSAGE: &str = "notifications/message";
    /// The tool list changed (2025-11-25: on the session; 2026-07-28: on a listen stream).
    pub const NOTIFY_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// Resource changed (after `resources/subscribe`).
    pub const NOTIFY_RESOURCE_UPDATED: &str = "notifications/resources/updated";
    /// The resource list changed (2025-11-25: on the session; 2026-07-28: on a listen stream).
    pub const NOTIFY_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// The prompt list changed (2025-11-25: on the session; 2026-07-28: on a listen stream).
    pub const NOTIFY_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// Lists resources.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// Lists resource templates.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Reads a resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// Lists prompts.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Gets a prompt.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// Argument completion.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// Server → client: a model completion.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Server → client: ask the user.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// Server → client: the client's roots.
    pub const ROOTS_LIST: &str = "roots/list";
}

/// Serializers that write whole-number floats as integers.
mod number {
    use serde::Serializer;

    /// Largest float below which every whole number converts to `i64` exactly.
    const LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53

    /// Writes `value` as an integer when it is a whole number of safe size, else as a float.
    pub(super) fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        let value = *value;
        if value.fract() == 0.0 && value.abs() < LIMIT {
            // Exact: a whole number below 2^53 in magnitude fits in i64 without rounding.
            serializer.serialize_i64(value as i64)
        } else {
            serializer.serialize_f64(value)
        }
    }

    /// [`serialize`] for an optional value (`None` is skipped by the caller).
    pub(super) fn serialize_option<S: Serializer>(
        value: &Option<f64>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serialize(value, serializer),
            None => serializer.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn empty_serializes_as_empty_object_and_accepts_any_object() {
        assert_eq!(serde_json::to_value(Empty {}).unwrap(), json!({}));
        assert_eq!(
            serde_json::from_value::<Empty>(json!({"x": [1]})).unwrap(),
            Empty {}
        );
        assert!(serde_json::from_value::<Empty>(json!(true)).is_err());
        assert!(serde_json::from_value::<Empty>(json!([])).is_err());
    }

    #[test]
    fn progress_keeps_whole_numbers_as_integers() {
        let params = ProgressNotificationParams {
            progress_token: ProgressToken::String("p".to_owned()),
            progress: 50.0,
            total: Some(100.0),
            message: None,
            meta: None,
        };
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({"progressToken": "p", "progress": 50, "total": 100})
        );
        let params = ProgressNotificationParams {
            progress: 0.25,
            total: None,
            ..params
        };
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({"progressToken": "p", "progress": 0.25})
        );
    }

    #[test]
    fn an_idempotency_key_is_a_non_empty_string_of_at_most_200_characters() {
        let meta = |value: Value| json!({IDEMPOTENCY_KEY_META: value}).as_object().cloned();
        assert_eq!(idempotency_key(None), Ok(None));
        assert_eq!(idempotency_key(meta(json!("k-1")).as_ref()), Ok(Some("k-1".to_owned())));
        let longest = "é".repeat(MAX_IDEMPOTENCY_KEY_CHARS);
        assert_eq!(idempotency_key(meta(json!(longest)).as_ref()), Ok(Some(longest.clone())));
        for (bad, problem) in [
            (json!(""), "must not be empty"),
            (json!(7), "must be a string"),
            (json!(null), "must be a string"),
            (json!(format!("{longest}x")), "201 characters long; at most 200"),
        ] {
            let err = idempotency_key(meta(bad.clone()).as_ref()).unwrap_err();
            assert!(err.contains(problem) && err.contains(IDEMPOTENCY_KEY_META), "{bad}: {err}");
        }
    }

    #[test]
    fn request_meta_keeps_unknown_keys_beside_progress_token() {
        let json = json!({"progressToken": 7, "com.example/trace": "abc"});
        let meta: RequestMeta = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(meta.progress_token, Some(ProgressToken::Number(7)));
        assert_eq!(meta.rest.get("com.example/trace"), Some(&json!("abc")));
        assert_eq!(serde_json::to_value(&meta).unwrap(), json);
    }

    #[test]
    fn content_text_is_tagged() {
        assert_eq!(
            serde_json::to_value(Content::text("hi")).unwrap(),
            json!({"type": "text", "text": "hi"})
        );
    }
}
