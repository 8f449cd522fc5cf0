//! The host side of mcp-tasks: an MCP client that owns the polling of the tasks it starts, so
//! that neither the model nor each host has to. It speaks both revisions: it asks with
//! `server/discover` and speaks 2026-07-28 (per-request `_meta`, the tasks extension, Multi
//! Round-Trip Requests) to a server that serves it, else falls back to `initialize`
//! (2025-11-25, core Tasks); [`ClientBuilder::era`] pins one. The API is the same in both.
//!
//! # Layout
//! - [`Client`] ([`ClientBuilder`]): connect over Streamable HTTP or stdio (a spawned
//!   command, or any reader/writer pair), `initialize`, list
//!   tools, call a tool plainly or as a task, list tasks. The handshake (`builder`) picks
//!   the connection's dialect once (`dialect`): each operation whose way differs by era is
//!   a method of it, done by that era's module.
//! - [`TaskHandle`]: one task; [`TaskHandle::wait`] drives it to its end (blocking
//!   `tasks/result`, `Last-Event-ID` resumption, `tasks/get` polling at `pollInterval`);
//!   [`TaskHandle::stream_events`] follows its numbered events after a cursor (`events`: the
//!   draft `tasks/stream`, [`TaskEvent`], [`StreamEnd`]).
//! - [`ElicitationHandler`], [`SamplingHandler`]: what the host implements to answer the
//!   server's requests ([`ServerRequest`]), on whichever stream they arrive. Sent with
//!   `params.task`, such a request becomes a task this client hosts for the server (`hosted`:
//!   in memory, for the session, serving the server's `tasks/get`, `tasks/result`,
//!   `tasks/list` and `tasks/cancel`).
//! - [`ServerInfo`], [`ToolInfo`] ([`TaskMode`]), [`TaskInfo`] ([`TaskStatus`]): the
//!   client's own view of the server, its tools and its tasks, whatever protocol revision
//!   the session speaks (each revision's wire shapes are converted privately: `legacy` for
//!   2025-11-25, `modern` for 2026-07-28). [`Called`]: what a call came to (a result, or the
//!   task the server made of it).
//! - [`ClientError`]: every failure, with what to do about it.
//! - [`ledger`]: a local SQLite record of the tasks a host started, to resume them after
//!   a crash or a detach.
//! - `http` (hyper) and `sse`: the Streamable HTTP transport; `connection`: routing of
//!   responses and server requests, and stream resumption; `stdio`: newline-delimited
//!   JSON-RPC to a child process (killed when the client is dropped); `param_headers`: the
//!   2026-07-28 `x-mcp-header` annotations (SEP-2243), checked at `tools/list` and mirrored
//!   as `Mcp-Param-*` headers on `tools/call`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_tasks_client::ClientError> {
//! use mcp_tasks_client::Client;
//! let client = Client::connect_http("http://127.0.0.1:8765/mcp", None).await?;
//! for tool in client.list_tools().await? {
//!     println!("{} ({})", tool.name, tool.task_mode);
//! }
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod builder;
mod client;
mod connection;
mod dialect;
mod error;
mod events;
mod handlers;
mod hosted;
mod http;
mod legacy;
pub mod ledger;
mod modern;
mod param_headers;
mod sse;
mod stdio;
mod supervisor;
mod task;
mod types;

pub use builder::ClientBuilder;
pub use client::{Called, Client, Subscription};
pub use events::{StreamEnd, TaskEvent};
pub use supervisor::set_supervisor;

/// Entry points for the fuzz targets (`fuzz/`) and their regression corpus; not an API.
#[doc(hidden)]
pub mod fuzzing {
    /// Feeds `bytes` to the SSE parser whole, and again in pieces cut where `cuts` says;
    /// returns the events of each way, which must be equal.
    #[allow(clippy::type_complexity)] // a fuzz entry point: the two event lists, compared whole
    pub fn sse(bytes: &[u8], cuts: &[u8]) -> (Vec<(Option<String>, String, Option<u64>)>, Vec<(Option<String>, String, Option<u64>)>) {
        let shape = |events: Vec<crate::sse::Event>| events.into_iter().map(|e| (e.id, e.data, e.retry)).collect::<Vec<_>>();
        let whole = shape(crate::sse::Parser::default().push(bytes));
        let mut parser = crate::sse::Parser::default();
        let (mut pieces, mut rest) = (Vec::new(), bytes);
        for cut in cuts {
            if rest.is_empty() {
                break;
            }
            let (piece, after) = rest.split_at(usize::from(*cut).min(rest.len()));
            pieces.extend(parser.push(piece));
            rest = after;
        }
        pieces.extend(parser.push(rest));
        (whole, shape(pieces))
    }
}
pub use error::ClientError;
pub use handlers::{ElicitationHandler, SamplingHandler, ServerNotification, ServerRequest};
pub use task::TaskHandle;
pub use types::{ServerInfo, TaskInfo, TaskMode, TaskStatus, ToolInfo};
/// Limits on the tasks a client hosts for its server (task-augmented `elicitation/create`
/// and `sampling/createMessage`): at most [`HOSTED_MAX_RUNNING`] running at once (more are
/// refused with error `-32010`), at most [`HOSTED_MAX_KEPT`] kept (the oldest finished ones
/// make room); a hosted task's `ttl` is what the server asked, at most a day (an hour when
/// it asked none).
pub use hosted::{MAX_KEPT as HOSTED_MAX_KEPT, MAX_RUNNING as HOSTED_MAX_RUNNING};

/// The wire types the client's API uses: the shapes both protocol revisions share
/// (`CallToolResult`, `Content`, `Implementation`, …). Tasks and tools, whose shapes differ
/// by revision, are the client's own [`TaskInfo`] and [`ToolInfo`].
pub mod protocol {
    pub use mcp_tasks_protocol::mcp::*;
}
pub use mcp_tasks_protocol::era::Era;
pub use mcp_tasks_protocol::jsonrpc::RpcError;
