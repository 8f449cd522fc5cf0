//! Incoming message → era → codec. The era of each request is decided here, once, and this
//! file holds the only `match` on it; the codec of that era serves the request. Responses
//! from the client go to the connection, which routes them to the request that awaits them.
//!
//! Each connection is a [`Peer`]: the transport's [`Connection`] and the state each era's
//! codec keeps on it (2025-11-25: the session `initialize` creates).

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use tracing::Instrument as _;
use mcp_tasks_protocol::era::{Era, per_request_version};
use mcp_tasks_protocol::modern;
use mcp_tasks_protocol::jsonrpc::{self, Incoming, Request, RpcError};
use serde_json::Value;

use crate::codec;
use crate::connection::{Connection, Payload};
use crate::context::{ClientCaps, RequestContext};

/// What a request handler returns: the reply to send, or `None` when it has answered by
/// itself (a task's `CreateTaskResult` leaves before its work starts).
pub(crate) type Reply = Option<Result<Payload, RpcError>>;

/// One client connection, with what each era's codec keeps on it.
pub struct Peer {
    /// The transport side: principal, routes, requests in flight.
    pub(crate) conn: Arc<Connection>,
    /// The 2025-11-25 session, once `initialize` has created it.
    legacy: codec::legacy::Slot,
}

impl Peer {
    /// A peer for a new connection.
    pub fn new(conn: Connection) -> Arc<Peer> {
        Arc::new(Peer { conn: Arc::new(conn), legacy: codec::legacy::Slot::new() })
    }

    /// The transport side of the peer: principal, routes, requests in flight.
    pub fn conn(&self) -> &Arc<Connection> {
        &self.conn
    }

    /// The state of the peer's 2025-11-25 session for its stored record, once initialized.
    pub fn legacy_state(&self) -> Option<Value> {
        codec::legacy::stored_state(&self.legacy)
    }

    /// Restores a stored 2025-11-25 session on this (new) peer.
    ///
    /// # Errors
    /// What is wrong with the stored `state`.
    pub fn restore_legacy(&self, state: &Value, created: Vec<mcp_tasks_engine::TaskId>) -> Result<(), String> {
        codec::legacy::restore(&self.legacy, &self.conn, state, created)
    }

    /// Takes over what another replica changed of the peer's stored 2025-11-25 session.
    ///
    /// # Errors
    /// What is wrong with the stored `state`.
    pub fn refresh_legacy(&self, state: &Value, created: Vec<mcp_tasks_engine::TaskId>) -> Result<(), String> {
        codec::legacy::refresh(&self.legacy, state, created)
    }

    /// Handles one line (or body) received from the client.
    pub fn handle_text(&self, text: &str) {
        match jsonrpc::parse(text) {
            // A broken *response* from the peer is logged, never answered: answering errors
            // with errors could make two peers bounce them forever.
            Err(failure) if looks_like_response(text) => {
                tracing::warn!(error = %failure.error, "ignoring a malformed response from the client");
            }
            Err(failure) => self.conn.reject(failure.id.as_ref(), &failure.error),
            Ok(incoming) => self.handle_incoming(incoming),
        }
    }

    /// Takes one request: answered at once, or its [`Work`] for the caller to run.
    pub fn request(&self, request: Request) -> Work {
        match era_of(&request) {
            Era::Legacy => codec::legacy::request(&self.legacy, &self.conn, request),
            Era::Modern => codec::modern::request(&self.conn, request),
        }
    }

    /// Handles one parsed message; a request's work runs in a Tokio task of its own.
    pub fn handle_incoming(&self, incoming: Incoming) {
        match incoming {
            Incoming::Request(request) => self.request(request).spawn(),
            Incoming::Notification(notification) => codec::legacy::notification(&self.conn, &notification),
            Incoming::Response(response) => self.conn.on_response(response),
        }
    }
}

/// The era a request speaks, decided per message (2026-07-28 versioning, "Backward
/// Compatibility"): a request that names its revision in its own `_meta`, and
/// `server/discover` (the probe a 2026-07-28 client sends first), are 2026-07-28 and served
/// statelessly; `initialize` (without that `_meta`) selects 2025-11-25, whatever version it
/// names, for the connection (or HTTP session) it opens; anything else is 2025-11-25. Both eras are served
/// on one connection at once.
fn era_of(request: &Request) -> Era {
    if per_request_version(request.params.as_ref()).is_some() {
        // Even `initialize`: a request that names its revision per request is not a
        // 2025-11-25 handshake (and `initialize` is an unknown method in 2026-07-28).
        Era::Modern
    } else if codec::legacy::opens_session(request) {
        Era::Legacy
    } else if request.method == modern::method::SERVER_DISCOVER {
        Era::Modern
    } else {
        Era::Legacy
    }
}

/// Whether `request` is served statelessly, on no session (a 2026-07-28 request): the
/// HTTP transport then gives it a connection of its own.
pub fn is_stateless(request: &Request) -> bool {
    match era_of(request) {
        Era::Modern => true,
        Era::Legacy => false,
    }
}

fn looks_like_response(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|value| {
        value.get("method").is_none() && (value.get("result").is_some() || value.get("error").is_some())
    })
}

/// The work of one request, run by the transport in the task that answers the request
/// (the HTTP transport does): a Tokio task of its own would cost a spawn (a move of the
/// work's future into its cell), a wake-up on another thread and a hand-off of the reply,
/// for every request. Whatever is left of it when it is dropped (the answer left as a
/// stream while the work goes on, or its client went away and the request was cancelled)
/// goes on in a Tokio task of its own, as if it had been spawned from the start.
pub struct Work(Option<Pin<Box<dyn Future<Output = ()> + Send>>>);

impl Work {
    pub fn new(work: impl Future<Output = ()> + Send + 'static) -> Self {
        Self(Some(Box::pin(work)))
    }

    /// No work (a request answered at once).
    pub(crate) fn none() -> Self {
        Self(None)
    }

    pub fn is_running(&self) -> bool {
        self.0.is_some()
    }

    /// Runs the work to its end (then [`Work::is_running`] is false).
    pub async fn run(&mut self) {
        if let Some(work) = self.0.as_mut() {
            work.await;
            self.0 = None;
        }
    }

    /// Polls the work once, with the calling task's waker.
    pub async fn step(&mut self) {
        std::future::poll_fn(|cx| {
            if let Some(work) = self.0.as_mut()
                && work.as_mut().poll(cx).is_ready()
            {
                self.0 = None;
            }
            std::task::Poll::Ready(())
        })
        .await;
    }

    /// Awaits `until` while the work runs meanwhile.
    pub async fn alongside<T>(&mut self, until: impl Future<Output = T>) -> T {
        tokio::pin!(until);
        loop {
            tokio::select! {
                biased;
                out = &mut until => return out,
                () = self.run(), if self.is_running() => {}
            }
        }
    }

    /// Runs what is left in a Tokio task of its own: what dropping it does, said where the
    /// caller means it.
    pub fn spawn(self) {
        drop(self);
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        if let Some(work) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(work);
        }
    }
}

/// The work of serving `request`, for the caller to run (see [`Work`]): registers it as in flight at
/// once (so that `notifications/cancelled` stops it), runs `handle` with the request's
/// context, and sends the reply unless the request was cancelled meanwhile (a cancelled
/// request gets no response). A handler that panics still gets its request answered
/// (`-32603`) and ended: the client would otherwise wait for ever.
pub(crate) fn request_work<F, Fut>(
    conn: &Arc<Connection>,
    request: Request,
    era: Era,
    client: ClientCaps,
    handle: F,
) -> impl Future<Output = ()> + Send + 'static
where
    F: FnOnce(RequestContext, Request) -> Fut + Send + 'static,
    Fut: Future<Output = Reply> + Send + 'static,
{
    let conn = Arc::clone(conn);
    // In flight from the moment it is read, so that a `notifications/cancelled` read after
    // it always finds it.
    let cancel = conn.begin(&request.id);
    // The request's span: what it is and for whom, never its arguments (nor any token).
    let span = tracing::info_span!(
        "request",
        method = %request.method,
        era = %era,
        id = %request.id,
        principal = %conn.principal,
        trace_id = tracing::field::Empty,
    );
    let meta = request.params.as_ref().and_then(|params| params.get("_meta")).and_then(Value::as_object);
    if let Some(trace) = crate::ops::call::trace_context(meta) {
        trace.adopt(&span);
    }
    let served = async move {
        let id = request.id.clone();
        let ctx = RequestContext {
            era,
            principal: conn.principal.clone(),
            client,
            id: id.clone(),
            cancel: cancel.clone(),
            conn: Arc::clone(&conn),
        };
        let method = request.method.clone();
        let reply = AssertUnwindSafe(handle(ctx, request))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| Some(Err(crashed(&method, panic.as_ref()))));
        conn.end(&id);
        match reply {
            _ if cancel.is_cancelled() => conn.abandon(&id),
            Some(reply) => conn.respond(&id, reply),
            None => {}
        }
    };
    served.instrument(span)
}

/// The `-32603` answer to a request whose handler panicked; the panic is logged. The state
/// it may have left behind is a few maps behind mutexes that ignore poisoning.
pub(crate) fn crashed(method: &str, panic: &(dyn Any + Send)) -> RpcError {
    let what = mcp_tasks_engine::panic_message(panic).unwrap_or("a non-text panic payload");
    tracing::error!(method, panic = what, "a request handler panicked");
    RpcError::internal(format!("Internal error: the handler of {method} crashed"))
}
