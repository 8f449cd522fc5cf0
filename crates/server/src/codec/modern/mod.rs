//! The 2026-07-28 ("Modern") codec, with the tasks extension `io.modelcontextprotocol/tasks`.
//! There is no lifecycle: every request carries its revision and the client's capabilities
//! in `params._meta`, and is served on its own, from nothing an earlier request said.
//!
//! - this file: the checks every request passes first (`_meta`, revision), the method table,
//!   and what every result gets (`resultType`, `serverInfo` in `_meta`, cache hints);
//! - `tools`: `tools/list` (no `execution`) and `tools/call` (the server decides a task);
//! - `tasks`: `tasks/get` (a DetailedTask), `tasks/update`, `tasks/cancel` (acks);
//! - `link`: what the work of a plain call may send the client (progress, log messages);
//! - `listen`: `subscriptions/listen`, the stream of change notifications;
//! - `mrtr`: Multi Round-Trip Requests, the rounds of a request whose work asks the client;
//! - `wire`: the DetailedTask, the flat `CreateTaskResult`, `server/discover`;
//! - `http`: what a request over Streamable HTTP needs: an [`Exchange`] of its own (no
//!   session), its mirrored headers checked against its body;
//! - [`State`]: what the era keeps on the server (parked rounds, resource updates for
//!   listen streams).
//!
//! Methods of 2025-11-25 only (`initialize`, `ping`, `tasks/result`, `tasks/list`,
//! `logging/setLevel`, `resources/subscribe`…) are unknown here: `-32601`.

mod http;
mod link;
mod listen;
pub(crate) mod mrtr;
mod tasks;
mod tools;
mod wire;

use std::future::Future;
use std::sync::Arc;

use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::jsonrpc::{Request, RpcError};
use mcp_tasks_protocol::mcp::method;
use mcp_tasks_engine::Context;
use mcp_tasks_protocol::modern::{
    self, MISSING_CLIENT_CAPABILITY, RequestMeta, RetryParams, TASKS_EXTENSION, UNSUPPORTED_PROTOCOL_VERSION,
};
use serde_json::{Map, Value, json};

use super::parse_value;
use crate::catalog::{PromptGetParams, RESOURCE_NOT_FOUND, UriParams, prompt_getter, resource_reading};
use crate::connection::{Connection, Payload};
use crate::context::{ClientCaps, RequestContext};
use crate::request::{Reply, Work, request_work};

pub use http::{Exchange, Started};

/// The revisions served per request (2025-11-25 is served through `initialize` only, so it
/// is not listed: clients pick from this list for later requests).
pub(crate) const SUPPORTED_VERSIONS: &[&str] = &[modern::PROTOCOL_VERSION];

/// How long a client may cache a cacheable result (`ttlMs`): not at all, since the tools a
/// server serves can change while it runs.
const CACHE_TTL_MS: u64 = 0;

/// The `data` of a `-32602` for a missing or malformed request `_meta`; the HTTP transport
/// answers such an error with 400.
const META_PROBLEM: &str = "_meta";

/// Takes one request of the Modern era: answered at once if it fails [`check`], else its
/// work, for the caller to run.
pub(crate) fn request(conn: &Arc<Connection>, request: Request) -> Work {
    match check(&request) {
        Ok(meta) => Work::new(checked_work(conn, request, meta)),
        Err(error) => {
            conn.reject(Some(&request.id), &error);
            Work::none()
        }
    }
}

/// The work of serving one request of the Modern era that passed [`check`], which read its
/// `meta`, for the caller to run.
pub(crate) fn checked_work(conn: &Arc<Connection>, request: Request, meta: RequestMeta) -> impl Future<Output = ()> + Send + 'static {
    let client = ClientCaps {
        elicitation: meta.declares("elicitation"),
        sampling: meta.declares("sampling"),
        roots: meta.declares("roots"),
        tasks: meta.declares_extension(mcp_tasks_protocol::modern::TASKS_EXTENSION),
    };
    if let Some(info) = &meta.client_info {
        conn.set_client_info(&info.name, &info.version);
    }
    request_work(conn, request, Era::Modern, client, move |ctx, request| async move {
        let method = request.method.clone();
        // Boxed, as the 2025-11-25 codec's: the method table's future is ~4.4 KB, moved whole
        // with the request's a few times before it runs.
        Box::pin(route(&meta, &ctx, request)).await.map(|reply| finish(&ctx, &method, reply))
    })
}

/// Whether `request` is the probe a 2026-07-28 client sends first (`server/discover`), which
/// is of this era even without a per-request revision.
pub(crate) fn is_discovery(request: &Request) -> bool {
    request.method == modern::method::SERVER_DISCOVER
}

/// Whether `version` (an `MCP-Protocol-Version` header) names a revision of this era.
pub(crate) fn speaks(version: &[u8]) -> bool {
    SUPPORTED_VERSIONS.iter().any(|supported| supported.as_bytes() == version)
}

/// What the era keeps on the server, beside the codec that uses it.
pub(crate) struct State {
    /// Plain calls waiting for their client's retry (Multi Round-Trip Requests).
    pub(crate) parked: mrtr::Parked,
    /// Every updated resource URI, for the `subscriptions/listen` streams.
    updates: tokio::sync::broadcast::Sender<String>,
}

impl State {
    /// Rounds parked for `retry_wait` at most.
    pub(crate) fn new(retry_wait: std::time::Duration) -> State {
        State { parked: mrtr::Parked::with_limit(retry_wait), updates: tokio::sync::broadcast::Sender::new(64) }
    }

    /// Tells the listen streams that resource `uri` changed.
    pub(crate) fn resource_updated(&self, uri: &str) {
        let _ = self.updates.send(uri.to_owned());
    }

    /// Every later update, by URI (listen streams filter them).
    pub(crate) fn resource_updates(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.updates.subscribe()
    }
}

/// The checks before a request is served: its `_meta` (`-32602`) and its revision
/// (`-32022` with `data.supported` and `data.requested`).
///
/// # Errors
/// The JSON-RPC error to answer; see [`http_status`] for its HTTP status.
pub(crate) fn check(request: &Request) -> Result<RequestMeta, RpcError> {
    let meta = RequestMeta::read(request.params.as_ref()).map_err(|problem| {
        RpcError::invalid_params(format!("Invalid params for {}: {problem}", request.method))
            .with_data(json!({"invalid": META_PROBLEM}))
    })?;
    if !SUPPORTED_VERSIONS.contains(&meta.protocol_version.as_str()) {
        let requested = &meta.protocol_version;
        return Err(RpcError::new(
            UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "Unsupported protocol version {requested:?}: requests may name {}; a 2025-11-25 client \
                 starts with initialize",
                SUPPORTED_VERSIONS.join(", ")
            ),
        )
        .with_data(json!({"supported": SUPPORTED_VERSIONS, "requested": requested})));
    }
    Ok(meta)
}

/// The HTTP status of a Modern error answer: 400 for header, capability, version and
/// `_meta` problems, 404 for an unknown method, 200 for the rest (2026-07-28 transport).
pub(crate) fn http_status(error: &RpcError) -> u16 {
    match error.code {
        modern::HEADER_MISMATCH | MISSING_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION => 400,
        RpcError::METHOD_NOT_FOUND => 404,
        RpcError::INVALID_PARAMS if error.data.as_ref().and_then(|data| data.get("invalid")) == Some(&json!(META_PROBLEM)) => {
            400
        }
        _ => 200,
    }
}

/// `tasks/stream`'s names in this era (draft SEP-2694, written against 2026-07-28).
const STREAM_WIRE: crate::ops::stream::Wire = crate::ops::stream::Wire {
    notification: modern::method::NOTIFY_TASK_EVENT,
    related_meta: mcp_tasks_protocol::modern::TASK_EVENT_RELATED_META,
};

/// The method table.
async fn route(meta: &RequestMeta, ctx: &RequestContext, request: Request) -> Reply {
    let params = request.params;
    let name = request.method.as_str();
    let tasks = meta.declares_extension(TASKS_EXTENSION);
    if !tasks && let Some(revision) = meta.unknown_revision(TASKS_EXTENSION) {
        // SEP-3392 revision_06: served as to a client without the extension.
        tracing::debug!(%revision, method = name, "the client's tasks extension is of a revision this server does not know: left off");
    }
    if tasks
        && name == method::TASKS_GET
        && let Err(refused) = ctx.server().inner.polls.check(&ctx.principal, name, crate::codec::task_id_of(params.as_ref()))
    {
        return Some(Err(refused));
    }
    let reply = match name {
        modern::method::SERVER_DISCOVER => Ok(wire::discover(ctx.server())),
        modern::method::SUBSCRIPTIONS_LISTEN => Box::pin(listen::listen(meta, ctx, params)).await,
        method::TOOLS_LIST => tools::list(ctx, params),
        method::TOOLS_CALL => match parse_value(name, params) {
            Ok(params) => return tools::call(meta, ctx, params).await,
            Err(err) => Err(err),
        },
        method::TASKS_GET | modern::method::TASKS_UPDATE | method::TASKS_CANCEL if !tasks => Err(missing_extension(name)),
        method::TASKS_GET => return Some(async { tasks::get(ctx, parse_value(name, params)?).await }.await),
        modern::method::TASKS_UPDATE => Box::pin(async { tasks::update(ctx, parse_value(name, params)?).await }).await,
        method::TASKS_CANCEL => Box::pin(async { tasks::cancel(ctx, parse_value(name, params)?).await }).await,
        modern::method::TASKS_STREAM if !tasks => Err(missing_extension(name)),
        modern::method::TASKS_STREAM => Box::pin(crate::ops::stream::stream(ctx, params, &STREAM_WIRE)).await,
        // Shared methods without a lifecycle rule; `ping` and the 2025-11-25-only ones are
        // not in the catalog's table either, and fall through to -32601.
        method::PING => Err(unknown(name)),
        method::PROMPTS_GET if ctx.server().inner.catalog.has_prompts() && !ctx.server().inner.catalog.forwards(name) => {
            Box::pin(prompts_get(meta, ctx, params)).await
        }
        method::RESOURCES_READ if ctx.server().inner.catalog.has_resources() && !ctx.server().inner.catalog.forwards(name) => {
            Box::pin(resources_read(meta, ctx, params)).await
        }
        other => match Box::pin(crate::catalog::route(ctx.server(), other, params, Context::plain(ctx.cancel.clone(), None))).await {
            Some(reply) => reply.map_err(resource_not_found_is_invalid_params),
            None => Err(unknown(other)),
        },
    };
    Some(reply.map(Payload::from))
}

/// `prompts/get`: a prompt that asks the client answers in rounds of a Multi Round-Trip
/// Request, as a plain `tools/call` does.
async fn prompts_get(meta: &RequestMeta, ctx: &RequestContext, params: Option<Value>) -> Result<Value, RpcError> {
    let name = method::PROMPTS_GET;
    let retry: RetryParams = parse_value(name, params.clone())?;
    let params: PromptGetParams = parse_value(name, params)?;
    let what = format!("{name} {}", params.name);
    if let Some(state) = retry.request_state {
        return resume(ctx, &state, &what, retry.input_responses.unwrap_or_default()).await;
    }
    let get = prompt_getter(&ctx.server().inner.catalog, params)?;
    let ahead = retry.input_responses.unwrap_or_default();
    mrtr::run(meta, ctx, what, ahead, None, move |link, cancel| get(Context::plain(cancel, Some(link)))).await
}

/// `resources/read`: a resource that asks the client answers in rounds, as `prompts/get`.
async fn resources_read(meta: &RequestMeta, ctx: &RequestContext, params: Option<Value>) -> Result<Value, RpcError> {
    let name = method::RESOURCES_READ;
    let retry: RetryParams = parse_value(name, params.clone())?;
    let params: UriParams = parse_value(name, params)?;
    let what = format!("{name} {}", params.uri);
    if let Some(state) = retry.request_state {
        return resume(ctx, &state, &what, retry.input_responses.unwrap_or_default()).await;
    }
    let read = resource_reading(&ctx.server().inner.catalog, &params.uri).map_err(resource_not_found_is_invalid_params)?;
    let ahead = retry.input_responses.unwrap_or_default();
    mrtr::run(meta, ctx, what, ahead, None, move |link, cancel| read(Context::plain(cancel, Some(link)))).await
}

/// The retry of a round of `what` (a request other than `tools/call`, whose rounds are
/// always in-process work).
async fn resume(ctx: &RequestContext, state: &str, what: &str, answers: Map<String, Value>) -> Result<Value, RpcError> {
    let parked = &ctx.server().inner.codecs.modern.parked;
    match parked.take(state, &ctx.principal, what)? {
        mrtr::Round::Work(running) => mrtr::resume(ctx, running, answers).await,
        mrtr::Round::Task { .. } => Err(RpcError::internal(format!("a round of {what} names a task"))),
    }
}

/// What every result of this era gets: `resultType` (`complete` unless the result says),
/// the server's `Implementation` in `_meta`, and the cache hints the schema requires of
/// lists, reads and `server/discover`. A result written as text has them already
/// (`wire::create_task_result`, `wire::detailed_task_result`).
fn finish(ctx: &RequestContext, method_name: &str, reply: Result<Payload, RpcError>) -> Result<Payload, RpcError> {
    let mut result = match reply? {
        Payload::Text(text) => return Ok(Payload::Text(text)),
        Payload::Value(Value::Object(result)) => result,
        Payload::Value(other) => {
            let mut result = Map::new();
            result.insert("result".to_owned(), other);
            result
        }
    };
    result.entry("resultType").or_insert_with(|| json!("complete"));
    if cacheable(method_name) {
        result.entry("ttlMs").or_insert_with(|| json!(CACHE_TTL_MS));
        result.entry("cacheScope").or_insert_with(|| json!("private"));
    }
    let meta = result.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.extend(modern::server_info_meta(&ctx.server().inner.info));
    }
    Ok(Value::Object(result).into())
}

/// The methods whose results are `CacheableResult`s (2026-07-28 schema).
fn cacheable(method_name: &str) -> bool {
    matches!(
        method_name,
        modern::method::SERVER_DISCOVER
            | method::TOOLS_LIST
            | method::PROMPTS_LIST
            | method::RESOURCES_LIST
            | method::RESOURCES_TEMPLATES_LIST
            | method::RESOURCES_READ
    )
}

/// `-32601` for a method this era does not have.
fn unknown(name: &str) -> RpcError {
    RpcError::method_not_found(format!("Method not found: {name} (not a 2026-07-28 method)"))
}

/// `-32021`: the request needs the tasks extension, which this request's client
/// capabilities do not declare.
pub(crate) fn missing_extension(what: &str) -> RpcError {
    RpcError::new(
        MISSING_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: {what} needs the {TASKS_EXTENSION} extension; declare it in \
             _meta[\"io.modelcontextprotocol/clientCapabilities\"].extensions"
        ),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

/// 2026-07-28: a resource that is not found is `-32602` (with `data.uri`), not `-32002`.
fn resource_not_found_is_invalid_params(error: RpcError) -> RpcError {
    if error.code == RESOURCE_NOT_FOUND {
        RpcError { code: RpcError::INVALID_PARAMS, ..error }
    } else {
        error
    }
}
