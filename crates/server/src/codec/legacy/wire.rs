//! The 2025-11-25 ("Legacy") wire shapes of era-neutral facts: the `Task` shape of a record,
//! what `tasks/result` replays, related-task metadata, opaque `tasks/list` cursors, a tool's
//! `execution.taskSupport`, and the capabilities `initialize` declares.

use mcp_tasks_engine::{Cursor, Outcome, TaskId, TaskRecord, TaskState, Timestamp};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::legacy::{
    self, PromptsCapability, ResourcesCapability, ServerCapabilities, ServerTasksCapability, Task, TaskStatus,
    Tool, ToolExecution, ToolsCapability,
};
use mcp_tasks_protocol::mcp::{self, Empty};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::connection::Payload;
use crate::registry::ToolSpec;
use crate::server::Server;
use crate::codec::rfc3339;
use crate::errors;

/// 2025-11-25: a result with `isError: true` makes a `tools/call` task `failed`.
pub(crate) const ERROR_RESULT_FAILS: bool = true;

/// The 2025-11-25 `Tool` for a spec: the shared shape plus `execution.taskSupport`.
pub(crate) fn tool(spec: &ToolSpec) -> Tool {
    let mut base = mcp::Tool::new(spec.name.clone(), spec.input_schema.clone());
    base.title.clone_from(&spec.title);
    base.description.clone_from(&spec.description);
    base.output_schema.clone_from(&spec.output_schema);
    base.annotations.clone_from(&spec.annotations);
    // The task mode is the wire's `taskSupport` itself.
    Tool { base, execution: Some(ToolExecution { task_support: Some(spec.task_mode) }) }
}

/// What `initialize` declares: tools, tasks, logging and completions always; resources
/// (with subscriptions) when there is a resource or template; prompts when there is a
/// prompt. The tool list announces its changes (`notifications/tools/list_changed`); the
/// prompt and resource lists change only when an upstream serves them (the proxy), which
/// then announces theirs too (`listChanged`).
pub(crate) fn capabilities(server: &Server) -> ServerCapabilities {
    let catalog = &server.inner.catalog;
    ServerCapabilities {
        completions: Some(Empty {}),
        experimental: None,
        logging: Some(Empty {}),
        prompts: catalog.has_prompts().then_some(PromptsCapability { list_changed: Some(catalog.lists_change()) }),
        resources: catalog
            .has_resources()
            .then_some(ResourcesCapability { subscribe: Some(true), list_changed: Some(catalog.lists_change()) }),
        tasks: Some(ServerTasksCapability::full()),
        tools: Some(ToolsCapability { list_changed: Some(true) }),
    }
}

/// The 2025-11-25 `Task` for a record: every field the schema requires, `ttl` always
/// present (null for unlimited), timestamps in RFC 3339 UTC.
pub(crate) fn task(record: &TaskRecord) -> Task {
    Task {
        task_id: record.id.as_str().to_owned(),
        status: status(&record.state),
        status_message: record.status_message.clone(),
        created_at: rfc3339(record.created_at),
        last_updated_at: rfc3339(record.updated_at),
        ttl: record.ttl_ms,
        poll_interval: record.poll_interval_ms,
    }
}

/// What a record's `Task` shape says, kept without the strings it is written with: a
/// status notification that may never be read is built from it only when it is
/// ([`crate::connection::Message::Later`]). [`StatusOf::task`] is [`task`] of the record.
pub(crate) struct StatusOf {
    id: TaskId,
    status: TaskStatus,
    message: Option<String>,
    created_at: Timestamp,
    updated_at: Timestamp,
    ttl: Option<u64>,
    poll_interval: Option<u64>,
}

impl StatusOf {
    pub(crate) fn new(record: &TaskRecord) -> StatusOf {
        StatusOf {
            id: record.id.clone(),
            status: status(&record.state),
            message: record.status_message.clone(),
            created_at: record.created_at,
            updated_at: record.updated_at,
            ttl: record.ttl_ms,
            poll_interval: record.poll_interval_ms,
        }
    }

    /// The `Task` of the record as it was taken.
    pub(crate) fn task(&self) -> Task {
        Task {
            task_id: self.id.as_str().to_owned(),
            status: self.status,
            status_message: self.message.clone(),
            created_at: rfc3339(self.created_at),
            last_updated_at: rfc3339(self.updated_at),
            ttl: self.ttl,
            poll_interval: self.poll_interval,
        }
    }
}

fn status(state: &TaskState) -> TaskStatus {
    match state {
        TaskState::Working => TaskStatus::Working,
        TaskState::InputRequired { .. } => TaskStatus::InputRequired,
        TaskState::Completed { .. } => TaskStatus::Completed,
        TaskState::Failed { .. } => TaskStatus::Failed,
        TaskState::Cancelled => TaskStatus::Cancelled,
    }
}


/// What `tasks/result` answers for a terminal task: exactly what the underlying request
/// would have answered, with `_meta["io.modelcontextprotocol/related-task"]` merged into a
/// successful result (2025-11-25 `tasks/result` MUSTs).
///
/// A JSON-RPC error outcome is replayed with the same code, message and data (an error
/// cannot carry `_meta`); a failure of the engine's own as [`errors::work_error`]. A cancelled task has no outcome: it answers an error that says so.
pub(crate) fn task_result(record: &TaskRecord) -> Result<Payload, RpcError> {
    let result = match &record.state {
        TaskState::Completed { result } | TaskState::Failed { outcome: Outcome::Result(result) } => result,
        TaskState::Failed { outcome: Outcome::Error(error) } => {
            return Err(RpcError { code: error.code, message: error.message.clone(), data: error.data.clone() });
        }
        TaskState::Failed { outcome: Outcome::Failure(failure) } => return Err(errors::work_error(failure)),
        TaskState::Working | TaskState::InputRequired { .. } | TaskState::Cancelled => {
            return Err(RpcError::internal(format!("Task {} was cancelled before it produced a result", record.id))
                .with_data(serde_json::json!({ "taskId": record.id.as_str(), "status": "cancelled" })));
        }
    };
    Payload::text(&WithRelatedTask { result, id: &record.id })
}

/// A task's result with `_meta["io.modelcontextprotocol/related-task"]` merged in, written
/// from the record (no copy of the result is made): the result object's members, its
/// `_meta` (an object: its members, the related-task key replaced; anything else: kept as
/// it is), or, for a result that is not an object, `{"result": …}` with the `_meta`.
struct WithRelatedTask<'a> {
    result: &'a Value,
    id: &'a TaskId,
}

impl Serialize for WithRelatedTask<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// The `_meta` of the answer: `.0`'s members (if it has any) and the related task.
        struct Merged<'a>(Option<&'a Map<String, Value>>, &'a TaskId);
        impl Serialize for Merged<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut meta = serializer.serialize_map(None)?;
                for (key, value) in self.0.into_iter().flatten().filter(|(key, _)| key.as_str() != legacy::RELATED_TASK) {
                    meta.serialize_entry(key, value)?;
                }
                meta.serialize_entry(legacy::RELATED_TASK, &legacy::RelatedTaskMetadata { task_id: self.1.as_str().to_owned() })?;
                meta.end()
            }
        }
        let mut map = serializer.serialize_map(None)?;
        match self.result {
            Value::Object(result) => {
                for (key, value) in result.iter().filter(|(key, _)| key.as_str() != "_meta") {
                    map.serialize_entry(key, value)?;
                }
                match result.get("_meta") {
                    None => map.serialize_entry("_meta", &Merged(None, self.id))?,
                    Some(Value::Object(meta)) => map.serialize_entry("_meta", &Merged(Some(meta), self.id))?,
                    Some(other) => map.serialize_entry("_meta", other)?,
                }
            }
            other => {
                map.serialize_entry("result", other)?;
                map.serialize_entry("_meta", &Merged(None, self.id))?;
            }
        }
        map.end()
    }
}

/// An opaque `tasks/list` cursor for "after this task". Clients must not parse it; we
/// hex-encode so that it does not invite them to.
pub(crate) fn encode_cursor(record: &TaskRecord) -> String {
    let plain = format!("{}:{}", record.created_at.0, record.id);
    plain.bytes().map(|byte| format!("{byte:02x}")).collect()
}

/// Reads a cursor made by [`encode_cursor`].
///
/// # Errors
/// `-32602` for anything else (2025-11-25 `tasks/list`: invalid cursor MUST be -32602).
pub(crate) fn decode_cursor(cursor: &str) -> Result<Cursor, RpcError> {
    let invalid = || RpcError::invalid_params(format!("Invalid cursor for tasks/list: {cursor:?}"));
    // Only the lowercase hex digits `encode_cursor` writes: this also keeps the pairs below
    // on character boundaries (a non-ASCII cursor would otherwise be sliced inside a
    // character, and panic), and refuses what `from_str_radix` would let through (`+f`).
    let hex = cursor.as_bytes();
    if !hex.len().is_multiple_of(2) || hex.len() > 512 || !hex.iter().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(invalid());
    }
    let bytes = hex
        .chunks_exact(2)
        .map(|pair| std::str::from_utf8(pair).ok().and_then(|pair| u8::from_str_radix(pair, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(invalid)?;
    let plain = String::from_utf8(bytes).map_err(|_| invalid())?;
    let (created, id) = plain.split_once(':').ok_or_else(invalid)?;
    let created_at = created.parse::<i64>().map_err(|_| invalid())?;
    if id.is_empty() {
        return Err(invalid());
    }
    Ok(Cursor { created_at: Timestamp(created_at), id: TaskId::from(id) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::test_record as record;
    use mcp_tasks_engine::ErrorObject;
    use serde_json::json;

    #[test]
    fn legacy_37_38_timestamps_are_rfc3339_utc() {
        let task = task(&record(TaskState::Working));
        assert_eq!(task.created_at, "2025-11-25T10:30:00.000Z");
        assert_eq!(task.last_updated_at, "2025-11-25T10:30:00.500Z");
    }

    #[test]
    fn a_status_taken_now_and_built_later_is_the_task_of_the_record_as_it_was() {
        let mut taken = record(TaskState::Completed { result: json!({"content": []}) });
        taken.status_message = Some("done".into());
        let status = StatusOf::new(&taken);
        let expected = task(&taken);
        taken.state = TaskState::Cancelled;
        taken.updated_at = Timestamp(1_764_066_700_000);
        assert_eq!(status.task(), expected);
        let mut unlimited = record(TaskState::Working);
        (unlimited.ttl_ms, unlimited.poll_interval_ms) = (None, None);
        assert_eq!(StatusOf::new(&unlimited).task(), task(&unlimited));
    }

    #[test]
    fn legacy_48_result_carries_related_task_and_keeps_existing_meta() {
        let result = json!({"content": [], "_meta": {"x": 1}});
        let out = task_result(&record(TaskState::Completed { result })).unwrap().into_value();
        assert_eq!(out["_meta"]["x"], 1);
        assert_eq!(out["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], "abc");
    }

    /// `tasks/result` is written from the record: every member of the result once, the
    /// related task merged into an object `_meta` (replacing one the result carried), a
    /// `_meta` that is not an object kept as it is, a result that is not an object under
    /// `result`, and a result the era counts as failure (`isError`) replayed the same way.
    #[test]
    fn legacy_48_the_result_written_from_the_record_is_the_result_with_its_related_task() {
        let related = |id: &str| json!({"io.modelcontextprotocol/related-task": {"taskId": id}});
        let cases = [
            (json!({"content": [{"type": "text", "text": "ok"}]}), json!({"content": [{"type": "text", "text": "ok"}], "_meta": related("abc")})),
            (
                json!({"content": [], "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "other"}, "y": [1]}}),
                json!({"content": [], "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "abc"}, "y": [1]}}),
            ),
            (json!({"content": [], "_meta": "odd"}), json!({"content": [], "_meta": "odd"})),
            (json!([1, "two"]), json!({"result": [1, "two"], "_meta": related("abc")})),
            (json!({}), json!({"_meta": related("abc")})),
        ];
        for (result, expected) in cases {
            let completed = task_result(&record(TaskState::Completed { result: result.clone() })).unwrap();
            let Payload::Text(text) = &completed else { panic!("written as text: {completed:?}") };
            assert_eq!(serde_json::from_str::<Value>(text).unwrap(), expected, "{result}");
            let failed = TaskState::Failed { outcome: Outcome::Result(result.clone()) };
            assert_eq!(task_result(&record(failed)).unwrap().into_value(), expected, "{result}");
        }
    }

    #[test]
    fn legacy_46_error_outcome_is_replayed_verbatim() {
        let error = ErrorObject { code: -32001, message: "boom".into(), data: Some(json!({"k": 2})) };
        let state = TaskState::Failed { outcome: Outcome::Error(error) };
        let err = task_result(&record(state)).unwrap_err();
        assert_eq!((err.code, err.message.as_str(), err.data), (-32001, "boom", Some(json!({"k": 2}))));
    }

    /// The engine's own failures replay as the `-32603` error objects that rows written
    /// before `Outcome::Failure` hold, byte for byte.
    #[test]
    fn a_failure_of_the_engine_replays_as_the_internal_error_it_was_stored_as_before() {
        use mcp_tasks_engine::WorkError;
        for failure in [
            WorkError::InterruptedByRestart,
            WorkError::InterruptedRepeatedly { times: 3, max_attempts: 3 },
            WorkError::Expired,
            WorkError::HandlerCrashed,
        ] {
            let old = ErrorObject { code: -32603, message: failure.to_string(), data: None };
            let before = task_result(&record(TaskState::Failed { outcome: Outcome::Error(old) })).unwrap_err();
            let now = task_result(&record(TaskState::Failed { outcome: Outcome::Failure(failure) })).unwrap_err();
            let wire = |err: &RpcError| serde_json::to_string(&mcp_tasks_protocol::jsonrpc::error_response(None, err)).unwrap();
            assert_eq!(wire(&now), wire(&before));
            assert_eq!(now.code, -32603);
        }
    }

    #[test]
    fn legacy_67_cursor_round_trips_and_garbage_is_32602() {
        let rec = record(TaskState::Working);
        let cursor = decode_cursor(&encode_cursor(&rec)).unwrap();
        assert_eq!((cursor.created_at, cursor.id), (rec.created_at, rec.id));
        for bad in ["zz", "abc", "", "3a", "6869"] {
            assert_eq!(decode_cursor(bad).unwrap_err().code, -32602, "{bad}");
        }
    }

    #[test]
    fn a_cursor_with_non_ascii_or_non_hex_characters_is_32602_not_a_panic() {
        // "é" is two bytes: an even length whose pairs split the character.
        for bad in ["é", "aé", "éé", "€a", "\u{1F600}", "+f+f", "-1-1", "3A3A", " 3a3"] {
            let err = decode_cursor(bad).unwrap_err();
            assert_eq!(err.code, -32602, "{bad}");
            assert!(err.message.contains("Invalid cursor"), "{bad}: {}", err.message);
        }
    }
}
