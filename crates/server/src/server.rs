//! [`Server`]: what a server serves (its identity and tools) over the engine that runs them.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_tasks_engine::{Engine, ToolRuntime};
use mcp_tasks_protocol::legacy::{Implementation, TaskSupport, Tool, ToolExecution};

/// A tool as served: its MCP descriptor and the runtime that does its work.
#[derive(Clone)]
pub struct ToolDef {
    /// What `tools/list` shows (name, description, input schema, `execution.taskSupport`).
    pub descriptor: Tool,
    /// The handler and restart policy.
    pub runtime: ToolRuntime,
}

impl ToolDef {
    /// The tool's task support; absent means `forbidden` (2025-11-25 `ToolExecution`).
    pub fn task_support(&self) -> TaskSupport {
        self.descriptor
            .execution
            .as_ref()
            .and_then(|execution| execution.task_support)
            .unwrap_or(TaskSupport::Forbidden)
    }
}

/// An MCP server: identity, tools, and the engine. A cheap, cloneable handle.
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
        }
    }

    /// The engine behind the server.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.inner.tools.get(name)
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    engine: Engine,
    info: Implementation,
    instructions: Option<String>,
    tools: BTreeMap<String, ToolDef>,
}

impl ServerBuilder {
    /// Sets the name in `serverInfo`.
    pub fn name(mut self, name: impl Into<String>) -> ServerBuilder {
        self.info.name = name.into();
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
        self.engine.register(tool.descriptor.name.clone(), tool.runtime.clone());
        self.tools.insert(tool.descriptor.name.clone(), tool);
        self
    }

    /// The server.
    pub fn build(self) -> Server {
        Server {
            inner: Arc::new(Inner {
                engine: self.engine,
                info: self.info,
                instructions: self.instructions,
                tools: self.tools,
            }),
        }
    }
}
