//! Integration tests of the real `mcp-tasks` binary over stdio: one test binary, modules
//! by theme. Every message the server sends in these tests is checked against the official
//! 2025-11-25 JSON schema when the harness is dropped.

mod bad_input;
mod harness;
mod lifecycle;
mod restart;
