//! What can be wrong with a configuration: [`ConfigError`] (unreadable, or invalid at a
//! line) and [`Problem`] (what is invalid).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

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
    /// A `[server.task_tools]` name that cannot be a tool name, or names two helpers.
    #[error("server.task_tools.{key}: invalid tool name `{value}`: {reason}")]
    TaskToolName {
        /// The key (`status`, `result`, `cancel`).
        key: String,
        /// The name as written.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `[[tools]]` entry named like one of the helper tools for clients without tasks.
    #[error(
        "tool `{name}` has the name of a helper tool for clients without tasks; rename the tool, or name the helper \
         otherwise in [server.task_tools] (or turn handoffs off with server.sync_wait = \"0\")"
    )]
    TaskToolClash {
        /// The name.
        name: String,
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
    /// `tls_cert` without `tls_key`, or the other way round.
    #[error("server.tls_cert and server.tls_key go together: give both (PEM files) for HTTPS, or neither")]
    TlsPair,
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
    /// A `[server.auth.oauth]` table that is not valid.
    #[error("server.auth.oauth: {reason}")]
    OAuth {
        /// What is wrong with it.
        reason: String,
    },
    /// A `[[server.auth.tokens]]` principal that starts with the prefix of OAuth principals.
    #[error("server.auth.tokens: principal `{principal}` starts with `oauth:`, which is kept for OAuth principals")]
    ReservedPrincipal {
        /// The principal.
        principal: String,
    },
    /// A `[[server.webhooks]]` entry that is not valid (its `url`, `events` or secret).
    #[error("server.webhooks: `{url}`: {reason}")]
    Webhook {
        /// The entry's `url`, as written.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `[server.tracing]` setting that is not valid.
    #[error("server.tracing: {reason}")]
    Tracing {
        /// What is wrong.
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

impl ConfigError {
    /// The same error, naming `path` as the file it is in.
    pub(crate) fn in_file(self, path: &Path) -> ConfigError {
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
