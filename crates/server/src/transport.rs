//! What a transport needs from the server, for a transport of its own crate (Streamable HTTP
//! is `mcp-tasks-http`; [`crate::stdio`] uses the same): a client [`Connection`] and the
//! [`Peer`] that serves what it receives, the outgoing [`Message`]s and their [`Route`]s, and
//! the [`Work`] of a request, which the transport runs where it answers.
//!
//! 2026-07-28 requests are served on a connection of their own: [`modern_check`] reads and
//! checks one, [`modern_work`] is its work, [`modern_http_status`] the HTTP status of an
//! error answer.

use std::sync::Arc;

use mcp_tasks_protocol::jsonrpc::{Request, RpcError};
use mcp_tasks_protocol::modern::RequestMeta;

pub use crate::connection::{BuildMessage, Connection, Listing, Message, Outbound, Payload, Route};
pub use crate::dispatch::{Peer, Work, is_stateless};
pub use crate::metrics::{CONTENT_TYPE as METRICS_CONTENT_TYPE, OpenStream};

/// The checks before a 2026-07-28 request is served: its `_meta` (`-32602`) and its revision
/// (`-32022`); the `_meta` read.
///
/// # Errors
/// The JSON-RPC error to answer; [`modern_http_status`] gives its HTTP status.
pub fn modern_check(request: &Request) -> Result<RequestMeta, RpcError> {
    crate::codec::modern::check(request)
}

/// The work of serving a 2026-07-28 `request` that passed [`modern_check`] (which read its
/// `meta`) on `conn`, for the caller to run.
pub fn modern_work(conn: &Arc<Connection>, request: Request, meta: RequestMeta) -> Work {
    Work::new(crate::codec::modern::checked_work(conn, request, meta))
}

/// The `inputSchema` of the server's tool `name`, if it has one by that name (2026-07-28:
/// the arguments it marks with `x-mcp-header` are mirrored in `Mcp-Param-*` headers).
pub fn input_schema(server: &crate::Server, name: &str) -> Option<serde_json::Value> {
    server.tools().get(name).map(|tool| tool.def.spec.input_schema.clone())
}

/// The HTTP status of a 2026-07-28 error answer: 400 for header, capability, version and
/// `_meta` problems, 404 for an unknown method, 200 for the rest.
pub fn modern_http_status(error: &RpcError) -> u16 {
    crate::codec::modern::http_status(error)
}
