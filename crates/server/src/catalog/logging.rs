//! Logging (2025-11-25 `server/utilities/logging`): `logging/setLevel`, and
//! [`log_message`], which a tool uses to send `notifications/message` to its caller.

use mcp_tasks_engine::Context;
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::legacy::method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::session::{LogLevel, Session};

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

/// The `params` of `logging/setLevel`.
#[derive(Deserialize)]
pub(crate) struct SetLevelParams {
    level: LogLevel,
}

/// `logging/setLevel`: from now on the session sends log messages at `level` and above.
pub(crate) fn set_level(session: &Session, params: SetLevelParams) -> Result<Value, RpcError> {
    session.set_log_level(params.level);
    Ok(json!({}))
}
