//! Fields of incoming `params` that the schema types as objects (`task`, `arguments`,
//! `_meta`, `clientInfo`, `capabilities`, …), read so that nothing else passes for one.
//!
//! Serde's derived structs read a JSON array as their fields in order, so without this
//! `"task": []` asks for a task and `"clientInfo": ["c", null, "1"]` names a client; and a
//! field kept as a raw [`Value`] takes anything. Use these with `deserialize_with` through a
//! one-line function that names the field, so that the error says which field was wrong:
//!
//! ```
//! use mcp_tasks_protocol::object;
//! use serde::{Deserialize, Deserializer};
//!
//! #[derive(Deserialize)]
//! struct Params {
//!     #[serde(default, deserialize_with = "options")]
//!     options: Option<serde_json::Map<String, serde_json::Value>>,
//! }
//!
//! fn options<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
//!     object::optional(d, "options")
//! }
//!
//! let err = serde_json::from_value::<Params>(serde_json::json!({"options": [1]})).err().unwrap();
//! assert_eq!(err.to_string(), "`options` must be an object, not an array");
//! ```

use serde::de::{DeserializeOwned, Error};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// An optional object-typed field: absent (with `#[serde(default)]`) or `null` is `None`, an
/// object is read as `T`, anything else is refused.
///
/// # Errors
/// `` `field` must be an object, not … `` for another JSON type; `` `field`: … `` when the
/// object does not read as `T`.
pub fn optional<'de, D: Deserializer<'de>, T: DeserializeOwned>(deserializer: D, field: &str) -> Result<Option<T>, D::Error> {
    match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => Ok(None),
        Some(value) => read(value, field).map(Some),
    }
}

/// A required object-typed field: an object, read as `T`; anything else is refused (a
/// missing field is serde's own "missing field" error).
///
/// # Errors
/// As [`optional`], and for `null`.
pub fn required<'de, D: Deserializer<'de>, T: DeserializeOwned>(deserializer: D, field: &str) -> Result<T, D::Error> {
    read(Value::deserialize(deserializer)?, field)
}

fn read<T: DeserializeOwned, E: Error>(value: Value, field: &str) -> Result<T, E> {
    let kind = match &value {
        Value::Object(_) => return T::deserialize(value).map_err(|err| E::custom(format!("`{field}`: {err}"))),
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
    };
    Err(E::custom(format!("`{field}` must be an object, not {kind}")))
}
