//! 2026-07-28 custom headers from tool parameters (SEP-2243): a tool's `inputSchema` marks
//! an argument with `"x-mcp-header": "{Name}"`, and a `tools/call` over HTTP mirrors that
//! argument's value as the header `Mcp-Param-{Name}`. Tools whose annotations break the rules
//! are dropped from `tools/list` (the client MUST drop them and SHOULD log it).
//!
//! Rules (2026-07-28 `server/tools#x-mcp-header`, `basic/transports#custom-headers-from-tool-parameters`):
//! - the name is a non-empty RFC 9110 token, unique case-insensitively within the schema;
//! - only `string`, `integer` and `boolean` properties, never `number` (nor object, array,
//!   null), directly under `properties`;
//! - a value that is null or absent is not mirrored; a string that cannot be a plain header
//!   value (non-ASCII, control characters, leading or trailing whitespace, or the sentinel
//!   itself) goes as `=?base64?{Base64(UTF-8)}?=`; booleans as `true`/`false`, integers in
//!   decimal.

use serde_json::{Map, Value};

/// The prefix of a mirrored parameter's header name.
const PREFIX: &str = "Mcp-Param-";

/// One annotated argument: the property, and the `{Name}` of its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Annotated {
    property: String,
    name: String,
}

/// The annotated arguments of `input_schema`, or why the tool must be dropped.
pub(crate) fn annotations(input_schema: &Value) -> Result<Vec<Annotated>, String> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut found: Vec<Annotated> = Vec::new();
    for (property, schema) in properties {
        let Some(annotation) = schema.get("x-mcp-header") else { continue };
        let Some(name) = annotation.as_str() else {
            return Err(format!("the x-mcp-header of {property:?} is not a string"));
        };
        if name.is_empty() {
            return Err(format!("the x-mcp-header of {property:?} is empty"));
        }
        if !name.bytes().all(is_token_byte) {
            return Err(format!("the x-mcp-header {name:?} of {property:?} is not an HTTP token"));
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string" | "integer" | "boolean") => {}
            other => {
                return Err(format!(
                    "the x-mcp-header {name:?} is on {property:?} of type {}, not string, integer or boolean",
                    other.unwrap_or("(none)")
                ));
            }
        }
        if found.iter().any(|seen| seen.name.eq_ignore_ascii_case(name)) {
            return Err(format!("the x-mcp-header {name:?} is used twice (names are case-insensitive)"));
        }
        found.push(Annotated { property: property.clone(), name: name.to_owned() });
    }
    Ok(found)
}

/// The `Mcp-Param-*` headers of a call with `arguments` to a tool annotated so.
pub(crate) fn headers(annotated: &[Annotated], arguments: Option<&Map<String, Value>>) -> Vec<(String, String)> {
    let Some(arguments) = arguments else { return Vec::new() };
    annotated
        .iter()
        .filter_map(|annotation| {
            let value = match arguments.get(&annotation.property)? {
                Value::String(text) => encode(text),
                Value::Bool(flag) => flag.to_string(),
                Value::Number(number) => number.to_string(),
                // null is omitted; an object or array does not fit the schema: not mirrored.
                _ => return None,
            };
            Some((format!("{PREFIX}{}", annotation.name), value))
        })
        .collect()
}

/// `text` as is when it can be a plain header value (an empty one included), else
/// `=?base64?…?=`.
pub(crate) fn encode(text: &str) -> String {
    use base64::Engine as _;
    let plain = text.bytes().all(|byte| (0x20..0x7f).contains(&byte)) && text.trim() == text && !text.starts_with("=?base64?");
    if plain {
        text.to_owned()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(text))
    }
}

/// An RFC 9110 `tchar`.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn schema(properties: Value) -> Value {
        json!({"type": "object", "properties": properties})
    }

    #[test]
    fn annotated_arguments_are_mirrored_and_null_or_absent_ones_omitted() {
        let annotated = annotations(&schema(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "empty": {"type": "string", "x-mcp-header": "Empty"},
            "missing": {"type": "string", "x-mcp-header": "Missing"},
            "query": {"type": "string"}
        })))
        .unwrap();
        let arguments = json!({"region": "us-west1", "priority": 42, "verbose": null, "empty": "", "query": "q"});
        let mut headers = headers(&annotated, arguments.as_object());
        headers.sort();
        assert_eq!(
            headers,
            [("Mcp-Param-Empty", ""), ("Mcp-Param-Priority", "42"), ("Mcp-Param-Region", "us-west1")]
                .map(|(name, value)| (name.to_owned(), value.to_owned()))
        );
        let booleans = annotations(&schema(json!({"debug": {"type": "boolean", "x-mcp-header": "Debug"}}))).unwrap();
        assert_eq!(headers_of(&booleans, json!({"debug": false})), [("Mcp-Param-Debug".to_owned(), "false".to_owned())]);
    }

    fn headers_of(annotated: &[Annotated], arguments: Value) -> Vec<(String, String)> {
        headers(annotated, arguments.as_object())
    }

    #[test]
    fn unsafe_strings_go_base64_and_plain_ones_as_they_are() {
        assert_eq!(encode("us west 1"), "us west 1");
        assert_eq!(encode(""), "");
        assert_eq!(encode("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(encode("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert!(encode("=?base64?abc?=").starts_with("=?base64?") && encode("=?base64?abc?=") != "=?base64?abc?=");
    }

    #[test]
    fn tools_with_broken_annotations_are_refused() {
        let refused = |properties: Value| annotations(&schema(properties)).unwrap_err();
        refused(json!({"v": {"type": "string", "x-mcp-header": ""}}));
        refused(json!({"v": {"type": "string", "x-mcp-header": 7}}));
        for kind in ["object", "array", "null", "number"] {
            refused(json!({"v": {"type": kind, "x-mcp-header": "V"}}));
        }
        refused(json!({"a": {"type": "string", "x-mcp-header": "Region"}, "b": {"type": "string", "x-mcp-header": "Region"}}));
        refused(json!({"a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}}));
        for name in ["My Region", "Region:Primary", "Région", "Region\t1"] {
            refused(json!({"v": {"type": "string", "x-mcp-header": name}}));
        }
        assert_eq!(annotations(&schema(json!({"v": {"type": "string"}}))).unwrap(), []);
        assert_eq!(annotations(&json!({"type": "object"})).unwrap(), []);
    }
}
