//! Test helpers shared by the crates' integration tests (never used by production code).
//!
//! # Layout
//! - [`schema`]: validates messages against the official MCP JSON schemas in
//!   `../shared/reference/schemas/` (read at test time, never copied into the repo).
//! - [`memory`]: [`MemoryStore`], a [`mcp_tasks_engine::TaskStore`] in memory for tests; the
//!   store suite runs against it as well as against SQLite.
//! - [`store_suite`]: the behaviour every [`mcp_tasks_engine::TaskStore`] must show,
//!   turned into tests by [`store_suite!`].

pub mod memory;
pub mod schema;
pub mod store_suite;

pub use memory::MemoryStore;
