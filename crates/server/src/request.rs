//! The serving of one request, whatever its era: its [`Work`] (run by the transport where it
//! answers), the context its handler gets, its span, its registration in flight (so that
//! `notifications/cancelled` stops it), its answer, and the `-32603` of a handler that
//! panicked. Each era's codec builds its requests' work here ([`request_work`]); the router
//! (`dispatch`) hands each request to its era's codec, so the arrows go one way:
//! router → codecs → this file.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::jsonrpc::{Request, RpcError};
use serde_json::Value;
use tracing::Instrument as _;

use crate::connection::{Connection, Payload};
use crate::context::{ClientCaps, RequestContext};

/// What a request handler returns: the reply to send, or `None` when it has answered by
/// itself (a task's `CreateTaskResult` leaves before its work starts).
pub(crate) type Reply = Option<Result<Payload, RpcError>>;

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
