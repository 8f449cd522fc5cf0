//! The interactive task example: the two tools of the TypeScript SDK's
//! `simpleTaskInteractive` server, `confirm_delete` (asks for a confirmation through
//! elicitation) and `write_haiku` (asks the client's model through sampling), both task-only;
//! the tools are in `examples/interactive/tools.rs`. Served over Streamable HTTP at
//! `http://ADDR/mcp`, so the SDK's own example client can drive it.
//!
//! Run it from the workspace root (the root manifest is virtual, so name the package):
//!
//! ```text
//! cargo run --release -p mcp-tasks-server --example interactive -- --listen 127.0.0.1:8000
//! node node_modules/@modelcontextprotocol/sdk/dist/esm/examples/client/simpleTaskInteractiveClient.js \
//!     --url http://127.0.0.1:8000/mcp
//! ```
//!
//! (`interop/interactive.sh` does both and checks the client's output.)
//!
//! Options:
//! - `--listen ADDR`: serve Streamable HTTP on `ADDR` (default `127.0.0.1:8000`, the
//!   reference's port; port 0 picks a free port). The first line on stdout is
//!   `listening on http://<bound address>/mcp`.
//! - `--stdio`: serve one client on stdin/stdout instead.
//! - `--store PATH`: the SQLite task store (default: a file in a temporary directory that is
//!   deleted on exit).
//!
//! It stops on Ctrl-C (HTTP) or at the end of input (stdio).

#[path = "common/run.rs"]
mod run;
#[path = "interactive/tools.rs"]
mod tools;

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    run::main("interactive", 8000, |engine| Ok(tools::server(engine)?)).await
}
