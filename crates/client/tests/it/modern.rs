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
use mcp_tasks_testkit_server::peer::assert_era_schema;
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

/// The fake of [`modern_an_input_request_answered_before_a_restart_of_the_host_is_not_asked_again`]:
/// a task that shows the input request `confirm` on every poll until `release` polls after
/// the answer, as a server slow to apply it would.
struct Slow {
    gets: usize,
    updates: usize,
    gets_after_update: usize,
}

fn slow_server(state: Arc<Mutex<Slow>>) -> impl FnMut(&Value) -> Option<Value> + Send + 'static {
    let discover = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
                          "resultType": "complete", "ttlMs": 0, "cacheScope": "public"});
    move |message| match message["method"].as_str() {
        Some("server/discover") => Some(discover.clone()),
        Some("tools/list") => Some(json!({"tools": [{"name": "slow", "inputSchema": {"type": "object"}}], "resultType": "complete"})),
        Some("tools/call") => Some({
            let mut created = task("working");
            created["resultType"] = json!("task");
            created
        }),
        Some("tasks/get") => {
            let mut state = state.lock().unwrap();
            state.gets += 1;
            if state.updates > 0 {
                state.gets_after_update += 1;
            }
            let mut shown = if state.gets_after_update < 20 { task("input_required") } else { task("completed") };
            if state.gets_after_update < 20 {
                shown["inputRequests"] = json!({"confirm": {"method": "elicitation/create",
                    "params": {"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}}});
            } else {
                shown["result"] = json!({"content": [{"type": "text", "text": "done"}], "resultType": "complete"});
            }
            shown["resultType"] = json!("complete");
            Some(shown)
        }
        Some("tasks/update") => {
            state.lock().unwrap().updates += 1;
            Some(json!({"resultType": "complete"}))
        }
        _ => None,
    }
}

#[tokio::test]
async fn modern_an_input_request_answered_before_a_restart_of_the_host_is_not_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = mcp_tasks_client::ledger::Ledger::open(&dir.path().join("ledger.sqlite3")).unwrap();
    let endpoint = mcp_tasks_client::ledger::Endpoint::Command("fake".into());
    let state = Arc::new(Mutex::new(Slow { gets: 0, updates: 0, gets_after_update: 0 }));
    let (first_builder, first_asked) = accepting();
    let (first, _) = scripted(first_builder, slow_server(Arc::clone(&state))).await;
    let first = first.unwrap();
    let Called::Task(handle) = bounded(first.call("slow", json!({}))).await.unwrap() else { panic!("a task") };
    let handle = handle.remembering(ledger.clone(), endpoint.clone());
    let waiting = tokio::spawn(async move { handle.wait().await });
    // The host "crashes" right after its answer went out: the wait and the client go.
    bounded(async {
        while state.lock().unwrap().updates == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    waiting.abort();
    drop(first);
    assert_eq!(first_asked.lock().unwrap().len(), 1);
    // A new host process, same ledger: the key shown again is not asked or answered again.
    let (second_builder, second_asked) = accepting();
    let (second, _) = scripted(second_builder, slow_server(Arc::clone(&state))).await;
    let second = second.unwrap();
    let result = bounded(second.task("t-1").remembering(ledger, endpoint).wait()).await.unwrap();
    assert_eq!(first_text(&result.content), "done");
    assert!(second_asked.lock().unwrap().is_empty(), "asked again after the restart");
    assert_eq!(state.lock().unwrap().updates, 1, "one tasks/update in all");
}

/// A TCP relay to `target` that notifies `polled` once the answer to the first `tasks/get`
/// has passed back to the client: from then on the client's wait is in its pause.
async fn relay_watching_polls(target: String, polled: Arc<tokio::sync::Notify>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let (target, polled, seen) = (target.clone(), Arc::clone(&polled), Arc::clone(&seen));
            tokio::spawn(async move {
                let Ok(outbound) = tokio::net::TcpStream::connect(&target).await else { return };
                let (mut client_in, mut client_out) = inbound.into_split();
                let (mut server_in, mut server_out) = outbound.into_split();
                let (mut up, mut down) = ([0u8; 16384], [0u8; 16384]);
                let mut asked = false;
                loop {
                    tokio::select! {
                        read = client_in.read(&mut up) => {
                            let Ok(n @ 1..) = read else { return };
                            asked |= String::from_utf8_lossy(&up[..n]).contains("\"tasks/get\"");
                            if server_out.write_all(&up[..n]).await.is_err() { return }
                        }
                        read = server_in.read(&mut down) => {
                            let Ok(n @ 1..) = read else { return };
                            if client_out.write_all(&down[..n]).await.is_err() { return }
                            if asked && !seen.swap(true, std::sync::atomic::Ordering::SeqCst) {
                                polled.notify_one();
                            }
                        }
                    }
                }
            });
        }
    });
    url
}

#[tokio::test]
async fn modern_wait_is_told_of_the_end_by_subscriptions_listen_long_before_the_next_poll() {
    use mcp_tasks_engine::{Context, Engine, Outcome, Policy, SystemClock};
    use mcp_tasks_server::{Server, TaskMode, ToolDef, handler_fn};
    // Polls every 60 s: a wait that ends within the test's 20 s bound, though the task ends
    // only after the wait's first poll, was woken by a notifications/tasks of its listen
    // stream.
    let dir = tempfile::tempdir().unwrap();
    let store = mcp_tasks_sqlite::SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
    let policy = Policy { poll_interval_ms: 60_000, ..Policy::default() };
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), policy);
    let gate = Arc::new(tokio::sync::Notify::new());
    let opened = Arc::clone(&gate);
    let gated = ToolDef::new("gated", "Waits for the test", json!({"type": "object"}), handler_fn(move |_args: Value, _ctx: Context| {
        let opened = Arc::clone(&opened);
        async move {
            opened.notified().await;
            Outcome::Result(json!({"content": [{"type": "text", "text": "through"}]}))
        }
    }))
    .task_mode(TaskMode::Required);
    let server = Server::builder(engine).tool(gated).build().unwrap();
    let served = mcp_tasks_testkit_server::TestServer::http(server).await.unwrap();
    let target = served.addr().unwrap().to_string();
    let polled = Arc::new(tokio::sync::Notify::new());
    let url = relay_watching_polls(target, Arc::clone(&polled)).await;
    let client = bounded(Client::builder().connect_http(&url)).await.unwrap();
    let Called::Task(task) = bounded(client.call("gated", json!({}))).await.unwrap() else { panic!("a task") };
    assert_eq!(task.last_seen().unwrap().poll_interval_ms, Some(60_000));
    let waiting = tokio::spawn(async move { task.wait().await });
    bounded(polled.notified()).await;
    gate.notify_one();
    let result = bounded(waiting).await.unwrap().unwrap();
    assert_eq!(first_text(&result.content), "through");
}

#[tokio::test]
async fn modern_the_questions_of_a_task_that_can_be_answered_are_sent_even_when_another_cannot() {
    // The task asks an elicitation (a handler answers it) and a sampling (no handler): the
    // elicitation's answer is sent, then the wait ends saying what could not be answered.
    let discover = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
                          "resultType": "complete"});
    let (builder, asked) = accepting();
    let (client, seen) = scripted(builder, move |message| match message["method"].as_str() {
        Some("server/discover") => Some(discover.clone()),
        Some("tools/list") => Some(json!({"tools": [{"name": "both", "inputSchema": {"type": "object"}}], "resultType": "complete"})),
        Some("tools/call") => Some({
            let mut created = task("working");
            created["resultType"] = json!("task");
            created
        }),
        Some("tasks/get") => Some({
            let mut shown = task("input_required");
            shown["inputRequests"] = json!({
                "confirm": {"method": "elicitation/create", "params": {"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}},
                "draft": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
            });
            shown["resultType"] = json!("complete");
            shown
        }),
        Some("tasks/update") => Some(json!({"resultType": "complete"})),
        _ => None,
    })
    .await;
    let client = client.unwrap();
    let Called::Task(handle) = bounded(client.call("both", json!({}))).await.unwrap() else { panic!("a task") };
    let ended = bounded(handle.wait()).await.unwrap_err();
    assert!(matches!(&ended, ClientError::InputUnanswered { method, .. } if method == "sampling/createMessage"), "{ended}");
    assert_eq!(asked.lock().unwrap().len(), 1);
    let sent = seen.lock().unwrap().clone();
    let updates: Vec<&Value> = sent.iter().filter(|m| m["method"] == "tasks/update").collect();
    assert_eq!(updates.len(), 1, "{updates:?}");
    let keys: Vec<&String> = updates[0]["params"]["inputResponses"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["confirm"], "only the answered question");
}

/// SEP-3392 revision_06, the client side: a server that offers the tasks extension in a
/// revision this client does not know does not get tasks: the call is made without the
/// extension (answered inline), and a task asked for is refused, saying why. Without a
/// `revision` (the initial one, revision_05) the same server gets them.
#[tokio::test]
async fn revision_06_a_server_offering_an_unknown_tasks_revision_gets_no_tasks_from_this_client() {
    for (settings, offered) in [(json!({"revision": "99"}), false), (json!({"revision": 2}), false), (json!({}), true)] {
        let discover = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": settings}},
                              "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
                              "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}});
        let tools = json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}], "resultType": "complete"});
        let (client, seen) = scripted(Client::builder(), move |message| match message["method"].as_str() {
            Some("server/discover") => Some(discover.clone()),
            Some("tools/list") => Some(tools.clone()),
            Some("tools/call") => Some(json!({"content": [{"type": "text", "text": "inline"}], "resultType": "complete"})),
            _ => None,
        })
        .await;
        let client = client.unwrap();
        assert_eq!(client.server_runs_tool_tasks(), offered, "{settings}");
        let called = client.call("echo", json!({})).await.unwrap();
        assert!(matches!(called, Called::Result(_)), "{called:?}");
        let call = seen.lock().unwrap().iter().rev().find(|m| m["method"] == "tools/call").cloned().unwrap();
        let declared = call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_some();
        assert_eq!(declared, offered, "the extension is declared only to a revision this client knows: {call}");
        if !offered {
            let refused = client.call_tool_as_task("echo", json!({}), None).await.unwrap_err();
            assert!(matches!(refused, ClientError::TasksUnsupported { .. }), "{refused}");
        }
    }
}
