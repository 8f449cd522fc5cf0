//! Wire types of the Model Context Protocol (MCP) as mcp-tasks speaks it: the JSON-RPC 2.0
//! envelope and the messages that task-augmented tool calls need.
//!
//! This crate does no I/O and knows nothing about tasks' behaviour: it turns one line of JSON
//! into an [`jsonrpc::Incoming`] message, gives typed shapes to the `params` and `result`
//! objects, and turns replies back into JSON. Transports, dispatch and the task engine live in
//! other crates.
//!
//! # Layout
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope: [`jsonrpc::parse`] classifies a message and
//!   reports malformed input as a ready-to-send [`jsonrpc::RpcError`]; [`jsonrpc::response`],
//!   [`jsonrpc::error_response`], [`jsonrpc::request`] and [`jsonrpc::notification`] build
//!   outgoing messages.
//! - [`era`]: [`era::Era`] (Legacy 2025-11-25, Modern 2026-07-28) and the per-request
//!   `_meta` key by which a 2026-07-28 request names its revision.
//! - [`hosts`]: the Streamable HTTP transport's `Host` and `Origin` checks (DNS rebinding),
//!   shared by the HTTP transport and the configuration's check of its allow lists.
//! - [`mcp`]: the shapes both eras share: content blocks, `CallToolResult`, the base `Tool`,
//!   `Implementation`, progress tokens and notifications, pagination, shared method names.
//! - [`legacy`]: the shapes only protocol revision **2025-11-25** ("Legacy") has:
//!   `initialize`, `Tool.execution.taskSupport`, `tools/call` with `params.task`, the `Task`
//!   shape of `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`, and
//!   `notifications/tasks/status`.
//! - [`modern`]: what only revision **2026-07-28** ("Modern") has, with the tasks extension:
//!   the per-request `_meta`, `server/discover`, its error codes, `tasks/update`.
//! - [`object`]: reading the `params` fields the schema types as objects (`task`, `_meta`, …)
//!   so that an array or a scalar is refused with an error naming the field.
//!
//! # Example
//! ```
//! use mcp_tasks_protocol::jsonrpc::{self, Incoming};
//! use mcp_tasks_protocol::legacy::{self, TaskIdParams};
//!
//! let line = r#"{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t-1"}}"#;
//! let Ok(Incoming::Request(request)) = jsonrpc::parse(line) else { panic!("not a request") };
//! assert_eq!(request.method, legacy::method::TASKS_GET);
//! let params: TaskIdParams = serde_json::from_value(request.params.unwrap_or_default())?;
//! assert_eq!(params.task_id, "t-1");
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! # Spec revision
//! [`legacy`] follows MCP revision `2025-11-25` (the first revision with tasks, marked
//! experimental there) and is checked against that revision's official JSON schema, including
//! the March 2026 fix that made `Task.ttl` nullable. Where the schema and the prose differ, the
//! schema wins.

#![warn(missing_docs)]

pub mod era;
pub mod hosts;
pub mod jsonrpc;
pub mod legacy;
pub mod mcp;
pub mod modern;
pub mod object;
