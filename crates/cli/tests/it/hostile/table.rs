//! The table of bad inputs of the hostile-client tests: where each input goes, the input,
//! and the error it must get.

use serde_json::{Value, json};

use super::UNKNOWN;

/// Where a row's input goes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Via {
    /// The stdio server, its 2025-11-25 session initialized.
    StdioLegacy,
    /// The stdio server, a 2026-07-28 request (`_meta` of a client with tasks).
    StdioModern,
    /// A 2025-11-25 HTTP session of alice (bearer token, session id, protocol version).
    HttpLegacy,
    /// As [`Via::HttpLegacy`], as bob.
    HttpLegacyBob,
    /// A 2026-07-28 HTTP request of alice, with the headers it mirrors.
    HttpModern,
    /// As [`Via::HttpModern`], as bob.
    HttpModernBob,
}

/// A row's input.
pub(super) enum Input {
    /// A raw line (stdio) or body (HTTP POST).
    Raw(String),
    /// A request: method and params (2026-07-28 rows get their `_meta` added).
    Call(&'static str, Value),
    /// A request with headers replaced (an empty value removes the header).
    CallWith(&'static str, Value, Vec<(&'static str, String)>),
    /// A raw body with headers replaced.
    RawWith(String, Vec<(&'static str, String)>),
    /// `GET /mcp` with headers replaced.
    Get(Vec<(&'static str, String)>),
}

/// What a row must get.
pub(super) struct Expect {
    /// The HTTP status (ignored over stdio).
    pub(super) status: u16,
    /// The JSON-RPC error code; `None` when the answer has no JSON-RPC body to check.
    pub(super) code: Option<i64>,
    /// A fragment of the error message (case-insensitive), or the whole message if `exact`.
    pub(super) says: String,
    pub(super) exact: bool,
}

pub(super) struct Row {
    pub(super) name: &'static str,
    pub(super) via: Via,
    pub(super) input: Input,
    pub(super) expect: Expect,
}

pub(super) fn row(name: &'static str, via: Via, input: Input, status: u16, code: i64, says: &str) -> Row {
    Row { name, via, input, expect: Expect { status, code: Some(code), says: says.to_owned(), exact: false } }
}

/// A row answered with an HTTP status and no JSON-RPC body to check beyond `says`, if any.
pub(super) fn status_row(name: &'static str, via: Via, input: Input, status: u16) -> Row {
    Row { name, via, input, expect: Expect { status, code: None, says: String::new(), exact: false } }
}

/// A task id of another principal: exactly the answer of an unknown id (code, status,
/// whole message).
pub(super) fn foreign_row(name: &'static str, via: Via, method: &'static str, id: &str) -> Row {
    let says = format!("Failed to retrieve task: Task not found ({id})");
    Row { name, via, input: Input::Call(method, json!({"taskId": id})), expect: Expect { status: 200, code: Some(-32602), says, exact: true } }
}

pub(super) fn nested(depth: usize) -> String {
    format!(r#"{{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {{"a": {}{}}}}}"#, "[".repeat(depth), "]".repeat(depth))
}

pub(super) fn raw_call(method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": 99, "method": method, "params": params}).to_string()
}

/// The table. `alice_task` is alice's running task (HTTP), `bob_session` a session of bob's,
/// `deleted` a session of alice's that was ended with DELETE.
pub(super) fn table(alice_task: &str, bob_session: &str, deleted: &str) -> Vec<Row> {
    let mut rows = stdio_rows();
    rows.extend(http_rows(bob_session, deleted));
    rows.extend(http_task_rows(alice_task));
    rows
}

/// A header of a row: its name and value.
pub(super) fn h(name: &'static str, value: &str) -> (&'static str, String) {
    (name, value.to_owned())
}

pub(super) fn get_id(id: &str) -> Value {
    json!({"taskId": id})
}

pub(super) fn echo_task(task: Value) -> Value {
    json!({"name": "echo", "arguments": {"text": "x"}, "task": task})
}

/// The rows over stdio, both eras.
pub(super) fn stdio_rows() -> Vec<Row> {
    use Input::{Call, Raw};
    use Via::{StdioLegacy, StdioModern};
    let long_id = "x".repeat(10_000);
    vec![
        // Framing, stdio.
        row("stdio: invalid JSON", StdioLegacy, Raw(r#"{"jsonrpc": "2.0", "id": 1, "method": "#.into()), 0, -32700, "parse error"),
        row("stdio: truncated object", StdioLegacy, Raw(r#"{"jsonrpc": "2.0", "id": 1"#.into()), 0, -32700, "parse error"),
        row("stdio: batch array", StdioLegacy, Raw(r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#.into()), 0, -32600, "batch"),
        row("stdio: a number", StdioLegacy, Raw("42".into()), 0, -32600, "must be a JSON object"),
        row("stdio: null id", StdioLegacy, Raw(r#"{"jsonrpc": "2.0", "id": null, "method": "ping"}"#.into()), 0, -32600, "null is not allowed"),
        row("stdio: nesting 300 deep", StdioLegacy, Raw(nested(300)), 0, -32700, "recursion limit"),
        row("stdio: nesting 100000 deep", StdioLegacy, Raw("[".repeat(100_000)), 0, -32700, "recursion limit"),
        // Lifecycle, stdio.
        row("stdio: double initialize", StdioLegacy, Call("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}})), 0, -32600, "already initialized"),
        // Params, stdio 2025-11-25.
        row("stdio: unknown method", StdioLegacy, Call("tasks/explode", json!({})), 0, -32601, "tasks/explode"),
        row("stdio: tool name not a string", StdioLegacy, Call("tools/call", json!({"name": 5})), 0, -32602, "tools/call"),
        row("stdio: unknown tool", StdioLegacy, Call("tools/call", json!({"name": "no_such_tool"})), 0, -32602, "unknown tool"),
        row("stdio: argument of the wrong type", StdioLegacy, Call("tools/call", json!({"name": "echo", "arguments": {"text": 5}})), 0, -32602, "/text"),
        row("stdio: ttl a string", StdioLegacy, Call("tools/call", echo_task(json!({"ttl": "soon"}))), 0, -32602, "`task`"),
        row("stdio: ttl negative", StdioLegacy, Call("tools/call", echo_task(json!({"ttl": -5}))), 0, -32602, "`task`"),
        row("stdio: ttl 1e30", StdioLegacy, Call("tools/call", echo_task(json!({"ttl": 1e30}))), 0, -32602, "`task`"),
        row("stdio: task not an object", StdioLegacy, Call("tools/call", echo_task(json!([60000]))), 0, -32602, "`task`"),
        row("stdio: tasks/get without taskId", StdioLegacy, Call("tasks/get", json!({})), 0, -32602, "taskId"),
        row("stdio: taskId a number", StdioLegacy, Call("tasks/get", json!({"taskId": 5})), 0, -32602, "expected a string"),
        row("stdio: unknown task id", StdioLegacy, Call("tasks/get", get_id(UNKNOWN)), 0, -32602, "task not found"),
        row("stdio: task id ../", StdioLegacy, Call("tasks/get", get_id("../../etc/passwd")), 0, -32602, "task not found"),
        row("stdio: task id %00", StdioLegacy, Call("tasks/result", get_id("abc%00def")), 0, -32602, "task not found"),
        row("stdio: task id NUL", StdioLegacy, Call("tasks/get", get_id("a\u{0}b")), 0, -32602, "task not found"),
        row("stdio: task id quotes", StdioLegacy, Call("tasks/cancel", get_id(r#"a"b'c`d"#)), 0, -32602, "task not found"),
        row("stdio: task id unicode", StdioLegacy, Call("tasks/get", get_id("タスク😀\u{202e}")), 0, -32602, "task not found"),
        row("stdio: task id 10000 chars", StdioLegacy, Call("tasks/get", get_id(&long_id)), 0, -32602, "task not found"),
        row("stdio: bad cursor", StdioLegacy, Call("tasks/list", json!({"cursor": "!!!!"})), 0, -32602, "invalid cursor"),
        row("stdio: non-ASCII cursor", StdioLegacy, Call("tasks/list", json!({"cursor": "€€€€"})), 0, -32602, "invalid cursor"),
        row("stdio: cursor a number", StdioLegacy, Call("tasks/list", json!({"cursor": 5})), 0, -32602, "tasks/list"),
        // 2026-07-28 over stdio.
        row("stdio modern: _meta without capabilities", StdioModern, Call("tools/call", json!({"name": "echo", "_meta": {"io.modelcontextprotocol/clientCapabilities": null}})), 0, -32602, "clientCapabilities"),
        row("stdio modern: unsupported version", StdioModern, Call("tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}})), 0, -32022, "2099-01-01"),
        row("stdio modern: tasks/get without the extension", StdioModern, Call("tasks/get", json!({"taskId": UNKNOWN, "_meta": {"io.modelcontextprotocol/clientCapabilities": {}}})), 0, -32021, "extension"),
        row("stdio modern: ping is gone", StdioModern, Call("ping", json!({})), 0, -32601, "ping"),
        row("stdio modern: unknown task id", StdioModern, Call("tasks/get", get_id(UNKNOWN)), 0, -32602, "task not found"),
        row("stdio modern: task id ../", StdioModern, Call("tasks/get", get_id("../x")), 0, -32602, "task not found"),
        row("stdio modern: tasks/update unknown id", StdioModern, Call("tasks/update", json!({"taskId": "nope", "inputResponses": {}})), 0, -32602, "task not found"),
        row("stdio modern: tasks/cancel unknown id", StdioModern, Call("tasks/cancel", get_id("nope")), 0, -32602, "task not found"),
        row("stdio modern: unknown tool", StdioModern, Call("tools/call", json!({"name": "nope"})), 0, -32602, "unknown tool"),
    ]
}

/// The rows of HTTP framing, sessions, headers and tokens.
pub(super) fn http_rows(bob_session: &str, deleted: &str) -> Vec<Row> {
    use Input::{CallWith, Get, Raw, RawWith};
    use Via::{HttpLegacy, HttpModern};
    let huge = format!(r#"{{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {{"pad": "{}"}}}}"#, "x".repeat(70 * 1024));
    vec![
        // Framing, HTTP.
        row("http: invalid JSON", HttpLegacy, Raw("{".into()), 400, -32700, "parse error"),
        row("http: batch array", HttpLegacy, Raw(r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#.into()), 400, -32600, "batch"),
        row("http: nesting 300 deep", HttpLegacy, Raw(nested(300)), 400, -32700, "recursion limit"),
        row("http: body over max_body", HttpLegacy, Raw(huge), 413, -32600, "too large"),
        row("http: Content-Type text/plain", HttpLegacy, RawWith(raw_call("ping", &json!({})), vec![h("Content-Type", "text/plain")]), 415, -32600, "application/json"),
        row("http: Accept text/html", HttpLegacy, RawWith(raw_call("ping", &json!({})), vec![h("Accept", "text/html")]), 406, -32600, "not acceptable"),
        row("http: GET without Accept SSE", HttpLegacy, Get(vec![h("Accept", "application/json")]), 406, -32600, "text/event-stream"),
        row("http: Last-Event-ID not ours", HttpLegacy, Get(vec![h("Last-Event-ID", "x-y")]), 400, -32600, "Last-Event-ID"),
        row("http: Last-Event-ID of no stream", HttpLegacy, Get(vec![h("Last-Event-ID", "999-1")]), 404, -32600, "no stream"),
        // Lifecycle, HTTP.
        row("http: no session id", HttpLegacy, RawWith(raw_call("tools/list", &json!({})), vec![h("Mcp-Session-Id", "")]), 400, -32600, "Mcp-Session-Id"),
        row("http: unknown session id", HttpLegacy, RawWith(raw_call("tools/list", &json!({})), vec![h("Mcp-Session-Id", "no-such-session")]), 404, -32600, "no such session"),
        row("http: deleted session", HttpLegacy, RawWith(raw_call("tools/list", &json!({})), vec![h("Mcp-Session-Id", deleted)]), 404, -32600, "no such session"),
        row("http: another principal's session", HttpLegacy, RawWith(raw_call("tools/list", &json!({})), vec![h("Mcp-Session-Id", bob_session)]), 404, -32600, "no such session"),
        row("http: initialize with clientInfo a string", HttpLegacy, RawWith(raw_call("initialize", &json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": "it"})), vec![h("Mcp-Session-Id", "")]), 200, -32602, "`clientInfo`"),
        // Headers, HTTP.
        row("http: MCP-Protocol-Version unknown", HttpLegacy, RawWith(raw_call("ping", &json!({})), vec![h("MCP-Protocol-Version", "1999-01-01")]), 400, -32600, "MCP-Protocol-Version"),
        row("http: foreign Host", HttpLegacy, RawWith(raw_call("ping", &json!({})), vec![h("Host", "evil.example")]), 403, -32600, "Host"),
        row("http: foreign Origin", HttpLegacy, RawWith(raw_call("ping", &json!({})), vec![h("Origin", "https://evil.example")]), 403, -32600, "Origin"),
        row("http: null Origin", HttpLegacy, RawWith(raw_call("ping", &json!({})), vec![h("Origin", "null")]), 403, -32600, "Origin"),
        // Tokens.
        row("http: no bearer token", HttpLegacy, RawWith(raw_call("ping", &json!({})), vec![h("Authorization", "")]), 401, -32600, "Unauthorized"),
        row("http: wrong bearer token", HttpLegacy, RawWith(raw_call("ping", &json!({})), vec![h("Authorization", "Bearer not-a-token")]), 401, -32600, "Unauthorized"),
        row("http: Basic instead of Bearer", HttpLegacy, RawWith(raw_call("ping", &json!({})), vec![h("Authorization", "Basic YWxpY2U6c2VjcmV0")]), 401, -32600, "Unauthorized"),
        row("http: empty bearer", HttpLegacy, RawWith(raw_call("ping", &json!({})), vec![h("Authorization", "Bearer ")]), 401, -32600, "Unauthorized"),
        row("http modern: no bearer token", HttpModern, CallWith("tools/list", json!({}), vec![h("Authorization", "")]), 401, -32600, "Unauthorized"),
    ]
}

/// The rows of HTTP params and task ids, both eras, alice's task asked for by bob among them.
pub(super) fn http_task_rows(alice_task: &str) -> Vec<Row> {
    use Input::{Call, CallWith};
    use Via::{HttpLegacy, HttpLegacyBob, HttpModern, HttpModernBob};
    let modern_echo = json!({"name": "echo", "arguments": {"text": "x"}});
    let mut rows = vec![
        // Params and ids, HTTP 2025-11-25.
        row("http: unknown task id", HttpLegacy, Call("tasks/get", get_id(UNKNOWN)), 200, -32602, "task not found"),
        row("http: task id ../", HttpLegacy, Call("tasks/result", get_id("../../../etc/passwd")), 200, -32602, "task not found"),
        row("http: task id unicode", HttpLegacy, Call("tasks/get", get_id("ü\u{0}😀")), 200, -32602, "task not found"),
        row("http: bad cursor", HttpLegacy, Call("tasks/list", json!({"cursor": "%00"})), 200, -32602, "invalid cursor"),
        row("http: ttl a string", HttpLegacy, Call("tools/call", echo_task(json!({"ttl": "1h"}))), 200, -32602, "`task`"),
        foreign_row("http: alice's task by bob (get)", HttpLegacyBob, "tasks/get", alice_task),
        foreign_row("http: alice's task by bob (result)", HttpLegacyBob, "tasks/result", alice_task),
        foreign_row("http: alice's task by bob (cancel)", HttpLegacyBob, "tasks/cancel", alice_task),
        foreign_row("http: unknown id by bob (the same answer)", HttpLegacyBob, "tasks/get", UNKNOWN),
        // 2026-07-28 over HTTP: mirrored headers.
        row("http modern: Mcp-Method mismatch", HttpModern, CallWith("tools/call", modern_echo.clone(), vec![h("Mcp-Method", "tools/list")]), 400, -32020, "Mcp-Method"),
        row("http modern: Mcp-Method missing", HttpModern, CallWith("tools/call", modern_echo.clone(), vec![h("Mcp-Method", "")]), 400, -32020, "Mcp-Method"),
        row("http modern: MCP-Protocol-Version mismatch", HttpModern, CallWith("tools/call", modern_echo.clone(), vec![h("MCP-Protocol-Version", "2025-11-25")]), 400, -32020, "MCP-Protocol-Version"),
        row("http modern: Mcp-Name mismatch", HttpModern, CallWith("tools/call", modern_echo.clone(), vec![h("Mcp-Name", "other")]), 400, -32020, "Mcp-Name"),
        row("http modern: Mcp-Name missing", HttpModern, CallWith("tools/call", modern_echo.clone(), vec![h("Mcp-Name", "")]), 400, -32020, "Mcp-Name"),
        row("http modern: Mcp-Name bad Base64", HttpModern, CallWith("tools/call", modern_echo.clone(), vec![h("Mcp-Name", "=?base64?!!!?=")]), 400, -32020, "Base64"),
        row("http modern: Mcp-Name vs taskId", HttpModern, CallWith("tasks/get", get_id(UNKNOWN), vec![h("Mcp-Name", "another-id")]), 400, -32020, "Mcp-Name"),
        // 2026-07-28 over HTTP: versions, _meta, methods, ids.
        row("http modern: unsupported version", HttpModern, CallWith("tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}}), vec![h("MCP-Protocol-Version", "2099-01-01")]), 400, -32022, "2099-01-01"),
        row("http modern: _meta without capabilities", HttpModern, Call("tools/list", json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": null}})), 400, -32602, "clientCapabilities"),
        row("http modern: unknown method", HttpModern, Call("tasks/explode", json!({})), 404, -32601, "tasks/explode"),
        row("http modern: task_only called plainly", HttpModern, Call("tools/call", json!({"name": "task_only", "_meta": {"io.modelcontextprotocol/clientCapabilities": {}}})), 400, -32021, ""),
        row("http modern: unknown task id", HttpModern, Call("tasks/get", get_id(UNKNOWN)), 200, -32602, "task not found"),
        row("http modern: task id ../", HttpModern, Call("tasks/get", get_id("..%2F..%2Fetc")), 200, -32602, "task not found"),
        row("http modern: task id quotes", HttpModern, Call("tasks/cancel", get_id("\"'`;--")), 200, -32602, "task not found"),
        foreign_row("http modern: alice's task by bob (get)", HttpModernBob, "tasks/get", alice_task),
        foreign_row("http modern: alice's task by bob (cancel)", HttpModernBob, "tasks/cancel", alice_task),
    ];
    // A `tasks/update` of alice's task by bob: the same answer as an unknown one.
    let mut update = foreign_row("http modern: alice's task by bob (update)", HttpModernBob, "tasks/update", alice_task);
    update.input = Input::Call("tasks/update", json!({"taskId": alice_task, "inputResponses": {}}));
    rows.push(update);
    rows.push(status_row("http: DELETE of an unknown session", HttpLegacy, Input::Get(vec![h(":method", "DELETE"), h("Mcp-Session-Id", "nope")]), 404));
    rows
}
