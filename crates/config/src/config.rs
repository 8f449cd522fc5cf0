//! The TOML configuration file: `[server]` settings and the `[[tools]]` it serves.
//!
//! Parsing goes through private `Raw*` structs that keep the spans of the values we check
//! ourselves, so that every error can name the line it is about. The public types hold
//! only checked values: durations are [`Duration`]s, sizes are byte counts, the listen
//! address is a [`SocketAddr`], tokens are SHA-256 digests inside an [`Auth`], schemas are
//! JSON, and every placeholder of every command names a property of its tool's schema.
//! The `[[tools]]` entries are checked in the `tool` submodule.

mod tool;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::Spanned;

use crate::auth::{self, Auth, EnvTokenError};
use crate::hosts::{self, Authority, Origin};
use crate::size;

/// The whole configuration of `mcp-tasks serve`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// The `[server]` table.
    pub server: ServerConfig,
    /// The `[[tools]]` array, in file order.
    pub tools: Vec<ToolConfig>,
}

/// The `[server]` table.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    /// The server name announced to clients (`name`, default `mcp-tasks`).
    pub name: String,
    /// The TTL granted to a task whose requestor asks for none (`default_ttl`, default 1h).
    pub default_ttl: Duration,
    /// The longest TTL granted, whatever the requestor asks (`max_ttl`, default 24h).
    pub max_ttl: Duration,
    /// The poll interval suggested to requestors (`poll_interval`, default 1s).
    pub poll_interval: Duration,
    /// How long an HTTP session may go without a request and without an open stream
    /// before it is ended (`session_idle`, default 30m); its tasks stay, a client starts a
    /// new session.
    pub session_idle: Duration,
    /// The address the HTTP transport listens on (`listen`, default
    /// [`DEFAULT_LISTEN`](ServerConfig::DEFAULT_LISTEN), `127.0.0.1:8765`). An IP address
    /// and a port; host names are not resolved.
    pub listen: SocketAddr,
    /// `Host` header values accepted besides `localhost`, `127.0.0.1` and `[::1]` (which
    /// are always accepted, with any port) (`allowed_hosts`, default none). An entry
    /// without a port accepts any port. See [`allows_host`](ServerConfig::allows_host).
    pub allowed_hosts: Vec<String>,
    /// `Origin` header values accepted besides `http(s)://` `localhost`, `127.0.0.1` and
    /// `[::1]` with any port (`allowed_origins`, default none), e.g.
    /// `https://app.example.com`. See [`allows_origin`](ServerConfig::allows_origin).
    pub allowed_origins: Vec<String>,
    /// The largest request body accepted, in bytes (`max_body`, default
    /// [`DEFAULT_MAX_BODY`](ServerConfig::DEFAULT_MAX_BODY), 4 MiB). Written as a whole
    /// number of bytes or with a unit: `"512KiB"`, `"4MiB"`, `"1GB"`, `1000000`.
    pub max_body: usize,
    /// The bearer tokens accepted (`[[server.auth.tokens]]`, default none: authentication
    /// off). Holds SHA-256 digests only.
    pub auth: Auth,
    /// How many tasks may run at once, all principals together (`max_running`, default
    /// 64; at least 1). Parsed and checked here; the engine enforces it.
    pub max_running: u32,
    /// How many tasks one principal may have running at once (`max_running_per_principal`,
    /// default 16; at least 1). Parsed and checked here; the engine enforces it.
    pub max_running_per_principal: u32,
    /// How many tasks, in any status, are kept for one principal
    /// (`max_retained_per_principal`, default 10000; at least 1). Parsed and checked here;
    /// the engine enforces it.
    pub max_retained_per_principal: u32,
}

impl ServerConfig {
    /// The default of `listen`: loopback only, port 8765.
    pub const DEFAULT_LISTEN: SocketAddr =
        SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 8765);
    /// The default of `max_body`: 4 MiB.
    pub const DEFAULT_MAX_BODY: usize = 4 << 20;
    /// The default of `max_running`.
    pub const DEFAULT_MAX_RUNNING: u32 = 64;
    /// The default of `max_running_per_principal`.
    pub const DEFAULT_MAX_RUNNING_PER_PRINCIPAL: u32 = 16;
    /// The default of `max_retained_per_principal`.
    pub const DEFAULT_MAX_RETAINED_PER_PRINCIPAL: u32 = 10_000;

    /// The authenticator built from `[[server.auth.tokens]]` (the same as the `auth` field).
    #[must_use]
    pub fn auth(&self) -> &Auth {
        &self.auth
    }

    /// Whether a request's `Host` header value is accepted: `localhost`, `127.0.0.1` or
    /// `[::1]` with any port or none, or a match of one of
    /// [`allowed_hosts`](ServerConfig::allowed_hosts) (host names compare without regard to
    /// ASCII case; an entry without a port accepts any port, one with a port only that).
    #[must_use]
    pub fn allows_host(&self, host: &str) -> bool {
        hosts::host_allowed(&self.allowed_hosts, host)
    }

    /// Whether a request's `Origin` header value is accepted: `http://` or `https://` on
    /// `localhost`, `127.0.0.1` or `[::1]` with any port or none, or one of
    /// [`allowed_origins`](ServerConfig::allowed_origins) (same scheme, host and port; a
    /// left-out port is the scheme's default). `null` and non-HTTP origins are refused.
    #[must_use]
    pub fn allows_origin(&self, origin: &str) -> bool {
        hosts::origin_allowed(&self.allowed_origins, origin)
    }
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            name: "mcp-tasks".to_owned(),
            default_ttl: Duration::from_secs(60 * 60),
            max_ttl: Duration::from_secs(24 * 60 * 60),
            poll_interval: Duration::from_secs(1),
            session_idle: Duration::from_secs(30 * 60),
            listen: ServerConfig::DEFAULT_LISTEN,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body: ServerConfig::DEFAULT_MAX_BODY,
            auth: Auth::default(),
            max_running: ServerConfig::DEFAULT_MAX_RUNNING,
            max_running_per_principal: ServerConfig::DEFAULT_MAX_RUNNING_PER_PRINCIPAL,
            max_retained_per_principal: ServerConfig::DEFAULT_MAX_RETAINED_PER_PRINCIPAL,
        }
    }
}

/// One `[[tools]]` entry: a tool backed by a command.
///
/// Build one by hand with [`ToolConfig::new`] and struct update syntax; the defaults are
/// those of a config file that leaves the keys out.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolConfig {
    /// The tool name; unique in the file.
    pub name: String,
    /// What the tool does, for the model (default empty).
    pub description: String,
    /// The JSON Schema of the arguments; always an object schema (`"type": "object"`).
    pub input_schema: Value,
    /// The argv template: the program, then its arguments. `{name}` stands for the
    /// argument `name` (see [`template`](crate::template)); `{{` and `}}` are literal
    /// braces. The program itself holds no placeholder.
    pub command: Vec<String>,
    /// Whether the tool may, must or must not be called as a task (default optional).
    pub task_support: TaskSupport,
    /// How long a call may run before its processes are ended; `None` is unlimited.
    pub timeout: Option<Duration>,
    /// How long the process group has between SIGTERM and SIGKILL when a call is ended
    /// (timeout, cancellation, or processes left behind by the command) (`kill_grace`,
    /// default [`DEFAULT_KILL_GRACE`](ToolConfig::DEFAULT_KILL_GRACE), 2 s).
    pub kill_grace: Duration,
    /// What to do with a task this tool was running when the server died (default fail).
    pub on_restart: RestartPolicy,
    /// How many times in all a task of this tool may be started when `on_restart` is
    /// retry, the first run included (`max_attempts`, default
    /// [`DEFAULT_MAX_ATTEMPTS`](ToolConfig::DEFAULT_MAX_ATTEMPTS), 3; at least 1). A config
    /// file may only set it together with `on_restart = "retry"`.
    pub max_attempts: u32,
    /// How many calls of this tool may run at once (`max_concurrent`, default `None`:
    /// no limit of its own; at least 1). The engine makes further calls wait.
    pub max_concurrent: Option<u32>,
    /// The directory the command runs in (`cwd`, default `None`: the server's). A relative
    /// `cwd` in a file read by [`Config::load`] is taken relative to the file's directory
    /// (and stored joined to it); it must exist when the config is read.
    pub cwd: Option<PathBuf>,
    /// Environment variables set for the command, by name (`env`, default none). Values
    /// are templates like command elements: a value that is exactly `{arg}` leaves the
    /// variable unset when the argument is absent or `null`; a placeholder inside a longer
    /// value becomes the empty string then. Set after the inherited variables, so they
    /// win.
    pub env: BTreeMap<String, String>,
    /// Which variables of the server's environment the command inherits (`inherit_env`,
    /// default [`InheritEnv::Minimal`]).
    pub inherit_env: InheritEnv,
    /// What the command's stdin carries (`stdin`, default [`Stdin::Answers`]).
    pub stdin: Stdin,
    /// The most bytes of stdout, and separately of stderr, that a result carries; past it
    /// the start is cut, the tail kept, and the result says how much was cut
    /// (`max_output`, default [`DEFAULT_MAX_OUTPUT`](ToolConfig::DEFAULT_MAX_OUTPUT),
    /// 16 MiB).
    pub max_output: usize,
    /// How stdout becomes the result (`output`, default text).
    pub output: OutputFormat,
    /// The JSON Schema that JSON output must match (`output_schema`, default none). Always
    /// an object schema, and only with `output = "json"`. A server lists it as the tool's
    /// `outputSchema`.
    pub output_schema: Option<Value>,
}

impl ToolConfig {
    /// The default of `kill_grace`.
    pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);
    /// The default of `max_attempts`.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
    /// The default of `max_output`: 16 MiB.
    pub const DEFAULT_MAX_OUTPUT: usize = 16 << 20;

    /// A tool `name` running `command`, with every other setting at its default (an input
    /// schema of `{"type": "object"}`: no arguments). Not checked: a tool built by hand
    /// whose template is invalid fails its calls instead.
    pub fn new(name: impl Into<String>, command: Vec<String>) -> ToolConfig {
        ToolConfig {
            name: name.into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            command,
            task_support: TaskSupport::default(),
            timeout: None,
            kill_grace: ToolConfig::DEFAULT_KILL_GRACE,
            on_restart: RestartPolicy::default(),
            max_attempts: ToolConfig::DEFAULT_MAX_ATTEMPTS,
            max_concurrent: None,
            cwd: None,
            env: BTreeMap::new(),
            inherit_env: InheritEnv::default(),
            stdin: Stdin::default(),
            max_output: ToolConfig::DEFAULT_MAX_OUTPUT,
            output: OutputFormat::default(),
            output_schema: None,
        }
    }
}

/// Which variables of the server's environment a tool's command inherits (`inherit_env`).
///
/// Exhaustive on purpose: nothing, everything, or a list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum InheritEnv {
    /// All of them (`inherit_env = true`), secrets included: the `token_env` variables of
    /// `[[server.auth.tokens]]` too.
    All,
    /// Only `PATH`, `HOME`, `LANG` and `TZ`, those that are set (`inherit_env = false`, the
    /// default).
    #[default]
    Minimal,
    /// Those of [`Minimal`](InheritEnv::Minimal), and these (`inherit_env = ["AWS_PROFILE",
    /// "CI"]`), those that are set.
    Names(Vec<String>),
}

/// What a tool's command reads on stdin (`stdin`).
///
/// Exhaustive on purpose, as [`OutputFormat`] is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Stdin {
    /// The answers to the questions the command asks with the line protocol, one JSON line
    /// each; stdin stays open until the process group has ended (`stdin = "none"`, the
    /// default: nothing but answers).
    #[default]
    Answers,
    /// The value of this argument, written verbatim, then stdin is closed (`stdin = { arg =
    /// "document" }`). Strings are written as they are (no newline is added), other JSON
    /// values as compact JSON, an absent or `null` argument as nothing. Such a command
    /// cannot be answered: a question it asks with the line protocol is not asked.
    Arg(String),
}

/// How a tool's stdout becomes its result (`output`).
///
/// Exhaustive on purpose: the command runner handles every format, and a new one must
/// not compile until it does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// stdout must be exactly one JSON object (whitespace around it is fine), returned as
    /// the result's `structuredContent` and as its text (`output = "json"`). Anything else,
    /// or an object that does not match `output_schema`, is an error result saying why.
    Json,
    /// stdout is the result's text (`output = "text"`, the default).
    #[default]
    Text,
}

/// What to do with a task of a tool that was running when its server died (`on_restart`):
/// `"fail"` or `"retry"`.
///
/// Mirrors the engine's `RestartPolicy`; the config crate keeps its own copy so that it
/// does not depend on the engine (the CLI maps one onto the other).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestartPolicy {
    /// Fail it with an error that says execution was interrupted by a restart (the
    /// default in a config file).
    #[default]
    Fail,
    /// Run it again, up to `max_attempts` runs in all (for idempotent tools).
    Retry,
}

/// Whether a tool may be called as a task: `"forbidden"`, `"optional"` or `"required"`.
///
/// Mirrors the protocol's `execution.taskSupport`; the config crate keeps its own copy so
/// that it does not depend on the wire types.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// The tool must not be called as a task.
    Forbidden,
    /// The tool may be called either way (the default in a config file).
    #[default]
    Optional,
    /// The tool must be called as a task.
    Required,
}

/// A configuration that could not be read or is not valid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("could not read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The text is not a valid configuration.
    #[error("{}{problem}", Location { file: file.as_deref(), line: *line })]
    Invalid {
        /// The file, when the text came from one.
        file: Option<PathBuf>,
        /// The 1-based line the problem is on, when known.
        line: Option<usize>,
        /// What is wrong.
        problem: Problem,
    },
}

/// What is wrong with a configuration ([`ConfigError::Invalid`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// A `server.allowed_hosts` entry that is not `host` or `host:port`.
    #[error("server.allowed_hosts: invalid host `{value}`: {reason}")]
    AllowedHost {
        /// The entry.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `server.allowed_origins` entry that is not `http(s)://host[:port]`.
    #[error("server.allowed_origins: invalid origin `{value}`: {reason}")]
    AllowedOrigin {
        /// The entry.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A command element has an unmatched or empty brace.
    #[error("tool `{tool}`: command element `{element}`: {reason}")]
    BadTemplate {
        /// The tool.
        tool: String,
        /// The element.
        element: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An `env` value has an unmatched or empty brace.
    #[error("tool `{tool}`: env `{name}`: {reason}")]
    BadEnvTemplate {
        /// The tool.
        tool: String,
        /// The variable.
        name: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// A whole number out of range (`max_attempts`, `max_concurrent`, the `[server]`
    /// limits).
    #[error("{field}: invalid value {value}: {reason}")]
    Count {
        /// Which setting, e.g. `server.max_running`.
        field: String,
        /// The number given.
        value: i64,
        /// Why it is not valid.
        reason: String,
    },
    /// A `cwd` that is not an existing directory.
    #[error("tool `{tool}`: cwd `{}` {reason}", path.display())]
    Cwd {
        /// The tool.
        tool: String,
        /// The directory, as resolved (joined to the config file's directory if relative).
        path: PathBuf,
        /// `does not exist`, `is not a directory`, ...
        reason: String,
    },
    /// A duration that does not parse, or is zero where zero makes no sense.
    #[error("{field}: invalid duration `{value}`: {reason}")]
    Duration {
        /// Which setting, e.g. `server.default_ttl`.
        field: String,
        /// The text given.
        value: String,
        /// Why it is not valid.
        reason: String,
    },
    /// Two tools with one name.
    #[error("duplicate tool name `{name}` (first defined on line {first_line})")]
    DuplicateTool {
        /// The name.
        name: String,
        /// The line of the first tool with this name.
        first_line: usize,
    },
    /// Two `[[server.auth.tokens]]` entries with the same token.
    #[error(
        "server.auth.tokens: the token of principal `{principal}` is also the token of \
         principal `{first_principal}` (line {first_line})"
    )]
    DuplicateToken {
        /// The principal of the later entry.
        principal: String,
        /// The principal of the first entry with this token.
        first_principal: String,
        /// The line of the first entry's `principal`.
        first_line: usize,
    },
    /// A `[[server.auth.tokens]]` entry whose `principal` is empty.
    #[error("server.auth.tokens: principal must not be empty")]
    EmptyPrincipal,
    /// An `env` key or `inherit_env` entry that cannot be an environment variable name.
    #[error(
        "tool `{tool}`: {setting}: `{name}` is not a valid environment variable name (it is \
         empty or holds `=` or a NUL)"
    )]
    EnvName {
        /// The tool.
        tool: String,
        /// `env` or `inherit_env`.
        setting: String,
        /// The name given.
        name: String,
    },
    /// `max_attempts` without `on_restart = "retry"`, where it would mean nothing.
    #[error("tool `{tool}`: max_attempts applies only with on_restart = \"retry\"")]
    MaxAttemptsWithoutRetry {
        /// The tool.
        tool: String,
    },
    /// An `output_schema` that is not an object schema, does not compile, or comes without
    /// `output = "json"`.
    #[error("tool `{tool}`: output_schema {reason}")]
    OutputSchema {
        /// The tool.
        tool: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `command` with no program.
    #[error("tool `{tool}`: `command` must hold at least the program to run")]
    EmptyCommand {
        /// The tool.
        tool: String,
    },
    /// The program is a placeholder: callers must not choose what runs.
    #[error("tool `{tool}`: the program (first element of `command`) cannot hold a placeholder")]
    PlaceholderProgram {
        /// The tool.
        tool: String,
    },
    /// An `input_schema` that is not an object schema.
    #[error("tool `{tool}`: input_schema {reason}")]
    Schema {
        /// The tool.
        tool: String,
        /// What is wrong with it.
        reason: String,
    },
    /// TOML that does not parse, or does not fit the configuration's shape (unknown key,
    /// missing key, wrong type, unknown value).
    #[error("{0}")]
    Toml(String),
    /// `default_ttl` longer than `max_ttl`.
    #[error("server.default_ttl ({default_ttl}) is longer than server.max_ttl ({max_ttl})")]
    TtlOrder {
        /// `default_ttl` as written back by humantime.
        default_ttl: String,
        /// `max_ttl` as written back by humantime.
        max_ttl: String,
    },
    /// A `server.listen` that is not an IP address and port.
    #[error(
        "server.listen: invalid socket address `{value}`: {reason} (expected an IP address \
         and a port, e.g. 127.0.0.1:8765 or [::1]:8765)"
    )]
    Listen {
        /// The text given.
        value: String,
        /// Why it is not valid.
        reason: String,
    },
    /// A byte size that does not parse, or is zero.
    #[error("{field}: invalid size `{value}`: {reason}")]
    Size {
        /// Which setting, e.g. `server.max_body`.
        field: String,
        /// The value given, as written.
        value: String,
        /// Why it is not valid.
        reason: String,
    },
    /// A `[[server.auth.tokens]]` entry with both or neither of `token_sha256` and
    /// `token_env`.
    #[error(
        "server.auth.tokens: principal `{principal}`: give exactly one of token_sha256 and \
         token_env, {reason}"
    )]
    TokenSource {
        /// The principal.
        principal: String,
        /// `not both` or `not neither`.
        reason: String,
    },
    /// A `token_sha256` that is not 64 hexadecimal digits (or is the digest of nothing).
    #[error("server.auth.tokens: principal `{principal}`: token_sha256: {reason}")]
    TokenSha256 {
        /// The principal.
        principal: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `token_env` variable that is not set, empty, or not UTF-8 (or an invalid name).
    #[error(
        "server.auth.tokens: principal `{principal}`: environment variable `{variable}` \
         (token_env) {reason}"
    )]
    TokenEnv {
        /// The principal.
        principal: String,
        /// The variable named by `token_env`.
        variable: String,
        /// `is not set`, `is empty`, ...
        reason: String,
    },
    /// A placeholder naming no property of the tool's input schema.
    #[error(
        "tool `{tool}`: placeholder `{{{placeholder}}}` names no property of input_schema.properties"
    )]
    UnknownPlaceholder {
        /// The tool.
        tool: String,
        /// The name inside the braces.
        placeholder: String,
    },
    /// A setting naming an argument that is no property of the tool's input schema
    /// (`stdin = { arg = "…" }`).
    #[error(
        "tool `{tool}`: {setting} names argument `{name}`, which is no property of \
         input_schema.properties"
    )]
    UnknownArgument {
        /// The tool.
        tool: String,
        /// The setting, e.g. `stdin`.
        setting: String,
        /// The argument named.
        name: String,
    },
}

impl Config {
    /// Reads and checks the configuration file at `path`. A relative `cwd` of a tool is
    /// taken relative to the file's directory.
    ///
    /// # Errors
    /// [`ConfigError::Read`] if the file cannot be read, [`ConfigError::Invalid`] (naming
    /// the file and, where known, the line) if it is not a valid configuration: the
    /// problem on the earliest line (see [`Config::check`] for all of them).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Config::check(path).map_err(first_problem)
    }

    /// Reads and checks the configuration file at `path`, like [`Config::load`], but
    /// reports every problem found, in line order.
    ///
    /// Checking goes as far as it can: TOML that does not parse, or does not fit the
    /// configuration's shape (an unknown key, a value of the wrong type), is one problem on
    /// its own, since nothing after it can be read. Otherwise the `[server]` table and each
    /// tool report their first problem, and every duplicate tool name is reported.
    ///
    /// # Errors
    /// The problems, at least one: a [`ConfigError::Read`] alone, or
    /// [`ConfigError::Invalid`]s naming the file.
    pub fn check(path: &Path) -> Result<Config, Vec<ConfigError>> {
        let text = std::fs::read_to_string(path).map_err(|source| {
            vec![ConfigError::Read {
                path: path.to_owned(),
                source,
            }]
        })?;
        let base = path.parent().unwrap_or(Path::new(""));
        Config::check_text(&text, base).map_err(|problems| {
            problems
                .into_iter()
                .map(|problem| problem.in_file(path))
                .collect()
        })
    }

    /// Parses and checks a configuration given as TOML text. A relative `cwd` of a tool is
    /// taken relative to the server's current directory.
    ///
    /// Reads the environment variables that `[[server.auth.tokens]]` entries name in
    /// `token_env`, keeping only the digests of their values.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`], naming the line where known: the problem on the earliest
    /// line (see [`Config::problems`] for all of them).
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::check_text(text, Path::new("")).map_err(first_problem)
    }

    /// Every problem of a configuration given as TOML text, in line order; empty if it is
    /// valid. As thorough as [`Config::check`].
    #[must_use]
    pub fn problems(text: &str) -> Vec<ConfigError> {
        Config::check_text(text, Path::new(""))
            .err()
            .unwrap_or_default()
    }

    /// Checks `text`, whose relative paths are relative to `base`. The problems are sorted
    /// by line (those without a line last) and never empty.
    fn check_text(text: &str, base: &Path) -> Result<Config, Vec<ConfigError>> {
        let raw: RawConfig = toml::from_str(text).map_err(|err| {
            vec![ConfigError::Invalid {
                file: None,
                line: err.span().map(|span| line_of(text, &span)),
                problem: Problem::Toml(err.message().trim_end().to_owned()),
            }]
        })?;
        let lines = Lines(text);
        let mut problems = Vec::new();
        let server = raw
            .server
            .check(lines)
            .map_err(|err| problems.push(err))
            .ok();
        let mut tools: Vec<ToolConfig> = Vec::with_capacity(raw.tools.len());
        let mut first_lines: HashMap<String, usize> = HashMap::new();
        for raw_tool in raw.tools {
            let line = lines.of(&raw_tool.name.span());
            let name = raw_tool.name.get_ref().clone();
            match first_lines.get(&name) {
                Some(&first_line) => {
                    problems.push(lines.error(line, Problem::DuplicateTool { name, first_line }))
                }
                None => {
                    first_lines.insert(name, line);
                }
            }
            match raw_tool.check(lines, base) {
                Ok(tool) => tools.push(tool),
                Err(err) => problems.push(err),
            }
        }
        match server {
            Some(server) if problems.is_empty() => Ok(Config { server, tools }),
            _ => {
                problems.sort_by_key(|problem| match problem {
                    ConfigError::Invalid {
                        line: Some(line), ..
                    } => *line,
                    _ => usize::MAX,
                });
                Err(problems)
            }
        }
    }
}

/// The first of a non-empty list of problems.
fn first_problem(problems: Vec<ConfigError>) -> ConfigError {
    problems
        .into_iter()
        .next()
        .unwrap_or_else(|| ConfigError::Invalid {
            file: None,
            line: None,
            problem: Problem::Toml("invalid configuration".to_owned()),
        })
}

impl ConfigError {
    /// The same error, naming `path` as the file it is in.
    fn in_file(self, path: &Path) -> ConfigError {
        match self {
            ConfigError::Invalid { line, problem, .. } => ConfigError::Invalid {
                file: Some(path.to_owned()),
                line,
                problem,
            },
            other => other,
        }
    }
}

/// "`file` line `n`: " before a problem, with whatever parts are known.
struct Location<'a> {
    file: Option<&'a Path>,
    line: Option<usize>,
}

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{} line {line}: ", file.display()),
            (Some(file), None) => write!(f, "{}: ", file.display()),
            (None, Some(line)) => write!(f, "line {line}: "),
            (None, None) => Ok(()),
        }
    }
}

/// The 1-based line of the byte offset where `span` starts.
fn line_of(text: &str, span: &Range<usize>) -> usize {
    let start = span.start.min(text.len());
    text.as_bytes()[..start]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The text being parsed, to turn spans into line numbers.
#[derive(Clone, Copy)]
struct Lines<'a>(&'a str);

impl Lines<'_> {
    fn of(self, span: &Range<usize>) -> usize {
        line_of(self.0, span)
    }

    fn error(self, line: usize, problem: Problem) -> ConfigError {
        ConfigError::Invalid {
            file: None,
            line: Some(line),
            problem,
        }
    }

    /// Parses a humantime duration, refusing zero (no setting here means "never").
    fn duration(self, field: &str, value: &Spanned<String>) -> Result<Duration, ConfigError> {
        let bad = |reason: String| {
            self.error(
                self.of(&value.span()),
                Problem::Duration {
                    field: field.to_owned(),
                    value: value.get_ref().clone(),
                    reason,
                },
            )
        };
        match humantime::parse_duration(value.get_ref()) {
            Ok(duration) if duration.is_zero() => Err(bad("must be longer than zero".to_owned())),
            Ok(duration) => Ok(duration),
            Err(err) => Err(bad(err.to_string())),
        }
    }

    /// Parses a byte size (see [`size::parse`]), refusing zero.
    fn size(self, field: &str, value: &Spanned<RawSize>) -> Result<usize, ConfigError> {
        let bad = |reason: &str| {
            self.error(
                self.of(&value.span()),
                Problem::Size {
                    field: field.to_owned(),
                    value: value.get_ref().to_string(),
                    reason: reason.to_owned(),
                },
            )
        };
        let bytes = match value.get_ref() {
            RawSize::Bytes(bytes) => {
                u64::try_from(*bytes).map_err(|_| bad("must not be negative"))?
            }
            RawSize::Text(text) => size::parse(text).map_err(|reason| bad(&reason))?,
        };
        if bytes == 0 {
            return Err(bad("must be larger than zero"));
        }
        usize::try_from(bytes).map_err(|_| bad("too large for this machine"))
    }

    /// Checks a whole number that must be at least 1 and fit in a `u32`.
    fn count(self, field: &str, value: &Spanned<i64>) -> Result<u32, ConfigError> {
        let number = *value.get_ref();
        let bad = |reason: &str| {
            self.error(
                self.of(&value.span()),
                Problem::Count {
                    field: field.to_owned(),
                    value: number,
                    reason: reason.to_owned(),
                },
            )
        };
        if number < 1 {
            return Err(bad("must be at least 1"));
        }
        u32::try_from(number).map_err(|_| bad("too large (at most 4294967295)"))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    tools: Vec<tool::RawTool>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    name: Option<String>,
    default_ttl: Option<Spanned<String>>,
    max_ttl: Option<Spanned<String>>,
    poll_interval: Option<Spanned<String>>,
    session_idle: Option<Spanned<String>>,
    listen: Option<Spanned<String>>,
    #[serde(default)]
    allowed_hosts: Vec<Spanned<String>>,
    #[serde(default)]
    allowed_origins: Vec<Spanned<String>>,
    max_body: Option<Spanned<RawSize>>,
    #[serde(default)]
    auth: RawAuth,
    max_running: Option<Spanned<i64>>,
    max_running_per_principal: Option<Spanned<i64>>,
    max_retained_per_principal: Option<Spanned<i64>>,
}

/// A byte size as written: a TOML integer (bytes) or a string such as `"4MiB"`.
enum RawSize {
    Bytes(i64),
    Text(String),
}

impl fmt::Display for RawSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RawSize::Bytes(bytes) => write!(f, "{bytes}"),
            RawSize::Text(text) => f.write_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<RawSize, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = RawSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as \"4MiB\" or a whole number of bytes")
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<RawSize, E> {
                Ok(RawSize::Bytes(value))
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<RawSize, E> {
                i64::try_from(value)
                    .map(RawSize::Bytes)
                    .map_err(|_| E::custom("size too large"))
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<RawSize, E> {
                Ok(RawSize::Text(value.to_owned()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    #[serde(default)]
    tokens: Vec<RawToken>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    principal: Spanned<String>,
    token_sha256: Option<Spanned<String>>,
    token_env: Option<Spanned<String>>,
}

impl RawAuth {
    fn check(self, lines: Lines<'_>) -> Result<Auth, ConfigError> {
        let mut tokens: Vec<(String, auth::TokenDigest)> = Vec::with_capacity(self.tokens.len());
        let mut first_lines: Vec<usize> = Vec::with_capacity(self.tokens.len());
        for raw in self.tokens {
            let line = lines.of(&raw.principal.span());
            let principal = raw.principal.into_inner();
            if principal.trim().is_empty() {
                return Err(lines.error(line, Problem::EmptyPrincipal));
            }
            let source = |reason: &str| Problem::TokenSource {
                principal: principal.clone(),
                reason: reason.to_owned(),
            };
            let digest = match (raw.token_sha256, raw.token_env) {
                (Some(_), Some(_)) => return Err(lines.error(line, source("not both"))),
                (None, None) => return Err(lines.error(line, source("not neither"))),
                (Some(hex), None) => {
                    let bad = |reason: String| {
                        let problem = Problem::TokenSha256 {
                            principal: principal.clone(),
                            reason,
                        };
                        lines.error(lines.of(&hex.span()), problem)
                    };
                    let digest = auth::parse_hex_digest(hex.get_ref()).map_err(bad)?;
                    if digest == Auth::digest("") {
                        return Err(bad("is the SHA-256 of the empty string".to_owned()));
                    }
                    digest
                }
                (None, Some(variable)) => {
                    let bad = |reason: String| {
                        let problem = Problem::TokenEnv {
                            principal: principal.clone(),
                            variable: variable.get_ref().clone(),
                            reason,
                        };
                        lines.error(lines.of(&variable.span()), problem)
                    };
                    let name = variable.get_ref();
                    if name.is_empty() || name.contains(['=', '\0']) {
                        return Err(bad("is not a valid variable name".to_owned()));
                    }
                    auth::digest_of_env(name).map_err(|err: EnvTokenError| bad(err.to_string()))?
                }
            };
            if let Some(first) = tokens.iter().position(|(_, other)| *other == digest) {
                return Err(lines.error(
                    line,
                    Problem::DuplicateToken {
                        principal,
                        first_principal: tokens[first].0.clone(),
                        first_line: first_lines[first],
                    },
                ));
            }
            tokens.push((principal, digest));
            first_lines.push(line);
        }
        Ok(Auth::from_digests(tokens))
    }
}

impl RawServer {
    fn check(self, lines: Lines<'_>) -> Result<ServerConfig, ConfigError> {
        let defaults = ServerConfig::default();
        let duration = |field: &str, value: Option<Spanned<String>>, default: Duration| {
            value.map_or(Ok(default), |value| lines.duration(field, &value))
        };
        let ttl_line = self
            .default_ttl
            .as_ref()
            .or(self.max_ttl.as_ref())
            .map(|v| lines.of(&v.span()));
        let listen = match self.listen {
            None => defaults.listen,
            Some(value) => value.get_ref().parse::<SocketAddr>().map_err(|err| {
                let problem = Problem::Listen {
                    value: value.get_ref().clone(),
                    reason: err.to_string(),
                };
                lines.error(lines.of(&value.span()), problem)
            })?,
        };
        let mut allowed_hosts = Vec::with_capacity(self.allowed_hosts.len());
        for entry in self.allowed_hosts {
            if let Err(reason) = Authority::parse(entry.get_ref()) {
                let line = lines.of(&entry.span());
                let value = entry.into_inner();
                return Err(lines.error(line, Problem::AllowedHost { value, reason }));
            }
            allowed_hosts.push(entry.into_inner());
        }
        let mut allowed_origins = Vec::with_capacity(self.allowed_origins.len());
        for entry in self.allowed_origins {
            if let Err(reason) = Origin::parse(entry.get_ref()) {
                let line = lines.of(&entry.span());
                let value = entry.into_inner();
                return Err(lines.error(line, Problem::AllowedOrigin { value, reason }));
            }
            allowed_origins.push(entry.into_inner());
        }
        let max_body = match self.max_body {
            None => defaults.max_body,
            Some(value) => lines.size("server.max_body", &value)?,
        };
        let auth = self.auth.check(lines)?;
        let count = |field: &str, value: Option<Spanned<i64>>, default: u32| {
            value.map_or(Ok(default), |value| lines.count(field, &value))
        };
        let server = ServerConfig {
            max_running: count("server.max_running", self.max_running, defaults.max_running)?,
            max_running_per_principal: count(
                "server.max_running_per_principal",
                self.max_running_per_principal,
                defaults.max_running_per_principal,
            )?,
            max_retained_per_principal: count(
                "server.max_retained_per_principal",
                self.max_retained_per_principal,
                defaults.max_retained_per_principal,
            )?,
            listen,
            allowed_hosts,
            allowed_origins,
            max_body,
            auth,
            name: self.name.unwrap_or(defaults.name),
            default_ttl: duration("server.default_ttl", self.default_ttl, defaults.default_ttl)?,
            max_ttl: duration("server.max_ttl", self.max_ttl, defaults.max_ttl)?,
            poll_interval: duration(
                "server.poll_interval",
                self.poll_interval,
                defaults.poll_interval,
            )?,
            session_idle: duration("server.session_idle", self.session_idle, defaults.session_idle)?,
        };
        if server.default_ttl > server.max_ttl {
            return Err(ConfigError::Invalid {
                file: None,
                line: ttl_line,
                problem: Problem::TtlOrder {
                    default_ttl: humantime::format_duration(server.default_ttl).to_string(),
                    max_ttl: humantime::format_duration(server.max_ttl).to_string(),
                },
            });
        }
        Ok(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The line, problem and message of the error of `text` (also used by `tool`'s tests).
    pub(super) fn invalid(text: &str) -> (Option<usize>, Problem, String) {
        match Config::parse(text) {
            Ok(config) => panic!("expected an error, parsed {config:?}"),
            Err(err) => {
                let message = err.to_string();
                match err {
                    ConfigError::Invalid { line, problem, .. } => (line, problem, message),
                    other => panic!("expected Invalid, got {other:?}"),
                }
            }
        }
    }

    const FULL: &str = r#"
[server]
name = "demo"
default_ttl = "30m"
max_ttl = "2days"
poll_interval = "500ms"
session_idle = "5m"
listen = "0.0.0.0:9000"
allowed_hosts = ["tasks.example.com", "box.lan:9000"]
allowed_origins = ["https://app.example.com"]
max_body = "512KiB"
max_running = 8
max_running_per_principal = 2
max_retained_per_principal = 500

[[server.auth.tokens]]
principal = "alice"
token_sha256 = "f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7"

[[server.auth.tokens]]
principal = "bob"
token_sha256 = "B7C1E4F1C4D0A4F04E1AC6F03DC8F31C1A4F4E1FE4AB3B7C5B0E9DBAE58FE4E5"

[[tools]]
name = "render"
description = "Renders a scene"
command = ["blender", "--background", "{scene}", "--frames={frames}", "{{literal}}"]
task_support = "required"
timeout = "10m"
kill_grace = "5s"
on_restart = "retry"
max_attempts = 5
max_concurrent = 2

[tools.input_schema]
type = "object"
required = ["scene"]

[tools.input_schema.properties.scene]
type = "string"

[tools.input_schema.properties.frames]
type = "integer"

[[tools]]
name = "plain"
command = ["true"]
task_support = "forbidden"
"#;

    #[test]
    fn a_full_example_parses_with_every_field() {
        let config = Config::parse(FULL).unwrap();
        assert_eq!(
            config.server,
            ServerConfig {
                name: "demo".into(),
                default_ttl: Duration::from_secs(30 * 60),
                max_ttl: Duration::from_secs(2 * 24 * 60 * 60),
                poll_interval: Duration::from_millis(500),
                session_idle: Duration::from_secs(5 * 60),
                listen: "0.0.0.0:9000".parse().unwrap(),
                allowed_hosts: vec!["tasks.example.com".into(), "box.lan:9000".into()],
                allowed_origins: vec!["https://app.example.com".into()],
                max_body: 512 * 1024,
                max_running: 8,
                max_running_per_principal: 2,
                max_retained_per_principal: 500,
                auth: Auth::from_digests([
                    ("alice", Auth::digest("hunter2")),
                    (
                        "bob",
                        auth::parse_hex_digest(
                            "b7c1e4f1c4d0a4f04e1ac6f03dc8f31c1a4f4e1fe4ab3b7c5b0e9dbae58fe4e5"
                        )
                        .unwrap()
                    ),
                ]),
            }
        );
        let auth = config.server.auth();
        assert!(auth.is_enabled());
        assert_eq!(auth.principal_for("hunter2"), Some("alice"));
        assert_eq!(auth.principal_for("hunter3"), None);
        assert!(config.server.allows_host("box.lan:9000"));
        assert!(config.server.allows_host("localhost:9000"));
        assert!(!config.server.allows_host("box.lan:9001"));
        assert!(config.server.allows_origin("https://app.example.com"));
        assert!(config.server.allows_origin("http://127.0.0.1:5173"));
        assert!(!config.server.allows_origin("https://evil.example.com"));
        assert_eq!(config.tools.len(), 2);
        let render = &config.tools[0];
        assert_eq!(render.name, "render");
        assert_eq!(render.description, "Renders a scene");
        assert_eq!(
            render.input_schema,
            json!({
                "type": "object",
                "required": ["scene"],
                "properties": {"scene": {"type": "string"}, "frames": {"type": "integer"}}
            })
        );
        assert_eq!(
            render.command,
            [
                "blender",
                "--background",
                "{scene}",
                "--frames={frames}",
                "{{literal}}"
            ]
        );
        assert_eq!(render.task_support, TaskSupport::Required);
        assert_eq!(render.timeout, Some(Duration::from_secs(600)));
        assert_eq!(render.kill_grace, Duration::from_secs(5));
        assert_eq!(render.on_restart, RestartPolicy::Retry);
        assert_eq!(render.max_attempts, 5);
        assert_eq!(render.max_concurrent, Some(2));
        assert_eq!(config.tools[1].task_support, TaskSupport::Forbidden);
    }

    #[test]
    fn defaults_apply_when_keys_are_left_out() {
        let config = Config::parse("[[tools]]\nname = \"t\"\ncommand = [\"true\"]\n").unwrap();
        assert_eq!(config.server, ServerConfig::default());
        assert_eq!(config.server.name, "mcp-tasks");
        assert_eq!(config.server.default_ttl, Duration::from_secs(3600));
        assert_eq!(config.server.max_ttl, Duration::from_secs(86400));
        assert_eq!(config.server.poll_interval, Duration::from_secs(1));
        assert_eq!(
            config.server.listen,
            "127.0.0.1:8765".parse::<SocketAddr>().unwrap()
        );
        assert!(config.server.allowed_hosts.is_empty());
        assert!(config.server.allowed_origins.is_empty());
        assert_eq!(config.server.max_body, 4 * 1024 * 1024);
        assert!(!config.server.auth().is_enabled());
        assert_eq!(config.server.auth().principal_for(""), None);
        let tool = &config.tools[0];
        assert_eq!(tool.description, "");
        assert_eq!(tool.input_schema, json!({"type": "object"}));
        assert_eq!(tool.task_support, TaskSupport::Optional);
        assert_eq!(tool.timeout, None);
        assert_eq!(tool.on_restart, RestartPolicy::Fail);
        assert_eq!(
            *tool,
            ToolConfig::new("t", vec!["true".into()]),
            "a tool built by hand has the defaults of a file"
        );
        assert_eq!(config.server.max_running, 64);
        assert_eq!(config.server.max_running_per_principal, 16);
        assert_eq!(config.server.max_retained_per_principal, 10_000);
        assert_eq!(Config::parse("").unwrap(), Config::default());
    }

    #[test]
    fn an_unknown_key_is_an_error_with_its_line() {
        let text = "[server]\nname = \"x\"\n\n[[tools]]\nname = \"t\"\ncomand = [\"true\"]\n";
        let (line, problem, message) = invalid(text);
        assert_eq!(line, Some(6));
        let Problem::Toml(detail) = problem else {
            panic!("{problem:?}")
        };
        assert!(detail.contains("unknown field `comand`"), "{detail}");
        assert!(
            message.starts_with("line 6: unknown field `comand`, expected one of"),
            "{message}"
        );
    }

    #[test]
    fn an_unknown_server_key_is_an_error_with_its_line() {
        let (line, _, message) = invalid("[server]\n\npoll = \"1s\"\n");
        assert_eq!(line, Some(3));
        assert!(message.contains("unknown field `poll`"), "{message}");
    }

    #[test]
    fn a_bad_duration_is_an_error_naming_field_and_line() {
        let (line, problem, message) =
            invalid("[server]\nname = \"x\"\nmax_ttl = \"3 fortnights\"\n");
        assert_eq!(line, Some(3));
        assert!(matches!(&problem, Problem::Duration { field, value, .. }
            if field == "server.max_ttl" && value == "3 fortnights"));
        assert!(
            message.starts_with("line 3: server.max_ttl: invalid duration `3 fortnights`"),
            "{message}"
        );
    }

    #[test]
    fn a_bad_tool_timeout_is_an_error_naming_the_tool_and_line() {
        let (line, _, message) =
            invalid("[[tools]]\nname = \"slow\"\ncommand = [\"true\"]\ntimeout = \"soon\"\n");
        assert_eq!(line, Some(4));
        assert!(
            message.contains("timeout of tool `slow`: invalid duration `soon`"),
            "{message}"
        );
    }

    #[test]
    fn a_zero_poll_interval_is_an_error() {
        let (line, problem, _) = invalid("[server]\npoll_interval = \"0s\"\n");
        assert_eq!(line, Some(2));
        assert!(matches!(problem, Problem::Duration { .. }));
    }

    #[test]
    fn a_default_ttl_longer_than_max_ttl_is_an_error() {
        let (line, problem, _) = invalid("[server]\ndefault_ttl = \"2d\"\nmax_ttl = \"1d\"\n");
        assert_eq!(line, Some(2));
        assert!(matches!(problem, Problem::TtlOrder { .. }));
    }

    #[test]
    fn a_duplicate_tool_name_is_an_error_naming_both_lines() {
        let text = "[[tools]]\nname = \"t\"\ncommand = [\"a\"]\n\n[[tools]]\nname = \"t\"\ncommand = [\"b\"]\n";
        let (line, problem, message) = invalid(text);
        assert_eq!(line, Some(6));
        assert_eq!(
            problem,
            Problem::DuplicateTool {
                name: "t".into(),
                first_line: 2
            }
        );
        assert_eq!(
            message,
            "line 6: duplicate tool name `t` (first defined on line 2)"
        );
    }

    #[test]
    fn a_placeholder_naming_no_schema_property_is_an_error() {
        let text = r#"
[[tools]]
name = "greet"
command = [
  "echo",
  "hello {who}",
]
input_schema = { type = "object", properties = { name = { type = "string" } } }
"#;
        let (line, problem, message) = invalid(text);
        assert_eq!(line, Some(6));
        assert_eq!(
            problem,
            Problem::UnknownPlaceholder {
                tool: "greet".into(),
                placeholder: "who".into()
            }
        );
        assert!(
            message.contains("tool `greet`: placeholder `{who}`"),
            "{message}"
        );
    }

    #[test]
    fn a_placeholder_without_any_schema_is_an_error() {
        let (_, problem, _) = invalid("[[tools]]\nname = \"t\"\ncommand = [\"echo\", \"{x}\"]\n");
        assert!(matches!(problem, Problem::UnknownPlaceholder { .. }));
    }

    #[test]
    fn escaped_braces_are_not_placeholders() {
        let config =
            Config::parse("[[tools]]\nname = \"t\"\ncommand = [\"echo\", \"{{x}}\"]\n").unwrap();
        assert_eq!(config.tools[0].command, ["echo", "{{x}}"]);
    }

    #[test]
    fn an_unmatched_brace_is_an_error() {
        let (line, problem, _) = invalid("[[tools]]\nname = \"t\"\ncommand = [\"echo\", \"{x\"]\n");
        assert_eq!(line, Some(3));
        assert!(matches!(problem, Problem::BadTemplate { .. }));
    }

    #[test]
    fn a_placeholder_in_the_program_is_an_error() {
        let text = r#"
[[tools]]
name = "t"
command = ["{prog}"]
input_schema = { type = "object", properties = { prog = { type = "string" } } }
"#;
        let (_, problem, _) = invalid(text);
        assert_eq!(problem, Problem::PlaceholderProgram { tool: "t".into() });
    }

    #[test]
    fn a_bad_task_support_value_is_an_error() {
        let (line, problem, message) = invalid(
            "[[tools]]\nname = \"t\"\ncommand = [\"true\"]\ntask_support = \"sometimes\"\n",
        );
        assert_eq!(line, Some(4));
        assert!(matches!(problem, Problem::Toml(_)));
        assert!(message.contains("unknown variant `sometimes`"), "{message}");
    }

    #[test]
    fn a_bad_restart_policy_is_an_error() {
        let (line, _, message) =
            invalid("[[tools]]\nname = \"t\"\ncommand = [\"true\"]\non_restart = \"resume\"\n");
        assert_eq!(line, Some(4));
        assert!(message.contains("unknown variant `resume`"), "{message}");
    }

    #[test]
    fn an_empty_command_is_an_error() {
        let (line, problem, _) = invalid("[[tools]]\nname = \"t\"\ncommand = []\n");
        assert_eq!(line, Some(3));
        assert_eq!(problem, Problem::EmptyCommand { tool: "t".into() });
    }

    #[test]
    fn a_missing_command_is_an_error() {
        let (_, _, message) = invalid("[[tools]]\nname = \"t\"\n");
        assert!(message.contains("missing field `command`"), "{message}");
    }

    #[test]
    fn an_input_schema_that_is_not_an_object_schema_is_an_error() {
        let (line, problem, _) = invalid(
            "[[tools]]\nname = \"t\"\ncommand = [\"true\"]\ninput_schema = { type = \"array\" }\n",
        );
        assert_eq!(line, Some(4));
        assert!(matches!(problem, Problem::Schema { .. }));
        let (_, problem, _) = invalid(
            "[[tools]]\nname = \"t\"\ncommand = [\"true\"]\ninput_schema = { properties = {} }\n",
        );
        assert!(matches!(problem, Problem::Schema { .. }));
    }

    #[test]
    fn load_names_the_file_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo.toml");
        std::fs::write(&path, "[[tools]]\nname = \"t\"\ncomand = [\"true\"]\n").unwrap();
        let message = Config::load(&path).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!(
                "{} line 3: unknown field `comand`",
                path.display()
            )),
            "{message}"
        );
    }

    #[test]
    fn load_reads_a_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo.toml");
        std::fs::write(&path, FULL).unwrap();
        assert_eq!(Config::load(&path).unwrap(), Config::parse(FULL).unwrap());
    }

    #[test]
    fn load_of_a_missing_file_says_which() {
        let err = Config::load(Path::new("/nonexistent/mcp-tasks.toml")).unwrap_err();
        assert!(matches!(err, ConfigError::Read { .. }));
        assert!(
            err.to_string()
                .starts_with("could not read /nonexistent/mcp-tasks.toml"),
            "{err}"
        );
    }

    // ---- listen, allowed_hosts, allowed_origins, max_body ----

    fn server(text: &str) -> ServerConfig {
        Config::parse(text).unwrap().server
    }

    #[test]
    fn listen_takes_ipv4_and_ipv6_socket_addresses() {
        let v4 = server("[server]\nlisten = \"0.0.0.0:80\"\n");
        assert_eq!(v4.listen, "0.0.0.0:80".parse::<SocketAddr>().unwrap());
        let v6 = server("[server]\nlisten = \"[::1]:8765\"\n");
        assert_eq!(v6.listen, "[::1]:8765".parse::<SocketAddr>().unwrap());
    }

    #[test]
    fn a_bad_listen_address_is_an_error_with_its_line() {
        for bad in [
            "localhost:8765",
            "127.0.0.1",
            "127.0.0.1:99999",
            "",
            "::1:80",
        ] {
            let (line, problem, message) =
                invalid(&format!("[server]\nname = \"x\"\nlisten = \"{bad}\"\n"));
            assert_eq!(line, Some(3), "{bad}");
            assert!(
                matches!(&problem, Problem::Listen { value, .. } if value == bad),
                "{problem:?}"
            );
            assert!(
                message.starts_with(&format!(
                    "line 3: server.listen: invalid socket address `{bad}`"
                )),
                "{message}"
            );
        }
        let (line, problem, _) = invalid("[server]\nlisten = 8765\n");
        assert_eq!(line, Some(2));
        assert!(matches!(problem, Problem::Toml(_)));
    }

    #[test]
    fn allowed_hosts_and_origins_parse() {
        let config = server(
            "[server]\nallowed_hosts = [\"a.example\", \"b.example:8080\", \"[fd00::1]\"]\n\
             allowed_origins = [\"https://a.example\", \"http://b.example:8080\"]\n",
        );
        assert_eq!(
            config.allowed_hosts,
            ["a.example", "b.example:8080", "[fd00::1]"]
        );
        assert_eq!(
            config.allowed_origins,
            ["https://a.example", "http://b.example:8080"]
        );
        assert!(config.allows_host("A.example:1234"));
        assert!(config.allows_host("[fd00::1]:8765"));
        assert!(config.allows_origin("https://a.example:443"));
        assert!(!config.allows_origin("http://a.example"));
    }

    #[test]
    fn a_bad_allowed_host_is_an_error_with_its_line() {
        let text =
            "[server]\nallowed_hosts = [\n  \"ok.example\",\n  \"https://bad.example\",\n]\n";
        let (line, problem, message) = invalid(text);
        assert_eq!(line, Some(4));
        assert!(
            matches!(&problem, Problem::AllowedHost { value, .. } if value == "https://bad.example"),
            "{problem:?}"
        );
        assert!(
            message.starts_with("line 4: server.allowed_hosts: invalid host `https://bad.example`"),
            "{message}"
        );
        let (line, _, _) = invalid("[server]\n\nallowed_hosts = [\"a b\"]\n");
        assert_eq!(line, Some(3));
    }

    #[test]
    fn a_bad_allowed_origin_is_an_error_with_its_line() {
        let text = "[server]\nallowed_origins = [\n  \"https://ok.example\",\n  \"https://bad.example/\",\n]\n";
        let (line, problem, message) = invalid(text);
        assert_eq!(line, Some(4));
        assert!(
            matches!(&problem, Problem::AllowedOrigin { value, .. } if value == "https://bad.example/"),
            "{problem:?}"
        );
        assert!(
            message.starts_with(
                "line 4: server.allowed_origins: invalid origin `https://bad.example/`"
            ),
            "{message}"
        );
        let (line, _, _) = invalid("[server]\nallowed_origins = [\"app.example.com\"]\n");
        assert_eq!(line, Some(2));
    }

    #[test]
    fn max_body_takes_sizes_with_units_and_plain_numbers() {
        for (written, bytes) in [
            ("\"4MiB\"", 4 << 20),
            ("\"512KiB\"", 512 << 10),
            ("\"512 KiB\"", 512 << 10),
            ("\"1000000\"", 1_000_000),
            ("1000000", 1_000_000),
            ("\"2MB\"", 2_000_000),
            ("\"1GiB\"", 1 << 30),
            ("\"100B\"", 100),
        ] {
            assert_eq!(
                server(&format!("[server]\nmax_body = {written}\n")).max_body,
                bytes,
                "{written}"
            );
        }
    }

    #[test]
    fn a_bad_max_body_is_an_error_with_its_line() {
        for bad in [
            "\"4 megs\"",
            "\"1.5MiB\"",
            "\"0\"",
            "0",
            "-5",
            "\"\"",
            "\"MiB\"",
        ] {
            let (line, problem, message) =
                invalid(&format!("[server]\nname = \"x\"\nmax_body = {bad}\n"));
            assert_eq!(line, Some(3), "{bad}");
            assert!(
                matches!(&problem, Problem::Size { field, .. } if field == "server.max_body"),
                "{problem:?}"
            );
            assert!(
                message.starts_with("line 3: server.max_body: invalid size"),
                "{message}"
            );
        }
        let (line, problem, message) = invalid("[server]\nmax_body = true\n");
        assert_eq!(line, Some(2));
        assert!(matches!(problem, Problem::Toml(_)), "{problem:?}");
        assert!(message.contains("a size such as"), "{message}");
    }

    // ---- [[server.auth.tokens]] ----

    const HUNTER2: &str = "f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7";

    #[test]
    fn token_sha256_entries_map_tokens_to_principals() {
        let text = format!(
            "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\n\n\
             [[server.auth.tokens]]\nprincipal = \"bob\"\ntoken_sha256 = \"{}\"\n\n\
             [[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{}\"\n",
            hex(&Auth::digest("bobs-token")),
            hex(&Auth::digest("alices-laptop")),
        );
        let config = Config::parse(&text).unwrap();
        let auth = config.server.auth();
        assert!(auth.is_enabled());
        assert_eq!(auth.principal_for("hunter2"), Some("alice"));
        assert_eq!(auth.principal_for("bobs-token"), Some("bob"));
        assert_eq!(auth.principal_for("alices-laptop"), Some("alice"));
        assert_eq!(auth.principal_for("wrong"), None);
        assert_eq!(auth.principal_for(HUNTER2), None);
        assert_eq!(
            auth.principals().collect::<Vec<_>>(),
            ["alice", "bob", "alice"]
        );
    }

    #[test]
    fn an_empty_tokens_list_leaves_auth_off() {
        assert!(!server("[server.auth]\ntokens = []\n").auth.is_enabled());
        assert!(!server("[server.auth]\n").auth.is_enabled());
    }

    fn hex(digest: &[u8; 32]) -> String {
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn both_token_sha256_and_token_env_is_an_error_with_its_line() {
        let text = format!(
            "[server]\n\n[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\ntoken_env = \"X\"\n"
        );
        let (line, problem, message) = invalid(&text);
        assert_eq!(line, Some(4));
        assert!(
            matches!(problem, Problem::TokenSource { .. }),
            "{problem:?}"
        );
        assert_eq!(
            message,
            "line 4: server.auth.tokens: principal `alice`: give exactly one of token_sha256 \
             and token_env, not both"
        );
    }

    #[test]
    fn neither_token_sha256_nor_token_env_is_an_error_with_its_line() {
        let text = format!(
            "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\n\n\
             [[server.auth.tokens]]\nprincipal = \"bob\"\n"
        );
        let (line, problem, message) = invalid(&text);
        assert_eq!(line, Some(6));
        assert!(
            matches!(problem, Problem::TokenSource { .. }),
            "{problem:?}"
        );
        assert!(
            message.ends_with(
                "principal `bob`: give exactly one of token_sha256 and token_env, not neither"
            ),
            "{message}"
        );
    }

    #[test]
    fn bad_hex_is_an_error_with_its_line() {
        for bad in [
            &HUNTER2[..63],
            "hunter2",
            &format!("{}z", &HUNTER2[..63]),
            "",
        ] {
            let text = format!(
                "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{bad}\"\n"
            );
            let (line, problem, message) = invalid(&text);
            assert_eq!(line, Some(3), "{bad}");
            assert!(
                matches!(problem, Problem::TokenSha256 { .. }),
                "{problem:?}"
            );
            assert!(
                message
                    .starts_with("line 3: server.auth.tokens: principal `alice`: token_sha256: "),
                "{message}"
            );
        }
    }

    #[test]
    fn the_digest_of_the_empty_token_is_refused() {
        let empty = hex(&Auth::digest(""));
        let text =
            format!("[[server.auth.tokens]]\nprincipal = \"a\"\ntoken_sha256 = \"{empty}\"\n");
        let (line, _, message) = invalid(&text);
        assert_eq!(line, Some(3));
        assert!(
            message.ends_with("is the SHA-256 of the empty string"),
            "{message}"
        );
    }

    #[test]
    fn an_empty_principal_is_an_error_with_its_line() {
        for principal in ["", "  "] {
            let text = format!(
                "[[server.auth.tokens]]\ntoken_sha256 = \"{HUNTER2}\"\nprincipal = \"{principal}\"\n"
            );
            let (line, problem, message) = invalid(&text);
            assert_eq!(line, Some(3));
            assert_eq!(problem, Problem::EmptyPrincipal);
            assert_eq!(
                message,
                "line 3: server.auth.tokens: principal must not be empty"
            );
        }
        let (_, _, message) = invalid(&format!(
            "[[server.auth.tokens]]\ntoken_sha256 = \"{HUNTER2}\"\n"
        ));
        assert!(message.contains("missing field `principal`"), "{message}");
    }

    #[test]
    fn a_missing_token_variable_is_an_error_naming_it_and_its_line() {
        let text = "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_env = \"MCP_TASKS_TEST_SURELY_UNSET\"\n";
        let (line, problem, message) = invalid(text);
        assert_eq!(line, Some(3));
        assert_eq!(
            problem,
            Problem::TokenEnv {
                principal: "alice".into(),
                variable: "MCP_TASKS_TEST_SURELY_UNSET".into(),
                reason: "is not set".into(),
            }
        );
        assert_eq!(
            message,
            "line 3: server.auth.tokens: principal `alice`: environment variable \
             `MCP_TASKS_TEST_SURELY_UNSET` (token_env) is not set"
        );
        for bad in ["", "A=B"] {
            let text =
                format!("[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_env = \"{bad}\"\n");
            let (line, _, message) = invalid(&text);
            assert_eq!(line, Some(3));
            assert!(
                message.ends_with("is not a valid variable name"),
                "{message}"
            );
        }
    }

    #[test]
    fn the_same_token_twice_is_an_error_naming_both_lines() {
        let text = format!(
            "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\n\n\
             [[server.auth.tokens]]\nprincipal = \"bob\"\ntoken_sha256 = \"{}\"\n",
            HUNTER2.to_ascii_uppercase()
        );
        let (line, problem, message) = invalid(&text);
        assert_eq!(line, Some(6));
        assert_eq!(
            problem,
            Problem::DuplicateToken {
                principal: "bob".into(),
                first_principal: "alice".into(),
                first_line: 2
            }
        );
        assert!(message.starts_with("line 6: "), "{message}");
    }

    #[test]
    fn an_unknown_key_in_a_token_entry_is_an_error_with_its_line() {
        let text = format!(
            "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\ntoken = \"hunter2\"\n"
        );
        let (line, _, message) = invalid(&text);
        assert_eq!(line, Some(4));
        assert!(message.contains("unknown field `token`"), "{message}");
        let (line, _, message) = invalid("[server.auth]\ntokenz = []\n");
        assert_eq!(line, Some(2));
        assert!(message.contains("unknown field `tokenz`"), "{message}");
    }

    #[test]
    fn debug_output_holds_no_digest() {
        let config = Config::parse(&format!(
            "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\n"
        ))
        .unwrap();
        let shown = format!("{config:?}");
        assert!(shown.contains("alice"), "{shown}");
        assert!(!shown.contains("245, 47"), "{shown}");
    }
}
