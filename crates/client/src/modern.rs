//! The client's 2026-07-28 codec (with the tasks extension `io.modelcontextprotocol/tasks`):
//! the per-request `_meta` every request carries, `server/discover`, and the results read
//! back: `resultType` (`complete`, `input_required`, `task`), tools without `execution`, and
//! the protocol's `InputRequiredResult`, flat `CreateTaskResult` and `DetailedTask` of
//! `tasks/get`. Turned into and out of the era-neutral types of [`crate::types`], as `legacy`
//! does for 2025-11-25.
//!
//! Then the operations of a connection in this era ([`crate::dialect`] delegates to them):
//! `tools/call` in rounds (Multi Round-Trip Requests) where the server decides whether it
//! becomes a task, and a task driven by polling `tasks/get`, its questions answered with
//! `tasks/update`.

use std::borrow::Cow;
use std::sync::PoisonError;
use std::time::Duration;

use mcp_tasks_protocol::era::{Era, PROTOCOL_VERSION_META};
use mcp_tasks_protocol::mcp::{self, CallToolResult, IDEMPOTENCY_KEY_META, Implementation, RequestMeta, method};
use mcp_tasks_protocol::modern::{
    CLIENT_CAPABILITIES_META, CLIENT_INFO_META, CreateTaskResult, DetailedTask, InputRequests, InputRequiredResult,
    HEADER_MISMATCH, PROTOCOL_VERSION, TASKS_EXTENSION, Task,
};
use mcp_tasks_protocol::modern::method as modern_method;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::client::{Called, Client, arguments_map, from_value};
use crate::connection::{Handlers, Transport};
use crate::error::ClientError;
use crate::handlers::ServerRequest;
use crate::param_headers;
use crate::task::{DEFAULT_POLL, TaskHandle};
use crate::types::{Declared, ServerInfo, TaskInfo, TaskMode, TaskStatus, ToolInfo};

/// How many Multi Round-Trip rounds (`InputRequiredResult`) one call may take before the
/// client gives up on it.
const MAX_ROUNDS: usize = 16;
/// How long [`TaskHandle::cancel`] polls after the acknowledgement for the task to reach its
/// end.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// What a 2026-07-28 client says of itself on every request.
#[derive(Clone, Debug)]
pub(crate) struct Identity {
    /// The client capabilities of a request that wants no task (elicitation, sampling
    /// where a handler answers them).
    pub(crate) capabilities: Map<String, Value>,
    pub(crate) info: Implementation,
}

impl Identity {
    /// Adds the per-request `_meta` to `params` (an object, or null for none): the
    /// revision, the capabilities (with the tasks extension when `tasks`), the client info.
    /// Members already in `params._meta` (a progress token) stay.
    pub(crate) fn frame(&self, params: Value, tasks: bool) -> Value {
        let mut params = match params {
            Value::Object(params) => params,
            _ => Map::new(),
        };
        let mut capabilities = self.capabilities.clone();
        if tasks {
            capabilities.insert("extensions".into(), json!({ TASKS_EXTENSION: {} }));
        }
        let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(PROTOCOL_VERSION_META.into(), json!(PROTOCOL_VERSION));
            meta.insert(CLIENT_CAPABILITIES_META.into(), Value::Object(capabilities));
            meta.insert(CLIENT_INFO_META.into(), json!(self.info));
        }
        Value::Object(params)
    }
}

/// The `server/discover` result.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Discover {
    supported_versions: Vec<String>,
    #[serde(default)]
    capabilities: Map<String, Value>,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(rename = "_meta", default)]
    meta: Map<String, Value>,
}

/// What `server/discover` says, when the server serves 2026-07-28 per request; `None` when
/// it does not list that revision (then the client falls back to `initialize`).
pub(crate) fn server_info(answer: Value) -> Result<Option<ServerInfo>, ClientError> {
    let discover: Discover = from_value(answer, mcp_tasks_protocol::modern::method::SERVER_DISCOVER)?;
    if !discover.supported_versions.iter().any(|version| version == PROTOCOL_VERSION) {
        return Ok(None);
    }
    let implementation = discover
        .meta
        .get(mcp_tasks_protocol::modern::SERVER_INFO_META)
        .and_then(|info| serde_json::from_value::<Implementation>(info.clone()).ok())
        .unwrap_or_else(|| Implementation::new("unknown", "unknown"));
    let settings = discover.capabilities.get("extensions").and_then(|extensions| extensions.get(TASKS_EXTENSION));
    // SEP-3392 revision_06: tasks are not enabled against a revision this client does not
    // know; its calls are then made without the extension (answered inline).
    let tasks = match settings {
        Some(settings) if !mcp_tasks_protocol::modern::known_revision(TASKS_EXTENSION, settings) => {
            tracing::warn!(
                revision = %settings["revision"],
                "the server offers the tasks extension ({TASKS_EXTENSION}) in a revision this client does not know: \
                 tasks are not enabled for it, and calls are made without them (upgrade the client to use them)"
            );
            false
        }
        Some(_) => true,
        None => false,
    };
    Ok(Some(ServerInfo {
        implementation,
        instructions: discover.instructions,
        era: Era::Modern,
        runs_tool_tasks: tasks,
        lists_tasks: false,
        cancels_tasks: tasks,
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolsPage {
    tools: Vec<mcp::Tool>,
    #[serde(default)]
    next_cursor: Option<String>,
}

/// One page of `tools/list`. A 2026-07-28 tool declares no task mode (the server decides
/// whether a call becomes a task): it reads as `optional`, and serializes without
/// `execution`, as listed. Tools with invalid `x-mcp-header` annotations are left out.
pub(crate) fn tools_page(answer: Value) -> Result<(Vec<ToolInfo>, Option<String>), ClientError> {
    let page: ToolsPage = from_value(answer, mcp::method::TOOLS_LIST)?;
    let tools = page
        .tools
        .into_iter()
        // SEP-2243: a client on HTTP MUST drop a tool whose x-mcp-header annotations break
        // the rules (and SHOULD log it); one bad tool does not spoil the others.
        .filter(|tool| match crate::param_headers::annotations(&tool.input_schema) {
            Ok(_) => true,
            Err(reason) => {
                tracing::warn!(tool = %tool.name, %reason, "tool dropped: invalid x-mcp-header");
                false
            }
        })
        .map(|tool| {
            let mcp::Tool { name, title, description, input_schema, output_schema, annotations, meta } = tool;
            ToolInfo {
                name,
                title,
                description,
                input_schema,
                output_schema,
                annotations,
                meta,
                task_mode: TaskMode::Optional,
                declared: Declared::ServerDecides,
            }
        })
        .collect();
    Ok((tools, page.next_cursor))
}

/// A result of `tools/call`, `prompts/get` or `resources/read`, by its `resultType`.
pub(crate) enum Answer {
    /// The result itself (`complete`, or no `resultType`: read as complete).
    Complete(Value),
    /// A round of a Multi Round-Trip Request: the questions, and the state to echo.
    InputRequired { requests: InputRequests<'static>, state: Option<String> },
    /// The task the server made (the flat `CreateTaskResult`).
    Task(TaskInfo),
}

/// Reads a result by its `resultType`.
pub(crate) fn answer(answer: Value, method: &str) -> Result<Answer, ClientError> {
    match answer.get("resultType").and_then(Value::as_str) {
        None | Some("complete") => Ok(Answer::Complete(answer)),
        Some("input_required") => {
            let round: InputRequiredResult<'static> = from_value(answer, method)?;
            let requests = round.input_requests.unwrap_or_default();
            Ok(Answer::InputRequired { requests, state: round.request_state.map(Cow::into_owned) })
        }
        Some("task") => from_value::<CreateTaskResult<'static>>(answer, method).map(|created| Answer::Task(task_info(created.task))),
        Some(other) => Err(ClientError::Protocol(format!("{method} answered an unknown resultType {other:?}"))),
    }
}

/// The answers of the host's handlers to a round's `inputRequests`, by key: all of them, or
/// the error of the first that could not be answered (a round is retried whole).
///
/// # Errors
/// [`ClientError::InputUnanswered`] when a handler fails or none answers the method.
pub(crate) async fn answer_all(
    handlers: &Handlers,
    requests: &InputRequests<'_>,
    task: Option<&str>,
    request_token: Option<&str>,
) -> Result<Map<String, Value>, ClientError> {
    match answer_each(handlers, requests, task, request_token).await {
        (answers, None) => Ok(answers),
        (_, Some(failure)) => Err(failure),
    }
}

/// The answers of the host's handlers to a task's `inputRequests`, by key, each tried: the
/// ones answered (to send now: a task takes partial answers), and the error of the first
/// that could not be, if any. `request_token`: the progress token of the call that asked
/// ([`ServerRequest::request_token`]).
pub(crate) async fn answer_each(
    handlers: &Handlers,
    requests: &InputRequests<'_>,
    task: Option<&str>,
    request_token: Option<&str>,
) -> (Map<String, Value>, Option<ClientError>) {
    let mut answers = Map::new();
    let mut failure = None;
    for (key, request) in requests.iter() {
        let method = request.method.as_ref().to_owned();
        let params = request.params.as_ref().clone();
        let asked = ServerRequest {
            method: method.clone(),
            params,
            related_task: task.map(str::to_owned),
            request_token: request_token.map(str::to_owned),
        };
        match handlers.call(asked).await {
            Ok(answer) => {
                answers.insert(key.to_owned(), answer);
            }
            Err(error) => {
                failure.get_or_insert(ClientError::InputUnanswered { method, message: error.message });
            }
        }
    }
    (answers, failure)
}

/// A task as `tasks/get` gives it, and what its DetailedTask inlines.
pub(crate) struct Detailed {
    pub(crate) task: TaskInfo,
    /// `input_required`: the outstanding questions by key.
    pub(crate) input_requests: InputRequests<'static>,
    /// `completed`: the underlying result.
    pub(crate) result: Option<Value>,
    /// `failed`: the JSON-RPC error.
    pub(crate) error: Option<Value>,
}

/// The DetailedTask of a `tasks/get` answer.
pub(crate) fn detailed(answer: Value, method: &str) -> Result<Detailed, ClientError> {
    let detailed: DetailedTask<'static> = from_value(answer, method)?;
    Ok(Detailed {
        task: task_info(detailed.task),
        input_requests: detailed.input_requests.unwrap_or_default(),
        result: detailed.result.map(|result| result.0.into_owned()),
        error: detailed.error.map(Cow::into_owned),
    })
}

fn task_info(task: Task<'static>) -> TaskInfo {
    TaskInfo {
        id: task.task_id.into_owned(),
        status: task.status,
        status_message: task.status_message.map(Cow::into_owned),
        created_at: task.created_at.into_owned(),
        last_updated_at: task.last_updated_at.into_owned(),
        ttl_ms: task.ttl_ms,
        poll_interval_ms: task.poll_interval_ms,
    }
}

/// A plain `tools/call` (no tasks extension: the server answers it plainly) with `meta`, its
/// rounds answered by the handlers, to its result.
pub(crate) async fn call_tool(
    client: &Client,
    name: &str,
    arguments: Option<Map<String, Value>>,
    meta: RequestMeta,
) -> Result<CallToolResult, ClientError> {
    match rounds(client, name, call_params(name, arguments, meta, None), false).await? {
        Answer::Complete(result) => from_value(result, method::TOOLS_CALL),
        _ => Err(ClientError::Protocol(format!("tools/call of {name:?} made a task that was not asked for"))),
    }
}

/// [`Client::call`]: the server decides (the tasks extension is declared when the server
/// offers it).
pub(crate) async fn call(client: &Client, name: &str, arguments: Value, key: Option<&str>) -> Result<Called, ClientError> {
    call_deciding(client, name, arguments_map(arguments)?, key).await
}

/// [`Client::call_tool_as_task`]: a call the server answered inline is an error that
/// carries the result.
pub(crate) async fn call_as_task(client: &Client, name: &str, arguments: Value) -> Result<TaskHandle, ClientError> {
    if !client.server_runs_tool_tasks() {
        return Err(ClientError::TasksUnsupported {
            tool: name.to_owned(),
            reason: "the server does not offer the io.modelcontextprotocol/tasks extension".to_owned(),
        });
    }
    match call_deciding(client, name, arguments_map(arguments)?, None).await? {
        Called::Task(handle) => Ok(handle),
        Called::Result(result) => Err(ClientError::AnsweredInline { tool: name.to_owned(), result: Box::new(result) }),
    }
}

/// A `tools/call` whose server decides whether it becomes a task.
async fn call_deciding(
    client: &Client,
    name: &str,
    arguments: Option<Map<String, Value>>,
    key: Option<&str>,
) -> Result<Called, ClientError> {
    let params = call_params(name, arguments, client.progress_meta(), key);
    match rounds(client, name, params, client.server_runs_tool_tasks()).await? {
        Answer::Complete(result) => from_value(result, method::TOOLS_CALL).map(Called::Result),
        Answer::Task(task) => Ok(Called::Task(client.handle(task))),
        Answer::InputRequired { .. } => {
            Err(ClientError::Protocol(format!("tools/call of {name:?} ended its rounds asking for input")))
        }
    }
}

/// The first round's `params` of a `tools/call`: the name, `meta` (with the idempotency
/// `key`, if any), the arguments.
fn call_params(name: &str, arguments: Option<Map<String, Value>>, meta: RequestMeta, key: Option<&str>) -> Value {
    let mut params = json!({"name": name, "_meta": meta});
    if let Some(key) = key {
        params["_meta"][IDEMPOTENCY_KEY_META] = json!(key);
    }
    if let Some(arguments) = arguments {
        params["arguments"] = Value::Object(arguments);
    }
    params
}

/// `tools/call` from the first round's `params` (with the tasks extension when `tasks`),
/// its rounds answered by the handlers, to a result that is not `input_required`.
async fn rounds(client: &Client, name: &str, mut params: Value, tasks: bool) -> Result<Answer, ClientError> {
    let mut headers = call_headers(client, name, params.get("arguments").and_then(Value::as_object)).await;
    let mut relisted = false;
    for _ in 0..MAX_ROUNDS {
        let reply = match client.request_framed(method::TOOLS_CALL, params.clone(), tasks, &headers).await {
            Ok(reply) => reply,
            // SEP-2243: a header mismatch may mean the tool's x-mcp-header annotations
            // changed since the client listed them: list again and retry once.
            Err(error) if !relisted && header_mismatch(&error) => {
                relisted = true;
                tracing::debug!(tool = name, %error, "header mismatch: listing the tools again");
                client.list_tools().await?;
                headers = call_headers(client, name, params.get("arguments").and_then(Value::as_object)).await;
                continue;
            }
            Err(error) => return Err(error),
        };
        match answer(reply, method::TOOLS_CALL)? {
            Answer::InputRequired { requests, state } => {
                let token = crate::handlers::progress_token_of(&params);
                let responses = answer_all(&client.connection().handlers, &requests, None, token.as_deref()).await?;
                params["inputResponses"] = Value::Object(responses);
                match state {
                    Some(state) => params["requestState"] = json!(state),
                    None => {
                        params.as_object_mut().map(|params| params.remove("requestState"));
                    }
                }
            }
            done => return Ok(done),
        }
    }
    Err(ClientError::Protocol(format!("tools/call of {name:?} asked for input more than {MAX_ROUNDS} rounds")))
}

/// Over HTTP (SEP-2243): the `Mcp-Param-*` headers of a call, from the tool's
/// `x-mcp-header` annotations. The tool is looked up in the last `tools/list`, and listed
/// once more when it is not there; a tool the server does not list gets none (the server
/// answers the call as it sees fit).
async fn call_headers(client: &Client, name: &str, arguments: Option<&Map<String, Value>>) -> Vec<(String, String)> {
    let over_http = matches!(client.connection().transport, Transport::Http(_));
    if !over_http || arguments.is_none_or(Map::is_empty) {
        return Vec::new();
    }
    match client.tool(name).await {
        Ok(tool) => {
            let annotated = param_headers::annotations(&tool.input_schema).unwrap_or_default();
            param_headers::headers(&annotated, arguments)
        }
        Err(error) => {
            tracing::debug!(tool = name, %error, "no tool definition: no Mcp-Param headers");
            Vec::new()
        }
    }
}

/// Whether `error` is a `-32020` HeaderMismatch (over HTTP, a 400 with it).
fn header_mismatch(error: &ClientError) -> bool {
    match error {
        ClientError::Rpc { code, .. } => *code == HEADER_MISMATCH,
        ClientError::Http { status: 400, body } => {
            serde_json::from_str::<Value>(body).is_ok_and(|body| body["error"]["code"] == json!(HEADER_MISMATCH))
        }
        _ => false,
    }
}

/// [`TaskHandle::status`]: `tasks/get`.
pub(crate) async fn status(handle: &TaskHandle) -> Result<TaskInfo, ClientError> {
    fetch(handle).await.map(|detailed| detailed.task)
}

/// `tasks/get`: the task and what it inlines.
async fn fetch(handle: &TaskHandle) -> Result<Detailed, ClientError> {
    let answer = handle.polled(method::TASKS_GET, handle.params()).await?;
    let detailed = detailed(answer, method::TASKS_GET)?;
    handle.remember(&detailed.task);
    Ok(detailed)
}

/// [`TaskHandle::cancel`]: `tasks/cancel` is an acknowledgement; the task is then polled
/// until it ends, for at most [`CANCEL_WAIT`], and returned as it stands.
pub(crate) async fn cancel(handle: &TaskHandle) -> Result<TaskInfo, ClientError> {
    handle.request(method::TASKS_CANCEL, handle.params()).await?;
    let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
    loop {
        let task = handle.status().await?;
        if task.status.is_terminal() || tokio::time::Instant::now() >= deadline {
            return Ok(task);
        }
        handle.pause(&task).await?;
    }
}

/// [`TaskHandle::wait`]: polls `tasks/get` at `pollIntervalMs` (sooner on a
/// `notifications/tasks` about the task); the questions of an `input_required` task go to
/// the handlers, each key once, and their answers to `tasks/update`; the result (or error)
/// comes inlined in the terminal task.
pub(crate) async fn wait(handle: &TaskHandle) -> Result<CallToolResult, ClientError> {
    // Told of the task's changes where the server offers it; polled all the same (a
    // notification only shortens the pause), so a stream that drops loses nothing.
    let mut changes = handle.connection.notifications.subscribe();
    let _listening = handle.dialect.listen(&handle.connection, json!({"taskIds": [handle.id]}), true);
    loop {
        let detailed = fetch(handle).await?;
        match detailed.task.status {
            TaskStatus::Completed => {
                let result = detailed.result.unwrap_or_else(|| json!({"content": []}));
                return from_value(result, method::TASKS_GET);
            }
            TaskStatus::Failed => return Err(failed(handle, detailed)),
            TaskStatus::Cancelled => {
                return Err(ClientError::TaskCancelled { task_id: handle.id.clone(), message: detailed.task.status_message });
            }
            TaskStatus::InputRequired => {
                if answer_new(handle, &detailed.input_requests).await? {
                    continue;
                }
            }
            TaskStatus::Working => {}
        }
        pause_or_change(handle, &detailed.task, &mut changes).await?;
    }
}

/// The error a `failed` task inlines, as [`ClientError::TaskFailed`].
fn failed(handle: &TaskHandle, detailed: Detailed) -> ClientError {
    let error = detailed.error.unwrap_or_else(|| json!({}));
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
    let message = error.get("message").and_then(Value::as_str).map_or_else(
        || detailed.task.status_message.clone().unwrap_or_else(|| "the task failed".to_owned()),
        str::to_owned,
    );
    ClientError::TaskFailed { task_id: handle.id.clone(), code, message, data: error.get("data").cloned() }
}

/// [`TaskHandle::pause`], ended early by a `notifications/tasks` about this task.
async fn pause_or_change(
    handle: &TaskHandle,
    task: &TaskInfo,
    changes: &mut tokio::sync::broadcast::Receiver<crate::ServerNotification>,
) -> Result<(), ClientError> {
    let pause = tokio::time::sleep(task.poll_interval_ms.map_or(DEFAULT_POLL, Duration::from_millis));
    tokio::pin!(pause);
    loop {
        tokio::select! {
            () = &mut pause => return Ok(()),
            () = handle.connection.stop.cancelled() => return Err(ClientError::Closed),
            change = changes.recv() => match change {
                Ok(note) if note.method == modern_method::NOTIFY_TASKS && note.params["taskId"] == handle.id.as_str() => {
                    return Ok(());
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
            },
        }
    }
}

/// Answers the questions of `requests` not answered yet, in one `tasks/update`; `true` if
/// it sent one.
async fn answer_new(handle: &TaskHandle, requests: &InputRequests<'_>) -> Result<bool, ClientError> {
    if let Some(memory) = &handle.memory
        && !memory.2.swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        match memory.0.answered(&memory.1, &handle.id).await {
            Ok(keys) => handle.answered.lock().unwrap_or_else(PoisonError::into_inner).extend(keys),
            Err(err) => tracing::warn!(task = %handle.id, error = %err, "cannot read the answered input requests"),
        }
    }
    let fresh: InputRequests<'_> = {
        let answered = handle.answered.lock().unwrap_or_else(PoisonError::into_inner);
        requests.iter().filter(|(key, _)| !answered.contains(*key)).map(|(key, request)| (Cow::Borrowed(key), request.clone())).collect()
    };
    if fresh.is_empty() {
        return Ok(false);
    }
    // The questions answered go at once, even when another could not be: a task takes
    // partial answers, and the one left open can be answered by a later run.
    let (answers, failure) = answer_each(&handle.connection.handlers, &fresh, Some(&handle.id), None).await;
    if answers.is_empty() {
        return Err(failure.unwrap_or_else(|| ClientError::Protocol("no input request to answer".into())));
    }
    handle.request(modern_method::TASKS_UPDATE, json!({"taskId": handle.id, "inputResponses": answers})).await?;
    handle.answered.lock().unwrap_or_else(PoisonError::into_inner).extend(answers.keys().cloned());
    if let Some(memory) = &handle.memory {
        for key in answers.keys() {
            if let Err(err) = memory.0.note_answered(&memory.1, &handle.id, key).await {
                tracing::warn!(task = %handle.id, error = %err, "cannot note an answered input request");
            }
        }
    }
    match failure {
        Some(failure) => Err(failure),
        None => Ok(true),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_meta_is_added_and_a_progress_token_kept() {
        let identity = Identity { capabilities: Map::from_iter([("elicitation".to_owned(), json!({}))]), info: Implementation::new("c", "1") };
        let framed = identity.frame(json!({"name": "x", "_meta": {"progressToken": "p"}}), true);
        let meta = &framed["_meta"];
        assert_eq!(meta["progressToken"], "p");
        assert_eq!(meta[PROTOCOL_VERSION_META], "2026-07-28");
        assert_eq!(meta[CLIENT_CAPABILITIES_META], json!({"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}));
        assert_eq!(identity.frame(Value::Null, false)["_meta"][CLIENT_CAPABILITIES_META], json!({"elicitation": {}}));
    }

    #[test]
    fn results_are_read_by_their_result_type() {
        assert!(matches!(answer(json!({"content": []}), "tools/call").unwrap(), Answer::Complete(_)));
        let round = answer(json!({"resultType": "input_required", "inputRequests": {"k": {}}, "requestState": "s"}), "x").unwrap();
        assert!(matches!(round, Answer::InputRequired { state: Some(ref s), .. } if s == "s"));
        let task = json!({"resultType": "task", "taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": 5});
        assert!(matches!(answer(task, "x").unwrap(), Answer::Task(ref t) if t.id == "t" && t.ttl_ms == Some(5)));
        assert!(answer(json!({"resultType": "mystery"}), "x").is_err());
    }
}
