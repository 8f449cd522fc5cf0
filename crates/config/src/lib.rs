//! The configuration of `mcp-tasks serve` as plain data: the server's settings and the
//! command-backed tools it defines, parsed and checked (the command runner is the
//! `mcp-tasks-command` crate; this one depends on no runtime).
//!
//! A TOML file names the server's settings and a list of tools; each tool runs a command
//! (an argv template, never a shell line) with the call's arguments filled in:
//!
//! ```toml
//! [server]
//! default_ttl = "1h"
//! listen = "127.0.0.1:8765"
//! max_body = "4MiB"
//! max_running = 64
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
//! cwd = "/srv/scenes"
//! env = { BLENDER_USER_CONFIG = "/srv/blender", RENDER_LABEL = "scene {scene}" }
//! max_concurrent = 2
//! on_restart = "retry"
//! max_attempts = 2
//! input_schema = { type = "object", properties = { scene = { type = "string" } } }
//! ```
//!
//! # Keys
//!
//! `[server]`, each optional: `name` (`"mcp-tasks"`), `default_ttl` (`"1h"`), `max_ttl`
//! (`"24h"`), `poll_interval` (`"1s"`), `inline_wait` (`"1s"`, 2026-07-28 task decision), `retry_wait` (`"10m"`, 2026-07-28: how long work that asked waits for the retry), `listen` (`"127.0.0.1:8765"`), `allowed_hosts`
//! and `allowed_origins` (`[]`), `max_body` (`"4MiB"`), `max_running` (64 tasks running
//! at once overall), `max_running_per_principal` (16), `max_retained_per_principal`
//! (10000 tasks kept per principal), `metrics` (`true`: serve `/metrics`), and `[[server.auth.tokens]]` (`principal` and one of
//! `token_sha256`, `token_env`). The three limits are whole numbers of at least 1; this
//! crate checks them, the engine enforces them.
//!
//! `[[tools]]`: `name` and `command` are required; the rest is optional (defaults in
//! brackets).
//! - `description` (`""`), `input_schema` (`{ type = "object" }`), `task_support`
//!   (`"optional"`, or `"required"`, `"forbidden"`).
//! - `inline_wait` (`[server] inline_wait`): how long a 2026-07-28 call waits to answer
//!   inline before it becomes a task.
//! - `timeout` (none): a duration such as `"30s"`; then the process group gets SIGTERM,
//!   and SIGKILL after `kill_grace` (`"2s"`).
//! - `cwd` (the server's): an existing directory; a relative one is relative to the
//!   config file.
//! - `env` (none): a table of `NAME = "value"`; values hold `{arg}` placeholders like
//!   command elements.
//! - `inherit_env` (`false`: only `PATH`, `HOME`, `LANG`, `TZ`): `true` for the server's
//!   whole environment, or a list of names to pass as well, `["AWS_PROFILE"]`.
//! - `stdin` (`"none"`: line-protocol answers only): `{ arg = "document" }` writes that
//!   argument's value, then closes stdin (the tool can then ask no questions).
//! - `max_output` (`"1MiB"`): the cap of stdout and of stderr each, keeping the tail.
//! - `output` (`"text"`) or `"json"`: stdout must be one JSON object, returned as
//!   `structuredContent`; `output_schema` (none, JSON output only) is a JSON Schema
//!   table it must match, listed as the tool's `outputSchema`.
//! - `on_restart` (`"fail"`) or `"retry"`, with `max_attempts` (3, retry only).
//! - `max_concurrent` (no limit): calls of this tool running at once; the engine makes
//!   the others wait.
//!
//! `[upstream.tools.NAME]` (read by `mcp-tasks proxy`, one table per tool of the upstream
//! server, all optional): `task_support` (`"optional"`), `timeout`, `inline_wait`,
//! `on_restart` (`"fail"`) with `max_attempts` (3, retry only), `max_concurrent`; checked
//! as in `[[tools]]`.
//!
//! Unknown keys are refused. Every problem names its line: [`Config::load`] and
//! [`Config::parse`] give the first, [`Config::check`] and [`Config::problems`] all of
//! them (one per tool and one for `[server]` at most, after the TOML has the right
//! shape).
//!
//! # Layout
//! - `config`: [`Config`], parsed and checked with line numbers in errors; its parts:
//!   - `config::server`: [`ServerConfig`], the `[server]` table, and its check;
//!   - `config::tool`: [`ToolConfig`] and the types of its settings ([`TaskSupport`],
//!     [`RestartPolicy`], [`InheritEnv`], [`Stdin`], [`OutputFormat`]);
//!     `config::tool::raw` checks a `[[tools]]` entry, `config::tool::checker` its
//!     settings one by one;
//!   - `config::problem`: [`ConfigError`] and [`Problem`];
//!   - `config::lines`: byte spans to line numbers, and the checks of durations, sizes and
//!     counts that name the line of what they refuse.
//!   - `config::oauth`: [`OAuthConfig`], `[server.auth.oauth]` (JWT access tokens), and its check;
//! - `auth`: [`Auth`], the bearer tokens of `[[server.auth.tokens]]` as SHA-256 digests,
//!   checked in constant time.
//! - [`hosts`]: the `Host` and `Origin` values a server accepts (`mcp_tasks_protocol::hosts`,
//!   re-exported): the check of the configured lists, and the match of a request's headers
//!   that the HTTP transport uses too.
//! - `size`: byte sizes such as `"4MiB"`.
//! - [`template`]: the `{name}` placeholders of command elements and `env` values, checked
//!   here and filled by the command runner (`mcp-tasks-command`).
//!
//! # Example
//! ```
//! use mcp_tasks_config::{Config, TaskSupport};
//!
//! let config = Config::parse(r#"
//!     [[tools]]
//!     name = "greet"
//!     command = ["echo", "hello", "{who}"]
//!     task_support = "required"
//!     input_schema = { type = "object", properties = { who = { type = "string" } } }
//! "#)?;
//! assert_eq!(config.tools[0].command, ["echo", "hello", "{who}"]);
//! assert_eq!(config.tools[0].task_support, TaskSupport::Required);
//! # Ok::<(), mcp_tasks_config::ConfigError>(())
//! ```

mod auth;
mod config;
pub use mcp_tasks_protocol::hosts;
mod size;
pub mod template;

pub use auth::Auth;
pub use config::{
    Config, ConfigError, InheritEnv, JwksSource, OAUTH_PRINCIPAL_PREFIX, OAuthConfig, OutputFormat, Problem, RestartPolicy,
    ServerConfig, Stdin, TaskSupport,
    TaskToolNames, ToolConfig, TracingConfig, UpstreamToolConfig, WEBHOOK_EVENTS, Webhook,
};
