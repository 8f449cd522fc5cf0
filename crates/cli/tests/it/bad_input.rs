//! Bad input: each gets a JSON-RPC error that says what was wrong, and the same process
//! then serves a correct request.

use serde_json::{Value, json};

use crate::harness::{Server, Workdir};

/// The server still answers a correct request after the bad one.
fn still_serves(server: &mut Server) {
    let result = server.call("ping", json!({}));
    assert_eq!(result, json!({}));
}

fn expect_error(message: &Value, code: i64, says: &str) {
    assert_eq!(message["jsonrpc"], "2.0");
    assert_eq!(message["error"]["code"], code, "{message}");
    let text = message["error"]["message"].as_str().unwrap();
    assert!(text.to_lowercase().contains(&says.to_lowercase()), "message {text:?} should say {says:?}");
}

fn ready() -> (Workdir, Server) {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize();
    (work, server)
}

#[test]
fn malformed_json_is_32700_with_null_id() {
    let (_work, mut server) = ready();
    server.send_raw(r#"{"jsonrpc": "2.0", "id": 1, "method": "#);
    let reply = server.recv();
    expect_error(&reply, -32700, "parse error");
    assert_eq!(reply["id"], Value::Null);
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn a_batch_is_32600() {
    let (_work, mut server) = ready();
    server.send_raw(r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#);
    expect_error(&server.recv(), -32600, "batch");
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn a_non_object_message_is_32600() {
    let (_work, mut server) = ready();
    server.send_raw("42");
    expect_error(&server.recv(), -32600, "must be a JSON object, not a number");
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn an_unknown_method_is_32601() {
    let (_work, mut server) = ready();
    let reply = server.request("tasks/explode", json!({}));
    expect_error(&reply, -32601, "tasks/explode");
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn wrong_params_are_32602_naming_the_problem() {
    let (_work, mut server) = ready();
    let reply = server.request("tools/call", json!({"name": 5}));
    expect_error(&reply, -32602, "tools/call");
    let reply = server.request("tasks/get", json!({}));
    expect_error(&reply, -32602, "taskId");
    let reply = server.request("tools/call", json!({"name": "no_such_tool"}));
    expect_error(&reply, -32602, "unknown tool");
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn legacy_76_an_unknown_task_id_is_32602() {
    let (_work, mut server) = ready();
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let reply = server.request(method, json!({"taskId": "0123456789abcdef0123456789abcdef"}));
        expect_error(&reply, -32602, "task not found");
    }
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn legacy_9_a_task_on_a_forbidden_tool_is_32601() {
    let (_work, mut server) = ready();
    let reply = server.request("tools/call", json!({"name": "plain_only", "task": {}}));
    expect_error(&reply, -32601, "taskSupport: 'forbidden'");
    assert!(server.call("tasks/list", json!({}))["tasks"].as_array().unwrap().is_empty(), "no task created");
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn legacy_12_a_plain_call_to_a_required_tool_is_32601() {
    let (_work, mut server) = ready();
    let reply = server.request("tools/call", json!({"name": "task_only"}));
    expect_error(&reply, -32601, "requires task augmentation");
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn a_request_before_initialize_is_refused_then_initialize_works() {
    let work = Workdir::new();
    let mut server = work.start();
    let reply = server.request("tools/list", json!({}));
    expect_error(&reply, -32600, "initialize");
    // ping is allowed before initialization.
    still_serves(&mut server);
    let init = server.initialize();
    assert_eq!(init["protocolVersion"], "2025-11-25");
    let reply = server.request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}));
    expect_error(&reply, -32600, "already initialized");
    server.call("tools/list", json!({}));
    server.validate_received();
}

#[test]
fn a_malformed_response_from_the_client_is_not_answered() {
    let (_work, mut server) = ready();
    server.send_raw(r#"{"jsonrpc": "2.0", "error": {"code": -32600, "message": "no id"}}"#);
    let ping = server.send_request("ping", json!({}));
    let first = server.recv();
    assert_eq!(first["id"], ping, "no error bounced back for a response: {first}");
    server.validate_received();
}

#[test]
fn a_non_ascii_tasks_list_cursor_is_32602_invalid_cursor_and_the_server_goes_on() {
    let (_work, mut server) = ready();
    for cursor in ["é", "éé", "€€€€"] {
        let reply = server.request("tasks/list", json!({"cursor": cursor}));
        expect_error(&reply, -32602, "invalid cursor");
    }
    still_serves(&mut server);
    server.validate_received();
}

/// Messages with a readable id that are not valid JSON-RPC, and what their error says.
pub(crate) const INVALID_ENVELOPES: [(&str, &str); 4] = [
    (r#"{"id": 7, "method": "ping"}"#, r#"missing "jsonrpc": "2.0""#),
    (r#"{"jsonrpc": "1.0", "id": 7, "method": "ping"}"#, r#""jsonrpc" must be "2.0""#),
    (r#"{"jsonrpc": "2.0", "id": 7, "method": 5}"#, r#""method" must be a string"#),
    (r#"{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": [1]}"#, r#""params" must be an object"#),
];

#[test]
fn an_invalid_envelope_with_a_readable_id_is_32600_to_that_id_naming_the_problem() {
    let (_work, mut server) = ready();
    for (text, says) in INVALID_ENVELOPES {
        server.send_raw(text);
        let reply = server.recv();
        expect_error(&reply, -32600, says);
        assert_eq!(reply["id"], 7, "{text}");
    }
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn object_typed_params_given_as_arrays_or_scalars_are_32602_naming_the_field_and_create_no_task() {
    let (_work, mut server) = ready();
    for wrong in [json!([]), json!([60000]), json!(5), json!("x"), json!(true)] {
        for (params, field) in [
            (json!({"name": "echo", "task": wrong}), "`task`"),
            (json!({"name": "echo", "arguments": wrong}), "`arguments`"),
            (json!({"name": "echo", "_meta": wrong}), "`_meta`"),
        ] {
            expect_error(&server.request("tools/call", params), -32602, field);
        }
        let params = json!({"taskId": "0123456789abcdef0123456789abcdef", "_meta": wrong});
        expect_error(&server.request("tasks/get", params), -32602, "`_meta`");
    }
    assert!(server.call("tasks/list", json!({}))["tasks"].as_array().unwrap().is_empty(), "no task created");
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn initialize_with_client_info_or_capabilities_that_are_not_objects_is_32602_naming_the_field() {
    let work = Workdir::new();
    let mut server = work.start();
    let client = json!({"name": "it", "version": "0"});
    for (capabilities, client_info, field) in [
        (json!({}), json!(["it", null, "0"]), "`clientInfo`"),
        (json!({}), json!("it"), "`clientInfo`"),
        (json!([]), client.clone(), "`capabilities`"),
        (json!(true), client.clone(), "`capabilities`"),
    ] {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": client_info});
        expect_error(&server.request("initialize", params), -32602, field);
    }
    // None of them initialized the session.
    server.initialize();
    server.call("tools/list", json!({}));
    server.validate_received();
}

#[test]
fn invalid_utf8_inside_a_string_is_32700_not_valid_utf8_and_the_server_goes_on() {
    let (_work, mut server) = ready();
    for bad in [&b"\xff"[..], b"\xc3(", b"\xed\xa0\x80", b"caf\xe9"] {
        let mut line = br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": ""#.to_vec();
        line.extend_from_slice(bad);
        line.extend_from_slice(br#""}}}"#);
        server.send_bytes(&line);
        let reply = server.recv();
        expect_error(&reply, -32700, "not valid UTF-8");
        assert_eq!(reply["id"], Value::Null, "the id of a message that is not text is not read: {reply}");
    }
    still_serves(&mut server);
    server.validate_received();
}

#[test]
fn a_tools_list_cursor_is_32602_since_the_one_page_of_tools_issues_none() {
    let (_work, mut server) = ready();
    assert!(server.call("tools/list", json!({})).get("nextCursor").is_none(), "one page: no cursor issued");
    for cursor in ["abc", "", "é", "3a"] {
        expect_error(&server.request("tools/list", json!({"cursor": cursor})), -32602, "invalid cursor for tools/list");
    }
    expect_error(&server.request("tools/list", json!({"cursor": 5})), -32602, "tools/list");
    still_serves(&mut server);
    server.validate_received();
}
