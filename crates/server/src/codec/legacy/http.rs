//! The 2025-11-25 Streamable HTTP rules the transport asks this codec for, through the router:
//! which protocol versions a session's messages may name in `MCP-Protocol-Version`, and which
//! requests are answered on an SSE stream of their own.

use mcp_tasks_protocol::jsonrpc::{Request, RpcError};
use mcp_tasks_protocol::legacy::{self, method};
use serde_json::Value;

use crate::hints;

/// Protocol versions a client may name in `MCP-Protocol-Version`: every released revision
/// whose Streamable HTTP rules these are. The session's behaviour follows the version
/// negotiated at `initialize` (2025-11-25); an unknown or malformed value is 400.
pub(crate) const SUPPORTED_VERSIONS: &[&str] = &[legacy::PROTOCOL_VERSION, "2025-06-18", "2025-03-26"];

/// Checks the `MCP-Protocol-Version` of a session's message, if it has one.
///
/// # Errors
/// The error to answer with 400: a version not in [`SUPPORTED_VERSIONS`].
pub(crate) fn check_version(header: Option<&[u8]>) -> Result<(), RpcError> {
    let Some(version) = header else { return Ok(()) };
    let version = hints::text(version).unwrap_or("");
    if SUPPORTED_VERSIONS.contains(&version) {
        return Ok(());
    }
    Err(RpcError::invalid_request(format!(
        "Bad Request: unsupported MCP-Protocol-Version {version:?}; supported: {}",
        SUPPORTED_VERSIONS.join(", ")
    )))
}

/// Requests whose answer may take long or come with related messages: answered on an SSE
/// stream. Others are answered as plain JSON (2025-11-25: servers SHOULD NOT upgrade a
/// `tasks/get` to SSE). A `tools/call` with `params.task` is one of the others: its answer
/// is the `CreateTaskResult` (or an error) once the task is committed, and nothing goes on
/// its stream before it (the work starts after it, and the task's messages go to the
/// standalone stream or to a `tasks/result`), so a stream would carry one event and its
/// priming event at the cost of a stream kept for resumption. The transport lets the server
/// answer any request either way (2025-11-25: the client MUST support both).
pub(crate) fn answers_on_stream(request: &Request) -> bool {
    match request.method.as_str() {
        method::TOOLS_CALL => request.params.as_ref().and_then(|params| params.get("task")).is_none_or(Value::is_null),
        method => matches!(method, method::TASKS_RESULT | method::PROMPTS_GET | method::COMPLETION_COMPLETE | super::TASKS_STREAM),
    }
}
