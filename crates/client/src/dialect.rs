//! [`Dialect`]: the protocol era one connection speaks, chosen once when it is made (see
//! `builder`), with one method per operation whose way differs by era. Each method
//! delegates to its era's module (`legacy` for 2025-11-25, `modern` for 2026-07-28), so
//! that [`Client`] and [`TaskHandle`] never ask which era they speak.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::mcp::{CallToolResult, RequestMeta};
use serde_json::{Map, Value, json};

use crate::client::{Called, Client};
use crate::connection::{Connection, Listening};
use crate::error::ClientError;
use crate::modern::Identity;
use crate::task::TaskHandle;
use crate::types::{TaskInfo, ToolInfo};
use crate::{legacy, modern};

/// The era of a connection, and what that era adds to every request.
#[derive(Clone, Debug)]
pub(crate) enum Dialect {
    /// 2025-11-25: a session begun with `initialize`; requests go as they are.
    Legacy,
    /// 2026-07-28: no session; every request says who the client is.
    Modern(Arc<Identity>),
}

impl Dialect {
    /// The era spoken.
    pub(crate) fn era(&self) -> Era {
        match self {
            Dialect::Legacy => Era::Legacy,
            Dialect::Modern(_) => Era::Modern,
        }
    }

    /// The `params` of a request as this era sends them: 2026-07-28 adds the per-request
    /// `_meta` (with the tasks extension declared when `tasks`).
    pub(crate) fn frame(&self, params: Value, tasks: bool) -> Value {
        match self {
            Dialect::Legacy => params,
            Dialect::Modern(identity) => identity.frame(params, tasks),
        }
    }

    /// One page of `tools/list` read in this era's shapes.
    pub(crate) fn tools_page(&self, answer: Value) -> Result<(Vec<ToolInfo>, Option<String>), ClientError> {
        match self {
            Dialect::Legacy => legacy::tools_page(answer),
            Dialect::Modern(_) => modern::tools_page(answer),
        }
    }

    /// A `subscriptions/listen` for `notifications` (a `SubscriptionFilter`), where the era
    /// has one (2026-07-28); `None` in 2025-11-25, whose server notifies unasked.
    pub(crate) fn listen(&self, connection: &Arc<Connection>, notifications: Value, tasks: bool) -> Option<Listening> {
        match self {
            Dialect::Legacy => None,
            Dialect::Modern(identity) => {
                Some(connection.listen(identity.frame(json!({ "notifications": notifications }), tasks)))
            }
        }
    }

    /// A plain `tools/call` with `meta`, to its result.
    pub(crate) async fn call_tool(
        &self,
        client: &Client,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: RequestMeta,
    ) -> Result<CallToolResult, ClientError> {
        match self {
            Dialect::Legacy => legacy::call_tool(client, name, arguments, meta).await,
            Dialect::Modern(_) => modern::call_tool(client, name, arguments, meta).await,
        }
    }

    /// [`Client::call`]: a task where the era and the tool have it (made once-only by `key`).
    pub(crate) async fn call(
        &self,
        client: &Client,
        name: &str,
        arguments: Value,
        key: Option<&str>,
    ) -> Result<Called, ClientError> {
        match self {
            Dialect::Legacy => legacy::call(client, name, arguments, key).await,
            Dialect::Modern(_) => modern::call(client, name, arguments, key).await,
        }
    }

    /// [`Client::call_tool_as_task`]; `ttl` is asked for in 2025-11-25 only (2026-07-28 has
    /// no way to ask).
    pub(crate) async fn call_as_task(
        &self,
        client: &Client,
        name: &str,
        arguments: Value,
        ttl: Option<Duration>,
    ) -> Result<TaskHandle, ClientError> {
        match self {
            Dialect::Legacy => legacy::call_as_task(client, name, arguments, ttl, None).await,
            Dialect::Modern(_) => modern::call_as_task(client, name, arguments).await,
        }
    }

    /// [`Client::list_tasks`]: every page of `tasks/list`, which 2026-07-28 does not have.
    pub(crate) async fn list_tasks(&self, client: &Client) -> Result<Vec<TaskInfo>, ClientError> {
        match self {
            Dialect::Legacy => legacy::list_tasks(client).await,
            Dialect::Modern(_) => Err(ClientError::NotInEra {
                what: "tasks/list",
                instead: "a client keeps the ids of the tasks it made (the mcp-tasks ledger does)",
            }),
        }
    }

    /// [`TaskHandle::status`]: `tasks/get`.
    pub(crate) async fn status(&self, task: &TaskHandle) -> Result<TaskInfo, ClientError> {
        match self {
            Dialect::Legacy => legacy::status(task).await,
            Dialect::Modern(_) => modern::status(task).await,
        }
    }

    /// [`TaskHandle::cancel`]: `tasks/cancel`, and the task as it then stands.
    pub(crate) async fn cancel(&self, task: &TaskHandle) -> Result<TaskInfo, ClientError> {
        match self {
            Dialect::Legacy => legacy::cancel(task).await,
            Dialect::Modern(_) => modern::cancel(task).await,
        }
    }

    /// [`TaskHandle::wait`]: the task driven to its end, its input requests answered.
    pub(crate) async fn wait(&self, task: &TaskHandle) -> Result<CallToolResult, ClientError> {
        match self {
            Dialect::Legacy => legacy::wait(task).await,
            Dialect::Modern(_) => modern::wait(task).await,
        }
    }
}
