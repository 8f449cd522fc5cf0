//! Client-hosted tasks: a peer playing the server over an in-memory duplex sends
//! `elicitation/create` and `sampling/createMessage` with `params.task`, then drives the
//! tasks the client hosts with `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`.
//! Every message the client sends is checked against the official 2025-11-25 schema.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_client::{Client, ClientBuilder, ElicitationHandler, RpcError, SamplingHandler, ServerRequest};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};
use tokio::sync::{Notify, watch};

use crate::harness::bounded;

/// The server's side of the pipe: sends requests, reads and validates what the client sends.
struct Peer {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    next_id: i64,
    /// For each request sent: the schema definition its `result` must fit.
    expected: HashMap<i64, &'static str>,
    /// Notifications the client sent, in order.
    notifications: Vec<Value>,
}

impl Peer {
    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    /// The client's next message, checked against the schema.
    async fn recv(&mut self) -> Value {
        let line = bounded(self.lines.next_line()).await.unwrap().expect("the client closed the pipe");
        let message: Value = serde_json::from_str(&line).unwrap();
        assert_schema("JSONRPCMessage", &message);
        match message["method"].as_str() {
            Some("initialize") => assert_schema("InitializeRequest", &message),
            Some("notifications/initialized") => assert_schema("InitializedNotification", &message),
            Some("notifications/tasks/status") => assert_schema("TaskStatusNotification", &message),
            Some(other) => panic!("the client sent an unexpected {other}: {message}"),
            None => {
                let id = message["id"].as_i64().unwrap();
                let def = self.expected.remove(&id).expect("a response to a request of ours");
                if message.get("error").is_some() {
                    assert_schema("JSONRPCErrorResponse", &message);
                } else {
                    assert_schema(def, &message["result"]);
                }
            }
        }
        message
    }

    /// Sends a request whose result must fit `def`; returns its id.
    async fn ask(&mut self, method: &str, params: Value, def: &'static str) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.expected.insert(id, def);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        id
    }

    /// Waits for the response to request `id` (notifications on the way are kept).
    async fn response(&mut self, id: i64) -> Value {
        loop {
            let message = self.recv().await;
            if message.get("method").is_some() {
                self.notifications.push(message);
                continue;
            }
            assert_eq!(message["id"], id, "responses arrive in the order asked here: {message}");
            return message;
        }
    }

    async fn result(&mut self, method: &str, params: Value, def: &'static str) -> Value {
        let id = self.ask(method, params, def).await;
        let response = self.response(id).await;
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    async fn error(&mut self, method: &str, params: Value) -> Value {
        let id = self.ask(method, params, "JSONRPCErrorResponse").await;
        let response = self.response(id).await;
        assert!(response.get("result").is_none(), "{method} should fail: {response}");
        response["error"].clone()
    }

    /// Sends a task-augmented `elicitation/create` with `message`; returns the task.
    async fn elicit_as_task(&mut self, message: &str, ttl: u64) -> Value {
        let params = json!({
            "message": message,
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
            "task": {"ttl": ttl},
        });
        let created = self.result("elicitation/create", params, "CreateTaskResult").await;
        created["task"].clone()
    }

    async fn status(&mut self, id: &str) -> Value {
        self.result("tasks/get", json!({"taskId": id}), "GetTaskResult").await
    }
}

fn assert_schema(def: &str, value: &Value) {
    if mcp_tasks_testkit_server::schema::schemas_available_or_skip()
        && let Err(errors) = mcp_tasks_testkit_server::schema::validate_legacy(def, value)
    {
        panic!("{errors}\nin {value}");
    }
}

/// Connects `builder` to a [`Peer`] (the handshake done, the `initialize` params returned).
async fn connect(builder: ClientBuilder) -> (Client, Peer, Value) {
    let (client_end, peer_end) = tokio::io::duplex(256 * 1024);
    let (client_read, client_write) = tokio::io::split(client_end);
    let (peer_read, peer_write) = tokio::io::split(peer_end);
    let connecting = tokio::spawn(builder.connect_stdio(client_read, client_write));
    let mut peer = Peer {
        lines: BufReader::new(peer_read).lines(),
        writer: peer_write,
        next_id: 1,
        expected: HashMap::new(),
        notifications: Vec::new(),
    };
    let initialize = peer.recv().await;
    assert_eq!(initialize["method"], "initialize");
    let answer = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "serverInfo": {"name": "wire-peer", "version": "0"},
    });
    peer.send(json!({"jsonrpc": "2.0", "id": initialize["id"], "result": answer})).await;
    assert_eq!(peer.recv().await["method"], "notifications/initialized");
    let client = bounded(connecting).await.unwrap().unwrap();
    (client, peer, initialize["params"].clone())
}

/// Turns its flag `true` when dropped: shows that a handler's future was dropped (aborted).
struct DropFlag(Arc<watch::Sender<bool>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

/// Acts on the elicitation's message: `wait` answers once `release` is notified, `forever`
/// never answers, `fail` answers a JSON-RPC error, anything else is accepted at once.
///
/// What it saw is kept in watch channels, so a test waits for it as an event.
#[derive(Clone)]
struct Scripted {
    release: Arc<Notify>,
    /// Turns `true` when a `forever` handler's future is dropped.
    aborted: Arc<watch::Sender<bool>>,
    /// How many times the handler has been called.
    calls: Arc<watch::Sender<usize>>,
}

impl Default for Scripted {
    fn default() -> Scripted {
        Scripted {
            release: Arc::default(),
            aborted: Arc::new(watch::Sender::new(false)),
            calls: Arc::new(watch::Sender::new(0)),
        }
    }
}

impl Scripted {
    /// How many times the handler has been called so far.
    fn calls(&self) -> usize {
        *self.calls.borrow()
    }

    /// Whether a `forever` handler's future has been dropped yet.
    fn was_aborted(&self) -> bool {
        *self.aborted.borrow()
    }

    /// Waits until the handler has been called at least once.
    async fn called(&self) {
        bounded(self.calls.subscribe().wait_for(|calls| *calls > 0)).await.unwrap();
    }

    /// Waits until a `forever` handler's future has been dropped.
    async fn aborted(&self) {
        bounded(self.aborted.subscribe().wait_for(|aborted| *aborted)).await.unwrap();
    }
}

#[async_trait]
impl ElicitationHandler for Scripted {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, RpcError> {
        self.calls.send_modify(|calls| *calls += 1);
        match request.params["message"].as_str() {
            Some("wait") => self.release.notified().await,
            Some("forever") => {
                let _flag = DropFlag(Arc::clone(&self.aborted));
                std::future::pending::<()>().await;
            }
            Some("fail") => return Err(RpcError::new(-32001, "the user is away").with_data(json!({"retry": false}))),
            _ => {}
        }
        Ok(json!({"action": "accept", "content": {"ok": true}}))
    }
}

struct Model;

#[async_trait]
impl SamplingHandler for Model {
    async fn create_message(&self, request: ServerRequest) -> Result<Value, RpcError> {
        let text = request.params["messages"][0]["content"]["text"].as_str().unwrap_or("").to_uppercase();
        Ok(json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "upper-1"}))
    }
}

fn related_task(result: &Value) -> &Value {
    &result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
}

#[tokio::test]
async fn legacy_2_the_client_declares_task_support_only_for_the_requests_it_has_handlers_for() {
    let (_client, _peer, params) = connect(crate::harness::legacy().elicitation(Scripted::default())).await;
    let capabilities = &params["capabilities"];
    assert_eq!(
        capabilities["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"elicitation": {"create": {}}}}),
        "{capabilities}"
    );
    let (_client, _peer, params) =
        connect(crate::harness::legacy().elicitation(Scripted::default()).sampling(Model)).await;
    assert_eq!(params["capabilities"]["tasks"]["requests"], json!({"elicitation": {"create": {}}, "sampling": {"createMessage": {}}}));

    let (_client, mut peer, params) = connect(crate::harness::legacy()).await;
    assert!(params["capabilities"].get("tasks").is_none(), "{params}");
    let refused = peer.error("tasks/get", json!({"taskId": "0123"})).await;
    assert_eq!(refused["code"], -32601, "no task support declared: {refused}");
}

#[tokio::test]
async fn legacy_13_an_elicitation_without_params_task_is_answered_plainly() {
    let handler = Scripted::default();
    let (_client, mut peer, _) = connect(crate::harness::legacy().elicitation(handler.clone())).await;
    let params = json!({"message": "now", "requestedSchema": {"type": "object", "properties": {}}});
    let answer = peer.result("elicitation/create", params, "ElicitResult").await;
    assert_eq!(answer, json!({"action": "accept", "content": {"ok": true}}));
    assert_eq!(handler.calls(), 1);
}

#[tokio::test]
async fn legacy_15_22_44_48_a_task_augmented_elicitation_is_a_working_task_whose_result_blocks_until_answered() {
    let handler = Scripted::default();
    let (_client, mut peer, _) = connect(crate::harness::legacy().elicitation(handler.clone())).await;
    let task = peer.elicit_as_task("wait", 60_000).await;
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60_000, "the ttl asked for is granted");
    assert_eq!(task["pollInterval"], 1000);
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert!(id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()), "128 random bits in hex: {id}");
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'), "{task}");

    let polled = peer.status(&id).await;
    assert_eq!((polled["taskId"].as_str(), polled["status"].as_str()), (Some(id.as_str()), Some("working")));

    // tasks/result is held back while the handler waits.
    let asked = peer.ask("tasks/result", json!({"taskId": id}), "ElicitResult").await;
    let early = tokio::time::timeout(Duration::from_millis(300), peer.lines.next_line()).await;
    assert!(early.is_err(), "tasks/result answered before the task ended: {early:?}");
    handler.release.notify_one();
    let response = peer.response(asked).await;
    let result = &response["result"];
    assert_schema("GetTaskPayloadResult", result);
    assert_eq!(result["action"], "accept");
    assert_eq!(result["content"], json!({"ok": true}));
    assert_eq!(related_task(result), id.as_str(), "tasks/result carries the related-task _meta: {result}");

    let done = peer.status(&id).await;
    assert_eq!(done["status"], "completed");
    assert!(done.get("_meta").is_none(), "no related-task on tasks/get results: {done}");
    // Read again while retained: the same answer.
    let again = peer.result("tasks/result", json!({"taskId": id}), "ElicitResult").await;
    assert_eq!(&again, result);
    assert_eq!(handler.calls(), 1, "the handler ran once");
    // The optional status notification, if sent, carries the whole task.
    for notification in &peer.notifications {
        assert_eq!(notification["params"]["taskId"], id.as_str());
        assert_eq!(notification["params"]["status"], "completed");
    }
}

#[tokio::test]
async fn legacy_43_a_task_augmented_sampling_request_returns_the_models_message_through_tasks_result() {
    let (_client, mut peer, _) = connect(crate::harness::legacy().sampling(Model)).await;
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "shout"}}],
        "maxTokens": 10,
        "task": {},
    });
    let created = peer.result("sampling/createMessage", params, "CreateTaskResult").await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(created["task"]["ttl"], 3_600_000, "the default ttl when none is asked: one hour");
    let result = peer.result("tasks/result", json!({"taskId": id}), "CreateMessageResult").await;
    assert_eq!(result["content"]["text"], "SHOUT");
    assert_eq!(result["model"], "upper-1");
    assert_eq!(related_task(&result), id.as_str());
}

#[tokio::test]
async fn legacy_68_69_70_cancelling_a_running_task_aborts_its_handler_and_a_terminal_one_is_refused() {
    let handler = Scripted::default();
    let (_client, mut peer, _) = connect(crate::harness::legacy().elicitation(handler.clone())).await;
    let task = peer.elicit_as_task("forever", 60_000).await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    handler.called().await;
    assert!(!handler.was_aborted());

    let cancelled = peer.result("tasks/cancel", json!({"taskId": id}), "CancelTaskResult").await;
    assert_eq!(cancelled["status"], "cancelled");
    assert!(cancelled["statusMessage"].is_string(), "{cancelled}");
    handler.aborted().await;
    assert_eq!(peer.status(&id).await["status"], "cancelled");
    let outcome = peer.error("tasks/result", json!({"taskId": id})).await;
    assert_eq!(outcome["data"]["status"], "cancelled", "{outcome}");

    let twice = peer.error("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(twice["code"], -32602, "{twice}");
    assert!(twice["message"].as_str().unwrap().contains("cancelled"), "{twice}");

    let finished = peer.elicit_as_task("done at once", 60_000).await;
    let finished = finished["taskId"].as_str().unwrap().to_owned();
    peer.result("tasks/result", json!({"taskId": finished}), "ElicitResult").await;
    let refused = peer.error("tasks/cancel", json!({"taskId": finished})).await;
    assert_eq!(refused["code"], -32602, "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("completed"), "{refused}");
}

#[tokio::test]
async fn legacy_76_an_unknown_task_id_is_invalid_params_everywhere() {
    let (_client, mut peer, _) = connect(crate::harness::legacy().elicitation(Scripted::default())).await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let error = peer.error(method, json!({"taskId": "00000000000000000000000000000000"})).await;
        assert_eq!(error["code"], -32602, "{method}: {error}");
    }
    let malformed = peer.error("tasks/get", json!({})).await;
    assert_eq!(malformed["code"], -32602, "{malformed}");
}

#[tokio::test]
async fn legacy_46_79_a_handler_error_fails_the_task_and_tasks_result_replays_it() {
    let (_client, mut peer, _) = connect(crate::harness::legacy().elicitation(Scripted::default())).await;
    let task = peer.elicit_as_task("fail", 60_000).await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    let error = peer.error("tasks/result", json!({"taskId": id})).await;
    assert_eq!(error, json!({"code": -32001, "message": "the user is away", "data": {"retry": false}}));
    let failed = peer.status(&id).await;
    assert_eq!(failed["status"], "failed");
    assert!(failed["statusMessage"].as_str().unwrap().contains("the user is away"), "{failed}");
}

#[tokio::test]
async fn legacy_63_64_66_67_tasks_list_pages_through_every_task_with_an_opaque_cursor() {
    let (_client, mut peer, _) = connect(crate::harness::legacy().elicitation(Scripted::default())).await;
    let mut ids = Vec::new();
    for _ in 0..51 {
        ids.push(peer.elicit_as_task("at once", 60_000).await["taskId"].as_str().unwrap().to_owned());
    }
    let first = peer.result("tasks/list", json!({}), "ListTasksResult").await;
    let cursor = first["nextCursor"].as_str().expect("more tasks: a cursor").to_owned();
    let second = peer.result("tasks/list", json!({"cursor": cursor}), "ListTasksResult").await;
    assert!(second.get("nextCursor").is_none(), "{second}");
    let listed: Vec<&str> = first["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["tasks"].as_array().unwrap())
        .map(|task| task["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ids, "every task once, oldest first");
    let invalid = peer.error("tasks/list", json!({"cursor": "not-a-cursor"})).await;
    assert_eq!(invalid["code"], -32602, "{invalid}");
}

/// Time is Tokio's, paused: the test moves it on by hand, to just before the TTL runs out
/// and then onto it.
#[tokio::test(start_paused = true)]
async fn legacy_41_an_expired_task_is_dropped_and_its_handler_aborted() {
    let handler = Scripted::default();
    let (_client, mut peer, _) = connect(crate::harness::legacy().elicitation(handler.clone())).await;
    let task = peer.elicit_as_task("forever", 150).await;
    assert_eq!(task["ttl"], 150);
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(peer.status(&id).await["status"], "working");
    tokio::time::advance(Duration::from_millis(149)).await;
    assert_eq!(peer.status(&id).await["status"], "working", "1 ms before the TTL runs out");
    assert!(!handler.was_aborted());
    tokio::time::advance(Duration::from_millis(1)).await;
    let gone = peer.error("tasks/get", json!({"taskId": id})).await;
    assert_eq!(gone["code"], -32602, "{gone}");
    handler.aborted().await;
    let listed = peer.result("tasks/list", json!({}), "ListTasksResult").await;
    assert_eq!(listed["tasks"], json!([]));
}

#[tokio::test]
async fn a_blocked_tasks_result_ends_when_the_client_is_dropped_and_the_session_closes() {
    let handler = Scripted::default();
    let (client, mut peer, _) = connect(crate::harness::legacy().elicitation(handler.clone())).await;
    let task = peer.elicit_as_task("forever", 60_000).await;
    let blocked = peer.ask("tasks/result", json!({"taskId": task["taskId"]}), "ElicitResult").await;
    // The client reads requests in order and runs each in a task of its own, spawned in
    // order on this one-thread runtime: once a tasks/get sent after it is answered, the
    // tasks/result has been read, has run up to its wait, and is still unanswered.
    let probe = peer.ask("tasks/get", json!({"taskId": task["taskId"]}), "GetTaskResult").await;
    let answered = peer.recv().await;
    assert_eq!(answered["id"], probe, "the tasks/get is answered, not the blocked {blocked}: {answered}");
    assert_eq!(answered["result"]["status"], "working");
    drop(client);
    // Nothing of the session stays behind: the handler is dropped and the pipe closes.
    bounded(async {
        while let Some(line) = peer.lines.next_line().await.unwrap() {
            let message: Value = serde_json::from_str(&line).unwrap();
            assert!(message.get("result").is_none(), "no answer to a task that never ended: {message}");
        }
    })
    .await;
    assert!(handler.was_aborted(), "the handler's future was dropped");
}

#[tokio::test]
async fn legacy_88_92_running_hosted_tasks_are_capped_and_a_finished_one_frees_a_place() {
    let handler = Scripted::default();
    let (_client, mut peer, _) = connect(crate::harness::legacy().elicitation(handler.clone())).await;
    let mut running = Vec::new();
    for _ in 0..mcp_tasks_client::HOSTED_MAX_RUNNING {
        running.push(peer.elicit_as_task("forever", 60_000).await["taskId"].as_str().unwrap().to_owned());
    }
    let params = json!({"message": "one more", "requestedSchema": {"type": "object"}, "task": {"ttl": 60_000}});
    let refused = peer.error("elicitation/create", params.clone()).await;
    assert_eq!(refused["code"], -32010, "{refused}");
    assert_eq!(refused["data"]["max"], mcp_tasks_client::HOSTED_MAX_RUNNING, "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("at most"), "{refused}");
    let listed = peer.result("tasks/list", json!({}), "ListTasksResult").await;
    assert_eq!(listed["tasks"].as_array().unwrap().len(), running.len(), "the refused request left no task");

    peer.result("tasks/cancel", json!({"taskId": running[0]}), "CancelTaskResult").await;
    let accepted = peer.result("elicitation/create", params, "CreateTaskResult").await;
    assert_eq!(accepted["task"]["status"], "working");
}
