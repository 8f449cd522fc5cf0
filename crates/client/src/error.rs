//! What can go wrong talking to a server, each case saying what to do about it.

use mcp_tasks_protocol::jsonrpc::RpcError;
use serde_json::Value;

/// An error of the client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The URL could not be used.
    #[error("invalid server URL {url:?}: {reason} (give an http:// URL such as http://127.0.0.1:8765/mcp)")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// The connection failed or broke (server down, wrong port, network).
    #[error("cannot reach the server: {0} (check that it runs and that the URL is right)")]
    Transport(String),
    /// The server answered with an HTTP error status.
    #[error("the server answered HTTP {status}: {body}{}", http_hint(*status))]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The response body (often an id-less JSON-RPC error).
        body: String,
    },
    /// The server answered the request with a JSON-RPC error.
    #[error("the server refused the request: {message} (JSON-RPC error {code})")]
    Rpc {
        /// The JSON-RPC error code.
        code: i64,
        /// The error message.
        message: String,
        /// Extra data the server attached.
        data: Option<Value>,
    },
    /// The server broke the protocol (a malformed or unexpected message).
    #[error("protocol error: {0} (the server does not speak MCP as expected)")]
    Protocol(String),
    /// The SSE stream carrying an answer broke and could not be resumed with
    /// `Last-Event-ID`.
    #[error("the stream of {method} broke and could not be resumed: {reason}")]
    StreamLost {
        /// The method whose answer was lost.
        method: String,
        /// Why resumption failed.
        reason: String,
    },
    /// `call_tool_as_task` on a tool or server that does not run tools as tasks.
    #[error("tool {tool:?} cannot run as a task: {reason}; call it with call_tool instead")]
    TasksUnsupported {
        /// The tool.
        tool: String,
        /// Why not.
        reason: String,
    },
    /// Tool arguments that are not a JSON object.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// A tool the server does not list.
    #[error("the server has no tool {0:?} (list them with list_tools)")]
    UnknownTool(String),
    /// The task failed with a JSON-RPC error (a tool result with `isError` is not this: it
    /// is returned as a result).
    #[error("task {task_id} failed: {message} (JSON-RPC error {code})")]
    TaskFailed {
        /// The task.
        task_id: String,
        /// The error code the underlying request ended with.
        code: i64,
        /// Its message.
        message: String,
        /// Its data.
        data: Option<Value>,
    },
    /// The task was cancelled before it produced a result.
    #[error("task {task_id} was cancelled{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    TaskCancelled {
        /// The task.
        task_id: String,
        /// The server's status message.
        message: Option<String>,
    },
    /// The caller cancelled the call ([`crate::Client::call_tool_with`]); the server was
    /// sent `notifications/cancelled`.
    #[error("the call was cancelled")]
    CallCancelled,
    /// The client was closed while a call was under way.
    #[error("the client was closed")]
    Closed,
    /// 2026-07-28: a task was asked for, and the server answered the call at once (in this
    /// era the server decides); the result is here.
    #[error("tool {tool:?} answered at once instead of making a task (in MCP 2026-07-28 the server decides); use the result, or Client::call")]
    AnsweredInline {
        /// The tool.
        tool: String,
        /// Its result.
        result: Box<mcp_tasks_protocol::mcp::CallToolResult>,
    },
    /// A method the session's revision does not have.
    #[error("{what} does not exist in MCP 2026-07-28: {instead}")]
    NotInEra {
        /// The method.
        what: &'static str,
        /// What to do instead.
        instead: &'static str,
    },
    /// The server asked the client something (an input request) that no handler answered.
    #[error("the server asked {method} and the client could not answer: {message}")]
    InputUnanswered {
        /// What was asked.
        method: String,
        /// The handler's error.
        message: String,
    },
    /// The stdio server could not be started.
    #[error("cannot start the server {program:?}: {reason} (check the command and that the program is on PATH)")]
    Spawn {
        /// The program.
        program: String,
        /// Why it failed.
        reason: String,
    },
    /// The stdio server's output ended (it exited or closed its stdout).
    #[error("the stdio server closed its output{}{}", status.as_deref().map(|s| format!(" ({s})")).unwrap_or_default(), said(stderr))]
    ServerExited {
        /// How it ended, when known.
        status: Option<String>,
        /// Its last lines on stderr, when the client kept them instead of showing them
        /// ([`ClientBuilder::quiet_server`](crate::ClientBuilder::quiet_server)).
        stderr: Vec<String>,
    },
}

/// A quiet server's last lines on stderr, for its error.
fn said(stderr: &[String]) -> String {
    if stderr.is_empty() {
        return String::new();
    }
    format!("; its last lines on stderr:\n  {}", stderr.join("\n  "))
}

fn http_hint(status: u16) -> &'static str {
    match status {
        401 => " (the server wants a bearer token: pass one to connect_http)",
        403 => " (the server refused this Host, Origin or token)",
        404 => " (the session ended or the URL is wrong: connect again)",
        406 | 415 => " (the server rejected the request's media types)",
        _ => "",
    }
}

impl From<RpcError> for ClientError {
    fn from(error: RpcError) -> ClientError {
        ClientError::Rpc { code: error.code, message: error.message, data: error.data }
    }
}
