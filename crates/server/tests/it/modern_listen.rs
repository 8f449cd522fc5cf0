//! 2026-07-28 `subscriptions/listen` over the stdio pipe: the acknowledgement first, with
//! what the server agreed to; every message tagged with the listen request's id;
//! `notifications/tools/list_changed` when the tool set changes (and on a 2025-11-25
//! session too); `notifications/tasks` with the DetailedTask of the requestor's tasks, never
//! another principal's; `-32021` for task ids without the extension. Every message is checked
//! against the 2026-07-28 and tasks extension schemas.

use std::sync::Arc;

use mcp_tasks_engine::{Context, NewTask, Outcome, Principal};
use mcp_tasks_server::{Server, TaskMode, ToolDef, handler_fn};
use mcp_tasks_testkit_server::peer::assert_era_schema;
use mcp_tasks_testkit_server::{Era, TestPeer};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::sqlite_engine;

const TASKS: &str = "io.modelcontextprotocol/tasks";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

fn with(capabilities: Value, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    params
}

fn with_tasks(params: Value) -> Value {
    with(json!({"extensions": {TASKS: {}}}), params)
}

fn echo(name: &str) -> ToolDef {
    ToolDef::new(name, "Echoes", json!({"type": "object"}), handler_fn(|_arguments, _ctx| async move {
        Outcome::Result(json!({"content": [{"type": "text", "text": "echo"}]}))
    }))
}

/// A server with `gate` (required: a task that ends when released) and `echo`.
fn server(release: Arc<Notify>) -> (Server, tempfile::TempDir) {
    let (engine, dir) = sqlite_engine();
    let gate = ToolDef::new("gate", "Waits for the test", json!({"type": "object"}), handler_fn(move |_arguments, ctx: Context| {
        let release = Arc::clone(&release);
        async move {
            tokio::select! {
                () = release.notified() => Outcome::Result(json!({"content": [{"type": "text", "text": "released"}]})),
                () = ctx.cancelled() => Outcome::Result(json!({"content": []})),
            }
        }
    }))
    .task_mode(TaskMode::Required);
    let server = Server::builder(engine).name("listen-test").tool(gate).tool(echo("echo")).build().unwrap();
    (server, dir)
}

/// The next message that is not a response.
async fn notification(peer: &mut TestPeer) -> Value {
    let message = peer.recv().await;
    assert!(message.get("method").is_some(), "a notification, not a response: {message}");
    message
}

#[tokio::test]
async fn modern_listen_acknowledges_first_with_what_it_agreed_to_then_tags_tools_list_changed() {
    let (server, _dir) = server(Arc::new(Notify::new()));
    let tools = server.clone();
    let mut peer = TestPeer::connect(server);
    let filter = json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true});
    let listen = peer.send_request("subscriptions/listen", with(json!({}), json!({"notifications": filter}))).await;
    let ack = notification(&mut peer).await;
    assert_era_schema(Era::Modern, "SubscriptionsAcknowledgedNotification", &ack);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], listen, "{ack}");
    assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}), "no prompts or resources: {ack}");
    tools.tools().insert(echo("echo_two")).unwrap();
    let changed = notification(&mut peer).await;
    assert_era_schema(Era::Modern, "ToolListChangedNotification", &changed);
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_ID], listen, "{changed}");
    // The stream does not stand in the way of other requests.
    let list = peer.result("tools/list", with(json!({}), json!({}))).await;
    assert_eq!(list["tools"].as_array().unwrap().len(), 3);
    assert!(tools.tools().remove("echo_two"));
    let changed = notification(&mut peer).await;
    assert_eq!(changed["method"], "notifications/tools/list_changed", "{changed}");
    // Cancelled by the client: no response comes (the next message answers a later request).
    peer.send_notification("notifications/cancelled", json!({"requestId": listen})).await;
    let (before, _) = peer.request("tools/list", with(json!({}), json!({}))).await;
    assert!(before.iter().all(|message| message["id"] != listen), "{before:?}");
}

#[tokio::test]
async fn modern_listen_task_ids_push_the_detailed_task_of_the_requestors_own_tasks() {
    let release = Arc::new(Notify::new());
    let (server, _dir) = server(Arc::clone(&release));
    let other_server = server.clone();
    let mut peer = TestPeer::connect(server);
    let created = peer.result("tools/call", with_tasks(json!({"name": "gate"}))).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    // Another principal's task is left out exactly like an unknown id.
    let foreign = NewTask {
        trace: None,
        origin: None,
        owner: Principal::new("someone-else"),
        tool: "gate".to_owned(),
        arguments: json!({}),
        requested_ttl_ms: None,
        error_result_fails: false,
        input_kinds: Vec::new(),
    };
    let foreign = other_server.engine().create(foreign).await.unwrap().id.to_string();
    let ids = vec![json!(id), json!("no-such-task"), json!(foreign)];
    let listen = peer.send_request("subscriptions/listen", with_tasks(json!({"notifications": {"taskIds": ids}}))).await;
    let ack = notification(&mut peer).await;
    assert_era_schema(Era::Modern, "SubscriptionsAcknowledgedNotification", &ack);
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": [id]}), "{ack}");
    let now = notification(&mut peer).await;
    assert_era_schema(Era::Modern, "TaskStatusNotification", &now);
    assert_eq!((now["method"].clone(), now["params"]["taskId"].clone()), (json!("notifications/tasks"), json!(id)));
    assert_eq!((now["params"]["status"].clone(), now["params"]["_meta"][SUBSCRIPTION_ID].clone()), (json!("working"), json!(listen)));
    release.notify_one();
    let done = loop {
        let message = notification(&mut peer).await;
        assert_eq!(message["params"]["taskId"], id, "only the agreed task: {message}");
        if message["params"]["status"] != "working" {
            break message;
        }
    };
    assert_era_schema(Era::Modern, "TaskStatusNotification", &done);
    assert_eq!(done["params"]["status"], "completed", "{done}");
    assert_eq!(done["params"]["result"]["content"][0]["text"], "released", "the DetailedTask, result inlined: {done}");
    assert_eq!(done["params"]["_meta"][SUBSCRIPTION_ID], listen);
}

#[tokio::test]
async fn modern_listen_task_ids_without_the_extension_are_32021_and_a_bad_filter_is_32602() {
    let (server, _dir) = server(Arc::new(Notify::new()));
    let mut peer = TestPeer::connect(server);
    let error = peer.error("subscriptions/listen", with(json!({}), json!({"notifications": {"taskIds": ["x"]}}))).await;
    assert_eq!(error["code"], -32021, "{error}");
    assert_eq!(error["data"]["requiredCapabilities"]["extensions"][TASKS], json!({}));
    let error = peer.error("subscriptions/listen", with(json!({}), json!({}))).await;
    assert_eq!(error["code"], -32602, "params.notifications is required: {error}");
    let error = peer.error("subscriptions/listen", with(json!({}), json!({"notifications": {"taskIds": "x"}}))).await;
    assert_eq!(error["code"], -32602, "{error}");
    // The server goes on.
    assert_eq!(peer.result("tools/list", with(json!({}), json!({}))).await["resultType"], "complete");
}

#[tokio::test]
async fn legacy_a_session_is_told_when_the_tool_list_changes() {
    let (server, _dir) = server(Arc::new(Notify::new()));
    let tools = server.clone();
    let mut peer = TestPeer::connect(server);
    let init = peer.initialize(json!({})).await;
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true, "{init}");
    tools.tools().insert(echo("echo_two")).unwrap();
    let changed = peer.until(|message| message["method"] == "notifications/tools/list_changed").await;
    assert!(!changed.is_empty());
    peer.validate();
}
