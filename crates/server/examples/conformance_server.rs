//! The server the official conformance suite (`@modelcontextprotocol/conformance`) tests:
//! every tool, resource, template and prompt its 2025-11-25 server scenarios call, served
//! over Streamable HTTP at `http://ADDR/mcp` (the fixture itself is in
//! `examples/conformance/fixture.rs`).
//!
//! Run it from the workspace root (the root manifest is virtual, so name the package):
//!
//! ```text
//! cargo run --release -p mcp-tasks-server --example conformance_server -- --listen 127.0.0.1:3901
//! npx @modelcontextprotocol/conformance server --url http://localhost:3901/mcp
//! ```
//!
//! Options:
//! - `--listen ADDR`: serve Streamable HTTP on `ADDR` (default `127.0.0.1:3000`; port 0 picks
//!   a free port). The first line on stdout is `listening on http://<bound address>/mcp`.
//! - `--stdio`: serve one client on stdin/stdout instead.
//! - `--store PATH`: the SQLite task store (default: a file in a temporary directory that is
//!   deleted on exit).
//!
//! It stops on Ctrl-C (HTTP) or at the end of input (stdio).

#[path = "conformance/fixture.rs"]
mod fixture;
#[path = "common/run.rs"]
mod run;

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    run::main("conformance_server", 3000, fixture::server).await
}
