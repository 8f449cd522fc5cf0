//! One codec per protocol era. A codec decodes a request into era-neutral operations
//! (`crate::ops`), encodes their outcome in its era's shapes, renders task changes as its
//! era's notifications, and maps engine errors to its era's JSON-RPC errors. Dispatch picks
//! the codec of each request; nothing else knows which era is speaking.
//!
//! - [`legacy`]: 2025-11-25 (core Tasks): the `initialize` lifecycle and the state it
//!   creates (`legacy::session`), `tools/*` with `params.task`, `tasks/get|result|list|cancel`,
//!   `logging/setLevel`, `resources/subscribe`, and the `Task` shape (`legacy::wire`).
//!
//! - [`modern`]: 2026-07-28 with the tasks extension: per-request `_meta` (no lifecycle),
//!   `server/discover`, `resultType` on every result, the server deciding tasks, the flat
//!   `CreateTaskResult`, `tasks/get` (DetailedTask), `tasks/update`, `tasks/cancel` (an ack).
//!
//! Each codec also owns its era's transport rules (`legacy::http`, `modern::http`) and the
//! state its era keeps on the server ([`State`]).

pub(crate) mod legacy;
pub(crate) mod modern;

use std::time::{Duration, UNIX_EPOCH};

/// What each era keeps on the server (2025-11-25 resource subscriptions, parked 2026-07-28
/// rounds), beside the codec that uses it; the server holds one.
pub(crate) struct State {
    pub(crate) legacy: legacy::State,
    pub(crate) modern: modern::State,
}

impl State {
    /// Fresh state; 2026-07-28 rounds wait `retry_wait` for their retry.
    pub(crate) fn new(retry_wait: Duration) -> State {
        State { legacy: legacy::State::default(), modern: modern::State::new(retry_wait) }
    }

    /// Resource `uri` changed: each era tells whoever asked (listen streams, then the
    /// subscribed 2025-11-25 sessions).
    pub(crate) fn resource_updated(&self, uri: &str) {
        self.modern.resource_updated(uri);
        self.legacy.subscriptions.notify_updated(uri);
    }
}

use mcp_tasks_engine::Timestamp;
use mcp_tasks_protocol::jsonrpc::RpcError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A timestamp as both eras write it: RFC 3339 in UTC with milliseconds,
/// `2025-11-25T10:30:00.123Z`.
pub(crate) fn rfc3339(at: Timestamp) -> String {
    Rfc3339(at).to_string()
}

/// [`rfc3339`] written where it goes (a serializer, a formatter), without a `String` of
/// its own.
#[derive(Clone, Copy)]
pub(crate) struct Rfc3339(pub(crate) Timestamp);

impl std::fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = u64::try_from(self.0.0).unwrap_or(0);
        humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).fmt(f)
    }
}

impl serde::Serialize for Rfc3339 {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The `taskId` of a task request's params, if it has one (both eras name it so).
pub(crate) fn task_id_of(params: Option<&Value>) -> Option<&str> {
    params?.get("taskId")?.as_str()
}

/// Parses required params.
///
/// # Errors
/// `-32602` naming the method and what serde found wrong.
pub(crate) fn parse_value<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, RpcError> {
    let params = params.ok_or_else(|| RpcError::invalid_params(format!("Invalid params for {method}: params are required")))?;
    serde_json::from_value(params).map_err(|err| RpcError::invalid_params(format!("Invalid params for {method}: {err}")))
}

/// A task record for the codecs' tests: id `abc`, created 2025-11-25T10:30:00.000Z and changed
/// half a second later, a TTL of a minute and a poll interval of a second, in `state`.
#[cfg(test)]
pub(crate) fn test_record(state: mcp_tasks_engine::TaskState) -> mcp_tasks_engine::TaskRecord {
    use mcp_tasks_engine::{Principal, TaskId, TaskRecord, Version};
    TaskRecord {
        id: TaskId::from("abc"),
        owner: Principal::new("p"),
        tool: "t".to_owned(),
        arguments: serde_json::json!({}),
        state,
        status_message: None,
        created_at: Timestamp(1_764_066_600_000),
        updated_at: Timestamp(1_764_066_600_500),
        ttl_ms: Some(60_000),
        poll_interval_ms: Some(1000),
        attempt: 1,
        version: Version(1),
        error_result_fails: true,
        input_kinds: Vec::new(),
        idempotency_key: None,
        trace: None,
    }
}
