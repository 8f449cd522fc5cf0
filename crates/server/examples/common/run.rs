//! What every example server shares: its command line (`--listen ADDR | --stdio`,
//! `--store PATH`), the store, recovery, the TTL sweeper, and serving until Ctrl-C (HTTP) or
//! the end of input (stdio). Included by each example with `#[path]`.

use std::error::Error;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::{Engine, Policy, SystemClock};
use mcp_tasks_http as http;
use mcp_tasks_server::{Server, stdio};
use mcp_tasks_sqlite::SqliteStore;
use tokio::io::BufReader;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How often expired tasks are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Where to serve.
enum Transport {
    Http(SocketAddr),
    Stdio,
}

struct Args {
    transport: Transport,
    store: Option<PathBuf>,
}

/// Parses the command line of example `name` (default HTTP port `port`), builds its server
/// with `build` and serves it; the exit code says how it went.
pub(crate) async fn main(
    name: &str,
    port: u16,
    build: impl FnOnce(Engine) -> Result<Server, Box<dyn Error>>,
) -> ExitCode {
    let args = match parse_args(std::env::args().skip(1), port) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{name}: {message}\nusage: {name} [--listen ADDR | --stdio] [--store PATH]");
            return ExitCode::from(2);
        }
    };
    match run(name, args, build).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{name}: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(
    name: &str,
    args: Args,
    build: impl FnOnce(Engine) -> Result<Server, Box<dyn Error>>,
) -> Result<(), Box<dyn Error>> {
    // Kept until the end of `run`: dropping it deletes the temporary store.
    let temporary = tempfile::tempdir()?;
    let path = args
        .store
        .unwrap_or_else(|| temporary.path().join(format!("{name}.sqlite3")));
    let store = SqliteStore::open(&path)?;
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
    let server = build(engine.clone())?;
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
        Transport::Stdio => {
            stdio::serve(
                BufReader::new(tokio::io::stdin()),
                tokio::io::stdout(),
                server,
            )
            .await
        }
    };
    stop.cancel();
    let _ = sweeper.await;
    Ok(served?)
}

fn parse_args(mut args: impl Iterator<Item = String>, port: u16) -> Result<Args, String> {
    let mut parsed = Args {
        transport: Transport::Http(SocketAddr::from(([127, 0, 0, 1], port))),
        store: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => {
                let addr = args
                    .next()
                    .ok_or("--listen needs an address, such as 127.0.0.1:8000")?;
                let addr = addr
                    .parse()
                    .map_err(|err| format!("--listen {addr}: {err}"))?;
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
