//! Requests served on no session (2026-07-28) over Streamable HTTP: POST only. The router
//! hands each one over as an exchange of its own, checked (its headers against its body,
//! `-32020`; its `_meta` and revision, `-32602` or `-32022`: answered 400 here). The answer is one
//! JSON body, or an SSE stream when the work sends notifications first (progress, log
//! messages); an error's HTTP status follows the revision (400, 404 for an unknown method).
//! Closing the response cancels the request (2026-07-28: a disconnect is cancellation).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_tasks_engine::Principal;
use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::jsonrpc::{self, RpcError};
use mcp_tasks_server::transport::{Connection, Exchange, Message, Outbound, Route, Started, Work};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{App, json, json_message};

/// Serves one 2026-07-28 request on an exchange of its own; `streams`: the client accepts an
/// SSE answer.
pub(super) async fn serve(app: &App, streams: bool, principal: Principal, exchange: Exchange) -> Response {
    if let Some((error, status)) = exchange.refusal() {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
        return json(status, &jsonrpc::error_response(Some(exchange.id()), error));
    }
    let mut slot = None;
    if exchange.listens() {
        if !streams {
            let error = RpcError::new(
                RpcError::INVALID_REQUEST,
                format!("{} answers with an SSE stream: send Accept: text/event-stream", exchange.method()),
            );
            return json(StatusCode::NOT_ACCEPTABLE, &jsonrpc::error_response(Some(exchange.id()), &error));
        }
        let max = app.options.max_listens_per_principal;
        match app.listens.take(&principal, max) {
            Ok(taken) => slot = Some(taken),
            Err(open) => {
                return super::limit_refusal(Some(exchange.id()), "max_listens_per_principal", max, open, format!(
                    "Too many streams: each principal may hold at most {max} subscriptions/listen and tasks/stream \
                     streams open at once (max_listens_per_principal) and you hold {open}. Close one, or \
                     listen to several tasks on one stream."
                ));
            }
        }
    }
    let Started { conn, outgoing, work, error_status } = exchange.start(principal);
    let cancel_on_close = AbortOnDrop(conn, slot);
    respond(outgoing, streams, cancel_on_close, work, app.options.max_stream_events, error_status).await
}

/// The answer: the reply alone as JSON (with its status), or, when notifications come
/// first and the client takes SSE, a stream of them ending with the reply. The request's
/// `work` runs here until then.
async fn respond(
    mut outgoing: mpsc::UnboundedReceiver<Outbound>,
    streams: bool,
    guard: AbortOnDrop,
    mut work: Work,
    max_events: usize,
    error_status: fn(&RpcError) -> u16,
) -> Response {
    let mut early = Vec::new();
    loop {
        let next = tokio::select! {
            biased;
            next = outgoing.recv() => next,
            () = work.run(), if work.is_running() => continue,
        };
        let Some(Outbound { message, route }) = next else { break };
        if matches!(route, Route::Reply(_)) && (early.is_empty() || !streams) {
            return match message {
                // A success reply is written from its parts.
                Message::Reply(..) => json_message(StatusCode::OK, &message),
                message => {
                    let message = message.into_value();
                    json(status_of(&message, error_status), &message)
                }
            };
        }
        let message = message.into_value();
        match route {
            Route::Reply(_) => {
                early.push(message);
                return sse(early, None, guard);
            }
            Route::NoReply(_) => return StatusCode::ACCEPTED.into_response(),
            Route::Related(_) | Route::General if streams => {
                early.push(message);
                return sse(early, Some(bounded(outgoing, max_events)), guard);
            }
            // Without SSE, notifications before the reply cannot be delivered.
            Route::Related(_) | Route::General => {}
        }
    }
    json(StatusCode::INTERNAL_SERVER_ERROR, &jsonrpc::error_response(None, &RpcError::internal("the request got no answer")))
}

/// An SSE response with `first` and then every message of `rest` up to the reply. Each
/// event is `data: <message>`: this revision has no event ids and no resumption. The
/// stream counts in `mcp_tasks_http_streams_open` while it is open.
fn sse(first: Vec<Value>, rest: Option<mpsc::Receiver<Outbound>>, guard: AbortOnDrop) -> Response {
    let open = guard.0.server().metrics().stream_opened(Era::Modern);
    let state = (first.into_iter(), rest, (guard, open), false);
    let stream = futures_util::stream::unfold(state, |(mut first, mut rest, guard, done)| async move {
        if done {
            return None;
        }
        let (message, last) = match first.next() {
            Some(message) => {
                let last = message.get("method").is_none();
                (message, last)
            }
            None => {
                let outbound = rest.as_mut()?.recv().await?;
                let last = matches!(outbound.route, Route::Reply(_) | Route::NoReply(_));
                if matches!(outbound.route, Route::NoReply(_)) {
                    return None;
                }
                (outbound.message.into_value(), last)
            }
        };
        let frame = Bytes::from(format!("data: {message}\n\n"));
        Some((Ok::<_, std::convert::Infallible>(frame), (first, rest, guard, last)))
    });
    let headers = [
        (header::CONTENT_TYPE, "text/event-stream"),
        (header::CACHE_CONTROL, "no-cache"),
        (header::HeaderName::from_static("x-accel-buffering"), "no"),
    ];
    (StatusCode::OK, headers, Body::from_stream(stream)).into_response()
}

/// The request's outgoing messages through a queue of `max` for its stream: a client that
/// falls that far behind has its stream ended, which cancels the request as its
/// disconnecting would (2026-07-28), instead of the messages piling up unread.
fn bounded(mut outgoing: mpsc::UnboundedReceiver<Outbound>, max: usize) -> mpsc::Receiver<Outbound> {
    let (tx, rx) = mpsc::channel(max.max(1));
    tokio::spawn(async move {
        while let Some(outbound) = outgoing.recv().await {
            match tx.try_send(outbound) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::warn!(max, "ending a 2026-07-28 SSE stream whose client does not read it (max_stream_events)");
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        }
    });
    rx
}

/// The HTTP status of a reply message, as its era's `error_status` says of an error (2026-07-28:
/// 400 for header, capability, version and `_meta` errors; 404 for an unknown method); 200
/// for a result.
fn status_of(message: &Value, error_status: fn(&RpcError) -> u16) -> StatusCode {
    let Some(error) = message.get("error") else { return StatusCode::OK };
    let error = RpcError {
        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: String::new(),
        data: error.get("data").cloned(),
    };
    StatusCode::from_u16(error_status(&error)).unwrap_or(StatusCode::OK)
}

/// Open `subscriptions/listen` streams by principal.
#[derive(Clone, Default)]
pub(super) struct Listens(Arc<std::sync::Mutex<std::collections::HashMap<Principal, usize>>>);

impl Listens {
    /// One more stream of `principal`, if it holds fewer than `max`; else how many it holds.
    fn take(&self, principal: &Principal, max: usize) -> Result<ListenSlot, usize> {
        let mut open = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let held = open.entry(principal.clone()).or_insert(0);
        if *held >= max {
            return Err(*held);
        }
        *held += 1;
        Ok(ListenSlot { listens: self.clone(), principal: principal.clone() })
    }
}

/// A `subscriptions/listen` stream counted against its principal while it is open.
struct ListenSlot {
    listens: Listens,
    principal: Principal,
}

impl Drop for ListenSlot {
    fn drop(&mut self) {
        let mut open = self.listens.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(held) = open.get_mut(&self.principal) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                open.remove(&self.principal);
            }
        }
    }
}

/// Cancels the request when the response (or its stream) is dropped: the client closed it;
/// a listen stream's slot goes with it.
struct AbortOnDrop(Arc<Connection>, Option<ListenSlot>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
        // The stream is over: its principal may open another.
        drop(self.1.take());
    }
}
