//! The interactive example's tools (`examples/interactive/tools.rs`, the server of the
//! `interactive` example, mirroring the TypeScript SDK's `simpleTaskInteractive`) driven over
//! a pipe the way the SDK's example client drives them: the task asks the client through
//! `elicitation/create` or `sampling/createMessage` while the client waits in `tasks/result`
//! (2025-11-25 tasks, `input_required`), and the answer comes back to the tool. Every message
//! is checked against the schema.

use serde_json::{Value, json};

use mcp_tasks_testkit_server::{TestPeer, peer::assert_schema};

use crate::sqlite_engine;

#[path = "../../examples/interactive/tools.rs"]
mod tools;

const RELATED: &str = "io.modelcontextprotocol/related-task";
const STATUS: &str = "notifications/tasks/status";

/// The example server, initialized by a client that declares `capabilities`.
async fn start(capabilities: Value) -> (TestPeer, Value, tempfile::TempDir) {
    let (engine, dir) = sqlite_engine();
    let mut peer = TestPeer::connect(tools::server(engine).unwrap());
    let response = peer.initialize(capabilities).await;
    (peer, response, dir)
}

/// A client that can answer both kinds of question, as the SDK's example client declares.
async fn start_interactive() -> (TestPeer, tempfile::TempDir) {
    let (peer, _, dir) = start(json!({"elicitation": {"form": {}}, "sampling": {}})).await;
    (peer, dir)
}

/// Calls tool `name` as a task (`ttl` as the example client sends it); returns the task id.
async fn create(peer: &mut TestPeer, name: &str, arguments: Value) -> String {
    let params = json!({"name": name, "arguments": arguments, "task": {"ttl": 60000}});
    let created = peer.result("tools/call", params).await;
    assert_schema("CreateTaskResult", &created);
    assert_eq!(created["task"]["status"], "working", "{created}");
    created["task"]["taskId"].as_str().unwrap().to_owned()
}

/// Calls `tasks/result` for `id` and receives until the server asks `method`; returns the
/// id of the waiting `tasks/result` and the server's request.
async fn asked(peer: &mut TestPeer, id: &str, method: &str) -> (i64, Value) {
    let waiting = peer.send_request("tasks/result", json!({"taskId": id})).await;
    let request = peer.until(|message| message["method"] == method || message["id"] == waiting).await.pop().unwrap();
    assert_eq!(request["method"], method, "expected {method} before the result: {request}");
    assert_eq!(request["params"]["_meta"][RELATED]["taskId"], id, "related-task metadata: {request}");
    (waiting, request)
}

/// Receives until the response to request `id`; returns its `result`.
async fn response(peer: &mut TestPeer, id: i64) -> Value {
    let response = peer.until(|message| message["id"] == id && message.get("method").is_none()).await.pop().unwrap();
    assert!(response.get("error").is_none(), "tasks/result failed: {response}");
    response["result"].clone()
}

/// Waits for the status notification of task `id` with `status` (it may have come already:
/// the notification and the `tasks/result` response race).
async fn status_notified(peer: &mut TestPeer, id: &str, status: &str) {
    let is_it = |message: &Value| {
        message["method"] == STATUS && message["params"]["taskId"] == id && message["params"]["status"] == status
    };
    if !peer.seen.iter().any(is_it) {
        peer.until(is_it).await;
    }
}

/// The statuses task `id` went through as the client saw them: `working` (the
/// `CreateTaskResult`), then each `notifications/tasks/status` for it, in order and
/// schema-checked. Repeats in a row count once: a status message change repeats the status,
/// and the notification of the creation itself may come or not (it races `watch`).
fn statuses(peer: &TestPeer, id: &str) -> Vec<String> {
    let mut statuses = vec!["working".to_owned()];
    for message in peer.seen.iter().filter(|message| message["method"] == STATUS && message["params"]["taskId"] == id) {
        assert_schema("TaskStatusNotification", message);
        let status = message["params"]["status"].as_str().unwrap();
        if statuses.last().is_none_or(|last| last != status) {
            statuses.push(status.to_owned());
        }
    }
    statuses
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn the_tools_mirror_the_typescript_example_and_must_run_as_tasks() {
    let (mut peer, response, _dir) = start(json!({})).await;
    assert_eq!(response["result"]["serverInfo"], json!({"name": tools::SERVER_NAME, "version": "1.0.0"}));
    assert!(response["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(), "{response}");
    let listed = peer.result("tools/list", json!({})).await;
    assert_schema("ListToolsResult", &listed);
    assert_eq!(
        listed["tools"],
        json!([
            {
                "name": "confirm_delete",
                "description": "Asks for confirmation before deleting (demonstrates elicitation)",
                "inputSchema": {"type": "object", "properties": {"filename": {"type": "string"}}},
                "execution": {"taskSupport": "required"}
            },
            {
                "name": "write_haiku",
                "description": "Asks LLM to write a haiku (demonstrates sampling)",
                "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}}},
                "execution": {"taskSupport": "required"}
            }
        ])
    );
    let error = peer.error("tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "a"}})).await;
    assert_eq!(error["code"], -32601, "a plain call to a task-only tool: {error}");
    peer.validate();
}

#[tokio::test]
async fn confirm_delete_asks_through_elicitation_and_deletes_once_confirmed() {
    let (mut peer, _dir) = start_interactive().await;
    let id = create(&mut peer, "confirm_delete", json!({"filename": "important.txt"})).await;
    let (waiting, request) = asked(&mut peer, &id, "elicitation/create").await;
    let params = &request["params"];
    assert_eq!(params["message"], "Are you sure you want to delete 'important.txt'?");
    assert_eq!(params["mode"], "form");
    assert_eq!(
        params["requestedSchema"],
        json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]})
    );
    let task = peer.result("tasks/get", json!({"taskId": id})).await;
    assert_schema("GetTaskResult", &task);
    assert_eq!(task["status"], "input_required", "{task}");

    peer.send_result(&request["id"], json!({"action": "accept", "content": {"confirm": true}})).await;
    let result = response(&mut peer, waiting).await;
    assert_schema("CallToolResult", &result);
    assert_eq!(text(&result), "Deleted 'important.txt'");
    assert_eq!(result["_meta"][RELATED]["taskId"], id.as_str());
    assert!(result.get("isError").is_none(), "{result}");
    status_notified(&mut peer, &id, "completed").await;
    assert_eq!(statuses(&peer, &id), ["working", "input_required", "working", "completed"]);
    peer.validate();
}

#[tokio::test]
async fn a_decline_a_cancel_or_an_unconfirmed_accept_reaches_the_tool_and_nothing_is_deleted() {
    let (mut peer, _dir) = start_interactive().await;
    let answers = [
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
        json!({"action": "accept", "content": {"confirm": false}}),
    ];
    for answer in answers {
        let id = create(&mut peer, "confirm_delete", json!({"filename": "keep.txt"})).await;
        let (waiting, request) = asked(&mut peer, &id, "elicitation/create").await;
        peer.send_result(&request["id"], answer.clone()).await;
        let result = response(&mut peer, waiting).await;
        assert_schema("CallToolResult", &result);
        assert_eq!(text(&result), "Deletion cancelled", "after {answer}");
        let task = peer.result("tasks/get", json!({"taskId": id})).await;
        assert_eq!(task["status"], "completed", "a declined question is an answer, not a failure: {task}");
    }
    peer.validate();
}

#[tokio::test]
async fn write_haiku_asks_the_clients_model_and_returns_its_text() {
    let (mut peer, _dir) = start_interactive().await;
    let id = create(&mut peer, "write_haiku", json!({"topic": "autumn leaves"})).await;
    let (waiting, request) = asked(&mut peer, &id, "sampling/createMessage").await;
    let params = &request["params"];
    assert_eq!(
        params["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Write a haiku about autumn leaves"}}])
    );
    assert_eq!(params["maxTokens"], 50);
    let haiku = "Cherry blossoms fall\nSoftly on the quiet pond\nSpring whispers goodbye";
    let answer = json!({"model": "mock-haiku-model", "role": "assistant", "content": {"type": "text", "text": haiku}});
    assert_schema("CreateMessageResult", &answer);
    peer.send_result(&request["id"], answer).await;
    let result = response(&mut peer, waiting).await;
    assert_schema("CallToolResult", &result);
    assert_eq!(text(&result), format!("Haiku:\n{haiku}"));
    status_notified(&mut peer, &id, "completed").await;
    assert_eq!(statuses(&peer, &id), ["working", "input_required", "working", "completed"]);
    peer.validate();
}

#[tokio::test]
async fn a_client_without_the_capability_gets_a_failed_task_not_a_hang() {
    // Sampling only: confirm_delete cannot ask. Elicitation only: write_haiku cannot ask.
    let cases = [
        (json!({"sampling": {}}), "confirm_delete", json!({"filename": "important.txt"}), "elicitation/create"),
        (json!({"elicitation": {}}), "write_haiku", json!({"topic": "autumn leaves"}), "sampling/createMessage"),
        (json!({}), "confirm_delete", json!({}), "elicitation/create"),
    ];
    for (capabilities, tool, arguments, method) in cases {
        let (mut peer, _, _dir) = start(capabilities.clone()).await;
        let id = create(&mut peer, tool, arguments).await;
        let result = peer.result("tasks/result", json!({"taskId": id})).await;
        assert_schema("CallToolResult", &result);
        assert_eq!(result["isError"], true, "{result}");
        assert!(text(&result).starts_with("Error: ") && text(&result).contains(method), "{result}");
        assert!(text(&result).contains("did not declare"), "{result}");
        let task = peer.result("tasks/get", json!({"taskId": id})).await;
        assert_schema("GetTaskResult", &task);
        assert_eq!(task["status"], "failed", "{task}");
        let message = task["statusMessage"].as_str().unwrap();
        assert!(message.contains(method) && message.contains("capability"), "{capabilities}: {message}");
        assert!(!peer.seen.iter().any(|message| message["method"] == method), "{method} sent anyway");
        status_notified(&mut peer, &id, "failed").await;
        assert_eq!(statuses(&peer, &id), ["working", "failed"], "{capabilities}: never input_required");
        peer.validate();
    }
}
