//! Golden wire tests for MCP 2025-11-25: every fixture in `tests/fixtures/legacy/` (one whole
//! JSON-RPC message per file, written from the spec's examples) must
//! 1. parse with [`jsonrpc::parse`],
//! 2. survive a round trip through its typed `params` / `result` struct and the envelope
//!    serializers unchanged (compared as `serde_json::Value`),
//! 3. validate against the official schema: as a `JSONRPCMessage`, as its specific message
//!    definition, and its payload as its specific `params` / `result` definition.
//!
//! Schema checks are skipped (with a message) when the official schemas are absent, except on
//! CI. Further tests check that values built in Rust, not read from fixtures, are schema-valid.

use std::fs;
use std::path::{Path, PathBuf};

use mcp_tasks_protocol::jsonrpc::{self, Incoming, RequestId, Response, RpcError};
use mcp_tasks_protocol::legacy::{
    CallToolParams, CancelTaskResult, CreateTaskResult, GetTaskResult, InitializeParams,
    InitializeResult, ListTasksResult, ListToolsResult, PROTOCOL_VERSION, ServerCapabilities,
    ServerTasksCapability, Task, TaskIdParams, TaskStatus, TaskStatusNotificationParams,
    TaskSupport, Tool, ToolExecution, ToolsCapability, method, related_task_meta,
};
use mcp_tasks_protocol::mcp::{
    CallToolResult, CancelledNotificationParams, Content, Implementation, PaginatedParams,
    ProgressNotificationParams,
};
use mcp_tasks_testkit::schema::{schemas_available_or_skip, validate_legacy};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Reads a payload into its typed struct and writes it back.
type Retype = fn(&Value) -> Value;

/// Declares one test per fixture, plus the list of covered fixture files.
macro_rules! goldens {
    ($(
        $test:ident: $file:literal => $retype:expr, $message_def:literal, [$($def:literal),*];
    )*) => {
        $(
            #[test]
            fn $test() {
                check_golden($file, $retype, $message_def, &[$($def),*]);
            }
        )*
        /// Every fixture file that has a test above.
        const GOLDEN_FILES: &[&str] = &[$($file),*];
    };
}

goldens! {
    golden_initialize_request: "initialize-request.json"
        => typed::<InitializeParams>, "InitializeRequest", ["InitializeRequestParams"];
    golden_initialize_response: "initialize-response.json"
        => typed::<InitializeResult>, "JSONRPCResultResponse", ["InitializeResult"];
    golden_initialized_notification: "initialized-notification.json"
        => untyped, "InitializedNotification", [];
    golden_ping_request: "ping-request.json"
        => untyped, "PingRequest", [];
    golden_tools_list_request: "tools-list-request.json"
        => typed::<PaginatedParams>, "ListToolsRequest", ["PaginatedRequestParams"];
    golden_tools_list_response: "tools-list-response.json"
        => typed::<ListToolsResult>, "JSONRPCResultResponse", ["ListToolsResult"];
    golden_tools_call_task_request: "tools-call-task-request.json"
        => typed::<CallToolParams>, "CallToolRequest",
           ["CallToolRequestParams", "TaskAugmentedRequestParams"];
    golden_tools_call_create_task_response: "tools-call-create-task-response.json"
        => typed::<CreateTaskResult>, "JSONRPCResultResponse", ["CreateTaskResult"];
    golden_tools_call_create_task_response_immediate:
        "tools-call-create-task-response-immediate.json"
        => typed::<CreateTaskResult>, "JSONRPCResultResponse", ["CreateTaskResult"];
    golden_tools_call_result_is_error: "tools-call-result-is-error.json"
        => typed::<CallToolResult>, "JSONRPCResultResponse", ["CallToolResult"];
    golden_tasks_get_request: "tasks-get-request.json"
        => typed::<TaskIdParams>, "GetTaskRequest", [];
    golden_tasks_get_response: "tasks-get-response.json"
        => typed::<GetTaskResult>, "JSONRPCResultResponse", ["GetTaskResult", "Task"];
    golden_tasks_get_response_ttl_null: "tasks-get-response-ttl-null.json"
        => typed::<GetTaskResult>, "JSONRPCResultResponse", ["GetTaskResult", "Task"];
    golden_tasks_get_error_response: "tasks-get-error-response.json"
        => typed::<RpcError>, "JSONRPCErrorResponse", ["Error"];
    golden_tasks_result_request: "tasks-result-request.json"
        => typed::<TaskIdParams>, "GetTaskPayloadRequest", [];
    golden_tasks_result_response: "tasks-result-response.json"
        => typed::<CallToolResult>, "JSONRPCResultResponse",
           ["GetTaskPayloadResult", "CallToolResult"];
    golden_tasks_list_request: "tasks-list-request.json"
        => typed::<PaginatedParams>, "ListTasksRequest", ["PaginatedRequestParams"];
    golden_tasks_list_response: "tasks-list-response.json"
        => typed::<ListTasksResult>, "JSONRPCResultResponse", ["ListTasksResult"];
    golden_tasks_cancel_request: "tasks-cancel-request.json"
        => typed::<TaskIdParams>, "CancelTaskRequest", [];
    golden_tasks_cancel_response: "tasks-cancel-response.json"
        => typed::<CancelTaskResult>, "JSONRPCResultResponse", ["CancelTaskResult", "Task"];
    golden_notification_tasks_status: "notification-tasks-status.json"
        => typed::<TaskStatusNotificationParams>, "TaskStatusNotification",
           ["TaskStatusNotificationParams"];
    golden_notification_progress: "notification-progress.json"
        => typed::<ProgressNotificationParams>, "ProgressNotification",
           ["ProgressNotificationParams"];
    golden_notification_cancelled: "notification-cancelled.json"
        => typed::<CancelledNotificationParams>, "CancelledNotification",
           ["CancelledNotificationParams"];
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/legacy")
}

/// Deserializes `payload` as `T` and serializes it back.
fn typed<T: DeserializeOwned + Serialize>(payload: &Value) -> Value {
    let value: T = serde_json::from_value(payload.clone()).unwrap_or_else(|err| {
        panic!(
            "cannot read {} as {}: {err}",
            payload,
            std::any::type_name::<T>()
        )
    });
    serde_json::to_value(&value).expect("typed payload serializes")
}

/// For messages whose payload has no type in this crate (`ping`, `notifications/initialized`).
fn untyped(payload: &Value) -> Value {
    payload.clone()
}

/// Fails with every schema error of `value` against `def`, when the schemas are available.
fn assert_schema(def: &str, value: &Value, what: &str) {
    if let Err(errors) = validate_legacy(def, value) {
        panic!("{what}: {errors}\n{}", pretty(value));
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON prints")
}

fn check_golden(file: &str, retype: Retype, message_def: &str, payload_defs: &[&str]) {
    let text = fs::read_to_string(fixtures_dir().join(file)).expect("fixture is readable");
    let original: Value = serde_json::from_str(&text).expect("fixture is JSON");
    let incoming = jsonrpc::parse(&text).unwrap_or_else(|failure| panic!("{file}: {failure}"));
    let (rebuilt, payload) = match incoming {
        Incoming::Request(request) => {
            let params = request.params.as_ref().map_or(Value::Null, retype);
            (
                jsonrpc::request(&request.id, &request.method, params),
                request.params,
            )
        }
        Incoming::Notification(notification) => {
            let params = notification.params.as_ref().map_or(Value::Null, retype);
            (
                jsonrpc::notification(&notification.method, params),
                notification.params,
            )
        }
        Incoming::Response(Response {
            id,
            outcome: Ok(result),
        }) => (jsonrpc::response(&id, retype(&result)), Some(result)),
        Incoming::Response(Response {
            id,
            outcome: Err(error),
        }) => {
            let error: RpcError =
                serde_json::from_value(retype(&error.to_value())).expect("error object reads back");
            (
                jsonrpc::error_response(Some(&id), &error),
                Some(error.to_value()),
            )
        }
    };
    assert_eq!(
        rebuilt,
        original,
        "{file}: the round trip changed the message; got\n{}",
        pretty(&rebuilt)
    );
    if !schemas_available_or_skip() {
        return;
    }
    assert_schema("JSONRPCMessage", &original, file);
    assert_schema(message_def, &original, file);
    for def in payload_defs {
        let payload = payload
            .as_ref()
            .expect("a message with a payload definition has a payload");
        assert_schema(def, payload, &format!("{file} payload"));
    }
}

#[test]
fn every_fixture_has_a_golden_test() {
    let mut files: Vec<String> = fs::read_dir(fixtures_dir())
        .expect("fixtures directory exists")
        .map(|entry| {
            entry
                .expect("directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    let mut covered: Vec<String> = GOLDEN_FILES.iter().map(|file| (*file).to_owned()).collect();
    covered.sort();
    assert_eq!(
        files, covered,
        "add a `goldens!` line for each fixture file"
    );
}

#[test]
fn fixtures_read_as_the_expected_values() {
    let read = |file: &str| -> Value {
        let text = fs::read_to_string(fixtures_dir().join(file)).expect("fixture is readable");
        serde_json::from_str(&text).expect("fixture is JSON")
    };
    let tools: ListToolsResult =
        serde_json::from_value(read("tools-list-response.json")["result"].clone()).unwrap();
    let support: Vec<TaskSupport> = tools.tools.iter().map(Tool::task_support).collect();
    assert_eq!(
        support,
        [
            TaskSupport::Optional,
            TaskSupport::Required,
            TaskSupport::Forbidden,
            TaskSupport::Forbidden
        ]
    );

    let call: CallToolParams =
        serde_json::from_value(read("tools-call-task-request.json")["params"].clone()).unwrap();
    assert_eq!(call.task.and_then(|task| task.ttl), Some(60_000));
    assert!(call.meta.and_then(|meta| meta.progress_token).is_some());

    let task: GetTaskResult =
        serde_json::from_value(read("tasks-get-response-ttl-null.json")["result"].clone()).unwrap();
    assert_eq!(
        (task.status, task.ttl, task.poll_interval),
        (TaskStatus::Failed, None, None)
    );

    let result: CallToolResult =
        serde_json::from_value(read("tasks-result-response.json")["result"].clone()).unwrap();
    let meta = result.meta.expect("tasks/result carries _meta");
    let related = mcp_tasks_protocol::legacy::RelatedTaskMetadata::from_meta(&meta)
        .expect("related-task _meta");
    assert_eq!(related.task_id, "786512e2-9e0d-44bd-8f29-789f320fe840");
}

fn sample_task(ttl: Option<u64>) -> Task {
    Task {
        task_id: "0f3c9a4e5b6d7e8f9a0b1c2d3e4f5a6b".to_owned(),
        status: TaskStatus::Working,
        status_message: None,
        created_at: "2025-11-25T10:30:00Z".to_owned(),
        last_updated_at: "2025-11-25T10:30:00Z".to_owned(),
        ttl,
        poll_interval: Some(1000),
    }
}

#[test]
fn built_task_results_match_schema() {
    if !schemas_available_or_skip() {
        return;
    }
    for ttl in [None, Some(60_000)] {
        let task = serde_json::to_value(sample_task(ttl)).unwrap();
        assert_eq!(task["ttl"], ttl.map_or(Value::Null, Value::from));
        assert_schema("Task", &task, "task");
        assert_schema("GetTaskResult", &task, "tasks/get result");
        assert_schema("CancelTaskResult", &task, "tasks/cancel result");
        let notification = jsonrpc::notification(method::NOTIFY_TASK_STATUS, task);
        assert_schema(
            "TaskStatusNotification",
            &notification,
            "status notification",
        );
    }
    let created = CreateTaskResult {
        task: sample_task(None),
        meta: None,
    };
    let message = jsonrpc::response(
        &RequestId::Number(1),
        serde_json::to_value(created).unwrap(),
    );
    assert_schema("CreateTaskResult", &message["result"], "CreateTaskResult");
    assert_schema("JSONRPCMessage", &message, "CreateTaskResult message");
    let list = ListTasksResult {
        tasks: vec![sample_task(None)],
        next_cursor: None,
    };
    assert_schema(
        "ListTasksResult",
        &serde_json::to_value(list).unwrap(),
        "ListTasksResult",
    );
}

#[test]
fn schema_requires_the_ttl_key() {
    if !schemas_available_or_skip() {
        return;
    }
    let mut task = serde_json::to_value(sample_task(None)).unwrap();
    task.as_object_mut().unwrap().remove("ttl");
    let errors = validate_legacy("Task", &task).expect_err("a Task without ttl is invalid");
    assert!(errors.contains("ttl"), "{errors}");
}

#[test]
fn built_initialize_and_tool_results_match_schema() {
    if !schemas_available_or_skip() {
        return;
    }
    let initialize = InitializeResult {
        protocol_version: PROTOCOL_VERSION.to_owned(),
        capabilities: ServerCapabilities {
            tools: Some(ToolsCapability {
                list_changed: Some(false),
            }),
            tasks: Some(ServerTasksCapability::full()),
            ..ServerCapabilities::default()
        },
        server_info: Implementation::new("mcp-tasks", "0.1.0"),
        instructions: None,
    };
    let initialize = serde_json::to_value(initialize).unwrap();
    assert_eq!(
        initialize["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    assert_schema("InitializeResult", &initialize, "InitializeResult");

    let mut tool = Tool::new("render", json!({"type": "object"}));
    tool.execution = Some(ToolExecution {
        task_support: Some(TaskSupport::Required),
    });
    let tools = ListToolsResult {
        tools: vec![tool],
        next_cursor: Some("c2".to_owned()),
    };
    assert_schema(
        "ListToolsResult",
        &serde_json::to_value(tools).unwrap(),
        "ListToolsResult",
    );

    let result = CallToolResult {
        content: vec![Content::text("done")],
        meta: Some(related_task_meta("0f3c")),
        ..CallToolResult::default()
    };
    let result = serde_json::to_value(result).unwrap();
    assert_schema("CallToolResult", &result, "CallToolResult");
    assert_schema("GetTaskPayloadResult", &result, "tasks/result result");
}

#[test]
fn capability_flags_must_be_objects_not_booleans() {
    if !schemas_available_or_skip() {
        return;
    }
    let flags_as_booleans = json!({"tasks": {"list": true, "requests": {"tools": {"call": true}}}});
    assert!(validate_legacy("ServerCapabilities", &flags_as_booleans).is_err());
}

#[test]
fn error_responses_match_schema_and_omit_unknown_ids() {
    if !schemas_available_or_skip() {
        return;
    }
    for text in [
        "not json",
        "[]",
        "7",
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
    ] {
        let failure = jsonrpc::parse(text).expect_err("malformed");
        let reply = failure.to_response();
        assert_eq!(reply.get("id"), None, "{text}");
        assert_schema("JSONRPCErrorResponse", &reply, text);
        assert_schema("JSONRPCMessage", &reply, text);
    }
    let failure = jsonrpc::parse(r#"{"jsonrpc":"2.0","id":"k","method":"x","params":[]}"#)
        .expect_err("array params");
    let reply = failure.to_response();
    assert_eq!(reply["id"], json!("k"));
    assert_schema("JSONRPCErrorResponse", &reply, "array params");

    // JSON-RPC 2.0 would answer with `"id": null`; the MCP schema does not allow it.
    let with_null_id =
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
    assert!(validate_legacy("JSONRPCErrorResponse", &with_null_id).is_err());
}
