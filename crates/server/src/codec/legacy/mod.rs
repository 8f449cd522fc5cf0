//! The 2025-11-25 ("Legacy") codec: the `initialize` lifecycle (only `initialize` and `ping`
//! before it; the state it creates is a [`LegacySession`] kept in the connection's [`Slot`]),
//! the method table of the era, and its methods:
//!
//! - `tools`: `tools/list` (each tool with `execution.taskSupport`) and `tools/call` (the
//!   client decides a task with `params.task`);
//! - `tasks`: `tasks/get`, `tasks/result` (blocks; delivers input requests on its stream),
//!   `tasks/list` and `tasks/cancel` (cancelled before answering);
//! - `logging/setLevel` and `resources/subscribe|unsubscribe`, which only this era has;
//! - `session`: the session state, task notifications, input delivery;
//! - `wire`: the `Task` shape, `tasks/result` replay, cursors, capabilities;
//! - `subscriptions`: who subscribed to which resource (kept in the era's [`State`]);
//! - `http`: the era's Streamable HTTP rules (versions a session accepts, which requests
//!   answer on a stream of their own).
//!
//! Methods both eras share (resources, prompts, completion) go to `crate::catalog`.

pub(crate) mod http;
mod session;
mod subscriptions;
mod tasks;
mod tools;
mod wire;

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use mcp_tasks_engine::{ClientLink, Context};
use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::jsonrpc::{Notification, Request, RpcError};
use mcp_tasks_protocol::legacy::{self, InitializeParams, InitializeResult, method};
use mcp_tasks_protocol::mcp::CancelledNotificationParams;
use serde::Deserialize;
use serde_json::{Value, json};

pub(crate) use session::LegacySession;
pub(crate) use subscriptions::Subscriptions;

use crate::catalog::{LogLevel, UriParams};
use super::parse_value;
use crate::connection::{Connection, Payload};
use crate::context::RequestContext;
use crate::request::{self, Reply, Work};

/// What the era keeps on the server, beside the codec that uses it.
#[derive(Default)]
pub(crate) struct State {
    /// `resources/subscribe`: which sessions want which URIs.
    pub(crate) subscriptions: Subscriptions,
}

/// Where a connection keeps its Legacy session once `initialize` has created it.
pub(crate) type Slot = OnceLock<Arc<LegacySession>>;

/// Takes one request of the Legacy era. `initialize` and `ping` are answered in order, at
/// once; every other request is work for the caller to run (in a Tokio task of its own, or
/// in the task that answers it), so that a blocking `tasks/result` holds up nothing else.
pub(crate) fn request(slot: &Slot, conn: &Arc<Connection>, request: Request) -> Work {
    match request.method.as_str() {
        method::INITIALIZE => {
            let reply = std::panic::catch_unwind(AssertUnwindSafe(|| initialize(slot, conn, request.params)))
                .unwrap_or_else(|panic| Err(request::crashed(method::INITIALIZE, panic.as_ref())));
            conn.respond(&request.id, reply);
            Work::none()
        }
        method::PING => {
            conn.respond(&request.id, Ok(json!({})));
            Work::none()
        }
        _ => match slot.get() {
            None => {
                conn.reject(
                    Some(&request.id),
                    &RpcError::invalid_request(format!(
                        "Received '{}' before initialization: send 'initialize' first",
                        request.method
                    )),
                );
                Work::none()
            }
            Some(session) => {
                let session = Arc::clone(session);
                Work::new(request::request_work(conn, request, Era::Legacy, session.client(), move |ctx, request| async move {
                    // Boxed: the method table's future is the size of its largest handler's
                    // (~3.9 KB), and the request's future around it is moved whole a few times
                    // before it runs (~1.5 k instructions a block lifecycle).
                    Box::pin(route(&session, &ctx, request)).await
                }))
            }
        },
    }
}

/// The state of the connection's Legacy session for its stored record, once `initialize`
/// has created it.
pub(crate) fn stored_state(slot: &Slot) -> Option<Value> {
    slot.get().map(|session| session.stored_state())
}

/// Restores a stored session (its `state` and the tasks it `created`) on `conn`, as if
/// `initialize` had run on it, and starts forwarding its tasks' changes.
///
/// # Errors
/// What is wrong with `state`, or the connection has a session already.
pub(crate) fn restore(slot: &Slot, conn: &Arc<Connection>, state: &Value, created: Vec<mcp_tasks_engine::TaskId>) -> Result<(), String> {
    let session = LegacySession::restore(Arc::clone(conn), state, created)?;
    slot.set(Arc::clone(&session)).map_err(|_| "the connection has a session already".to_owned())?;
    session.start_forwarding();
    Ok(())
}

/// Takes over what another replica changed of the connection's stored session.
///
/// # Errors
/// What is wrong with `state`.
pub(crate) fn refresh(slot: &Slot, state: &Value, created: Vec<mcp_tasks_engine::TaskId>) -> Result<(), String> {
    slot.get().map_or(Ok(()), |session| session.refresh(state, created))
}

/// Whether `request` opens a 2025-11-25 session: `initialize`.
pub(crate) fn opens_session(request: &Request) -> bool {
    request.method == method::INITIALIZE
}

/// Handles a notification of the Legacy era.
pub(crate) fn notification(conn: &Connection, notification: &Notification) {
    match notification.method.as_str() {
        method::INITIALIZED => {}
        method::NOTIFY_CANCELLED => {
            let params = notification.params.clone().unwrap_or(Value::Null);
            match serde_json::from_value::<CancelledNotificationParams>(params) {
                Ok(CancelledNotificationParams { request_id: Some(id), .. }) => conn.cancel_request(&id),
                // Invalid cancellation notifications SHOULD be ignored.
                _ => tracing::debug!("ignoring a notifications/cancelled without a usable requestId"),
            }
        }
        other => tracing::debug!(method = other, "ignoring notification"),
    }
}

/// `tasks/stream` in a 2025-11-25 session: the method of the draft SEP-2694 (written against
/// 2026-07-28), which nothing in 2025-11-25 forbids a server to serve; its events come as
/// `notifications/tasks/event` on the request's stream, each with the related-task `_meta`.
pub(crate) const TASKS_STREAM: &str = "tasks/stream";
const STREAM_WIRE: crate::ops::stream::Wire =
    crate::ops::stream::Wire { notification: "notifications/tasks/event", related_meta: legacy::RELATED_TASK };

/// The method table of an initialized session.
async fn route(session: &Arc<LegacySession>, ctx: &RequestContext, request: Request) -> Reply {
    let params = request.params;
    let name = request.method.as_str();
    let catalog = &ctx.server().inner.catalog;
    if matches!(name, method::TASKS_GET | method::TASKS_LIST)
        && let Err(refused) =
            ctx.server().inner.polls.check(&ctx.principal, name, crate::codec::task_id_of(params.as_ref()))
    {
        return Some(Err(refused));
    }
    let reply = match name {
        method::TOOLS_LIST => tools::list(ctx, params),
        method::TOOLS_CALL => match parse_value(name, params) {
            Ok(params) => return tools::call(session, ctx, params).await,
            Err(err) => Err(err),
        },
        method::TASKS_GET => return Some(async { tasks::get(session, ctx, parse_value(name, params)?).await }.await),
        method::TASKS_RESULT => return Some(async { tasks::result(session, ctx, parse_value(name, params)?).await }.await),
        method::TASKS_LIST => {
            let params = params.unwrap_or_else(|| json!({}));
            async { tasks::list(session, ctx, parse_value(name, Some(params))?).await }.await
        }
        method::TASKS_CANCEL => async { tasks::cancel(ctx, parse_value(name, params)?).await }.await,
        TASKS_STREAM => Box::pin(crate::ops::stream::stream(ctx, params, &STREAM_WIRE)).await,
        method::LOGGING_SET_LEVEL => match parse_value::<SetLevelParams>(name, params) {
            Ok(params) => {
                session.set_log_level(params.level).await;
                Ok(json!({}))
            }
            Err(err) => Err(err),
        },
        method::RESOURCES_SUBSCRIBE if catalog.has_resources() => {
            async {
                let params = parse_value::<UriParams>(name, params)?;
                if !catalog.serves(&params.uri) {
                    return Err(crate::catalog::resource_not_found(&params.uri));
                }
                if let Some(upstream) = &catalog.upstream {
                    upstream.subscribe(&params.uri).await?;
                }
                ctx.server().inner.codecs.legacy.subscriptions.subscribe(session, &params.uri);
                Ok(json!({}))
            }
            .await
        }
        method::RESOURCES_UNSUBSCRIBE if catalog.has_resources() => parse_value::<UriParams>(name, params).map(|params| {
            ctx.server().inner.codecs.legacy.subscriptions.unsubscribe(session, &params.uri);
            json!({})
        }),
        other => {
            let link: Arc<dyn ClientLink> =
                Arc::new(session::CallLink { session: Arc::clone(session), request: ctx.id.clone(), progress_token: None });
            crate::catalog::route(ctx.server(), other, params, Context::plain(ctx.cancel.clone(), Some(link)))
                .await
                .unwrap_or_else(|| Err(RpcError::method_not_found(format!("Method not found: {other}"))))
        }
    };
    Some(reply.map(Payload::from))
}

/// The `params` of `logging/setLevel`.
#[derive(Deserialize)]
struct SetLevelParams {
    level: LogLevel,
}


/// `initialize`: opens the session (once per connection) and declares what the server offers.
fn initialize(slot: &Slot, conn: &Arc<Connection>, params: Option<Value>) -> Result<Value, RpcError> {
    let params: InitializeParams = parse_value(method::INITIALIZE, params)?;
    let already = || RpcError::invalid_request("The session is already initialized");
    if slot.get().is_some() {
        return Err(already());
    }
    let session = LegacySession::new(Arc::clone(conn), params.capabilities);
    if slot.set(Arc::clone(&session)).is_err() {
        return Err(already());
    }
    session.start_forwarding();
    if params.protocol_version != legacy::PROTOCOL_VERSION {
        tracing::info!(requested = %params.protocol_version, "client asked for another protocol version; offering 2025-11-25");
    }
    let inner = &conn.server.inner;
    let result = InitializeResult {
        protocol_version: legacy::PROTOCOL_VERSION.to_owned(),
        capabilities: wire::capabilities(&conn.server),
        server_info: inner.info.clone(),
        instructions: inner.instructions.clone(),
    };
    conn.set_client_info(&params.client_info.name, &params.client_info.version);
    tracing::info!(client = %params.client_info.name, principal = %conn.principal, "session initialized");
    serde_json::to_value(result).map_err(|err| RpcError::internal(err.to_string()))
}
