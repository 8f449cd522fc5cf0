//! Test helpers that need the server (never used by production code): a server served for a
//! test, and a client peer of it by era. The helpers with no server in them (the store suite,
//! the memory store, schema validation) are `mcp-tasks-testkit`, re-exported here where a
//! server test needs them.
//!
//! # Layout
//! - [`server`]: [`TestServer`], a [`mcp_tasks_server::Server`] served over HTTP
//!   (`mcp-tasks-http`) on `127.0.0.1:0` or over stdio on an in-memory pipe.
//! - [`peer`]: [`TestPeer`], a client of such a server over stdio, by era, whose every
//!   message is checked against its era's schema ([`schema`]).
//!
//! Use it only from `tests/` folders: inside a crate's own `#[cfg(test)]` unit tests its
//! types would come from a different copy of that crate.

pub mod peer;
pub mod server;

pub use mcp_tasks_testkit::{Era, MemoryStore, era, schema};
pub use peer::TestPeer;
pub use server::{StdioPipe, TestServer};
