//! The tools a server serves, era-neutral: [`ToolDef`] (a [`ToolSpec`] that each era's codec
//! renders in its own `Tool` shape, and the [`ToolRuntime`] that does the work) and the
//! [`ToolRegistry`] that holds them. The CLI fills the registry from the config; a proxy can
//! fill it from an upstream server's `tools/list` and change it while serving.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use mcp_tasks_engine::{Engine, Handler, RestartPolicy, ToolRuntime};
use serde_json::Value;
use tokio::sync::watch;

use crate::arguments::{ArgumentsSchema, InvalidArguments};
use crate::server::BuildError;
use crate::tool::McpTool;

/// Whether a tool may, must, or must not run as a task: the wire's
/// [`TaskSupport`](mcp_tasks_protocol::mcp::TaskSupport) (default `Forbidden`). Each era says
/// it its own way (2025-11-25: `execution.taskSupport`; 2026-07-28: the server decides per
/// call by it).
pub use mcp_tasks_protocol::mcp::TaskSupport as TaskMode;

/// What a client is told about a tool, in no era's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// Name used in `tools/call`; unique in a server.
    pub name: String,
    /// Name for display.
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: Option<String>,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
    /// JSON Schema of the result's `structuredContent`, if any.
    pub output_schema: Option<Value>,
    /// `ToolAnnotations` (hints such as `readOnlyHint`), as JSON.
    pub annotations: Option<Value>,
    /// How the tool runs as a task.
    pub task_mode: TaskMode,
}

/// A tool as served: its [`ToolSpec`] and the runtime that does its work.
#[derive(Clone)]
pub struct ToolDef {
    /// What clients are told about the tool.
    pub spec: ToolSpec,
    /// The handler and restart policy.
    pub runtime: ToolRuntime,
    /// 2026-07-28, a [`TaskMode::Optional`] tool called by a client that declared the tasks
    /// extension: how long the call may wait for the work to end and answer inline before
    /// it answers with a task instead (`None`: the server's, [`ServerBuilder::inline_wait`](crate::ServerBuilder::inline_wait)).
    pub inline_wait: Option<Duration>,
    /// A [`TaskMode::Optional`] tool called plainly by a client that speaks no tasks (either
    /// era): how long the call runs before it is handed off to a task and answered with the
    /// task's id (`None`: the server's, [`ServerBuilder::sync_wait`](crate::ServerBuilder::sync_wait);
    /// zero: never).
    pub sync_wait: Option<Duration>,
    /// A plain call with a progress token from a client that speaks no tasks: how often it
    /// gets a progress heartbeat while nothing else went to the client (`None`: the server's,
    /// [`ServerBuilder::heartbeat`](crate::ServerBuilder::heartbeat); zero: never).
    pub heartbeat: Option<Duration>,
}

impl ToolDef {
    /// A tool named `name` with a description, the JSON Schema of its arguments (an
    /// object schema, `type: "object"`; every call's arguments are checked against it), and
    /// its handler (see [`crate::handler_fn`] for a closure). It is a plain tool
    /// ([`TaskMode::Forbidden`]) that fails when a restart interrupts it and has no
    /// concurrency limit, until [`ToolDef::task_mode`], [`ToolDef::on_restart`] and
    /// [`ToolDef::max_concurrent`] say otherwise.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl Handler,
    ) -> ToolDef {
        let spec = ToolSpec {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema,
            output_schema: None,
            annotations: None,
            task_mode: TaskMode::Forbidden,
        };
        ToolDef { spec, runtime: ToolRuntime::new(handler), inline_wait: None, sync_wait: None, heartbeat: None }
    }

    /// Sets whether the tool may ([`TaskMode::Optional`]), must ([`TaskMode::Required`]) or
    /// must not ([`TaskMode::Forbidden`]) run as a task.
    #[must_use]
    pub fn task_mode(mut self, mode: TaskMode) -> ToolDef {
        self.spec.task_mode = mode;
        self
    }

    /// Sets how long a 2026-07-28 call of this (optional) tool waits to answer inline before
    /// it becomes a task; zero: it is a task at once.
    #[must_use]
    pub fn inline_wait(mut self, wait: Duration) -> ToolDef {
        self.inline_wait = Some(wait);
        self
    }

    /// Sets how long a plain call of this (optional) tool from a client that speaks no
    /// tasks runs before it is handed off to a task; zero: never.
    #[must_use]
    pub fn sync_wait(mut self, wait: Duration) -> ToolDef {
        self.sync_wait = Some(wait);
        self
    }

    /// Sets how often a plain call with a progress token gets a progress heartbeat; zero:
    /// never.
    #[must_use]
    pub fn heartbeat(mut self, every: Duration) -> ToolDef {
        self.heartbeat = Some(every);
        self
    }

    /// Sets the display name.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> ToolDef {
        self.spec.title = Some(title.into());
        self
    }

    /// Sets the JSON Schema of the result's `structuredContent`.
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> ToolDef {
        self.spec.output_schema = Some(schema);
        self
    }

    /// Sets what happens to a task of this tool that a server restart interrupted.
    #[must_use]
    pub fn on_restart(mut self, policy: RestartPolicy) -> ToolDef {
        self.runtime.on_restart = policy;
        self
    }

    /// Sets how many calls of this tool may run at once; more wait their turn, tasks in
    /// `working` with a status message saying they are queued (`None`: no limit).
    #[must_use]
    pub fn max_concurrent(mut self, limit: impl Into<Option<u32>>) -> ToolDef {
        self.runtime.max_concurrent = limit.into();
        self
    }

    /// Sets how many attempts a task of this tool gets in all when
    /// [`RestartPolicy::Retry`] runs it again after restarts.
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> ToolDef {
        self.runtime.max_attempts = attempts;
        self
    }

    /// Lets a task's work start while its creation is still being committed, for work with
    /// no effect outside its result: a quick tool's task is then one row and one commit,
    /// done when its id is answered ([`ToolRuntime::start_before_commit`]).
    #[must_use]
    pub fn start_before_commit(mut self, early: bool) -> ToolDef {
        self.runtime.start_before_commit = early;
        self
    }
}

/// A registered tool with its compiled `inputSchema`.
pub(crate) struct Entry {
    pub(crate) def: ToolDef,
    arguments: ArgumentsSchema,
}

impl Entry {
    /// Checks the `arguments` of a call against the tool's compiled `inputSchema`.
    pub(crate) fn check(&self, arguments: &Value) -> Result<(), InvalidArguments> {
        self.arguments.check(&self.def.spec.name, arguments)
    }
}

/// The tools of a server, by name. Reads take a snapshot; a change replaces the whole map,
/// so a listing never sees half of one.
pub struct ToolRegistry {
    engine: Engine,
    /// A std lock: held only to clone or swap the `Arc`, never across an await.
    tools: RwLock<Arc<BTreeMap<String, Arc<Entry>>>>,
    /// Counts the changes of the tool set, for `notifications/tools/list_changed`.
    changes: watch::Sender<u64>,
}

impl ToolRegistry {
    pub(crate) fn new(engine: Engine) -> ToolRegistry {
        ToolRegistry { engine, tools: RwLock::new(Arc::new(BTreeMap::new())), changes: watch::Sender::new(0) }
    }

    /// Adds `tool`, or replaces the tool of the same name, and registers its runtime with
    /// the engine (so that tasks of it run and are recovered after a restart).
    ///
    /// # Errors
    /// A [`BuildError`] if the tool's `inputSchema` is not an object schema or not valid
    /// JSON Schema: such a tool could reject every call, or accept any, so it is refused.
    pub fn insert(&self, tool: ToolDef) -> Result<(), BuildError> {
        let arguments = ArgumentsSchema::compile(&tool.spec.name, &tool.spec.input_schema)?;
        // The engine runs the handler as an MCP tool: which results report a failure, how
        // input requests are named.
        let mut runtime = tool.runtime.clone();
        runtime.handler = Arc::new(McpTool { inner: runtime.handler });
        self.engine.register(tool.spec.name.clone(), runtime);
        let mut tools = self.write();
        let mut next = BTreeMap::clone(&tools);
        next.insert(tool.spec.name.clone(), Arc::new(Entry { def: tool, arguments }));
        *tools = Arc::new(next);
        self.changes.send_modify(|count| *count += 1);
        Ok(())
    }

    /// Removes the tool `name`; `false` if there was none. Tasks of it already created keep
    /// running (the engine keeps the runtime).
    pub fn remove(&self, name: &str) -> bool {
        let mut tools = self.write();
        if !tools.contains_key(name) {
            return false;
        }
        let mut next = BTreeMap::clone(&tools);
        next.remove(name);
        *tools = Arc::new(next);
        self.changes.send_modify(|count| *count += 1);
        true
    }

    /// The names of the tools, sorted.
    pub fn names(&self) -> Vec<String> {
        self.snapshot().keys().cloned().collect()
    }

    /// The tool `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Entry>> {
        self.snapshot().get(name).cloned()
    }

    /// Wakes on each later change of the tool set.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Every tool, sorted by name (so that listings are stable).
    pub(crate) fn snapshot(&self) -> Arc<BTreeMap<String, Arc<Entry>>> {
        Arc::clone(&self.tools.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Arc<BTreeMap<String, Arc<Entry>>>> {
        self.tools.write().unwrap_or_else(PoisonError::into_inner)
    }
}
