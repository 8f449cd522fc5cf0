//! [`Server`]: what a server serves (its identity, tools, resources, prompts and completions)
//! over the engine that runs its tools.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use mcp_tasks_engine::{Engine, Handler, RestartPolicy, ToolRuntime};
use mcp_tasks_protocol::jsonrpc;
use mcp_tasks_protocol::legacy::{
    Empty, Implementation, PromptsCapability, ResourcesCapability, ServerCapabilities, ServerTasksCapability,
    TaskSupport, Tool, ToolExecution, ToolsCapability, method,
};
use serde_json::{Value, json};

use crate::arguments::{ArgumentsSchema, InvalidArguments};
use crate::catalog::{Catalog, CompletionDef, PromptDef, ResourceDef, ResourceTemplateDef, Subscriptions};
use crate::session::Route;
use crate::tool::McpTool;

/// A tool as served: its MCP descriptor and the runtime that does its work.
#[derive(Clone)]
pub struct ToolDef {
    /// What `tools/list` shows (name, description, input schema, `execution.taskSupport`).
    pub descriptor: Tool,
    /// The handler and restart policy.
    pub runtime: ToolRuntime,
}

impl ToolDef {
    /// A tool named `name` with a description, the JSON Schema of its arguments (an
    /// object schema, `type: "object"`; every call's arguments are checked against it), and
    /// its handler (see [`crate::handler_fn`] for a closure). It is a plain tool
    /// (`taskSupport: "forbidden"`) that fails when a restart interrupts it and has no
    /// concurrency limit, until [`ToolDef::with_task_support`], [`ToolDef::on_restart`] and
    /// [`ToolDef::max_concurrent`] say otherwise.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl Handler,
    ) -> ToolDef {
        let mut descriptor = Tool::new(name, input_schema);
        descriptor.description = Some(description.into());
        descriptor.execution = Some(ToolExecution { task_support: Some(TaskSupport::Forbidden) });
        ToolDef {
            descriptor,
            runtime: ToolRuntime::new(handler),
        }
    }

    /// Sets whether the tool may (`optional`), must (`required`) or must not (`forbidden`)
    /// be called as a task.
    #[must_use]
    pub fn with_task_support(mut self, support: TaskSupport) -> ToolDef {
        self.descriptor.execution = Some(ToolExecution { task_support: Some(support) });
        self
    }

    /// Sets the display name.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> ToolDef {
        self.descriptor.title = Some(title.into());
        self
    }

    /// Sets the JSON Schema of the result's `structuredContent`.
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> ToolDef {
        self.descriptor.output_schema = Some(schema);
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

    /// The tool's task support; absent means `forbidden` (2025-11-25 `ToolExecution`).
    pub fn task_support(&self) -> TaskSupport {
        self.descriptor
            .execution
            .as_ref()
            .and_then(|execution| execution.task_support)
            .unwrap_or(TaskSupport::Forbidden)
    }
}

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
    /// Sorted by name so that `tools/list` is stable.
    pub(crate) tools: BTreeMap<String, ToolDef>,
    /// Each tool's compiled `inputSchema`, by tool name.
    pub(crate) arguments: HashMap<String, ArgumentsSchema>,
    pub(crate) catalog: Catalog,
    pub(crate) subscriptions: Subscriptions,
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
            tools: BTreeMap::new(),
            catalog: Catalog::default(),
        }
    }

    /// The engine behind the server.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// Sends `notifications/resources/updated` for `uri` to every session that subscribed to
    /// it (`resources/subscribe`), on the stream for messages not tied to a request.
    pub fn notify_resource_updated(&self, uri: &str) {
        let message = jsonrpc::notification(method::NOTIFY_RESOURCE_UPDATED, json!({ "uri": uri }));
        for session in self.inner.subscriptions.subscribers(uri) {
            session.send(message.clone(), Route::General);
        }
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.inner.tools.get(name)
    }

    /// Checks the `arguments` of a call of tool `name` against its compiled `inputSchema`.
    pub(crate) fn check_arguments(&self, name: &str, arguments: &Value) -> Result<(), InvalidArguments> {
        match self.inner.arguments.get(name) {
            Some(schema) => schema.check(name, arguments),
            None => Ok(()),
        }
    }

    /// What `initialize` declares: tools, tasks, logging and completions always; resources
    /// (with subscriptions) when there is a resource or template; prompts when there is a
    /// prompt. No list ever changes while the server runs.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        let catalog = &self.inner.catalog;
        ServerCapabilities {
            completions: Some(Empty {}),
            experimental: None,
            logging: Some(Empty {}),
            prompts: catalog.has_prompts().then_some(PromptsCapability { list_changed: Some(false) }),
            resources: catalog
                .has_resources()
                .then_some(ResourcesCapability { subscribe: Some(true), list_changed: Some(false) }),
            tasks: Some(ServerTasksCapability::full()),
            tools: Some(ToolsCapability { list_changed: Some(false) }),
        }
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    engine: Engine,
    info: Implementation,
    instructions: Option<String>,
    tools: BTreeMap<String, ToolDef>,
    catalog: Catalog,
}

impl ServerBuilder {
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

    /// Adds a tool (and registers its runtime with the engine, so tasks of it can run and
    /// be recovered).
    pub fn tool(mut self, mut tool: ToolDef) -> ServerBuilder {
        if tool.descriptor.execution.is_none() {
            tool.descriptor.execution = Some(ToolExecution { task_support: Some(TaskSupport::Forbidden) });
        }
        let mut runtime = tool.runtime.clone();
        runtime.handler = Arc::new(McpTool { inner: runtime.handler });
        self.engine.register(tool.descriptor.name.clone(), runtime);
        self.tools.insert(tool.descriptor.name.clone(), tool);
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

    /// Adds a completion handler for one argument of a prompt or template (replacing one for
    /// the same argument). Arguments without a handler get no suggestions.
    pub fn completion(mut self, completion: CompletionDef) -> ServerBuilder {
        self.catalog.completions.insert(completion.key(), completion);
        self
    }

    /// The server, with every tool's `inputSchema` compiled once for the argument checks
    /// of `tools/call`.
    ///
    /// # Errors
    /// A [`BuildError`] naming the first tool (by name) whose `inputSchema` is not an
    /// object schema or not valid JSON Schema. A bad schema is a mistake in the tool's
    /// definition, so the server refuses to start rather than serve a tool that could
    /// reject every call, or accept any.
    pub fn build(self) -> Result<Server, BuildError> {
        let arguments = self
            .tools
            .values()
            .map(|tool| {
                let name = &tool.descriptor.name;
                Ok((name.clone(), ArgumentsSchema::compile(name, &tool.descriptor.input_schema)?))
            })
            .collect::<Result<HashMap<_, _>, BuildError>>()?;
        Ok(Server {
            inner: Arc::new(Inner {
                engine: self.engine,
                info: self.info,
                instructions: self.instructions,
                tools: self.tools,
                arguments,
                catalog: self.catalog,
                subscriptions: Subscriptions::default(),
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
