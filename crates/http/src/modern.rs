//! 2026-07-28 requests over Streamable HTTP: POST only, no session. Each request is served
//! on a connection of its own, after its headers are checked against its body
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`: `-32020`, 400) and its `_meta` and
//! revision against what the server serves (`-32602` or `-32022`, 400). The answer is one
//! JSON body, or an SSE stream when the work sends notifications first (progress, log
//! messages); an error's HTTP status follows the revision (400, 404 for an unknown method).
//! Closing the response cancels the request (2026-07-28: a disconnect is cancellation).

use std::borrow::Cow;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use mcp_tasks_engine::Principal;
use mcp_tasks_protocol::jsonrpc::{self, Request, RpcError};
use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::mcp::method;
use mcp_tasks_protocol::modern::{self, HEADER_MISMATCH};
use serde_json::Value;
use tokio::sync::mpsc;

use mcp_tasks_server::Server;
use mcp_tasks_server::transport::{self, Connection, Listing, Message, Outbound, Route, Work};

use super::{App, json, json_message, names};

/// Serves one 2026-07-28 request; `streams`: the client accepts an SSE answer.
pub(super) async fn serve(app: &App, headers: &HeaderMap, streams: bool, principal: Principal, request: Request) -> Response {
    let checked = check_headers(headers, &request)
        .and_then(|()| check_param_headers(&app.server, headers, &request))
        .and_then(|()| transport::modern_check(&request));
    let meta = match checked {
        Ok(meta) => meta,
        Err(error) => return answer_error(&request, &error),
    };
    let mut slot = None;
    if request.method == modern::method::SUBSCRIPTIONS_LISTEN {
        if !streams {
            let error = RpcError::new(
                RpcError::INVALID_REQUEST,
                "subscriptions/listen answers with an SSE stream: send Accept: text/event-stream".to_owned(),
            );
            return json(StatusCode::NOT_ACCEPTABLE, &jsonrpc::error_response(Some(&request.id), &error));
        }
        let max = app.options.max_listens_per_principal;
        match app.listens.take(&principal, max) {
            Ok(taken) => slot = Some(taken),
            Err(open) => {
                return super::limit_refusal(Some(&request.id), "max_listens_per_principal", max, open, format!(
                    "Too many listen streams: each principal may hold at most {max} subscriptions/listen \
                     streams open at once (max_listens_per_principal) and you hold {open}. Close one, or \
                     listen to several tasks on one stream."
                ));
            }
        }
    }
    let (out, outgoing) = mpsc::unbounded_channel();
    // A 2026-07-28 request is stateless: its own connection, no session (no `Peer`).
    let conn = Arc::new(Connection::new(app.server.clone(), principal, Listing::Principal, out));
    let cancel_on_close = AbortOnDrop(Arc::clone(&conn), slot);
    // Checked above: served as the 2026-07-28 request it is, its `_meta` read once, in this
    // task.
    let work = transport::modern_work(&conn, request, meta);
    respond(outgoing, streams, cancel_on_close, work, app.options.max_stream_events).await
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
                    json(status_of(&message), &message)
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

/// The HTTP status of a reply message (2026-07-28: 400 for header, capability, version and
/// `_meta` errors; 404 for an unknown method; 200 otherwise).
fn status_of(message: &Value) -> StatusCode {
    let Some(error) = message.get("error") else { return StatusCode::OK };
    let error = RpcError {
        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: String::new(),
        data: error.get("data").cloned(),
    };
    StatusCode::from_u16(transport::modern_http_status(&error)).unwrap_or(StatusCode::OK)
}

fn answer_error(request: &Request, error: &RpcError) -> Response {
    let status = StatusCode::from_u16(transport::modern_http_status(error)).unwrap_or(StatusCode::BAD_REQUEST);
    json(status, &jsonrpc::error_response(Some(&request.id), error))
}

/// The mirrored headers of 2026-07-28 against the body: `MCP-Protocol-Version` equal to the
/// `_meta` revision, `Mcp-Method` to the method, `Mcp-Name` to the name, URI or task id of
/// the methods that have one (values in `=?base64?…?=` are decoded first).
///
/// # Errors
/// `-32020` HeaderMismatch saying which header and why.
fn check_headers(headers: &HeaderMap, request: &Request) -> Result<(), RpcError> {
    let params = request.params.as_ref();
    if let Some(version) = mcp_tasks_protocol::era::per_request_version(params) {
        match header_value(headers, &names::MCP_PROTOCOL_VERSION)? {
            Some(header) if header == version => {}
            Some(header) => {
                return Err(mismatch(format!(
                    "MCP-Protocol-Version header value {header:?} does not match the body's _meta version {version:?}"
                )));
            }
            None => return Err(mismatch("the MCP-Protocol-Version header is required".to_owned())),
        }
    }
    match header_value(headers, &names::MCP_METHOD)? {
        Some(header) if header == request.method => {}
        Some(header) => {
            return Err(mismatch(format!(
                "Mcp-Method header value {header:?} does not match body value {:?}",
                request.method
            )));
        }
        None => return Err(mismatch("the Mcp-Method header is required".to_owned())),
    }
    if let Some(field) = modern::name_header_field(&request.method) {
        let body = params.and_then(|params| params.get(field)).and_then(Value::as_str);
        match (header_value(headers, &names::MCP_NAME)?, body) {
            (Some(header), Some(body)) if header == body => {}
            (Some(header), body) => {
                return Err(mismatch(format!(
                    "Mcp-Name header value {header:?} does not match body value {:?} (params.{field})",
                    body.unwrap_or("")
                )));
            }
            (None, _) => return Err(mismatch(format!("the Mcp-Name header is required on {} (params.{field})", request.method))),
        }
    }
    Ok(())
}

/// The `Mcp-Param-{Name}` headers of a `tools/call` against its arguments: each argument
/// the tool's `inputSchema` marks with `"x-mcp-header": "{Name}"` that the body has (not
/// null) must be mirrored, equal once decoded (integers compared as numbers); a header for
/// an argument the body lacks disagrees with it. Unknown tools pass (the call answers).
///
/// # Errors
/// `-32020` HeaderMismatch saying which header and why.
fn check_param_headers(server: &Server, headers: &HeaderMap, request: &Request) -> Result<(), RpcError> {
    if request.method != method::TOOLS_CALL {
        return Ok(());
    }
    let params = request.params.as_ref();
    let Some(schema) = params.and_then(|params| params["name"].as_str()).and_then(|name| transport::input_schema(server, name)) else {
        return Ok(());
    };
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    let arguments = params.and_then(|params| params.get("arguments"));
    for (property, schema) in properties {
        let Some(name) = schema.get("x-mcp-header").and_then(Value::as_str) else { continue };
        let header = format!("mcp-param-{name}");
        let body = arguments.and_then(|arguments| arguments.get(property)).filter(|value| !value.is_null());
        match (header_value(headers, &header)?, body) {
            (None, None) => {}
            (Some(mirrored), Some(body)) if mirrors(&mirrored, body) => {}
            (Some(mirrored), Some(body)) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{name} header value {mirrored:?} does not match body value {body} (arguments.{property})"
                )));
            }
            (Some(mirrored), None) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{name} header value {mirrored:?} has no value in the body (arguments.{property})"
                )));
            }
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "the Mcp-Param-{name} header is required: arguments.{property} is marked x-mcp-header"
                )));
            }
        }
    }
    Ok(())
}

/// Whether a mirrored header value says what the body's value does.
fn mirrors(header: &str, body: &Value) -> bool {
    match body {
        Value::String(text) => header == text,
        Value::Bool(flag) => header == if *flag { "true" } else { "false" },
        Value::Number(number) => match (header.parse::<f64>(), number.as_f64()) {
            (Ok(header), Some(body)) => header == body,
            _ => false,
        },
        _ => false,
    }
}

/// A header's value, decoded from `=?base64?…?=` if so written.
///
/// # Errors
/// `-32020` for a value that is not visible ASCII, or not valid Base64 of UTF-8.
fn header_value<'h, N>(headers: &'h HeaderMap, name: N) -> Result<Option<Cow<'h, str>>, RpcError>
where
    N: header::AsHeaderName + std::fmt::Display + Copy,
{
    let Some(value) = headers.get(name) else { return Ok(None) };
    let text = value.to_str().map_err(|_| mismatch(format!("the {name} header has invalid characters")))?;
    let Some(encoded) = text.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) else {
        // Compared where it is, as most headers are plain text.
        return Ok(Some(Cow::Borrowed(text)));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| mismatch(format!("the {name} header is not valid Base64")))?;
    String::from_utf8(bytes).map(|text| Some(Cow::Owned(text))).map_err(|_| mismatch(format!("the {name} header is not Base64 of UTF-8")))
}

fn mismatch(message: String) -> RpcError {
    RpcError::new(HEADER_MISMATCH, format!("Header mismatch: {message}"))
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
