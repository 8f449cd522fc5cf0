//! Long calls from clients that speak no tasks (issue "proxy", item 4): a plain call still
//! running after the sync wait is answered with a `CallToolResult` naming its task and runs
//! on as that task; the helper tools collect, show and cancel it; heartbeats keep a plain
//! call with a progress token audible. 2025-11-25 sessions here; the 2026-07-28 cases at the
//! end.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_engine::{Context, Handler, Outcome, Progress};
use mcp_tasks_protocol::era::Era;
use mcp_tasks_server::{Server, TaskMode, TaskTools, ToolDef};
use mcp_tasks_testkit_server::TestPeer;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::time::timeout;

use crate::sqlite_engine;

const WAIT: Duration = Duration::from_secs(10);

/// Reports progress 1 of 2 if asked to, then finishes when released; says when it was
/// cancelled; counts its runs.
struct Slow {
    release: Arc<Notify>,
    runs: Arc<AtomicUsize>,
    cancelled: mpsc::UnboundedSender<()>,
}

#[async_trait]
impl Handler for Slow {
    async fn call(&self, arguments: Value, ctx: Context) -> Outcome {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if arguments["report"] == true {
            ctx.progress(Progress {
                progress: 1.0,
                total: Some(2.0),
                message: Some("half".into()),
            });
        }
        tokio::select! {
            () = self.release.notified() => {}
            () = ctx.cancelled() => {
                let _ = self.cancelled.send(());
                return Outcome::Result(json!({"content": [{"type": "text", "text": "stopped"}], "isError": true}));
            }
        }
        if arguments["ask"] == true {
            let asked = json!({"message": "Ship it?", "requestedSchema": {"type": "object", "properties": {}}});
            return match ctx.request_named("approve", mcp_tasks_engine::InputKind::Elicitation, asked).await {
                Ok(answer) => {
                    let text = format!("answer: {}", answer["action"]);
                    Outcome::Result(json!({"content": [{"type": "text", "text": text}], "isError": false}))
                }
                Err(err) => Outcome::from(err),
            };
        }
        let text = format!("done: {}", arguments["n"]);
        Outcome::Result(json!({"content": [{"type": "text", "text": text}], "isError": false}))
    }
}

struct Fixture {
    release: Arc<Notify>,
    runs: Arc<AtomicUsize>,
    cancelled: mpsc::UnboundedReceiver<()>,
    server: Server,
    _dir: tempfile::TempDir,
}

/// A server with `slow` (optional) and `slow_forbidden` (forbidden), handing plain calls off
/// after `sync_wait`, with heartbeats every `heartbeat`.
fn fixture(sync_wait: Duration, heartbeat: Duration, names: TaskTools) -> Fixture {
    let (engine, dir) = sqlite_engine();
    let (release, runs) = (Arc::new(Notify::new()), Arc::new(AtomicUsize::new(0)));
    let (tx, cancelled) = mpsc::unbounded_channel();
    let slow = |name: &str, mode: TaskMode| {
        let handler = Slow {
            release: Arc::clone(&release),
            runs: Arc::clone(&runs),
            cancelled: tx.clone(),
        };
        ToolDef::new(
            name,
            "finishes when the test says",
            json!({"type": "object"}),
            handler,
        )
        .task_mode(mode)
        .output_schema(json!({"type": "object"}))
    };
    let server = Server::builder(engine)
        .name("handoff-test")
        .sync_wait(sync_wait)
        .heartbeat(heartbeat)
        .task_tools(names)
        .tool(slow("slow", TaskMode::Optional))
        .tool(slow("slow_forbidden", TaskMode::Forbidden))
        .build()
        .unwrap();
    Fixture {
        release,
        runs,
        cancelled,
        server,
        _dir: dir,
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The task id a handed-off call answered with.
fn handed_off(answer: &Value) -> String {
    let result = &answer["result"];
    assert_ne!(result["isError"], true, "{answer}");
    let id = result["structuredContent"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no taskId: {answer}"))
        .to_owned();
    assert!(
        text(result).contains(&id),
        "the text names the task: {answer}"
    );
    assert!(
        text(result).contains("task_result"),
        "the text says which tool to call next: {answer}"
    );
    id
}

async fn tool_names(client: &mut TestPeer) -> Vec<String> {
    let listed = client.result("tools/list", json!({})).await;
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_plain_call_still_running_at_the_sync_wait_is_answered_with_its_task_and_runs_on_to_its_result()
 {
    let f = fixture(
        Duration::from_millis(100),
        Duration::ZERO,
        TaskTools::default(),
    );
    let mut client = TestPeer::start(f.server.clone()).await;
    let (_, answer) = client
        .request("tools/call", json!({"name": "slow", "arguments": {"n": 1}}))
        .await;
    let id = handed_off(&answer);

    // The task is a task like any other: tasks/get reads it, working.
    let status = client.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(status["status"], "working");
    let status = client
        .result(
            "tools/call",
            json!({"name": "task_status", "arguments": {"task_id": id}}),
        )
        .await;
    assert!(text(&status).contains("working"), "{status}");
    assert_eq!(status["structuredContent"]["status"], "working");

    f.release.notify_one();
    let result = client
        .result(
            "tools/call",
            json!({"name": "task_result", "arguments": {"task_id": id}}),
        )
        .await;
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "done: 1"}], "isError": false}),
        "the tool's own result"
    );
    assert_eq!(
        f.runs.load(Ordering::SeqCst),
        1,
        "the work ran once: the handoff did not start it again"
    );
    let status = client.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(status["status"], "completed");
    client.validate();
}

#[tokio::test]
async fn a_plain_call_that_ends_within_the_sync_wait_answers_inline_and_makes_no_task() {
    let f = fixture(
        Duration::from_secs(30),
        Duration::ZERO,
        TaskTools::default(),
    );
    let mut client = TestPeer::start(f.server.clone()).await;
    f.release.notify_one(); // the call may finish at once
    let result = client
        .result("tools/call", json!({"name": "slow", "arguments": {"n": 2}}))
        .await;
    assert_eq!(text(&result), "done: 2");
    let listed = client.result("tasks/list", json!({})).await;
    assert_eq!(listed["tasks"], json!([]), "{listed}");
}

#[tokio::test]
async fn a_forbidden_tool_is_never_handed_off() {
    let f = fixture(
        Duration::from_millis(50),
        Duration::ZERO,
        TaskTools::default(),
    );
    let mut first = TestPeer::start(f.server.clone()).await;
    let mut second = TestPeer::start(f.server.clone()).await;
    let forbidden = first
        .send_request(
            "tools/call",
            json!({"name": "slow_forbidden", "arguments": {"n": 3}}),
        )
        .await;
    // An optional call started later is handed off after the sync wait: by then the
    // forbidden one has run longer than that, and is still a plain call.
    let (_, answer) = second
        .request(
            "tools/call",
            json!({"name": "slow", "arguments": {"n": 30}}),
        )
        .await;
    handed_off(&answer);
    f.release.notify_waiters();
    let answered = first.until(|m| m["id"] == forbidden).await.pop().unwrap();
    assert_eq!(text(&answered["result"]), "done: 3", "{answered}");
}

#[tokio::test]
async fn a_sync_wait_of_zero_turns_the_handoff_off() {
    let f = fixture(
        Duration::ZERO,
        Duration::from_millis(20),
        TaskTools::default(),
    );
    let mut client = TestPeer::start(f.server.clone()).await;
    let id = client
        .send_request(
            "tools/call",
            json!({"name": "slow", "arguments": {"n": 31}, "_meta": {"progressToken": 1}}),
        )
        .await;
    // Heartbeats tell the time: three periods on, the call is still a plain call.
    for _ in 0..3 {
        let seen = client
            .until(|m| is_progress(m) || m["id"] == id)
            .await
            .pop()
            .unwrap();
        assert!(
            is_progress(&seen),
            "answered before it was released: {seen}"
        );
    }
    f.release.notify_one();
    let answered = client.until(|m| m["id"] == id).await.pop().unwrap();
    assert_eq!(text(&answered["result"]), "done: 31");
}

#[tokio::test]
async fn task_cancel_stops_the_work_of_a_handed_off_call() {
    let mut f = fixture(
        Duration::from_millis(50),
        Duration::ZERO,
        TaskTools::default(),
    );
    let mut client = TestPeer::start(f.server.clone()).await;
    let (_, answer) = client
        .request("tools/call", json!({"name": "slow", "arguments": {"n": 4}}))
        .await;
    let id = handed_off(&answer);
    let cancelled = client
        .result(
            "tools/call",
            json!({"name": "task_cancel", "arguments": {"task_id": id}}),
        )
        .await;
    assert_ne!(cancelled["isError"], true, "{cancelled}");
    timeout(WAIT, f.cancelled.recv()).await.unwrap().unwrap();
    let result = client
        .result(
            "tools/call",
            json!({"name": "task_result", "arguments": {"task_id": id}}),
        )
        .await;
    assert_eq!(result["isError"], true);
    assert!(text(&result).contains("cancelled"), "{result}");
    let status = client.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(status["status"], "cancelled");
}

#[tokio::test]
async fn the_helper_tools_are_listed_to_clients_without_tasks_only_and_can_be_renamed() {
    let f = fixture(
        Duration::from_secs(45),
        Duration::ZERO,
        TaskTools::default(),
    );
    let mut plain = TestPeer::start(f.server.clone()).await;
    assert_eq!(
        tool_names(&mut plain).await,
        [
            "slow",
            "slow_forbidden",
            "task_status",
            "task_result",
            "task_cancel"
        ]
    );
    plain.validate();

    let mut tasks = TestPeer::connect(f.server.clone());
    tasks
        .initialize(json!({"tasks": {"list": {}, "cancel": {}}}))
        .await;
    assert_eq!(
        tool_names(&mut tasks).await,
        ["slow", "slow_forbidden"],
        "a client with tasks needs no helpers"
    );

    let off = fixture(Duration::ZERO, Duration::ZERO, TaskTools::default());
    let mut plain = TestPeer::start(off.server.clone()).await;
    assert_eq!(
        tool_names(&mut plain).await,
        ["slow", "slow_forbidden"],
        "no handoff, no helpers"
    );
    let error = plain
        .error(
            "tools/call",
            json!({"name": "task_status", "arguments": {"task_id": "x"}}),
        )
        .await;
    assert_eq!(error["code"], -32602, "an unknown tool then: {error}");

    let names = TaskTools {
        status: "job_status".into(),
        result: "job_result".into(),
        cancel: "job_cancel".into(),
    };
    let renamed = fixture(Duration::from_millis(50), Duration::ZERO, names);
    let mut plain = TestPeer::start(renamed.server.clone()).await;
    assert_eq!(
        tool_names(&mut plain).await,
        [
            "slow",
            "slow_forbidden",
            "job_status",
            "job_result",
            "job_cancel"
        ]
    );
    let (_, answer) = plain
        .request("tools/call", json!({"name": "slow", "arguments": {"n": 5}}))
        .await;
    let id = answer["result"]["structuredContent"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text(&answer["result"]).contains("job_result"),
        "the handoff names the configured tool: {answer}"
    );
    renamed.release.notify_one();
    let result = plain
        .result(
            "tools/call",
            json!({"name": "job_result", "arguments": {"task_id": id}}),
        )
        .await;
    assert_eq!(text(&result), "done: 5");
}

#[tokio::test]
async fn the_helper_tools_refuse_bad_arguments_and_say_when_a_task_is_unknown() {
    let f = fixture(
        Duration::from_millis(50),
        Duration::ZERO,
        TaskTools::default(),
    );
    let mut client = TestPeer::start(f.server.clone()).await;
    for arguments in [json!({}), json!({"task_id": 7}), json!({"task_id": ""})] {
        for tool in ["task_status", "task_result", "task_cancel"] {
            let error = client
                .error("tools/call", json!({"name": tool, "arguments": arguments}))
                .await;
            assert_eq!(error["code"], -32602, "{tool} {arguments}: {error}");
            assert!(
                error["message"].as_str().unwrap().contains("task_id"),
                "{error}"
            );
        }
    }
    for tool in ["task_status", "task_result", "task_cancel"] {
        let answer = client
            .result(
                "tools/call",
                json!({"name": tool, "arguments": {"task_id": "no-such-task"}}),
            )
            .await;
        assert_eq!(answer["isError"], true, "{answer}");
        assert!(
            text(&answer).contains("There is no task no-such-task"),
            "{answer}"
        );
    }
    // The server goes on serving.
    f.release.notify_one();
    let (_, answer) = client
        .request("tools/call", json!({"name": "slow", "arguments": {"n": 6}}))
        .await;
    assert!(answer["result"].is_object(), "{answer}");
    client.validate();
}

fn is_progress(message: &Value) -> bool {
    message["method"] == "notifications/progress"
}

#[tokio::test]
async fn a_plain_call_with_a_progress_token_gets_strictly_increasing_heartbeats_and_one_without_gets_none()
 {
    let f = fixture(
        Duration::ZERO,
        Duration::from_millis(50),
        TaskTools::default(),
    );
    let mut quiet = TestPeer::start(f.server.clone()).await;
    let mut loud = TestPeer::start(f.server.clone()).await;
    let quiet_id = quiet
        .send_request("tools/call", json!({"name": "slow", "arguments": {"n": 7}}))
        .await;
    let loud_id = loud
        .send_request("tools/call", json!({"name": "slow", "arguments": {"n": 8, "report": true}, "_meta": {"progressToken": "p"}}))
        .await;
    let mut values = Vec::new();
    while values.len() < 4 {
        let message = loud.until(is_progress).await.pop().unwrap();
        assert_eq!(message["params"]["progressToken"], "p");
        values.push(message["params"]["progress"].as_f64().unwrap());
        if values.len() > 1 {
            assert_eq!(
                message["params"]["total"], 2.0,
                "a heartbeat keeps the work's total"
            );
            assert!(
                message["params"]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("still running"),
                "{message}"
            );
        }
    }
    assert_eq!(values[0], 1.0, "the work's own report comes first");
    assert!(
        values.windows(2).all(|pair| pair[1] > pair[0]),
        "strictly increasing: {values:?}"
    );
    assert!(
        values[3] < 1.01,
        "heartbeats barely move the work's progress: {values:?}"
    );
    // Both calls ran for several heartbeat periods; release both and read their answers.
    f.release.notify_one();
    f.release.notify_one();
    let before = quiet.until(|m| m["id"] == quiet_id).await;
    assert!(
        before.iter().all(|m| !is_progress(m)),
        "no token, no heartbeat: {before:?}"
    );
    loud.until(|m| m["id"] == loud_id).await;
    loud.validate();
}

// 2026-07-28: a client that did not declare the tasks extension.

fn modern_plain(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "handoff-test", "version": "0"},
    });
    params
}

#[tokio::test]
async fn modern_a_plain_call_from_a_client_without_the_extension_is_handed_off_and_collected_with_the_helpers()
 {
    let f = fixture(
        Duration::from_millis(100),
        Duration::ZERO,
        TaskTools::default(),
    );
    let mut client = TestPeer::connect_era(Era::Modern, f.server.clone());
    let names = client.result("tools/list", modern_plain(json!({}))).await;
    let names: Vec<_> = names["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            "slow",
            "slow_forbidden",
            "task_status",
            "task_result",
            "task_cancel"
        ]
    );

    let (_, answer) = client
        .request(
            "tools/call",
            modern_plain(json!({"name": "slow", "arguments": {"n": 9}})),
        )
        .await;
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    let id = handed_off(&answer);
    f.release.notify_one();
    let result = client
        .result(
            "tools/call",
            modern_plain(json!({"name": "task_result", "arguments": {"task_id": id}})),
        )
        .await;
    assert_eq!(text(&result), "done: 9");
    assert_eq!(f.runs.load(Ordering::SeqCst), 1);
    client.validate();
}

#[tokio::test]
async fn modern_a_client_that_declared_the_extension_gets_no_helpers_and_its_own_tasks() {
    let f = fixture(
        Duration::from_millis(100),
        Duration::ZERO,
        TaskTools::default(),
    );
    let mut client = TestPeer::connect_era(Era::Modern, f.server.clone());
    client.declare(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    let names = client.result("tools/list", json!({})).await;
    assert_eq!(names["tools"].as_array().unwrap().len(), 2, "{names}");
}

#[tokio::test]
async fn a_question_asked_after_the_handoff_waits_in_the_task_and_is_answered_there() {
    let f = fixture(Duration::from_millis(50), Duration::ZERO, TaskTools::default());
    let mut client = TestPeer::connect(f.server.clone());
    client.initialize(json!({"elicitation": {}})).await;
    let (_, answer) = client.request("tools/call", json!({"name": "slow", "arguments": {"n": 10, "ask": true}})).await;
    let id = handed_off(&answer);
    let mut feed = f.server.engine().subscribe();
    f.release.notify_one();
    // The question goes to the task, not to the answered call.
    timeout(WAIT, async {
        loop {
            let status = client.result("tasks/get", json!({"taskId": id})).await;
            if status["status"] == "input_required" {
                return;
            }
            let _ = feed.recv().await;
        }
    })
    .await
    .unwrap();
    let status = client.result("tools/call", json!({"name": "task_status", "arguments": {"task_id": id}})).await;
    assert!(text(&status).contains("approve: Ship it?"), "{status}");
    let result = client.result("tools/call", json!({"name": "task_result", "arguments": {"task_id": id}})).await;
    assert!(text(&result).contains("waits for an answer"), "task_result says why there is no result yet: {result}");
    // A client that speaks tasks (here the same one) answers it the 2025-11-25 way.
    let waiting = client.send_request("tasks/result", json!({"taskId": id})).await;
    let asked = client.until(|m| m["method"] == "elicitation/create").await.pop().unwrap();
    assert_eq!(asked["params"]["message"], "Ship it?");
    client.send_result(&asked["id"], json!({"action": "accept", "content": {}})).await;
    let done = client.until(|m| m["id"] == waiting && m.get("method").is_none()).await.pop().unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "answer: \"accept\"");
    client.validate();
}

/// Which tools list an `outputSchema` to `client`, by name.
async fn with_output_schema(client: &mut TestPeer, params: Value) -> Vec<String> {
    let listed = client.result("tools/list", params).await;
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|tool| tool.get("outputSchema").is_some())
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_tool_that_may_be_handed_off_lists_no_output_schema_to_a_client_without_tasks() {
    // The handoff answer cannot match the tool's outputSchema; a client without tasks that
    // validates structured results against it would refuse the answer (found with the TS SDK
    // client through the proxy). Clients with tasks, and servers without handoffs, list it.
    let f = fixture(Duration::from_secs(45), Duration::ZERO, TaskTools::default());
    let mut plain = TestPeer::start(f.server.clone()).await;
    assert_eq!(with_output_schema(&mut plain, json!({})).await, ["slow_forbidden"]);
    let mut tasks = TestPeer::connect(f.server.clone());
    tasks.initialize(json!({"tasks": {"list": {}, "cancel": {}}})).await;
    assert_eq!(with_output_schema(&mut tasks, json!({})).await, ["slow", "slow_forbidden"]);
    let mut modern = TestPeer::connect_era(Era::Modern, f.server.clone());
    assert_eq!(with_output_schema(&mut modern, modern_plain(json!({}))).await, ["slow_forbidden"]);
    let off = fixture(Duration::ZERO, Duration::ZERO, TaskTools::default());
    let mut plain = TestPeer::start(off.server.clone()).await;
    assert_eq!(with_output_schema(&mut plain, json!({})).await, ["slow", "slow_forbidden"]);
    plain.validate();
}
