//! The MCP server of mcp-tasks: it speaks JSON-RPC to a client over a transport and serves
//! tools and tasks from one [`mcp_tasks_engine::Engine`].
//!
//! # Layout
//! - [`Server`]: the tools it serves and the engine behind them ([`ServerBuilder`]).
//! - `session`: one client connection's state (initialization, in-flight calls, which
//!   tasks it watches) and the forwarding of task changes as notifications.
//! - `dispatch`: message → method handler; the one place that picks an era's codec.
//! - `codec::legacy`: the 2025-11-25 wire rules (Task shape, `isError` → `failed`,
//!   related-task metadata, `tasks/result` replay, cursors).
//! - `errors`: the one mapping from engine errors to JSON-RPC errors.
//! - [`stdio`]: newline-delimited JSON-RPC over any reader and writer.
//!
//! Protocol revision: 2025-11-25 (core Tasks, "Legacy").

mod codec;
mod dispatch;
mod errors;
mod methods;
mod server;
mod session;
pub mod http;
pub mod stdio;

pub use server::{Server, ServerBuilder, ToolDef};
