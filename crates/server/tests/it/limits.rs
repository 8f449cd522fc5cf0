//! The engine's limits on the wire: a call over one is refused with `-32010`, saying which
//! limit, how far the requestor is and what to do; nothing is created. A tool's
//! `max_concurrent` shows as a queued status message in `tasks/get`.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::Notify;

use mcp_tasks_engine::{Engine, Outcome, Policy, SystemClock};
use mcp_tasks_server::{LIMIT_EXCEEDED, Server, TaskMode, ToolDef, handler_fn};
use mcp_tasks_sqlite::SqliteStore;

use mcp_tasks_testkit_server::TestPeer;

/// A server whose `wait` tool runs until `release` is notified (once per call), under
/// `policy`, with `max_concurrent` slots.
async fn start(policy: Policy, max_concurrent: Option<u32>) -> (TestPeer, Arc<Notify>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), policy);
    let release = Arc::new(Notify::new());
    let waits = Arc::clone(&release);
    let tool = ToolDef::new(
        "wait",
        "Waits until the test lets it finish.",
        json!({"type": "object"}),
        handler_fn(move |_: Value, _ctx| {
            let waits = Arc::clone(&waits);
            async move {
                waits.notified().await;
                Outcome::Result(json!({"content": [{"type": "text", "text": "done"}]}))
            }
        }),
    )
    .task_mode(TaskMode::Optional)
    .max_concurrent(max_concurrent);
    let server = Server::builder(engine).tool(tool).build().unwrap();
    (TestPeer::start(server).await, release, dir)
}

fn policy(max_running: u32, per_principal: u32, retained: u64) -> Policy {
    Policy {
        max_running,
        max_running_per_principal: per_principal,
        max_retained_per_principal: retained,
        ..Policy::default()
    }
}

async fn task_count(peer: &mut TestPeer) -> usize {
    peer.result("tasks/list", json!({})).await["tasks"].as_array().unwrap().len()
}

#[tokio::test]
async fn a_task_over_max_running_per_principal_is_refused_with_32010_and_nothing_is_created() {
    let (mut peer, _release, _dir) = start(policy(64, 1, 100), None).await;
    peer.result("tools/call", json!({"name": "wait", "task": {}})).await;
    let error = peer.error("tools/call", json!({"name": "wait", "task": {}})).await;
    assert_eq!(error["code"], LIMIT_EXCEEDED);
    assert_eq!(error["code"], -32010);
    assert_eq!(error["data"], json!({"limit": "max_running_per_principal", "max": 1, "current": 1}));
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("Too many of your tasks running: each principal may run at most 1"), "{message}");
    assert!(message.contains("tasks/cancel"), "it says what to do: {message}");
    assert_eq!(task_count(&mut peer).await, 1, "the refused call created nothing");
    peer.validate();
}

#[tokio::test]
async fn a_plain_call_over_max_running_is_refused_with_32010() {
    let (mut peer, release, _dir) = start(policy(1, 16, 100), None).await;
    let task = peer.result("tools/call", json!({"name": "wait", "task": {}})).await;
    let error = peer.error("tools/call", json!({"name": "wait"})).await;
    assert_eq!(error["code"], LIMIT_EXCEEDED);
    assert_eq!(error["data"], json!({"limit": "max_running", "max": 1, "current": 1}));
    assert!(error["message"].as_str().unwrap().starts_with("Too many tasks running"), "{error}");

    // Once the task has ended, its place is free for a plain call.
    let id = task["task"]["taskId"].clone();
    release.notify_one();
    peer.result("tasks/result", json!({"taskId": id})).await;
    release.notify_one(); // for the plain call, before it starts waiting
    let result = peer.result("tools/call", json!({"name": "wait"})).await;
    assert_eq!(result["content"][0]["text"], "done");
}

#[tokio::test]
async fn a_task_over_max_retained_per_principal_is_refused_with_32010_saying_how_many_are_kept() {
    let (mut peer, release, _dir) = start(policy(64, 16, 1), None).await;
    let created = peer.result("tools/call", json!({"name": "wait", "task": {}})).await;
    release.notify_one();
    let id = created["task"]["taskId"].clone();
    peer.result("tasks/result", json!({"taskId": id})).await; // finished, and still kept
    let error = peer.error("tools/call", json!({"name": "wait", "task": {}})).await;
    assert_eq!(error["code"], LIMIT_EXCEEDED);
    assert_eq!(error["data"], json!({"limit": "max_retained_per_principal", "max": 1, "current": 1}));
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("at most 1 tasks per principal") && message.contains("TTL"), "{message}");
    assert_eq!(task_count(&mut peer).await, 1);
}

#[tokio::test]
async fn a_task_queued_for_the_only_slot_of_its_tool_says_so_in_tasks_get() {
    let (mut peer, release, _dir) = start(Policy::default(), Some(1)).await;
    peer.result("tools/call", json!({"name": "wait", "task": {}})).await;
    let second = peer.result("tools/call", json!({"name": "wait", "task": {}})).await;
    let id = second["task"]["taskId"].clone();
    let is_queued_notice = |message: &Value| {
        message["method"] == "notifications/tasks/status"
            && message["params"]["taskId"] == id
            && message["params"].get("statusMessage").is_some()
    };
    let notice = peer.until(is_queued_notice).await.pop().unwrap();
    assert_eq!(notice["params"]["statusMessage"], "queued: waiting for the only slot of tool wait");
    let queued = peer.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(queued["status"], "working");
    assert_eq!(queued["statusMessage"], "queued: waiting for the only slot of tool wait");
    release.notify_one();
    release.notify_one();
    assert_eq!(peer.result("tasks/result", json!({"taskId": id})).await["content"][0]["text"], "done");
    peer.validate();
}
