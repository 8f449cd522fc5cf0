//! The client against our real server (`mcp_tasks_http::serve` on 127.0.0.1:0,
//! SQLite engine), one binary.
//!
//! - `harness`: the server and its tools.
//! - `tasks`: connect, list, plain and task calls, elicitation, cancel.
//! - `close`: graceful close of a spawned stdio server (stdin, SIGTERM, SIGKILL) and of an
//!   HTTP session.
//! - `everything`: server-everything (a peer written by others) over stdio, with this
//!   client hosting its async elicitation and sampling tasks (skipped when not installed).
//! - `headers`: 2026-07-28 `Mcp-Param-*` headers from `x-mcp-header` arguments (SEP-2243).
//! - `hosted`: tasks the client hosts for the server (task-augmented elicitation and
//!   sampling), driven by a wire-level peer over a duplex.
//! - `modern`: 2026-07-28: the era negotiated, rounds, the server deciding tasks, polling, cancel.
//! - `public_api`: the public API hands out the client's own types, never 2025-11-25 ones.
//! - `resume`: a broken `tasks/result` stream, resumed or replaced by polling.
//! - `stdio`: the stdio transport, against `mcp_tasks_server::stdio::serve` over an
//!   in-memory duplex, and against the real binary when it was built.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod close;
mod everything;
mod harness;
mod headers;
mod hosted;
mod modern;
mod public_api;
mod resume;
mod stdio;
mod tasks;
