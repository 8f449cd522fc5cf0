//! The configuration of `mcp-tasks serve`, and the command-backed tools it defines.
//!
//! A TOML file names the server's settings and a list of tools; each tool runs a command
//! (an argv template, never a shell line) with the call's arguments filled in:
//!
//! ```toml
//! [server]
//! default_ttl = "1h"
//! listen = "127.0.0.1:8765"
//! max_body = "4MiB"
//!
//! [[server.auth.tokens]]
//! principal = "alice"
//! token_env = "MCP_TASKS_TOKEN_ALICE"
//!
//! [[tools]]
//! name = "render"
//! command = ["blender", "--background", "{scene}"]
//! task_support = "required"
//! timeout = "30m"
//! input_schema = { type = "object", properties = { scene = { type = "string" } } }
//! ```
//!
//! # Layout
//! - `config`: [`Config`] and its parts, parsed and checked with line numbers in errors.
//! - `auth`: [`Auth`], the bearer tokens of `[[server.auth.tokens]]` as SHA-256 digests,
//!   checked in constant time.
//! - `hosts`: the `Host` and `Origin` values a server accepts.
//! - `size`: byte sizes such as `"4MiB"`.
//! - `command`: [`CommandTool`], the [`Handler`](mcp_tasks_engine::Handler) that runs a
//!   tool's command in its own process group and ends the whole group with the call;
//!   `command::line_protocol` reads its stdout, where lines that start with [`MARKER`]
//!   report progress and status or ask the user (the answer goes to the command's stdin).
//! - `template`: the `{name}` placeholders of command elements.
//!
//! # Example
//! ```
//! use mcp_tasks_config::{CommandTool, Config};
//! use serde_json::json;
//!
//! let config = Config::parse(r#"
//!     [[tools]]
//!     name = "greet"
//!     command = ["echo", "hello", "{who}"]
//!     input_schema = { type = "object", properties = { who = { type = "string" } } }
//! "#)?;
//! let tool = CommandTool::new(&config.tools[0]);
//! assert_eq!(tool.argv(&json!({"who": "world; rm -rf /"})).ok(), Some(vec![
//!     "echo".to_owned(), "hello".to_owned(), "world; rm -rf /".to_owned(),
//! ]));
//! # Ok::<(), mcp_tasks_config::ConfigError>(())
//! ```

mod auth;
mod command;
mod config;
mod hosts;
mod size;
mod template;

pub use auth::Auth;
pub use command::{CommandTool, MARKER};
pub use config::{Config, ConfigError, Problem, ServerConfig, TaskSupport, ToolConfig};
