//! The 2026-07-28 shapes of era-neutral facts: a task record as a `DetailedTask` (its
//! result, error or input requests inlined) and as the flat `CreateTaskResult`, a tool as
//! the base `Tool` (no `execution`), and the `server/discover` result.

use mcp_tasks_engine::{InputRequests, Outcome, TaskRecord, TaskState};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::{self, Implementation};
use mcp_tasks_protocol::modern::{SERVER_INFO_META, TASKS_EXTENSION};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

use super::SUPPORTED_VERSIONS;
use crate::codec::Rfc3339;
use crate::connection::Payload;
use crate::errors;
use crate::registry::ToolSpec;
use crate::server::Server;
use crate::tool::input_method;

/// The `Task` members of a record: `taskId`, `status`, `statusMessage`, `createdAt`,
/// `lastUpdatedAt`, `ttlMs` (always present, `null` for unlimited) and `pollIntervalMs`.
fn task<M: SerializeMap>(map: &mut M, record: &TaskRecord) -> Result<(), M::Error> {
    map.serialize_entry("taskId", record.id.as_str())?;
    map.serialize_entry("status", record.status().as_str())?;
    if let Some(message) = &record.status_message {
        map.serialize_entry("statusMessage", message)?;
    }
    map.serialize_entry("createdAt", &Rfc3339(record.created_at))?;
    map.serialize_entry("lastUpdatedAt", &Rfc3339(record.updated_at))?;
    map.serialize_entry("ttlMs", &record.ttl_ms)?;
    if let Some(poll) = record.poll_interval_ms {
        map.serialize_entry("pollIntervalMs", &poll)?;
    }
    Ok(())
}

/// The result `_meta` of this era: the server's `Implementation` under
/// [`SERVER_INFO_META`], as the codec's `finish` adds it to every other result.
struct ServerInfo<'a>(&'a Implementation);

impl Serialize for ServerInfo<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut meta = serializer.serialize_map(None)?;
        meta.serialize_entry(SERVER_INFO_META, self.0)?;
        meta.end()
    }
}

/// The flat `CreateTaskResult` of a record as a result of this era: `resultType: "task"`,
/// the task's members, nothing inlined, and the server's `Implementation` in `_meta`.
/// Written from the record, without a `Value` in between.
pub(crate) fn create_task_result(record: &TaskRecord, server: &Implementation) -> Result<Payload, RpcError> {
    /// See [`create_task_result`].
    struct Created<'a>(&'a TaskRecord, &'a Implementation);
    impl Serialize for Created<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(None)?;
            task(&mut map, self.0)?;
            map.serialize_entry("resultType", "task")?;
            map.serialize_entry("_meta", &ServerInfo(self.1))?;
            map.end()
        }
    }
    Payload::text(&Created(record, server))
}

/// The `DetailedTask` of a record: `inputRequests` while `input_required` (each a bare
/// `{method, params}`), the underlying `result` once `completed` (with its own
/// `resultType: "complete"`, no related-task `_meta`), the JSON-RPC `error` once `failed`.
/// As the result of `tasks/get` (`server` given), also `resultType: "complete"` and the
/// server's `Implementation` in `_meta`; as the params of `notifications/tasks`, neither.
struct DetailedTask<'a> {
    record: &'a TaskRecord,
    server: Option<&'a Implementation>,
}

impl Serialize for DetailedTask<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let record = self.record;
        let mut map = serializer.serialize_map(None)?;
        task(&mut map, record)?;
        match &record.state {
            TaskState::InputRequired { requests } => map.serialize_entry("inputRequests", &input_requests(requests))?,
            TaskState::Completed { result } => map.serialize_entry("result", &Complete(result))?,
            TaskState::Failed { outcome } => map.serialize_entry("error", &failure(record, outcome))?,
            TaskState::Working | TaskState::Cancelled => {}
        }
        if let Some(server) = self.server {
            map.serialize_entry("resultType", "complete")?;
            map.serialize_entry("_meta", &ServerInfo(server))?;
        }
        map.end()
    }
}

/// A task's underlying result as a `DetailedTask` inlines it: the result object with
/// `resultType: "complete"` unless it has one (a result that is not an object goes under
/// `result`), borrowed from the record.
struct Complete<'a>(&'a Value);

impl Serialize for Complete<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self.0 {
            Value::Object(result) => {
                for (key, value) in result {
                    map.serialize_entry(key, value)?;
                }
                if !result.contains_key("resultType") {
                    map.serialize_entry("resultType", "complete")?;
                }
            }
            other => {
                map.serialize_entry("result", other)?;
                map.serialize_entry("resultType", "complete")?;
            }
        }
        map.end()
    }
}

/// The `DetailedTask` of a record as the result of `tasks/get`, written from the record.
pub(crate) fn detailed_task_result(record: &TaskRecord, server: &Implementation) -> Result<Payload, RpcError> {
    Payload::text(&DetailedTask { record, server: Some(server) })
}

/// The `DetailedTask` of a record as the params of `notifications/tasks`.
pub(crate) fn detailed_task(record: &TaskRecord) -> Value {
    // A map with string keys always serializes.
    serde_json::to_value(DetailedTask { record, server: None }).unwrap_or(Value::Null)
}

/// The `inputRequests` of a task's outstanding questions, each a bare `{method, params}`.
pub(crate) fn input_requests(requests: &InputRequests) -> Map<String, Value> {
    requests
        .iter()
        .map(|(key, input)| (key.clone(), json!({"method": input_method(input.kind), "params": input.params})))
        .collect()
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

        let mut requests = InputRequests::new();
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
