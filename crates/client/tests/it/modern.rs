//! The client in 2026-07-28 (with the tasks extension), against our server and against
//! wire-level fakes: the era picked by `server/discover` (and the fallback to `initialize`),
//! plain calls and their Multi Round-Trip rounds, the server deciding tasks, `tasks/get`
//! polling to the inlined result, cancel, each input request answered once however many
//! polls show it, and no `tasks/list` in this era. What the client sends is checked against
//! the 2026-07-28 schema.

use std::sync::{Arc, Mutex};

use mcp_tasks_client::protocol::Content;
use mcp_tasks_client::{Called, Client, ClientBuilder, ClientError, Era, TaskMode, TaskStatus};
use mcp_tasks_server::stdio;
use mcp_tasks_testkit::peer::assert_era_schema;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::harness::{Accept, bounded, build, start};

fn first_text(content: &[Content]) -> String {
    match content.first() {
        Some(Content::Text { text, .. }) => text.clone(),
        other => panic!("not a text content: {other:?}"),
    }
}

fn accepting() -> (ClientBuilder, Arc<Mutex<Vec<mcp_tasks_client::ServerRequest>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    (Client::builder().elicitation(Accept { seen: Arc::clone(&seen) }), seen)
}

#[tokio::test]
async fn modern_auto_speaks_2026_07_28_to_a_server_that_serves_it() {
    let server = start().await;
    let client = bounded(Client::builder().connect_http(&server.url)).await.unwrap();
    let info = client.server();
    assert_eq!((info.era, client.era()), (Era::Modern, Era::Modern));
    assert!(info.runs_tool_tasks && info.cancels_tasks && !info.lists_tasks, "{info:?}");
    let tools = bounded(client.list_tools()).await.unwrap();
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    assert_eq!(echo.task_mode, TaskMode::Optional, "the server decides: read as optional");
    let listed = serde_json::to_value(echo).unwrap();
    assert!(listed.get("execution").is_none(), "serialized as listed, without execution: {listed}");
    let refused = bounded(client.list_tasks()).await.unwrap_err();
    assert!(matches!(refused, ClientError::NotInEra { what: "tasks/list", .. }), "{refused}");
}

#[tokio::test]
async fn modern_a_plain_call_and_one_that_asks_are_answered_with_rounds_by_the_handler() {
    let server = start().await;
    let (builder, seen) = accepting();
    let client = bounded(builder.era(Era::Modern).connect_http(&server.url)).await.unwrap();
    let result = bounded(client.call_tool("plain_echo", json!({"text": "hi"}))).await.unwrap();
    assert_eq!(first_text(&result.content), "echo: hi");
    let result = bounded(client.call_tool("ask", json!({}))).await.unwrap();
    assert_eq!(first_text(&result.content), r#"answer: "accept" {"ok":true}"#);
    let asked = seen.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "one round, one question: {asked:?}");
    assert_eq!((asked[0].method.as_str(), asked[0].params["message"].clone()), ("elicitation/create", json!("Go ahead?")));
}

#[tokio::test]
async fn modern_the_server_decides_a_slow_call_is_a_task_polled_to_its_result_a_quick_one_is_answered_inline() {
    let server = start().await;
    let client = bounded(Client::builder().connect_http(&server.url)).await.unwrap();
    match bounded(client.call("echo", json!({"text": "now"}))).await.unwrap() {
        Called::Result(result) => assert_eq!(first_text(&result.content), "echo: now"),
        Called::Task(task) => panic!("a quick call ends within the inline wait: {task:?}"),
    }
    let inline = bounded(client.call_tool_as_task("echo", json!({"text": "now"}), None)).await.unwrap_err();
    match inline {
        ClientError::AnsweredInline { result, .. } => assert_eq!(first_text(&result.content), "echo: now"),
        other => panic!("{other}"),
    }
    let Called::Task(task) = bounded(client.call("gated", json!({}))).await.unwrap() else {
        panic!("gated runs past the inline wait");
    };
    assert_eq!(task.last_seen().unwrap().status, TaskStatus::Working);
    assert_eq!((task.era(), client.task(task.id()).era()), (Era::Modern, Era::Modern), "handles say their era");
    server.gate.notify_one();
    let result = bounded(task.wait()).await.unwrap();
    assert_eq!(first_text(&result.content), "through");
    assert_eq!(bounded(task.status()).await.unwrap().status, TaskStatus::Completed);
    // The same task through a handle made from its id.
    assert_eq!(bounded(client.task(task.id()).status()).await.unwrap().status, TaskStatus::Completed);
}

#[tokio::test]
async fn modern_cancel_is_acknowledged_and_polled_until_the_task_is_cancelled() {
    let server = start().await;
    let client = bounded(Client::builder().era(Era::Modern).connect_http(&server.url)).await.unwrap();
    let task = bounded(client.call_tool_as_task("block", json!({}), None)).await.unwrap();
    let cancelled = bounded(task.cancel()).await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    let waited = bounded(task.wait()).await.unwrap_err();
    assert!(matches!(waited, ClientError::TaskCancelled { .. }), "{waited}");
    // Cancelling again is acknowledged: the task stays cancelled.
    assert_eq!(bounded(task.cancel()).await.unwrap().status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn modern_over_stdio_too_and_an_unknown_task_is_an_rpc_error() {
    let (server, _dir, gate, _runs) = build();
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let _served = tokio::spawn(stdio::serve(BufReader::new(server_read), server_write, server));
    let (client_read, client_write) = tokio::io::split(client_end);
    let client = bounded(Client::builder().connect_stdio(client_read, client_write)).await.unwrap();
    assert_eq!(client.era(), Era::Modern);
    let Called::Task(task) = bounded(client.call("gated", json!({}))).await.unwrap() else { panic!("a task") };
    gate.notify_one();
    assert_eq!(first_text(&bounded(task.wait()).await.unwrap().content), "through");
    let unknown = bounded(client.task("no-such-task").status()).await.unwrap_err();
    assert!(matches!(unknown, ClientError::Rpc { code: -32602, .. }), "{unknown}");
}

/// A wire-level server over a duplex: answers the client's messages with `script`, which
/// gets each message and returns the answer (or `None` for a notification); records them.
async fn scripted(
    builder: ClientBuilder,
    mut script: impl FnMut(&Value) -> Option<Value> + Send + 'static,
) -> (Result<Client, ClientError>, Arc<Mutex<Vec<Value>>>) {
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, mut server_write) = tokio::io::split(server_end);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        let mut lines = BufReader::new(server_read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let message: Value = serde_json::from_str(&line).unwrap();
            record.lock().unwrap().push(message.clone());
            if let Some(answer) = script(&message) {
                let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": answer});
                let reply = if answer.get("error").is_some() {
                    json!({"jsonrpc": "2.0", "id": message["id"], "error": answer["error"]})
                } else {
                    reply
                };
                let mut text = reply.to_string();
                text.push('\n');
                if server_write.write_all(text.as_bytes()).await.is_err() {
                    return;
                }
            }
        }
    });
    let (client_read, client_write) = tokio::io::split(client_end);
    (bounded(builder.connect_stdio(client_read, client_write)).await, seen)
}

fn task(status: &str) -> Value {
    json!({"taskId": "t-1", "status": status, "createdAt": "2026-12-01T00:00:00Z",
           "lastUpdatedAt": "2026-12-01T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 1})
}

#[tokio::test]
async fn modern_auto_falls_back_to_initialize_when_server_discover_is_refused() {
    let (client, seen) = scripted(Client::builder(), |message| match message["method"].as_str() {
        Some("server/discover") => Some(json!({"error": {"code": -32601, "message": "Method not found"}})),
        Some("initialize") => Some(json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                           "serverInfo": {"name": "legacy-only", "version": "1"}})),
        _ => None,
    })
    .await;
    let client = client.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    let methods: Vec<String> = seen.lock().unwrap().iter().map(|m| m["method"].as_str().unwrap_or("").to_owned()).collect();
    assert_eq!(methods[..2], ["server/discover", "initialize"], "{methods:?}");
    // Pinned to 2026-07-28, the same server is refused with what to do.
    let (pinned, _) = scripted(Client::builder().era(Era::Modern), |message| match message["method"].as_str() {
        Some("server/discover") => Some(json!({"error": {"code": -32601, "message": "Method not found"}})),
        _ => None,
    })
    .await;
    let refused = pinned.unwrap_err();
    assert!(refused.to_string().contains("does not serve MCP 2026-07-28"), "{refused}");
}

#[tokio::test]
async fn modern_an_input_request_shown_on_ten_polls_is_answered_once() {
    let polls = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&polls);
    let (builder, asked) = accepting();
    let discover = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
                          "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
                          "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}});
    let tools = json!({"tools": [{"name": "slow", "inputSchema": {"type": "object"}}], "resultType": "complete"});
    let (client, seen) = scripted(builder, move |message| match message["method"].as_str() {
        Some("server/discover") => Some(discover.clone()),
        Some("tools/list") => Some(tools.clone()),
        Some("tools/call") => {
            let mut created = task("working");
            created["resultType"] = json!("task");
            Some(created)
        }
        Some("tasks/get") => {
            let mut n = counted.lock().unwrap();
            *n += 1;
            let mut shown = if *n <= 10 { task("input_required") } else { task("completed") };
            if *n <= 10 {
                shown["inputRequests"] = json!({"confirm": {"method": "elicitation/create",
                    "params": {"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}}});
            } else {
                shown["result"] = json!({"content": [{"type": "text", "text": "done"}], "resultType": "complete"});
            }
            shown["resultType"] = json!("complete");
            Some(shown)
        }
        Some("tasks/update") => Some(json!({"resultType": "complete"})),
        _ => None,
    })
    .await;
    let client = client.unwrap();
    let Called::Task(handle) = bounded(client.call("slow", json!({}))).await.unwrap() else { panic!("a task") };
    let result = bounded(handle.wait()).await.unwrap();
    assert_eq!(first_text(&result.content), "done");
    assert_eq!(*polls.lock().unwrap(), 11);
    assert_eq!(asked.lock().unwrap().len(), 1, "the handler was asked once");
    let sent = seen.lock().unwrap().clone();
    let updates: Vec<&Value> = sent.iter().filter(|m| m["method"] == "tasks/update").collect();
    assert_eq!(updates.len(), 1, "one tasks/update for one key: {updates:?}");
    assert_eq!(updates[0]["params"]["inputResponses"]["confirm"]["action"], "accept");
    // Everything the client sent is a 2026-07-28 request with its _meta.
    for message in &sent {
        assert_era_schema(Era::Modern, "JSONRPCRequest", message);
        assert_eq!(message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28", "{message}");
    }
    let call = sent.iter().find(|m| m["method"] == "tools/call").unwrap();
    assert_era_schema(Era::Modern, "CallToolRequest", call);
    assert_eq!(call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"], json!({"io.modelcontextprotocol/tasks": {}}));
    assert_era_schema(Era::Modern, "UpdateTaskRequest", updates[0]);
}
