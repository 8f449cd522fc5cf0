//! What a transport needs from the server, for a transport of its own crate (Streamable HTTP
//! is `mcp-tasks-http`; [`crate::stdio`] uses the same router): it hands every message to the
//! router and knows no codec.
//!
//! - [`route`]: where an HTTP message goes, from its body and its [`Hints`] (the headers that
//!   matter): [`Routed`] says serve it on an [`Exchange`] of its own, accept it, open a
//!   session with it, or hand it to its session's [`Peer`] as a [`SessionMessage`] (which
//!   says whether its answer goes on a stream of its own, and why its session may refuse it).
//! - a [`Connection`] and the [`Peer`] that serves what it receives, the outgoing
//!   [`Message`]s and their [`Route`]s, and the [`Work`] of a request, which the transport
//!   runs where it answers.
//! - [`METRICS_CONTENT_TYPE`] and [`OpenStream`] for the transport's `/metrics` and the SSE
//!   streams it counts.

pub use crate::codec::modern::{Exchange, Started};
pub use crate::connection::{BuildMessage, Connection, Listing, Message, Outbound, Payload, Route};
pub use crate::dispatch::{Peer, Routed, SessionMessage, route};
pub use crate::hints::{Header, Hints};
pub use crate::metrics::{CONTENT_TYPE as METRICS_CONTENT_TYPE, OpenStream};
pub use crate::request::Work;
