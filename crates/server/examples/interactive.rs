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

#[path = "interactive/tools.rs"]
mod tools;

use std::error::Error;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::{Engine, Policy, SystemClock};
use mcp_tasks_server::{http, stdio};
use mcp_tasks_sqlite::SqliteStore;
use tokio::io::BufReader;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How often expired tasks are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

const USAGE: &str = "usage: interactive [--listen ADDR | --stdio] [--store PATH]";

/// Where to serve.
enum Transport {
    Http(SocketAddr),
    Stdio,
}

struct Args {
    transport: Transport,
    store: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("interactive: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("interactive: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn Error>> {
    // Kept until the end of `run`: dropping it deletes the temporary store.
    let temporary = tempfile::tempdir()?;
    let path = args.store.unwrap_or_else(|| temporary.path().join("interactive.sqlite3"));
    let store = SqliteStore::open(&path)?;
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
    let server = tools::server(engine.clone());
    engine.recover().await?;
    let stop = CancellationToken::new();
    let sweeper = engine.spawn_sweeper(SWEEP_EVERY, stop.clone());
    let served = match args.transport {
        Transport::Http(addr) => {
            let listener = TcpListener::bind(addr).await?;
            println!("listening on http://{}/mcp", listener.local_addr()?);
            let shutdown = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            http::serve(listener, server, http::Options::default(), shutdown).await
        }
        Transport::Stdio => stdio::serve(BufReader::new(tokio::io::stdin()), tokio::io::stdout(), server).await,
    };
    stop.cancel();
    let _ = sweeper.await;
    Ok(served?)
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args { transport: Transport::Http(SocketAddr::from(([127, 0, 0, 1], 8000))), store: None };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => {
                let addr = args.next().ok_or("--listen needs an address, such as 127.0.0.1:8000")?;
                let addr = addr.parse().map_err(|err| format!("--listen {addr}: {err}"))?;
                parsed.transport = Transport::Http(addr);
            }
            "--stdio" => parsed.transport = Transport::Stdio,
            "--store" => parsed.store = Some(args.next().ok_or("--store needs a path")?.into()),
            "-h" | "--help" => return Err("help requested".to_owned()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(parsed)
}
