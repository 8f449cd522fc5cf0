//! The HTTP transport's integration tests, one binary: a [`mcp_tasks_server::Server`] defined
//! in Rust, served by [`mcp_tasks_http::serve`] on `127.0.0.1:0` (`mcp_tasks_testkit_server::TestServer`).
//!
//! - `metrics`: `/metrics` after a scripted run in both eras; who may read it.
//! - `sessions`: 2025-11-25 HTTP sessions kept in the server's memory (no session store).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

use std::sync::Arc;

use mcp_tasks_engine::{Engine, Policy, SystemClock};
use mcp_tasks_sqlite::SqliteStore;

mod metrics;
mod sessions;

/// An engine over a fresh SQLite file; keep the directory alive for the test's length.
pub(crate) fn sqlite_engine() -> (Engine, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
    (Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default()), dir)
}
