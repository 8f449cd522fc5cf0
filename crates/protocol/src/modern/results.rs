//! The result shapes of the 2026-07-28 tasks extension (SEP-2663): the [`Task`] members every
//! task shape has, the [`DetailedTask`] of `tasks/get` ([`GetTaskResult`]) and of
//! `notifications/tasks` (its result, error or input requests inlined), the flat
//! [`CreateTaskResult`] of a `tools/call` that became a task, and the [`InputRequiredResult`]
//! of a Multi Round-Trip round, with their [`ResultType`] and [`ResultMeta`].
//!
//! One set of types serves both sides. Strings and JSON are [`Cow`]s: the server builds them
//! from borrowed parts of its task record and writes them without copying the result JSON;
//! the client reads them owned (`'static`). Members are written in the order of the fields
//! (the task's members first, then what is inlined, then `resultType` and `_meta`).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::SERVER_INFO_META;
use crate::mcp::{Implementation, Meta, TaskStatus};

/// Schema `ResultType` (the values this crate writes): how a client reads a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    /// The request is done and the result is its answer (also what an absent `resultType`
    /// means).
    Complete,
    /// An [`InputRequiredResult`]: answer the questions and send the request again.
    InputRequired,
    /// A [`CreateTaskResult`]: the request became a task.
    Task,
}

impl ResultType {
    /// The wire spelling: `"complete"`, `"input_required"` or `"task"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Task => "task",
        }
    }
}

/// Schema `Task` of the tasks extension: the members every task shape has.
///
/// `ttlMs` is always written (`null` for unlimited retention), and read as `None` when
/// absent; `statusMessage` and `pollIntervalMs` are left out when `None`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task<'a> {
    /// The id the server generated.
    pub task_id: Cow<'a, str>,
    /// Where the task stands.
    pub status: TaskStatus,
    /// Human-readable context for the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<Cow<'a, str>>,
    /// Creation time, RFC 3339.
    pub created_at: Cow<'a, str>,
    /// Time of the last change, RFC 3339.
    pub last_updated_at: Cow<'a, str>,
    /// Retention in milliseconds from `createdAt`; `None` is unlimited.
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// Suggested milliseconds between polls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

/// Schema `InputRequest`: one question of the server to the client, a bare request
/// `{method, params}` (`elicitation/create`, `sampling/createMessage` or `roots/list`).
///
/// Read leniently: an absent `method` reads as `""` and absent `params` as `{}`, so that a
/// question nobody can answer is refused by the host's handlers, not by the parser.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRequest<'a> {
    /// The request's method.
    #[serde(default)]
    pub method: Cow<'a, str>,
    /// The request's params.
    #[serde(default = "empty_object")]
    pub params: Cow<'a, Value>,
}

fn empty_object<'a>() -> Cow<'a, Value> {
    Cow::Owned(Value::Object(Map::new()))
}

/// Schema `InputRequests`: the server's questions by the keys it chose, in the order
/// written (a host asks its user in that order). `null` reads as none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputRequests<'a>(pub Vec<(Cow<'a, str>, InputRequest<'a>)>);

impl<'a> InputRequests<'a> {
    /// Whether there is no question.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many questions there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The questions and their keys, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &InputRequest<'a>)> {
        self.0.iter().map(|(key, request)| (key.as_ref(), request))
    }
}

impl<'a> FromIterator<(Cow<'a, str>, InputRequest<'a>)> for InputRequests<'a> {
    fn from_iter<I: IntoIterator<Item = (Cow<'a, str>, InputRequest<'a>)>>(iter: I) -> Self {
        InputRequests(iter.into_iter().collect())
    }
}

impl Serialize for InputRequests<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, request) in &self.0 {
            map.serialize_entry(key, request)?;
        }
        map.end()
    }
}

impl<'de, 'a> Deserialize<'de> for InputRequests<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// Reads the map in order; a key written twice keeps its place and its last value,
        /// as a JSON object read into a map would.
        struct Requests<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de, 'a> Visitor<'de> for Requests<'a> {
            type Value = InputRequests<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of input requests by key")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(InputRequests::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut requests: Vec<(Cow<'a, str>, InputRequest<'a>)> = Vec::new();
                while let Some((key, request)) = access.next_entry::<String, InputRequest<'a>>()? {
                    match requests.iter_mut().find(|(known, _)| *known == key) {
                        Some(slot) => slot.1 = request,
                        None => requests.push((Cow::Owned(key), request)),
                    }
                }
                Ok(InputRequests(requests))
            }
        }
        deserializer.deserialize_any(Requests(std::marker::PhantomData))
    }
}

/// The underlying result a completed [`DetailedTask`] inlines.
///
/// Written as the result object with `resultType: "complete"` added unless it has one; a
/// result that is not an object goes under `result` (`{"result": …, "resultType":
/// "complete"}`), so that what is inlined is always an object. Read as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnderlyingResult<'a>(pub Cow<'a, Value>);

impl Serialize for UnderlyingResult<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self.0.as_ref() {
            Value::Object(result) => {
                for (key, value) in result {
                    map.serialize_entry(key, value)?;
                }
                if !result.contains_key("resultType") {
                    map.serialize_entry("resultType", ResultType::Complete.as_str())?;
                }
            }
            other => {
                map.serialize_entry("result", other)?;
                map.serialize_entry("resultType", ResultType::Complete.as_str())?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for UnderlyingResult<'_> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|result| UnderlyingResult(Cow::Owned(result)))
    }
}

/// Schema `DetailedTask`: a task and what its status carries, inlined: `inputRequests` while
/// `input_required`, the underlying `result` once `completed`, the JSON-RPC `error` once
/// `failed` (the schema ties each to its status; a writer sets the one its status has). The
/// `params` of `notifications/tasks`; with `resultType` and `_meta`, the [`GetTaskResult`].
///
/// A member present in the JSON reads as `Some`, even when it is `null`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask<'a> {
    /// The task's members.
    #[serde(flatten)]
    pub task: Task<'a>,
    /// `input_required`: the outstanding questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests<'a>>,
    /// `completed`: the underlying result.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub result: Option<UnderlyingResult<'a>>,
    /// `failed`: the JSON-RPC error (schema `Error`).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub error: Option<Cow<'a, Value>>,
}

impl<'a> DetailedTask<'a> {
    /// A task with nothing inlined (a `working` or `cancelled` one).
    pub fn new(task: Task<'a>) -> Self {
        DetailedTask { task, input_requests: None, result: None, error: None }
    }
}

/// A member that is present: `Some` of what it holds, `null` included.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// Schema `GetTaskResult`: the result of `tasks/get`, the [`DetailedTask`] with
/// `resultType: "complete"` (read as `complete` when absent) and the result's `_meta`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskResult<'a> {
    /// The task and what it inlines.
    #[serde(flatten)]
    pub task: DetailedTask<'a>,
    /// Always [`ResultType::Complete`].
    #[serde(default = "complete")]
    pub result_type: ResultType,
    /// The result's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta<'a>>,
}

impl<'a> GetTaskResult<'a> {
    /// The result of `tasks/get` for `task`, with `meta`.
    pub fn new(task: DetailedTask<'a>, meta: Option<ResultMeta<'a>>) -> Self {
        GetTaskResult { task, result_type: ResultType::Complete, meta }
    }
}

fn complete() -> ResultType {
    ResultType::Complete
}

/// Schema `CreateTaskResult` of the tasks extension: the flat task (its members at the top
/// level, nothing inlined) with `resultType: "task"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult<'a> {
    /// The task's members.
    #[serde(flatten)]
    pub task: Task<'a>,
    /// Always [`ResultType::Task`].
    pub result_type: ResultType,
    /// The result's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta<'a>>,
}

impl<'a> CreateTaskResult<'a> {
    /// The result that shows `task`, with `meta`.
    pub fn new(task: Task<'a>, meta: Option<ResultMeta<'a>>) -> Self {
        CreateTaskResult { task, result_type: ResultType::Task, meta }
    }
}

/// Schema `InputRequiredResult` (2026-07-28 core, Multi Round-Trip Requests): the request
/// needs answers first; the client sends it again with `inputResponses` (by the keys of
/// `inputRequests`) and `requestState` echoed. At least one of the two is present.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult<'a> {
    /// Always [`ResultType::InputRequired`].
    pub result_type: ResultType,
    /// The questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests<'a>>,
    /// What the retry echoes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<Cow<'a, str>>,
    /// The result's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta<'a>>,
}

impl<'a> InputRequiredResult<'a> {
    /// A round that asks `requests` and is retried with `state`.
    pub fn new(requests: InputRequests<'a>, state: impl Into<Cow<'a, str>>) -> Self {
        InputRequiredResult {
            result_type: ResultType::InputRequired,
            input_requests: Some(requests),
            request_state: Some(state.into()),
            meta: None,
        }
    }
}

/// Schema `ResultMetaObject`: a result's `_meta`, with the server's `Implementation` under
/// [`SERVER_INFO_META`] (a server SHOULD put it on every result), written first, and any
/// other members.
///
/// Read leniently (a client SHOULD NOT act on it): a `_meta` that is not an object reads as
/// empty, a server info that is not an `Implementation` stays among the other members.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResultMeta<'a> {
    /// Who the server is.
    pub server_info: Option<Cow<'a, Implementation>>,
    /// The other members.
    pub rest: Meta,
}

impl<'a> ResultMeta<'a> {
    /// A `_meta` with the server's `Implementation` and nothing else.
    pub fn server(server: &'a Implementation) -> Self {
        ResultMeta { server_info: Some(Cow::Borrowed(server)), rest: Meta::new() }
    }
}

impl Serialize for ResultMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(server) = &self.server_info {
            map.serialize_entry(SERVER_INFO_META, server)?;
        }
        for (key, value) in &self.rest {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ResultMeta<'_> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Value::Object(mut rest) = Value::deserialize(deserializer)? else {
            return Ok(ResultMeta::default());
        };
        let server_info = match rest.get(SERVER_INFO_META).map(Implementation::deserialize) {
            Some(Ok(server)) => {
                rest.remove(SERVER_INFO_META);
                Some(Cow::Owned(server))
            }
            Some(Err(_)) | None => None,
        };
        Ok(ResultMeta { server_info, rest })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn task(status: TaskStatus) -> Task<'static> {
        Task {
            task_id: "abc".into(),
            status,
            status_message: None,
            created_at: "2025-11-25T10:30:00.000Z".into(),
            last_updated_at: "2025-11-25T10:30:00.500Z".into(),
            ttl_ms: None,
            poll_interval_ms: Some(1000),
        }
    }

    #[test]
    fn results_are_written_task_members_first_then_what_is_inlined_then_result_type_and_meta() {
        let server = Implementation::new("srv", "1.2");
        let created = CreateTaskResult::new(task(TaskStatus::Working), Some(ResultMeta::server(&server)));
        assert_eq!(
            serde_json::to_string(&created).unwrap(),
            r#"{"taskId":"abc","status":"working","createdAt":"2025-11-25T10:30:00.000Z","lastUpdatedAt":"2025-11-25T10:30:00.500Z","ttlMs":null,"pollIntervalMs":1000,"resultType":"task","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.2"}}}"#
        );
        let result = json!({"content": [], "isError": false});
        let done = DetailedTask { result: Some(UnderlyingResult(Cow::Borrowed(&result))), ..DetailedTask::new(task(TaskStatus::Completed)) };
        assert_eq!(
            serde_json::to_string(&GetTaskResult::new(done, None)).unwrap(),
            r#"{"taskId":"abc","status":"completed","createdAt":"2025-11-25T10:30:00.000Z","lastUpdatedAt":"2025-11-25T10:30:00.500Z","ttlMs":null,"pollIntervalMs":1000,"result":{"content":[],"isError":false,"resultType":"complete"},"resultType":"complete"}"#
        );
        let asked = InputRequests::from_iter([("k".into(), InputRequest { method: "roots/list".into(), params: Cow::Owned(json!({})) })]);
        assert_eq!(
            serde_json::to_string(&InputRequiredResult::new(asked, "s-1")).unwrap(),
            r#"{"resultType":"input_required","inputRequests":{"k":{"method":"roots/list","params":{}}},"requestState":"s-1"}"#
        );
    }

    #[test]
    fn a_result_that_is_not_an_object_is_inlined_under_result() {
        let bare = json!("bare");
        assert_eq!(serde_json::to_value(UnderlyingResult(Cow::Borrowed(&bare))).unwrap(), json!({"result": "bare", "resultType": "complete"}));
        let own = json!({"resultType": "complete", "content": []});
        assert_eq!(serde_json::to_string(&UnderlyingResult(Cow::Borrowed(&own))).unwrap(), serde_json::to_string(&own).unwrap());
    }

    #[test]
    fn what_is_written_reads_back_and_a_present_null_reads_as_some() {
        let server = Implementation::new("srv", "1.2");
        let mut failed = DetailedTask::new(task(TaskStatus::Failed));
        failed.error = Some(Cow::Owned(json!({"code": -32603, "message": "boom"})));
        let written = serde_json::to_value(GetTaskResult::new(failed.clone(), Some(ResultMeta::server(&server)))).unwrap();
        let read: GetTaskResult<'static> = serde_json::from_value(written).unwrap();
        assert_eq!((read.task, read.meta.and_then(|meta| meta.server_info)), (failed, Some(Cow::Owned(server))));

        let mut bare = serde_json::to_value(task(TaskStatus::Completed)).unwrap();
        bare["result"] = Value::Null;
        bare.as_object_mut().unwrap().remove("ttlMs");
        let read: DetailedTask<'static> = serde_json::from_value(bare).unwrap();
        assert_eq!((read.result, read.error, read.task.ttl_ms), (Some(UnderlyingResult(Cow::Owned(Value::Null))), None, None));
    }

    #[test]
    fn input_requests_keep_their_order_and_read_leniently() {
        let read: InputRequests<'static> =
            serde_json::from_str(r#"{"z": {"method": "elicitation/create", "params": {"message": "?"}}, "a": {}}"#).unwrap();
        let keys: Vec<&str> = read.iter().map(|(key, _)| key).collect();
        assert_eq!(keys, ["z", "a"]);
        assert_eq!(read.0[1].1, InputRequest { method: "".into(), params: Cow::Owned(json!({})) });
        assert!(serde_json::from_value::<InputRequests<'static>>(Value::Null).unwrap().is_empty());
        assert!(serde_json::from_value::<InputRequests<'static>>(json!([1])).is_err());
    }

    #[test]
    fn a_result_meta_reads_leniently_and_keeps_other_members() {
        let read: ResultMeta<'static> = serde_json::from_value(json!({SERVER_INFO_META: "srv", "k": 1})).unwrap();
        assert_eq!(read.server_info, None);
        assert_eq!(read.rest.len(), 2);
        assert_eq!(serde_json::from_value::<ResultMeta<'static>>(json!(7)).unwrap(), ResultMeta::default());
    }
}
