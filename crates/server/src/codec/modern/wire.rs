//! The 2026-07-28 shapes of era-neutral facts: a task record as a `DetailedTask` (its
//! result, error or input requests inlined) and as the flat `CreateTaskResult` (the types of
//! `mcp_tasks_protocol::modern`, built from borrowed parts of the record), a tool as the base
//! `Tool` (no `execution`), and the `server/discover` result.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use mcp_tasks_engine::{InputRequests as EngineInputRequests, Outcome, Status, TaskRecord, TaskState, Timestamp};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::{self, Implementation, TaskStatus};
use mcp_tasks_protocol::modern::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputRequest, InputRequests, InputRequiredResult, ResultMeta, TASKS_EXTENSION, Task,
    UnderlyingResult,
};
use serde_json::{Value, json};

use super::SUPPORTED_VERSIONS;
use crate::codec::Rfc3339;
use crate::connection::Payload;
use crate::errors;
use crate::registry::ToolSpec;
use crate::server::Server;
use crate::tool::input_method;

/// The tasks extension's `Task` members of a record, borrowed from it; `stamps` holds its
/// two times as written ([`Stamps`]).
fn task<'a>(record: &'a TaskRecord, stamps: &'a Stamps) -> Task<'a> {
    Task {
        task_id: Cow::Borrowed(record.id.as_str()),
        status: status(record.status()),
        status_message: record.status_message.as_deref().map(Cow::Borrowed),
        created_at: stamps.created.text(),
        last_updated_at: stamps.updated.text(),
        ttl_ms: record.ttl_ms,
        poll_interval_ms: record.poll_interval_ms,
    }
}

/// The wire status of an engine status (the same five, by name).
fn status(status: Status) -> TaskStatus {
    match status {
        Status::Working => TaskStatus::Working,
        Status::InputRequired => TaskStatus::InputRequired,
        Status::Completed => TaskStatus::Completed,
        Status::Failed => TaskStatus::Failed,
        Status::Cancelled => TaskStatus::Cancelled,
    }
}

/// A record's creation and change times in RFC 3339, written on the stack: the wire shapes
/// borrow them, and no `String` is made for either.
struct Stamps {
    created: Stamp,
    updated: Stamp,
}

impl Stamps {
    fn of(record: &TaskRecord) -> Stamps {
        Stamps { created: Stamp::new(record.created_at), updated: Stamp::new(record.updated_at) }
    }
}

/// One time in RFC 3339 (`2025-11-25T10:30:00.123Z`, 24 bytes), in a buffer of its own; a
/// longer one (not before the year 10000) in a `String`.
enum Stamp {
    Short([u8; 32], usize),
    Long(String),
}

impl Stamp {
    fn new(at: Timestamp) -> Stamp {
        let mut stamp = Stamp::Short([0; 32], 0);
        if write!(stamp, "{}", Rfc3339(at)).is_err() {
            stamp = Stamp::Long(Rfc3339(at).to_string());
        }
        stamp
    }

    fn text(&self) -> Cow<'_, str> {
        match self {
            Stamp::Short(bytes, len) => Cow::Borrowed(std::str::from_utf8(&bytes[..*len]).unwrap_or_default()),
            Stamp::Long(text) => Cow::Borrowed(text),
        }
    }
}

impl fmt::Write for Stamp {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let Stamp::Short(bytes, len) = self else { return Err(fmt::Error) };
        let end = *len + text.len();
        bytes.get_mut(*len..end).ok_or(fmt::Error)?.copy_from_slice(text.as_bytes());
        *len = end;
        Ok(())
    }
}

/// The flat `CreateTaskResult` of a record as a result of this era: `resultType: "task"`,
/// the task's members, nothing inlined, and the server's `Implementation` in `_meta`.
/// Written from the record, without a `Value` in between.
pub(crate) fn create_task_result(record: &TaskRecord, server: &Implementation) -> Result<Payload, RpcError> {
    let stamps = Stamps::of(record);
    Payload::text(&CreateTaskResult::new(task(record, &stamps), Some(ResultMeta::server(server))))
}

/// The `DetailedTask` of a record: `inputRequests` while `input_required` (each a bare
/// `{method, params}`), the underlying `result` once `completed` (with its own
/// `resultType: "complete"`, no related-task `_meta`), the JSON-RPC `error` once `failed`;
/// borrowed from the record but for the error.
fn detailed<'a>(record: &'a TaskRecord, stamps: &'a Stamps) -> DetailedTask<'a> {
    let mut detailed = DetailedTask::new(task(record, stamps));
    match &record.state {
        TaskState::InputRequired { requests } => detailed.input_requests = Some(input_requests(requests)),
        TaskState::Completed { result } => detailed.result = Some(UnderlyingResult(Cow::Borrowed(result))),
        TaskState::Failed { outcome } => detailed.error = Some(Cow::Owned(failure(record, outcome))),
        TaskState::Working | TaskState::Cancelled => {}
    }
    detailed
}

/// The `DetailedTask` of a record as the result of `tasks/get` (`resultType: "complete"`,
/// the server's `Implementation` in `_meta`), written from the record.
pub(crate) fn detailed_task_result(record: &TaskRecord, server: &Implementation) -> Result<Payload, RpcError> {
    let stamps = Stamps::of(record);
    Payload::text(&GetTaskResult::new(detailed(record, &stamps), Some(ResultMeta::server(server))))
}

/// The `DetailedTask` of a record as the params of `notifications/tasks` (no `resultType`,
/// no `_meta`).
pub(crate) fn detailed_task(record: &TaskRecord) -> Value {
    let stamps = Stamps::of(record);
    // A map with string keys always serializes.
    serde_json::to_value(detailed(record, &stamps)).unwrap_or(Value::Null)
}

/// The `inputRequests` of a task's outstanding questions, each a bare `{method, params}`,
/// borrowed from them.
pub(crate) fn input_requests(requests: &EngineInputRequests) -> InputRequests<'_> {
    requests
        .iter()
        .map(|(key, input)| {
            let request = InputRequest { method: Cow::Borrowed(input_method(input.kind)), params: Cow::Borrowed(&input.params) };
            (Cow::Borrowed(key.as_str()), request)
        })
        .collect()
}

/// An `InputRequiredResult` round: the questions, and the `requestState` the retry echoes.
pub(crate) fn input_required(requests: InputRequests<'_>, state: String) -> Value {
    // A map with string keys always serializes.
    serde_json::to_value(InputRequiredResult::new(requests, state)).unwrap_or(Value::Null)
}

/// The `error` of a failed task. A task that a 2025-11-25 client created and whose tool
/// reported an error (`isError`) is `failed` there; this era has no failed result, so it
/// reads as an internal error carrying the status message.
fn failure(record: &TaskRecord, outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Error(error) => serde_json::to_value(error).unwrap_or(Value::Null),
        Outcome::Failure(failure) => {
            let error = errors::work_error(failure);
            json!({"code": error.code, "message": error.message})
        }
        Outcome::Result(_) => json!({
            "code": mcp_tasks_protocol::jsonrpc::RpcError::INTERNAL_ERROR,
            "message": record.status_message.clone().unwrap_or_else(|| "The tool reported an error".to_owned()),
        }),
    }
}

/// The 2026-07-28 `Tool` of a spec: the shared shape, no `execution` (the server decides).
pub(crate) fn tool(spec: &ToolSpec) -> mcp::Tool {
    let mut tool = mcp::Tool::new(spec.name.clone(), spec.input_schema.clone());
    tool.title.clone_from(&spec.title);
    tool.description.clone_from(&spec.description);
    tool.output_schema.clone_from(&spec.output_schema);
    tool.annotations.clone_from(&spec.annotations);
    tool
}

/// `server/discover`: the revisions served per request, the capabilities (the tasks
/// extension under `extensions`), the instructions; `serverInfo` and the cache hints are
/// added to every result by the codec.
pub(crate) fn discover(server: &Server) -> Value {
    let catalog = &server.inner.catalog;
    let mut capabilities = json!({
        "tools": {"listChanged": true},
        "completions": {},
        "extensions": {TASKS_EXTENSION: {}},
    });
    if catalog.has_prompts() {
        capabilities["prompts"] = json!({"listChanged": catalog.lists_change()});
    }
    if catalog.has_resources() {
        capabilities["resources"] = json!({"listChanged": catalog.lists_change(), "subscribe": true});
    }
    let mut result = json!({
        "supportedVersions": SUPPORTED_VERSIONS,
        "capabilities": capabilities,
        "cacheScope": "public",
    });
    if let Some(instructions) = &server.inner.instructions {
        result["instructions"] = json!(instructions);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::test_record as record;
    use mcp_tasks_engine::{ErrorObject, InputKind, InputRequest};

    fn parsed(payload: Result<Payload, RpcError>) -> Value {
        match payload.expect("written") {
            Payload::Text(text) => serde_json::from_str(&text).expect("JSON"),
            Payload::Value(value) => panic!("a lifecycle's result is written as text, not built: {value}"),
        }
    }

    /// Items 6, 18, 19, 21, 22, 23 and 24 of the tasks extension's checklist, on the results
    /// written straight from a record: `CreateTaskResult` is the flat task with `resultType:
    /// "task"`; the `DetailedTask` of `tasks/get` has `resultType: "complete"` and the status's
    /// payload (`inputRequests`, the inlined `result` with its own `resultType`, the `error`);
    /// both carry `serverInfo` in `_meta`; `ttlMs` is `null` when unlimited; a
    /// `notifications/tasks` carries the same task without the result's members.
    #[test]
    fn modern_tasks_6_18_24_results_written_from_the_record_are_the_task_its_payload_and_server_info() {
        let server = Implementation { name: "srv".into(), version: "1.2".into(), ..Default::default() };
        let info = json!({"io.modelcontextprotocol/serverInfo": {"name": "srv", "version": "1.2"}});
        let task = |status: &str| {
            json!({"taskId": "abc", "status": status, "createdAt": "2025-11-25T10:30:00.000Z",
                   "lastUpdatedAt": "2025-11-25T10:30:00.500Z", "ttlMs": 60_000, "pollIntervalMs": 1000})
        };
        let with = |mut base: Value, members: Value| {
            for (key, value) in members.as_object().expect("object") {
                base[key] = value.clone();
            }
            base
        };

        let mut working = record(TaskState::Working);
        assert_eq!(parsed(create_task_result(&working, &server)), with(task("working"), json!({"resultType": "task", "_meta": info})));
        (working.ttl_ms, working.poll_interval_ms, working.status_message) = (None, None, Some("half way \"there\"".into()));
        let mut unlimited = task("working");
        unlimited["ttlMs"] = Value::Null;
        unlimited.as_object_mut().expect("object").remove("pollIntervalMs");
        unlimited["statusMessage"] = json!("half way \"there\"");
        assert_eq!(parsed(detailed_task_result(&working, &server)), with(unlimited.clone(), json!({"resultType": "complete", "_meta": info})));
        assert_eq!(detailed_task(&working), unlimited);

        let mut requests = EngineInputRequests::new();
        requests.insert("name".into(), InputRequest { kind: InputKind::Elicitation, params: json!({"message": "who?"}) });
        let asking = record(TaskState::InputRequired { requests });
        let expected = with(task("input_required"), json!({"inputRequests": {"name": {"method": "elicitation/create", "params": {"message": "who?"}}}}));
        assert_eq!(parsed(detailed_task_result(&asking, &server)), with(expected.clone(), json!({"resultType": "complete", "_meta": info})));
        assert_eq!(detailed_task(&asking), expected);

        for (result, inlined) in [
            (json!({"content": [{"type": "text", "text": "ok"}]}), json!({"content": [{"type": "text", "text": "ok"}], "resultType": "complete"})),
            (json!({"content": [], "resultType": "complete", "isError": true}), json!({"content": [], "resultType": "complete", "isError": true})),
            (json!("bare"), json!({"result": "bare", "resultType": "complete"})),
        ] {
            let done = record(TaskState::Completed { result });
            let expected = with(task("completed"), json!({"result": inlined}));
            assert_eq!(parsed(detailed_task_result(&done, &server)), with(expected.clone(), json!({"resultType": "complete", "_meta": info})));
            assert_eq!(detailed_task(&done), expected);
        }

        let error = ErrorObject { code: -32001, message: "boom".into(), data: Some(json!({"k": 2})) };
        let failed = record(TaskState::Failed { outcome: Outcome::Error(error) });
        let expected = with(task("failed"), json!({"error": {"code": -32001, "message": "boom", "data": {"k": 2}}}));
        assert_eq!(parsed(detailed_task_result(&failed, &server)), with(expected, json!({"resultType": "complete", "_meta": info})));

        let cancelled = record(TaskState::Cancelled);
        assert_eq!(parsed(detailed_task_result(&cancelled, &server)), with(task("cancelled"), json!({"resultType": "complete", "_meta": info})));
    }
}
