//! Test helpers shared by the crates' integration tests (never used by production code).
//!
//! # Layout
//! - [`schema`]: validates messages against the official MCP JSON schemas in
//!   `../shared/reference/schemas/` (read at test time, never copied into the repo).
//! - [`store_suite`]: the behaviour every [`mcp_tasks_engine::TaskStore`] must show,
//!   turned into tests by [`store_suite!`].

pub mod schema;
pub mod store_suite;
