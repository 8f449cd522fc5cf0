//! The `mcp-tasks` binary: parse the command line, run, map the outcome to an exit code.

mod args;
mod check;
mod serve;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("mcp-tasks: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
            Command::CheckConfig(args) => check::run(&args),
        }
    });
    // Dropping the runtime's tasks kills the process groups of running commands; their
    // tasks stay `working` in the store and the restart policy resolves them next start.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-tasks: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr only (stdout belongs to the stdio transport). `RUST_LOG` picks the
/// level; the default is `info`.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).init();
}
