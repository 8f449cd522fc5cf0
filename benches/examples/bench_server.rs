//! The bench server of issue 7: our real server over Streamable HTTP at `/mcp` with the
//! tools `noop` and `sleep` (see `mcp_tasks_bench::server`), on the durable SQLite store, or
//! on PostgreSQL when `--store` is a `postgres://…` URL (then as one of any number of
//! replicas on that database: claims with a lease, the change feed; `benches/postgres.sh`).
//!
//! ```text
//! cargo run --release --example bench_server -- --listen 127.0.0.1:PORT --store PATH|postgres://…
//!     [--sync full|normal] [--inline-wait-ms MS] [--early on|off] [--ttl-ms MS]
//! ```
//!
//! `noop` is declared as work with no effect outside its result
//! (`ToolDef::start_before_commit`): its work starts while its task's creation commits, and
//! when it ends first (as it does under load) the lifecycle is one row and one commit.
//! `--early off` takes that declaration away: the path of every tool of `mcp-tasks serve`
//! (work started once the creation is answered, its outcome a second commit).
//!
//! `--ttl-ms` gives every task that TTL, whatever its call asks: for runs that expire as many
//! tasks as they create (`benches/postgres.sh`'s `pgexpiry`).
//!
//! `--inline-wait-ms` sets how long a 2026-07-28 call of an optional tool waits to answer
//! inline before it becomes a task (default: the server's, 1000); `0` makes every call of a
//! client that declared the tasks extension a task at once (the Modern lifecycle benchmark).
//!
//! `--sync normal` (WAL fsynced at checkpoints only, not at each commit) is for measuring
//! what the fsync per commit costs; the default and the production setting is `full`.
//!
//! It prints `listening on http://<address>/mcp` to stderr once it serves (after opening
//! and recovering the store), and stops on
//! SIGTERM or Ctrl-C. Logs are off unless `RUST_LOG` asks for them (to stderr).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_bench::server::Settings;
use mcp_tasks_engine::{SessionStore, TaskStore};
use mcp_tasks_postgres::PostgresStore;
use mcp_tasks_sqlite::{SqliteStore, Synchronous};
use tokio::net::TcpListener;

fn main() -> ExitCode {
    // The runtime of the `mcp-tasks` binary (one worker fewer than the cores), so that the
    // bench server measures what users run.
    match mcp_tasks_server::runtime::build_runtime() {
        Ok(runtime) => runtime.block_on(serve()),
        Err(err) => {
            eprintln!("bench_server: cannot start the async runtime: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn serve() -> ExitCode {
    let mut listen = String::from("127.0.0.1:0");
    let mut store: Option<PathBuf> = None;
    let mut synchronous = Synchronous::Full;
    let mut settings = Settings { early: true, ..Settings::default() };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--listen", Some(value)) => listen = value,
            ("--store", Some(value)) => store = Some(value.into()),
            ("--sync", Some(value)) if value == "full" => synchronous = Synchronous::Full,
            ("--sync", Some(value)) if value == "normal" => synchronous = Synchronous::Normal,
            ("--inline-wait-ms", Some(value)) if value.parse::<u64>().is_ok() => {
                settings.inline_wait = value.parse().ok().map(Duration::from_millis);
            }
            ("--early", Some(value)) if value == "on" || value == "off" => settings.early = value == "on",
            ("--ttl-ms", Some(value)) if value.parse::<u64>().is_ok() => settings.ttl_ms = value.parse().ok(),
            _ => {
                eprintln!(
                    "usage: bench_server --listen ADDR --store PATH|postgres://… [--sync full|normal] [--inline-wait-ms MS] [--early on|off] [--ttl-ms MS]"
                );
                return ExitCode::from(2);
            }
        }
    }
    let Some(store) = store else {
        eprintln!("bench_server: --store PATH|postgres://… is required");
        return ExitCode::from(2);
    };
    if let Ok(filter) = std::env::var("RUST_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let listener = match TcpListener::bind(&listen).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("bench_server: cannot listen on {listen}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let shown = store.display().to_string();
    // The store, as the engine and as the HTTP transport's session records hold it.
    // HTTP sessions stored on PostgreSQL only, as `mcp-tasks serve` does (on SQLite they live
    // in the server's memory).
    type Opened = (Arc<dyn TaskStore>, Option<Arc<dyn SessionStore>>);
    let opened: Result<Opened, String> = if shown.starts_with("postgres://") || shown.starts_with("postgresql://") {
        PostgresStore::connect(&shown).await.map(|store| both(Arc::new(store))).map_err(|err| err.to_string())
    } else {
        SqliteStore::open_with(&store, synchronous)
            .map(|store| (Arc::new(store) as Arc<dyn TaskStore>, None))
            .map_err(|err| err.to_string())
    };
    let (store, sessions) = match opened {
        Ok(store) => store,
        Err(err) => {
            eprintln!("bench_server: cannot open the store {}: {err}", mcp_tasks_postgres::redact(&shown));
            return ExitCode::FAILURE;
        }
    };
    let addr = listener
        .local_addr()
        .map_or_else(|_| listen.clone(), |addr| addr.to_string());
    let ready = || eprintln!("listening on http://{addr}/mcp");
    match mcp_tasks_bench::server::serve_store(listener, store, sessions, settings, ready, stop_signal())
        .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("bench_server: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGTERM or Ctrl-C.
async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// The allocator of the `mcp-tasks` binary (mimalloc; see `crates/cli/src/main.rs`), so that
/// the bench server measures what users run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `store` as the engine holds it and as the HTTP transport holds it for its sessions.
fn both<S: TaskStore + SessionStore>(store: Arc<S>) -> (Arc<dyn TaskStore>, Option<Arc<dyn SessionStore>>) {
    (Arc::clone(&store) as Arc<dyn TaskStore>, Some(store))
}
