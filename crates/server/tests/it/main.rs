//! The server library's integration tests, one binary: a [`mcp_tasks_server::Server`]
//! defined in Rust, driven over an in-memory stdio pipe.
//!
//! - `peer`: the client side of the pipe (shared by every module).
//! - `progress`: progress notifications of tasks and plain calls.
//! - `catalog`: resources, templates, prompts, completion and logging defined in code.
//! - `conformance_fixture`: the conformance fixture server of `examples/`.
//! - `input`: input requests inside tasks across sessions.
//! - `panics`: handlers that panic still get their request answered (stdio and HTTP).
//! - `layering`: which files may name 2025-11-25 types, and where the era is matched.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod arguments;
mod catalog;
mod conformance_fixture;
mod input;
mod interactive;
mod layering;
mod limits;
mod panics;
mod peer;
mod progress;
