//! Upstream tools for mcp-tasks: `mcp-tasks proxy` puts durable tasks in front of any MCP
//! server. The upstream server (a command spoken to over stdio, or a Streamable HTTP URL; in
//! either protocol era, negotiated by the client) is driven through the mcp-tasks client;
//! its tools are registered in the mcp-tasks server's tool registry, each with task support
//! (per-tool [`ToolPolicy`]), and its resources, templates, prompts and completion are served
//! from it request by request ([`mcp_tasks_server::CatalogUpstream`]). The mcp-tasks server
//! then speaks both eras downstream whatever the upstream speaks.
//!
//! A proxied call is a task of the engine like any other (committed before its id leaves,
//! run by the engine's runner, its outcome stored until its TTL). While it runs, the
//! upstream's progress becomes the task's progress, its task status messages the task's
//! status message, its elicitation and sampling requests the task's input requests (answered
//! downstream, the answer sent back upstream), and a downstream cancel is sent upstream
//! (`notifications/cancelled`, or `tasks/cancel` for an upstream task). An upstream task's id
//! is stored with our task ([`mcp_tasks_engine::Context::checkpoint`]), so that after a proxy
//! restart the call resumes polling it.
//!
//! # Layout
//! - [`Proxy`]: the upstream side of a proxy; [`UpstreamSpec`] says where the upstream is,
//!   [`ProxyOptions`] and [`ToolPolicy`] how its tools are served.
//! - `upstream`: the connection and its supervisor (restarts with backoff, follows
//!   `tools/list_changed`, mirrors the tools into the registry, closes gracefully).
//! - `tool`: [`mcp_tasks_engine::Handler`] of an upstream tool: the call, upstream tasks,
//!   resumption, restart policy and timeout.
//! - `asks`: upstream input requests routed to the call they belong to.
//! - `catalog`: resources, prompts and completion forwarded upstream.

mod asks;
mod catalog;
mod tool;
mod upstream;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_client::Era;
use mcp_tasks_engine::RestartPolicy;
use mcp_tasks_server::{CatalogUpstream, Server, TaskMode};

use crate::upstream::Upstream;

/// Where the upstream server is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpstreamSpec {
    /// A program spoken to over stdio, spawned (no shell) in a process group of its own.
    Command {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A Streamable HTTP endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Sent as `Authorization: Bearer <token>`.
        token: Option<String>,
        /// Extra headers on every request (name, value).
        headers: Vec<(String, String)>,
        /// The CA certificates an `https://` upstream is checked against instead of the
        /// system's roots.
        ca_file: Option<std::path::PathBuf>,
    },
}

impl UpstreamSpec {
    /// A stdio upstream: `program` with `args`.
    pub fn command(program: impl Into<String>, args: Vec<String>) -> UpstreamSpec {
        UpstreamSpec::Command { program: program.into(), args }
    }

    /// An HTTP upstream at `url`, without token or headers.
    pub fn http(url: impl Into<String>) -> UpstreamSpec {
        UpstreamSpec::Http { url: url.into(), token: None, headers: Vec::new(), ca_file: None }
    }

    /// How logs name it: the program, or the URL (never the token or headers, which may
    /// hold secrets).
    pub fn describe(&self) -> String {
        match self {
            UpstreamSpec::Command { program, .. } => format!("command {program}"),
            UpstreamSpec::Http { url, .. } => url.clone(),
        }
    }
}

/// How one upstream tool is served.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolPolicy {
    /// Whether calls may, must or must not be tasks (default [`TaskMode::Optional`]).
    pub task_mode: TaskMode,
    /// A call running longer is cancelled upstream and fails (default: none).
    pub timeout: Option<Duration>,
    /// What a restart of the proxy, or of the upstream server, does to a call in flight:
    /// [`RestartPolicy::Fail`] (default) or [`RestartPolicy::Retry`] (call it again). A call
    /// the upstream runs as a task is resumed after a proxy restart whatever this says.
    pub on_restart: RestartPolicy,
    /// With [`RestartPolicy::Retry`], the attempts in all (default 3).
    pub max_attempts: u32,
    /// Calls of the tool running at once (default: no limit).
    pub max_concurrent: Option<u32>,
    /// 2026-07-28: how long a call waits to answer inline (default: the server's).
    pub inline_wait: Option<Duration>,
    /// A plain call of a client that speaks no tasks: how long it runs before it is handed
    /// off to a task (default: the server's `sync_wait`; zero: never).
    pub sync_wait: Option<Duration>,
    /// A plain call with a progress token from a client that speaks no tasks: how often it
    /// gets a progress heartbeat (default: the server's `heartbeat`; zero: never).
    pub heartbeat: Option<Duration>,
}

impl Default for ToolPolicy {
    fn default() -> ToolPolicy {
        ToolPolicy {
            task_mode: TaskMode::Optional,
            timeout: None,
            on_restart: RestartPolicy::Fail,
            max_attempts: mcp_tasks_engine::ToolRuntime::DEFAULT_MAX_ATTEMPTS,
            max_concurrent: None,
            inline_wait: None,
            sync_wait: None,
            heartbeat: None,
        }
    }
}

/// How a [`Proxy`] serves its upstream.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ProxyOptions {
    /// Per-tool policies by upstream tool name; other tools get [`ToolPolicy::default`].
    pub tools: BTreeMap<String, ToolPolicy>,
    /// The era to speak upstream; `None`: negotiated (2026-07-28 if the upstream serves it).
    pub era: Option<Era>,
    /// The first wait after the upstream died before it is started again; doubled after
    /// each failed start, up to [`ProxyOptions::max_backoff`].
    pub backoff: Duration,
    /// The longest wait between two starts.
    pub max_backoff: Duration,
    /// How long a call waits for the upstream to be connected before it fails.
    pub connect_wait: Duration,
}

impl ProxyOptions {
    /// The defaults: every tool [`ToolPolicy::default`], era negotiated, backoff from
    /// 200 ms to 30 s, calls wait up to 60 s for the upstream.
    pub fn new() -> ProxyOptions {
        ProxyOptions {
            tools: BTreeMap::new(),
            era: None,
            backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(30),
            connect_wait: Duration::from_secs(60),
        }
    }

    /// The policy of the upstream tool `name`.
    pub fn policy(&self, name: &str) -> ToolPolicy {
        self.tools.get(name).cloned().unwrap_or_default()
    }
}

/// Why a [`Proxy`] could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The first connection to the upstream failed.
    #[error("cannot connect to the upstream server {upstream}: {source}")]
    Connect {
        /// [`UpstreamSpec::describe`].
        upstream: String,
        /// The client's error.
        #[source]
        source: mcp_tasks_client::ClientError,
    },
    /// The upstream's tools could not be listed.
    #[error("cannot list the tools of the upstream server {upstream}: {source}")]
    ListTools {
        /// [`UpstreamSpec::describe`].
        upstream: String,
        /// The client's error.
        #[source]
        source: mcp_tasks_client::ClientError,
    },
}

/// The upstream side of a proxy. Build the server with [`Proxy::catalog`] as its
/// [`ServerBuilder::catalog_upstream`](mcp_tasks_server::ServerBuilder::catalog_upstream),
/// then [`Proxy::start`] it on that server before recovering and serving.
#[derive(Clone)]
pub struct Proxy {
    upstream: Arc<Upstream>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("upstream", &self.upstream.spec.describe()).finish_non_exhaustive()
    }
}

impl Proxy {
    /// A proxy of `spec`, not connected yet.
    pub fn new(spec: UpstreamSpec, options: ProxyOptions) -> Proxy {
        Proxy { upstream: Arc::new(Upstream::new(spec, options)) }
    }

    /// What serves the server's resources, templates, prompts and completion: the upstream.
    pub fn catalog(&self) -> Arc<dyn CatalogUpstream> {
        Arc::new(catalog::Forwarder(Arc::clone(&self.upstream)))
    }

    /// Connects to the upstream, registers its tools in `server`'s registry, and starts the
    /// supervisor that follows `tools/list_changed` and restarts the upstream when it dies.
    /// Returns the names of the tools registered.
    ///
    /// # Errors
    /// [`ProxyError`] if the first connection or tool listing fails (later failures are
    /// retried with backoff).
    pub async fn start(&self, server: &Server) -> Result<Vec<String>, ProxyError> {
        Arc::clone(&self.upstream).start(server.clone()).await
    }

    /// Which era the upstream session speaks, while connected.
    pub fn upstream_era(&self) -> Option<Era> {
        self.upstream.current().map(|link| link.client.era())
    }

    /// The process id of a stdio upstream, while it runs.
    pub fn upstream_process_id(&self) -> Option<u32> {
        self.upstream.current().and_then(|link| link.client.server_process_id())
    }

    /// How many times the upstream was started again after it died.
    pub fn restarts(&self) -> u64 {
        self.upstream.restarts()
    }

    /// Stops the supervisor and closes the upstream gracefully (stdio: its stdin is closed,
    /// then SIGTERM, then SIGKILL to its process group; HTTP: the session is deleted).
    pub async fn shutdown(&self) {
        self.upstream.shutdown().await;
    }
}
