//! [`Server`]: what a server serves (its identity, tools, resources, prompts and completions)
//! over the engine that runs its tools. Nothing here is of one era: each era's codec renders
//! these facts in its own shapes.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::Engine;
use mcp_tasks_protocol::mcp::Implementation;

use crate::catalog::{Catalog, CompletionDef, PromptDef, ResourceDef, ResourceTemplateDef};
use crate::codec;
use crate::metrics::Metrics;
use crate::ops::handoff::TaskTools;
use crate::poll_rate::PollRate;
use crate::registry::{ToolDef, ToolRegistry};

/// An MCP server: identity, tools, resources, prompts, completions, and the engine. A cheap,
/// cloneable handle.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) engine: Engine,
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) tools: ToolRegistry,
    pub(crate) catalog: Catalog,
    /// 2026-07-28: how long an optional tool's call waits to answer inline before it answers
    /// with a task.
    pub(crate) inline_wait: Duration,
    /// Heartbeats, handoffs and helper tools for long plain calls.
    pub(crate) long_calls: crate::ops::handoff::LongCalls,
    /// What each era's codec keeps on the server (2025-11-25 resource subscriptions, parked
    /// 2026-07-28 rounds).
    pub(crate) codecs: codec::State,
    /// Counts the changes of the resource and of the prompt list, for their `list_changed`.
    pub(crate) list_changes: ListChanges,
    /// What `/metrics` shows.
    pub(crate) metrics: Metrics,
    /// The polling rate limit of `tasks/get` and `tasks/list`, per principal.
    pub(crate) polls: crate::poll_rate::PollLimiter,
}

impl Server {
    /// Starts building a server over `engine`.
    pub fn builder(engine: Engine) -> ServerBuilder {
        ServerBuilder {
            engine,
            info: Implementation {
                name: "mcp-tasks".to_owned(),
                title: None,
                version: env!("CARGO_PKG_VERSION").to_owned(),
                description: None,
                website_url: None,
            },
            instructions: None,
            inline_wait: ServerBuilder::DEFAULT_INLINE_WAIT,
            retry_wait: ServerBuilder::DEFAULT_RETRY_WAIT,
            heartbeat: ServerBuilder::DEFAULT_HEARTBEAT,
            sync_wait: Duration::ZERO,
            task_tools: TaskTools::default(),
            poll_rate: PollRate::OFF,
            tools: Vec::new(),
            catalog: Catalog::default(),
        }
    }

    /// The engine behind the server.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The tools the server serves. Changing them changes what later `tools/list` and
    /// `tools/call` see.
    pub fn tools(&self) -> &ToolRegistry {
        &self.inner.tools
    }

    /// The server's metrics (`/metrics` on the HTTP transport): tasks by tool and era,
    /// HTTP requests, sessions, and what [`Metrics::record_recovery`] is told.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Sends `notifications/resources/updated` for `uri` to every session that subscribed to
    /// it (`resources/subscribe`), on the stream for messages not tied to a request.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.inner.codecs.resource_updated(uri);
    }

    /// Sends `notifications/resources/list_changed` to every 2025-11-25 session and every
    /// 2026-07-28 `subscriptions/listen` stream that asked for it (a proxy whose upstream's
    /// resource list changed). Declared (`listChanged: true`) only with a catalog upstream.
    pub fn notify_resources_list_changed(&self) {
        self.inner.list_changes.resources.send_modify(|count| *count += 1);
    }

    /// [`Server::notify_resources_list_changed`] for the prompt list
    /// (`notifications/prompts/list_changed`).
    pub fn notify_prompts_list_changed(&self) {
        self.inner.list_changes.prompts.send_modify(|count| *count += 1);
    }
}

/// The change counters of the resource and prompt lists; a session or listen stream
/// watches them ([`tokio::sync::watch`]: a burst of changes is one notification).
pub(crate) struct ListChanges {
    pub(crate) resources: tokio::sync::watch::Sender<u64>,
    pub(crate) prompts: tokio::sync::watch::Sender<u64>,
}

impl Default for ListChanges {
    fn default() -> ListChanges {
        ListChanges { resources: tokio::sync::watch::Sender::new(0), prompts: tokio::sync::watch::Sender::new(0) }
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    engine: Engine,
    info: Implementation,
    instructions: Option<String>,
    inline_wait: Duration,
    retry_wait: Duration,
    heartbeat: Duration,
    sync_wait: Duration,
    task_tools: TaskTools,
    poll_rate: PollRate,
    tools: Vec<ToolDef>,
    catalog: Catalog,
}

impl ServerBuilder {
    /// How long a 2026-07-28 call of an optional tool waits to answer inline, unless the
    /// tool or [`ServerBuilder::inline_wait`] says otherwise.
    pub const DEFAULT_INLINE_WAIT: Duration = Duration::from_secs(1);

    /// Sets how long a 2026-07-28 call of an optional tool (from a client that declared the
    /// tasks extension) waits for its work to end and answer inline; past it, the answer
    /// is a task. Zero makes every such call a task at once.
    pub fn inline_wait(mut self, wait: Duration) -> ServerBuilder {
        self.inline_wait = wait;
        self
    }

    /// How long the work of a 2026-07-28 request that asked the client waits for the
    /// client's retry, unless [`ServerBuilder::retry_wait`] says otherwise.
    pub const DEFAULT_RETRY_WAIT: Duration = Duration::from_secs(10 * 60);

    /// Sets how long the work of a 2026-07-28 request that asked the client something (an
    /// `InputRequiredResult` round) waits for the retry with the answers; past it the work
    /// is stopped (a task not yet shown to the client is cancelled) and its `requestState`
    /// is refused.
    pub fn retry_wait(mut self, wait: Duration) -> ServerBuilder {
        self.retry_wait = wait;
        self
    }

    /// How often a plain call whose request carried a progress token hears from the server
    /// at least, unless [`ServerBuilder::heartbeat`] says otherwise: 15 s.
    pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(15);

    /// Sets how often a plain call whose request carried a progress token gets a progress
    /// notification at least while it runs (a heartbeat, which many hosts take to reset
    /// their request timeout); zero: none.
    pub fn heartbeat(mut self, every: Duration) -> ServerBuilder {
        self.heartbeat = every;
        self
    }

    /// Sets how long a plain call of an `optional` tool, from a client that speaks no tasks
    /// (either era), runs before it is handed off: answered with a `CallToolResult` that
    /// says the job goes on as task `ID`, while its work goes on as that task; such clients
    /// are then also listed the helper tools that collect it ([`ServerBuilder::task_tools`]).
    /// Default zero: never (`mcp-tasks serve` sets `[server] sync_wait`, default 45 s).
    pub fn sync_wait(mut self, wait: Duration) -> ServerBuilder {
        self.sync_wait = wait;
        self
    }

    /// Sets the names of the helper tools for clients without tasks (default
    /// `task_status`, `task_result`, `task_cancel`).
    pub fn task_tools(mut self, names: TaskTools) -> ServerBuilder {
        self.task_tools = names;
        self
    }

    /// Limits how fast each principal may read tasks (`tasks/get`, `tasks/list`): `rate`
    /// reads per second on average, `burst` at once; beyond, a read is refused with
    /// [`LIMIT_EXCEEDED`](crate::LIMIT_EXCEEDED) and `data.retryAfterMs`. Default
    /// [`PollRate::OFF`] (`mcp-tasks serve` sets `[server] poll_rate`, default 50/s, and
    /// `poll_burst`, default 100).
    pub fn poll_rate(mut self, rate: PollRate) -> ServerBuilder {
        self.poll_rate = rate;
        self
    }

    /// Sets the name in `serverInfo`.
    pub fn name(mut self, name: impl Into<String>) -> ServerBuilder {
        self.info.name = name.into();
        self
    }

    /// Sets the version in `serverInfo` (default: this crate's version).
    pub fn version(mut self, version: impl Into<String>) -> ServerBuilder {
        self.info.version = version.into();
        self
    }

    /// Sets the instructions returned by `initialize`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> ServerBuilder {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool (replacing one with the same name). At [`ServerBuilder::build`] its
    /// runtime is registered with the engine, so tasks of it can run and be recovered.
    pub fn tool(mut self, tool: ToolDef) -> ServerBuilder {
        self.tools.retain(|known| known.spec.name != tool.spec.name);
        self.tools.push(tool);
        self
    }

    /// Adds a static resource (replacing one with the same URI).
    pub fn resource(mut self, resource: ResourceDef) -> ServerBuilder {
        self.catalog.resources.insert(resource.descriptor().uri.clone(), resource);
        self
    }

    /// Adds a resource template. A URI that several templates match is read by the one
    /// added first; a static resource with exactly that URI goes before any template.
    pub fn resource_template(mut self, template: ResourceTemplateDef) -> ServerBuilder {
        self.catalog.templates.push(template);
        self
    }

    /// Adds a prompt (replacing one with the same name).
    pub fn prompt(mut self, prompt: PromptDef) -> ServerBuilder {
        self.catalog.prompts.insert(prompt.descriptor().name.clone(), prompt);
        self
    }

    /// Serves the resources, templates, prompts and completion that `upstream` offers from
    /// it, request by request, in place of those added here (the proxy's upstream server).
    pub fn catalog_upstream(mut self, upstream: std::sync::Arc<dyn crate::catalog::CatalogUpstream>) -> ServerBuilder {
        self.catalog.upstream = Some(upstream);
        self
    }

    /// Adds a completion handler for one argument of a prompt or template (replacing one for
    /// the same argument). Arguments without a handler get no suggestions.
    pub fn completion(mut self, completion: CompletionDef) -> ServerBuilder {
        self.catalog.completions.insert(completion.key(), completion);
        self
    }

    /// The server, with every tool's `inputSchema` compiled once for the argument checks
    /// of `tools/call`. Built inside a Tokio runtime, its [`Metrics`] start observing the
    /// engine's change feed here (outside one they count creations only).
    ///
    /// # Errors
    /// A [`BuildError`] naming the first tool (by name) whose `inputSchema` is not an
    /// object schema or not valid JSON Schema. A bad schema is a mistake in the tool's
    /// definition, so the server refuses to start rather than serve a tool that could
    /// reject every call, or accept any.
    pub fn build(mut self) -> Result<Server, BuildError> {
        self.tools.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        let tools = ToolRegistry::new(self.engine.clone());
        let poll_interval = Duration::from_millis(self.engine.policy().poll_interval_ms);
        for tool in self.tools {
            tools.insert(tool)?;
        }
        let metrics = Metrics::new();
        metrics.observe(&self.engine);
        Ok(Server {
            inner: Arc::new(Inner {
                engine: self.engine,
                info: self.info,
                instructions: self.instructions,
                inline_wait: self.inline_wait,
                long_calls: crate::ops::handoff::LongCalls {
                    heartbeat: self.heartbeat,
                    sync_wait: self.sync_wait,
                    tools: self.task_tools,
                },
                tools,
                catalog: self.catalog,
                codecs: codec::State::new(self.retry_wait),
                list_changes: ListChanges::default(),
                metrics,
                polls: crate::poll_rate::PollLimiter::new(self.poll_rate, poll_interval),
            }),
        })
    }
}

/// Why [`ServerBuilder::build`] refused to build a server.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The tool's `inputSchema` does not declare `"type": "object"` (2025-11-25 `Tool`:
    /// the arguments of a tool are an object).
    #[error("tool {tool}: its inputSchema must be an object schema, with \"type\": \"object\"")]
    InputSchemaNotObject {
        /// The tool.
        tool: String,
    },
    /// The tool's `inputSchema` is not valid JSON Schema (2020-12 unless its `$schema` names
    /// another draft), or refers to a schema that cannot be resolved.
    #[error("tool {tool}: its inputSchema is not a valid JSON Schema: {reason}")]
    InvalidInputSchema {
        /// The tool.
        tool: String,
        /// What the validator found wrong.
        reason: String,
    },
}
