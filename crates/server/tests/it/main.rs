//! The server library's integration tests, one binary: a [`mcp_tasks_server::Server`]
//! defined in Rust, driven over an in-memory stdio pipe by `mcp_tasks_testkit_server::TestPeer`
//! (the HTTP transport's own tests, `/metrics` and HTTP sessions, are `mcp-tasks-http`'s).
//!
//! - `progress`: progress notifications of tasks and plain calls.
//! - `catalog`: resources, templates, prompts, completion and logging defined in code.
//! - `conformance_fixture`: the conformance fixture server of `examples/`.
//! - `handoff`: long plain calls from clients without tasks: handoff to a task, helper tools, heartbeats.
//! - `idempotency`: idempotency keys on `tools/call`, in both eras and across a restart.
//! - `input`: input requests inside tasks across sessions.
//! - `modern`: 2026-07-28 with the tasks extension, beside 2025-11-25 on one server.
//! - `modern_listen`: 2026-07-28 `subscriptions/listen`: list changes and task notifications.
//! - `modern_mrtr`: 2026-07-28 Multi Round-Trip Requests: named questions, prompts, rounds before a task.
//! - `panics`: handlers that panic still get their request answered (stdio and HTTP).
//! - `layering`: which files may name each era's types, where the era is matched, that no
//!   transport names a codec.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

use std::sync::Arc;

use mcp_tasks_engine::{Engine, Policy, SystemClock};
use mcp_tasks_sqlite::SqliteStore;

mod arguments;
mod catalog;
mod conformance_fixture;
mod handoff;
mod idempotency;
mod input;
mod interactive;
mod layering;
mod limits;
mod modern;
mod modern_listen;
mod modern_mrtr;
mod panics;
mod progress;

/// An engine over a fresh SQLite file; keep the directory alive for the test's length.
pub(crate) fn sqlite_engine() -> (Engine, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
    (Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default()), dir)
}
