//! What an operation knows about the request it serves, whatever era it came in: the era,
//! the principal, the client's declared capabilities, the request id, its cancellation, and
//! the connection it came on. Each era's codec builds one per request (2025-11-25 from the
//! facts `initialize` gave; 2026-07-28 from the request's own `_meta`).

use std::sync::Arc;

use mcp_tasks_engine::{InputKind, Principal};
use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::jsonrpc::RequestId;
use tokio_util::sync::CancellationToken;

use crate::connection::Connection;
use crate::server::Server;

/// What the client said it can do, as era-neutral facts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ClientCaps {
    /// It answers `elicitation/create`.
    pub(crate) elicitation: bool,
    /// It answers `sampling/createMessage`.
    pub(crate) sampling: bool,
    /// It answers `roots/list`.
    pub(crate) roots: bool,
    /// It speaks tasks (2025-11-25: declared `tasks` at `initialize`; 2026-07-28: declared
    /// the tasks extension on this request), so it needs no handoff helper tools.
    pub(crate) tasks: bool,
}

impl ClientCaps {
    /// Whether the client can answer input of `kind`.
    pub(crate) fn declares(&self, kind: InputKind) -> bool {
        match kind {
            InputKind::Elicitation => self.elicitation,
            InputKind::Sampling => self.sampling,
            InputKind::Roots => self.roots,
        }
    }
}

/// One request being served.
#[derive(Clone)]
pub(crate) struct RequestContext {
    /// The era the request speaks.
    pub(crate) era: Era,
    /// Who asks; tasks are scoped to them.
    pub(crate) principal: Principal,
    /// The client's declared capabilities.
    pub(crate) client: ClientCaps,
    /// The request's id.
    pub(crate) id: RequestId,
    /// Fires when the request is cancelled (`notifications/cancelled`, or the connection
    /// aborted).
    pub(crate) cancel: CancellationToken,
    /// The connection it came on.
    pub(crate) conn: Arc<Connection>,
}

impl RequestContext {
    /// The server the request is for.
    pub(crate) fn server(&self) -> &Server {
        &self.conn.server
    }
}
