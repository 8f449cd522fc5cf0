//! [`Era`]: the protocol era a test speaks or validates against (the protocol crate's).

/// The protocol eras, as the server's dispatch knows them (one type for the whole tree).
pub use mcp_tasks_protocol::era::Era;
