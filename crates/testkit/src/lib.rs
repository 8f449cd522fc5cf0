//! Test helpers shared by the crates' integration tests (never used by production code).
//!
//! # Layout
//! - [`era`]: [`Era`], the protocol era a helper speaks or validates against.
//! - [`schema`]: validates messages against the official MCP JSON schemas of each era in
//!   `../shared/reference/schemas/` (read at test time, never copied into the repo).
//! - [`memory`]: [`MemoryStore`], a [`mcp_tasks_engine::TaskStore`] in memory for tests; the
//!   store suite runs against it as well as against SQLite.
//! - [`store_suite`](mod@store_suite): the behaviour every [`mcp_tasks_engine::TaskStore`] must show,
//!   turned into tests by [`store_suite!`].
//! - [`server`]: [`TestServer`], a [`mcp_tasks_server::Server`] served over HTTP on
//!   `127.0.0.1:0` or over stdio on an in-memory pipe.
//! - [`peer`]: [`TestPeer`], a client of such a server over stdio, by era.
//!
//! Use it only from `tests/` folders: inside a crate's own `#[cfg(test)]` unit tests its
//! types would come from a different copy of that crate.

pub mod era;
pub mod memory;
pub mod peer;
pub mod schema;
pub mod server;
pub mod store_suite;

pub use era::Era;
pub use memory::MemoryStore;
pub use peer::TestPeer;
pub use server::{StdioPipe, TestServer};
