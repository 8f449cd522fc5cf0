//! `subscriptions/listen` (2026-07-28): a request that stays open, whose stream carries the
//! change notifications the client asked for, each tagged with the request's id in
//! `_meta["io.modelcontextprotocol/subscriptionId"]`. It opens with
//! `notifications/subscriptions/acknowledged`, naming what the server agreed to:
//!
//! - `toolsListChanged`: `notifications/tools/list_changed` when the tool set changes;
//! - `resourceSubscriptions`: `notifications/resources/updated` for the URIs the server
//!   serves (or a resource under one of them);
//! - `taskIds` (tasks extension; `-32021` without it): `notifications/tasks` with the
//!   `DetailedTask` on every change of those of the requestor's tasks (another principal's,
//!   or an unknown id, is left out of the agreement, alike), and once at the start, so that
//!   a task that already ended is not waited for in vain.
//!
//! - `resourcesListChanged`, `promptsListChanged`: their `list_changed` when the list
//!   changes; agreed to only where the lists can change (an upstream serves them: the proxy),
//!   and the server offers resources or prompts.
//!
//! The stream ends when the client cancels it (HTTP: closes it); progress and log
//! messages never go on it.

use std::collections::BTreeSet;

use mcp_tasks_engine::{Change, TaskId, TaskRecord, Watched};
use mcp_tasks_protocol::jsonrpc::{self, RpcError};
use mcp_tasks_protocol::mcp::method;
use mcp_tasks_protocol::modern::{
    ListenParams, RequestMeta, SUBSCRIPTION_ID_META, SubscriptionFilter, TASKS_EXTENSION, method as modern_method,
};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::{missing_extension, wire};
use crate::codec::parse_value;
use crate::connection::Route;
use crate::context::RequestContext;
use crate::ops;

/// Serves a listen request until it is cancelled.
pub(crate) async fn listen(meta: &RequestMeta, ctx: &RequestContext, params: Option<Value>) -> Result<Value, RpcError> {
    let ListenParams { notifications: wanted } = parse_value(modern_method::SUBSCRIPTIONS_LISTEN, params)?;
    if wanted.task_ids.is_some() && !meta.declares_extension(TASKS_EXTENSION) {
        return Err(missing_extension("subscriptions/listen with notifications.taskIds"));
    }
    // Subscribed before the acknowledgement: nothing that changes after it is missed.
    let server = ctx.server();
    let mut tools = server.tools().watch();
    tools.mark_unchanged();
    let mut updates = server.inner.codecs.modern.resource_updates();
    let lists = &server.inner.list_changes;
    let (mut resources, mut prompts) = (lists.resources.subscribe(), lists.prompts.subscribe());
    resources.mark_unchanged();
    prompts.mark_unchanged();
    let agreed = agree(ctx, &wanted).await;
    let uris: Vec<String> = agreed.resource_subscriptions.clone().unwrap_or_default();
    let tasks: BTreeSet<String> = agreed.task_ids.iter().flatten().cloned().collect();
    // Watched before the tasks are read as they stand (below): no later change is missed.
    let changes = server.engine().watch_tasks();
    for id in &tasks {
        changes.add(&TaskId::from(id.clone()));
    }
    let stream = Stream { ctx, tag: json!(ctx.id) };
    stream.send(modern_method::NOTIFY_SUBSCRIPTIONS_ACKNOWLEDGED, json!({"notifications": agreed}));
    stream.tasks_as_they_stand(&tasks).await;
    let tools_wanted = agreed.tools_list_changed == Some(true);
    let resources_wanted = agreed.resources_list_changed == Some(true);
    let prompts_wanted = agreed.prompts_list_changed == Some(true);
    loop {
        tokio::select! {
            () = ctx.cancel.cancelled() => return Err(RpcError::internal("the subscription was cancelled")),
            changed = tools.changed(), if tools_wanted => match changed {
                Ok(()) => stream.send(method::NOTIFY_TOOLS_LIST_CHANGED, json!({})),
                Err(_) => return Ok(ended(ctx)),
            },
            // The senders live as long as the server: never an error.
            Ok(()) = resources.changed(), if resources_wanted => stream.send(method::NOTIFY_RESOURCES_LIST_CHANGED, json!({})),
            Ok(()) = prompts.changed(), if prompts_wanted => stream.send(method::NOTIFY_PROMPTS_LIST_CHANGED, json!({})),
            updated = updates.recv(), if !uris.is_empty() => match updated {
                Ok(uri) if uris.iter().any(|subscribed| under(&uri, subscribed)) => {
                    stream.send(method::NOTIFY_RESOURCE_UPDATED, json!({"uri": uri}));
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return Ok(ended(ctx)),
            },
            change = changes.recv(), if !tasks.is_empty() => match change {
                Watched::Change(Change::Task(record)) => stream.task(&record),
                Watched::Change(Change::Progress { .. }) => {}
                // Behind the feed: what the tasks are now says what was missed.
                Watched::Lagged => stream.tasks_as_they_stand(&tasks).await,
            },
        }
    }
}

/// The result that ends the stream (the server stops serving it).
fn ended(ctx: &RequestContext) -> Value {
    json!({"_meta": {SUBSCRIPTION_ID_META: ctx.id}})
}

/// What the server honours of `wanted`: see the module comment.
async fn agree(ctx: &RequestContext, wanted: &SubscriptionFilter) -> SubscriptionFilter {
    let catalog = &ctx.server().inner.catalog;
    let uris: Vec<String> = wanted
        .resource_subscriptions
        .iter()
        .flatten()
        .filter(|uri| catalog.has_resources() && catalog.serves(uri))
        .cloned()
        .collect();
    if let Some(upstream) = &catalog.upstream {
        for uri in &uris {
            if let Err(error) = upstream.subscribe(uri).await {
                tracing::warn!(%uri, message = %error.message, "could not subscribe to the resource upstream");
            }
        }
    }
    let mut tasks = Vec::new();
    for id in wanted.task_ids.iter().flatten() {
        if ops::tasks::get(ctx, &TaskId::from(id.clone())).await.is_ok() {
            tasks.push(id.clone());
        }
    }
    SubscriptionFilter {
        tools_list_changed: (wanted.tools_list_changed == Some(true)).then_some(true),
        prompts_list_changed: (wanted.prompts_list_changed == Some(true) && catalog.lists_change() && catalog.has_prompts())
            .then_some(true),
        resources_list_changed: (wanted.resources_list_changed == Some(true) && catalog.lists_change() && catalog.has_resources())
            .then_some(true),
        resource_subscriptions: (!uris.is_empty()).then_some(uris),
        task_ids: wanted.task_ids.as_ref().map(|_| tasks),
    }
}

/// Whether an update of `uri` concerns a subscription to `subscribed` (the resource itself
/// or one under it).
fn under(uri: &str, subscribed: &str) -> bool {
    uri == subscribed || uri.strip_prefix(subscribed).is_some_and(|rest| subscribed.ends_with('/') || rest.starts_with('/'))
}

/// The listen request's stream.
struct Stream<'a> {
    ctx: &'a RequestContext,
    /// The subscription id: the request's id, as it came.
    tag: Value,
}

impl Stream<'_> {
    /// Sends notification `name` with `params`, tagged.
    fn send(&self, name: &str, mut params: Value) {
        params["_meta"] = json!({SUBSCRIPTION_ID_META: self.tag});
        self.ctx.conn.send(jsonrpc::notification(name, params), Route::Related(self.ctx.id.clone()));
    }

    /// `notifications/tasks` for `record`.
    fn task(&self, record: &TaskRecord) {
        self.send(modern_method::NOTIFY_TASKS, wire::detailed_task(record));
    }

    /// `notifications/tasks` for each of `ids` as it stands.
    async fn tasks_as_they_stand(&self, ids: &BTreeSet<String>) {
        for id in ids {
            if let Ok(record) = ops::tasks::get(self.ctx, &TaskId::from(id.clone())).await {
                self.task(&record);
            }
        }
    }
}
