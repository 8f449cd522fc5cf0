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
//! fn options<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned + 'static>(d: D) -> Result<Option<T>, D::Error> {
//!     object::optional(d, "options")
//! }
//!
//! let err = serde_json::from_value::<Params>(serde_json::json!({"options": [1]})).err().unwrap();
//! assert_eq!(err.to_string(), "`options` must be an object, not an array");
//! ```

use std::any::Any;

use serde::de::{DeserializeOwned, Error};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// An optional object-typed field: absent (with `#[serde(default)]`) or `null` is `None`, an
/// object is read as `T`, anything else is refused.
///
/// # Errors
/// `` `field` must be an object, not … `` for another JSON type; `` `field`: … `` when the
/// object does not read as `T`.
pub fn optional<'de, D: Deserializer<'de>, T: DeserializeOwned + 'static>(deserializer: D, field: &str) -> Result<Option<T>, D::Error> {
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
pub fn required<'de, D: Deserializer<'de>, T: DeserializeOwned + 'static>(deserializer: D, field: &str) -> Result<T, D::Error> {
    read(Value::deserialize(deserializer)?, field)
}

fn read<T: DeserializeOwned + 'static, E: Error>(value: Value, field: &str) -> Result<T, E> {
    let kind = match value {
        Value::Object(object) => {
            // A field kept as the object itself (`arguments`, `_meta`, …) is that object: read
            // as `T` it would be rebuilt entry by entry, a copy of every key and value.
            let mut object = Some(object);
            if let Some(kept) = (&mut object as &mut dyn Any).downcast_mut::<Option<T>>()
                && let Some(kept) = kept.take()
            {
                return Ok(kept);
            }
            let object = Value::Object(object.unwrap_or_default());
            return T::deserialize(object).map_err(|err| E::custom(format!("`{field}`: {err}")));
        }
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
    };
    Err(E::custom(format!("`{field}` must be an object, not {kind}")))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::{Map, Value, json};

    #[derive(Debug, Deserialize)]
    struct Params {
        #[serde(default, deserialize_with = "kept")]
        kept: Option<Map<String, Value>>,
        #[serde(default, deserialize_with = "typed")]
        typed: Option<Typed>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Typed {
        n: u32,
    }

    fn kept<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Map<String, Value>>, D::Error> {
        super::optional(d, "kept")
    }

    fn typed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Typed>, D::Error> {
        super::optional(d, "typed")
    }

    #[test]
    fn an_object_kept_whole_and_one_read_as_a_type_both_read_back() {
        let nested = json!({"a": [1, {"b": null}], "c": "d"});
        let params: Params = serde_json::from_value(json!({"kept": nested, "typed": {"n": 7}})).unwrap();
        assert_eq!(params.kept.map(Value::Object), Some(nested));
        assert_eq!(params.typed, Some(Typed { n: 7 }));
        let err = serde_json::from_value::<Params>(json!({"typed": {"n": "x"}})).unwrap_err();
        assert!(err.to_string().starts_with("`typed`: invalid type: string"), "{err}");
        let err = serde_json::from_value::<Params>(json!({"kept": [1]})).unwrap_err();
        assert_eq!(err.to_string(), "`kept` must be an object, not an array");
    }
}
