//! Logging: [`log_message`], which a tool uses to send `notifications/message` to its caller
//! (the level filter a client sets is its era's: 2025-11-25 `logging/setLevel`).

use mcp_tasks_engine::Context;
use mcp_tasks_protocol::mcp::method;
use serde_json::{Value, json};

/// Sends a `notifications/message` about the current call: `{"level": level, "data": data}`.
///
/// `level` is one of the RFC 5424 names the spec uses: `debug`, `info`, `notice`, `warning`,
/// `error`, `critical`, `alert`, `emergency`. The message goes on the call's own stream,
/// before the call's response, and only if the client's `logging/setLevel` (if any) lets
/// that level through; an unknown level is never sent. Inside a task it is dropped (task
/// messages to the client are not wired yet, see [`Context::notify`]).
pub fn log_message(ctx: &Context, level: &str, data: Value) {
    ctx.notify(method::NOTIFY_MESSAGE, json!({ "level": level, "data": data }));
}

/// The level of a `notifications/message` (RFC 5424 severities, lowest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

