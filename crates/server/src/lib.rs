//! The MCP server of mcp-tasks: it speaks JSON-RPC to a client over a transport and serves
//! tools and tasks from one [`mcp_tasks_engine::Engine`], and resources, prompts and
//! completions defined in code.
//!
//! # Layout
//! - [`Server`]: what it serves and the engine behind its tools ([`ServerBuilder`]); tools
//!   are era-neutral [`ToolDef`]s ([`ToolSpec`], [`TaskMode`]) in a [`ToolRegistry`], with
//!   [`handler_fn`] for closures.
//! - `dispatch`: the router: message → era → codec, for each connection (`Peer`) and, over
//!   HTTP, for each message with its headers (`route`); the era is decided there, once.
//! - `request`: the serving of one request whatever its era (its `Work`, context, span,
//!   answer), which each codec builds its requests' work with.
//! - `hints`: what a transport knows of a message beside its body (its headers).
//! - `codec::legacy`: the 2025-11-25 codec: the `initialize` lifecycle and the session it
//!   creates, `tools/*`, `tasks/*`, task notifications, input delivery, the `Task` shape, its
//!   Streamable HTTP rules (versions, which answers go on a stream).
//! - `codec::modern`: the 2026-07-28 codec with the tasks extension: per-request `_meta`,
//!   the server deciding tasks, Multi Round-Trip Requests, `subscriptions/listen`, what a
//!   stateless HTTP request needs (mirrored headers, an exchange of its own).
//! - `codec::State`: what each era keeps on the server, beside its codec.
//! - `ops`: the era-neutral operations over the engine that codecs run (call a tool plainly
//!   or as a task; get, wait, list, cancel, answer).
//! - `context`: what an operation knows of its request (era, principal, client
//!   capabilities, id, cancellation, connection).
//! - `connection`: one client connection as the transport sees it: routes of outgoing
//!   messages, requests in flight, our requests to the client.
//! - `catalog`: resources and templates ([`ResourceDef`], [`ResourceTemplateDef`],
//!   [`UriTemplate`]), prompts ([`PromptDef`]), completion ([`CompletionDef`]), logging
//!   ([`log_message`]), and their methods (shared by both eras).
//! - `tool`: the wrapper that makes every tool's handler an MCP tool for the engine (which
//!   results report a failure, how input requests are named).
//! - `arguments`: `tools/call` arguments checked against each tool's `inputSchema`.
//! - `errors`: the one mapping from engine errors (and argument violations) to JSON-RPC
//!   errors, with [`LIMIT_EXCEEDED`] for calls over a limit.
//! - `poll_rate`: the per-principal token bucket of task reads ([`PollRate`]).
//! - `metrics`: [`Metrics`], the counters, gauges and histograms of `/metrics` (tasks by
//!   tool and era from the ops and the engine's change feed, HTTP requests, recovery, the
//!   delivery of results to waiting `tasks/result`s).
//! - [`stdio`]: newline-delimited JSON-RPC over any reader and writer.
//! - [`transport`]: what a transport of its own crate needs (Streamable HTTP is
//!   `mcp-tasks-http`): the router's `route` and what it answers, connections, their
//!   outgoing messages and routes, the work of a request; no codec.
//! - [`runtime`]: the Tokio runtime the binary serves on (one worker fewer than the cores).
//!
//! Completion webhooks are `mcp-tasks-webhooks`; the TOML configuration (`mcp-tasks-config`)
//! is mapped onto this crate's own options by the CLI.
//!
//! Protocol revisions: 2025-11-25 (core Tasks, "Legacy") and 2026-07-28 with the tasks
//! extension ("Modern"), one codec each.

mod arguments;
mod catalog;
mod codec;
mod connection;
mod context;
mod dispatch;
mod errors;
mod hints;
mod metrics;
mod ops;
mod poll_rate;
mod registry;
mod request;
pub mod runtime;
mod server;
mod tool;
pub mod stdio;
pub mod transport;

pub use catalog::{
    CatalogUpstream, CompletionDef, CompletionRef, CompletionRequest, FnHandler, GetPromptResult, Prompt, PromptArgument, PromptDef,
    PromptMessage, PromptRequest, RESOURCE_NOT_FOUND, ReadRequest, Resource, ResourceContents, ResourceDef,
    ResourceTemplate, ResourceTemplateDef, Role, UpstreamOffers, UriTemplate, UriTemplateError, handler_fn, log_message,
    resource_not_found,
};
pub use arguments::check_input_schema;
pub use errors::LIMIT_EXCEEDED;
pub use metrics::{MAX_LIVE, Metrics};
pub use ops::handoff::TaskTools;
pub use poll_rate::PollRate;
pub use registry::{TaskMode, ToolDef, ToolRegistry, ToolSpec};
pub use server::{BuildError, Server, ServerBuilder};
