//! Progress through a task's life and around plain calls, with a tool defined in Rust:
//! the ordering of notifications around the response, and no progress after a terminal
//! status.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_engine::{Context, Handler, Outcome, Progress, ToolRuntime};
use mcp_tasks_server::{Server, TaskMode, ToolDef, ToolSpec};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::time::timeout;

use mcp_tasks_testkit_server::TestPeer;

use crate::sqlite_engine;

const RELATED: &str = "io.modelcontextprotocol/related-task";

/// Reports progress 1, waits for a step, reports 2, waits, then completes. After a cancel
/// it keeps going (ignoring the token) so that the test can see its late reports dropped.
struct Stepper {
    step: Arc<Notify>,
    reported_after_cancel: mpsc::UnboundedSender<()>,
}

#[async_trait]
impl Handler for Stepper {
    async fn call(&self, _arguments: Value, ctx: Context) -> Outcome {
        ctx.progress(Progress { progress: 1.0, total: Some(2.0), message: Some("first half".into()) });
        self.step.notified().await;
        ctx.progress(Progress { progress: 2.0, total: Some(2.0), message: None });
        if ctx.is_cancelled() {
            let _ = self.reported_after_cancel.send(());
        }
        self.step.notified().await;
        Outcome::Result(json!({"content": [{"type": "text", "text": "stepped"}], "isError": false}))
    }
}

/// A server with the stepper tool, and a peer initialized against it.
async fn start(step: Arc<Notify>, reported_after_cancel: mpsc::UnboundedSender<()>) -> (TestPeer, tempfile::TempDir) {
    let (engine, dir) = sqlite_engine();
    let tool = ToolDef {
        spec: ToolSpec {
            name: "stepper".into(),
            title: None,
            description: Some("steps when told".into()),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
            task_mode: TaskMode::Optional,
        },
        runtime: ToolRuntime::new(Stepper { step, reported_after_cancel }),
        inline_wait: None,
        sync_wait: None,
        heartbeat: None,
    };
    let server = Server::builder(engine).name("lib-test").tool(tool).build().unwrap();
    (TestPeer::start(server).await, dir)
}

fn is_progress(message: &Value) -> bool {
    message["method"] == "notifications/progress"
}

#[tokio::test]
async fn legacy_60_61_task_progress_keeps_the_original_token_after_create_task_result() {
    let step = Arc::new(Notify::new());
    let (tx, _rx) = mpsc::unbounded_channel();
    let (mut client, _dir) = start(Arc::clone(&step), tx).await;
    let (before, created) =
        client.request("tools/call", json!({"name": "stepper", "task": {}, "_meta": {"progressToken": "tok-1"}})).await;
    assert!(before.iter().all(|m| !is_progress(m)), "nothing about the task precedes CreateTaskResult");
    let id = created["result"]["task"]["taskId"].as_str().unwrap().to_owned();

    let first = client.until(is_progress).await.pop().unwrap();
    assert_eq!(first["params"]["progressToken"], "tok-1");
    assert_eq!(first["params"]["progress"], 1.0);
    assert_eq!(first["params"]["total"], 2.0);
    assert_eq!(first["params"]["message"], "first half");
    assert_eq!(first["params"]["_meta"][RELATED]["taskId"], id.as_str());

    step.notify_one();
    let second = client.until(is_progress).await.pop().unwrap();
    assert_eq!(second["params"]["progress"], 2.0);
    step.notify_one();
    let (_, result) = client.request("tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["result"]["content"][0]["text"], "stepped");
    client.validate();
}

#[tokio::test]
async fn legacy_62_no_progress_once_the_task_is_terminal() {
    let step = Arc::new(Notify::new());
    let (tx, mut reported) = mpsc::unbounded_channel();
    let (mut client, _dir) = start(Arc::clone(&step), tx).await;
    let (_, created) =
        client.request("tools/call", json!({"name": "stepper", "task": {}, "_meta": {"progressToken": 7}})).await;
    let id = created["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    client.until(is_progress).await;
    let (_, cancelled) = client.request("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled");
    step.notify_one(); // the handler now reports progress 2 after the cancel
    timeout(Duration::from_secs(10), reported.recv()).await.unwrap().unwrap();
    step.notify_one();
    let (between, _) = client.request("ping", json!({})).await;
    assert!(between.iter().all(|m| !is_progress(m)), "progress after a terminal status: {between:?}");
    client.validate();
}

#[tokio::test]
async fn plain_call_progress_arrives_before_its_response() {
    let step = Arc::new(Notify::new());
    let (tx, _rx) = mpsc::unbounded_channel();
    let (mut client, _dir) = start(Arc::clone(&step), tx).await;
    let id = client.send_request("tools/call", json!({"name": "stepper", "_meta": {"progressToken": "p"}})).await;
    let first = client.until(is_progress).await.pop().unwrap();
    assert!(first["params"].get("_meta").is_none(), "a plain call has no related task");
    step.notify_one();
    client.until(is_progress).await;
    step.notify_one();
    let response = client.until(|m| m["id"] == id).await.pop().unwrap();
    assert_eq!(response["result"]["content"][0]["text"], "stepped");
    client.validate();
}
