//! Incoming message → method handler. Lifecycle rules live here: `initialize` first
//! (only `ping` before it), one request at a time per handler task, `notifications/cancelled`
//! stops in-flight requests and suppresses their response.
//!
//! There is one protocol era so far (2025-11-25); the Modern era's codec will be chosen
//! here and nowhere else.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;

use mcp_tasks_protocol::jsonrpc::{self, Incoming, Notification, Request, RpcError};
use mcp_tasks_protocol::legacy::{self, CancelledNotificationParams, InitializeParams, InitializeResult, method};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::methods;
use crate::session::Session;

/// Handles one line (or body) received from the client.
pub(crate) fn handle_text(session: &Arc<Session>, text: &str) {
    match jsonrpc::parse(text) {
        // A broken *response* from the peer is logged, never answered: answering errors
        // with errors could make two peers bounce them forever.
        Err(failure) if looks_like_response(text) => {
            tracing::warn!(error = %failure.error, "ignoring a malformed response from the client");
        }
        Err(failure) => session.reject(failure.id.as_ref(), &failure.error),
        Ok(incoming) => handle_incoming(session, incoming),
    }
}

/// Handles one parsed message.
pub(crate) fn handle_incoming(session: &Arc<Session>, incoming: Incoming) {
    match incoming {
        Incoming::Request(request) => handle_request(session, request),
        Incoming::Notification(notification) => handle_notification(session, &notification),
        Incoming::Response(response) => session.on_response(response),
    }
}

fn looks_like_response(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|value| {
        value.get("method").is_none() && (value.get("result").is_some() || value.get("error").is_some())
    })
}

/// `initialize` and `ping` are answered in order, at once; every other request runs in its
/// own Tokio task so that a blocking `tasks/result` holds up nothing else.
fn handle_request(session: &Arc<Session>, request: Request) {
    match request.method.as_str() {
        method::INITIALIZE => {
            let reply = std::panic::catch_unwind(AssertUnwindSafe(|| initialize(session, request.params)))
                .unwrap_or_else(|panic| Err(crashed(method::INITIALIZE, panic.as_ref())));
            session.respond(&request.id, reply);
        }
        method::PING => session.respond(&request.id, Ok(json!({}))),
        _ if !session.is_initialized() => session.respond(
            &request.id,
            Err(RpcError::invalid_request(format!(
                "Received '{}' before initialization: send 'initialize' first",
                request.method
            ))),
        ),
        _ => {
            let session = Arc::clone(session);
            tokio::spawn(async move {
                let cancel = session.begin(&request.id);
                // A panicking handler still gets its request answered (and ended): the
                // client would otherwise wait for ever.
                let reply = AssertUnwindSafe(route(&session, &request, cancel.clone()))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| Some(Err(crashed(&request.method, panic.as_ref()))));
                session.end(&request.id);
                // A cancelled request gets no response (2025-11-25 cancellation).
                if let Some(reply) = reply.filter(|_| !cancel.is_cancelled()) {
                    session.respond(&request.id, reply);
                }
            });
        }
    }
}

/// The `-32603` answer to a request whose handler panicked; the panic is logged. The
/// session state it may have left behind is a few maps behind mutexes that ignore poisoning.
fn crashed(method: &str, panic: &(dyn Any + Send)) -> RpcError {
    let what = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-text panic payload");
    tracing::error!(method, panic = what, "a request handler panicked");
    RpcError::internal(format!("Internal error: the handler of {method} crashed"))
}

/// Routes an initialized session's request. `None`: the handler answered by itself.
async fn route(
    session: &Arc<Session>,
    request: &Request,
    cancel: CancellationToken,
) -> Option<Result<Value, RpcError>> {
    let params = request.params.clone();
    let reply = match request.method.as_str() {
        method::TOOLS_LIST => methods::tools::list(session, params),
        method::TOOLS_CALL => match parse_value(method::TOOLS_CALL, params) {
            Ok(params) => return methods::tools::call(session, &request.id, params, cancel).await,
            Err(err) => Err(err),
        },
        method::TASKS_GET => async { methods::tasks::get(session, parse_value(method::TASKS_GET, params)?).await }.await,
        method::TASKS_RESULT => {
            async { methods::tasks::result(session, &request.id, parse_value(method::TASKS_RESULT, params)?, cancel).await }.await
        }
        method::TASKS_LIST => {
            let params = params.unwrap_or_else(|| json!({}));
            async { methods::tasks::list(session, parse_value(method::TASKS_LIST, Some(params))?).await }.await
        }
        method::TASKS_CANCEL => {
            async { methods::tasks::cancel(session, parse_value(method::TASKS_CANCEL, params)?).await }.await
        }
        other => crate::catalog::route(session, other, params)
            .await
            .unwrap_or_else(|| Err(RpcError::method_not_found(format!("Method not found: {other}")))),
    };
    Some(reply)
}

fn handle_notification(session: &Arc<Session>, notification: &Notification) {
    match notification.method.as_str() {
        method::INITIALIZED => {}
        method::NOTIFY_CANCELLED => {
            let params = notification.params.clone().unwrap_or(Value::Null);
            match serde_json::from_value::<CancelledNotificationParams>(params) {
                Ok(CancelledNotificationParams { request_id: Some(id), .. }) => session.cancel_request(&id),
                // Invalid cancellation notifications SHOULD be ignored.
                _ => tracing::debug!("ignoring a notifications/cancelled without a usable requestId"),
            }
        }
        other => tracing::debug!(method = other, "ignoring notification"),
    }
}

fn initialize(session: &Session, params: Option<Value>) -> Result<Value, RpcError> {
    let params: InitializeParams = parse_value(method::INITIALIZE, params)?;
    if !session.mark_initialized(params.capabilities) {
        return Err(RpcError::invalid_request("The session is already initialized"));
    }
    if params.protocol_version != legacy::PROTOCOL_VERSION {
        tracing::info!(requested = %params.protocol_version, "client asked for another protocol version; offering 2025-11-25");
    }
    let inner = &session.server.inner;
    let result = InitializeResult {
        protocol_version: legacy::PROTOCOL_VERSION.to_owned(),
        capabilities: session.server.capabilities(),
        server_info: inner.info.clone(),
        instructions: inner.instructions.clone(),
    };
    tracing::info!(client = %params.client_info.name, principal = %session.principal, "session initialized");
    serde_json::to_value(result).map_err(|err| RpcError::internal(err.to_string()))
}

/// Parses required params.
///
/// # Errors
/// `-32602` naming the method and what serde found wrong.
pub(crate) fn parse_value<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, RpcError> {
    let params = params.ok_or_else(|| RpcError::invalid_params(format!("Invalid params for {method}: params are required")))?;
    serde_json::from_value(params).map_err(|err| RpcError::invalid_params(format!("Invalid params for {method}: {err}")))
}
