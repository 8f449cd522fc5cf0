//! One client connection as the transport sees it, whatever era it speaks: who is on the
//! other end (the principal), where outgoing messages go (routes), the requests in flight
//! (so that `notifications/cancelled` can stop them) and our own requests to the client
//! awaiting an answer. It knows no era: what `initialize` creates is Legacy codec state
//! (`codec::legacy::session`), kept beside the connection by dispatch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use mcp_tasks_engine::{Principal, SessionStore};
use mcp_tasks_protocol::jsonrpc::{self, RequestId, Response, RpcError};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::server::Server;

/// Where an outgoing message belongs. Over stdio every message goes to stdout; over
/// Streamable HTTP a reply and the messages related to a request go on that request's
/// stream, everything else on the standalone GET stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// The response to this request (ends its stream).
    Reply(RequestId),
    /// A request or notification sent while serving this request.
    Related(RequestId),
    /// Not tied to any request (e.g. task status notifications).
    General,
    /// No response will come for this request (it was cancelled): whoever waits for one
    /// stops waiting, and its stream ends. Carries no message.
    NoReply(RequestId),
}

/// An outgoing message and its route.
#[derive(Clone, Debug)]
pub struct Outbound {
    /// The message.
    pub message: Message,
    /// Where it goes.
    pub route: Route,
}

/// The `result` of a success response.
#[derive(Clone, Debug)]
pub enum Payload {
    /// A JSON value (most results).
    Value(Value),
    /// The JSON text a typed result was serialized to, once, and is written as it is: the
    /// results of a task lifecycle (`CreateTaskResult`, the task of `tasks/get`, the result
    /// of `tasks/result`) are written from the record they show, with no `Value` tree built,
    /// copied and dropped between them (docs/benchmarks/14-fourteenth-round.md).
    Text(String),
}

impl Payload {
    /// `result` serialized once to its JSON text.
    ///
    /// # Errors
    /// `-32603` if `result` cannot be serialized (a map with keys that are not strings).
    pub(crate) fn text(result: &impl Serialize) -> Result<Payload, RpcError> {
        // Room for a task's result, so that it is written without growing.
        let mut text = Vec::with_capacity(512);
        serde_json::to_writer(&mut text, result).map_err(|err| RpcError::internal(err.to_string()))?;
        // serde_json writes UTF-8.
        String::from_utf8(text).map(Payload::Text).map_err(|err| RpcError::internal(err.to_string()))
    }

    /// The result as a `Value` (parsed, for [`Payload::Text`]).
    pub(crate) fn into_value(self) -> Value {
        match self {
            Payload::Value(value) => value,
            // Text this process serialized is JSON.
            Payload::Text(text) => serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Payload {
        Payload::Value(value)
    }
}

/// Builds a message's JSON when it is needed (and again for each replay).
pub type BuildMessage = Arc<dyn Fn() -> Value + Send + Sync>;

/// An outgoing JSON-RPC message: built, or built only if a client reads it.
#[derive(Clone)]
pub enum Message {
    /// The message.
    Json(Value),
    /// The success response to request `.0`, `result` `.1`: written with its envelope
    /// around the result ([`Message::write_json`]) rather than built as an object of three
    /// members first (each reply of a lifecycle did; docs/benchmarks/13-thirteenth-round.md).
    Reply(RequestId, Payload),
    /// A notification whose JSON is built only when a client takes it. Over 2025-11-25 HTTP
    /// a task's status change goes to the standalone stream, kept for a GET stream that
    /// most clients never open: building and framing each one there was ~4 % of a
    /// lifecycle's instructions (docs/benchmarks/12-twelfth-round.md). Whatever reads it gets the
    /// same bytes as if it had been built at once.
    Later(BuildMessage),
}

impl Message {
    /// The message's JSON (built now if it was not).
    pub fn into_value(self) -> Value {
        match self {
            Message::Json(value) => value,
            Message::Reply(id, result) => jsonrpc::response(&id, result.into_value()),
            Message::Later(build) => build(),
        }
    }

    /// Writes the message's JSON to `out`: the same message as [`Message::into_value`]'s,
    /// members in the order `jsonrpc`, `id`, `result` for a [`Message::Reply`].
    pub fn write_json(&self, mut out: impl std::io::Write) -> serde_json::Result<()> {
        /// A success response, serialized around its borrowed parts.
        #[derive(serde::Serialize)]
        struct Envelope<'a> {
            jsonrpc: &'static str,
            id: &'a RequestId,
            result: &'a Value,
        }
        match self {
            Message::Json(value) => serde_json::to_writer(out, value),
            Message::Reply(id, Payload::Value(result)) => {
                serde_json::to_writer(out, &Envelope { jsonrpc: jsonrpc::JSONRPC_VERSION, id, result })
            }
            // The envelope around text that is JSON already: serde has no way to write text
            // as it is but serde_json's `RawValue`, which would copy it once more.
            Message::Reply(id, Payload::Text(result)) => {
                out.write_all(br#"{"jsonrpc":"#).map_err(serde_json::Error::io)?;
                serde_json::to_writer(&mut out, jsonrpc::JSONRPC_VERSION)?;
                out.write_all(br#","id":"#).map_err(serde_json::Error::io)?;
                serde_json::to_writer(&mut out, id)?;
                out.write_all(br#","result":"#).map_err(serde_json::Error::io)?;
                out.write_all(result.as_bytes()).map_err(serde_json::Error::io)?;
                out.write_all(b"}").map_err(serde_json::Error::io)
            }
            Message::Later(build) => serde_json::to_writer(out, &build()),
        }
    }

    /// The message's JSON as bytes ([`Message::write_json`]).
    pub fn to_json_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        // Serializing a `Value` (or a struct of them) into memory does not fail.
        let _ = self.write_json(&mut out);
        out
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Json(value) => f.debug_tuple("Json").field(value).finish(),
            Message::Reply(id, result) => f.debug_tuple("Reply").field(id).field(result).finish(),
            Message::Later(_) => f.write_str("Later(..)"),
        }
    }
}

/// Which tasks a listing shows the requestors of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listing {
    /// Every task of the connection's principal (an identified requestor).
    Principal,
    /// Only the tasks this connection created: the requestor is not identified (HTTP without
    /// tokens), so no client may enumerate another's tasks (2025-11-25 tasks security).
    Session,
}

/// Where a connection's outgoing messages go.
enum Outlet {
    /// A queue that a task of the transport empties (stdio, a 2026-07-28 request).
    Queue(mpsc::UnboundedSender<Outbound>),
    /// Routed by the sender itself, at once (a 2025-11-25 HTTP session's streams): no task
    /// in between, so a reply reaches the POST waiting for it without a hand-off.
    Direct(Box<dyn Fn(Outbound) + Send + Sync>),
}

/// A client connection. Shared by the transport, dispatch and the request handlers.
pub struct Connection {
    pub(crate) server: Server,
    pub(crate) principal: Principal,
    pub(crate) listing: Listing,
    out: Outlet,
    closed: CancellationToken,
    /// Ids of our requests to the client: `mcp-tasks-<n>`, never reused on a connection.
    next_request: AtomicU64,
    /// Whether the transport has a standalone stream open right now (HTTP GET); unset for
    /// stdio, where everything goes through the one output.
    standalone_open: OnceLock<Box<dyn Fn() -> bool + Send + Sync>>,
    /// A std mutex: every critical section is a few map operations, never across an await.
    state: Mutex<State>,
    /// The client's name and version, as it named itself (2025-11-25 `initialize`, the
    /// latest 2026-07-28 request's `_meta`); recorded with the tasks it creates.
    client_info: Mutex<Option<(String, String)>>,
    /// The `Mcp-Session-Id` under which the store keeps this connection's session record
    /// (HTTP on a shared store), and the store the HTTP transport keeps it in: what the
    /// session changes is written there too, for the other replicas. Unset otherwise.
    stored_as: OnceLock<(String, Arc<dyn SessionStore>)>,
}

#[derive(Default)]
struct State {
    /// Our requests to the client awaiting an answer.
    pending: HashMap<RequestId, oneshot::Sender<Result<Value, RpcError>>>,
    /// The client's requests being served; each token fires on `notifications/cancelled`.
    inflight: HashMap<RequestId, CancellationToken>,
    /// The task each `tasks/stream` request in flight streams (stream_12).
    streams: HashMap<RequestId, String>,
}

impl Connection {
    /// The server this connection is served by.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Records the client's name and version (see [`Connection::client_info`]).
    pub(crate) fn set_client_info(&self, name: &str, version: &str) {
        *self.client_info.lock().unwrap_or_else(PoisonError::into_inner) = Some((name.to_owned(), version.to_owned()));
    }

    /// From now on the session's changes are written to record `id` of `sessions` too.
    pub fn set_stored_as(&self, id: &str, sessions: &Arc<dyn SessionStore>) {
        let _ = self.stored_as.set((id.to_owned(), Arc::clone(sessions)));
    }

    /// The id of the store's record of this connection's session and the store keeping it,
    /// if it has one.
    pub(crate) fn stored_as(&self) -> Option<(&str, &dyn SessionStore)> {
        self.stored_as.get().map(|(id, sessions)| (id.as_str(), &**sessions))
    }

    /// The client's name and version, if it named itself.
    pub(crate) fn client_info(&self) -> Option<(String, String)> {
        self.client_info.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// A connection whose outgoing messages go to `out`.
    pub fn new(server: Server, principal: Principal, listing: Listing, out: mpsc::UnboundedSender<Outbound>) -> Connection {
        Connection::with_outlet(server, principal, listing, Outlet::Queue(out))
    }

    /// A connection whose outgoing messages are handed to `route` by whoever sends them, in
    /// the sender's task. `route` must not block, nor send on this connection.
    pub fn routed(
        server: Server,
        principal: Principal,
        listing: Listing,
        route: impl Fn(Outbound) + Send + Sync + 'static,
    ) -> Connection {
        Connection::with_outlet(server, principal, listing, Outlet::Direct(Box::new(route)))
    }

    fn with_outlet(server: Server, principal: Principal, listing: Listing, out: Outlet) -> Connection {
        Connection {
            server,
            principal,
            listing,
            out,
            closed: CancellationToken::new(),
            next_request: AtomicU64::new(1),
            standalone_open: OnceLock::new(),
            client_info: Mutex::new(None),
            stored_as: OnceLock::new(),
            state: Mutex::new(State::default()),
        }
    }

    /// Fires when the connection closes: state tied to it (forwarding of task changes,
    /// questions waiting for the client) stops.
    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// Stops what is tied to the connection. In-flight requests still finish and answer: a
    /// client that closes its input after a request still gets the response.
    pub fn close(&self) {
        self.closed.cancel();
    }

    /// Ends the connection now: closes it and cancels its in-flight requests (their tasks,
    /// if any, keep running; they belong to the principal, not the connection).
    pub fn abort(&self) {
        self.closed.cancel();
        for token in self.state().inflight.values() {
            token.cancel();
        }
    }

    /// Queues a message to the client. A closed transport drops it.
    pub(crate) fn send(&self, message: Value, route: Route) {
        self.send_message(Message::Json(message), route);
    }

    /// Queues a message whose JSON `build` makes only when a client takes it (see
    /// [`Message::Later`]). A closed transport drops it.
    pub(crate) fn send_later(&self, build: BuildMessage, route: Route) {
        self.send_message(Message::Later(build), route);
    }

    fn send_message(&self, message: Message, route: Route) {
        let outbound = Outbound { message, route };
        match &self.out {
            Outlet::Queue(queue) => {
                let _ = queue.send(outbound);
            }
            Outlet::Direct(route) => route(outbound),
        }
    }

    /// Sends the reply to request `id`.
    pub(crate) fn respond(&self, id: &RequestId, reply: Result<impl Into<Payload>, RpcError>) {
        let message = match reply {
            Ok(result) => Message::Reply(id.clone(), result.into()),
            Err(error) => Message::Json(jsonrpc::error_response(Some(id), &error)),
        };
        self.send_message(message, Route::Reply(id.clone()));
    }

    /// Tells the transport that request `id` gets no response (2025-11-25: a cancelled
    /// request is not answered), so that an HTTP POST waiting for it ends (202) and its
    /// stream closes instead of staying open until the session ends.
    pub(crate) fn abandon(&self, id: &RequestId) {
        self.send(Value::Null, Route::NoReply(id.clone()));
    }

    /// Answers an error: to request `id`, or, to a message whose id could not be read (or
    /// that had none), on the general route.
    pub fn reject(&self, id: Option<&RequestId>, error: &RpcError) {
        let route = id.map_or(Route::General, |id| Route::Reply(id.clone()));
        self.send(jsonrpc::error_response(id, error), route);
    }

    /// Sends a request to the client on `route` and waits for its answer.
    ///
    /// # Errors
    /// The client's JSON-RPC error, or `-32603` if the connection closes first.
    pub(crate) async fn request_client(&self, method: &str, params: Value, route: Route) -> Result<Value, RpcError> {
        let (id, answer) = self.open_request();
        self.send(jsonrpc::request(&id, method, params), route);
        self.await_answer(&id, answer).await
    }

    /// Allocates a request id and registers its waiter.
    pub(crate) fn open_request(&self) -> (RequestId, oneshot::Receiver<Result<Value, RpcError>>) {
        let id = RequestId::String(format!("mcp-tasks-{}", self.next_request.fetch_add(1, Ordering::Relaxed)));
        let (tx, rx) = oneshot::channel();
        self.state().pending.insert(id.clone(), tx);
        (id, rx)
    }

    /// Whether our request `id` still awaits the client's answer.
    pub(crate) fn is_pending(&self, id: &RequestId) -> bool {
        self.state().pending.contains_key(id)
    }

    /// The client's answer to our request `id`.
    ///
    /// # Errors
    /// The client's JSON-RPC error, or `-32603` if the connection closes first.
    pub(crate) async fn await_answer(
        &self,
        id: &RequestId,
        answer: oneshot::Receiver<Result<Value, RpcError>>,
    ) -> Result<Value, RpcError> {
        let ended = || RpcError::internal("the session ended before the client answered");
        tokio::select! {
            answer = answer => answer.unwrap_or_else(|_| Err(ended())),
            _ = self.closed.cancelled() => {
                self.state().pending.remove(id);
                Err(ended())
            }
        }
    }

    /// Routes the client's answer to one of our requests.
    pub(crate) fn on_response(&self, response: Response) {
        match self.state().pending.remove(&response.id) {
            Some(waiter) => {
                let _ = waiter.send(response.outcome);
            }
            None => tracing::debug!(id = %response.id, "ignoring a response to no pending request"),
        }
    }

    /// Tells the connection how to see whether the transport's standalone stream is open.
    pub fn set_standalone_probe(&self, probe: Box<dyn Fn() -> bool + Send + Sync>) {
        let _ = self.standalone_open.set(probe);
    }

    /// Whether the transport's standalone stream (HTTP GET) is open right now.
    pub(crate) fn standalone_is_open(&self) -> bool {
        self.standalone_open.get().is_some_and(|probe| probe())
    }

    /// Registers an in-flight request; its token fires on `notifications/cancelled`.
    pub(crate) fn begin(&self, id: &RequestId) -> CancellationToken {
        let token = CancellationToken::new();
        self.state().inflight.insert(id.clone(), token.clone());
        token
    }

    /// The request is no longer in flight.
    pub(crate) fn end(&self, id: &RequestId) {
        let mut state = self.state();
        state.inflight.remove(id);
        state.streams.remove(id);
    }

    /// Records request `id` as the `tasks/stream` of `task`, unless another request of this
    /// connection streams it and was not cancelled (stream_12; a cancelled stream's place is
    /// free at once, though its request may not have ended yet: stream_14).
    pub(crate) fn open_stream(&self, id: &RequestId, task: &str) -> bool {
        let state = &mut *self.state();
        let inflight = &state.inflight;
        let open = state.streams.iter().any(|(other, streamed)| {
            streamed == task && inflight.get(other).is_some_and(|token| !token.is_cancelled())
        });
        if !open {
            state.streams.insert(id.clone(), task.to_owned());
        }
        !open
    }

    /// `notifications/cancelled`: stops the named in-flight request, if any (unknown or
    /// finished ids are ignored, as the spec allows).
    pub(crate) fn cancel_request(&self, id: &RequestId) {
        if let Some(token) = self.state().inflight.get(id) {
            token.cancel();
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply written from its parts is the message `into_value` builds, and a message of
    /// each kind writes the JSON of its value.
    #[test]
    fn a_message_is_written_as_the_json_of_its_value() {
        let result = serde_json::json!({"task": {"taskId": "t\"1", "status": "working"}, "n": [1, 2.5, null]});
        let messages = [
            Message::Reply(RequestId::Number(7), result.clone().into()),
            Message::Reply(RequestId::String("é-8".into()), Value::Object(serde_json::Map::new()).into()),
            Message::Reply(RequestId::Number(10), Payload::text(&result).expect("serializable")),
            Message::Reply(RequestId::String("é\"11".into()), Payload::text(&result).expect("serializable")),
            Message::Json(jsonrpc::error_response(Some(&RequestId::Number(9)), &RpcError::internal("no"))),
            Message::Later(Arc::new(|| serde_json::json!({"jsonrpc": "2.0", "method": "notifications/x"}))),
        ];
        for message in messages {
            let written: Value = serde_json::from_slice(&message.to_json_vec()).expect("JSON");
            assert_eq!(written, message.clone().into_value(), "{message:?}");
        }
        let reply = Message::Reply(RequestId::Number(7), result.clone().into());
        assert_eq!(reply.into_value(), serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": result}));
        let text = Message::Reply(RequestId::Number(7), Payload::text(&result).expect("serializable"));
        assert_eq!(text.into_value(), serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": result}));
    }
}
