//! The `mcp-tasks` binary: parse the command line, run, map the outcome to an exit code.

mod args;
mod call;
mod check;
mod host_config;
mod ledger;
mod list;
mod options;
mod otlp;
mod prompt;
mod proxy;
mod reconnect;
mod remote;
mod sampling;
mod serve;
mod supervise;
mod tasks;
mod terminal;
mod wait;
mod watch;

use std::process::ExitCode;

use clap::Parser;
use mcp_tasks_config::{Config, TracingConfig};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;

use crate::args::{Cli, Command};

/// mimalloc instead of glibc's malloc: a task lifecycle allocates and frees a few hundred small
/// blocks across the Tokio workers and the store's writer thread, and glibc's arenas spent a
/// fifth of its instructions there (consolidating fast bins on every allocation of 1 KiB or more).
/// `bash benches/profile.sh modern`: 433 k instructions per lifecycle with glibc, 351 k with
/// mimalloc; docs/benchmarks/07-seventh-round.md.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|first| first == supervise::SUBCOMMAND) {
        return supervise::run(args);
    }
    if let Some(prefix) = supervise::prefix() {
        mcp_tasks_command::set_supervisor(prefix.clone());
        mcp_tasks_client::set_supervisor(prefix);
    }
    let cli = Cli::parse();
    let serving = matches!(cli.command, Command::Serve(_) | Command::Worker(_) | Command::Proxy(_));
    let level = if serving { "info" } else { "warn" };
    let exporter = match otlp::layer(&tracing_config(&cli.command)) {
        Ok(Some((layer, exporter))) => {
            init_logging(level, Some(layer));
            Some(exporter)
        }
        Ok(None) => {
            init_logging(level, None);
            None
        }
        Err(err) => {
            eprintln!("mcp-tasks: {}", describe(&err));
            return ExitCode::FAILURE;
        }
    };
    let runtime = match mcp_tasks_server::runtime::build_runtime() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("mcp-tasks: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let (outcome, error_status) = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => (serve::run(args).await.map(|()| 0), 1),
            Command::Proxy(args) => (proxy::run(args).await.map(|()| 0), 1),
            Command::Worker(args) => (serve::worker(args).await.map(|()| 0), 1),
            Command::CheckConfig(args) => (check::run(&args).await.map(|()| 0), 1),
            Command::HostConfig(args) => (host_config::run(&args).map(|()| 0), 2),
            Command::Tools(args) => (call::tools(args).await, remote::USAGE),
            Command::Call(args) => (call::call(args).await, remote::USAGE),
            Command::Tasks(args) => (tasks::run(args.command).await, remote::USAGE),
        }
    });
    if serving {
        // Dropping the runtime's tasks kills the process groups of running commands; their
        // tasks stay `working` in the store and the restart policy resolves them next start.
        // The wait is for blocking threads only: over stdio one is parked in a read of stdin
        // that never returns while the client keeps it open (SIGTERM), so keep it short; the
        // store's writer is a thread of its own and SQLite commits are atomic anyway.
        runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    } else {
        // A client may be blocked reading a prompt's answer from stdin: do not wait for it.
        runtime.shutdown_background();
    }
    if let Some(exporter) = exporter {
        exporter.shutdown();
    }
    match outcome {
        Ok(status) => ExitCode::from(status),
        Err(err) => {
            eprintln!("mcp-tasks: {}", describe(&err));
            ExitCode::from(error_status)
        }
    }
}

/// An error and its causes, `a: b: c`, leaving out a cause whose text the message before it
/// already ends with (errors that print their source as part of their own message, such as
/// the store's, would otherwise say it twice).
fn describe(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let cause = cause.to_string();
        if text.ends_with(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

/// The `[server.tracing]` of the config a serving command is about to load, read here first
/// so that the trace exporter is part of the subscriber from the start. A config that
/// cannot be read gives the default (no export): the command itself reports why.
fn tracing_config(command: &Command) -> TracingConfig {
    let path = match command {
        Command::Serve(args) => Some(&args.config),
        Command::Worker(args) => Some(&args.config),
        Command::Proxy(args) => args.config.as_ref(),
        _ => None,
    };
    path.and_then(|path| Config::load(path).ok()).map(|config| config.server.tracing).unwrap_or_default()
}

/// Logs go to stderr only (stdout belongs to the stdio transport, or to a client command's
/// output). `RUST_LOG` picks the level; the default is `info` for `serve`, `warn` otherwise.
/// `export`, if any, gets the spans too (the OTLP exporter, at its own level).
fn init_logging(default: &str, export: Option<otlp::BoxedLayer>) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false).with_filter(filter);
    tracing_subscriber::registry().with(export).with(logs).init();
}
