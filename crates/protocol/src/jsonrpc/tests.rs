//! Tests of the JSON-RPC envelope: parsing, errors, ids, limits.

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
