//! The router: every incoming message → its era → that era's codec. The era of a message is
//! decided here, once, and this file holds the router's `match` on it; each codec owns its
//! era's rules, its transport rules included. The transports (`crate::stdio`, and the HTTP
//! crate `mcp-tasks-http` through `crate::transport`) hand every message here and know no
//! codec:
//!
//! - a connection with a session (stdio, a 2025-11-25 HTTP session) is a [`Peer`]: the
//!   transport's [`Connection`] and the state each era's codec keeps on it (2025-11-25: the
//!   session `initialize` creates); [`Peer::handle_text`] takes each line over stdio;
//! - over HTTP, [`route`] takes each message with its [`Hints`] (the headers that matter) and
//!   tells the transport what to do with it ([`Routed`]): serve it on an exchange of its own
//!   (2026-07-28: no session), accept and drop it, open a session with it, or hand it to the
//!   session it names, whose era's codec said which answers go on a stream of their own.
//!
//! Responses from the client go to the connection, which routes them to the request that
//! awaits them.

use std::sync::Arc;

use mcp_tasks_protocol::era::{Era, per_request_version};
use mcp_tasks_protocol::jsonrpc::{self, Incoming, Request, RpcError};
use serde_json::Value;

use crate::codec;
use crate::codec::modern::Exchange;
use crate::connection::Connection;
use crate::hints::{Header, Hints};
use crate::request::Work;
use crate::server::Server;

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

    /// Serves a message [`route`] handed to this peer's session: a request's [`Work`] for
    /// the caller to run (or none if it was answered at once); a notification or a response
    /// is handled now.
    pub fn serve(&self, message: SessionMessage) -> Work {
        match message.incoming {
            Incoming::Request(request) => self.request_of(message.era, request),
            incoming => {
                self.handle_incoming(incoming);
                Work::none()
            }
        }
    }

    /// Takes one request of `era`: answered at once, or its [`Work`] for the caller to run.
    fn request_of(&self, era: Era, request: Request) -> Work {
        match era {
            Era::Legacy => codec::legacy::request(&self.legacy, &self.conn, request),
            Era::Modern => codec::modern::request(&self.conn, request),
        }
    }

    /// Handles one parsed message; a request's work runs in a Tokio task of its own.
    fn handle_incoming(&self, incoming: Incoming) {
        match incoming {
            Incoming::Request(request) => self.request_of(era_of(&request), request).spawn(),
            Incoming::Notification(notification) => codec::legacy::notification(&self.conn, &notification),
            Incoming::Response(response) => self.conn.on_response(response),
        }
    }
}

/// What the transport does with a message ([`route`]).
pub enum Routed {
    /// A request served on no session, on an exchange of its own (2026-07-28).
    Exchange(Exchange),
    /// Accepted with nothing to answer, and dropped (2026-07-28 defines no notification over
    /// HTTP: a disconnect is the cancel).
    Accepted,
    /// Opens a session: a new [`Peer`] serves it ([`Peer::serve`]); the session is kept if
    /// the answer is a result.
    OpensSession(SessionMessage),
    /// A message of the session its hints name ([`Header::SessionId`]).
    InSession(SessionMessage),
}

/// A message for a session's [`Peer`], with what its era's codec said of it.
pub struct SessionMessage {
    incoming: Incoming,
    era: Era,
    /// Why the session may not take it; answered (400) once the session is found.
    refusal: Option<RpcError>,
    /// A request whose answer goes on an SSE stream of its own, when the client takes one.
    streams: bool,
}

impl SessionMessage {
    /// The message as it came.
    pub fn incoming(&self) -> &Incoming {
        &self.incoming
    }

    /// The error to answer (400) instead of serving the message, once its session is found:
    /// an `MCP-Protocol-Version` its era does not speak over HTTP.
    pub fn refusal(&self) -> Option<&RpcError> {
        self.refusal.as_ref()
    }

    /// Whether the message is a request answered on an SSE stream of its own when the client
    /// accepts one (otherwise it is answered as JSON).
    pub fn streams(&self) -> bool {
        self.streams
    }
}

/// Where a message goes, from its body and its `hints` (its headers over HTTP): the era is
/// decided once, here, and that era's codec says what its transport rules make of it.
pub fn route(server: &Server, incoming: Incoming, hints: &dyn Hints) -> Routed {
    let in_session = hints.header(Header::SessionId).is_some();
    match incoming {
        Incoming::Request(request) => match era_of(&request) {
            Era::Modern => Routed::Exchange(Exchange::new(server, request, hints)),
            // 2025-11-25: `initialize` without `Mcp-Session-Id` starts a session; every other
            // message names its session.
            Era::Legacy if !in_session && codec::legacy::opens_session(&request) => {
                Routed::OpensSession(SessionMessage { incoming: Incoming::Request(request), era: Era::Legacy, refusal: None, streams: false })
            }
            Era::Legacy => {
                let streams = codec::legacy::http::answers_on_stream(&request);
                Routed::InSession(in_session_legacy(Incoming::Request(request), hints, streams))
            }
        },
        Incoming::Notification(notification) => match era_of_notification(in_session, hints) {
            Era::Modern => Routed::Accepted,
            Era::Legacy => Routed::InSession(in_session_legacy(Incoming::Notification(notification), hints, false)),
        },
        // A response to one of our requests: only a session's connection sends those.
        response @ Incoming::Response(_) => Routed::InSession(in_session_legacy(response, hints, false)),
    }
}

/// A 2025-11-25 message of a session, checked against the era's HTTP versions.
fn in_session_legacy(incoming: Incoming, hints: &dyn Hints, streams: bool) -> SessionMessage {
    let refusal = codec::legacy::http::check_version(hints.header(Header::ProtocolVersion)).err();
    SessionMessage { incoming, era: Era::Legacy, refusal, streams }
}

/// The era of a notification over HTTP: 2026-07-28 when it names no session and its
/// `MCP-Protocol-Version` is of that era; 2025-11-25 (a session's) otherwise.
fn era_of_notification(in_session: bool, hints: &dyn Hints) -> Era {
    if !in_session && hints.header(Header::ProtocolVersion).is_some_and(codec::modern::speaks) { Era::Modern } else { Era::Legacy }
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
    } else if codec::modern::is_discovery(request) {
        Era::Modern
    } else {
        Era::Legacy
    }
}

fn looks_like_response(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|value| {
        value.get("method").is_none() && (value.get("result").is_some() || value.get("error").is_some())
    })
}

