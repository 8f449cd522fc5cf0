//! The `[server]` table: [`ServerConfig`], and its check from the TOML as written
//! (`RawServer`, with `[[server.auth.tokens]]` as `RawAuth`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::lines::{Lines, RawSize};
use super::{ConfigError, Problem};

/// `set!(problems, target, result)`: the value of `result` goes to `target`, or its problem to
/// `problems` (and `target` keeps its default): every setting is checked, each problem said.
macro_rules! set {
    ($problems:expr, $target:expr, $value:expr) => {
        match $value {
            Ok(value) => $target = value,
            Err(problem) => $problems.push(problem),
        }
    };
}
use super::oauth::{OAUTH_PRINCIPAL_PREFIX, OAuthConfig, RawOAuth};
use crate::auth::{self, Auth, EnvTokenError};
use crate::hosts::{self, Authority, Origin};

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
    /// 2026-07-28: how long a call of an `optional` tool, from a client that declared the
    /// tasks extension, waits for its work to end and answer inline before it answers with
    /// a task (`inline_wait`, default 1s; a tool's own `inline_wait` overrides it).
    pub inline_wait: Duration,
    /// 2026-07-28: how long the work of a request that asked the client (an
    /// `InputRequiredResult` round) waits for the client's retry before it is stopped
    /// (`retry_wait`, default 10m).
    pub retry_wait: Duration,
    /// How long a replica's claim on a task holds without a renewal (`lease`, default 30s),
    /// on a store shared by many replicas and workers (PostgreSQL): the heartbeat renews
    /// every third of it, and a task whose node died is taken over by another once it lapses
    /// (plus one rescuer sweep, every half lease). Unused on SQLite.
    pub lease: Duration,
    /// The address the HTTP transport listens on (`listen`, default
    /// [`DEFAULT_LISTEN`](ServerConfig::DEFAULT_LISTEN), `127.0.0.1:8765`). An IP address
    /// and a port; host names are not resolved.
    pub listen: SocketAddr,
    /// HTTPS on the listener: the PEM files of its certificate chain and private key
    /// (`tls_cert`, `tls_key`, both or neither; read again on `SIGHUP`). `None`: plain HTTP.
    pub tls: Option<(PathBuf, PathBuf)>,
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
    /// The OAuth 2.1 resource server (`[server.auth.oauth]`, default none): JWT access
    /// tokens from one authorization server, beside the static tokens.
    pub oauth: Option<OAuthConfig>,
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
    /// How many events each task's log keeps, its oldest pruned past it (`task_events`,
    /// default 10000; at least 1).
    pub task_events: u32,
    /// How many bytes of event payloads each task's log keeps, its oldest pruned past it
    /// (`task_event_bytes`, default 4 MiB; a size as `max_body`'s).
    pub task_event_bytes: usize,
    /// Whether the HTTP transport serves `/metrics` in the Prometheus text format
    /// (`metrics`, default `true`). It is behind the same Host and Origin checks as `/mcp`,
    /// and behind a bearer token when `[[server.auth.tokens]]` are configured.
    pub metrics: bool,
    /// How often a plain call whose request carried a progress token gets a progress
    /// notification at least while it runs, which many hosts take to reset their request
    /// timeout (`heartbeat`, default 15s; `"0"` turns heartbeats off).
    pub heartbeat: Duration,
    /// How long a plain call of an `optional` tool, from a client that speaks no tasks (in
    /// either era), runs before it is handed off: answered with a result that names the task
    /// it goes on as and the helper tools that collect it (`sync_wait`, default 45s, below
    /// the common 60 s host timeout; `"0"` turns the handoff and the helper tools off; a
    /// tool's own `sync_wait` overrides it).
    pub sync_wait: Duration,
    /// The names of the helper tools listed to clients without tasks when `sync_wait` is
    /// on (`[server.task_tools]` with `status`, `result`, `cancel`; defaults `task_status`,
    /// `task_result`, `task_cancel`).
    pub task_tools: TaskToolNames,
    /// Whether the HTTP transport serves the web view at `/ui` (`ui`). `None` (not set):
    /// served when the server listens on loopback or has `[[server.auth.tokens]]`, not on
    /// another address without tokens. It is behind the same Host, Origin and token checks
    /// as `/mcp`, and shows each principal only its own tasks.
    pub ui: Option<bool>,
    /// Where task events are POSTed (`[[server.webhooks]]`, default none).
    pub webhooks: Vec<super::Webhook>,
    /// How many task reads (`tasks/get`, `tasks/list`, in both eras) one principal may make
    /// per second on average (`poll_rate`, default 50; 0 turns the limit off). Beyond it, and
    /// beyond `poll_burst`, a read is refused with `-32010` and `data.retryAfterMs`.
    pub poll_rate: u32,
    /// How many task reads one principal may make at once after a pause (`poll_burst`,
    /// default 100; at least 1).
    pub poll_burst: u32,
    /// How many 2025-11-25 HTTP sessions one principal may hold open at once
    /// (`max_sessions_per_principal`, default 64; at least 1). Without tokens every client
    /// is the one anonymous principal, so this bounds all sessions together.
    pub max_sessions_per_principal: u32,
    /// How many SSE streams one 2025-11-25 HTTP session may have open at once, POST streams
    /// and its GET stream together (`max_streams_per_session`, default 32; at least 1).
    pub max_streams_per_session: u32,
    /// How many events an SSE stream buffers for a client that does not read them or has
    /// not reconnected yet (`max_stream_events`, default 1000; at least 1). A POST stream
    /// over it is ended (its client gets the result from `tasks/result` again); the GET
    /// stream drops its oldest events.
    pub max_stream_events: u32,
    /// How long a client may take to send a request's headers on a new HTTP connection
    /// (`header_timeout`, default 10s): a slow client (slowloris) is disconnected then.
    pub header_timeout: Duration,
    /// How many 2026-07-28 `subscriptions/listen` streams one principal may hold open at
    /// once (`max_listens_per_principal`, default 16; at least 1).
    pub max_listens_per_principal: u32,
    /// Trace export (`[server.tracing]`).
    pub tracing: TracingConfig,
}

/// Trace export (`[server.tracing]`): spans (requests and tasks, joined to the requestors'
/// W3C trace context) sent to an OpenTelemetry collector over OTLP/HTTP. Needs a binary
/// built with the `otlp` feature; without it, setting `otlp_endpoint` is an error at start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TracingConfig {
    /// The collector's OTLP/HTTP base URL (`otlp_endpoint`, e.g. `http://127.0.0.1:4318`;
    /// spans go to its `/v1/traces` unless the URL names that path). `None`: no export.
    /// Plain `http://` only (this build sends no TLS; use a local collector or relay).
    pub otlp_endpoint: Option<String>,
    /// The `service.name` of the exported spans (`service_name`, default `mcp-tasks`).
    pub service_name: String,
}

impl ServerConfig {
    /// Whether `/ui` is served when listening on `addr` (see [`ServerConfig::ui`]).
    pub fn serves_ui(&self, addr: SocketAddr) -> bool {
        self.ui.unwrap_or_else(|| addr.ip().is_loopback() || self.authenticates())
    }
}

/// The names of the helper tools for clients without tasks (`[server.task_tools]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskToolNames {
    /// Reads a task's status (`status`, default `task_status`).
    pub status: String,
    /// Waits a while for a task's result and returns it (`result`, default `task_result`).
    pub result: String,
    /// Cancels a task (`cancel`, default `task_cancel`).
    pub cancel: String,
}

impl Default for TaskToolNames {
    fn default() -> TaskToolNames {
        TaskToolNames { status: "task_status".to_owned(), result: "task_result".to_owned(), cancel: "task_cancel".to_owned() }
    }
}

impl TaskToolNames {
    /// The three names.
    #[must_use]
    pub fn all(&self) -> [&str; 3] {
        [&self.status, &self.result, &self.cancel]
    }
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
    /// The default of `poll_rate`: task reads per second per principal.
    pub const DEFAULT_POLL_RATE: u32 = 50;
    /// The default of `poll_burst`.
    pub const DEFAULT_POLL_BURST: u32 = 100;
    /// The default of `max_sessions_per_principal`.
    pub const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: u32 = 64;
    /// The default of `max_streams_per_session`.
    pub const DEFAULT_MAX_STREAMS_PER_SESSION: u32 = 32;
    /// The default of `max_stream_events`.
    pub const DEFAULT_MAX_STREAM_EVENTS: u32 = 1000;
    /// The default of `max_listens_per_principal`.
    pub const DEFAULT_MAX_LISTENS_PER_PRINCIPAL: u32 = 16;

    /// Whether requests must carry a bearer token: static tokens or OAuth are configured.
    #[must_use]
    pub fn authenticates(&self) -> bool {
        self.auth.is_enabled() || self.oauth.is_some()
    }

    /// The authenticator built from `[[server.auth.tokens]]` (the same as the `auth` field).
    #[must_use]
    pub fn auth(&self) -> &Auth {
        &self.auth
    }

    /// Whether a request's `Host` header value is accepted: `localhost`, `127.0.0.1` or
    /// `[::1]` with any port or none, or a match of one of
    /// [`allowed_hosts`](ServerConfig::allowed_hosts) (host names compare without regard to
    /// ASCII case; an entry without a port accepts any port, one with a port only that).
    /// The same check as [`hosts::host_allowed`], which the HTTP transport applies.
    #[must_use]
    pub fn allows_host(&self, host: &str) -> bool {
        hosts::host_allowed(&self.allowed_hosts, host)
    }

    /// Whether a request's `Origin` header value is accepted: `http://` or `https://` on
    /// `localhost`, `127.0.0.1` or `[::1]` with any port or none, or one of
    /// [`allowed_origins`](ServerConfig::allowed_origins) (same scheme, host and port; a
    /// left-out port is the scheme's default). `null` and non-HTTP origins are refused.
    /// The same check as [`hosts::origin_allowed`], which the HTTP transport applies.
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
            inline_wait: Duration::from_secs(1),
            retry_wait: Duration::from_secs(10 * 60),
            lease: Duration::from_secs(30),
            listen: ServerConfig::DEFAULT_LISTEN,
            tls: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body: ServerConfig::DEFAULT_MAX_BODY,
            auth: Auth::default(),
            oauth: None,
            max_running: ServerConfig::DEFAULT_MAX_RUNNING,
            max_running_per_principal: ServerConfig::DEFAULT_MAX_RUNNING_PER_PRINCIPAL,
            max_retained_per_principal: ServerConfig::DEFAULT_MAX_RETAINED_PER_PRINCIPAL,
            task_events: 10_000,
            task_event_bytes: 4 << 20,
            metrics: true,
            heartbeat: Duration::from_secs(15),
            sync_wait: Duration::from_secs(45),
            task_tools: TaskToolNames::default(),
            ui: None,
            webhooks: Vec::new(),
            poll_rate: ServerConfig::DEFAULT_POLL_RATE,
            poll_burst: ServerConfig::DEFAULT_POLL_BURST,
            max_sessions_per_principal: ServerConfig::DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
            max_streams_per_session: ServerConfig::DEFAULT_MAX_STREAMS_PER_SESSION,
            max_stream_events: ServerConfig::DEFAULT_MAX_STREAM_EVENTS,
            header_timeout: Duration::from_secs(10),
            max_listens_per_principal: ServerConfig::DEFAULT_MAX_LISTENS_PER_PRINCIPAL,
            tracing: TracingConfig { otlp_endpoint: None, service_name: "mcp-tasks".to_owned() },
        }
    }
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    name: Option<String>,
    default_ttl: Option<Spanned<String>>,
    max_ttl: Option<Spanned<String>>,
    poll_interval: Option<Spanned<String>>,
    session_idle: Option<Spanned<String>>,
    inline_wait: Option<Spanned<String>>,
    retry_wait: Option<Spanned<String>>,
    lease: Option<Spanned<String>>,
    listen: Option<Spanned<String>>,
    tls_cert: Option<Spanned<String>>,
    tls_key: Option<Spanned<String>>,
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
    task_events: Option<Spanned<i64>>,
    task_event_bytes: Option<Spanned<RawSize>>,
    metrics: Option<bool>,
    heartbeat: Option<Spanned<String>>,
    sync_wait: Option<Spanned<String>>,
    task_tools: Option<RawTaskTools>,
    ui: Option<bool>,
    #[serde(default)]
    webhooks: Vec<super::webhook::RawWebhook>,
    poll_rate: Option<Spanned<i64>>,
    poll_burst: Option<Spanned<i64>>,
    max_sessions_per_principal: Option<Spanned<i64>>,
    max_streams_per_session: Option<Spanned<i64>>,
    max_stream_events: Option<Spanned<i64>>,
    header_timeout: Option<Spanned<String>>,
    max_listens_per_principal: Option<Spanned<i64>>,
    tracing: Option<Spanned<RawTracing>>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTracing {
    otlp_endpoint: Option<String>,
    service_name: Option<String>,
}

impl RawTracing {
    fn check(self, line: usize, lines: Lines<'_>) -> Result<TracingConfig, ConfigError> {
        let problem = |reason: String| lines.error(line, Problem::Tracing { reason });
        if let Some(url) = &self.otlp_endpoint {
            let rest = url.strip_prefix("http://").ok_or_else(|| {
                problem(format!("otlp_endpoint `{url}` must start with http:// (this build sends no TLS; use a local collector)"))
            })?;
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            if authority.is_empty() || authority.contains('@') || url.chars().any(char::is_whitespace) {
                return Err(problem(format!("otlp_endpoint `{url}` needs a host (and no user info or spaces)")));
            }
        }
        let service_name = self.service_name.unwrap_or_else(|| "mcp-tasks".to_owned());
        if service_name.trim().is_empty() {
            return Err(problem("service_name is empty".to_owned()));
        }
        Ok(TracingConfig { otlp_endpoint: self.otlp_endpoint, service_name })
    }
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTaskTools {
    status: Option<Spanned<String>>,
    result: Option<Spanned<String>>,
    cancel: Option<Spanned<String>>,
}

impl RawTaskTools {
    fn check(self, lines: Lines<'_>) -> Result<TaskToolNames, ConfigError> {
        let defaults = TaskToolNames::default();
        let mut seen: Vec<(String, &'static str)> = Vec::new();
        let mut name = |key: &'static str, value: Option<Spanned<String>>, default: String| {
            let Some(value) = value else {
                seen.push((default.clone(), key));
                return Ok(default);
            };
            let line = lines.of(&value.span());
            let written = value.into_inner();
            let bad = |reason: String| {
                lines.error(line, Problem::TaskToolName { key: key.to_owned(), value: written.clone(), reason })
            };
            if written.is_empty() || written.len() > 128 {
                return Err(bad("must be 1 to 128 characters".to_owned()));
            }
            if !written.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) {
                return Err(bad("may hold only ASCII letters, digits, `_`, `-` and `.`".to_owned()));
            }
            if let Some((_, other)) = seen.iter().find(|(known, _)| *known == written) {
                return Err(bad(format!("is also the name of server.task_tools.{other}")));
            }
            seen.push((written.clone(), key));
            Ok(written)
        };
        let status = name("status", self.status, defaults.status)?;
        let result = name("result", self.result, defaults.result)?;
        let cancel = name("cancel", self.cancel, defaults.cancel)?;
        Ok(TaskToolNames { status, result, cancel })
    }
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    #[serde(default)]
    tokens: Vec<RawToken>,
    oauth: Option<Spanned<RawOAuth>>,
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
            if principal.starts_with(OAUTH_PRINCIPAL_PREFIX) {
                return Err(lines.error(line, Problem::ReservedPrincipal { principal }));
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
    /// Checks every setting, in the order its problems are reported: HTTP and auth, task
    /// limits, times, features, client limits, tracing; then that `default_ttl` is at most
    /// `max_ttl`.
    /// Every problem is reported, each setting's own: the config returned holds the default
    /// of each setting that has one.
    pub(crate) fn check(mut self, lines: Lines<'_>) -> (ServerConfig, Vec<ConfigError>) {
        let ttl_lines: Vec<usize> = [&self.default_ttl, &self.max_ttl].into_iter().flatten().map(|v| lines.of(&v.span())).collect();
        let mut server = ServerConfig::default();
        let mut problems = Vec::new();
        self.check_http(lines, &mut server, &mut problems);
        self.check_task_limits(lines, &mut server, &mut problems);
        self.check_times(lines, &mut server, &mut problems);
        self.check_features(lines, &mut server, &mut problems);
        self.check_client_limits(lines, &mut server, &mut problems);
        if let Some(raw) = self.tracing.take() {
            let line = lines.of(&raw.span());
            set!(problems, server.tracing, raw.into_inner().check(line, lines));
        }
        // Compared only when both were read (a default in place of a bad one says nothing).
        let ttls_read = !problems.iter().any(|problem| matches!(problem, ConfigError::Invalid { line: Some(line), .. } if ttl_lines.contains(line)));
        if ttls_read && server.default_ttl > server.max_ttl {
            problems.push(ConfigError::Invalid {
                file: None,
                line: ttl_lines.first().copied(),
                problem: Problem::TtlOrder {
                    default_ttl: humantime::format_duration(server.default_ttl).to_string(),
                    max_ttl: humantime::format_duration(server.max_ttl).to_string(),
                },
            });
        }
        (server, problems)
    }

    /// `listen`, `allowed_hosts`, `allowed_origins`, `max_body`, `auth.oauth`, `auth`.
    fn check_http(&mut self, lines: Lines<'_>, server: &mut ServerConfig, problems: &mut Vec<ConfigError>) {
        if let Some(value) = self.listen.take() {
            set!(problems, server.listen, listen(lines, &value));
        }
        server.tls = match (self.tls_cert.take(), self.tls_key.take()) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some((PathBuf::from(cert.into_inner()), PathBuf::from(key.into_inner()))),
            (Some(one), None) | (None, Some(one)) => {
                problems.push(lines.error(lines.of(&one.span()), Problem::TlsPair));
                None
            }
        };
        set!(problems, server.allowed_hosts, checked_entries(
            lines,
            std::mem::take(&mut self.allowed_hosts),
            Authority::parse,
            |value, reason| Problem::AllowedHost { value, reason },
        ));
        set!(problems, server.allowed_origins, checked_entries(
            lines,
            std::mem::take(&mut self.allowed_origins),
            Origin::parse,
            |value, reason| Problem::AllowedOrigin { value, reason },
        ));
        if let Some(value) = self.max_body.take() {
            set!(problems, server.max_body, lines.size("server.max_body", &value));
        }
        if let Some(raw) = self.auth.oauth.take() {
            let line = lines.of(&raw.span());
            set!(problems, server.oauth, raw.into_inner().check(lines, line).map(Some));
        }
        set!(problems, server.auth, std::mem::take(&mut self.auth).check(lines));
    }

    /// `max_running`, `max_running_per_principal`, `max_retained_per_principal`, `task_events`,
    /// `task_event_bytes`.
    fn check_task_limits(&mut self, lines: Lines<'_>, server: &mut ServerConfig, problems: &mut Vec<ConfigError>) {
        set!(problems, server.max_running, count_or(lines, "server.max_running", self.max_running.take(), server.max_running));
        set!(problems, server.max_running_per_principal, count_or(
            lines,
            "server.max_running_per_principal",
            self.max_running_per_principal.take(),
            server.max_running_per_principal,
        ));
        set!(problems, server.max_retained_per_principal, count_or(
            lines,
            "server.max_retained_per_principal",
            self.max_retained_per_principal.take(),
            server.max_retained_per_principal,
        ));
        set!(problems, server.task_events, count_or(lines, "server.task_events", self.task_events.take(), server.task_events));
        if let Some(value) = self.task_event_bytes.take() {
            set!(problems, server.task_event_bytes, lines.size("server.task_event_bytes", &value));
        }
    }

    /// `name` and the times: `default_ttl`, `max_ttl`, `poll_interval`, `session_idle`,
    /// `inline_wait`, `retry_wait`, `lease`.
    fn check_times(&mut self, lines: Lines<'_>, server: &mut ServerConfig, problems: &mut Vec<ConfigError>) {
        if let Some(name) = self.name.take() {
            server.name = name;
        }
        set!(problems, server.default_ttl, duration_or(lines, "server.default_ttl", self.default_ttl.take(), server.default_ttl));
        set!(problems, server.max_ttl, duration_or(lines, "server.max_ttl", self.max_ttl.take(), server.max_ttl));
        set!(problems, server.poll_interval, duration_or(lines, "server.poll_interval", self.poll_interval.take(), server.poll_interval));
        set!(problems, server.session_idle, duration_or(lines, "server.session_idle", self.session_idle.take(), server.session_idle));
        set!(problems, server.inline_wait, duration_or(lines, "server.inline_wait", self.inline_wait.take(), server.inline_wait));
        set!(problems, server.retry_wait, duration_or(lines, "server.retry_wait", self.retry_wait.take(), server.retry_wait));
        set!(problems, server.lease, duration_or(lines, "server.lease", self.lease.take(), server.lease));
    }

    /// `metrics`, `heartbeat`, `sync_wait`, `task_tools`, `ui`, `webhooks`.
    fn check_features(&mut self, lines: Lines<'_>, server: &mut ServerConfig, problems: &mut Vec<ConfigError>) {
        server.metrics = self.metrics.unwrap_or(server.metrics);
        set!(problems, server.heartbeat, off_or(lines, "server.heartbeat", self.heartbeat.take(), server.heartbeat));
        set!(problems, server.sync_wait, off_or(lines, "server.sync_wait", self.sync_wait.take(), server.sync_wait));
        set!(problems, server.task_tools, self.task_tools.take().unwrap_or_default().check(lines));
        server.ui = self.ui;
        for raw in std::mem::take(&mut self.webhooks) {
            match raw.check(lines) {
                Ok(webhook) => server.webhooks.push(webhook),
                Err(problem) => problems.push(problem),
            }
        }
    }

    /// The limits on hostile clients: `poll_rate` (zero is off), `poll_burst`,
    /// `max_sessions_per_principal`, `max_streams_per_session`, `max_stream_events`,
    /// `header_timeout`, `max_listens_per_principal`.
    fn check_client_limits(&mut self, lines: Lines<'_>, server: &mut ServerConfig, problems: &mut Vec<ConfigError>) {
        if let Some(value) = self.poll_rate.take() {
            set!(problems, server.poll_rate, lines.count_from("server.poll_rate", &value, 0));
        }
        set!(problems, server.poll_burst, count_or(lines, "server.poll_burst", self.poll_burst.take(), server.poll_burst));
        set!(problems, server.max_sessions_per_principal, count_or(
            lines,
            "server.max_sessions_per_principal",
            self.max_sessions_per_principal.take(),
            server.max_sessions_per_principal,
        ));
        set!(problems, server.max_streams_per_session, count_or(
            lines,
            "server.max_streams_per_session",
            self.max_streams_per_session.take(),
            server.max_streams_per_session,
        ));
        set!(
            problems,
            server.max_stream_events,
            count_or(lines, "server.max_stream_events", self.max_stream_events.take(), server.max_stream_events)
        );
        set!(problems, server.header_timeout, duration_or(lines, "server.header_timeout", self.header_timeout.take(), server.header_timeout));
        set!(problems, server.max_listens_per_principal, count_or(
            lines,
            "server.max_listens_per_principal",
            self.max_listens_per_principal.take(),
            server.max_listens_per_principal,
        ));
    }
}

/// A duration, or `default` when left out.
fn duration_or(lines: Lines<'_>, field: &str, value: Option<Spanned<String>>, default: Duration) -> Result<Duration, ConfigError> {
    value.map_or(Ok(default), |value| lines.duration(field, &value))
}

/// A count of at least one, or `default` when left out.
fn count_or(lines: Lines<'_>, field: &str, value: Option<Spanned<i64>>, default: u32) -> Result<u32, ConfigError> {
    value.map_or(Ok(default), |value| lines.count(field, &value))
}

/// A duration where zero means off, or `default` when left out.
fn off_or(lines: Lines<'_>, field: &str, value: Option<Spanned<String>>, default: Duration) -> Result<Duration, ConfigError> {
    value.map_or(Ok(default), |value| lines.duration_or_off(field, &value))
}

/// Parses `server.listen`: an IP address and a port.
///
/// # Errors
/// A [`Problem::Listen`] on its line.
fn listen(lines: Lines<'_>, value: &Spanned<String>) -> Result<SocketAddr, ConfigError> {
    value.get_ref().parse::<SocketAddr>().map_err(|err| {
        let problem = Problem::Listen {
            value: value.get_ref().clone(),
            reason: err.to_string(),
        };
        lines.error(lines.of(&value.span()), problem)
    })
}

/// The entries of a list such as `allowed_hosts`, each checked with `parse`.
///
/// # Errors
/// The first entry `parse` refuses, as the `problem` made of the entry and the reason, on
/// the entry's line.
fn checked_entries<T>(
    lines: Lines<'_>,
    entries: Vec<Spanned<String>>,
    parse: impl Fn(&str) -> Result<T, String>,
    problem: impl Fn(String, String) -> Problem,
) -> Result<Vec<String>, ConfigError> {
    let mut checked = Vec::with_capacity(entries.len());
    for entry in entries {
        if let Err(reason) = parse(entry.get_ref()) {
            let line = lines.of(&entry.span());
            return Err(lines.error(line, problem(entry.into_inner(), reason)));
        }
        checked.push(entry.into_inner());
    }
    Ok(checked)
}

#[cfg(test)]
mod tests;
