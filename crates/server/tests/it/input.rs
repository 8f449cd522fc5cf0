//! Input inside a task (2025-11-25 `input_required`): the request survives a client that
//! disconnects, reaches the next session of the same principal, and is answered once.

use serde_json::{Value, json};

use mcp_tasks_engine::{Context, Outcome};
use mcp_tasks_server::{Server, TaskMode, ToolDef, handler_fn};

use mcp_tasks_testkit_server::TestPeer;

use crate::sqlite_engine;

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn server() -> (Server, tempfile::TempDir) {
    let (engine, dir) = sqlite_engine();
    let ask = ToolDef::new(
        "ask",
        "Asks for confirmation, then reports the answer.",
        json!({"type": "object"}),
        handler_fn(|_args: Value, ctx: Context| async move {
            let params = json!({"message": "Go ahead?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}});
            match ctx.elicit(params).await {
                Ok(answer) => Outcome::Result(json!({"content": [{"type": "text", "text": format!("answer: {}", answer["action"])}]})),
                Err(error) => error.into(),
            }
        }),
    )
    .task_mode(TaskMode::Optional);
    (Server::builder(engine).tool(ask).build().unwrap(), dir)
}

fn is_elicitation(message: &Value) -> bool {
    message["method"] == "elicitation/create"
}

async fn elicitation_peer(server: &Server) -> TestPeer {
    let mut peer = TestPeer::connect(server.clone());
    peer.initialize(json!({"elicitation": {}})).await;
    peer
}

#[tokio::test]
async fn legacy_7_an_outstanding_request_reaches_a_new_session_after_a_disconnect() {
    let (server, _dir) = server();
    let mut first = elicitation_peer(&server).await;
    let created = first.result("tools/call", json!({"name": "ask", "task": {}})).await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    first.send_request("tasks/result", json!({"taskId": id})).await;
    let asked = first.until(is_elicitation).await.pop().unwrap();
    assert_eq!(asked["params"]["_meta"][RELATED]["taskId"], id.as_str(), "legacy_34: related-task on the request");
    assert_eq!(asked["params"]["message"], "Go ahead?");
    first.validate();
    drop(first); // gone without answering

    let mut second = elicitation_peer(&server).await;
    assert_eq!(second.result("tasks/get", json!({"taskId": id})).await["status"], "input_required");
    let result_id = second.send_request("tasks/result", json!({"taskId": id})).await;
    let again = second.until(is_elicitation).await.pop().unwrap();
    assert_eq!(again["params"], asked["params"], "the same outstanding request, again");
    second.send_result(&again["id"], json!({"action": "accept", "content": {"ok": true}})).await;
    // The same answer arriving twice is applied once.
    second.send_result(&again["id"], json!({"action": "decline"})).await;
    let response = second.until(|m| m["id"] == result_id && m.get("method").is_none()).await.pop().unwrap();
    assert_eq!(response["result"]["content"][0]["text"], "answer: \"accept\"");
    assert_eq!(second.result("tasks/get", json!({"taskId": id})).await["status"], "completed");
    second.validate();
}

#[tokio::test]
async fn an_answer_from_two_sessions_is_applied_once() {
    let (server, _dir) = server();
    let mut one = elicitation_peer(&server).await;
    let mut two = elicitation_peer(&server).await;
    let created = one.result("tools/call", json!({"name": "ask", "task": {}})).await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let waiting = one.send_request("tasks/result", json!({"taskId": id})).await;
    let to_one = one.until(is_elicitation).await.pop().unwrap();
    two.send_request("tasks/result", json!({"taskId": id})).await;
    let to_two = two.until(is_elicitation).await.pop().unwrap();
    two.send_result(&to_two["id"], json!({"action": "decline"})).await;
    let response = one.until(|m| m["id"] == waiting && m.get("method").is_none()).await.pop().unwrap();
    assert_eq!(response["result"]["content"][0]["text"], "answer: \"decline\"");
    // The late answer of the first session changes nothing.
    one.send_result(&to_one["id"], json!({"action": "accept", "content": {"ok": true}})).await;
    let again = one.result("tasks/result", json!({"taskId": id})).await;
    assert_eq!(again["content"][0]["text"], "answer: \"decline\"");
    one.validate();
    two.validate();
}
