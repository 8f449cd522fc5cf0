//! The client's own view of a server, its tools and its tasks, whatever protocol revision
//! the session speaks: [`ServerInfo`], [`ToolInfo`] (with its [`TaskMode`]), [`TaskInfo`]
//! (with its [`TaskStatus`]). Each era's wire shapes are turned into these privately (the
//! 2025-11-25 ones in `legacy`), so the public API never names a revision's types.

use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::mcp::{Implementation, Meta};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who the server is and what it does, as learned when the session began.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerInfo {
    /// The server's name and version (`serverInfo`).
    pub implementation: Implementation,
    /// Hints for the model about how to use the server.
    pub instructions: Option<String>,
    /// The protocol revision the session speaks.
    pub era: Era,
    /// Whether the server runs `tools/call` as a task when asked (for the tools whose
    /// [`TaskMode`] allows it).
    pub runs_tool_tasks: bool,
    /// Whether the server lists a requestor's tasks (`tasks/list`).
    pub lists_tasks: bool,
    /// Whether the server cancels tasks on request (`tasks/cancel`).
    pub cancels_tasks: bool,
}

/// Whether a tool may, or must, be called as a task: the protocol's `TaskSupport` (default
/// `forbidden`, also what a tool that declares nothing means), under the client's name.
pub use mcp_tasks_protocol::mcp::TaskSupport as TaskMode;

/// How the server wrote a tool's task mode, so that [`ToolInfo`] serializes as it was
/// listed (an absent declaration and an explicit `forbidden` read alike).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Declared {
    /// Not written at all.
    #[default]
    Absent,
    /// An execution object without a task mode.
    Empty,
    /// Written out.
    Explicit,
    /// 2026-07-28: tools declare no task mode, the server decides per call (read as
    /// `optional`, serialized without `execution`).
    ServerDecides,
}

/// One tool of the server, as `tools/list` gives it.
///
/// Serializes as the tool object `tools/list` carried (`name`, `title`, `description`,
/// `inputSchema`, `outputSchema`, `annotations`, `_meta`, and the task mode as
/// `execution.taskSupport`, written when the server wrote it or when it is not
/// `forbidden`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolInfo {
    /// Name used to call it.
    pub name: String,
    /// Name for display.
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the structured result, if the tool returns one.
    pub output_schema: Option<Value>,
    /// `ToolAnnotations` (hints such as `readOnlyHint`), as raw JSON.
    pub annotations: Option<Value>,
    /// The tool's `_meta`.
    pub meta: Option<Meta>,
    /// Whether it may or must be called as a task.
    pub task_mode: TaskMode,
    /// How the server wrote `task_mode`.
    pub(crate) declared: Declared,
}

impl ToolInfo {
    /// A tool with a name and an input schema, nothing else (task mode `forbidden`).
    pub fn new(name: impl Into<String>, input_schema: Value) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
            meta: None,
            task_mode: TaskMode::Forbidden,
            declared: Declared::Absent,
        }
    }
}

/// Where a task stands: the protocol's status, the same in both eras.
pub use mcp_tasks_protocol::mcp::TaskStatus;

/// The state of one task, as the server last reported it.
///
/// Serializes as the protocol's task object: `taskId`, `status`, `statusMessage` (when
/// any), `createdAt`, `lastUpdatedAt`, `ttl` (`null` when unlimited), `pollInterval` (when
/// any).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskInfo {
    /// The task id the server gave.
    #[serde(rename = "taskId")]
    pub id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// Human-readable context for the status (diagnostics for `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time, as the server wrote it (RFC 3339, such as `2025-11-25T10:30:00Z`).
    pub created_at: String,
    /// Time of the last change, as the server wrote it.
    pub last_updated_at: String,
    /// Retention in milliseconds from `created_at`; `None` is unlimited.
    #[serde(rename = "ttl", default)]
    pub ttl_ms: Option<u64>,
    /// Suggested milliseconds between polls.
    #[serde(rename = "pollInterval", default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}
