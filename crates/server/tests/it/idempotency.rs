//! Idempotency keys on `tools/call` (`_meta["dev.mcp-tasks/idempotency-key"]`), in both
//! eras over the stdio pipe: a retried task call gets the task the first call made and
//! starts nothing; the key used for another call, or malformed, is `-32602` and the server
//! goes on; a plain call ignores the key; the key outlives a restart of the server.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_tasks_engine::{Context, Engine, Outcome, Policy, SystemClock};
use mcp_tasks_server::{Server, TaskMode, ToolDef, handler_fn};
use mcp_tasks_sqlite::SqliteStore;
use mcp_tasks_testkit_server::peer::{assert_era_schema, assert_schema};
use mcp_tasks_testkit_server::{Era, TestPeer};
use serde_json::{Value, json};
use tokio::sync::Notify;

const KEY: &str = "dev.mcp-tasks/idempotency-key";
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// How many times each tool's handler ran.
#[derive(Clone, Default)]
struct Runs {
    gate: Arc<AtomicUsize>,
    echo: Arc<AtomicUsize>,
}

/// A server on the SQLite file `path` with `gate` (optional, a task at once in 2026-07-28;
/// waits for `release` or its cancellation) and `echo` (optional, answers at once).
fn server(path: &Path, release: Arc<Notify>, runs: &Runs) -> Server {
    let store = SqliteStore::open(path).unwrap();
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
    let schema = json!({"type": "object"});
    let gate_runs = Arc::clone(&runs.gate);
    let gate = ToolDef::new("gate", "Waits for the test", schema.clone(), handler_fn(move |_arguments, ctx: Context| {
        gate_runs.fetch_add(1, Ordering::SeqCst);
        let release = Arc::clone(&release);
        async move {
            tokio::select! {
                () = release.notified() => Outcome::Result(json!({"content": [{"type": "text", "text": "released"}]})),
                () = ctx.cancelled() => Outcome::Result(json!({"content": [{"type": "text", "text": "stopped"}]})),
            }
        }
    }))
    .task_mode(TaskMode::Optional)
    .inline_wait(Duration::ZERO);
    let echo_runs = Arc::clone(&runs.echo);
    let echo = ToolDef::new("echo", "Echoes", schema, handler_fn(move |arguments, _ctx| {
        echo_runs.fetch_add(1, Ordering::SeqCst);
        async move { Outcome::Result(json!({"content": [{"type": "text", "text": arguments["text"].as_str().unwrap_or("")}]})) }
    }))
    .task_mode(TaskMode::Optional);
    Server::builder(engine).name("idem-test").tool(gate).tool(echo).build().unwrap()
}

/// A 2025-11-25 peer, initialized, on a fresh server; keep the directory alive.
async fn legacy(release: Arc<Notify>, runs: &Runs) -> (TestPeer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut peer = TestPeer::connect(server(&dir.path().join("t.sqlite3"), release, runs));
    peer.initialize(json!({})).await;
    (peer, dir)
}

/// 2025-11-25 `tools/call` params of a task call of `name` with `key`.
fn legacy_task(name: &str, arguments: Value, key: Value) -> Value {
    json!({"name": name, "arguments": arguments, "task": {"ttl": 60000}, "_meta": {KEY: key}})
}

/// 2026-07-28 `tools/call` params of a client that declared the tasks extension, with `key`.
fn modern_call(name: &str, arguments: Value, key: Value) -> Value {
    json!({"name": name, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "idem-test", "version": "0"},
        KEY: key,
    }})
}

/// The `params` of a 2026-07-28 `tasks/get` of `id`.
fn modern_get(id: &str) -> Value {
    let mut params = modern_call("x", json!({}), json!("unused"));
    let meta = params["_meta"].take();
    json!({"taskId": id, "_meta": meta})
}

/// Checks an error: `-32602`, and its message contains `needle`.
fn invalid_params(error: &Value, needle: &str) {
    assert_eq!(error["code"], -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains(needle), "{error}");
}

#[tokio::test]
async fn legacy_a_task_call_retried_with_its_idempotency_key_gets_the_same_task_and_runs_once() {
    let (release, runs) = (Arc::new(Notify::new()), Runs::default());
    let (mut peer, _dir) = legacy(Arc::clone(&release), &runs).await;
    let first = peer.result("tools/call", legacy_task("gate", json!({"n": 1}), json!("order-1"))).await;
    assert_schema("CreateTaskResult", &first);
    let id = first["task"]["taskId"].as_str().unwrap().to_owned();
    let retry = peer.result("tools/call", legacy_task("gate", json!({"n": 1}), json!("order-1"))).await;
    assert_schema("CreateTaskResult", &retry);
    assert_eq!(retry["task"]["taskId"], id.as_str(), "the same task: {retry}");
    assert_eq!(retry["task"]["status"], "working");
    let listed = peer.result("tasks/list", json!({})).await;
    assert_schema("ListTasksResult", &listed);
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1, "one task, listed once: {listed}");

    release.notify_one();
    let result = peer.result("tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["content"][0]["text"], "released", "{result}");
    let after = peer.result("tools/call", legacy_task("gate", json!({"n": 1}), json!("order-1"))).await;
    assert_schema("CreateTaskResult", &after);
    assert_eq!((after["task"]["taskId"].as_str(), after["task"]["status"].as_str()), (Some(id.as_str()), Some("completed")));
    assert_eq!(runs.gate.load(Ordering::SeqCst), 1, "the work ran once");
    peer.validate();
}

#[tokio::test]
async fn legacy_an_idempotency_key_used_for_another_call_is_refused_and_the_server_goes_on() {
    let (release, runs) = (Arc::new(Notify::new()), Runs::default());
    let (mut peer, _dir) = legacy(release, &runs).await;
    let first = peer.result("tools/call", legacy_task("gate", json!({"n": 1}), json!("k"))).await;
    for other in [legacy_task("gate", json!({"n": 2}), json!("k")), legacy_task("echo", json!({"n": 1}), json!("k"))] {
        let error = peer.error("tools/call", other).await;
        invalid_params(&error, "idempotency key was used for another call");
    }
    let listed = peer.result("tasks/list", json!({})).await;
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1, "nothing was created: {listed}");
    let retry = peer.result("tools/call", legacy_task("gate", json!({"n": 1}), json!("k"))).await;
    assert_eq!(retry["task"]["taskId"], first["task"]["taskId"]);
    assert_eq!(runs.gate.load(Ordering::SeqCst), 1);
    peer.validate();
}

#[tokio::test]
async fn legacy_a_malformed_idempotency_key_is_refused_on_task_and_plain_calls() {
    let (release, runs) = (Arc::new(Notify::new()), Runs::default());
    let (mut peer, _dir) = legacy(release, &runs).await;
    let long = "k".repeat(201);
    let cases = [(json!(""), "must not be empty"), (json!(42), "must be a string"), (json!(long), "at most 200")];
    for (bad, problem) in cases {
        let error = peer.error("tools/call", legacy_task("gate", json!({}), bad.clone())).await;
        invalid_params(&error, problem);
        assert!(error["message"].as_str().unwrap().contains(KEY), "{error}");
        let plain = json!({"name": "echo", "arguments": {"text": "x"}, "_meta": {KEY: bad}});
        invalid_params(&peer.error("tools/call", plain).await, problem);
    }
    assert_eq!((runs.gate.load(Ordering::SeqCst), runs.echo.load(Ordering::SeqCst)), (0, 0), "nothing ran");
    let listed = peer.result("tasks/list", json!({})).await;
    assert_eq!(listed["tasks"], json!([]), "nothing was created");
    let longest = "k".repeat(200);
    let created = peer.result("tools/call", legacy_task("gate", json!({}), json!(longest))).await;
    assert_schema("CreateTaskResult", &created);
    peer.validate();
}

#[tokio::test]
async fn legacy_a_plain_call_ignores_the_idempotency_key() {
    let (release, runs) = (Arc::new(Notify::new()), Runs::default());
    let (mut peer, _dir) = legacy(release, &runs).await;
    let plain = json!({"name": "echo", "arguments": {"text": "hi"}, "_meta": {KEY: "p"}});
    for _ in 0..2 {
        let result = peer.result("tools/call", plain.clone()).await;
        assert_schema("CallToolResult", &result);
        assert_eq!(result["content"][0]["text"], "hi");
    }
    assert_eq!(runs.echo.load(Ordering::SeqCst), 2, "each plain call runs");
    // Nor did the plain calls take the key: a task call with it makes a task.
    let created = peer.result("tools/call", legacy_task("echo", json!({"text": "other"}), json!("p"))).await;
    assert_schema("CreateTaskResult", &created);
    peer.validate();
}

#[tokio::test]
async fn modern_a_call_retried_with_its_idempotency_key_gets_the_same_task_and_runs_once() {
    let (release, runs) = (Arc::new(Notify::new()), Runs::default());
    let dir = tempfile::tempdir().unwrap();
    let mut peer = TestPeer::connect_era(Era::Modern, server(&dir.path().join("t.sqlite3"), Arc::clone(&release), &runs));
    let first = peer.result("tools/call", modern_call("gate", json!({"n": 1}), json!("m-1"))).await;
    assert_era_schema(Era::Modern, "CreateTaskResult", &first);
    assert_eq!(first["resultType"], "task");
    let id = first["taskId"].as_str().unwrap().to_owned();
    let retry = peer.result("tools/call", modern_call("gate", json!({"n": 1}), json!("m-1"))).await;
    assert_era_schema(Era::Modern, "CreateTaskResult", &retry);
    assert_eq!((retry["resultType"].as_str(), retry["taskId"].as_str()), (Some("task"), Some(id.as_str())), "{retry}");
    let error = peer.error("tools/call", modern_call("gate", json!({"n": 2}), json!("m-1"))).await;
    invalid_params(&error, "idempotency key was used for another call");
    invalid_params(&peer.error("tools/call", modern_call("gate", json!({}), json!(""))).await, "must not be empty");
    invalid_params(&peer.error("tools/call", modern_call("gate", json!({}), json!(["m-1"]))).await, "must be a string");

    let mut feed_done = false;
    release.notify_one();
    while !feed_done {
        let task = peer.result("tasks/get", modern_get(&id)).await;
        assert_era_schema(Era::Modern, "GetTaskResult", &task);
        feed_done = task["status"] != "working";
    }
    let after = peer.result("tools/call", modern_call("gate", json!({"n": 1}), json!("m-1"))).await;
    assert_era_schema(Era::Modern, "CreateTaskResult", &after);
    assert_eq!((after["taskId"].as_str(), after["status"].as_str()), (Some(id.as_str()), Some("completed")), "{after}");
    assert_eq!(runs.gate.load(Ordering::SeqCst), 1, "the work ran once");
    peer.validate();
}

/// A 2026-07-28 call that ended within the inline wait answered inline; its answer lost, the
/// retry with the key gets the (completed) task instead of running the tool again.
#[tokio::test]
async fn modern_a_retry_of_a_call_answered_inline_gets_its_completed_task_without_running_again() {
    let runs = Runs::default();
    let dir = tempfile::tempdir().unwrap();
    let mut peer = TestPeer::connect_era(Era::Modern, server(&dir.path().join("t.sqlite3"), Arc::new(Notify::new()), &runs));
    let inline = peer.result("tools/call", modern_call("echo", json!({"text": "once"}), json!("e-1"))).await;
    assert_era_schema(Era::Modern, "CallToolResult", &inline);
    assert_eq!((inline["resultType"].as_str(), inline["content"][0]["text"].as_str()), (Some("complete"), Some("once")));
    let retry = peer.result("tools/call", modern_call("echo", json!({"text": "once"}), json!("e-1"))).await;
    assert_era_schema(Era::Modern, "CreateTaskResult", &retry);
    assert_eq!((retry["resultType"].as_str(), retry["status"].as_str()), (Some("task"), Some("completed")), "{retry}");
    let task = peer.result("tasks/get", modern_get(retry["taskId"].as_str().unwrap())).await;
    assert_era_schema(Era::Modern, "GetTaskResult", &task);
    assert_eq!(task["result"]["content"][0]["text"], "once", "{task}");
    assert_eq!(runs.echo.load(Ordering::SeqCst), 1, "the tool ran once");
    peer.validate();
}

/// One task, one row, whatever era created it: a 2026-07-28 retry of a 2025-11-25 task call
/// with its key (same principal, same server) gets that task.
#[tokio::test]
async fn an_idempotency_key_names_one_task_across_both_eras() {
    let (release, runs) = (Arc::new(Notify::new()), Runs::default());
    let (mut peer, _dir) = legacy(release, &runs).await;
    let legacy = peer.result("tools/call", legacy_task("gate", json!({"n": 1}), json!("both"))).await;
    let modern = peer.result("tools/call", modern_call("gate", json!({"n": 1}), json!("both"))).await;
    assert_era_schema(Era::Modern, "CreateTaskResult", &modern);
    assert_eq!(modern["taskId"], legacy["task"]["taskId"], "{modern}");
    assert_eq!(runs.gate.load(Ordering::SeqCst), 1);
}

/// The key is stored with the task: a new server on the same file answers a retry with the
/// task the first server made.
#[tokio::test]
async fn legacy_an_idempotency_key_survives_a_restart_of_the_server() {
    let runs = Runs::default();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite3");
    let first = {
        let mut peer = TestPeer::connect(server(&path, Arc::new(Notify::new()), &runs));
        peer.initialize(json!({})).await;
        let created = peer.result("tools/call", legacy_task("echo", json!({"text": "once"}), json!("r-1"))).await;
        let id = created["task"]["taskId"].as_str().unwrap().to_owned();
        peer.result("tasks/result", json!({"taskId": id})).await;
        id
    };
    let mut peer = TestPeer::connect(server(&path, Arc::new(Notify::new()), &runs));
    peer.initialize(json!({})).await;
    let retry = peer.result("tools/call", legacy_task("echo", json!({"text": "once"}), json!("r-1"))).await;
    assert_schema("CreateTaskResult", &retry);
    assert_eq!((retry["task"]["taskId"].as_str(), retry["task"]["status"].as_str()), (Some(first.as_str()), Some("completed")));
    assert_eq!(runs.echo.load(Ordering::SeqCst), 1, "the tool ran once, before the restart");
    peer.validate();
}
