//! Reading rows written by earlier builds, before the engine named input requests by
//! [`InputKind`]: those hold the 2025-11-25 method names instead, `["elicitation/create"]`
//! in the `input_methods` column and `{"method": "elicitation/create", "params": …}` for
//! each outstanding request inside the `state` JSON. Such rows read back with the same
//! meaning; rows are written in the new form (`["elicitation"]`, `{"kind": "elicitation",
//! …}`), so no migration rewrites the old ones.
//!
//! Rows written before migration 0004 have no idempotency key: the column is NULL and reads
//! back as `None`, as for any task created without a key.

use mcp_tasks_engine::{InputKind, TaskState};
use rusqlite::types::Type;
use serde_json::Value;

/// The kind an old row's method name (or a new row's kind name) stands for.
fn kind_of(name: &str) -> Option<InputKind> {
    match name {
        "elicitation" | "elicitation/create" => Some(InputKind::Elicitation),
        "sampling" | "sampling/createMessage" => Some(InputKind::Sampling),
        "roots" => Some(InputKind::Roots),
        _ => None,
    }
}

fn invalid(column: usize, problem: impl Into<String>) -> rusqlite::Error {
    let problem: Box<dyn std::error::Error + Send + Sync> = problem.into().into();
    rusqlite::Error::FromSqlConversionFailure(column, Type::Text, problem)
}

/// Decodes the `input_methods` column: a JSON array of kind names, or of the method names
/// old rows hold.
pub(crate) fn input_kinds(column: usize, text: &str) -> rusqlite::Result<Vec<InputKind>> {
    let names: Vec<String> =
        serde_json::from_str(text).map_err(|err| invalid(column, format!("input_methods: {err}")))?;
    names
        .iter()
        .map(|name| kind_of(name).ok_or_else(|| invalid(column, format!("unknown input kind {name:?}"))))
        .collect()
}

/// Decodes the `state` column; the outstanding requests of an old `input_required` row name
/// their `method`, which becomes their `kind`.
pub(crate) fn state(column: usize, text: &str) -> rusqlite::Result<TaskState> {
    if !text.contains("\"method\"") {
        // A new row (or one with no input requests): no detour through a `Value`.
        return serde_json::from_str(text).map_err(|err| invalid(column, err.to_string()));
    }
    let decode = |value: Value| serde_json::from_value(value).map_err(|err| invalid(column, err.to_string()));
    let mut value: Value = serde_json::from_str(text).map_err(|err| invalid(column, err.to_string()))?;
    if let Some(requests) = value.get_mut("requests").and_then(Value::as_object_mut) {
        for request in requests.values_mut() {
            let Some(object) = request.as_object_mut() else { continue };
            if object.contains_key("kind") {
                continue;
            }
            let Some(method) = object.remove("method") else { continue };
            let kind = method.as_str().and_then(kind_of).ok_or_else(|| invalid(column, format!("unknown input method {method}")))?;
            object.insert("kind".to_owned(), serde_json::to_value(kind).map_err(|err| invalid(column, err.to_string()))?);
        }
    }
    decode(value)
}
