//! The command line as typed (clap types).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// A durable runtime for MCP Tasks: long tool calls become tasks that survive restarts.
#[derive(Debug, Parser)]
#[command(name = "mcp-tasks", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve the tools of a TOML config as an MCP server with durable tasks.
    ///
    /// Examples: mcp-tasks serve --config examples/demo.toml (HTTP on 127.0.0.1:8765)
    ///           mcp-tasks serve --config examples/demo.toml --stdio
    Serve(ServeArgs),

    /// Check a config file without serving: every problem is named with its line.
    ///
    /// Exit status 0 when the file is valid, 1 otherwise.
    CheckConfig(CheckArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The TOML file to check.
    #[arg(value_name = "FILE")]
    pub(crate) config: PathBuf,

    /// Print the result as one JSON object (for scripts).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The TOML file that defines the server and its tools ([server], [[tools]]).
    #[arg(long, short, value_name = "FILE")]
    pub(crate) config: PathBuf,

    /// Speak newline-delimited JSON-RPC on stdin/stdout (logs go to stderr) instead of
    /// Streamable HTTP.
    #[arg(long, conflicts_with = "listen")]
    pub(crate) stdio: bool,

    /// Serve Streamable HTTP at http://ADDR/mcp (default: [server] listen, else
    /// 127.0.0.1:8765). Port 0 picks a free port; the address is printed to stderr.
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<std::net::SocketAddr>,

    /// Where tasks are kept: an SQLite file path (or sqlite://PATH). Default: tasks.sqlite3
    /// in the platform's data directory (e.g. ~/.local/share/mcp-tasks/).
    #[arg(long, value_name = "PATH", env = "MCP_TASKS_STORE")]
    pub(crate) store: Option<String>,
}
