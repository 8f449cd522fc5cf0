//! The MCP server of mcp-tasks: it speaks JSON-RPC to a client over a transport and serves
//! tools and tasks from one [`mcp_tasks_engine::Engine`], and resources, prompts and
//! completions defined in code.
//!
//! # Layout
//! - [`Server`]: what it serves and the engine behind its tools ([`ServerBuilder`]; tools
//!   are [`ToolDef`]s, with [`handler_fn`] for closures).
//! - `catalog`: resources and templates ([`ResourceDef`], [`ResourceTemplateDef`],
//!   [`UriTemplate`]), prompts ([`PromptDef`]), completion ([`CompletionDef`]), logging
//!   ([`log_message`]), and their methods.
//! - `session`: one client connection's state (initialization, in-flight calls, which
//!   tasks it watches) and the forwarding of task changes as notifications.
//! - `dispatch`: message → method handler; the one place that picks an era's codec.
//! - `codec::legacy`: the 2025-11-25 wire rules (Task shape, `isError` → `failed`,
//!   related-task metadata, `tasks/result` replay, cursors).
//! - `tool`: the wrapper that makes every tool's handler an MCP tool for the engine (which
//!   results report a failure, how input requests are named).
//! - `arguments`: `tools/call` arguments checked against each tool's `inputSchema`.
//! - `errors`: the one mapping from engine errors (and argument violations) to JSON-RPC
//!   errors, with [`LIMIT_EXCEEDED`] for calls over a limit.
//! - [`stdio`]: newline-delimited JSON-RPC over any reader and writer.
//!
//! Protocol revision: 2025-11-25 (core Tasks, "Legacy").

mod arguments;
mod catalog;
mod codec;
mod dispatch;
mod errors;
mod methods;
mod server;
mod session;
mod tool;
pub mod http;
pub mod stdio;

pub use catalog::{
    CompletionDef, CompletionRef, CompletionRequest, FnHandler, GetPromptResult, Prompt, PromptArgument, PromptDef,
    PromptMessage, PromptRequest, RESOURCE_NOT_FOUND, ReadRequest, Resource, ResourceContents, ResourceDef,
    ResourceTemplate, ResourceTemplateDef, Role, UriTemplate, UriTemplateError, handler_fn, log_message,
    resource_not_found,
};
pub use errors::LIMIT_EXCEEDED;
pub use server::{BuildError, Server, ServerBuilder, ToolDef};
