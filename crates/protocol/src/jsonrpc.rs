//! The JSON-RPC 2.0 envelope as MCP 2025-11-25 uses it: one message per line, no batches,
//! `params` always an object.
//!
//! [`parse`] turns the text of one message into an [`Incoming`] request, notification or
//! response. When the text is not a valid message it returns a [`ParseFailure`] that already
//! holds the JSON-RPC error to send back (and the request id, when it could be read). The
//! functions [`response`], [`error_response`], [`request`] and [`notification`] build
//! outgoing messages as [`serde_json::Value`]s, ready to be written as one line.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol version string every message carries in its `jsonrpc` member.
pub const JSONRPC_VERSION: &str = "2.0";

/// Error message for a JSON array, which JSON-RPC would read as a batch.
const BATCH_REFUSED: &str =
    "batch requests are not supported in protocol 2025-11-25; send one message per line";

/// The id of a request: a string or an integer, never `null` (2025-11-25 base protocol).
///
/// On the wire it is the bare JSON value: `7` or `"abc"`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id, such as `7`.
    Number(i64),
    /// A string id, such as `"req-7"`.
    String(String),
}

impl From<&RequestId> for Value {
    fn from(id: &RequestId) -> Value {
        match id {
            RequestId::Number(number) => Value::from(*number),
            RequestId::String(string) => Value::String(string.clone()),
        }
    }
}

impl From<i64> for RequestId {
    fn from(number: i64) -> Self {
        Self::Number(number)
    }
}

impl From<String> for RequestId {
    fn from(string: String) -> Self {
        Self::String(string)
    }
}

impl From<&str> for RequestId {
    fn from(string: &str) -> Self {
        Self::String(string.to_owned())
    }
}

/// Shows a number id as digits and a string id as its text, without quotes.
impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(number) => write!(f, "{number}"),
            Self::String(string) => f.write_str(string),
        }
    }
}

/// A JSON-RPC error object: `{"code": -32602, "message": "...", "data": ...}`.
///
/// `data` is left out of the JSON when it is `None`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code; the standard ones are the associated constants of this type.
    pub code: i64,
    /// A short description of the error, ideally one sentence.
    pub message: String,
    /// Extra information chosen by the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// `-32700`: the text was not valid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// `-32600`: the JSON was not a valid JSON-RPC message.
    pub const INVALID_REQUEST: i64 = -32600;
    /// `-32601`: the method does not exist or is not available (also used by 2025-11-25 for a
    /// tool whose `taskSupport` does not match the call).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// `-32602`: invalid method parameters (also: unknown task id, terminal task on cancel,
    /// invalid cursor).
    pub const INVALID_PARAMS: i64 = -32602;
    /// `-32603`: internal error.
    pub const INTERNAL_ERROR: i64 = -32603;

    /// An error with any code and no `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// A `-32700` parse error.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(Self::PARSE_ERROR, message)
    }

    /// A `-32600` invalid-request error.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(Self::INVALID_REQUEST, message)
    }

    /// A `-32601` method-not-found error.
    pub fn method_not_found(message: impl Into<String>) -> Self {
        Self::new(Self::METHOD_NOT_FOUND, message)
    }

    /// A `-32602` invalid-params error.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(Self::INVALID_PARAMS, message)
    }

    /// A `-32603` internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Self::INTERNAL_ERROR, message)
    }

    /// The same error with `data` set.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The error object as JSON.
    pub fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("code".to_owned(), Value::from(self.code));
        object.insert("message".to_owned(), Value::String(self.message.clone()));
        if let Some(data) = &self.data {
            object.insert("data".to_owned(), data.clone());
        }
        Value::Object(object)
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for RpcError {}

/// A request: a message with an `id` and a `method`, which expects exactly one response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The id the response must repeat.
    pub id: RequestId,
    /// The method name, such as `tasks/get`.
    pub method: String,
    /// The `params` object, if the message had one (always a JSON object).
    pub params: Option<Value>,
}

/// A notification: a message with a `method` and no `id`, which never gets a response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    /// The method name, such as `notifications/cancelled`.
    pub method: String,
    /// The `params` object, if the message had one (always a JSON object).
    pub params: Option<Value>,
}

/// A response to a request we sent: its `result`, or its `error`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// `Ok(result)` for a result response, `Err(error)` for an error response.
    pub outcome: Result<Value, RpcError>,
}

/// One message read off the wire, classified by its members.
///
/// Exhaustive on purpose: JSON-RPC 2.0 has exactly these three kinds of message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incoming {
    /// Has `id` and `method`.
    Request(Request),
    /// Has `method` and no `id`.
    Notification(Notification),
    /// Has `id` and `result` or `error`, and no `method`.
    Response(Response),
}

/// Why [`parse`] refused a message: the error to send back, and the id to send it to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseFailure {
    /// The message's `id`, whenever it could be read (a string or an integer).
    pub id: Option<RequestId>,
    /// The `-32700` or `-32600` error that explains what was wrong.
    pub error: RpcError,
}

impl ParseFailure {
    /// The error response for this failure, as built by [`error_response`].
    pub fn to_response(&self) -> Value {
        error_response(self.id.as_ref(), &self.error)
    }
}

impl fmt::Display for ParseFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.id {
            Some(id) => write!(f, "{} (message id {id})", self.error),
            None => self.error.fmt(f),
        }
    }
}

impl std::error::Error for ParseFailure {}

/// Reads one JSON-RPC message.
///
/// The rules, in the order they are checked:
/// 1. not JSON → `-32700` "Parse error: …";
/// 2. a JSON array → `-32600` (2025-11-25 has no batches);
/// 3. any other non-object → `-32600`;
/// 4. `id` present but `null` or not a string or integer → `-32600`;
/// 5. `jsonrpc` missing or not `"2.0"` → `-32600`;
/// 6. `method` present but not a string → `-32600`;
/// 7. `params` present but not an object → `-32600` (MCP params are always objects);
/// 8. `id` and `method` → [`Incoming::Request`]; `method` alone → [`Incoming::Notification`];
///    `id` with exactly one of `result` or `error` (a valid error object) →
///    [`Incoming::Response`]; anything else → `-32600`.
///
/// Unknown members are ignored.
///
/// # Errors
/// Returns a [`ParseFailure`] whose `error` says what was wrong and whose `id` is set whenever
/// the message's id could be read, so the caller can answer with
/// [`ParseFailure::to_response`]. Don't answer a failure for a message that had no `method`
/// (a malformed response): two peers could otherwise bounce errors at each other forever.
pub fn parse(text: &str) -> Result<Incoming, ParseFailure> {
    match fast_request(text) {
        Some(request) => Ok(Incoming::Request(request)),
        None => parse_general(text),
    }
}

/// [`parse`], the general way: the message as a `Value`, then each rule in turn.
fn parse_general(text: &str) -> Result<Incoming, ParseFailure> {
    let value: Value = serde_json::from_str(text).map_err(|err| ParseFailure {
        id: None,
        error: RpcError::parse_error(format!("Parse error: {err}")),
    })?;
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => return Err(invalid(None, BATCH_REFUSED)),
        other => {
            let message = format!(
                "a JSON-RPC message must be a JSON object, not {}",
                kind(&other)
            );
            return Err(invalid(None, message));
        }
    };
    let id = read_id(object.remove("id"))?;
    check_version(object.get("jsonrpc")).map_err(|message| invalid(id.clone(), message))?;
    let method = match object.remove("method") {
        None => None,
        Some(Value::String(method)) => Some(method),
        Some(other) => {
            let message = format!("\"method\" must be a string, not {}", kind(&other));
            return Err(invalid(id, message));
        }
    };
    let params = match object.remove("params") {
        None => None,
        Some(params @ Value::Object(_)) => Some(params),
        Some(other) => {
            let message = format!(
                "\"params\" must be an object (MCP params are named), not {}",
                kind(&other)
            );
            return Err(invalid(id, message));
        }
    };
    match (id, method) {
        (Some(id), Some(method)) => Ok(Incoming::Request(Request { id, method, params })),
        (None, Some(method)) => Ok(Incoming::Notification(Notification { method, params })),
        (Some(id), None) => read_response(id, object),
        (None, None) => Err(invalid(
            None,
            "a message needs a \"method\" (request or notification), or an \"id\" with a \
             \"result\" or \"error\" (response)",
        )),
    }
}

/// A well-formed request read straight into its parts, or `None` for anything else (a
/// notification, a response, any message the rules of [`parse`] refuse or read otherwise,
/// duplicate members), which [`parse`] then reads the general way, as a `Value` first.
///
/// Every request a server reads goes through here: the general way builds the message's
/// object, then takes `id`, `method` and `params` out of it; read straight, a request's
/// parse takes 3.8 k instructions instead of 6.6 k (`benches/profile.sh block`,
/// docs/benchmarks/13-thirteenth-round.md). Only an object is tried (a derived
/// struct would also take an array); `params` is an object or absent (`null` refuses); `id`
/// an integer that fits in 64 bits or a string; `jsonrpc` exactly `"2.0"`; other members are
/// ignored, as [`parse`] ignores them. So whatever this returns, [`parse`] would return too.
fn fast_request(text: &str) -> Option<Request> {
    use std::borrow::Cow;

    #[derive(Deserialize)]
    struct Fast<'a> {
        #[serde(borrow)]
        jsonrpc: Cow<'a, str>,
        id: FastId,
        #[serde(borrow)]
        method: Cow<'a, str>,
        #[serde(default, deserialize_with = "object")]
        params: Option<Map<String, Value>>,
    }

    struct FastId(RequestId);

    impl<'de> Deserialize<'de> for FastId {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<FastId, D::Error> {
            struct Visit;
            impl serde::de::Visitor<'_> for Visit {
                type Value = FastId;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a string or an integer that fits in 64 bits")
                }
                fn visit_i64<E: serde::de::Error>(self, id: i64) -> Result<FastId, E> {
                    Ok(FastId(RequestId::Number(id)))
                }
                fn visit_u64<E: serde::de::Error>(self, id: u64) -> Result<FastId, E> {
                    i64::try_from(id).map(|id| FastId(RequestId::Number(id))).map_err(E::custom)
                }
                fn visit_str<E: serde::de::Error>(self, id: &str) -> Result<FastId, E> {
                    Ok(FastId(RequestId::String(id.to_owned())))
                }
                fn visit_string<E: serde::de::Error>(self, id: String) -> Result<FastId, E> {
                    Ok(FastId(RequestId::String(id)))
                }
            }
            deserializer.deserialize_any(Visit)
        }
    }

    fn object<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Map<String, Value>>, D::Error> {
        Map::deserialize(deserializer).map(Some)
    }

    if !text.trim_start_matches([' ', '\t', '\n', '\r']).starts_with('{') {
        return None;
    }
    let fast: Fast<'_> = serde_json::from_str(text).ok()?;
    if fast.jsonrpc != JSONRPC_VERSION {
        return None;
    }
    Some(Request { id: fast.id.0, method: fast.method.into_owned(), params: fast.params.map(Value::Object) })
}

/// A success response: `{"jsonrpc": "2.0", "id": id, "result": result}`.
pub fn response(id: &RequestId, result: Value) -> Value {
    let mut object = envelope();
    object.insert("id".to_owned(), Value::from(id));
    object.insert("result".to_owned(), result);
    Value::Object(object)
}

/// An error response: `{"jsonrpc": "2.0", "id": id, "error": {...}}`.
///
/// When `id` is `None` (the request's id could not be read) the `id` member is left out.
/// JSON-RPC 2.0 would send `"id": null` here, but the official MCP 2025-11-25 schema types
/// `JSONRPCErrorResponse.id` as a string or integer and makes it optional, so `null` would fail
/// validation; leaving it out is what the schema allows.
pub fn error_response(id: Option<&RequestId>, error: &RpcError) -> Value {
    let mut object = envelope();
    if let Some(id) = id {
        object.insert("id".to_owned(), Value::from(id));
    }
    object.insert("error".to_owned(), error.to_value());
    Value::Object(object)
}

/// A request: `{"jsonrpc": "2.0", "id": id, "method": method, "params": params}`.
///
/// `params` is left out when it is `Value::Null` (MCP params are objects or absent).
pub fn request(id: &RequestId, method: &str, params: Value) -> Value {
    let mut object = envelope();
    object.insert("id".to_owned(), Value::from(id));
    object.insert("method".to_owned(), Value::String(method.to_owned()));
    if !params.is_null() {
        object.insert("params".to_owned(), params);
    }
    Value::Object(object)
}

/// A notification: `{"jsonrpc": "2.0", "method": method, "params": params}`.
///
/// `params` is left out when it is `Value::Null` (MCP params are objects or absent).
pub fn notification(method: &str, params: Value) -> Value {
    let mut object = envelope();
    object.insert("method".to_owned(), Value::String(method.to_owned()));
    if !params.is_null() {
        object.insert("params".to_owned(), params);
    }
    Value::Object(object)
}

/// A new message object holding only `"jsonrpc": "2.0"`.
fn envelope() -> Map<String, Value> {
    let mut object = Map::new();
    object.insert(
        "jsonrpc".to_owned(),
        Value::String(JSONRPC_VERSION.to_owned()),
    );
    object
}

/// A `-32600` failure.
fn invalid(id: Option<RequestId>, message: impl Into<String>) -> ParseFailure {
    ParseFailure {
        id,
        error: RpcError::invalid_request(message),
    }
}

/// Reads the `id` member: absent is fine, `null` and other types are not.
fn read_id(id: Option<Value>) -> Result<Option<RequestId>, ParseFailure> {
    let Some(id) = id else { return Ok(None) };
    match id {
        Value::String(string) => Ok(Some(RequestId::String(string))),
        Value::Number(number) => match number.as_i64() {
            Some(number) => Ok(Some(RequestId::Number(number))),
            None => Err(invalid(
                None,
                format!("\"id\" must be a string or an integer that fits in 64 bits, not {number}"),
            )),
        },
        Value::Null => Err(invalid(
            None,
            "\"id\" must be a string or an integer; null is not allowed in MCP",
        )),
        other => Err(invalid(
            None,
            format!(
                "\"id\" must be a string or an integer, not {}",
                kind(&other)
            ),
        )),
    }
}

/// Checks that `jsonrpc` is exactly `"2.0"`, returning the complaint otherwise.
fn check_version(version: Option<&Value>) -> Result<(), String> {
    match version {
        Some(Value::String(version)) if version == JSONRPC_VERSION => Ok(()),
        None => Err("missing \"jsonrpc\": \"2.0\"".to_owned()),
        Some(other) => Err(format!("\"jsonrpc\" must be \"2.0\", not {other}")),
    }
}

/// Reads the rest of a message that has an `id` and no `method`.
fn read_response(id: RequestId, mut object: Map<String, Value>) -> Result<Incoming, ParseFailure> {
    let outcome = match (object.remove("result"), object.remove("error")) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => match serde_json::from_value::<RpcError>(error) {
            Ok(error) => Err(error),
            Err(err) => {
                let message = format!(
                    "\"error\" must be an object with an integer \"code\" and a string \
                     \"message\": {err}"
                );
                return Err(invalid(Some(id), message));
            }
        },
        (Some(_), Some(_)) => {
            let message = "a response must carry either \"result\" or \"error\", not both";
            return Err(invalid(Some(id), message));
        }
        (None, None) => {
            let message = "a message with an \"id\" needs a \"method\" (request) or a \"result\" \
                           or \"error\" (response)";
            return Err(invalid(Some(id), message));
        }
    };
    Ok(Incoming::Response(Response { id, outcome }))
}

/// The JSON type of a value, for error messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn failure(text: &str) -> ParseFailure {
        match parse(text) {
            Ok(incoming) => panic!("expected a failure for {text}, got {incoming:?}"),
            Err(failure) => failure,
        }
    }

    fn assert_invalid(text: &str, id: Option<RequestId>, needle: &str) {
        let failure = failure(text);
        assert_eq!(
            failure.error.code,
            RpcError::INVALID_REQUEST,
            "{text}: {failure}"
        );
        assert_eq!(failure.id, id, "{text}: {failure}");
        assert!(
            failure.error.message.contains(needle),
            "{text}: message {:?} should mention {needle:?}",
            failure.error.message
        );
    }

    #[test]
    fn legacy_parse_not_json_is_32700() {
        for text in ["", "{", "not json", "{\"jsonrpc\":\"2.0\",}", "{} {}"] {
            let failure = failure(text);
            assert_eq!(failure.error.code, RpcError::PARSE_ERROR, "{text}");
            assert_eq!(failure.id, None);
            assert!(
                failure.error.message.starts_with("Parse error: "),
                "{}",
                failure.error
            );
            assert!(failure.error.message.len() > "Parse error: ".len());
        }
    }

    #[test]
    fn legacy_parse_batch_is_32600() {
        let text = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#;
        assert_invalid(
            text,
            None,
            "batch requests are not supported in protocol 2025-11-25",
        );
        assert_eq!(failure("[]").error.message, BATCH_REFUSED);
    }

    #[test]
    fn legacy_parse_non_object_is_32600() {
        for (text, kind) in [
            ("\"ping\"", "a string"),
            ("42", "a number"),
            ("null", "null"),
            ("true", "a boolean"),
        ] {
            assert_invalid(text, None, kind);
        }
    }

    #[test]
    fn legacy_parse_missing_jsonrpc_is_32600_and_keeps_id() {
        assert_invalid(
            r#"{"id":5,"method":"ping"}"#,
            Some(RequestId::Number(5)),
            "jsonrpc",
        );
    }

    #[test]
    fn legacy_parse_wrong_jsonrpc_is_32600_and_keeps_id() {
        for version in ["\"1.0\"", "2.0", "null", "\"2.0 \""] {
            let text = format!(r#"{{"jsonrpc":{version},"id":"a","method":"ping"}}"#);
            assert_invalid(
                &text,
                Some(RequestId::from("a")),
                "\"jsonrpc\" must be \"2.0\"",
            );
        }
    }

    #[test]
    fn legacy_parse_null_id_is_32600() {
        assert_invalid(
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            None,
            "null",
        );
    }

    #[test]
    fn legacy_parse_id_of_wrong_type_is_32600() {
        for id in ["1.5", "true", "[1]", "{\"a\":1}", "18446744073709551615"] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            assert_invalid(&text, None, "\"id\" must be a string or an integer");
        }
    }

    #[test]
    fn legacy_parse_non_string_method_is_32600_and_keeps_id() {
        let text = r#"{"jsonrpc":"2.0","id":9,"method":7}"#;
        assert_invalid(
            text,
            Some(RequestId::Number(9)),
            "\"method\" must be a string",
        );
        assert_invalid(
            r#"{"jsonrpc":"2.0","method":null}"#,
            None,
            "\"method\" must be a string",
        );
    }

    #[test]
    fn legacy_parse_non_object_params_is_32600_and_keeps_id() {
        for params in ["[1,2]", "null", "\"x\"", "3"] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":"r","method":"ping","params":{params}}}"#);
            assert_invalid(
                &text,
                Some(RequestId::from("r")),
                "\"params\" must be an object",
            );
        }
        let text = r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[]}"#;
        assert_invalid(text, None, "\"params\" must be an object");
    }

    #[test]
    fn legacy_parse_id_without_method_result_or_error_is_32600() {
        assert_invalid(
            r#"{"jsonrpc":"2.0","id":3}"#,
            Some(RequestId::Number(3)),
            "\"result\"",
        );
    }

    #[test]
    fn legacy_parse_result_and_error_together_is_32600() {
        let text = r#"{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"m"}}"#;
        assert_invalid(text, Some(RequestId::Number(3)), "not both");
    }

    #[test]
    fn legacy_parse_malformed_error_object_is_32600() {
        for error in [
            "\"boom\"",
            "{\"code\":\"x\",\"message\":\"m\"}",
            "{\"code\":1}",
        ] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":"e","error":{error}}}"#);
            assert_invalid(
                &text,
                Some(RequestId::from("e")),
                "\"error\" must be an object",
            );
        }
    }

    #[test]
    fn legacy_parse_message_without_method_or_id_is_32600() {
        assert_invalid(
            r#"{"jsonrpc":"2.0","result":{}}"#,
            None,
            "needs a \"method\"",
        );
        assert_invalid(
            r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"m"}}"#,
            None,
            "needs a \"method\"",
        );
    }

    #[test]
    fn legacy_parse_request() {
        let text = r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t"}}"#;
        let expected = Request {
            id: RequestId::Number(1),
            method: "tasks/get".to_owned(),
            params: Some(json!({"taskId": "t"})),
        };
        assert_eq!(parse(text), Ok(Incoming::Request(expected)));
        let text = r#"{"jsonrpc":"2.0","id":"x-1","method":"ping","extra":true}"#;
        let expected = Request {
            id: RequestId::from("x-1"),
            method: "ping".to_owned(),
            params: None,
        };
        assert_eq!(parse(text), Ok(Incoming::Request(expected)));
    }

    #[test]
    fn legacy_parse_notification() {
        let text = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let expected = Notification {
            method: "notifications/initialized".to_owned(),
            params: None,
        };
        assert_eq!(parse(text), Ok(Incoming::Notification(expected)));
    }

    #[test]
    fn legacy_parse_result_response() {
        let text = r#"{"jsonrpc":"2.0","id":-4,"result":{}}"#;
        let expected = Response {
            id: RequestId::Number(-4),
            outcome: Ok(json!({})),
        };
        assert_eq!(parse(text), Ok(Incoming::Response(expected)));
    }

    #[test]
    fn legacy_parse_error_response() {
        let text =
            r#"{"jsonrpc":"2.0","id":"q","error":{"code":-32602,"message":"no","data":[1]}}"#;
        let error = RpcError::invalid_params("no").with_data(json!([1]));
        let expected = Response {
            id: RequestId::from("q"),
            outcome: Err(error),
        };
        assert_eq!(parse(text), Ok(Incoming::Response(expected)));
    }

    #[test]
    fn response_and_request_serializers_build_envelopes() {
        let id = RequestId::Number(7);
        assert_eq!(
            response(&id, json!({})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {}})
        );
        assert_eq!(
            request(&RequestId::from("a"), "tasks/list", json!({"cursor": "c"})),
            json!({"jsonrpc": "2.0", "id": "a", "method": "tasks/list", "params": {"cursor": "c"}})
        );
        assert_eq!(
            request(&id, "ping", Value::Null),
            json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        );
        assert_eq!(
            notification("notifications/initialized", Value::Null),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        );
    }

    #[test]
    fn error_response_leaves_out_unknown_id() {
        let error = RpcError::parse_error("Parse error: x");
        assert_eq!(
            error_response(None, &error),
            json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error: x"}})
        );
        let error = RpcError::internal("boom").with_data(json!({"k": 1}));
        assert_eq!(
            error_response(Some(&RequestId::Number(2)), &error),
            json!({"jsonrpc": "2.0", "id": 2,
                   "error": {"code": -32603, "message": "boom", "data": {"k": 1}}})
        );
    }

    /// The quick read of a request agrees with the general one on every text it takes, and
    /// leaves to it every text it does not: arrays, `null` params or ids, floats and ids past
    /// 64 bits, another `jsonrpc`, duplicate members, notifications, responses, bad JSON.
    #[test]
    fn a_request_read_the_quick_way_is_the_one_the_general_way_reads() {
        let taken = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"noop","arguments":{},"task":{"ttl":6}}}"#,
            r#"  {"method":"tasks/get","params":{"taskId":"abc"},"id":"x\"y","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"t\u00e9st","params":{},"extra":[1,2]}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"m","result":{},"params":{"a":{"b":[null,1.5,"c"]},"a2":1}}"#,
        ];
        for text in taken {
            let quick = fast_request(text).unwrap_or_else(|| panic!("taken the quick way: {text}"));
            assert_eq!(Ok(Incoming::Request(quick)), parse_general(text), "{text}");
            assert_eq!(parse(text), parse_general(text), "{text}");
        }
        let left = [
            r#"["2.0",1,"m"]"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#,
            r#"{"id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m"} trailing"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m""#,
            "",
        ];
        for text in left {
            assert_eq!(fast_request(text), None, "{text}");
            assert_eq!(parse(text), parse_general(text), "{text}");
        }
    }

    #[test]
    fn parse_failure_answers_with_its_id() {
        let failure = failure(r#"{"jsonrpc":"1.0","id":11,"method":"ping"}"#);
        let reply = failure.to_response();
        assert_eq!(reply["id"], json!(11));
        assert_eq!(reply["error"]["code"], json!(-32600));
    }

    #[test]
    fn rpc_error_constructors_use_standard_codes() {
        assert_eq!(RpcError::parse_error("m").code, -32700);
        assert_eq!(RpcError::invalid_request("m").code, -32600);
        assert_eq!(RpcError::method_not_found("m").code, -32601);
        assert_eq!(RpcError::invalid_params("m").code, -32602);
        assert_eq!(RpcError::internal("m").code, -32603);
        assert_eq!(
            RpcError::internal("m").to_string(),
            "JSON-RPC error -32603: m"
        );
    }

    #[test]
    fn rpc_error_serde_skips_missing_data() {
        let error = RpcError::method_not_found("nope");
        let json = serde_json::to_value(&error).unwrap();
        assert_eq!(json, json!({"code": -32601, "message": "nope"}));
        assert_eq!(json, error.to_value());
        assert_eq!(serde_json::from_value::<RpcError>(json).unwrap(), error);
    }

    #[test]
    fn request_id_is_a_bare_json_value() {
        assert_eq!(
            serde_json::to_value(RequestId::Number(3)).unwrap(),
            json!(3)
        );
        assert_eq!(
            serde_json::to_value(RequestId::from("s")).unwrap(),
            json!("s")
        );
        assert_eq!(
            serde_json::from_value::<RequestId>(json!("9")).unwrap(),
            RequestId::from("9")
        );
        assert_eq!(RequestId::Number(3).to_string(), "3");
        assert_eq!(RequestId::from("abc").to_string(), "abc");
    }
}
