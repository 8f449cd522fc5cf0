//! Test helpers shared by the crates' integration tests (never used by production code),
//! with no server in them: the engine's and the stores' tests use them without building the
//! server or its HTTP stack (the test server and peer are `mcp-tasks-testkit-server`).
//!
//! # Layout
//! - [`era`]: [`Era`], the protocol era a helper speaks or validates against.
//! - [`schema`]: validates messages against the official MCP JSON schemas of each era in
//!   `../shared/reference/schemas/` (read at test time, never copied into the repo); wire
//!   data, so the protocol crate's tests use it too.
//! - [`early`]: a handler that reports on every channel of a task's event log, for the
//!   tests of work started before its creation commits, and the log it leaves.
//! - [`memory`]: [`MemoryStore`], a [`mcp_tasks_engine::TaskStore`] in memory for tests; the
//!   store suite runs against it as well as against SQLite.
//! - [`store_suite`](mod@store_suite): the behaviour every [`mcp_tasks_engine::TaskStore`] must show,
//!   turned into tests by [`store_suite!`].
//!
//! Use it only from `tests/` folders: inside a crate's own `#[cfg(test)]` unit tests its
//! types would come from a different copy of that crate.

pub mod early;
pub mod era;
pub mod memory;
pub mod schema;
pub mod store_suite;

pub use era::Era;
pub use memory::MemoryStore;
